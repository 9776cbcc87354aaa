#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "utils.h"

#define LEASE_FILE_NEW LEASE_FILE ".new"
#define LEASE_FILE_MAX (64 * 1024 * 1024)
#define HOLDER_FILE_MAX (1024 * 1024)
#define LEASE_VERSION 1
/* <boot>_<dev>_<ino>: a holder's file name.  */
#define KEY_MAX (NETNS_BOOT_ID_MAX + 48)

/* used/<a>.<b>: which addresses of the /16 a.b.0.0 some holder has, a bit
 * each (address a.b.c.d is bit c * 256 + d), after a header naming it: the
 * set a free address is chosen from, read in one 8 KiB read whatever the
 * leases held (a directory of 4,000 entries cost 1.7 ms to list).  Derived
 * from the holders: a bit is set before the holder that has the address is
 * written and cleared after it is removed; a file missing or unreadable is
 * made again from addrs/, and gc makes every one again from the holders.  */
#define BITS_MAGIC "RHUSED01"
#define BITS_HDR 16
#define BITS_MAP 8192

struct lease_bits
{
  uint32_t hi; /* address >> 16 */
  uint8_t map[BITS_MAP];
  int fd; /* O_RDWR, -1 until written */
};

static void
holder_key (const struct netns_id *ns, char *buf, size_t size)
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
static bool
container_indexable (const char *id)
{
  return id[0] != '.' && str_is_name (id, 200);
}

/* ---- holders ---------------------------------------------------------------- */

static void
holder_free (struct lease_holder *h)
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
            holder_free (h);
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

char *
lease_holder_users (const struct lease_holder *h)
{
  char *list;
  if (strv_len (h->containers) == 0)
    return xasprintf ("%s (stopped)", h->owner);
  list = xstrdup ("");
  for (char **c = h->containers; *c; c++)
    {
      char *n = xasprintf ("%s%s%s", list, c == h->containers ? "" : ",", *c);
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

static bool
lists_addr (const struct lease_holder *h, uint32_t addr, const struct lease_addr **addr_out)
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

static struct lease_holder *
loaded_with_addr (const struct lease_store *s, uint32_t addr, const struct lease_addr **addr_out)
{
  for (size_t i = 0; i < s->n; i++)
    if (lists_addr (s->h[i], addr, addr_out))
      return s->h[i];
  return NULL;
}

/* Released in this transaction: its entry goes at the commit.  */
static bool
gone_with_addr (const struct lease_store *s, uint32_t addr)
{
  for (size_t i = 0; i < s->n_gone; i++)
    if (lists_addr (s->gone[i], addr, NULL))
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
  if (loaded_with_addr (s, addr, NULL))
    return true;
  if (s->all || gone_with_addr (s, addr))
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
        taken = bit_set (s, (uint32_t) cand) && ! gone_with_addr (s, (uint32_t) cand);
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
      if (h == keep || alive (&h->ns, arg))
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
      if (other && alive (&other->ns, arg))
        {
          char since[32];
          cleanup_free char *users = lease_holder_users (other);
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

static char *
holder_format (const struct lease_holder *h)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  gen_holder (g, h);
  return gen_text (g);
}

/* blocks.json, or NULL when the node holds none.  */
static char *
blocks_format (const struct lease_store *s)
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

static int
parse_holder (const struct json *j, const char *where, struct lease_holder *h, roce_error_t *err)
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
          || parse_gid (l, lwhere, la, err) < 0)
        return -1;
    }
  return 0;
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

static int
parse_blocks (const struct json *root, struct lease_store *s, roce_error_t *err)
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
      if (parse_holder (json_array_at (hs, i), where, h, err) < 0)
        {
          holder_free (h);
          return -1;
        }
      s->h = xrealloc (s->h, (s->n + 1) * sizeof (*s->h));
      s->h[s->n++] = h;
    }
  return parse_blocks (root, s, err);
}

static int
this_boot (char *buf, size_t size)
{
  cleanup_close int fd = open ("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read (fd, buf, size - 1);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* Whether the store was last written in an earlier boot: only a power loss
 * (the store is not fsynced) can have torn it then.  LEASE_BOOT says which
 * boot wrote it (the wall clock may jump: it is not asked); a store older
 * than that file falls back to its mtime against the boot time.  */
static bool
written_before_this_boot (const struct lease_store *s, int fd)
{
  char now[64] = "", was[64] = "";
  cleanup_close int bfd = openat (s->dir_fd, LEASE_BOOT, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct timespec t, up;
  struct stat st;
  ssize_t n;

  if (bfd >= 0)
    {
      n = read (bfd, was, sizeof (was) - 1);
      if (n <= 0 || this_boot (now, sizeof (now)) < 0)
        return false; /* cannot tell: not stale */
      was[n] = '\0';
      return strcmp (was, now) != 0;
    }
  if (fstat (fd, &st) < 0 || clock_gettime (CLOCK_REALTIME, &t) < 0
      || clock_gettime (CLOCK_BOOTTIME, &up) < 0)
    return false;
  return st.st_mtim.tv_sec < t.tv_sec - up.tv_sec;
}

/* Once a boot, the first commit records which boot writes the store.  */
static void
mark_boot (struct lease_store *s)
{
  char now[64] = "", was[64] = "";
  cleanup_close int bfd = openat (s->dir_fd, LEASE_BOOT, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_close int wfd = -1;
  ssize_t n = bfd >= 0 ? read (bfd, was, sizeof (was) - 1) : -1;

  if (this_boot (now, sizeof (now)) < 0)
    return;
  if (n > 0)
    {
      was[n] = '\0';
      if (strcmp (was, now) == 0)
        return;
    }
  wfd = openat (s->dir_fd, LEASE_BOOT ".new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (wfd < 0 || write (wfd, now, strlen (now)) != (ssize_t) strlen (now)
      || renameat (s->dir_fd, LEASE_BOOT ".new", s->dir_fd, LEASE_BOOT) < 0)
    roce_log (ROCE_LOG_WARN, "lease store `%s`: recording the boot: %s", s->dir, strerror (errno));
}

static struct lease_store *
store_new (const char *dir)
{
  struct lease_store *s = xmalloc0 (sizeof (*s));
  s->dir = xstrdup (dir);
  s->dir_fd = -1;
  s->lock_fd = -1;
  return s;
}

static void
holders_clear (struct lease_store *s)
{
  for (size_t i = 0; i < s->n; i++)
    holder_free (s->h[i]);
  s->n = 0;
  for (size_t i = 0; i < s->n_blocks; i++)
    free (s->blocks[i].value);
  s->n_blocks = 0;
}

/* The pid holding the flock on fd, from /proc/locks ("1: FLOCK  ADVISORY
 * WRITE <pid> <maj>:<min>:<ino> 0 EOF"; waiters' lines carry "->"), or 0.  */
static pid_t
lock_holder (int fd)
{
  cleanup_file FILE *f = fopen ("/proc/locks", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;
  struct stat st;

  if (f == NULL || fstat (fd, &st) < 0)
    return 0;
  while (getline (&line, &cap, f) > 0)
    {
      char kind[16], mode[16];
      unsigned maj, min;
      unsigned long long ino;
      int pid;
      if (strstr (line, "->") != NULL
          || sscanf (line, "%*d: %15s %*s %15s %d %x:%x:%llu", kind, mode, &pid, &maj, &min, &ino) != 6)
        continue;
      if (strcmp (kind, "FLOCK") == 0 && ino == (unsigned long long) st.st_ino
          && maj == major (st.st_dev) && min == minor (st.st_dev) && pid > 0)
        return (pid_t) pid;
    }
  return 0;
}

/* Takes the store's lock, waiting at most timeout_ms: a holder that is
 * stopped or hung must not keep every start waiting until the runtime kills
 * the hook.  The refusal names the holder.  */
static int
lock_within (struct lease_store *s, unsigned timeout_ms, roce_error_t *err)
{
  struct timespec start, now;
  long pause_us = 200;

  clock_gettime (CLOCK_MONOTONIC, &start);
  for (;;)
    {
      long waited_ms;
      if (flock (s->lock_fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
      if (errno != EWOULDBLOCK && errno != EINTR)
        return roce_error_sys (err, errno, "lock `%s/%s`", s->dir, LEASE_LOCK);
      clock_gettime (CLOCK_MONOTONIC, &now);
      waited_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
      if (waited_ms >= (long) timeout_ms)
        {
          pid_t pid = lock_holder (s->lock_fd);
          cleanup_free char *what = xasprintf ("the lease store lock `%s/%s`", s->dir, LEASE_LOCK);
          cleanup_free char *exp = xasprintf ("free within %u ms", timeout_ms);
          cleanup_free char *comm = NULL;
          cleanup_free char *found = NULL;
          cleanup_free char *fix = NULL;
          cleanup_free char *commpath = xasprintf ("/proc/%d/comm", (int) pid);
          cleanup_error roce_error_t cerr = NULL;
          if (pid <= 0)
            return roce_error_refuse (err, what, exp, "still held (holder unknown)",
                                      "find the process holding it with `lslocks`; it is "
                                      "released when that process exits");
          if (read_line_at (AT_FDCWD, commpath, &comm, &cerr) < 0 || ! str_is_printable (comm))
            {
              free (comm);
              comm = xstrdup ("?");
            }
          found = xasprintf ("held by pid %d (%s)", (int) pid, comm);
          fix = xasprintf ("find out why pid %d is stopped or hung (`cat /proc/%d/status`); the "
                           "lock is released when it exits",
                           (int) pid, (int) pid);
          return roce_error_refuse (err, what, exp, found, fix);
        }
      usleep ((useconds_t) pause_us);
      if (pause_us < 10000)
        pause_us *= 2;
    }
}

static int
legacy_load (struct lease_store *s, roce_error_t *err)
{
  cleanup_close int fd = openat (s->dir_fd, LEASE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *buf = NULL;

  s->all = true;
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_FILE);
  if (read_all_fd (fd, LEASE_FILE_MAX, &buf, NULL, err) < 0 || lease_store_parse (s, buf, err) < 0)
    {
      cleanup_free char *what = NULL, *found = NULL, *fix = NULL;
      if (written_before_this_boot (s, fd))
        {
          /* Every lease in it died with the last boot.  */
          roce_log (ROCE_LOG_WARN, "lease store `%s/%s` from an earlier boot is unreadable (%s): "
                    "starting from an empty store", s->dir, LEASE_FILE, (*err)->msg);
          roce_error_release (err);
          holders_clear (s);
          return 0;
        }
      /* The store is the node's truth on who holds which address: nothing
       * is assigned from one that cannot be read.  The one-line contract,
       * with what the operator can do.  */
      what = xasprintf ("lease store `%s/%s`", s->dir, LEASE_FILE);
      found = xstrdup ((*err)->msg);
      fix = xasprintf ("inspect it; when no RoCE container runs on this node, move it aside (mv "
                       "%s/%s %s/%s.bad): leases start afresh",
                       s->dir, LEASE_FILE, s->dir, LEASE_FILE);
      roce_error_release (err);
      return roce_error_refuse (err, what, "a store this version reads", found, fix);
    }
  return 0;
}

/* ---- the layout: holders/, addrs/, containers/ ------------------------------------ */

/* The fd of a directory of the store; -1 with errno ENOENT when it is not
 * there and create is false.  */
static int
subdir (const struct lease_store *s, const char *name, bool create, roce_error_t *err)
{
  int fd = openat (s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create)
    {
      if (mkdirat (s->dir_fd, name, 0755) < 0 && errno != EEXIST)
        return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, name);
      fd = openat (s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  if (fd < 0 && (errno != ENOENT || create))
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, name);
  return fd;
}

static bool
key_of_this_boot (const char *key)
{
  char now[64] = "";
  size_t n;
  if (this_boot (now, sizeof (now)) < 0)
    return true; /* cannot tell: take it for this boot's */
  n = strcspn (now, "\n");
  return strncmp (key, now, n) == 0 && key[n] == '_';
}

static struct lease_holder *
loaded_with_key (const struct lease_store *s, const char *key)
{
  char k[KEY_MAX];
  for (size_t i = 0; i < s->n; i++)
    {
      holder_key (&s->h[i]->ns, k, sizeof (k));
      if (strcmp (k, key) == 0)
        return s->h[i];
    }
  return NULL;
}

static bool
gone_with_key (const struct lease_store *s, const char *key)
{
  char k[KEY_MAX];
  for (size_t i = 0; i < s->n_gone; i++)
    {
      holder_key (&s->gone[i]->ns, k, sizeof (k));
      if (strcmp (k, key) == 0)
        return true;
    }
  return false;
}

static int
holder_unreadable (const struct lease_store *s, const char *key, const char *why, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("lease store `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
  cleanup_free char *fix = xasprintf ("inspect it; when its network namespace is gone (roce-hook "
                                      "leases), move it aside (mv %s/%s/%s %s/%s.bad)",
                                      s->dir, LEASE_HOLDERS, key, s->dir, key);
  return roce_error_refuse (err, what, "a holder this version reads", why, fix);
}

/* Reads holders/<key> into the store (*out; NULL when there is none).  A
 * file of an earlier boot that cannot be read held nothing alive: it is
 * passed over (`gc` removes it).  */
static int
load_key (struct lease_store *s, int hfd, const char *key, struct lease_holder **out, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t perr = NULL;
  cleanup_json struct json *root = NULL;
  struct lease_holder *h;
  char k[KEY_MAX];
  int fd;

  *out = loaded_with_key (s, key);
  if (*out || gone_with_key (s, key))
    return 0;
  fd = openat (hfd, key, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
  if (read_all_fd (fd, HOLDER_FILE_MAX, &buf, NULL, &perr) < 0)
    {
      close (fd);
      return holder_unreadable (s, key, perr->msg, err);
    }
  close (fd);
  h = xmalloc0 (sizeof (*h));
  if (json_parse (buf, &root, &perr) < 0 || parse_holder (root, key, h, &perr) < 0)
    {
      holder_free (h);
      if (! key_of_this_boot (key))
        {
          roce_log (ROCE_LOG_WARN, "lease store `%s/%s/%s` of an earlier boot is unreadable (%s): "
                    "passed over", s->dir, LEASE_HOLDERS, key, perr->msg);
          return 0;
        }
      return holder_unreadable (s, key, perr->msg, err);
    }
  holder_key (&h->ns, k, sizeof (k));
  if (strcmp (k, key) != 0)
    {
      holder_free (h);
      return holder_unreadable (s, key, "a holder of another namespace", err);
    }
  h->stored = steal_pointer (&buf);
  s->h = xrealloc (s->h, (s->n + 1) * sizeof (*s->h));
  s->h[s->n++] = h;
  *out = h;
  return 0;
}

static int
load_one (struct lease_store *s, const char *key, struct lease_holder **out, roce_error_t *err)
{
  cleanup_close int hfd = -1;
  *out = NULL;
  if (s->all)
    {
      *out = loaded_with_key (s, key);
      return 0;
    }
  hfd = subdir (s, LEASE_HOLDERS, false, err);
  if (hfd < 0)
    return errno == ENOENT ? 0 : -1;
  return load_key (s, hfd, key, out, err);
}

int
lease_store_load_all (struct lease_store *s, roce_error_t *err)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  int hfd;

  if (s->all || s->dir_fd < 0)
    {
      s->all = true;
      return 0;
    }
  hfd = subdir (s, LEASE_HOLDERS, false, err);
  if (hfd < 0 && errno == ENOENT)
    {
      s->all = true;
      return 0;
    }
  if (hfd < 0 || (d = fdopendir (hfd)) == NULL)
    {
      if (hfd >= 0)
        close (hfd);
      return hfd < 0 ? -1 : roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_HOLDERS);
    }
  while ((e = readdir (d)) != NULL)
    {
      struct lease_holder *h;
      if (e->d_name[0] == '.')
        continue; /* ".", "..", a file being written */
      if (load_key (s, dirfd (d), e->d_name, &h, err) < 0)
        return -1;
    }
  s->all = true;
  return 0;
}

int
lease_load_netns (struct lease_store *s, const struct netns_id *id, roce_error_t *err)
{
  struct lease_holder *h;
  char key[KEY_MAX];
  holder_key (id, key, sizeof (key));
  return load_one (s, key, &h, err);
}

/* The key of the holder an index entry names, or "" when it has none.  An
 * entry is a hard link to a version of its holder's file (linking costs no
 * new inode, unlike a symlink): whichever version, its namespace is the
 * holder's.  */
static int
entry_read (int fd, const char *name, char *key, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_error roce_error_t perr = NULL;
  struct lease_holder *h;
  int efd = fd < 0 ? -1 : openat (fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

  key[0] = '\0';
  if (efd < 0 && (fd < 0 || errno == ENOENT))
    return 0;
  if (efd < 0)
    return roce_error_sys (err, errno, "lease store entry `%s`", name);
  if (read_all_fd (efd, HOLDER_FILE_MAX, &buf, NULL, &perr) < 0)
    {
      close (efd);
      return 0; /* names no holder */
    }
  close (efd);
  h = xmalloc0 (sizeof (*h));
  if (json_parse (buf, &root, &perr) == 0 && parse_holder (root, name, h, &perr) == 0)
    holder_key (&h->ns, key, KEY_MAX);
  holder_free (h);
  return 0;
}

int
lease_load_container (struct lease_store *s, const char *container, roce_error_t *err)
{
  cleanup_close int cfd = -1;
  struct lease_holder *h;
  char key[KEY_MAX];

  if (s->all)
    return 0;
  for (size_t i = 0; i < s->n; i++)
    if (lease_holder_has (s->h[i], container))
      return 0;
  if (! container_indexable (container))
    return lease_store_load_all (s, err);
  cfd = subdir (s, LEASE_CONTAINERS, false, err);
  if (cfd < 0 && errno != ENOENT)
    return -1;
  if (entry_read (cfd, container, key, err) < 0)
    return -1;
  return key[0] ? load_one (s, key, &h, err) : 0;
}

static void
bits_name (uint32_t hi, char *buf, size_t size)
{
  snprintf (buf, size, "%u.%u", (unsigned) (hi >> 8), (unsigned) (hi & 0xff));
}

static void
bits_header (uint32_t hi, uint8_t *hdr)
{
  memset (hdr, 0, BITS_HDR);
  memcpy (hdr, BITS_MAGIC, 8);
  hdr[8] = (uint8_t) (hi >> 8);
  hdr[9] = (uint8_t) hi;
}

/* Writes b whole: beside, then renamed over (a file made again).  */
static int
bits_write (struct lease_store *s, struct lease_bits *b, roce_error_t *err)
{
  cleanup_close int ufd = subdir (s, LEASE_USED, true, err);
  cleanup_free char *tmp = NULL;
  uint8_t hdr[BITS_HDR];
  char name[16];
  int fd;

  if (ufd < 0)
    return -1;
  bits_name (b->hi, name, sizeof (name));
  tmp = xasprintf (".%s.new", name);
  bits_header (b->hi, hdr);
  fd = openat (ufd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || write_all_fd (fd, hdr, sizeof (hdr), NULL) < 0 || write_all_fd (fd, b->map, BITS_MAP, NULL) < 0
      || renameat (ufd, tmp, ufd, name) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      return roce_error_sys (err, e ? e : EIO, "write `%s/%s/%s`", s->dir, LEASE_USED, name);
    }
  cleanup_closep (&b->fd);
  b->fd = fd;
  return 0;
}

/* Reads used/<hi>, or makes it again from addrs/ when it is missing or is
 * not one (a store of an earlier version, a file torn by a power loss).  */
static struct lease_bits *
bits_load (struct lease_store *s, uint32_t hi, roce_error_t *err)
{
  struct lease_bits *b;
  uint8_t hdr[BITS_HDR], want[BITS_HDR];
  char name[16];
  int fd = -1, ufd;
  bool ok = false;

  for (size_t i = 0; i < s->n_bits; i++)
    if (s->bits[i].hi == hi)
      return &s->bits[i];
  s->bits = xrealloc (s->bits, (s->n_bits + 1) * sizeof (*s->bits));
  b = &s->bits[s->n_bits];
  memset (b, 0, sizeof (*b));
  b->hi = hi;
  b->fd = -1;
  bits_name (hi, name, sizeof (name));
  bits_header (hi, want);
  ufd = subdir (s, LEASE_USED, false, err);
  if (ufd < 0 && errno != ENOENT)
    return NULL;
  if (ufd >= 0)
    {
      fd = openat (ufd, name, (s->lock_fd >= 0 ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
      close (ufd);
    }
  if (fd >= 0)
    ok = pread (fd, hdr, sizeof (hdr), 0) == (ssize_t) sizeof (hdr) && memcmp (hdr, want, sizeof (hdr)) == 0
         && pread (fd, b->map, BITS_MAP, BITS_HDR) == BITS_MAP;
  if (ok)
    {
      b->fd = fd;
      s->n_bits++;
      return b;
    }
  if (fd >= 0)
    close (fd);
  memset (b->map, 0, BITS_MAP);
  {
    /* Made again from the index: every address some entry names (a superset
     * of what the holders have, never less).  */
    cleanup_dir DIR *d = NULL;
    struct dirent *e;
    int afd = subdir (s, LEASE_ADDRS, false, err);
    if (afd < 0 && errno != ENOENT)
      return NULL;
    if (afd >= 0 && (d = fdopendir (afd)) == NULL)
      {
        close (afd);
        roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_ADDRS);
        return NULL;
      }
    while (d && (e = readdir (d)) != NULL)
      {
        uint32_t a;
        if (e->d_name[0] != '.' && ipv4_parse (e->d_name, &a) == 0 && (a >> 16) == hi)
          b->map[(a & 0xffff) >> 3] |= (uint8_t) (1u << (a & 7));
      }
  }
  s->n_bits++;
  if (s->lock_fd >= 0 && bits_write (s, &s->bits[s->n_bits - 1], err) < 0)
    {
      s->n_bits--;
      return NULL;
    }
  return &s->bits[s->n_bits - 1];
}

int
lease_store_index (struct lease_store *s, uint32_t first, uint32_t last, roce_error_t *err)
{
  if (s->all || first > last)
    return 0;
  for (uint32_t hi = first >> 16;; hi++)
    {
      if (bits_load (s, hi, err) == NULL)
        return -1;
      if (hi == last >> 16)
        return 0;
    }
}

/* Sets or clears the address's bit, in the file at once (one byte).  */
static int
bits_mark (struct lease_store *s, uint32_t addr, bool used, roce_error_t *err)
{
  struct lease_bits *b = bits_load (s, addr >> 16, err);
  uint32_t lo = addr & 0xffff;
  uint8_t old;

  if (b == NULL)
    return -1;
  old = b->map[lo >> 3];
  if (used)
    b->map[lo >> 3] |= (uint8_t) (1u << (lo & 7));
  else
    b->map[lo >> 3] &= (uint8_t) ~(1u << (lo & 7));
  if (b->map[lo >> 3] == old)
    return 0;
  if (b->fd < 0)
    return bits_write (s, b, err);
  if (pwrite (b->fd, &b->map[lo >> 3], 1, BITS_HDR + (off_t) (lo >> 3)) != 1)
    return roce_error_sys (err, errno ? errno : EIO, "lease store `%s/%s`", s->dir, LEASE_USED);
  return 0;
}

int
lease_find_addr (struct lease_store *s, uint32_t addr, struct lease_holder **out,
                 const struct lease_addr **addr_out, roce_error_t *err)
{
  cleanup_close int afd = -1;
  struct lease_holder *h;
  char name[IPV4_STR_MAX], key[KEY_MAX];

  *out = loaded_with_addr (s, addr, addr_out);
  if (*out || s->all || gone_with_addr (s, addr))
    return 0;
  afd = subdir (s, LEASE_ADDRS, false, err);
  if (afd < 0 && errno != ENOENT)
    return -1;
  if (entry_read (afd, ipv4_format (addr, name), key, err) < 0)
    return -1;
  if (key[0] == '\0')
    return 0;
  if (load_one (s, key, &h, err) < 0)
    return -1;
  /* An entry whose holder does not list the address is one a killed hook
   * left: the address is free.  */
  if (h && lists_addr (h, addr, addr_out))
    *out = h;
  return 0;
}

/* ---- writing ------------------------------------------------------------------------- */

/* Writes name in dirfd: beside (".name.new"), then renamed over.  */
static int
write_beside (int dirfd, const char *dir, const char *name, const char *text, roce_error_t *err)
{
  cleanup_free char *tmp = xasprintf (".%s.new", name);
  cleanup_close int fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return roce_error_sys (err, errno, "write `%s/%s`", dir, tmp);
  if (write_all_fd (fd, text, strlen (text), err) < 0)
    return roce_error_wrap (err, "write `%s/%s`", dir, tmp);
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    return roce_error_sys (err, errno, "rename `%s/%s`", dir, tmp);
  return 0;
}

/* Points the index entry name at key: a hard link to hfd/src (the holder's
 * file being written), renamed over an entry of another holder.  */
static int
entry_point (int fd, const char *dir, const char *name, const char *key, int hfd, const char *src,
             roce_error_t *err)
{
  char was[KEY_MAX];
  cleanup_free char *tmp = NULL;

  if (entry_read (fd, name, was, err) < 0)
    return -1;
  if (strcmp (was, key) == 0)
    return 0;
  if (linkat (hfd, src, fd, name, 0) == 0)
    return 0;
  if (errno != EEXIST)
    return roce_error_sys (err, errno, "lease store entry `%s/%s`", dir, name);
  tmp = xasprintf (".%s.new", name);
  unlinkat (fd, tmp, 0);
  if (linkat (hfd, src, fd, tmp, 0) < 0 || renameat (fd, tmp, fd, name) < 0)
    return roce_error_sys (err, errno, "lease store entry `%s/%s`", dir, name);
  return 0;
}

/* Removes the entry name when it still names key.  */
static void
entry_drop (int fd, const char *name, const char *key)
{
  char was[KEY_MAX];
  if (entry_read (fd, name, was, NULL) == 0 && strcmp (was, key) == 0)
    unlinkat (fd, name, 0);
}

struct store_fds
{
  int h, a, c;
};

/* The entries of a holder as its file had it and no longer has.  */
static void
drop_old_entries (struct lease_store *s, const struct store_fds *f, const char *stored,
                  const struct lease_holder *now, const char *key)
{
  cleanup_json struct json *root = NULL;
  struct lease_holder *old = xmalloc0 (sizeof (*old));
  char a[IPV4_STR_MAX];

  if (json_parse (stored, &root, NULL) == 0 && parse_holder (root, key, old, NULL) == 0)
    {
      for (size_t k = 0; k < old->n_addrs; k++)
        if (now == NULL || ! lists_addr (now, old->addrs[k].addr, NULL))
          {
            cleanup_error roce_error_t berr = NULL;
            entry_drop (f->a, ipv4_format (old->addrs[k].addr, a), key);
            /* Taken over in this commit by another holder: still used.  */
            if (loaded_with_addr (s, old->addrs[k].addr, NULL) == NULL
                && bits_mark (s, old->addrs[k].addr, false, &berr) < 0)
              roce_log (ROCE_LOG_WARN, "%s (gc makes it again)", berr->msg);
          }
      for (char **c = old->containers; c && *c; c++)
        if (container_indexable (*c) && (now == NULL || ! lease_holder_has (now, *c)))
          entry_drop (f->c, *c, key);
    }
  holder_free (old);
}

/* With every holder loaded: the entries no holder lists, and files left
 * half-written, are what killed hooks left.  */
static void
repair_bits (struct lease_store *s)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  uint32_t *his = NULL;
  size_t n = 0;
  int ufd = subdir (s, LEASE_USED, false, NULL);

  /* Every /16 a file or a holder has.  */
  if (ufd >= 0 && (d = fdopendir (ufd)) == NULL)
    close (ufd);
  while (d && (e = readdir (d)) != NULL)
    {
      unsigned x, y;
      char end;
      if (sscanf (e->d_name, "%3u.%3u%c", &x, &y, &end) == 2 && x < 256 && y < 256)
        {
          his = xrealloc (his, (n + 1) * sizeof (*his));
          his[n++] = (x << 8) | y;
        }
      else if (e->d_name[0] == '.' && strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        his = xrealloc (his, (n + 1) * sizeof (*his));
        his[n++] = s->h[i]->addrs[k].addr >> 16;
      }
  for (size_t i = 0; i < n; i++)
    {
      struct lease_bits b = { .hi = his[i], .fd = -1 };
      cleanup_error roce_error_t err = NULL;
      bool seen = false;
      for (size_t k = 0; k < i; k++)
        seen = seen || his[k] == his[i];
      if (seen)
        continue;
      for (size_t h = 0; h < s->n; h++)
        for (size_t k = 0; k < s->h[h]->n_addrs; k++)
          {
            uint32_t a = s->h[h]->addrs[k].addr;
            if ((a >> 16) == b.hi)
              b.map[(a & 0xffff) >> 3] |= (uint8_t) (1u << (a & 7));
          }
      if (bits_write (s, &b, &err) < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
      cleanup_closep (&b.fd);
    }
  free (his);
}

static void
repair (struct lease_store *s, const struct store_fds *f)
{
  const int fds[] = { f->a, f->c, f->h };
  for (size_t i = 0; i < ARRAY_SIZE (fds); i++)
    {
      cleanup_dir DIR *d = NULL;
      struct dirent *e;
      int fd = fcntl (fds[i], F_DUPFD_CLOEXEC, 0);
      if (fd < 0 || (d = fdopendir (fd)) == NULL)
        {
          if (fd >= 0)
            close (fd);
          continue;
        }
      while ((e = readdir (d)) != NULL)
        {
          char key[KEY_MAX];
          struct lease_holder *h;
          uint32_t addr;
          bool keep;
          if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
            continue;
          if (fds[i] == f->h)
            {
              /* Half-written files; files of an earlier boot passed over.  */
              keep = e->d_name[0] != '.' && loaded_with_key (s, e->d_name) != NULL;
              if (! keep)
                unlinkat (fd, e->d_name, 0);
              continue;
            }
          if (entry_read (fd, e->d_name, key, NULL) < 0)
            continue;
          h = e->d_name[0] == '.' ? NULL : loaded_with_key (s, key);
          if (fds[i] == f->a)
            keep = h && ipv4_parse (e->d_name, &addr) == 0 && lists_addr (h, addr, NULL);
          else
            keep = h && lease_holder_has (h, e->d_name);
          if (! keep)
            unlinkat (fd, e->d_name, 0);
        }
    }
}

static int
commit_blocks (struct lease_store *s, roce_error_t *err)
{
  cleanup_free char *text = blocks_format (s);

  if ((text == NULL && s->blocks_stored == NULL)
      || (text && s->blocks_stored && strcmp (text, s->blocks_stored) == 0))
    return 0;
  if (text)
    {
      if (write_beside (s->dir_fd, s->dir, LEASE_BLOCKS, text, err) < 0)
        return -1;
    }
  else if (unlinkat (s->dir_fd, LEASE_BLOCKS, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/%s`", s->dir, LEASE_BLOCKS);
  free (s->blocks_stored);
  s->blocks_stored = steal_pointer (&text);
  return 0;
}

static void
close_fds (struct store_fds *f)
{
  cleanup_closep (&f->h);
  cleanup_closep (&f->a);
  cleanup_closep (&f->c);
}

int
lease_store_commit (struct lease_store *s, roce_error_t *err)
{
  struct store_fds f __attribute__ ((cleanup (close_fds))) = { -1, -1, -1 };
  cleanup_free char **texts = NULL;
  char key[KEY_MAX], a[IPV4_STR_MAX];
  int ret = -1;

  if (s->lock_fd < 0)
    return roce_error_make (err, EINVAL, "internal error: commit of an unlocked lease store");
  if (commit_blocks (s, err) < 0)
    return -1;
  if ((f.h = subdir (s, LEASE_HOLDERS, true, err)) < 0 || (f.a = subdir (s, LEASE_ADDRS, true, err)) < 0
      || (f.c = subdir (s, LEASE_CONTAINERS, true, err)) < 0)
    return -1;
  /* What changed: the holders whose text differs from their file's.  */
  texts = xmalloc0 ((s->n + 1) * sizeof (*texts));
  for (size_t i = 0; i < s->n; i++)
    {
      texts[i] = holder_format (s->h[i]);
      if (s->h[i]->stored && strcmp (texts[i], s->h[i]->stored) == 0)
        {
          free (texts[i]);
          texts[i] = NULL;
        }
    }
  /* Written beside first; nothing of it is in place yet.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        cleanup_free char *tmp = NULL;
        cleanup_close int fd = -1;
        holder_key (&s->h[i]->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        fd = openat (f.h, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write_all_fd (fd, texts[i], strlen (texts[i]), NULL) < 0)
          {
            roce_error_sys (err, errno ? errno : EIO, "write `%s/%s/%s`", s->dir, LEASE_HOLDERS, tmp);
            goto out;
          }
      }
  roce_crash_point ("store-write");
  /* The index entries before the holders that list them.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        const struct lease_holder *h = s->h[i];
        cleanup_free char *tmp = NULL;
        holder_key (&h->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        for (size_t k = 0; k < h->n_addrs; k++)
          if (entry_point (f.a, LEASE_ADDRS, ipv4_format (h->addrs[k].addr, a), key, f.h, tmp, err) < 0)
            goto out;
        for (char **c = h->containers; c && *c; c++)
          if (container_indexable (*c) && entry_point (f.c, LEASE_CONTAINERS, *c, key, f.h, tmp, err) < 0)
            goto out;
        for (size_t k = 0; k < h->n_addrs; k++)
          if (bits_mark (s, h->addrs[k].addr, true, err) < 0)
            goto out;
      }
  roce_crash_point ("store-index");
  /* Not fsynced (it cost 0.7-2.2 ms on every start and stop here): only a
   * power loss can tear a file, and after one no namespace of the store is
   * alive; the holders are named by boot, and a start never reads one of
   * an earlier boot but to take over its address.  The blocks a cluster
   * node holds are adopted back from etcd.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        cleanup_free char *tmp = NULL;
        holder_key (&s->h[i]->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        if (renameat (f.h, tmp, f.h, key) < 0)
          {
            roce_error_sys (err, errno, "rename `%s/%s/%s`", s->dir, LEASE_HOLDERS, tmp);
            goto out;
          }
      }
  /* Then what went: the holders' files, and the entries after them.  */
  for (size_t i = 0; i < s->n_gone; i++)
    {
      holder_key (&s->gone[i]->ns, key, sizeof (key));
      if (loaded_with_key (s, key) == NULL && unlinkat (f.h, key, 0) < 0 && errno != ENOENT)
        {
          roce_error_sys (err, errno, "remove `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
          goto out;
        }
      drop_old_entries (s, &f, s->gone[i]->stored, loaded_with_key (s, key), key);
    }
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        if (s->h[i]->stored)
          {
            holder_key (&s->h[i]->ns, key, sizeof (key));
            drop_old_entries (s, &f, s->h[i]->stored, s->h[i], key);
          }
        free (s->h[i]->stored);
        s->h[i]->stored = steal_pointer (&texts[i]);
      }
  for (size_t i = 0; i < s->n_gone; i++)
    holder_free (s->gone[i]);
  s->n_gone = 0;
  if (s->all)
    {
      repair (s, &f);
      repair_bits (s);
    }
  mark_boot (s);
  ret = 0;
out:
  for (size_t i = 0; i < s->n; i++)
    free (texts[i]);
  return ret;
}

/* ---- opening ------------------------------------------------------------------------- */

static int
load_blocks (struct lease_store *s, roce_error_t *err)
{
  cleanup_close int fd = openat (s->dir_fd, LEASE_BLOCKS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;

  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_BLOCKS);
  if (read_all_fd (fd, LEASE_FILE_MAX, &buf, NULL, err) < 0 || json_parse (buf, &root, err) < 0
      || parse_blocks (root, s, err) < 0)
    {
      cleanup_free char *what = xasprintf ("lease store `%s/%s`", s->dir, LEASE_BLOCKS);
      cleanup_free char *found = xstrdup ((*err)->msg);
      cleanup_free char *fix = xasprintf ("inspect it; the blocks are etcd's to say: move it aside "
                                          "(mv %s/%s %s/%s.bad) and the node adopts its blocks back",
                                          s->dir, LEASE_BLOCKS, s->dir, LEASE_BLOCKS);
      roce_error_release (err);
      return roce_error_refuse (err, what, "a store this version reads", found, fix);
    }
  /* A commit compares its text with this one (the same format).  */
  s->blocks_stored = blocks_format (s);
  return 0;
}

/* An earlier version's leases.json: read, written out as the layout, then
 * removed (the layout is complete before it goes: a writer killed half-way
 * migrates again).  */
static int
migrate (struct lease_store *s, roce_error_t *err)
{
  if (faccessat (s->dir_fd, LEASE_FILE, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
    return 0;
  holders_clear (s);
  if (legacy_load (s, err) < 0)
    return -1;
  s->all = true;
  if (lease_store_commit (s, err) < 0)
    return roce_error_wrap (err, "moving `%s/%s` to the store's directories", s->dir, LEASE_FILE);
  if (unlinkat (s->dir_fd, LEASE_FILE, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/%s`", s->dir, LEASE_FILE);
  unlinkat (s->dir_fd, LEASE_FILE_NEW, 0);
  roce_log (ROCE_LOG_INFO, "lease store `%s`: %zu holder(s) moved from %s", s->dir, s->n, LEASE_FILE);
  return 0;
}

int
lease_store_open (const char *dir, struct lease_store **out, roce_error_t *err)
{
  return lease_store_open_wait (dir, LEASE_LOCK_WAIT_MS, out, err);
}

int
lease_store_open_wait (const char *dir, unsigned timeout_ms, struct lease_store **out,
                       roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = store_new (dir);

  if (mkdir_p (dir, "state_dir", err) < 0)
    return -1;
  s->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dir_fd < 0)
    return roce_error_sys (err, errno, "open state_dir `%s`", dir);
  if (check_trusted (s->dir_fd, dir, "state_dir", err) < 0)
    return -1;
  s->lock_fd = openat (s->dir_fd, LEASE_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (s->lock_fd < 0)
    return roce_error_sys (err, errno, "open `%s/%s`", dir, LEASE_LOCK);
  if (lock_within (s, timeout_ms, err) < 0)
    return -1;
  if (migrate (s, err) < 0)
    return -1;
  if (s->blocks_stored == NULL && s->n_blocks == 0 && load_blocks (s, err) < 0)
    return -1;
  *out = steal_pointer (&s);
  return 0;
}

int
lease_store_snapshot (const char *dir, struct lease_store **out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = store_new (dir);

  s->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dir_fd < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "open state_dir `%s`", dir);
  if (s->dir_fd >= 0 && check_trusted (s->dir_fd, dir, "state_dir", err) < 0)
    return -1;
  if (s->dir_fd >= 0)
    {
      /* Not migrated yet (no writer since the upgrade): the old file is the
       * whole truth.  */
      if (faccessat (s->dir_fd, LEASE_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        {
          if (legacy_load (s, err) < 0)
            return -1;
        }
      else if (load_blocks (s, err) < 0 || lease_store_load_all (s, err) < 0)
        return -1;
    }
  s->all = true;
  *out = steal_pointer (&s);
  return 0;
}

void
lease_store_free (struct lease_store *s)
{
  if (s == NULL)
    return;
  holders_clear (s);
  free (s->h);
  free (s->blocks);
  for (size_t i = 0; i < s->n_gone; i++)
    holder_free (s->gone[i]);
  free (s->gone);
  for (size_t i = 0; i < s->n_bits; i++)
    cleanup_closep (&s->bits[i].fd);
  free (s->bits);
  free (s->blocks_stored);
  cleanup_closep (&s->lock_fd); /* releases the flock */
  cleanup_closep (&s->dir_fd);
  free (s->dir);
  free (s);
}

void
cleanup_lease_storep (struct lease_store **s)
{
  lease_store_free (*s);
  *s = NULL;
}
