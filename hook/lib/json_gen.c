/* SPDX-License-Identifier: Apache-2.0 */
/* JSON written: a yajl_gen behind json_gen (the first misuse recorded and
 * reported once), for every document the hook and the shim write.  */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl_gen.h>
#include <yajl_tree.h>

#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"

/* struct json is a yajl_val_s in disguise.  */
#define Y(j) ((yajl_val) (j))
#define J(y) ((const struct json *) (y))

/* Generator.  yajl_gen reports misuse through its status; we record the first
 * one and report it from json_gen_result().  */
struct json_gen
{
  yajl_gen g;
  yajl_gen_status status;
  /* Open containers, as a bit stack (1 = map): yajl does not check that a
   * close matches its open.  */
  uint64_t kinds;
  int depth;
};

static void
push (struct json_gen *g, int is_map)
{
  if (g->depth >= 63)
    {
      g->status = yajl_max_depth_exceeded;
      return;
    }
  g->kinds = (g->kinds << 1) | (uint64_t) is_map;
  g->depth++;
}

static void
pop (struct json_gen *g, int is_map)
{
  if (g->depth <= 0 || (int) (g->kinds & 1) != is_map)
    {
      if (g->status == yajl_gen_status_ok)
        g->status = yajl_gen_generation_complete;
      return;
    }
  g->kinds >>= 1;
  g->depth--;
}

struct json_gen *
json_gen_new (bool pretty)
{
  struct json_gen *g = xmalloc0 (sizeof (*g));
  g->g = yajl_gen_alloc (NULL);
  if (g->g == NULL)
    abort ();
  yajl_gen_config (g->g, yajl_gen_beautify, pretty ? 1 : 0);
  yajl_gen_config (g->g, yajl_gen_validate_utf8, 1);
  g->status = yajl_gen_status_ok;
  return g;
}

void
json_gen_free (struct json_gen *g)
{
  if (g == NULL)
    return;
  yajl_gen_free (g->g);
  free (g);
}

void
cleanup_json_genp (struct json_gen **g)
{
  json_gen_free (*g);
  *g = NULL;
}

static void
record (struct json_gen *g, yajl_gen_status s)
{
  if (g->status == yajl_gen_status_ok)
    g->status = s;
}

void
json_gen_map_open (struct json_gen *g)
{
  push (g, 1);
  record (g, yajl_gen_map_open (g->g));
}

void
json_gen_map_close (struct json_gen *g)
{
  pop (g, 1);
  record (g, yajl_gen_map_close (g->g));
}

void
json_gen_array_open (struct json_gen *g)
{
  push (g, 0);
  record (g, yajl_gen_array_open (g->g));
}

void
json_gen_array_close (struct json_gen *g)
{
  pop (g, 0);
  record (g, yajl_gen_array_close (g->g));
}

void
json_gen_string (struct json_gen *g, const char *s)
{
  record (g, yajl_gen_string (g->g, (const unsigned char *) s, strlen (s)));
}

void
json_gen_integer (struct json_gen *g, int64_t v)
{
  record (g, yajl_gen_integer (g->g, (long long) v));
}

void
json_gen_uint64 (struct json_gen *g, uint64_t v)
{
  char text[24];
  snprintf (text, sizeof (text), "%llu", (unsigned long long) v);
  record (g, yajl_gen_number (g->g, text, strlen (text)));
}

void
json_gen_kv_uint64 (struct json_gen *g, const char *key, uint64_t value)
{
  json_gen_string (g, key);
  json_gen_uint64 (g, value);
}

void
json_gen_bool (struct json_gen *g, bool v)
{
  record (g, yajl_gen_bool (g->g, v));
}

void
json_gen_null (struct json_gen *g)
{
  record (g, yajl_gen_null (g->g));
}

void
json_gen_kv_string (struct json_gen *g, const char *key, const char *value)
{
  json_gen_string (g, key);
  json_gen_string (g, value);
}

void
json_gen_kv_integer (struct json_gen *g, const char *key, int64_t value)
{
  json_gen_string (g, key);
  json_gen_integer (g, value);
}

void
json_gen_tree (struct json_gen *g, const struct json *j)
{
  yajl_val v = Y (j);
  switch (json_type (j))
    {
      case JSON_NULL:
        json_gen_null (g);
        break;
      case JSON_STRING:
        json_gen_string (g, v->u.string);
        break;
      case JSON_NUMBER:
        /* Keep the number's own text: no precision is lost on a round trip.  */
        record (g, yajl_gen_number (g->g, v->u.number.r, strlen (v->u.number.r)));
        break;
      case JSON_TRUE:
      case JSON_FALSE:
        json_gen_bool (g, json_type (j) == JSON_TRUE);
        break;
      case JSON_OBJECT:
        json_gen_map_open (g);
        for (size_t i = 0; i < v->u.object.len; i++)
          {
            json_gen_string (g, v->u.object.keys[i]);
            json_gen_tree (g, J (v->u.object.values[i]));
          }
        json_gen_map_close (g);
        break;
      case JSON_ARRAY:
        json_gen_array_open (g);
        for (size_t i = 0; i < v->u.array.len; i++)
          json_gen_tree (g, J (v->u.array.values[i]));
        json_gen_array_close (g);
        break;
    }
}

int
json_gen_result (struct json_gen *g, const char **buf, size_t *len, roce_error_t *err)
{
  const unsigned char *b = NULL;
  size_t l = 0;

  if (g->status == yajl_gen_status_ok && g->depth != 0)
    return roce_error_make (err, EINVAL, "internal error: JSON generator left %d open", g->depth);
  if (g->status != yajl_gen_status_ok)
    return roce_error_make (err, EINVAL, "internal error: JSON generator status %d",
                            (int) g->status);
  if (yajl_gen_get_buf (g->g, &b, &l) != yajl_gen_status_ok)
    return roce_error_make (err, EINVAL, "internal error: JSON generator incomplete");
  *buf = (const char *) b;
  *len = l;
  return 0;
}

int
json_gen_print (struct json_gen *g, FILE *out, roce_error_t *err)
{
  const char *buf;
  size_t len;

  if (json_gen_result (g, &buf, &len, err) < 0)
    return -1;
  fprintf (out, "%.*s\n", (int) len, buf);
  return 0;
}
