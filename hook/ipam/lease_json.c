/* SPDX-License-Identifier: Apache-2.0 */
/* The store's files as JSON: a holder's file, blocks.json and the single
 * leases.json of earlier versions, generated and parsed (every field typed
 * and bounded); a holder copied by that round trip.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/mac.h"
#include "lib/utils.h"

/* ---- the file ------------------------------------------------------------------- */

static void
gen_holder (struct json_gen *g, const struct lease_holder *h)
{
  char a[ADDR_STR_MAX];

  json_gen_map_open (g);
  json_gen_string (g, "netns");
  json_gen_map_open (g);
  json_gen_kv_string (g, "boot_id", h->ns.boot_id);
  json_gen_kv_uint64 (g, "dev", h->ns.dev);
  json_gen_kv_uint64 (g, "ino", h->ns.ino);
  json_gen_kv_uint64 (g, "cookie", h->ns.cookie);
  json_gen_map_close (g);
  json_gen_kv_string (g, "owner", h->owner);
  json_gen_string (g, "containers");
  json_gen_array_open (g);
  for (char **c = h->containers; c && *c; c++)
    json_gen_string (g, *c);
  json_gen_array_close (g);
  json_gen_kv_integer (g, "since", h->since);
  if (h->nsid >= 0)
    json_gen_kv_integer (g, "nsid", h->nsid);
  json_gen_string (g, "leases");
  json_gen_array_open (g);
  for (size_t k = 0; k < h->n_addrs; k++)
    {
      json_gen_map_open (g);
      json_gen_kv_string (g, "hca", h->addrs[k].hca);
      json_gen_kv_string (g, "address", addr_format (&h->addrs[k].addr, a));
      json_gen_kv_string (g, "ifname", h->addrs[k].ifname);
      if (h->addrs[k].has_gid)
        {
          json_gen_string (g, "gid");
          json_gen_map_open (g);
          json_gen_kv_integer (g, "port", h->addrs[k].gid_port);
          json_gen_kv_integer (g, "index", h->addrs[k].gid_index);
          json_gen_map_close (g);
        }
      if (h->addrs[k].gpus)
        {
          json_gen_string (g, "gpus");
          json_gen_array_open (g);
          for (char **q = h->addrs[k].gpus; *q; q++)
            json_gen_string (g, *q);
          json_gen_array_close (g);
        }
      if (h->addrs[k].has_link)
        {
          char m[18];
          json_gen_string (g, "link");
          json_gen_map_open (g);
          json_gen_kv_integer (g, "parent", h->addrs[k].parent_ifindex);
          json_gen_kv_string (g, "mac", mac_format (h->addrs[k].mac, m));
          json_gen_map_close (g);
        }
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  json_gen_map_close (g);
}

static void
gen_blocks (struct json_gen *g, const struct lease_store *s)
{
  char a[ADDR_STR_MAX];

  json_gen_string (g, "blocks");
  json_gen_array_open (g);
  for (size_t i = 0; i < s->n_blocks; i++)
    {
      const struct lease_block *b = &s->blocks[i];
      char c[CIDR_STR_MAX];
      json_gen_map_open (g);
      json_gen_kv_string (g, "subnet", cidr_format (&b->subnet, c));
      json_gen_kv_string (g, "first", addr_format (&b->first, a));
      json_gen_kv_string (g, "last", addr_format (&b->last, a));
      json_gen_kv_integer (g, "since", b->since);
      json_gen_kv_integer (g, "empty_since", b->empty_since);
      json_gen_kv_string (g, "value", b->value);
      if (b->rev > 0)
        json_gen_kv_integer (g, "rev", b->rev);
      if (b->static_only)
        {
          json_gen_string (g, "static");
          json_gen_bool (g, true);
        }
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
}

static char *
gen_text (struct json_gen *g)
{
  const char *buf = NULL;
  size_t len = 0;
  if (json_gen_result (g, &buf, &len, NULL) < 0)
    abort (); /* balanced by construction */
  return xstrndup (buf, len);
}

/* The whole store in one document: the format of leases.json (earlier
 * versions' store, read to migrate it).  */
char *
lease_store_format (const struct lease_store *s)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);

  json_gen_map_open (g);
  json_gen_kv_integer (g, "version", LEASE_VERSION);
  json_gen_string (g, "holders");
  json_gen_array_open (g);
  for (size_t i = 0; i < s->n; i++)
    gen_holder (g, s->h[i]);
  json_gen_array_close (g);
  if (s->n_blocks > 0)
    gen_blocks (g, s);
  json_gen_map_close (g);
  return gen_text (g);
}

char *
lease_holder_format (const struct lease_holder *h)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  gen_holder (g, h);
  return gen_text (g);
}

/* blocks.json, or NULL when the node holds none.  */
char *
lease_blocks_format (const struct lease_store *s)
{
  cleanup_json_gen struct json_gen *g = NULL;
  if (s->n_blocks == 0)
    return NULL;
  g = json_gen_new (false);
  json_gen_map_open (g);
  json_gen_kv_integer (g, "version", LEASE_VERSION);
  gen_blocks (g, s);
  json_gen_map_close (g);
  return gen_text (g);
}

/* The store's members: json.h's typed getters, with the store's bounds.  */
static const struct json *
get (const struct json *obj, const char *key, enum json_type type, const char *where,
     roce_error_t *err)
{
  const struct json *v = NULL;
  return json_member (obj, where, key, type, true, &v, err) < 0 ? NULL : v;
}

static int
get_text (const struct json *obj, const char *key, const char *where, size_t max, char **out,
          roce_error_t *err)
{
  return json_member_string (obj, where, key, true, max, true, out, err) < 0 ? -1 : 0;
}

static int
get_u64 (const struct json *obj, const char *key, const char *where, uint64_t *out,
         roce_error_t *err)
{
  return json_member_u64 (obj, where, key, true, 0, UINT64_MAX, out, err) < 0 ? -1 : 0;
}

/* Optional: stores written before the GID was recorded have none.  */
static int
parse_gid (const struct json *l, const char *where, struct lease_addr *la, roce_error_t *err)
{
  cleanup_free char *gwhere = xasprintf ("%s.gid", where);
  const struct json *g = NULL;
  uint64_t port, index;
  int r = json_member (l, where, "gid", JSON_OBJECT, false, &g, err);

  if (r <= 0)
    return r;
  if (json_member_u64 (g, gwhere, "port", true, 1, 255, &port, err) < 0
      || json_member_u64 (g, gwhere, "index", true, 0, 65535, &index, err) < 0)
    return -1;
  la->has_gid = true;
  la->gid_port = (unsigned) port;
  la->gid_index = (unsigned) index;
  return 0;
}

/* Optional: stores written before the link was recorded have none.  */
static int
parse_link (const struct json *l, const char *where, struct lease_addr *la, roce_error_t *err)
{
  cleanup_free char *lwhere = xasprintf ("%s.link", where);
  cleanup_free char *mac = NULL;
  const struct json *k = NULL;
  uint64_t parent;
  int r = json_member (l, where, "link", JSON_OBJECT, false, &k, err);

  if (r <= 0)
    return r;
  if (json_member_u64 (k, lwhere, "parent", true, 1, INT32_MAX, &parent, err) < 0
      || get_text (k, "mac", lwhere, 17, &mac, err) < 0)
    return -1;
  if (mac_parse (mac, la->mac) < 0)
    return roce_error_make (err, EINVAL, "%s.mac: '%s' is not a MAC address", lwhere, mac);
  la->has_link = true;
  la->parent_ifindex = (int) parent;
  return 0;
}

/* Optional: roce.io/hca=auto's GPUs of the rail (PCI addresses).  */
static int
parse_gpus (const struct json *l, const char *where, struct lease_addr *la, roce_error_t *err)
{
  const struct json *arr = NULL;
  int r = json_member (l, where, "gpus", JSON_ARRAY, false, &arr, err);

  if (r <= 0)
    return r;
  if (json_array_len (arr) > 256)
    return roce_error_make (err, EINVAL, "%s.gpus: more than 256", where);
  for (size_t i = 0; i < json_array_len (arr); i++)
    {
      const char *g = json_string (json_array_at (arr, i));
      if (g == NULL || strlen (g) == 0 || strlen (g) > 32
          || strspn (g, "0123456789abcdefABCDEF:.") != strlen (g))
        return roce_error_make (err, EINVAL, "%s.gpus[%zu]: not a PCI address", where, i);
      strv_push (&la->gpus, g);
    }
  return 0;
}

int
lease_holder_parse (const struct json *j, const char *where, struct lease_holder *h,
                    roce_error_t *err)
{
  const struct json *ns, *cs, *ls;
  cleanup_free char *nswhere = xasprintf ("%s.netns", where);
  cleanup_free char *boot = NULL;
  uint64_t since;

  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "%s: not an object", where);
  if ((ns = get (j, "netns", JSON_OBJECT, where, err)) == NULL
      || get_text (ns, "boot_id", nswhere, NETNS_BOOT_ID_MAX - 1, &boot, err) < 0
      || get_u64 (ns, "dev", nswhere, &h->ns.dev, err) < 0
      || get_u64 (ns, "ino", nswhere, &h->ns.ino, err) < 0
      || get_u64 (ns, "cookie", nswhere, &h->ns.cookie, err) < 0)
    return -1;
  memcpy (h->ns.boot_id, boot, strlen (boot) + 1);
  if (get_text (j, "owner", where, 1024, &h->owner, err) < 0
      || json_member_u64 (j, where, "since", true, 0, INT64_MAX, &since, err) < 0)
    return -1;
  h->since = (int64_t) since;
  {
    uint64_t nsid = UINT64_MAX; /* stays when the store has none (older stores) */
    if (json_member_u64 (j, where, "nsid", false, 0, INT32_MAX, &nsid, err) < 0)
      return -1;
    h->nsid = nsid == UINT64_MAX ? -1 : (int32_t) nsid;
  }
  if ((cs = get (j, "containers", JSON_ARRAY, where, err)) == NULL)
    return -1;
  for (size_t i = 0; i < json_array_len (cs); i++)
    {
      const char *c = json_string (json_array_at (cs, i));
      if (c == NULL || strlen (c) > 1024 || ! str_is_printable (c))
        return roce_error_make (err, EINVAL, "%s.containers[%zu]: not a container id", where, i);
      strv_push (&h->containers, c);
    }
  if ((ls = get (j, "leases", JSON_ARRAY, where, err)) == NULL)
    return -1;
  h->addrs = xmalloc0 ((json_array_len (ls) + 1) * sizeof (*h->addrs));
  for (size_t i = 0; i < json_array_len (ls); i++)
    {
      const struct json *l = json_array_at (ls, i);
      cleanup_free char *lwhere = xasprintf ("%s.leases[%zu]", where, i);
      cleanup_free char *addr = NULL;
      struct lease_addr *la = &h->addrs[h->n_addrs];
      if (json_type (l) != JSON_OBJECT)
        return roce_error_make (err, EINVAL, "%s: not an object", lwhere);
      if (get_text (l, "address", lwhere, ADDR_STR_MAX, &addr, err) < 0)
        return -1;
      if (addr_parse (addr, &la->addr) < 0)
        return roce_error_make (err, EINVAL, "%s.address: '%s' is not an IP address", lwhere, addr);
      h->n_addrs++;
      if (get_text (l, "hca", lwhere, HCA_NAME_MAX, &la->hca, err) < 0
          || get_text (l, "ifname", lwhere, 15, &la->ifname, err) < 0
          || parse_gid (l, lwhere, la, err) < 0 || parse_link (l, lwhere, la, err) < 0
          || parse_gpus (l, lwhere, la, err) < 0)
        return -1;
    }
  return 0;
}

static int
parse_block (const struct json *j, const char *where, struct lease_store *s, roce_error_t *err)
{
  cleanup_free char *subnet = NULL, *first = NULL, *last = NULL, *value = NULL;
  struct roce_cidr c;
  struct roce_addr f, l;
  uint64_t since, empty, rev = 0;

  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "%s: not an object", where);
  if (get_text (j, "subnet", where, CIDR_STR_MAX, &subnet, err) < 0
      || get_text (j, "first", where, ADDR_STR_MAX, &first, err) < 0
      || get_text (j, "last", where, ADDR_STR_MAX, &last, err) < 0
      || get_text (j, "value", where, 4096, &value, err) < 0
      || json_member_u64 (j, where, "since", true, 0, INT64_MAX, &since, err) < 0
      || json_member_u64 (j, where, "empty_since", true, 0, INT64_MAX, &empty, err) < 0
      || json_member_u64 (j, where, "rev", false, 0, INT64_MAX, &rev, err) < 0)
    return -1;
  if (cidr_parse (subnet, &c) < 0 || addr_parse (first, &f) < 0 || addr_parse (last, &l) < 0
      || ! cidr_contains (&c, &f) || ! cidr_contains (&c, &l) || addr_cmp (&f, &l) > 0)
    return roce_error_make (err, EINVAL, "%s: not a block of a subnet", where);
  {
    struct lease_block *b = lease_block_add (s, &c, &f, &l, (int64_t) since, value);
    b->empty_since = (int64_t) empty;
    b->rev = (int64_t) rev;
    b->static_only = json_type (json_object_get (j, "static")) == JSON_TRUE;
  }
  return 0;
}

int
lease_blocks_parse (const struct json *root, struct lease_store *s, roce_error_t *err)
{
  const struct json *bs = json_object_get (root, "blocks");
  if (bs == NULL)
    return 0;
  if (json_type (bs) != JSON_ARRAY)
    return roce_error_make (err, EINVAL, "blocks: not an array");
  for (size_t i = 0; i < json_array_len (bs); i++)
    {
      cleanup_free char *where = xasprintf ("blocks[%zu]", i);
      if (parse_block (json_array_at (bs, i), where, s, err) < 0)
        return -1;
    }
  return 0;
}

int
lease_store_parse (struct lease_store *s, const char *buf, roce_error_t *err)
{
  cleanup_json struct json *root = NULL;
  const struct json *hs;
  uint64_t version;

  if (json_parse (buf, &root, err) < 0)
    return -1;
  if (json_type (root) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "not a JSON object");
  if (get_u64 (root, "version", "", &version, err) < 0)
    return -1;
  if (version != LEASE_VERSION)
    return roce_error_make (err, EINVAL, "version %llu (this roce-hook reads version %d)",
                            (unsigned long long) version, LEASE_VERSION);
  if ((hs = get (root, "holders", JSON_ARRAY, "", err)) == NULL)
    return -1;
  for (size_t i = 0; i < json_array_len (hs); i++)
    {
      cleanup_free char *where = xasprintf ("holders[%zu]", i);
      struct lease_holder *h = xmalloc0 (sizeof (*h));
      if (lease_holder_parse (json_array_at (hs, i), where, h, err) < 0)
        {
          lease_holder_free (h);
          return -1;
        }
      lease_holder_append (s, h);
    }
  return lease_blocks_parse (root, s, err);
}

struct lease_holder *
lease_holder_copy (const struct lease_holder *h)
{
  cleanup_free char *text = lease_holder_format (h);
  cleanup_json struct json *root = NULL;
  struct lease_holder *c = xmalloc0 (sizeof (*c));

  /* What was written is read back the way the store reads it.  */
  if (json_parse (text, &root, NULL) < 0 || lease_holder_parse (root, "copy", c, NULL) < 0)
    abort ();
  return c;
}
