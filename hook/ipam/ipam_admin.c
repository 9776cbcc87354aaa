/* SPDX-License-Identifier: Apache-2.0 */
/* The store seen by an operator: the leases listed (`roce-hook leases`) and
 * those of gone namespaces released (`roce-hook gc`).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ipam/blocks/blocks.h"
#include "ipam/ipam.h"
#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/netlink.h"
#include "sys/netns.h"

int
ipam_list (const struct roce_policy *p, bool json, FILE *out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  char a[IPV4_STR_MAX], since[32], ns[48];

  if (lease_store_snapshot (p->state_dir, &s, err) < 0)
    return -1;
  if (json)
    {
      cleanup_json_gen struct json_gen *g = json_gen_new (true);
      json_gen_map_open (g);
      json_gen_string (g, "leases");
      json_gen_array_open (g);
      for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->h[i]->n_addrs; k++)
          {
            const struct lease_holder *h = s->h[i];
            json_gen_map_open (g);
            json_gen_kv_string (g, "hca", h->addrs[k].hca);
            json_gen_kv_string (g, "address", ipv4_format (h->addrs[k].addr, a));
            json_gen_kv_string (g, "ifname", h->addrs[k].ifname);
            json_gen_string (g, "gid_index");
            if (h->addrs[k].has_gid)
              json_gen_integer (g, h->addrs[k].gid_index);
            else
              json_gen_null (g);
            /* roce.io/hca=auto: the container's GPUs this rail serves.  */
            json_gen_string (g, "gpus");
            json_gen_array_open (g);
            for (char **q = h->addrs[k].gpus; q && *q; q++)
              json_gen_string (g, *q);
            json_gen_array_close (g);
            json_gen_kv_string (g, "since", lease_time_format (h->since, since, sizeof (since)));
            json_gen_kv_string (g, "netns", netns_id_format (&h->ns, ns, sizeof (ns)));
            json_gen_kv_string (g, "owner", h->owner);
            /* "releasing": a process releases it once the namespace and
             * its interfaces are gone (its containers have ended: none is
             * listed, or only the one whose foreground run roce-runtime has
             * just ended, until that process commits); "in use"; "stopped":
             * no container left, gc releases it.  */
            json_gen_kv_string (g, "state",
                                lease_reaping (s, h)           ? "releasing"
                                : strv_len (h->containers) > 0 ? "in use"
                                                               : "stopped");
            json_gen_string (g, "containers");
            json_gen_array_open (g);
            for (char **c = h->containers; c && *c; c++)
              json_gen_string (g, *c);
            json_gen_array_close (g);
            json_gen_map_close (g);
          }
      json_gen_array_close (g);
      json_gen_map_close (g);
      return json_gen_print (g, out, err);
    }
  if (s->n == 0)
    {
      fprintf (out, "no leases held (%s)\n", p->state_dir);
      return 0;
    }
  /* GID: the index of the address's RoCE v2 GID on the HCA's port, the one
   * the workload uses (NCCL_IB_GID_INDEX); "-" until the kernel made it.  */
  fprintf (out, "%-10s %-15s %-8s %-4s %-20s %-18s %s\n", "HCA", "ADDRESS", "IFNAME", "GID",
           "SINCE", "NETNS", "CONTAINERS");
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        const struct lease_holder *h = s->h[i];
        cleanup_free char *users = lease_holder_users (h, lease_reaping (s, h));
        char gid[16] = "-";
        if (h->addrs[k].has_gid)
          snprintf (gid, sizeof (gid), "%u", (unsigned) h->addrs[k].gid_index);
        fprintf (out, "%-10s %-15s %-8s %-4s %-20s %-18s %s\n", h->addrs[k].hca,
                 ipv4_format (h->addrs[k].addr, a), h->addrs[k].ifname, gid,
                 lease_time_format (h->since, since, sizeof (since)),
                 netns_id_format (&h->ns, ns, sizeof (ns)), users);
      }
  return 0;
}

/* gc's verdicts, reached without the store's lock: the holders whose
 * namespace is gone (the kernel's word by its id first; a scan, bounded,
 * only for those it cannot tell about) and whose interfaces are down.  */
struct gc_gone
{
  struct netns_id *ns;
  int64_t *since;
  size_t n;
};

static void
gc_gone_find (const struct roce_policy *p, struct nl_sock **host, struct gc_gone *g,
              roce_error_t *err)
{
  cleanup_lease_store struct lease_store *snap = NULL;
  cleanup_netns_live struct netns_live *live = NULL;
  bool scanned = false;

  if (lease_store_snapshot (p->state_dir, &snap, err) < 0)
    return;
  for (size_t i = 0; i < snap->n; i++)
    {
      const struct lease_holder *h = snap->h[i];
      int k = holder_alive_by_nsid (host, h);
      if (k == 1)
        continue;
      if (k < 0)
        {
          if (! scanned)
            {
              cleanup_error roce_error_t serr = NULL;
              scanned = true;
              if (netns_live_scan_within (GC_SCAN_MS, &live, &serr) < 0)
                roce_log (ROCE_LOG_WARN, "%s", serr->msg);
            }
          /* Unsure means alive: a lease is never released on a guess.  */
          if (live == NULL || netns_live_has (live, &h->ns))
            continue;
        }
      /* What the scan does not see the kernel may still have (a socket made
       * in the namespace and held elsewhere: its id and address), and a
       * dead namespace's interfaces go a few ms after it.  */
      if (holder_links_gone (host, h) != 1)
        continue;
      g->ns = xrealloc (g->ns, (g->n + 1) * sizeof (*g->ns));
      g->since = xrealloc (g->since, (g->n + 1) * sizeof (*g->since));
      g->ns[g->n] = h->ns;
      g->since[g->n++] = h->since;
    }
}

static bool
gc_is_gone (const struct gc_gone *g, const struct lease_holder *h)
{
  for (size_t i = 0; i < g->n; i++)
    if (netns_id_equal (&g->ns[i], &h->ns) && g->since[i] == h->since)
      return true;
  return false;
}

static int
leases_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_nl_sock struct nl_sock *host = NULL;
  struct gc_gone gone = { 0 };
  size_t released = 0, held = 0;
  struct stat st;
  int ret = -1;

  if (stat (p->state_dir, &st) < 0 && errno == ENOENT)
    {
      fprintf (out, "gc: released 0 leases, 0 held\n");
      return 0;
    }
  /* Everything slow before the lock: the store's lock is held only to drop
   * what was found gone (a namespace that has gone never comes back: a
   * holder with the same namespace and start is the same one).  */
  gc_gone_find (p, &host, &gone, err);
  if (*err)
    goto out;
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0
      || lease_store_load_all (s, err) < 0)
    goto out;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      char a[IPV4_STR_MAX], since[32], ns[48];
      if (! gc_is_gone (&gone, h))
        {
          held += h->n_addrs;
          continue;
        }
      for (size_t k = 0; k < h->n_addrs; k++)
        {
          cleanup_free char *users = lease_holder_users (h, false);
          fprintf (out, "released %s (%s, %s) of %s, held since %s: %s is gone\n",
                   ipv4_format (h->addrs[k].addr, a), h->addrs[k].hca, h->addrs[k].ifname, users,
                   lease_time_format (h->since, since, sizeof (since)),
                   netns_id_format (&h->ns, ns, sizeof (ns)));
          roce_log (ROCE_LOG_INFO, "gc: released %s (%s) of %s", a, h->addrs[k].hca, h->owner);
        }
      released += h->n_addrs;
      lease_holder_drop (s, h);
    }
  /* Also with nothing released: the commit drops the index entries a
   * killed hook left, and the marks of reapers that were killed go.  */
  lease_reap_sweep (s);
  if (lease_store_commit (s, err) < 0)
    goto out;
  fprintf (out, "gc: released %zu leases, %zu held\n", released, held);
  ret = 0;
out:
  free (gone.ns);
  free (gone.since);
  return ret;
}

int
ipam_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  return leases_gc (p, out, err) < 0 || blocks_gc (p, out, err) < 0 ? -1 : 0;
}
