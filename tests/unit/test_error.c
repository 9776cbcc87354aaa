/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of error (Criterion).  */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "lib/linkage.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/netns.h"
#include "unit.h"

Test (error, make_sets_once_and_is_negative)
{
  cleanup_error roce_error_t err = NULL;
  int ret = roce_error_make (&err, ENOENT, "first %d", 1);
  cr_assert_lt (ret, 0);
  cr_assert_eq (err->status, ENOENT);
  cr_assert_str_eq (err->msg, "first 1");
  /* A second error keeps the first: it is the cause.  */
  cr_assert_lt (roce_error_make (&err, EPERM, "second"), 0);
  cr_assert_str_eq (err->msg, "first 1");
  cr_assert_eq (roce_error_status (&err), ENOENT);
}

Test (error, status_zero_is_still_a_failure)
{
  cleanup_error roce_error_t err = NULL;
  cr_assert_lt (roce_error_make (&err, 0, "policy says no"), 0);
}

Test (error, wrap_prefixes_context)
{
  cleanup_error roce_error_t err = NULL;
  roce_error_sys (&err, EACCES, "open `%s`", "/x");
  roce_error_wrap (&err, "policy");
  cr_assert_str_eq (err->msg, "policy: open `/x`: Permission denied");
  cr_assert_eq (err->status, EACCES);
}

Test (error, a_kind_and_its_context_survive_the_wraps)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *none = NULL;
  cleanup_free char *ctx = NULL;

  cr_assert_lt (linkage_needs_engine (&err, "etcd's client (libcurl)"), 0);
  none = roce_error_context (&err);
  cr_assert_null (none);
  roce_error_wrap (&err, "address block of %s", "mlx5_0");
  roce_error_wrap (&err, "network");
  cr_assert_eq (roce_error_kind (&err), ROCE_ERROR_NEEDS_ENGINE);
  cr_assert_eq (roce_error_status (&err), ELIBACC);
  cr_assert_str_eq (err->msg, "network: address block of mlx5_0: etcd's client (libcurl) is loaded "
                              "by roce-hook-engine only");
  ctx = roce_error_context (&err);
  cr_assert_str_eq (ctx, "network: address block of mlx5_0");
}

Test (error, refuse_has_the_spec_form)
{
  cleanup_error roce_error_t err = NULL;
  roce_error_refuse (&err, "PFC on prio 3", "on", "off", "dcb pfc set dev eth1 prio-pfc 3:on");
  cr_assert_str_eq (err->msg, "PFC on prio 3: on vs off (fix: dcb pfc set dev eth1 prio-pfc 3:on)");
  roce_error_release (&err);
  roce_error_refuse (&err, "x", "a", "b", NULL);
  cr_assert_str_eq (err->msg, "x: a vs b");
}

Test (utils, check_snprintf_reports_truncation)
{
  cleanup_error roce_error_t err = NULL;
  char buf[4];
  cr_assert_eq (check_snprintf (buf, sizeof (buf), &err, "%s", "abc"), 3);
  cr_assert_lt (check_snprintf (buf, sizeof (buf), &err, "%s", "abcd"), 0);
  cr_assert_eq (err->status, E2BIG);
}

Test (utils, parse_u64_is_strict)
{
  uint64_t v;
  cr_assert_eq (parse_u64 ("18446744073709551615", &v), 0);
  cr_assert_eq (v, UINT64_MAX);
  cr_assert_lt (parse_u64 ("18446744073709551616", &v), 0);
  cr_assert_lt (parse_u64 ("", &v), 0);
  cr_assert_lt (parse_u64 ("1e9", &v), 0);
  cr_assert_lt (parse_u64 ("-1", &v), 0);
  cr_assert_lt (parse_u64 (" 1", &v), 0);
}

/* Every line we print is escaped whole, once, where it is printed
 * (utils.h): no control byte, no byte above 0x7e (UTF-8 C1 controls), no
 * newline reaches the reader, and a backslash is always an escape's.  */
Test (error, printed_lines_escape_every_byte_a_tenant_chose)
{
  cleanup_free char *e = str_escape ("mlx5_0\x1b[31m\n\xc2\x9b\\x");
  char buf[512] = "";
  FILE *f = fmemopen (buf, sizeof (buf), "w");
  cr_assert_str_eq (e, "mlx5_0\\x1b[31m\\x0a\\xc2\\x9b\\x5cx");
  roce_log_refusal (f, "roce-hook", "id\x1b", "annotation roce.io/hca: `\x1b]0;pwn\x07`: no");
  /* No message is escaped when it is made: a backslash in one is a
   * value's, shown as \x5c, never taken for an escape.  */
  roce_log_refusal (f, "roce-hook", "id\\", "vs 'mlx5_0\\x1b[2J'");
  fclose (f);
  cr_assert_str_eq (buf, "roce-hook: id\\x1b: annotation roce.io/hca: `\\x1b]0;pwn\\x07`: no\n"
                         "roce-hook: id\\x5c: vs 'mlx5_0\\x5cx1b[2J'\n");
}

/* A value carried raw in an error, the network namespace
 * path of a config.json as netns_open_nsfs names it: its backslash and its
 * ESC byte read apart once printed (before, both read \x1b).  */
Test (error, a_value_in_an_error_is_printed_unambiguously)
{
  cleanup_error roce_error_t err = NULL;
  char buf[512] = "";
  FILE *f = fmemopen (buf, sizeof (buf), "w");
  cr_assert_lt (netns_open_nsfs ("/nonexistent/ns\\x1b\x1b[31m", true, NULL, &err), 0);
  roce_log_refusal (f, "roce-hook", "c1", err->msg);
  fclose (f);
  cr_assert_str_eq (buf, "roce-hook: c1: open `/nonexistent/ns\\x5cx1b\\x1b[31m`: No such file or "
                         "directory\n");
}

/* The log_file's line and roce_print's: the same rule; a quoted value is
 * cut, never escaped when the message is made.  */
Test (error, log_lines_and_printed_lines_escape_once)
{
  char dir[] = "/tmp/roce-log-XXXXXX";
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *path = NULL;
  cleanup_free char *text = NULL;
  cleanup_free char *q = str_quote ("a\\b\x1b");
  cleanup_free char *long_q = NULL;
  char buf[256] = "";
  FILE *f = fmemopen (buf, sizeof (buf), "w");
  char big[100];
  size_t len = 0;

  cr_assert_str_eq (q, "'a\\b\x1b'");
  memset (big, 'x', sizeof (big) - 1);
  big[sizeof (big) - 1] = '\0';
  long_q = str_quote (big);
  cr_assert_eq (strlen (long_q), 64 + 2 + 3);
  cr_assert_not_null (mkdtemp (dir));
  path = xasprintf ("%s/log", dir);
  cr_assert_eq (roce_log_set_file (path, &err), 0);
  roce_log_set_container ("c\\1");
  roce_log (ROCE_LOG_INFO, "path `%s` %s", "/run/x\\y\x1b", q);
  roce_log_close ();
  cr_assert_eq (read_file_at (AT_FDCWD, path, 4096, &text, &len, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert (strstr (text, " info c\\x5c1: path `/run/x\\x5cy\\x1b` 'a\\x5cb\\x1b'\n") != NULL,
             "%s", text);
  roce_print (f, "gc: removed the shim's record of %s: its bundle %s is gone", "c1", "/b\\\n");
  fclose (f);
  cr_assert_str_eq (buf, "gc: removed the shim's record of c1: its bundle /b\\x5c\\x0a is gone\n");
  unlink (path);
  rmdir (dir);
}

Test (utils, utc_time_format_matches_gmtime_across_eras)
{
  /* Leap days, centuries, 2000 and 2100, before the epoch, 2038 and past.  */
  static const int64_t fixed[] = { 0,          -1,         951782400,  951868799, 4107542400,
                                   4107456000, 2147483647, 2147483648, -86400,    253402300799 };
  char ours[UTC_TIME_MAX], libc[64];
  for (size_t i = 0; i < 20000 + ARRAY_SIZE (fixed); i++)
    {
      int64_t t = i < ARRAY_SIZE (fixed)
                      ? fixed[i]
                      : (int64_t) (i - ARRAY_SIZE (fixed)) * 1234567 - 12345678901;
      time_t tt = (time_t) t;
      struct tm tm;
      cr_assert_not_null (gmtime_r (&tt, &tm));
      strftime (libc, sizeof (libc), "%Y-%m-%dT%H:%M:%S", &tm);
      cr_assert_str_eq (utc_time_format (t, ours), libc, "t=%lld", (long long) t);
    }
  /* The ends of int64_t, past gmtime's int year: the year in full, not wrapped.  */
  cr_assert_str_eq (utc_time_format (INT64_MAX, ours), "292277026596-12-04T15:30:07");
  cr_assert_str_eq (utc_time_format (INT64_MIN, ours), "-292277022657-01-27T08:29:52");
}
