/* SPDX-License-Identifier: Apache-2.0 */
/* One error contract for all of roce-hook's code (the one crun uses:
 * libcrun_error_t).
 *
 * A fallible function takes `struct roce_error **err`, returns < 0 (or NULL)
 * on failure and sets *err exactly once.  Callers add context with
 * roce_error_wrap() and pass it up; main() prints it once.  `status` is an
 * errno value (0 when the failure is a policy decision, not a syscall);
 * `kind` says what a caller may do about it beyond printing it.  */
#ifndef ROCE_ERROR_H
#define ROCE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum roce_error_kind
{
  ROCE_ERROR_PLAIN = 0,
  /* This program cannot do it as it is linked, and roce-hook-engine can,
   * from the same inputs: nothing was made (linkage.h).  */
  ROCE_ERROR_NEEDS_ENGINE,
};

struct roce_error
{
  int status;
  enum roce_error_kind kind;
  char *msg;
  size_t origin_len; /* the message it was made with: the end of msg */
};

typedef struct roce_error *roce_error_t;

#define ROCE_PRINTF(a, b) __attribute__ ((format (printf, a, b)))

/* Sets *err (which must be NULL) to an error of that kind, and returns
 * -1 - status (always < 0).  */
int roce_error_make_kind (roce_error_t *err, enum roce_error_kind kind, int status, const char *fmt,
                          ...) ROCE_PRINTF (4, 5);
/* The same, ROCE_ERROR_PLAIN: roce_error_make (err, status, fmt, ...).  */
#define roce_error_make(err, status, ...)                                                          \
  roce_error_make_kind ((err), ROCE_ERROR_PLAIN, (status), __VA_ARGS__)

/* Same, with strerror(status) appended: "<msg>: <strerror>".  */
int roce_error_sys (roce_error_t *err, int status, const char *fmt, ...) ROCE_PRINTF (3, 4);

/* Prefixes "<context>: " to the message already in *err; returns the
 * negative value roce_error_make() would have.  */
int roce_error_wrap (roce_error_t *err, const char *fmt, ...) ROCE_PRINTF (2, 3);

/* A refusal in the SPEC's words: "<what>: <expected> vs <found> (fix: <fix>)".
 * `fix` may be NULL.  */
int roce_error_refuse (roce_error_t *err, const char *what, const char *expected, const char *found,
                       const char *fix);

int roce_error_status (const roce_error_t *err);
enum roce_error_kind roce_error_kind (const roce_error_t *err);
/* What the callers added on the way up (roce_error_wrap), without the
 * message the error was made with: "a: b" of "a: b: <made>"; NULL when
 * nothing was added.  */
char *roce_error_context (const roce_error_t *err);
void roce_error_release (roce_error_t *err);

#define cleanup_error __attribute__ ((cleanup (roce_error_release)))

#endif
