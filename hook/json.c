#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <yajl_gen.h>
#include <yajl_tree.h>

#include "json.h"
#include "utils.h"

/* struct json is a yajl_val_s in disguise.  */
#define Y(j) ((yajl_val) (j))
#define J(y) ((const struct json *) (y))

static int
check_duplicates (yajl_val v, roce_error_t *err)
{
  if (YAJL_IS_OBJECT (v))
    {
      size_t n = v->u.object.len;
      for (size_t i = 0; i < n; i++)
        {
          for (size_t k = i + 1; k < n; k++)
            if (strcmp (v->u.object.keys[i], v->u.object.keys[k]) == 0)
              return roce_error_make (err, EINVAL, "duplicate key `%s`", v->u.object.keys[i]);
          if (check_duplicates (v->u.object.values[i], err) < 0)
            return -1;
        }
    }
  else if (YAJL_IS_ARRAY (v))
    {
      for (size_t i = 0; i < v->u.array.len; i++)
        if (check_duplicates (v->u.array.values[i], err) < 0)
          return -1;
    }
  return 0;
}

/* yajl_tree builds nested values recursively when freeing; bound the depth so
 * that a hostile document cannot exhaust the stack.  */
static int
check_depth (const char *buf, roce_error_t *err)
{
  int depth = 0;
  bool in_str = false, esc = false;

  for (const char *p = buf; *p; p++)
    {
      if (in_str)
        {
          if (esc)
            esc = false;
          else if (*p == '\\')
            esc = true;
          else if (*p == '"')
            in_str = false;
          continue;
        }
      if (*p == '"')
        in_str = true;
      else if (*p == '{' || *p == '[')
        {
          if (++depth > 64)
            return roce_error_make (err, EINVAL, "JSON nested deeper than 64 levels");
        }
      else if (*p == '}' || *p == ']')
        depth--;
    }
  return 0;
}

int
json_parse (const char *buf, struct json **out, roce_error_t *err)
{
  char ebuf[256] = "";
  yajl_val v;

  if (check_depth (buf, err) < 0)
    return -1;
  v = yajl_tree_parse (buf, ebuf, sizeof (ebuf));
  if (v == NULL)
    {
      char *nl;
      while ((nl = strchr (ebuf, '\n')) != NULL)
        *nl = ' ';
      for (size_t i = strlen (ebuf); i > 0 && ebuf[i - 1] == ' '; i--)
        ebuf[i - 1] = '\0';
      return roce_error_make (err, EINVAL, "not valid JSON: %s", ebuf[0] ? ebuf : "parse error");
    }
  if (check_duplicates (v, err) < 0)
    {
      yajl_tree_free (v);
      return -1;
    }
  *out = (struct json *) v;
  return 0;
}

void
json_free (struct json *j)
{
  if (j)
    yajl_tree_free (Y (j));
}

void
cleanup_jsonp (struct json **j)
{
  json_free (*j);
  *j = NULL;
}

enum json_type
json_type (const struct json *j)
{
  yajl_val v = Y (j);
  if (v == NULL)
    return JSON_NULL;
  switch (v->type)
    {
    case yajl_t_string:
      return JSON_STRING;
    case yajl_t_number:
      return JSON_NUMBER;
    case yajl_t_object:
      return JSON_OBJECT;
    case yajl_t_array:
      return JSON_ARRAY;
    case yajl_t_true:
      return JSON_TRUE;
    case yajl_t_false:
      return JSON_FALSE;
    default:
      return JSON_NULL;
    }
}

const char *
json_type_name (const struct json *j)
{
  static const char *const names[] = {
    [JSON_NULL] = "null",     [JSON_STRING] = "a string", [JSON_NUMBER] = "a number",
    [JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array", [JSON_TRUE] = "a boolean",
    [JSON_FALSE] = "a boolean",
  };
  return names[json_type (j)];
}

const char *
json_string (const struct json *j)
{
  yajl_val v = Y (j);
  return (v && YAJL_IS_STRING (v)) ? v->u.string : NULL;
}

int
json_integer (const struct json *j, int64_t *out)
{
  yajl_val v = Y (j);
  if (v == NULL || ! YAJL_IS_NUMBER (v) || ! YAJL_IS_INTEGER (v))
    return -1;
  /* yajl marks "1e9" as a valid integer when strtoll stops early; accept only
   * plain digits.  */
  for (const char *p = v->u.number.r; *p; p++)
    if (! ((*p >= '0' && *p <= '9') || (p == v->u.number.r && *p == '-')))
      return -1;
  *out = v->u.number.i;
  return 0;
}

const char *
json_number_text (const struct json *j)
{
  yajl_val v = Y (j);
  return (v && YAJL_IS_NUMBER (v)) ? v->u.number.r : NULL;
}

size_t
json_object_len (const struct json *j)
{
  yajl_val v = Y (j);
  return (v && YAJL_IS_OBJECT (v)) ? v->u.object.len : 0;
}

const char *
json_object_key (const struct json *j, size_t i)
{
  return i < json_object_len (j) ? Y (j)->u.object.keys[i] : NULL;
}

const struct json *
json_object_value (const struct json *j, size_t i)
{
  return i < json_object_len (j) ? J (Y (j)->u.object.values[i]) : NULL;
}

const struct json *
json_object_get (const struct json *j, const char *key)
{
  size_t n = json_object_len (j);
  for (size_t i = 0; i < n; i++)
    if (strcmp (Y (j)->u.object.keys[i], key) == 0)
      return J (Y (j)->u.object.values[i]);
  return NULL;
}

size_t
json_array_len (const struct json *j)
{
  yajl_val v = Y (j);
  return (v && YAJL_IS_ARRAY (v)) ? v->u.array.len : 0;
}

const struct json *
json_array_at (const struct json *j, size_t i)
{
  return i < json_array_len (j) ? J (Y (j)->u.array.values[i]) : NULL;
}

/* Tree building.  yajl_tree_free() releases nodes with free(), so nodes made
 * here with malloc() mix freely with parsed ones.  */
static yajl_val
new_node (yajl_type t)
{
  yajl_val v = xmalloc0 (sizeof (*v));
  v->type = t;
  return v;
}

struct json *
json_new_object (void)
{
  return (struct json *) new_node (yajl_t_object);
}

struct json *
json_new_array (void)
{
  return (struct json *) new_node (yajl_t_array);
}

struct json *
json_new_string (const char *s)
{
  yajl_val v = new_node (yajl_t_string);
  v->u.string = xstrdup (s);
  return (struct json *) v;
}

struct json *
json_new_integer (int64_t i)
{
  yajl_val v = new_node (yajl_t_number);
  v->u.number.i = (long long) i;
  v->u.number.d = (double) i;
  v->u.number.r = xasprintf ("%lld", (long long) i);
  v->u.number.flags = YAJL_NUMBER_INT_VALID | YAJL_NUMBER_DOUBLE_VALID;
  return (struct json *) v;
}

struct json *
json_new_uint64 (uint64_t u)
{
  yajl_val v;
  if (u <= INT64_MAX)
    return json_new_integer ((int64_t) u);
  /* Like yajl's own parse of such a number: the text is exact, the double
   * approximate, no long long.  */
  v = new_node (yajl_t_number);
  v->u.number.d = (double) u;
  v->u.number.r = xasprintf ("%llu", (unsigned long long) u);
  v->u.number.flags = YAJL_NUMBER_DOUBLE_VALID;
  return (struct json *) v;
}

struct json *
json_new_bool (bool b)
{
  return (struct json *) new_node (b ? yajl_t_true : yajl_t_false);
}

void
json_object_set (struct json *obj, const char *key, struct json *value)
{
  yajl_val o = Y (obj);
  size_t n = o->u.object.len;

  for (size_t i = 0; i < n; i++)
    if (strcmp (o->u.object.keys[i], key) == 0)
      {
        yajl_tree_free (o->u.object.values[i]);
        o->u.object.values[i] = Y (value);
        return;
      }
  o->u.object.keys = xrealloc ((void *) o->u.object.keys, (n + 1) * sizeof (char *));
  o->u.object.values = xrealloc (o->u.object.values, (n + 1) * sizeof (yajl_val));
  o->u.object.keys[n] = xstrdup (key);
  o->u.object.values[n] = Y (value);
  o->u.object.len = n + 1;
}

void
json_array_append (struct json *arr, struct json *value)
{
  yajl_val a = Y (arr);
  size_t n = a->u.array.len;
  a->u.array.values = xrealloc (a->u.array.values, (n + 1) * sizeof (yajl_val));
  a->u.array.values[n] = Y (value);
  a->u.array.len = n + 1;
}

struct json *
json_object_get_mut (struct json *obj, const char *key)
{
  return (struct json *) json_object_get (obj, key);
}

struct json *
json_array_at_mut (struct json *arr, size_t i)
{
  return (struct json *) json_array_at (arr, i);
}

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
    return roce_error_make (err, EINVAL, "internal error: JSON generator status %d", (int) g->status);
  if (yajl_gen_get_buf (g->g, &b, &l) != yajl_gen_status_ok)
    return roce_error_make (err, EINVAL, "internal error: JSON generator incomplete");
  *buf = (const char *) b;
  *len = l;
  return 0;
}
