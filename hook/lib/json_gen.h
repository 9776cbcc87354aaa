/* SPDX-License-Identifier: Apache-2.0 */
/* JSON written: a small generator over yajl's, for every document the hook
 * and the shim write (json_gen.c).  */
#ifndef ROCE_JSON_GEN_H
#define ROCE_JSON_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"

struct json;
struct json_gen;
struct json_gen *json_gen_new (bool pretty);
void json_gen_free (struct json_gen *g);
void cleanup_json_genp (struct json_gen **g);
#define cleanup_json_gen __attribute__ ((cleanup (cleanup_json_genp)))

void json_gen_map_open (struct json_gen *g);
void json_gen_map_close (struct json_gen *g);
void json_gen_array_open (struct json_gen *g);
void json_gen_array_close (struct json_gen *g);
void json_gen_string (struct json_gen *g, const char *s);
void json_gen_integer (struct json_gen *g, int64_t v);
void json_gen_uint64 (struct json_gen *g, uint64_t v);
void json_gen_bool (struct json_gen *g, bool v);
void json_gen_null (struct json_gen *g);
/* Writes the tree j (any type) as it is.  */
void json_gen_tree (struct json_gen *g, const struct json *j);
/* key + string value, for objects.  */
void json_gen_kv_string (struct json_gen *g, const char *key, const char *value);
void json_gen_kv_integer (struct json_gen *g, const char *key, int64_t value);
void json_gen_kv_uint64 (struct json_gen *g, const char *key, uint64_t value);
/* The generated text; owned by g.  Fails when the calls were unbalanced.  */
int json_gen_result (struct json_gen *g, const char **buf, size_t *len, roce_error_t *err);
/* The generated text and a newline, written to out; fails as json_gen_result.  */
int json_gen_print (struct json_gen *g, FILE *out, roce_error_t *err);

#endif
