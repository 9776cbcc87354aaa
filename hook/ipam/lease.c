/* Leases in memory: the holders, the choice of an address, and the JSON of
 * a holder (lease_store.c keeps them on disk).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arp.h"
#include "lease_json.h"
#include "json.h"
#include "lease.h"
#include "lease_int.h"
#include "log.h"
#include "utils.h"

void
lease_holder_key (const struct netns_id *ns, char *buf, size_t size)
{
  char boot[NETNS_BOOT_ID_MAX];
  size_t i;
  /* The boot id is a UUID; anything else in it (a hand-made store) cannot
   * become a path.  The file's content has the whole id.  */
  for (i = 0; ns->boot_id[i] && i < sizeof (boot) - 1; i++)
    {
      char c = ns->boot_id[i];
      boot[i] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ? c : 'x';
    }
  boot[i] = '\0';
  snprintf (buf, size, "%s_%llu_%llu", boot, (unsigned long long) ns->dev, (unsigned long long) ns->ino);
}

/* Container ids that can name an index entry: [A-Za-z0-9_.-], not hidden.  */
bool
lease_container_indexable (const char *id)
{
  return id[0] != '.' && str_is_name (id, 200);
}

/* ---- holders ---------------------------------------------------------------- */

void
lease_holder_free (struct lease_holder *h)
{
  if (h == NULL)
    return;
  free (h->owner);
  strv_free (h->containers);
  for (size_t i = 0; i < h->n_addrs; i++)
    {
      free (h->addrs[i].hca);
      free (h->addrs[i].ifname);
    }
  free (h->addrs);
  free (h->stored);
  free (h);
}

struct lease_holder *
lease_holder_add (struct lease_store *s, const struct netns_id *ns, const char *owner, int64_t since)
{
  struct lease_holder *h = xmalloc0 (sizeof (*h));
  h->ns = *ns;
  h->owner = xstrdup (owner);
  h->since = since;
  h->nsid = -1;
  s->h = xrealloc (s->h, (s->n + 1) * sizeof (*s->h));
  s->h[s->n++] = h;
  return h;
}

void
lease_holder_drop (struct lease_store *s, struct lease_holder *h)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->h[i] == h)
      {
        memmove (&s->h[i], &s->h[i + 1], (s->n - i - 1) * sizeof (*s->h));
        s->n--;
        if (h->stored == NULL)
          {
            lease_holder_free (h);
            return;
          }
        /* Its file, and its index entries, go at the commit.  */
        s->gone = xrealloc (s->gone, (s->n_gone + 1) * sizeof (*s->gone));
        s->gone[s->n_gone++] = h;
        return;
      }
}

bool
lease_holder_has (const struct lease_holder *h, const char *container)
{
  for (char **c = h->containers; c && *c; c++)
    if (strcmp (*c, container) == 0)
      return true;
  return false;
}

void
lease_holder_join (struct lease_holder *h, const char *container)
{
  if (! lease_holder_has (h, container))
    strv_push (&h->containers, container);
}

bool
lease_holder_leave (struct lease_holder *h, const char *container)
{
  size_t n = strv_len (h->containers);
  for (size_t i = 0; i < n; i++)
    if (strcmp (h->containers[i], container) == 0)
      {
        free (h->containers[i]);
        memmove (&h->containers[i], &h->containers[i + 1], (n - i) * sizeof (char *));
        return true;
      }
  return false;
}

const struct lease_addr *
lease_holder_addr (const struct lease_holder *h, const char *hca)
{
  for (size_t i = 0; i < h->n_addrs; i++)
    if (strcmp (h->addrs[i].hca, hca) == 0)
      return &h->addrs[i];
  return NULL;
}

void
lease_holder_set_link (struct lease_holder *h, const char *hca, int parent_ifindex, const uint8_t mac[6])
{
  for (size_t i = 0; i < h->n_addrs; i++)
    if (strcmp (h->addrs[i].hca, hca) == 0)
      {
        h->addrs[i].has_link = true;
        h->addrs[i].parent_ifindex = parent_ifindex;
        memcpy (h->addrs[i].mac, mac, 6);
      }
}

char *
lease_holder_users (const struct lease_holder *h, bool releasing)
{
  char *list;
  if (strv_len (h->containers) == 0)
    return xasprintf ("%s (%s)", h->owner, releasing ? "releasing" : "stopped");
  list = xstrdup ("");
  for (char **c = h->containers; *c; c++)
    {
      char *n = xasprintf ("%s%s%s", list, c == h->containers ? "" : ",", *c);
      free (list);
      list = n;
    }
  if (releasing)
    {
      char *n = xasprintf ("%s (releasing)", list);
      free (list);
      list = n;
    }
  return list;
}

struct lease_holder *
lease_find_netns (const struct lease_store *s, const struct netns_id *id)
{
  for (size_t i = 0; i < s->n; i++)
    if (netns_id_equal (&s->h[i]->ns, id))
      return s->h[i];
  return NULL;
}

bool
lease_holder_lists (const struct lease_holder *h, uint32_t addr, const struct lease_addr **addr_out)
{
  for (size_t k = 0; k < h->n_addrs; k++)
    if (h->addrs[k].addr == addr)
      {
        if (addr_out)
          *addr_out = &h->addrs[k];
        return true;
      }
  return false;
}

struct lease_holder *
lease_loaded_with_addr (const struct lease_store *s, uint32_t addr, const struct lease_addr **addr_out)
{
  for (size_t i = 0; i < s->n; i++)
    if (lease_holder_lists (s->h[i], addr, addr_out))
      return s->h[i];
  return NULL;
}

/* Released in this transaction: its entry goes at the commit.  */
bool
lease_gone_with_addr (const struct lease_store *s, uint32_t addr)
{
  for (size_t i = 0; i < s->n_gone; i++)
    if (lease_holder_lists (s->gone[i], addr, NULL))
      return true;
  return false;
}

static const struct lease_bits *
bits_find (const struct lease_store *s, uint32_t hi)
{
  for (size_t i = 0; i < s->n_bits; i++)
    if (s->bits[i].hi == hi)
      return &s->bits[i];
  return NULL;
}

/* Whether the address's bit is set; an address whose /16 was not read is
 * taken for used (never handed out on a guess).  */
static bool
bit_set (const struct lease_store *s, uint32_t addr)
{
  const struct lease_bits *b = bits_find (s, addr >> 16);
  uint32_t lo = addr & 0xffff;
  return b == NULL || (b->map[lo >> 3] & (1u << (lo & 7))) != 0;
}

bool
lease_addr_used (const struct lease_store *s, uint32_t addr)
{
  if (lease_loaded_with_addr (s, addr, NULL))
    return true;
  if (s->all || lease_gone_with_addr (s, addr))
    return false;
  return bit_set (s, addr);
}

const char *
lease_time_format (int64_t t, char *buf, size_t size)
{
  time_t tt = (time_t) t;
  struct tm tm;
  if (gmtime_r (&tt, &tm) == NULL || strftime (buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf (buf, size, "%lld", (long long) t);
  return buf;
}

/* ---- allocation -------------------------------------------------------------- */

static int
cmp_u32 (const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
  return x < y ? -1 : x > y;
}

/* The lowest address of the pool that no holder has; false when none: the
 * loaded holders' addresses, sorted, and the bits of the others.  */
static bool
lowest_free (const struct lease_store *s, const struct policy_hca *hca, uint32_t *out)
{
  cleanup_free uint32_t *used = NULL;
  size_t n = 0, u = 0;
  uint64_t cand;

  for (size_t i = 0; i < s->n; i++)
    n += s->h[i]->n_addrs;
  used = xmalloc0 ((n + 1) * sizeof (*used));
  n = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        uint32_t a = s->h[i]->addrs[k].addr;
        if (a >= hca->pool_first && a <= hca->pool_last)
          used[n++] = a;
      }
  qsort (used, n, sizeof (*used), cmp_u32);
  for (cand = hca->pool_first; cand <= hca->pool_last; cand++)
    {
      bool taken = false;
      while (u < n && used[u] < cand)
        u++;
      taken = u < n && used[u] == cand;
      if (! taken && ! s->all)
        taken = bit_set (s, (uint32_t) cand) && ! lease_gone_with_addr (s, (uint32_t) cand);
      if (! taken)
        {
          *out = (uint32_t) cand;
          return true;
        }
    }
  return false;
}

static void
log_release (const struct lease_holder *h, const char *why)
{
  char a[IPV4_STR_MAX], ns[48];
  for (size_t i = 0; i < h->n_addrs; i++)
    roce_log (ROCE_LOG_INFO, "released %s (%s) of %s in %s: %s", ipv4_format (h->addrs[i].addr, a),
              h->addrs[i].hca, h->owner, netns_id_format (&h->ns, ns, sizeof (ns)), why);
}

/* Drops the holders (but keep) whose namespace is gone.  */
size_t
lease_reclaim (struct lease_store *s, const struct lease_holder *keep, lease_alive_fn alive, void *arg)
{
  cleanup_error roce_error_t err = NULL;
  size_t dropped = 0;
  if (lease_store_load_all (s, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "reclaiming leases: %s", err->msg);
      return 0;
    }
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      if (h == keep || alive (h, arg))
        continue;
      log_release (h, "its network namespace is gone");
      lease_holder_drop (s, h);
      dropped++;
    }
  return dropped;
}

static void
holder_push_addr (struct lease_holder *h, const struct policy_hca *hca, uint32_t addr,
                  const char *ifname)
{
  h->addrs = xrealloc (h->addrs, (h->n_addrs + 1) * sizeof (*h->addrs));
  h->addrs[h->n_addrs++] = (struct lease_addr){ .hca = xstrdup (hca->name), .addr = addr,
                                                .ifname = xstrdup (ifname) };
}

int
lease_assign (struct lease_store *s, struct lease_holder *h, const struct policy_hca *hca,
              const char *ifname, bool has_want, uint32_t want, lease_alive_fn alive, void *arg,
              uint32_t *out, roce_error_t *err)
{
  char a[IPV4_STR_MAX], b[IPV4_STR_MAX];
  uint32_t addr;

  /* The bits of the pool, for its lowest free address (an address asked
   * for is looked up by its entry).  */
  if (! has_want && lease_store_index (s, hca->pool_first, hca->pool_last, err) < 0)
    return -1;
  if (has_want)
    {
      const struct lease_addr *la = NULL;
      struct lease_holder *other = NULL;
      if (lease_find_addr (s, want, &other, &la, err) < 0)
        return -1;
      if (other == h)
        return roce_error_make (err, EINVAL, "internal error: %s assigned twice",
                                ipv4_format (want, a));
      if (other && alive (other, arg))
        {
          char since[32];
          cleanup_free char *users = lease_holder_users (other, false);
          cleanup_free char *what = xasprintf ("address %s of %s", ipv4_format (want, a), hca->name);
          cleanup_free char *found = xasprintf ("held by container %s since %s", users,
                                                lease_time_format (other->since, since, sizeof (since)));
          cleanup_free char *fix = xasprintf ("pick another address in %s-%s, or omit roce.io/ip to "
                                              "get a free one",
                                              ipv4_format (hca->pool_first, a),
                                              ipv4_format (hca->pool_last, b));
          return roce_error_refuse (err, what, "an address no running container holds", found, fix);
        }
      if (other)
        {
          log_release (other, "its network namespace is gone (address asked for again)");
          lease_holder_drop (s, other);
        }
      addr = want;
    }
  else if (! lowest_free (s, hca, &addr) && (lease_reclaim (s, h, alive, arg) == 0 || ! lowest_free (s, hca, &addr)))
    {
      uint64_t size = (uint64_t) hca->pool_last - hca->pool_first + 1;
      cleanup_free char *what = xasprintf ("address pool of %s", hca->name);
      cleanup_free char *exp = xasprintf ("a free address in %s-%s", ipv4_format (hca->pool_first, a),
                                          ipv4_format (hca->pool_last, b));
      cleanup_free char *found = xasprintf ("all %llu held", (unsigned long long) size);
      cleanup_free char *fix = xasprintf ("stop a container that holds one (roce-hook leases lists "
                                          "them), or widen hcas.%s.pool in the node policy",
                                          hca->name);
      return roce_error_refuse (err, what, exp, found, fix);
    }
  holder_push_addr (h, hca, addr, ifname);
  *out = addr;
  return 0;
}

/* ---- the file ------------------------------------------------------------------- */

static void
gen_holder (struct json_gen *g, const struct lease_holder *h)
{
  char a[IPV4_STR_MAX];

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
      json_gen_kv_string (g, "address", ipv4_format (h->addrs[k].addr, a));
      json_gen_kv_string (g, "ifname", h->addrs[k].ifname);
      if (h->addrs[k].has_gid)
        {
          json_gen_string (g, "gid");
          json_gen_map_open (g);
          json_gen_kv_integer (g, "port", h->addrs[k].gid_port);
          json_gen_kv_integer (g, "index", h->addrs[k].gid_index);
          json_gen_map_close (g);
        }
      if (h->addrs[k].has_link)
        {
          char m[18];
          json_gen_string (g, "link");
          json_gen_map_open (g);
          json_gen_kv_integer (g, "parent", h->addrs[k].parent_ifindex);
          json_gen_kv_string (g, "mac", arp_mac_format (h->addrs[k].mac, m));
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
  char a[IPV4_STR_MAX];

  json_gen_string (g, "blocks");
  json_gen_array_open (g);
  for (size_t i = 0; i < s->n_blocks; i++)
    {
      const struct lease_block *b = &s->blocks[i];
      char c[CIDR_STR_MAX];
      json_gen_map_open (g);
      json_gen_kv_string (g, "subnet", cidr_format (&b->subnet, c));
      json_gen_kv_string (g, "first", ipv4_format (b->first, a));
      json_gen_kv_string (g, "last", ipv4_format (b->last, a));
      json_gen_kv_integer (g, "since", b->since);
      json_gen_kv_integer (g, "empty_since", b->empty_since);
      json_gen_kv_string (g, "value", b->value);
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
get_u64 (const struct json *obj, const char *key, const char *where, uint64_t *out, roce_error_t *err)
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
  if (arp_mac_parse (mac, la->mac) < 0)
    return roce_error_make (err, EINVAL, "%s.mac: '%s' is not a MAC address", lwhere, mac);
  la->has_link = true;
  la->parent_ifindex = (int) parent;
  return 0;
}

int
lease_holder_parse (const struct json *j, const char *where, struct lease_holder *h, roce_error_t *err)
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
      if (get_text (l, "address", lwhere, IPV4_STR_MAX, &addr, err) < 0)
        return -1;
      if (ipv4_parse (addr, &la->addr) < 0)
        return roce_error_make (err, EINVAL, "%s.address: '%s' is not an IPv4 address", lwhere, addr);
      h->n_addrs++;
      if (get_text (l, "hca", lwhere, HCA_NAME_MAX, &la->hca, err) < 0
          || get_text (l, "ifname", lwhere, 15, &la->ifname, err) < 0
          || parse_gid (l, lwhere, la, err) < 0 || parse_link (l, lwhere, la, err) < 0)
        return -1;
    }
  return 0;
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

struct lease_holder *
lease_holder_move_aside (struct lease_store *s, struct lease_holder *h)
{
  struct lease_holder *g = lease_holder_copy (h);
  g->ns.ino |= NETNS_INO_GONE;
  lease_holder_drop (s, h);
  s->h = xrealloc (s->h, (s->n + 1) * sizeof (*s->h));
  s->h[s->n++] = g;
  return g;
}

struct lease_block *
lease_block_add (struct lease_store *s, const struct roce_cidr *subnet, uint32_t first, uint32_t last,
                 int64_t since, const char *value)
{
  struct lease_block *b;
  s->blocks = xrealloc (s->blocks, (s->n_blocks + 1) * sizeof (*s->blocks));
  b = &s->blocks[s->n_blocks++];
  *b = (struct lease_block){ .subnet = *subnet, .first = first, .last = last, .since = since,
                             .value = xstrdup (value) };
  return b;
}

void
lease_block_drop (struct lease_store *s, size_t i)
{
  free (s->blocks[i].value);
  memmove (&s->blocks[i], &s->blocks[i + 1], (s->n_blocks - i - 1) * sizeof (*s->blocks));
  s->n_blocks--;
}

static int
parse_block (const struct json *j, const char *where, struct lease_store *s, roce_error_t *err)
{
  cleanup_free char *subnet = NULL, *first = NULL, *last = NULL, *value = NULL;
  struct roce_cidr c;
  uint32_t f, l;
  uint64_t since, empty;

  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "%s: not an object", where);
  if (get_text (j, "subnet", where, CIDR_STR_MAX, &subnet, err) < 0
      || get_text (j, "first", where, IPV4_STR_MAX, &first, err) < 0
      || get_text (j, "last", where, IPV4_STR_MAX, &last, err) < 0
      || get_text (j, "value", where, 4096, &value, err) < 0
      || json_member_u64 (j, where, "since", true, 0, INT64_MAX, &since, err) < 0
      || json_member_u64 (j, where, "empty_since", true, 0, INT64_MAX, &empty, err) < 0)
    return -1;
  if (cidr_parse (subnet, &c) < 0 || ipv4_parse (first, &f) < 0 || ipv4_parse (last, &l) < 0 || f > l)
    return roce_error_make (err, EINVAL, "%s: not a block of a subnet", where);
  lease_block_add (s, &c, f, l, (int64_t) since, value)->empty_since = (int64_t) empty;
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
      s->h = xrealloc (s->h, (s->n + 1) * sizeof (*s->h));
      s->h[s->n++] = h;
    }
  return lease_blocks_parse (root, s, err);
}

