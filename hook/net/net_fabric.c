/* SPDX-License-Identifier: Apache-2.0 */
/* The fabric steps of a start (policy `fabric`): devconf, per-rail tables,
 * the RoCE v2 GIDs' room and wait (the MAC is chosen with the address,
 * ipam_take; the GIDs found are recorded through ipam_record_gids).  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_link.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "net/gid.h"
#include "net/net.h"
#include "sys/arp.h"
#include "sys/confine.h"
#include "sys/netlink.h"
#include "sys/netns.h"
#include "sys/sysfs.h"

#include "net_int.h"

/* ---- the fabric steps: devconf, per-rail table, GIDs ---------------------------- */

/* Whether another selected rail shares one of rail i's subnets.  */
static bool
shares_subnet (const struct roce_request *req, size_t i)
{
  const struct policy_hca *h = req->sel[i].hca;
  for (size_t k = 0; k < req->n; k++)
    for (size_t x = 0; k != i && x < h->n_nets; x++)
      for (size_t y = 0; y < req->sel[k].hca->n_nets; y++)
        if (cidr_eq (&req->sel[k].hca->net[y].subnet, &h->net[x].subnet))
          return true;
  return false;
}

static int
devconf_value (int policy, int shared_default, bool shared)
{
  if (policy != FABRIC_AUTO)
    return policy;
  return shared ? shared_default : -1;
}

/* What each rail gets besides its link: its table and its devconf.  */
void
plan_fabric (const struct net_run *r, struct plan *pl)
{
  const struct policy_fabric *f = &r->p->fabric;
  for (size_t i = 0; i < pl->n; i++)
    {
      struct plan_item *it = &pl->items[i];
      bool shared = shares_subnet (r->req, i);
      it->table = f->route_table ? f->route_table + (unsigned) i : 0;
      it->devconf = (struct netlink_devconf){
        .arp_notify = f->arp_notify == FABRIC_AUTO ? 1 : f->arp_notify,
        .arp_ignore = devconf_value (f->arp_ignore, 1, shared),
        .arp_announce = devconf_value (f->arp_announce, 2, shared),
        .rp_filter = devconf_value (f->rp_filter, 2, shared),
      };
    }
}

/* A GID finding, of the QoS gate's kind: refuses under fabric.gid_check
 * enforce, is logged under warn.  */
static int
gid_finding (const struct net_run *r, const char *what, const char *expected, const char *found,
             const char *fix, roce_error_t *err)
{
  if (r->p->fabric.gid_check == QOS_MODE_ENFORCE)
    {
      roce_log (ROCE_LOG_ERR, "gid check (enforce): %s: %s vs %s (fix: %s)", what, expected, found,
                fix);
      return roce_error_refuse (err, what, expected, found, fix);
    }
  roce_log (ROCE_LOG_WARN, "gid check (warn): %s: %s vs %s (fix: %s)", what, expected, found, fix);
  return 0;
}

/* Before any link: each rail's port must have room for the entries its
 * addresses add (v1 and v2 of each: a dual-stack rail's two, and two more
 * for an IPv6 link-local).  */
int
gid_room (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  const struct roce_policy *p = r->p;

  for (size_t i = 0; i < pl->n; i++)
    {
      struct plan_item *it = &pl->items[i];
      unsigned need = gid_entries_per_container (it->n_a, p->fabric.ipv6_link_local);
      const char *hca = it->sel->hca->name;
      cleanup_error roce_error_t lerr = NULL;
      struct gid_port_use *use = NULL;
      const struct gid_port_use *port;
      size_t n = 0;
      int ret = 0;

      if (p->fabric.gid_check == QOS_MODE_OFF)
        return 0;
      if (gid_table_use (p->sysfs_root, hca, &use, &n, &lerr) < 0 || n == 0)
        {
          cleanup_free char *what = xasprintf ("RoCE GID table of %s", hca);
          cleanup_free char *found = xasprintf ("unreadable: %s", lerr ? lerr->msg : "no ports");
          cleanup_free char *fix = xasprintf ("check that %s is a RoCE HCA (ports/<p>/gids under "
                                              "%s/class/infiniband/%s)",
                                              hca, p->sysfs_root, hca);
          if (gid_finding (r, what, "a table to hold the container's GID", found, fix, err) < 0)
            return -1;
          continue;
        }
      port = gid_port_of (use, n, it->parent);
      if (port->size < port->used + need)
        {
          cleanup_free char *what = xasprintf ("RoCE GID table of %s port %u", hca, port->port);
          cleanup_free char *exp
              = xasprintf ("%u free entries (v1 and v2 of the container's address%s%s)", need,
                           it->n_a > 1 ? "es" : "",
                           p->fabric.ipv6_link_local ? " and of its IPv6 link-local" : "");
          cleanup_free char *found = xasprintf ("%u of %u used", port->used, port->size);
          cleanup_free char *fix
              = xasprintf ("stop containers on %s (every address takes 2 entries), or keep "
                           "fabric.ipv6_link_local false in %s; `roce-hook check` shows the table",
                           hca, p->path);
          ret = gid_finding (r, what, exp, found, fix, err);
        }
      else
        for (size_t k = 0; k < it->n_a; k++)
          it->a[k].gid_wanted = true;
      gid_port_use_free (use, n);
      if (ret < 0)
        return -1;
    }
  return 0;
}

/* After the links: the RoCE v2 GID of each rail's addresses (an IPv4
 * address's mapped, an IPv6 address's itself), polled in sysfs as the
 * kernel adds it (roce_gid_mgmt.c, on the address event), bounded by
 * gid_wait_ms for all rails together.  */
int
gids_wait (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  const struct roce_policy *p = r->p;
  struct timespec t0, now;
  size_t pending = 0;

  for (size_t i = 0; i < pl->n; i++)
    for (size_t k = 0; k < pl->items[i].n_a; k++)
      pending += pl->items[i].a[k].gid_wanted;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  for (;;)
    {
      int64_t ms;
      for (size_t i = 0; i < pl->n; i++)
        for (size_t k = 0; k < pl->items[i].n_a; k++)
          {
            struct plan_item *it = &pl->items[i];
            struct plan_addr *pa = &it->a[k];
            cleanup_error roce_error_t lerr = NULL;
            if (! pa->gid_wanted || pa->has_gid)
              continue;
            if (gid_find (p->sysfs_root, it->sel->hca->name, &pa->addr, it->ifname, &pa->gid_port,
                          &pa->gid_index, &lerr)
                > 0)
              {
                pa->has_gid = true;
                pending--;
              }
          }
      clock_gettime (CLOCK_MONOTONIC, &now);
      ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
      if (pending == 0 || ms >= p->fabric.gid_wait_ms)
        break;
      {
        struct timespec nap = { .tv_nsec = 5 * 1000000 };
        nanosleep (&nap, NULL);
      }
    }
  for (size_t i = 0; i < pl->n; i++)
    for (size_t k = 0; k < pl->items[i].n_a; k++)
      {
        const struct plan_item *it = &pl->items[i];
        const struct plan_addr *pa = &it->a[k];
        char a[ADDR_STR_MAX], g[GID_STR_MAX];
        if (! pa->gid_wanted)
          continue;
        if (pa->has_gid)
          {
            roce_log (ROCE_LOG_INFO, "gid: %s %s is RoCE v2 GID index %u of %s port %u", it->ifname,
                      addr_format (&pa->addr, a), pa->gid_index, it->sel->hca->name, pa->gid_port);
            continue;
          }
        {
          cleanup_free char *what
              = xasprintf ("RoCE v2 GID of %s (%s) on %s", addr_format (&pa->addr, a), it->ifname,
                           it->sel->hca->name);
          cleanup_free char *exp
              = xasprintf ("an entry %s on %s within %u ms", gid_of_addr (&pa->addr, g), it->ifname,
                           p->fabric.gid_wait_ms);
          cleanup_free char *fix = xasprintf (
              "check that %s is the RoCE netdev of %s (hcas.%s.netdev) and that RoCE v2 is "
              "enabled, or raise fabric.gid_wait_ms in %s",
              it->parent, it->sel->hca->name, it->sel->hca->name, p->path);
          if (gid_finding (r, what, exp, "none", fix, err) < 0)
            return -1;
        }
      }
  return 0;
}

void
rails_fill (struct net_state *n, const struct plan *pl)
{
  size_t total = 0, j = 0;
  for (size_t i = 0; i < pl->n; i++)
    total += pl->items[i].n_a;
  n->rails = xmalloc0 ((total + 1) * sizeof (*n->rails));
  for (size_t i = 0; i < pl->n; i++)
    {
      const struct plan_item *it = &pl->items[i];
      strv_push (&n->rail_netdevs, it->parent);
      for (size_t k = 0; k < it->n_a; k++, j++)
        {
          n->rails[j] = (struct net_rail){ .hca = it->sel->hca->name,
                                           .addr = it->a[k].addr,
                                           .prefix = it->a[k].net->subnet.prefix,
                                           .has_gid = it->a[k].has_gid,
                                           .gid_port = it->a[k].gid_port,
                                           .gid_index = it->a[k].gid_index,
                                           .gpus = it->sel->gpus };
          memcpy (n->rails[j].ifname, it->ifname, IFNAME_SIZE);
          n->rails[j].netdev = n->rail_netdevs[i];
        }
    }
  n->n_rails = total;
}
