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

/* How often `leases` reads the store again when a holder changed while it
 * looked at the reapers' marks; then it says what it last read.  */
#define LIST_READS 8

/* The store without its lock, and which holders a live process releases
 * (releasing[i] for s->h[i]), as of one moment: a holder that changed
 * while its mark was looked at (lease_reaping) has the store read again.  */
static int
list_snapshot (const struct roce_policy *p, struct lease_store **out, bool **releasing,
               roce_error_t *err)
{
  for (int tries = 1;; tries++)
    {
      cleanup_lease_store struct lease_store *s = NULL;
      bool stale = false;

      if (lease_store_snapshot (p->state_dir, &s, err) < 0)
        return -1;
      /* Tests: the store is read, its marks not yet looked at.  */
      roce_pause_point ("leases-read");
      free (*releasing);
      *releasing = xmalloc0 ((s->n ? s->n : 1) * sizeof (**releasing));
      for (size_t i = 0; i < s->n; i++)
        {
          int r = lease_reaping (s, s->h[i]);
          stale |= r < 0;
          /* Changed at every read: a holder whose release just ended (its
           * mark gone) is said to be releasing, never left to gc.  */
          (*releasing)[i] = r == 1 || (r < 0 && tries == LIST_READS);
        }
      if (! stale || tries == LIST_READS)
        {
          *out = steal_pointer (&s);
          return 0;
        }
    }
}

int
ipam_list (const struct roce_policy *p, bool json, FILE *out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_free bool *releasing = NULL;
  char a[ADDR_STR_MAX], since[32], ns[48];
  int width = 15;

  if (list_snapshot (p, &s, &releasing, err) < 0)
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
            json_gen_kv_string (g, "address", addr_format (&h->addrs[k].addr, a));
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
                                releasing[i]                   ? "releasing"
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
  /* ADDRESS as wide as the widest held (an IPv6 one is up to 39).  */
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        size_t len = strlen (addr_format (&s->h[i]->addrs[k].addr, a));
        width = len > (size_t) width ? (int) len : width;
      }
  fprintf (out, "%-10s %-*s %-8s %-4s %-20s %-18s %s\n", "HCA", width, "ADDRESS", "IFNAME", "GID",
           "SINCE", "NETNS", "CONTAINERS");
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        const struct lease_holder *h = s->h[i];
        cleanup_free char *users = lease_holder_users (h, releasing[i]);
        char gid[16] = "-";
        if (h->addrs[k].has_gid)
          snprintf (gid, sizeof (gid), "%u", (unsigned) h->addrs[k].gid_index);
        roce_print (out, "%-10s %-*s %-8s %-4s %-20s %-18s %s", h->addrs[k].hca, width,
                    addr_format (&h->addrs[k].addr, a), h->addrs[k].ifname, gid,
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
  struct gone_one
  {
    struct netns_id ns;
    int64_t since;
  } * v;
  size_t n;
};

static int
cmp_gone (const void *a, const void *b)
{
  const struct gone_one *x = a, *y = b;
  if (x->ns.ino != y->ns.ino)
    return x->ns.ino < y->ns.ino ? -1 : 1;
  if (x->ns.dev != y->ns.dev)
    return x->ns.dev < y->ns.dev ? -1 : 1;
  if (x->since != y->since)
    return x->since < y->since ? -1 : 1;
  return strcmp (x->ns.boot_id, y->ns.boot_id);
}

static void
gc_gone_find (struct lease_store *snap, struct nl_sock **host, struct gc_gone *g)
{
  cleanup_netns_live struct netns_live *live = NULL;
  struct alive_view v = { .host = host };
  bool scanned = false;

  g->v = xmalloc0 ((snap->n + 1) * sizeof (*g->v));
  /* The kernel's ids and lists asked once (after the holders were read),
   * not once a holder: a stale holder costs a lookup.  */
  for (size_t i = 0; i < snap->n; i++)
    {
      const struct lease_holder *h = snap->h[i];
      int k = view_alive_by_nsid (&v, h);
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
      if (view_links_gone (&v, h) != 1)
        continue;
      g->v[g->n++] = (struct gone_one){ .ns = h->ns, .since = h->since };
    }
  view_clear (&v);
  qsort (g->v, g->n, sizeof (*g->v), cmp_gone);
}

/* The same namespace (boot, device, inode; netns_id_equal) and start.  */
static bool
gc_is_gone (const struct gc_gone *g, const struct lease_holder *h)
{
  struct gone_one k = { .ns = h->ns, .since = h->since };
  const struct gone_one *f = bsearch (&k, g->v, g->n, sizeof (*g->v), cmp_gone);
  return f && netns_id_equal (&f->ns, &h->ns);
}

static int
leases_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_lease_store struct lease_store *snap = NULL;
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
  if (lease_store_snapshot (p->state_dir, &snap, err) < 0)
    goto out;
  gc_gone_find (snap, &host, &gone);
  /* Under the lock each holder is read again only when its file changed
   * since the snapshot: a node's thousands of holders are read once.  */
  if (lease_store_open_held (p->state_dir, p->lock_timeout_ms, &s, err) < 0
      && roce_error_status (err) == ENOENT)
    {
      /* Removed since the snapshot, with what it held.  */
      roce_error_release (err);
      fprintf (out, "gc: released 0 leases, 0 held\n");
      ret = 0;
      goto out;
    }
  if (s == NULL || lease_store_load_all_from (s, snap, err) < 0)
    goto out;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      char a[ADDR_STR_MAX], since[32], ns[48];
      if (! gc_is_gone (&gone, h))
        {
          held += h->n_addrs;
          continue;
        }
      for (size_t k = 0; k < h->n_addrs; k++)
        {
          cleanup_free char *users = lease_holder_users (h, false);
          roce_print (out, "released %s (%s, %s) of %s, held since %s: %s is gone",
                      addr_format (&h->addrs[k].addr, a), h->addrs[k].hca, h->addrs[k].ifname,
                      users, lease_time_format (h->since, since, sizeof (since)),
                      netns_id_format (&h->ns, ns, sizeof (ns)));
          roce_log (ROCE_LOG_INFO, "gc: released %s (%s) of %s", a, h->addrs[k].hca, h->owner);
        }
      released += h->n_addrs;
      lease_holder_drop_at (s, i - 1);
    }
  /* Also with nothing released: the commit drops the index entries a
   * killed hook left, and the marks of reapers that were killed go.  */
  lease_reap_sweep (s);
  if (lease_store_commit (s, err) < 0)
    goto out;
  fprintf (out, "gc: released %zu leases, %zu held\n", released, held);
  ret = 0;
out:
  free (gone.v);
  return ret;
}

int
ipam_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  return leases_gc (p, out, err) < 0 || blocks_gc (p, out, err) < 0 ? -1 : 0;
}

int
ipam_held (const struct roce_policy *p, const struct netns_id *ns, size_t n, char **out,
           roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  struct stat st;

  for (size_t i = 0; i < n; i++)
    out[i] = NULL;
  if (n == 0 || (stat (p->state_dir, &st) < 0 && errno == ENOENT))
    return 0; /* no store, no leases */
  if (lease_store_snapshot (p->state_dir, &s, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      const struct lease_holder *h = lease_find_netns (s, &ns[i]);
      char a[ADDR_STR_MAX];
      if (h == NULL)
        continue;
      out[i] = xstrdup ("");
      for (size_t k = 0; k < h->n_addrs; k++)
        str_list_add (&out[i], ", ", "%s (%s)", addr_format (&h->addrs[k].addr, a),
                      h->addrs[k].hca);
    }
  return 0;
}
