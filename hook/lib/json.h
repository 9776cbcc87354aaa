/* SPDX-License-Identifier: Apache-2.0 */
/* The only module that touches yajl's parser.  Everyone else sees an
 * opaque, read-only `struct json` tree with typed accessors (and a few
 * edits); json_gen.h writes JSON.  */
#ifndef ROCE_JSON_H
#define ROCE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"

struct json;

enum json_type
{
  JSON_NULL,
  JSON_STRING,
  JSON_NUMBER,
  JSON_OBJECT,
  JSON_ARRAY,
  JSON_TRUE,
  JSON_FALSE,
};

#define JSON_MAX_DEPTH 64

/* Parses a document strictly: duplicate keys in an object (the two would
 * silently disagree otherwise), nesting deeper than JSON_MAX_DEPTH, comments,
 * invalid UTF-8 and a NUL in a key or string (\u0000, which C would cut
 * short) are errors.  The error names a byte offset, never input bytes.
 * json_parse_n takes the length (a raw NUL in the buffer is an error too).  */
int json_parse_n (const char *buf, size_t len, struct json **out, roce_error_t *err);
int json_parse (const char *buf, struct json **out, roce_error_t *err);

/* A lenient look at a document, in linear time, building nothing: whether
 * the top-level object's "annotations" object has the member `key`, and the
 * value of one top-level string member.  Any depth, duplicate keys (any
 * occurrence counts; the last captured value wins) and invalid UTF-8 pass, as
 * they do for the runtime that accepted the document.  This is how "a
 * container without our annotation is untouched" holds by construction:
 * nothing strict runs before `found` says so.  Returns 0, or -1 when buf is
 * not JSON (the fields then hold what was seen before the fault).  */
struct json_scan
{
  const char *key;     /* in: the annotation */
  const char *capture; /* in: a top-level member, or NULL */
  /* in: a "NAME=" prefix looked for among the strings of the top-level
   * "process" object's "env" array (the shim's ROCE_HCA), or NULL */
  const char *env;
  bool found;           /* out */
  bool env_found;       /* out: a process.env string starts with `env`, a value after it */
  bool has_annotations; /* out: the top level has an "annotations" object */
  char *captured;       /* out: its string value (malloc'd), NULL when none */
};
int json_scan (const char *buf, size_t len, struct json_scan *s);
void json_scan_clear (struct json_scan *s);
void json_free (struct json *j);
void cleanup_jsonp (struct json **j);
#define cleanup_json __attribute__ ((cleanup (cleanup_jsonp)))

enum json_type json_type (const struct json *j);
const char *json_type_name (const struct json *j);

/* NULL unless j is a string.  */
const char *json_string (const struct json *j);
/* 0 when j is a number that is an integer (no fraction, no exponent) that
 * fits int64; -1 otherwise.  */
int json_integer (const struct json *j, int64_t *out);

/* The literal text of a number ("18446744073709551615"), NULL otherwise.  */
const char *json_number_text (const struct json *j);

size_t json_object_len (const struct json *j);
const char *json_object_key (const struct json *j, size_t i);
const struct json *json_object_value (const struct json *j, size_t i);
/* The direct child `key` of object j, or NULL.  */
const struct json *json_object_get (const struct json *j, const char *key);

/* Typed members, each failing with "<where>.<key>: ..." (just "<key>" when
 * where is ""): a missing required member, the wrong type, a value out of
 * range.  Return 1 found, 0 absent and optional (*out untouched), < 0 error.  */
int json_member (const struct json *obj, const char *where, const char *key, enum json_type type,
                 bool required, const struct json **out, roce_error_t *err);
/* max: the longest string accepted (0: any); printable: printable ASCII only. */
int json_member_string (const struct json *obj, const char *where, const char *key, bool required,
                        size_t max, bool printable, char **out, roce_error_t *err);
/* The whole uint64 range: the number's digits are read, not a double.  */
int json_member_u64 (const struct json *obj, const char *where, const char *key, bool required,
                     uint64_t min, uint64_t max, uint64_t *out, roce_error_t *err);
/* 0 when j is a plain non-negative integer literal that fits uint64.  */
int json_uint64 (const struct json *j, uint64_t *out);

size_t json_array_len (const struct json *j);
const struct json *json_array_at (const struct json *j, size_t i);

/* Building and editing a tree (the shim edits config.json this way, keeping
 * every member it does not know).  The json_new_* values are owned by the
 * caller until handed to a container with json_object_set/json_array_append. */
struct json *json_new_object (void);
struct json *json_new_array (void);
struct json *json_new_string (const char *s);
struct json *json_new_integer (int64_t v);
struct json *json_new_uint64 (uint64_t v);
struct json *json_new_bool (bool v);
/* Replaces the member `key` when present (freeing the old value), else
 * appends it.  Takes ownership of value.  obj must be an object.  */
void json_object_set (struct json *obj, const char *key, struct json *value);
/* Removes the member `key` (freeing it); false when there was none or obj
 * is no object.  */
bool json_object_del (struct json *obj, const char *key);
/* Removes item i (freeing it); nothing when there is none.  */
void json_array_del (struct json *arr, size_t i);
/* Takes ownership of value.  arr must be an array.  */
void json_array_append (struct json *arr, struct json *value);
struct json *json_object_get_mut (struct json *obj, const char *key);
struct json *json_array_at_mut (struct json *arr, size_t i);

#endif
