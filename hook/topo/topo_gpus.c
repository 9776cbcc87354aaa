/* SPDX-License-Identifier: Apache-2.0 */
/* The container's GPUs as its spec names them (untrusted: NVIDIA_VISIBLE_DEVICES
 * in process.env, /dev/nvidiaN in linux.devices), and the driver's
 * information file that maps a UUID or a device minor to a GPU.  */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "topo/topo_int.h"

void
topo_refs_clear (struct topo_refs *r)
{
  for (size_t i = 0; i < r->n; i++)
    {
      free (r->v[i].uuid);
      free (r->v[i].source);
    }
  free (r->v);
  *r = (struct topo_refs){ 0 };
}

static struct topo_ref *
refs_add (struct topo_refs *r, enum topo_ref_kind kind, unsigned n, const char *source)
{
  struct topo_ref *ref;
  r->v = xrealloc (r->v, (r->n + 1) * sizeof (*r->v));
  ref = &r->v[r->n++];
  *ref = (struct topo_ref){ .kind = kind, .n = n, .source = xstrdup (source) };
  return ref;
}

/* 1..4 decimal digits spanning [s, end).  */
static bool
small_number (const char *s, const char *end, unsigned *out)
{
  unsigned v = 0;
  if (end <= s || end - s > 4)
    return false;
  for (const char *q = s; q < end; q++)
    {
      if (*q < '0' || *q > '9')
        return false;
      v = v * 10 + (unsigned) (*q - '0');
    }
  *out = v;
  return true;
}

/* "GPU-" and 1..TOPO_UUID_MAX - 4 of hex digits and dashes.  */
static bool
gpu_uuid_valid (const char *s)
{
  size_t n;
  if (strncmp (s, "GPU-", 4) != 0)
    return false;
  n = strlen (s + 4);
  if (n == 0 || n > TOPO_UUID_MAX - 4)
    return false;
  for (const char *q = s + 4; *q; q++)
    if (! ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F')
           || *q == '-'))
      return false;
  return true;
}

static int
refuse_item (const char *what, const char *item, const char *expected, const char *fix,
             roce_error_t *err)
{
  cleanup_free char *found = str_quote (item);
  return roce_error_refuse (err, what, expected, found, fix);
}

static const char visible_expected[]
    = "GPU indexes, GPU- UUIDs or <index>:<mig> items, or all, none, void";

static int
parse_item (const char *what, char *item, struct topo_refs *out, roce_error_t *err)
{
  cleanup_free char *source = NULL;
  char *colon;
  unsigned n, mig;

  /* Blanks around an item are not part of it.  */
  while (*item == ' ' || *item == '\t')
    item++;
  for (size_t len = strlen (item); len > 0 && (item[len - 1] == ' ' || item[len - 1] == '\t');)
    item[--len] = '\0';

  if (*item == '\0')
    return refuse_item (what, item, visible_expected, "remove the empty item", err);
  if (strcmp (item, "all") == 0 || strcmp (item, "none") == 0 || strcmp (item, "void") == 0)
    return refuse_item (what, item, "all, none or void alone, or a list of GPUs",
                        "give either the word or the GPUs", err);
  source = xasprintf (TOPO_ENV_GPUS "=%s", item);
  if (small_number (item, item + strlen (item), &n))
    {
      refs_add (out, TOPO_REF_INDEX, n, source);
      return 0;
    }
  colon = strchr (item, ':');
  if (colon && small_number (item, colon, &n)
      && small_number (colon + 1, colon + strlen (colon), &mig))
    {
      /* A MIG instance is where its GPU is.  */
      refs_add (out, TOPO_REF_INDEX, n, source);
      return 0;
    }
  if (gpu_uuid_valid (item))
    {
      refs_add (out, TOPO_REF_UUID, 0, source)->uuid = xstrdup (item);
      return 0;
    }
  if (strncmp (item, "MIG-", 4) == 0)
    return refuse_item (what, item,
                        "GPUs roce.io/hca=auto can place (a MIG UUID names no GPU here)",
                        "give MIG devices as <gpu index>:<mig index>, or name the HCAs", err);
  return refuse_item (what, item, visible_expected,
                      "give GPUs as NVIDIA's runtimes take them (0,1 or GPU-<uuid>)", err);
}

int
topo_parse_visible (const char *what, const char *value, struct topo_refs *out, roce_error_t *err)
{
  cleanup_free char *copy = NULL;
  char *save, *item;
  size_t len = strlen (value), items = 1;

  if (len > 4096)
    {
      cleanup_free char *found = xasprintf ("%zu bytes", len);
      return roce_error_refuse (err, what, "at most 4096 bytes", found, "list fewer GPUs");
    }
  if (! str_is_printable (value))
    return refuse_item (what, value, "printable text", "remove control characters", err);

  copy = xstrdup (value);
  /* The words stand alone (blanks around them allowed).  */
  {
    char *w = copy;
    size_t wl;
    while (*w == ' ' || *w == '\t')
      w++;
    wl = strlen (w);
    while (wl > 0 && (w[wl - 1] == ' ' || w[wl - 1] == '\t'))
      wl--;
    if (wl == 0 || (wl == 4 && strncmp (w, "none", 4) == 0)
        || (wl == 4 && strncmp (w, "void", 4) == 0))
      return 0;
    if (wl == 3 && strncmp (w, "all", 3) == 0)
      {
        out->all = true;
        return 0;
      }
  }
  for (const char *q = value; *q; q++)
    items += *q == ',';
  if (items > TOPO_REFS_MAX)
    {
      cleanup_free char *found = xasprintf ("%zu items", items);
      cleanup_free char *exp = xasprintf ("at most %d GPUs", TOPO_REFS_MAX);
      return roce_error_refuse (err, what, exp, found, "list fewer GPUs");
    }
  save = copy;
  while ((item = strsep (&save, ",")) != NULL)
    if (parse_item (what, item, out, err) < 0)
      return -1;
  return 0;
}

void
topo_refs_from_devices (const struct oci_device *d, size_t n, struct topo_refs *out)
{
  for (size_t i = 0; i < n; i++)
    if (d[i].type == 'c' && d[i].major == TOPO_NVIDIA_MAJOR && d[i].minor >= 0
        && d[i].minor <= TOPO_GPU_MINOR_MAX)
      {
        cleanup_free char *source = xasprintf (
            "linux.devices /dev/nvidia%" PRId64 " (195:%" PRId64 ")", d[i].minor, d[i].minor);
        refs_add (out, TOPO_REF_MINOR, (unsigned) d[i].minor, source);
      }
}

/* The value after "<key>:" on a line of text, blanks trimmed; NULL.  */
static char *
info_value (const char *text, const char *key)
{
  size_t klen = strlen (key);
  for (const char *line = text; line && *line;
       line = strchr (line, '\n'), line = line ? line + 1 : NULL)
    {
      const char *v, *end;
      if (strncmp (line, key, klen) != 0 || line[klen] != ':')
        continue;
      v = line + klen + 1;
      while (*v == ' ' || *v == '\t')
        v++;
      end = v + strcspn (v, "\n");
      while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
      return xstrndup (v, (size_t) (end - v));
    }
  return NULL;
}

void
topo_parse_information (const char *text, char **uuid, int *minor)
{
  cleanup_free char *u = info_value (text, "GPU UUID");
  cleanup_free char *m = info_value (text, "Device Minor");
  unsigned v;

  *uuid = u && gpu_uuid_valid (u) ? steal_pointer (&u) : NULL;
  *minor = m && small_number (m, m + strlen (m), &v) && v <= 255 ? (int) v : -1;
}
