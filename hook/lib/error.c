/* SPDX-License-Identifier: Apache-2.0 */
/* The one error contract (error.h): an error made once, context added on the
 * way up, printed once by main.  */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

/* The message, formatted; the error module stands on nothing but libc
 * (utils.h, which makes errors, stands on it).  */
static char *
error_vasprintf (const char *fmt, va_list ap)
{
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    abort ();
  return s;
}

static int
error_status_ret (int status)
{
  return -1 - (status < 0 ? -status : status);
}

static int
error_set (roce_error_t *err, enum roce_error_kind kind, int status, char *msg)
{
  if (err == NULL)
    {
      free (msg);
      return error_status_ret (status);
    }
  /* An error is set once: a second one means a bug in the caller, keep the
   * first (it is the cause).  */
  if (*err != NULL)
    {
      free (msg);
      return error_status_ret ((*err)->status);
    }
  *err = calloc (1, sizeof (**err));
  if (*err == NULL)
    abort ();
  (*err)->status = status < 0 ? -status : status;
  (*err)->kind = kind;
  (*err)->msg = msg;
  (*err)->origin_len = strlen (msg);
  return error_status_ret (status);
}

int
roce_error_make_kind (roce_error_t *err, enum roce_error_kind kind, int status, const char *fmt,
                      ...)
{
  va_list ap;
  int ret;

  va_start (ap, fmt);
  ret = error_set (err, kind, status, error_vasprintf (fmt, ap));
  va_end (ap);
  return ret;
}

int
roce_error_sys (roce_error_t *err, int status, const char *fmt, ...)
{
  va_list ap;
  char *msg = NULL;
  int ret;

  va_start (ap, fmt);
  msg = error_vasprintf (fmt, ap);
  va_end (ap);
  ret = roce_error_make (err, status, "%s: %s", msg, strerror (status < 0 ? -status : status));
  free (msg);
  return ret;
}

int
roce_error_wrap (roce_error_t *err, const char *fmt, ...)
{
  va_list ap;
  char *ctx = NULL;
  char *msg = NULL;

  if (err == NULL || *err == NULL)
    return -1;
  va_start (ap, fmt);
  ctx = error_vasprintf (fmt, ap);
  va_end (ap);
  if (asprintf (&msg, "%s: %s", ctx, (*err)->msg) < 0)
    abort ();
  free (ctx);
  free ((*err)->msg);
  (*err)->msg = msg;
  return error_status_ret ((*err)->status);
}

int
roce_error_refuse (roce_error_t *err, const char *what, const char *expected, const char *found,
                   const char *fix)
{
  if (fix != NULL && *fix != '\0')
    return roce_error_make (err, 0, "%s: %s vs %s (fix: %s)", what, expected, found, fix);
  return roce_error_make (err, 0, "%s: %s vs %s", what, expected, found);
}

int
roce_error_status (const roce_error_t *err)
{
  return (err && *err) ? (*err)->status : 0;
}

enum roce_error_kind
roce_error_kind (const roce_error_t *err)
{
  return (err && *err) ? (*err)->kind : ROCE_ERROR_PLAIN;
}

char *
roce_error_context (const roce_error_t *err)
{
  size_t len;
  char *ctx;

  if (err == NULL || *err == NULL)
    return NULL;
  len = strlen ((*err)->msg);
  /* Each wrap put "<context>: " before what was there.  */
  if (len < (*err)->origin_len + 3)
    return NULL;
  len -= (*err)->origin_len + 2;
  ctx = strndup ((*err)->msg, len);
  if (ctx == NULL)
    abort ();
  return ctx;
}

void
roce_error_release (roce_error_t *err)
{
  if (err == NULL || *err == NULL)
    return;
  free ((*err)->msg);
  free (*err);
  *err = NULL;
}
