/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator (alloc.h): the lowest free address of a pool, or the one
 * asked for, and the holders of gone namespaces dropped to make room.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipam/alloc.h"
#include "ipam/lease.h"
#include "lib/log.h"
#include "lib/utils.h"

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
      if (! taken)
        taken = lease_unloaded_has (s, (uint32_t) cand);
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

size_t
alloc_reclaim (struct lease_store *s, const struct lease_holder *keep, alloc_alive_fn alive,
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
alloc_assign (struct lease_store *s, struct lease_holder *h, const struct policy_hca *hca,
              const char *ifname, bool has_want, uint32_t want, alloc_alive_fn alive, void *arg,
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
           && (alloc_reclaim (s, h, alive, arg) == 0 || ! lowest_free (s, hca, &addr)))
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
