/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of json (Criterion).  */
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "unit.h"

Test (json, parses_and_types)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_json struct json *j = NULL;
  int64_t i;
  cr_assert_eq (json_parse ("{\"a\":\"s\",\"n\":42,\"f\":1.5,\"e\":1e9,\"l\":[1,2]}", &j, &err), 0);
  cr_assert_str_eq (json_string (json_object_get (j, "a")), "s");
  cr_assert_eq (json_integer (json_object_get (j, "n"), &i), 0);
  cr_assert_eq (i, 42);
  cr_assert_lt (json_integer (json_object_get (j, "f"), &i), 0);
  cr_assert_lt (json_integer (json_object_get (j, "e"), &i), 0, "1e9 is not an integer literal");
  cr_assert_eq (json_array_len (json_object_get (j, "l")), 2);
  cr_assert_null (json_string (json_object_get (j, "n")));
  cr_assert_null (json_object_get (j, "missing"));
}

Test (json, refuses_garbage_duplicates_and_depth)
{
  cleanup_error roce_error_t err = NULL;
  struct json *j = NULL;
  char deep[200];
  assert_err_contains (json_parse ("{not json", &j, &err), err, "not valid JSON");
  roce_error_release (&err);
  assert_err_contains (json_parse ("{\"a\":1,\"a\":2}", &j, &err), err, "duplicate key `a`");
  roce_error_release (&err);
  memset (deep, '[', 100);
  memset (deep + 100, ']', 99);
  deep[199] = '\0';
  assert_err_contains (json_parse (deep, &j, &err), err, "deeper than 64");
  cr_assert_null (j);
}

Test (json, generator_round_trips_a_tree)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_json struct json *j = NULL;
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const char *in = "{\"a\":[1,\"x\",true,null,{\"b\":18446744073709551615}]}";
  const char *buf;
  size_t len;
  cr_assert_eq (json_parse (in, &j, &err), 0);
  json_gen_tree (g, j);
  cr_assert_eq (json_gen_result (g, &buf, &len, &err), 0);
  cr_assert_eq (len, strlen (in));
  cr_assert_eq (memcmp (buf, in, len), 0);
}

Test (json, generator_reports_misuse)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const char *buf;
  size_t len;
  json_gen_map_open (g);
  json_gen_array_close (g);
  cr_assert_lt (json_gen_result (g, &buf, &len, &err), 0);
}

/* A comment is refused, so a deep document behind one cannot slip past the
 * depth bound (it once crashed the hook with SIGSEGV).  */
Test (json, refuses_comments_and_bounds_depth_in_the_parser)
{
  cleanup_error roce_error_t err = NULL;
  struct json *j = NULL;
  size_t n = 200000;
  cleanup_free char *deep = xmalloc0 (2 * n + 64);
  assert_err_contains (json_parse ("{\"a\":1 /* c */}", &j, &err), err, "not valid JSON");
  roce_error_release (&err);
  strcpy (deep, "{\"a\":/* ");
  memset (deep + 8, '[', n);
  strcpy (deep + 8 + n, " */ 1}");
  assert_err_contains (json_parse (deep, &j, &err), err, "not valid JSON");
  roce_error_release (&err);
  memset (deep, '[', n);
  memset (deep + n, ']', n);
  deep[2 * n] = '\0';
  assert_err_contains (json_parse (deep, &j, &err), err, "deeper than 64");
  cr_assert_null (j);
}

Test (json, refuses_an_escaped_nul_in_keys_and_strings)
{
  cleanup_error roce_error_t err = NULL;
  struct json *j = NULL;
  assert_err_contains (json_parse ("{\"roce.io/hca\\u0000x\":\"mlx5_0\"}", &j, &err), err, "NUL");
  roce_error_release (&err);
  assert_err_contains (json_parse ("{\"k\":\"mlx5_0\\u0000,mlx5_9\"}", &j, &err), err, "NUL");
  roce_error_release (&err);
  /* A raw NUL byte in the text.  */
  assert_err_contains (json_parse_n ("{\"k\":\"a\"}\0{}", 11, &j, &err), err, "not valid JSON");
  cr_assert_null (j);
}

Test (json, error_lines_carry_no_input_bytes)
{
  cleanup_error roce_error_t err = NULL;
  struct json *j = NULL;
  cr_assert_lt (json_parse ("{\"a\": \x1b[31mevil}", &j, &err), 0);
  cr_assert_null (strstr (err->msg, "right here"), "%s", err->msg);
  cr_assert_null (strchr (err->msg, '\n'));
  cr_assert_null (strstr (err->msg, "evil"), "%s", err->msg);
}

/* 80,000 distinct keys: linear duplicate detection (the quadratic one took
 * seconds); the last of them duplicated is still found.  */
static char *
many_keys (size_t n, bool dup)
{
  size_t cap = n * 24 + 64, off = 0;
  char *buf = xmalloc0 (cap);
  off += (size_t) snprintf (buf + off, cap - off, "{\"annotations\":{");
  for (size_t i = 0; i < n; i++)
    off += (size_t) snprintf (buf + off, cap - off, "%s\"k%zu\":\"v\"", i ? "," : "",
                              dup && i == n - 1 ? (size_t) 0 : i);
  snprintf (buf + off, cap - off, "}}");
  return buf;
}

Test (json, many_keys_parse_and_a_late_duplicate_is_found)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_json struct json *j = NULL;
  cleanup_free char *ok = many_keys (80000, false);
  cleanup_free char *dup = many_keys (80000, true);
  struct json *bad = NULL;
  cr_assert_eq (json_parse (ok, &j, &err), 0);
  cr_assert_eq (json_object_len (json_object_get (j, "annotations")), 80000);
  assert_err_contains (json_parse (dup, &bad, &err), err, "duplicate key `k0`");
}

Test (json, scan_is_lenient_and_exact)
{
  struct json_scan s = { .key = "roce.io/hca", .capture = "bundle" };
  size_t n = 100000;
  cleanup_free char *deep = xmalloc0 (2 * n + 128);

  /* Duplicates, invalid UTF-8: what a runtime accepted, the scan reads.  */
  const char *d = "{\"bundle\":\"/b\",\"annotations\":{\"x\":\"1\",\"x\":\"\xff\"}}";
  cr_assert_eq (json_scan (d, strlen (d), &s), 0);
  cr_assert (s.has_annotations);
  cr_assert (! s.found);
  cr_assert_str_eq (s.captured, "/b");
  json_scan_clear (&s);
  /* Another key that C would cut to ours.  */
  d = "{\"annotations\":{\"roce.io/hca\\u0000x\":\"mlx5_0\"}}";
  cr_assert_eq (json_scan (d, strlen (d), &s), 0);
  cr_assert (! s.found);
  /* Nested deeper, or not under the top-level annotations: not ours.  */
  d = "{\"x\":{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}},\"annotations\":[\"roce.io/hca\"]}";
  cr_assert_eq (json_scan (d, strlen (d), &s), 0);
  cr_assert (! s.found);
  cr_assert (! s.has_annotations);
  /* Found behind a deep value.  */
  strcpy (deep, "{\"process\":");
  memset (deep + 11, '[', n);
  memset (deep + 11 + n, ']', n);
  strcpy (deep + 11 + 2 * n, ",\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}");
  cr_assert_eq (json_scan (deep, strlen (deep), &s), 0);
  cr_assert (s.found);
  json_scan_clear (&s);
  /* More than a runtime writes (a comment before it, a second document,
   * trailing bytes): the look still sees the bundle and the annotation; the
   * strict read refuses all three.  */
  {
    static const char *const wide[] = {
      "/* c */ {\"bundle\":\"/b\",\"annotations\":{\"roce.io/hca\":\"x\"}}",
      "// c\n{\"bundle\":\"/b\",\"annotations\":{\"roce.io/hca\":\"x\"}}",
      "{\"bundle\":\"/b\"} {\"annotations\":{\"roce.io/hca\":\"x\"}}",
      "{\"bundle\":\"/b\",\"annotations\":{\"roce.io/hca\":\"x\"}} trailing",
    };
    for (size_t i = 0; i < sizeof (wide) / sizeof (wide[0]); i++)
      {
        cleanup_json struct json *strict = NULL;
        cleanup_error roce_error_t serr = NULL;
        json_scan (wide[i], strlen (wide[i]), &s);
        cr_assert (s.found, "%s", wide[i]);
        cr_assert_str_eq (s.captured, "/b", "%s", wide[i]);
        json_scan_clear (&s);
        cr_assert_lt (json_parse (wide[i], &strict, &serr), 0, "%s", wide[i]);
      }
  }
  /* Not JSON.  */
  cr_assert_lt (json_scan ("{oops", 5, &s), 0);
  cr_assert (! s.found);
}
