/* SPDX-License-Identifier: Apache-2.0 */
/* The front is linked against musl (shim/front.c), and with Debian's
 * libyajl_s.a, which was built against glibc with _FORTIFY_SOURCE: its
 * objects call glibc's checked variants of memcpy, sprintf and snprintf,
 * which musl does not have.  These are them, with glibc's meaning: the
 * destination's size is known to the caller, and exceeding it aborts.
 * Linked into the musl front only (Makefile, FRONT_CC).  */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__memcpy_chk (void *dst, const void *src, size_t n, size_t dst_len);
int __sprintf_chk (char *s, int flag, size_t slen, const char *fmt, ...);
int __snprintf_chk (char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...);

void *
__memcpy_chk (void *dst, const void *src, size_t n, size_t dst_len)
{
  if (n > dst_len)
    abort ();
  return memcpy (dst, src, n);
}

int
__sprintf_chk (char *s, int flag, size_t slen, const char *fmt, ...)
{
  va_list ap;
  int n;
  (void) flag;
  va_start (ap, fmt);
  /* slen (size_t) -1: the compiler did not know the size (plain sprintf). */
  n = slen == (size_t) -1 ? vsprintf (s, fmt, ap) : vsnprintf (s, slen, fmt, ap);
  va_end (ap);
  if (n >= 0 && slen != (size_t) -1 && (size_t) n >= slen)
    abort ();
  return n;
}

int
__snprintf_chk (char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...)
{
  va_list ap;
  int n;
  (void) flag;
  if (maxlen > slen)
    abort ();
  va_start (ap, fmt);
  n = vsnprintf (s, maxlen, fmt, ap);
  va_end (ap);
  return n;
}
