#include "json.h"
#include "unit.h"
#include "utils.h"

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
