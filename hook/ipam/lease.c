/* SPDX-License-Identifier: Apache-2.0 */
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
      boot[i]
          = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'
                ? c
                : 'x';
    }
  boot[i] = '\0';
  snprintf (buf, size, "%s_%llu_%llu", boot, (unsigned long long) ns->dev,
            (unsigned long long) ns->ino);
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
lease_holder_add (struct lease_store *s, const struct netns_id *ns, const char *owner,
                  int64_t since)
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
lease_holder_set_link (struct lease_holder *h, const char *hca, int parent_ifindex,
                       const uint8_t mac[6])
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
lease_loaded_with_addr (const struct lease_store *s, uint32_t addr,
                        const struct lease_addr **addr_out)
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
  char ts[UTC_TIME_MAX];
  snprintf (buf, size, "%sZ", utc_time_format (t, ts));
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
lease_reclaim (struct lease_store *s, const struct lease_holder *keep, lease_alive_fn alive,
               void *arg)
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
  h->addrs[h->n_addrs++]
      = (struct lease_addr){ .hca = xstrdup (hca->name), .addr = addr, .ifname = xstrdup (ifname) };
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
          cleanup_free char *what
              = xasprintf ("address %s of %s", ipv4_format (want, a), hca->name);
          cleanup_free char *found
              = xasprintf ("held by container %s since %s", users,
                           lease_time_format (other->since, since, sizeof (since)));
          cleanup_free char *fix
              = xasprintf ("pick another address in %s-%s, or omit roce.io/ip to "
                           "get a free one",
                           ipv4_format (hca->pool_first, a), ipv4_format (hca->pool_last, b));
          return roce_error_refuse (err, what, "an address no running container holds", found, fix);
        }
      if (other)
        {
          log_release (other, "its network namespace is gone (address asked for again)");
          lease_holder_drop (s, other);
        }
      addr = want;
    }
  else if (! lowest_free (s, hca, &addr)
           && (lease_reclaim (s, h, alive, arg) == 0 || ! lowest_free (s, hca, &addr)))
    {
      uint64_t size = (uint64_t) hca->pool_last - hca->pool_first + 1;
      cleanup_free char *what = xasprintf ("address pool of %s", hca->name);
      cleanup_free char *exp
          = xasprintf ("a free address in %s-%s", ipv4_format (hca->pool_first, a),
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
lease_block_add (struct lease_store *s, const struct roce_cidr *subnet, uint32_t first,
                 uint32_t last, int64_t since, const char *value)
{
  struct lease_block *b;
  s->blocks = xrealloc (s->blocks, (s->n_blocks + 1) * sizeof (*s->blocks));
  b = &s->blocks[s->n_blocks++];
  *b = (struct lease_block){
    .subnet = *subnet, .first = first, .last = last, .since = since, .value = xstrdup (value)
  };
  return b;
}

void
lease_block_drop (struct lease_store *s, size_t i)
{
  free (s->blocks[i].value);
  memmove (&s->blocks[i], &s->blocks[i + 1], (s->n_blocks - i - 1) * sizeof (*s->blocks));
  s->n_blocks--;
}
