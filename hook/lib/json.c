/* SPDX-License-Identifier: Apache-2.0 */
/* JSON read: yajl's tree behind struct json, typed getters, the lenient
 * look for one annotation, and the tree edited in place (the shim's spec).  */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl_parse.h>
#include <yajl_tree.h>

#include "lib/json.h"
#include "lib/utils.h"

/* struct json is a yajl_val_s in disguise.  */
#define Y(j) ((yajl_val) (j))
#define J(y) ((const struct json *) (y))

/* Tree building.  yajl_tree_free() releases nodes with free(), so nodes made
 * here with malloc() mix freely with parsed ones.  */
static yajl_val
new_node (yajl_type t)
{
  yajl_val v = xmalloc0 (sizeof (*v));
  v->type = t;
  return v;
}

/* ---- parsing --------------------------------------------------------------
 *
 * Our own tree builder on yajl's event parser, not yajl_tree_parse: that one
 * accepts comments (a depth guard counting brackets is fooled by a comment),
 * recurses without bound, keeps the last of two equal keys, and cuts a string
 * at an escaped NUL.  Here the parser itself bounds the depth, comments are
 * refused, a NUL in a key or a string is refused, and duplicate keys are
 * found in linear time.  The nodes are yajl_val_s, so the accessors below and
 * yajl_tree_free() work on them unchanged.  */

struct frame
{
  yajl_val v;
  size_t cap;
  char *key; /* objects: the key waiting for its value */
};

struct builder
{
  yajl_val root;
  struct frame stack[JSON_MAX_DEPTH];
  int depth;
  char msg[160];
};

static int builder_fail (struct builder *b, const char *fmt, ...) ROCE_PRINTF (2, 3);
static int
builder_fail (struct builder *b, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (b->msg, sizeof (b->msg), fmt, ap);
  va_end (ap);
  return 0; /* cancels the parse */
}

/* Hands v to the innermost open container (or makes it the root).  */
static int
builder_add (struct builder *b, yajl_val v)
{
  struct frame *f;

  if (b->depth == 0)
    {
      b->root = v;
      return 1;
    }
  f = &b->stack[b->depth - 1];
  if (YAJL_IS_OBJECT (f->v))
    {
      size_t n = f->v->u.object.len;
      if (n == f->cap)
        {
          f->cap = f->cap ? f->cap * 2 : 8;
          f->v->u.object.keys = xrealloc ((void *) f->v->u.object.keys, f->cap * sizeof (char *));
          f->v->u.object.values = xrealloc (f->v->u.object.values, f->cap * sizeof (yajl_val));
        }
      f->v->u.object.keys[n] = steal_pointer (&f->key);
      f->v->u.object.values[n] = v;
      f->v->u.object.len = n + 1;
    }
  else
    {
      size_t n = f->v->u.array.len;
      if (n == f->cap)
        {
          f->cap = f->cap ? f->cap * 2 : 8;
          f->v->u.array.values = xrealloc (f->v->u.array.values, f->cap * sizeof (yajl_val));
        }
      f->v->u.array.values[n] = v;
      f->v->u.array.len = n + 1;
    }
  return 1;
}

static int
cb_null (void *ctx)
{
  return builder_add (ctx, new_node (yajl_t_null));
}

static int
cb_boolean (void *ctx, int b)
{
  return builder_add (ctx, new_node (b ? yajl_t_true : yajl_t_false));
}

static int
cb_number (void *ctx, const char *s, size_t len)
{
  yajl_val v = new_node (yajl_t_number);
  char *end;

  v->u.number.r = xstrndup (s, len);
  errno = 0;
  v->u.number.i = strtoll (v->u.number.r, &end, 10);
  if (errno == 0 && *end == '\0')
    v->u.number.flags |= YAJL_NUMBER_INT_VALID;
  errno = 0;
  v->u.number.d = strtod (v->u.number.r, &end);
  if (errno == 0 && *end == '\0')
    v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
  return builder_add (ctx, v);
}

static int
cb_string (void *ctx, const unsigned char *s, size_t len)
{
  yajl_val v;
  if (memchr (s, '\0', len) != NULL)
    return builder_fail (ctx, "a string holds a NUL character (U+0000)");
  v = new_node (yajl_t_string);
  v->u.string = xstrndup ((const char *) s, len);
  return builder_add (ctx, v);
}

static int
cb_map_key (void *ctx, const unsigned char *s, size_t len)
{
  struct builder *b = ctx;
  if (memchr (s, '\0', len) != NULL)
    return builder_fail (b, "a key holds a NUL character (U+0000)");
  b->stack[b->depth - 1].key = xstrndup ((const char *) s, len);
  return 1;
}

static int
open_container (struct builder *b, yajl_type t)
{
  yajl_val v;
  if (b->depth == JSON_MAX_DEPTH)
    return builder_fail (b, "nested deeper than %d levels", JSON_MAX_DEPTH);
  v = new_node (t);
  builder_add (b, v);
  b->stack[b->depth++] = (struct frame){ .v = v };
  return 1;
}

static int
cb_start_map (void *ctx)
{
  return open_container (ctx, yajl_t_object);
}

static int
cb_start_array (void *ctx)
{
  return open_container (ctx, yajl_t_array);
}

static uint64_t
fnv1a (const char *s)
{
  uint64_t h = 14695981039346656037ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ULL;
  return h;
}

/* The first key that appears twice, in linear time (an open-addressing set
 * of the keys), or NULL.  */
static const char *
duplicate_key (yajl_val obj)
{
  size_t n = obj->u.object.len, cap = 16;
  cleanup_free const char **set = NULL;

  if (n < 2)
    return NULL;
  while (cap < 2 * n)
    cap *= 2;
  set = xmalloc0 (cap * sizeof (*set));
  for (size_t i = 0; i < n; i++)
    {
      const char *k = obj->u.object.keys[i];
      size_t slot = fnv1a (k) & (cap - 1);
      while (set[slot] != NULL)
        {
          if (strcmp (set[slot], k) == 0)
            return k;
          slot = (slot + 1) & (cap - 1);
        }
      set[slot] = k;
    }
  return NULL;
}

static int
cb_end_map (void *ctx)
{
  struct builder *b = ctx;
  yajl_val obj = b->stack[--b->depth].v;
  const char *dup = duplicate_key (obj);
  if (dup)
    {
      /* The key is input: shown only when it is plain text.  */
      if (str_is_printable (dup) && strlen (dup) <= 64)
        return builder_fail (b, "duplicate key `%s`", dup);
      return builder_fail (b, "duplicate key");
    }
  return 1;
}

static int
cb_end_array (void *ctx)
{
  struct builder *b = ctx;
  b->depth--;
  return 1;
}

static const yajl_callbacks build_callbacks = {
  .yajl_null = cb_null,
  .yajl_boolean = cb_boolean,
  .yajl_number = cb_number,
  .yajl_string = cb_string,
  .yajl_start_map = cb_start_map,
  .yajl_map_key = cb_map_key,
  .yajl_end_map = cb_end_map,
  .yajl_start_array = cb_start_array,
  .yajl_end_array = cb_end_array,
};

/* yajl's own message without its "(right here) ------^" excerpt of the
 * input: one line, no input bytes.  */
static void
yajl_message (yajl_handle h, const unsigned char *buf, size_t len, char *out, size_t size)
{
  unsigned char *m = yajl_get_error (h, 0, buf, len);
  size_t n;
  snprintf (out, size, "%s", m ? (const char *) m : "parse error");
  if (m)
    yajl_free_error (h, m);
  for (char *p = out; *p; p++)
    if (*p == '\n')
      *p = ' ';
  n = strlen (out);
  while (n > 0 && out[n - 1] == ' ')
    out[--n] = '\0';
}

int
json_parse_n (const char *buf, size_t len, struct json **out, roce_error_t *err)
{
  struct builder b = { 0 };
  yajl_handle h = yajl_alloc (&build_callbacks, NULL, &b);
  yajl_status st;
  char msg[160];

  if (h == NULL)
    abort ();
  yajl_config (h, yajl_allow_comments, 0);
  st = yajl_parse (h, (const unsigned char *) buf, len);
  if (st == yajl_status_ok)
    st = yajl_complete_parse (h);
  if (st != yajl_status_ok)
    {
      size_t at = yajl_get_bytes_consumed (h);
      if (st == yajl_status_client_canceled)
        snprintf (msg, sizeof (msg), "%s", b.msg);
      else
        yajl_message (h, (const unsigned char *) buf, len, msg, sizeof (msg));
      yajl_free (h);
      for (int i = 0; i < b.depth; i++)
        free (b.stack[i].key);
      if (b.root)
        yajl_tree_free (b.root);
      return roce_error_make (err, EINVAL, "not valid JSON near byte %zu: %s", at, msg);
    }
  yajl_free (h);
  *out = (struct json *) b.root;
  return 0;
}

int
json_parse (const char *buf, struct json **out, roce_error_t *err)
{
  return json_parse_n (buf, strlen (buf), out, err);
}

/* ---- the lenient look for one annotation --------------------------------- */

struct scan
{
  struct json_scan *out;
  size_t key_len, capture_len, env_len;
  long depth; /* 1 inside the top-level object */
  bool next_is_annotations, next_is_capture, next_is_process, next_is_env;
  long annot_depth;   /* depth of an open top-level "annotations" object, else 0 */
  long process_depth; /* depth of an open top-level "process" object, else 0 */
  long env_depth;     /* depth of an open process.env array, else 0 */
};

static int
scan_value (void *ctx)
{
  struct scan *c = ctx;
  c->next_is_annotations = c->next_is_capture = c->next_is_process = c->next_is_env = false;
  return 1;
}

static int
scan_boolean (void *ctx, int b)
{
  (void) b;
  return scan_value (ctx);
}

static int
scan_text (void *ctx, const unsigned char *s, size_t len)
{
  struct scan *c = ctx;
  if (c->next_is_capture)
    {
      free (c->out->captured);
      /* Cut at a NUL would be another string: then there is none.  */
      c->out->captured = memchr (s, '\0', len) ? NULL : xstrndup ((const char *) s, len);
    }
  if (c->env_depth != 0 && c->depth == c->env_depth && len > c->env_len
      && memcmp (s, c->out->env, c->env_len) == 0)
    c->out->env_found = true;
  return scan_value (ctx);
}

static int
scan_number (void *ctx, const char *s, size_t len)
{
  (void) s, (void) len;
  return scan_value (ctx);
}

static int
scan_key (void *ctx, const unsigned char *s, size_t len)
{
  struct scan *c = ctx;
  if (c->depth == 1)
    {
      c->next_is_annotations = len == 11 && memcmp (s, "annotations", 11) == 0;
      c->next_is_capture
          = c->out->capture && len == c->capture_len && memcmp (s, c->out->capture, len) == 0;
      c->next_is_process = c->out->env && len == 7 && memcmp (s, "process", 7) == 0;
    }
  else if (c->process_depth != 0 && c->depth == c->process_depth)
    c->next_is_env = len == 3 && memcmp (s, "env", 3) == 0;
  else if (c->annot_depth != 0 && c->depth == c->annot_depth && len == c->key_len
           && memcmp (s, c->out->key, len) == 0)
    c->out->found = true;
  return 1;
}

static int
scan_start_map (void *ctx)
{
  struct scan *c = ctx;
  c->depth++;
  if (c->depth == 2 && c->next_is_annotations)
    {
      c->annot_depth = 2;
      c->out->has_annotations = true;
    }
  if (c->depth == 2 && c->next_is_process)
    c->process_depth = 2;
  return scan_value (ctx);
}

static int
scan_end_map (void *ctx)
{
  struct scan *c = ctx;
  if (c->depth == c->annot_depth)
    c->annot_depth = 0;
  if (c->depth == c->process_depth)
    c->process_depth = 0;
  c->depth--;
  return 1;
}

static int
scan_start_array (void *ctx)
{
  struct scan *c = ctx;
  c->depth++;
  if (c->next_is_env && c->process_depth != 0 && c->depth == c->process_depth + 1)
    c->env_depth = c->depth;
  return scan_value (ctx);
}

static int
scan_end_array (void *ctx)
{
  struct scan *c = ctx;
  if (c->depth == c->env_depth)
    c->env_depth = 0;
  c->depth--;
  return 1;
}

static const yajl_callbacks scan_callbacks = {
  .yajl_null = scan_value,
  .yajl_boolean = scan_boolean,
  .yajl_number = scan_number,
  .yajl_string = scan_text,
  .yajl_start_map = scan_start_map,
  .yajl_map_key = scan_key,
  .yajl_end_map = scan_end_map,
  .yajl_start_array = scan_start_array,
  .yajl_end_array = scan_end_array,
};

int
json_scan (const char *buf, size_t len, struct json_scan *out)
{
  struct scan c = { .out = out,
                    .key_len = strlen (out->key),
                    .capture_len = out->capture ? strlen (out->capture) : 0,
                    .env_len = out->env ? strlen (out->env) : 0 };
  yajl_handle h = yajl_alloc (&scan_callbacks, NULL, &c);
  yajl_status st;

  if (h == NULL)
    abort ();
  out->found = out->has_annotations = out->env_found = false;
  out->captured = NULL;
  /* What the runtime (Go's encoding/json) accepted, we read: any depth
   * (yajl's parser keeps its stack on the heap), any UTF-8, duplicates.
   * And more than it writes: comments, a second document or trailing bytes
   * after the first.  The look must never read "not asked" where the strict
   * read (json_parse_n, which refuses all three) would see the annotation:
   * a document the look reads wider is refused by the strict read, not
   * passed.  */
  yajl_config (h, yajl_dont_validate_strings, 1);
  yajl_config (h, yajl_allow_comments, 1);
  yajl_config (h, yajl_allow_trailing_garbage, 1);
  yajl_config (h, yajl_allow_multiple_values, 1);
  st = yajl_parse (h, (const unsigned char *) buf, len);
  if (st == yajl_status_ok)
    st = yajl_complete_parse (h);
  yajl_free (h);
  return st == yajl_status_ok ? 0 : -1;
}

void
json_scan_clear (struct json_scan *s)
{
  free (s->captured);
  s->captured = NULL;
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
    [JSON_NULL] = "null",        [JSON_STRING] = "a string", [JSON_NUMBER] = "a number",
    [JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",  [JSON_TRUE] = "a boolean",
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

int
json_uint64 (const struct json *j, uint64_t *out)
{
  const char *t = json_number_text (j);
  return t && parse_u64 (t, out) == 0 ? 0 : -1;
}

static char *
member_name (const char *where, const char *key)
{
  size_t n = where ? strlen (where) : 0;
  if (n == 0)
    return xstrdup (key);
  /* "config.json: root." and "OCI state: " already end in a separator.  */
  return xasprintf (where[n - 1] == '.' || where[n - 1] == ' ' ? "%s%s" : "%s.%s", where, key);
}

int
json_member (const struct json *obj, const char *where, const char *key, enum json_type type,
             bool required, const struct json **out, roce_error_t *err)
{
  const struct json *v = json_object_get (obj, key);
  cleanup_free char *name = NULL;
  static const char *const wanted[] = {
    [JSON_NULL] = "null",        [JSON_STRING] = "a string", [JSON_NUMBER] = "a number",
    [JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",  [JSON_TRUE] = "a boolean",
    [JSON_FALSE] = "a boolean",
  };

  if (v == NULL && ! required)
    return 0;
  name = member_name (where, key);
  if (v == NULL)
    return roce_error_make (err, EINVAL, "%s: missing", name);
  if (json_type (v) != type && ! (type == JSON_TRUE && json_type (v) == JSON_FALSE))
    return roce_error_make (err, EINVAL, "%s: expected %s, found %s", name, wanted[type],
                            json_type_name (v));
  *out = v;
  return 1;
}

int
json_member_string (const struct json *obj, const char *where, const char *key, bool required,
                    size_t max, bool printable, char **out, roce_error_t *err)
{
  const struct json *v = NULL;
  int r = json_member (obj, where, key, JSON_STRING, required, &v, err);
  const char *s;

  if (r <= 0)
    return r;
  s = json_string (v);
  if ((max && strlen (s) > max) || (printable && ! str_is_printable (s)))
    {
      cleanup_free char *name = member_name (where, key);
      return roce_error_make (err, EINVAL, "%s: expected printable text of at most %zu bytes", name,
                              max ? max : strlen (s));
    }
  free (*out);
  *out = xstrdup (s);
  return 1;
}

int
json_member_u64 (const struct json *obj, const char *where, const char *key, bool required,
                 uint64_t min, uint64_t max, uint64_t *out, roce_error_t *err)
{
  const struct json *v = NULL;
  int r = json_member (obj, where, key, JSON_NUMBER, required, &v, err);
  uint64_t u;

  if (r <= 0)
    return r;
  if (json_uint64 (v, &u) < 0 || u < min || u > max)
    {
      cleanup_free char *name = member_name (where, key);
      return roce_error_make (err, EINVAL, "%s: expected an integer in %llu..%llu", name,
                              (unsigned long long) min, (unsigned long long) max);
    }
  *out = u;
  return 1;
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

bool
json_object_del (struct json *obj, const char *key)
{
  yajl_val o = Y (obj);
  size_t n;

  if (o == NULL || ! YAJL_IS_OBJECT (o))
    return false;
  n = o->u.object.len;
  for (size_t i = 0; i < n; i++)
    if (strcmp (o->u.object.keys[i], key) == 0)
      {
        free ((void *) o->u.object.keys[i]);
        yajl_tree_free (o->u.object.values[i]);
        memmove ((void *) &o->u.object.keys[i], &o->u.object.keys[i + 1],
                 (n - i - 1) * sizeof (char *));
        memmove (&o->u.object.values[i], &o->u.object.values[i + 1],
                 (n - i - 1) * sizeof (yajl_val));
        o->u.object.len = n - 1;
        return true;
      }
  return false;
}

void
json_array_del (struct json *arr, size_t i)
{
  yajl_val a = Y (arr);
  size_t n;

  if (a == NULL || ! YAJL_IS_ARRAY (a) || i >= a->u.array.len)
    return;
  n = a->u.array.len;
  yajl_tree_free (a->u.array.values[i]);
  memmove (&a->u.array.values[i], &a->u.array.values[i + 1], (n - i - 1) * sizeof (yajl_val));
  a->u.array.len = n - 1;
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
