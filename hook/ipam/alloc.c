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
cmp_addr (const void *a, const void *b)
{
  return addr_cmp (a, b);
}

/* The lowest address of net's pool that no holder has: 1 and *out, 0 when
 * none is, < 0 an error.  The loaded holders' addresses, sorted, and the
 * bits of the others, read as the walk reaches them (it ends at the first
 * free address: a /64 pool is never walked).  */
static int
lowest_free (struct lease_store *s, const struct policy_net *net, struct roce_addr *out,
             roce_error_t *err)
{
  cleanup_free struct roce_addr *used = NULL;
  size_t n = 0, u = 0;
  struct roce_addr cand = net->pool_first;

  for (size_t i = 0; i < s->n; i++)
    n += s->h[i]->n_addrs;
  used = xmalloc0 ((n + 1) * sizeof (*used));
  n = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        const struct roce_addr *a = &s->h[i]->addrs[k].addr;
        if (addr_cmp (a, &net->pool_first) >= 0 && addr_cmp (a, &net->pool_last) <= 0)
          used[n++] = *a;
      }
  qsort (used, n, sizeof (*used), cmp_addr);
  for (;;)
    {
      bool taken;
      if ((addr_eq (&cand, &net->pool_first) || (cand.v & 0xffff) == 0)
          && lease_store_index (s, &cand, &cand, err) < 0)
        return -1;
      while (u < n && addr_cmp (&used[u], &cand) < 0)
        u++;
      taken = u < n && addr_eq (&used[u], &cand);
      if (! taken)
        taken = lease_unloaded_has (s, &cand);
      if (! taken)
        {
          *out = cand;
          return 1;
        }
      if (addr_eq (&cand, &net->pool_last))
        return 0;
      cand = addr_add (&cand, 1);
    }
}

static void
log_release (const struct lease_holder *h, const char *why)
{
  char a[ADDR_STR_MAX], ns[48];
  for (size_t i = 0; i < h->n_addrs; i++)
    roce_log (ROCE_LOG_INFO, "released %s (%s) of %s in %s: %s", addr_format (&h->addrs[i].addr, a),
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
holder_push_addr (struct lease_holder *h, const struct policy_hca *hca,
                  const struct roce_addr *addr, const char *ifname)
{
  h->addrs = xrealloc (h->addrs, (h->n_addrs + 1) * sizeof (*h->addrs));
  h->addrs[h->n_addrs++] = (struct lease_addr){ .hca = xstrdup (hca->name),
                                                .addr = *addr,
                                                .ifname = xstrdup (ifname) };
}

int
alloc_assign (struct lease_store *s, struct lease_holder *h, const struct policy_hca *hca,
              const struct policy_net *net, const char *ifname, const struct roce_addr *want,
              alloc_alive_fn alive, void *arg, struct roce_addr *out, roce_error_t *err)
{
  char a[ADDR_STR_MAX];
  struct roce_addr addr;
  int r;

  if (want)
    {
      const struct lease_addr *la = NULL;
      struct lease_holder *other = NULL;
      if (lease_find_addr (s, want, &other, &la, err) < 0)
        return -1;
      if (other == h)
        return roce_error_make (err, EINVAL, "internal error: %s assigned twice",
                                addr_format (want, a));
      if (other && alive (other, arg))
        {
          char since[32];
          cleanup_free char *users = lease_holder_users (other, false);
          cleanup_free char *pool = policy_net_pool_text (net);
          cleanup_free char *what
              = xasprintf ("address %s of %s", addr_format (want, a), hca->name);
          cleanup_free char *found
              = xasprintf ("held by container %s since %s", users,
                           lease_time_format (other->since, since, sizeof (since)));
          cleanup_free char *fix = xasprintf ("pick another address in %s, or omit roce.io/ip to "
                                              "get a free one",
                                              pool);
          return roce_error_refuse (err, what, "an address no running container holds", found, fix);
        }
      if (other)
        {
          log_release (other, "its network namespace is gone (address asked for again)");
          lease_holder_drop (s, other);
        }
      addr = *want;
    }
  else
    {
      r = lowest_free (s, net, &addr, err);
      if (r == 0 && alloc_reclaim (s, h, alive, arg) > 0)
        r = lowest_free (s, net, &addr, err);
      if (r < 0)
        return -1;
      if (r == 0)
        {
          char size[U128_STR_MAX];
          cleanup_free char *pool = policy_net_pool_text (net);
          cleanup_free char *what = xasprintf ("address pool of %s", hca->name);
          cleanup_free char *exp = xasprintf ("a free address in %s", pool);
          cleanup_free char *found = xasprintf (
              "all %s held", u128_format (addr_diff (&net->pool_last, &net->pool_first) + 1, size));
          cleanup_free char *fix
              = xasprintf ("stop a container that holds one (roce-hook leases lists "
                           "them), or widen hcas.%s.pool%s in the node policy",
                           hca->name, net != &hca->net[0] ? "6" : "");
          return roce_error_refuse (err, what, exp, found, fix);
        }
    }
  holder_push_addr (h, hca, &addr, ifname);
  *out = addr;
  return 0;
}
