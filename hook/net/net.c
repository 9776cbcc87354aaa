/* SPDX-License-Identifier: Apache-2.0 */
/* The container's network, made: the plan checked before the host is touched,
 * the leases taken, the macvlan links set up in the container's namespace
 * (and undone on failure).  */
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
#include "lib/mac.h"
#include "lib/utils.h"
#include "net/gid.h"
#include "net/net.h"
#include "net/uplink.h"
#include "probe/pmtu.h"
#include "sys/arp.h"
#include "sys/confine.h"
#include "sys/ndisc.h"
#include "sys/netlink.h"
#include "sys/netns.h"
#include "sys/sysfs.h"

#include "net_int.h"

static void links_undo (struct net_state *n);

const struct net_rail *
net_state_rails (const struct net_state *n, size_t *count)
{
  *count = n ? n->n_rails : 0;
  return n ? n->rails : NULL;
}

void
net_state_free (struct net_state *n)
{
  if (n == NULL)
    return;
  netlink_close (n->csock);
  free (n->links);
  free (n->rules);
  free (n->rails);
  strv_free (n->rail_netdevs);
  free (n);
}

bool
net_state_made (const struct net_state *n)
{
  return n && n->hold == IPAM_MADE;
}

bool
net_state_netns (const struct net_state *n, struct netns_id *out)
{
  if (n == NULL || n->hold == IPAM_NONE)
    return false;
  *out = n->ns;
  return true;
}

static void
plan_clear (struct plan *pl)
{
  for (size_t i = 0; i < pl->n; i++)
    free (pl->items[i].parent);
  free (pl->items);
}

static int
plan_make (const struct net_run *r, struct nl_sock *host, struct plan *pl, roce_error_t *err)
{
  const struct roce_policy *p = r->p;

  pl->items = xmalloc0 ((r->req->n + 1) * sizeof (*pl->items));
  for (size_t i = 0; i < r->req->n; i++)
    {
      struct plan_item *it = &pl->items[pl->n++];
      cleanup_error roce_error_t lerr = NULL;
      it->sel = &r->req->sel[i];
      it->n_a = it->sel->hca->n_nets;
      for (size_t k = 0; k < it->n_a; k++)
        it->a[k].net = &it->sel->hca->net[k];
      if (check_snprintf (it->ifname, sizeof (it->ifname), err, "%s%zu", p->ifname_prefix, i) < 0)
        return -1;
      /* Found once for the gate and this step (uplink.h), else here.  */
      const struct roce_uplink *u
          = r->c->uplinks && i < r->c->uplinks->n ? &r->c->uplinks->v[i] : NULL;
      if (u && u->netdev == NULL)
        return uplink_error (u, err);
      if (u)
        {
          it->parent = xstrdup (u->netdev);
          it->parent_link = u->link;
          if (u->link_err)
            uplink_error (u, &lerr);
        }
      else if (sysfs_hca_netdev (p, it->sel->hca, &it->parent, err) < 0)
        return -1;
      if (u ? lerr != NULL : netlink_link_get (host, it->parent, &it->parent_link, &lerr) < 0)
        {
          cleanup_free char *what
              = xasprintf ("netdev %s of HCA %s", it->parent, it->sel->hca->name);
          cleanup_free char *fix = xasprintf ("check the NIC, or set hcas.%s.netdev in %s",
                                              it->sel->hca->name, p->path);
          if (roce_error_status (&lerr) == ENODEV)
            return roce_error_refuse (err, what, "an interface on the host", "none", fix);
          *err = steal_pointer (&lerr);
          return roce_error_wrap (err, "%s", what);
        }
    }
  return 0;
}

/* ---- the leases (ipam.h) ----------------------------------------------------------- */

/* Takes the leases of the plan's rails, or joins the pod's network: the
 * addresses, MACs and (joined) interfaces and GIDs into the plan.  */
static int
take (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  cleanup_free struct ipam_rail *rails = xmalloc0 ((pl->n + 1) * sizeof (*rails));

  for (size_t i = 0; i < pl->n; i++)
    {
      const struct plan_item *it = &pl->items[i];
      rails[i] = (struct ipam_rail){ .hca = it->sel->hca,
                                     .parent_ifindex = it->parent_link.ifindex,
                                     .gpus = it->sel->gpus };
      for (size_t k = 0; k < it->n_a; k++)
        rails[i].a[k].want = it->sel->ip[k];
      memcpy (rails[i].ifname, it->ifname, IFNAME_SIZE);
    }
  if (ipam_take (r->p, r->c->id, &r->n->ns, pl->nsid, rails, pl->n, r->c->linkage, &r->n->hold, err)
      < 0)
    return -1;
  for (size_t i = 0; i < pl->n; i++)
    {
      struct plan_item *it = &pl->items[i];
      memcpy (it->ifname, rails[i].ifname, IFNAME_SIZE);
      it->has_mac = rails[i].has_mac;
      memcpy (it->mac, rails[i].mac, 6);
      for (size_t k = 0; k < it->n_a; k++)
        {
          it->a[k].addr = rails[i].a[k].addr;
          it->a[k].has_gid = rails[i].a[k].has_gid;
          it->a[k].gid_port = rails[i].a[k].gid_port;
          it->a[k].gid_index = rails[i].a[k].gid_index;
        }
    }
  return 0;
}

static void
links_undo_cb (void *arg)
{
  links_undo (arg);
}

/* Forgets what this container took: its holder when it made one (and the
 * links with it), its membership when it joined.  Logs, never fails.  */
static void
untake (const struct net_run *r)
{
  if (ipam_untake (r->p, r->c->id, &r->n->ns, r->n->hold, links_undo_cb, r->n) == 0)
    r->n->hold = IPAM_NONE;
}

/* The GIDs found go to the leases (so that a container joining the pod's
 * network, and `leases`, see them).  */
static void
gids_record (const struct net_run *r, const struct plan *pl)
{
  cleanup_free struct ipam_rail *rails = xmalloc0 ((pl->n + 1) * sizeof (*rails));
  for (size_t i = 0; i < pl->n; i++)
    {
      const struct plan_item *it = &pl->items[i];
      rails[i] = (struct ipam_rail){ .hca = it->sel->hca };
      for (size_t k = 0; k < it->n_a; k++)
        rails[i].a[k] = (struct ipam_addr){ .addr = it->a[k].addr,
                                            .has_gid = it->a[k].has_gid,
                                            .gid_port = it->a[k].gid_port,
                                            .gid_index = it->a[k].gid_index };
    }
  ipam_record_gids (r->p, &r->n->ns, rails, pl->n);
}

/* ---- the links ----------------------------------------------------------------------- */

/* The per-rail table: the subnet on-link and the policy's routes via the
 * gateway, and the rule that sends the rail's own address there, for one
 * address of the rail (its family's table: IPv4 and IPv6 keep their own).
 * With route_table 0: the policy's routes in the main table (the kernel's
 * subnet route is there either way).  */
static int
rail_routes (const struct net_run *r, const struct plan_item *it, const struct plan_addr *pa,
             int ifindex, roce_error_t *err)
{
  const struct policy_hca *hca = it->sel->hca;
  const struct policy_net *net = pa->net;
  cleanup_error roce_error_t lerr = NULL;
  char a[ADDR_STR_MAX], c[CIDR_STR_MAX];
  int rc;

  if (it->table
      && netlink_route_add_table (r->n->csock, ifindex, &net->subnet, NULL, &pa->addr, it->table,
                                  err)
             < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  for (size_t k = 0; k < net->n_routes; k++)
    {
      rc = it->table
               ? netlink_route_add_table (r->n->csock, ifindex, &net->routes[k], &net->gateway,
                                          NULL, it->table, &lerr)
               : netlink_route_add (r->n->csock, ifindex, &net->routes[k], &net->gateway, &lerr);
      if (rc < 0)
        {
          cleanup_free char *what
              = xasprintf ("route %s via %s in the container", cidr_format (&net->routes[k], c),
                           addr_format (&net->gateway, a));
          if (roce_error_status (&lerr) == EEXIST)
            return roce_error_refuse (err, what, "absent", "already present",
                                      it->table ? "list each destination once in an HCA's routes"
                                                : "list each destination once across the selected "
                                                  "HCAs' routes, or set fabric.route_table");
          *err = steal_pointer (&lerr);
          return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
        }
    }
  if (it->table && netlink_rule_add_from (r->n->csock, &pa->addr, it->table, it->table, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  if (it->table)
    {
      r->n->rules = xrealloc (r->n->rules, (r->n->n_rules + 1) * sizeof (*r->n->rules));
      r->n->rules[r->n->n_rules].addr = pa->addr;
      r->n->rules[r->n->n_rules++].table = it->table;
    }
  return 0;
}

/* The address is probed for on the link before it is ours: RFC 5227 by ARP
 * for IPv4, RFC 4862 by Neighbor Solicitation for IPv6 (ndisc.h).  */
static int
dad_probe (const struct net_run *r, const struct plan_item *it, const struct plan_addr *pa,
           int ifindex, roce_error_t *err)
{
  bool v6 = pa->addr.family == AF_INET6;
  uint8_t who[6];
  char a[ADDR_STR_MAX], m[18];
  int rc;

  rc = v6 ? ndisc_probe (r->c->netns_fd, ifindex, it->mac, &pa->addr, r->p->fabric.dad_probe_ms,
                         who, err)
          : arp_probe (r->c->netns_fd, ifindex, it->mac, (uint32_t) pa->addr.v,
                       r->p->fabric.dad_probe_ms, who, err);
  if (rc < 0)
    return roce_error_wrap (err, "duplicate-address probe of %s", addr_format (&pa->addr, a));
  if (rc > 0)
    {
      cleanup_free char *what = xasprintf ("address %s of %s on %s", addr_format (&pa->addr, a),
                                           it->sel->hca->name, it->parent);
      cleanup_free char *found = xasprintf ("in use by MAC %s", mac_format (who, m));
      cleanup_free char *fix = xasprintf ("find the host with MAC %s and free %s, or give this "
                                          "container another address (roce.io/ip)",
                                          m, a);
      return roce_error_refuse (err, what,
                                v6 ? "no other host on the link answering for it (RFC 4862 "
                                     "probe)"
                                   : "no other host on the link answering for it (RFC 5227 "
                                     "probe)",
                                found, fix);
    }
  return 0;
}

/* The rail's address of family (its MTU probe's source), or NULL.  */
static const struct plan_addr *
addr_of (const struct plan_item *it, int family)
{
  for (size_t k = 0; k < it->n_a; k++)
    if (it->a[k].addr.family == family)
      return &it->a[k];
  return NULL;
}

/* fabric.mtu_probe_ms: full-MTU unfragmented echoes from the container's
 * address to the rail's probe peer or gateway (pmtu.h), in the peer's
 * family (policy_hca_probe_peer).  A hop that cuts the MTU refuses the
 * start under qos.mode enforce; otherwise the result is logged.  */
static int
mtu_probe (const struct net_run *r, const struct plan_item *it, roce_error_t *err)
{
  const struct roce_addr *dst_a = policy_hca_probe_peer (it->sel->hca);
  const struct plan_addr *pa = dst_a ? addr_of (it, dst_a->family) : NULL;
  char a[ADDR_STR_MAX], d[ADDR_STR_MAX];
  cleanup_free char *what = NULL;
  cleanup_free char *found = NULL;
  struct pmtu_result res;

  if (pa == NULL)
    return 0;
  pmtu_probe_in (r->c->netns_fd, it->ifname, &pa->addr, dst_a, it->parent_link.mtu,
                 r->p->fabric.mtu_probe_ms, &res);
  what = xasprintf ("path MTU from %s (%s) to %s", addr_format (&pa->addr, a), it->ifname,
                    addr_format (dst_a, d));
  if (res.outcome == PMTU_OK)
    {
      roce_log (ROCE_LOG_INFO, "%s: MTU %u end to end", what, it->parent_link.mtu);
      return 0;
    }
  if ((found = pmtu_found (&res, dst_a->family, it->parent_link.mtu, d)) == NULL)
    {
      roce_log (ROCE_LOG_WARN, "%s: not proven: %s", what,
                res.outcome == PMTU_NO_ANSWER ? "no answer at any size" : res.detail);
      return 0;
    }
  if (r->p->qos.mode != QOS_MODE_ENFORCE)
    {
      roce_log (ROCE_LOG_WARN, "mtu probe (warn): %s: MTU %u end to end vs %s", what,
                it->parent_link.mtu, found);
      return 0;
    }
  {
    cleanup_free char *exp = xasprintf ("MTU %u end to end", it->parent_link.mtu);
    return roce_error_refuse (err, what, exp, found,
                              "raise the MTU of the hops on the rail (switch ports: MTU + 18), or "
                              "set fabric.mtu_probe_ms to 0");
  }
}

/* `check --probe`: the echoes from the address the rail was given in the
 * peer's family, its verdict for the caller to render (net_probe_rail).  */
static void
probe_from (const struct net_run *r, const struct plan_item *it)
{
  struct net_probe *pr = r->probe;
  const struct plan_addr *pa = addr_of (it, pr->dst.family);

  pr->mtu = it->parent_link.mtu;
  memcpy (pr->ifname, it->ifname, sizeof (pr->ifname));
  if (pa == NULL)
    {
      pr->res.outcome = PMTU_ERROR;
      snprintf (pr->res.detail, sizeof (pr->res.detail), "the rail has no %s address",
                addr_family_name (pr->dst.family));
      return;
    }
  pr->src = pa->addr;
  pmtu_probe_in (r->c->netns_fd, it->ifname, &pa->addr, &pr->dst, it->parent_link.mtu,
                 pr->timeout_ms, &pr->res);
}

static int
link_setup (const struct net_run *r, struct nl_sock *host, struct plan_item *it, roce_error_t *err)
{
  struct net_state *n = r->n;
  const struct policy_fabric *f = &r->p->fabric;
  const struct policy_hca *hca = it->sel->hca;
  cleanup_error roce_error_t lerr = NULL;
  struct netlink_link l;
  struct netlink_macvlan mv = { .parent_ifindex = it->parent_link.ifindex,
                                .name = it->ifname,
                                .mtu = it->parent_link.mtu,
                                .netns_fd = r->c->netns_fd };
  cleanup_free char *addrs = xstrdup ("");
  bool probe = f->dad_probe_ms && it->has_mac;
  char a[ADDR_STR_MAX], m[18];

  mv.has_mac = it->has_mac;
  memcpy (mv.mac, it->mac, 6);
  /* Down until its devconf and addr_gen_mode are set.  */
  if (netlink_macvlan_create (host, &mv, &lerr) < 0)
    {
      cleanup_free char *what = xasprintf ("interface %s in the container", it->ifname);
      if (roce_error_status (&lerr) == EEXIST)
        return roce_error_refuse (err, what, "absent", "already present",
                                  "remove it from the container's network namespace, or change "
                                  "ifname_prefix in the node policy");
      *err = steal_pointer (&lerr);
      return roce_error_wrap (err, "network of %s: %s on %s", hca->name, it->ifname, it->parent);
    }
  n->links = xrealloc (n->links, (n->n_links + 1) * sizeof (*n->links));
  memcpy (n->links[n->n_links++], it->ifname, IFNAME_SIZE);
  roce_crash_point ("link");
  if (netlink_link_get (n->csock, it->ifname, &l, err) < 0)
    return roce_error_wrap (err, "network of %s", hca->name);
  if (netlink_link_set_devconf (n->csock, l.ifindex, &it->devconf, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  if (! f->ipv6_link_local
      && netlink_link_set_addr_gen_mode (n->csock, l.ifindex, IN6_ADDR_GEN_MODE_NONE, &lerr) < 0)
    {
      /* No IPv6 in the namespace: no link-local address either.  */
      if (roce_error_status (&lerr) != EAFNOSUPPORT)
        {
          *err = steal_pointer (&lerr);
          return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
        }
      roce_error_release (&lerr);
    }
  /* Every address probed for before any is ours.  */
  if (probe && netlink_link_set_up (n->csock, l.ifindex, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  for (size_t k = 0; probe && k < it->n_a; k++)
    if (dad_probe (r, it, &it->a[k], l.ifindex, err) < 0)
      return -1;
  for (size_t k = 0; k < it->n_a; k++)
    {
      if (netlink_addr_add (n->csock, l.ifindex, &it->a[k].addr, it->a[k].net->subnet.prefix, err)
          < 0)
        return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
      str_list_add (&addrs, " ", "%s/%u", addr_format (&it->a[k].addr, a),
                    it->a[k].net->subnet.prefix);
    }
  /* Up with its addresses: with arp_notify the kernel announces an IPv4
   * one; after a probe, and for an IPv6 one (added IFA_F_NODAD, which the
   * kernel never advertises), the hook does.  */
  if (! probe && netlink_link_set_up (n->csock, l.ifindex, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  for (size_t k = 0; k < it->n_a && it->devconf.arp_notify != 0 && it->has_mac; k++)
    {
      const struct roce_addr *ad = &it->a[k].addr;
      int rc = ad->family == AF_INET6
                   ? ndisc_announce (r->c->netns_fd, l.ifindex, it->mac, ad, &lerr)
               : probe ? arp_announce (r->c->netns_fd, l.ifindex, it->mac, (uint32_t) ad->v, &lerr)
                       : 0;
      if (rc < 0)
        {
          roce_log (ROCE_LOG_WARN, "announcing %s: %s", addr_format (ad, a), lerr->msg);
          roce_error_release (&lerr);
        }
    }
  for (size_t k = 0; k < it->n_a; k++)
    if (rail_routes (r, it, &it->a[k], l.ifindex, err) < 0)
      return -1;
  if (r->probe)
    probe_from (r, it);
  else if (f->mtu_probe_ms && mtu_probe (r, it, err) < 0)
    return -1;
  {
    cleanup_free char *gws = xstrdup ("");
    size_t routes = 0;
    for (size_t k = 0; k < it->n_a; k++)
      {
        routes += it->a[k].net->n_routes;
        if (it->a[k].net->has_gateway)
          str_list_add (&gws, ",", "%s", addr_format (&it->a[k].net->gateway, a));
      }
    roce_log (ROCE_LOG_INFO, "network: %s %s on %s (mtu %u, mac %s, table %u, %zu routes via %s)",
              it->ifname, addrs, it->parent, it->parent_link.mtu,
              it->has_mac ? mac_format (it->mac, m) : "random", it->table ? it->table : 254, routes,
              gws[0] ? gws : "-");
  }
  return 0;
}

static void
links_undo (struct net_state *n)
{
  /* A pod's pinned namespace outlives the rollback: its rules go too.  */
  for (size_t i = n->n_rules; i > 0; i--)
    {
      cleanup_error roce_error_t err = NULL;
      if (netlink_rule_del_from (n->csock, &n->rules[i - 1].addr, n->rules[i - 1].table,
                                 n->rules[i - 1].table, &err)
          < 0)
        roce_log (ROCE_LOG_WARN, "rolling back a rule: %s", err->msg);
    }
  n->n_rules = 0;
  for (size_t i = n->n_links; i > 0; i--)
    {
      cleanup_error roce_error_t err = NULL;
      struct netlink_link l;
      if (netlink_link_get (n->csock, n->links[i - 1], &l, &err) < 0
          || netlink_link_del (n->csock, l.ifindex, &err) < 0)
        roce_log (ROCE_LOG_WARN, "rolling back %s: %s", n->links[i - 1], err->msg);
    }
  n->n_links = 0;
}

void
net_undo (const struct roce_policy *p, const struct roce_container *c, struct net_state *n)
{
  const struct net_run r = { .p = p, .c = c, .n = n };
  if (n == NULL)
    return;
  untake (&r);
}

/* The hook runs in the runtime's (the host's) namespace: a container that
 * shares it would get its macvlans on the host.  */
static int
check_own_netns (const struct net_run *r, roce_error_t *err)
{
  int self = ns_is_self (r->c->netns_fd, "net", err);
  if (self < 0)
    return -1;
  if (self)
    return roce_error_refuse (err, "network namespace of the container", "one of its own",
                              "the host's",
                              "do not run a RoCE container with the host's network "
                              "(--net=host)");
  return 0;
}

/* A rail with IPv6 where the container has IPv6 off: its namespace's
 * (an interface made there gets no IPv6: its address could not be added),
 * or its spec's linux.sysctl (the runtime writes it after the hooks ran,
 * and the address would go then).  Refused before anything is taken.  */
static int
check_ipv6_on (const struct net_run *r, roce_error_t *err)
{
  const struct policy_hca *v6 = NULL;
  const struct oci_config *cfg = r->c->config;
  const char *which = NULL;
  int64_t value = 0;
  bool spec = false;
  cleanup_free char *what = NULL, *found = NULL, *fix = NULL;

  for (size_t i = 0; i < r->req->n && v6 == NULL; i++)
    if (policy_hca_net (r->req->sel[i].hca, AF_INET6))
      v6 = r->req->sel[i].hca;
  if (v6 == NULL)
    return 0;
  if (cfg && cfg->ipv6_off)
    {
      which = cfg->ipv6_off;
      value = cfg->ipv6_off_value;
      spec = true;
    }
  else
    {
      int off = netns_ipv6_off (r->c->netns_fd, &which, &value, err);
      if (off < 0)
        return roce_error_wrap (err, "IPv6 of the container's network namespace");
      if (off == 0)
        return 0;
    }
  what = xasprintf ("IPv6 in the container's network namespace (%s's rail is %s)", v6->name,
                    v6->n_nets > 1 ? "dual-stack" : "IPv6");
  if (strcmp (which, NETNS_NO_IPV6) == 0)
    {
      found = xstrdup ("off (the kernel has no IPv6: no /proc/sys/net/ipv6)");
      fix = xasprintf ("boot without ipv6.disable=1, or ask for an HCA whose rail is IPv4 only "
                       "(roce.io/hca)");
    }
  else
    {
      found = xasprintf ("off (%s = %lld%s)", which, (long long) value,
                         spec ? " in the spec's linux.sysctl" : "");
      fix = xasprintf ("leave IPv6 on in the container (no %s sysctl in its pod or spec), or ask "
                       "for an HCA whose rail is IPv4 only (roce.io/hca)",
                       which);
    }
  return roce_error_refuse (err, what, "on", found, fix);
}

/* net_setup, and the rail of `check --probe` (probe: net_probe_rail).  */
static int
setup (const struct roce_policy *p, const struct roce_request *req, const struct roce_container *c,
       struct nl_sock *netns_sock, struct net_probe *probe, struct net_state **out,
       roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *own = NULL;
  struct nl_sock *host = c->uplinks ? c->uplinks->host : NULL; /* the stage's (uplink.h) */
  struct plan pl = { .nsid = -1 };
  struct net_state *n = xmalloc0 (sizeof (*n));
  const struct net_run run = { .p = p, .req = req, .c = c, .n = n, .probe = probe }, *r = &run;
  int ret = -1;

  n->csock = netns_sock; /* taken over (net.h) */
  if (check_own_netns (r, err) < 0 || check_ipv6_on (r, err) < 0
      || (host == NULL && netlink_open (-1, &own, err) < 0)
      || (n->csock == NULL && netlink_open (c->netns_fd, &n->csock, err) < 0)
      || netns_id_of (c->netns_fd, netlink_fd (n->csock), &n->ns, err) < 0
      || plan_make (r, host ? host : own, &pl, err) < 0)
    goto out;
  host = host ? host : own;
  {
    /* Poststop asks the kernel through this id whether the namespace
     * lives; without one it falls back to scanning.  */
    cleanup_error roce_error_t nerr = NULL;
    if (netlink_nsid_on (host, c->netns_fd, &pl.nsid, &nerr) < 0)
      {
        roce_log (ROCE_LOG_DEBUG, "%s", nerr->msg);
        pl.nsid = -1;
      }
  }
  if (take (r, &pl, err) < 0)
    goto out;
  /* The filter a statically linked hook with `cluster` put off (linkage.h):
   * past the leases no start is handed over any more.  */
  if (linkage_defers_seccomp (c->linkage, p->cluster != NULL)
      && confine_seccomp_net (CONFINE_STAGE, true, err) < 0)
    {
      untake (r);
      goto out;
    }
  if (n->hold != IPAM_JOINED)
    {
      roce_crash_point ("lease");
      plan_fabric (r, &pl);
      if (! r->probe && gid_room (r, &pl, err) < 0)
        {
          untake (r);
          goto out;
        }
      for (size_t i = 0; i < pl.n; i++)
        if (link_setup (r, host, &pl.items[i], err) < 0)
          {
            untake (r);
            goto out;
          }
      if (! r->probe && gids_wait (r, &pl, err) < 0)
        {
          untake (r);
          goto out;
        }
      if (! r->probe)
        gids_record (r, &pl);
    }
  rails_fill (n, &pl);
  *out = steal_pointer (&n);
  ret = 0;
out:
  net_state_free (n);
  plan_clear (&pl);
  return ret;
}

int
net_setup (const struct roce_policy *p, const struct roce_request *req,
           const struct roce_container *c, struct nl_sock *netns_sock, struct net_state **out,
           roce_error_t *err)
{
  return setup (p, req, c, netns_sock, NULL, out, err);
}

int
net_probe_rail (const struct roce_policy *p, const struct policy_hca *h, struct net_probe *pr,
                roce_error_t *err)
{
  struct roce_selection sel = { .hca = h };
  const struct roce_request req = { .n = 1, .sel = &sel };
  struct roce_container c = ROCE_CONTAINER_INIT;
  struct nl_sock *sock = NULL;
  struct net_state *n = NULL;
  cleanup_close int nsfd = -1;
  char id[32];

  memset (&pr->res, 0, sizeof (pr->res));
  pr->src = (struct roce_addr){ 0 };
  pr->ifname[0] = '\0';
  if (check_snprintf (id, sizeof (id), err, "%s-%ld", NET_PROBE_ID, (long) getpid ()) < 0)
    return -1;
  c.id = id;
  /* check is run by a program that loads libraries (main.c's table):
   * etcd's client among them, for a block when the node's are full.  */
  c.linkage = ROCE_LINKAGE_LOADS;
  if (netlink_netns_new (&nsfd, &sock, err) < 0)
    return roce_error_wrap (err, "the probe's network namespace");
  c.netns_fd = nsfd;
  if (setup (p, &req, &c, sock, pr, &n, err) < 0)
    return -1; /* rolled back: nothing leased, nothing made */
  net_undo (p, &c, n);
  net_state_free (n);
  return 0; /* the namespace goes with nsfd */
}
