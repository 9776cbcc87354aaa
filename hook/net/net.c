#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_link.h>

#include "arp.h"
#include "gid.h"
#include "blocks.h"
#include "confine.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "net.h"
#include "netlink.h"
#include "netns.h"
#include "sysfs.h"
#include "utils.h"

#define IFNAME_SIZE 16

struct net_state
{
  struct nl_sock *csock; /* NETLINK_ROUTE in the container's namespace */
  struct netns_id ns;
  bool made;   /* this container set the network up (and holds its leases) */
  bool joined; /* it joined the network of a namespace it shares */
  /* The links made in the container's namespace, by name: recorded as soon
   * as the kernel made one, before anything else can fail.  */
  char (*links)[IFNAME_SIZE];
  size_t n_links;
  /* The from-rules made (they outlive their links): address and table.  */
  struct
  {
    uint32_t addr;
    unsigned table;
  } *rules;
  size_t n_rules;
  /* Per rail, once set up (or found, for a container that joined).  */
  struct net_rail *rails;
  char **rail_netdevs;
  size_t n_rails;
};

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
net_state_netns (const struct net_state *n, struct netns_id *out)
{
  if (n == NULL || ! (n->made || n->joined))
    return false;
  *out = n->ns;
  return true;
}

/* One call's inputs: what the public functions were handed.  */
struct net_run
{
  const struct roce_policy *p;
  const struct roce_request *req;
  const struct roce_container *c;
  struct net_state *n;
};

/* ---- liveness, scanned once per transaction, only when needed ---------------- */

struct alive_ctx
{
  struct netns_live *live;
  bool failed;
  struct nl_sock *host; /* for the kernel's word on a namespace, by its id */
};

static int holder_alive_by_nsid (struct nl_sock **host, const struct lease_holder *h);
static int holder_links_gone (struct nl_sock **host, const struct lease_holder *h);

/* Whether a holder's namespace lives: a process, an fd or a pin holds it
 * (the scan), or the kernel still has it with our address in it.  The scan
 * cannot see every holder (a socket made in the namespace and passed to
 * another process, a thread that entered it, a kernel user), so what it
 * does not find is gone only when the kernel agrees.  */
static bool
alive_cb (const struct lease_holder *h, void *arg)
{
  struct alive_ctx *a = arg;
  if (a->live == NULL && ! a->failed)
    {
      cleanup_error roce_error_t err = NULL;
      if (netns_live_scan (&a->live, &err) < 0)
        {
          roce_log (ROCE_LOG_WARN, "%s", err->msg);
          a->failed = true;
        }
    }
  /* Unsure means alive: a lease is never released on a guess.  An
   * interface still up (the kernel deletes a dead namespace's interfaces
   * a few ms after it forgets its id) keeps it too.  */
  return a->failed || netns_live_has (a->live, &h->ns) || holder_alive_by_nsid (&a->host, h) == 1
         || holder_links_gone (&a->host, h) != 1;
}

static void
alive_clear (struct alive_ctx *a)
{
  netns_live_free (a->live);
  a->live = NULL;
  netlink_close (a->host);
  a->host = NULL;
}

/* ---- the plan: everything checked before the host is touched ------------------- */

struct plan_item
{
  const struct roce_selection *sel;
  char *parent;
  struct netlink_link parent_link;
  char ifname[IFNAME_SIZE];
  uint32_t addr; /* leased */
  /* The fabric steps (policy `fabric`).  */
  unsigned table; /* 0: the main table */
  bool has_mac;
  uint8_t mac[6];
  struct netlink_devconf devconf;
  bool gid_wanted; /* wait for the GID (gid_check on, the table has room) */
  bool has_gid;
  unsigned gid_port, gid_index;
};

struct plan
{
  struct plan_item *items;
  size_t n;
  int32_t nsid; /* the host's id of the container's namespace, -1: none */
};

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
      if (check_snprintf (it->ifname, sizeof (it->ifname), err, "%s%zu", p->ifname_prefix, i) < 0)
        return -1;
      if (sysfs_hca_netdev (p, it->sel->hca, &it->parent, err) < 0)
        return -1;
      if (netlink_link_get (host, it->parent, &it->parent_link, &lerr) < 0)
        {
          cleanup_free char *what = xasprintf ("netdev %s of HCA %s", it->parent, it->sel->hca->name);
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

/* ---- the store's side -------------------------------------------------------------- */

/* A container whose namespace already has the network: it must ask for no
 * more than is there.  */
static int
check_join (const struct net_run *r, const struct lease_holder *h, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("network namespace shared with container %s", h->owner);
  char a[IPV4_STR_MAX], b[IPV4_STR_MAX];

  for (size_t i = 0; i < r->req->n; i++)
    {
      const struct roce_selection *s = &r->req->sel[i];
      const struct lease_addr *la = lease_holder_addr (h, s->hca->name);
      if (la == NULL)
        {
          cleanup_free char *exp = xstrdup ("");
          for (size_t k = 0; k < h->n_addrs; k++)
            str_list_add (&exp, ",", "%s", h->addrs[k].hca);
          cleanup_free char *e2 = xasprintf ("roce.io/hca within the HCAs it has (%s)", exp);
          return roce_error_refuse (err, what, e2, s->hca->name,
                                    "give every container of a pod the same roce.io/hca");
        }
      if (s->has_ip && la->addr != s->ip)
        {
          cleanup_free char *e2 = xasprintf ("roce.io/ip %s=%s as it has", s->hca->name,
                                             ipv4_format (la->addr, a));
          return roce_error_refuse (err, what, e2, ipv4_format (s->ip, b),
                                    "give every container of a pod the same roce.io/ip, or none");
        }
    }
  return 0;
}

static void mac_pick (const struct policy_fabric *f, uint32_t addr, struct plan_item *it);

/* Takes the leases (or joins the namespace's network) in one transaction.  */
static int
lease_take (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  struct net_state *n = r->n;
  const char *id = r->c->id;
  cleanup_lease_store struct lease_store *s = NULL;
  struct alive_ctx alive = { 0 };
  struct blocks_ctx blocks = { .p = r->p };
  struct lease_holder *h;
  char ns[48];
  int ret = -1;

  if (lease_store_open_wait (r->p->state_dir, r->p->lock_timeout_ms, &s, err) < 0
      || lease_load_netns (s, &n->ns, err) < 0)
    return -1;
  h = lease_find_netns (s, &n->ns);
  if (h)
    {
      if (check_join (r, h, err) < 0)
        return -1;
      lease_holder_join (h, id);
      if (lease_store_commit (s, err) < 0)
        return -1;
      n->joined = true;
      /* What the pod's network is, for this container's rails file.  */
      for (size_t i = 0; i < pl->n; i++)
        {
          const struct lease_addr *la = lease_holder_addr (h, pl->items[i].sel->hca->name);
          pl->items[i].addr = la->addr;
          snprintf (pl->items[i].ifname, sizeof (pl->items[i].ifname), "%s", la->ifname);
          pl->items[i].has_gid = la->has_gid;
          pl->items[i].gid_port = la->gid_port;
          pl->items[i].gid_index = la->gid_index;
        }
      roce_log (ROCE_LOG_INFO, "network: joined %s, set up by %s", netns_id_format (&n->ns, ns, sizeof (ns)),
                h->owner);
      return 0;
    }

  /* A holder with our inode but another cookie had a namespace that died
   * and whose inode number was handed out again (the kernel hands out the
   * lowest free one): its leases go, unless its interfaces are still up
   * (the kernel deletes them a few ms after the namespace's end, and one
   * may live on elsewhere): then it is kept aside until they are down.  */
  for (size_t i = s->n; i > 0; i--)
    if (netns_id_same_inode (&s->h[i - 1]->ns, &n->ns))
      {
        struct lease_holder *old = s->h[i - 1];
        if (holder_links_gone (&alive.host, old) != 1)
          {
            roce_log (ROCE_LOG_INFO, "the leases of %s stay aside: its namespace is gone, its "
                      "interfaces are not yet", old->owner);
            lease_holder_move_aside (s, old);
            continue;
          }
        roce_log (ROCE_LOG_INFO, "dropping the leases of %s: its namespace is gone", old->owner);
        lease_holder_drop (s, old);
      }

  h = lease_holder_add (s, &n->ns, id, (int64_t) time (NULL));
  h->nsid = pl->nsid;
  lease_holder_join (h, id);
  for (size_t i = 0; i < pl->n; i++)
    {
      const struct roce_selection *sel = pl->items[i].sel;
      if (blocks_assign (&blocks, s, h, sel->hca, pl->items[i].ifname, sel->has_ip, sel->ip, alive_cb, &alive,
                        &pl->items[i].addr, err) < 0)
        goto out;
      mac_pick (&r->p->fabric, pl->items[i].addr, &pl->items[i]);
      lease_holder_set_link (h, sel->hca->name, pl->items[i].parent_link.ifindex, pl->items[i].mac);
    }
  if (lease_store_commit (s, err) < 0)
    goto out;
  n->made = true;
  ret = 0;
out:
  alive_clear (&alive);
  blocks_ctx_clear (&blocks);
  return ret;
}

static void links_undo (struct net_state *n);

/* Forgets what this container took: its holder when it made one, its
 * membership when it joined.  Logs, never fails.  */
static void
lease_untake (const struct net_run *r)
{
  struct net_state *n = r->n;
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *h;

  if (! n->made && ! n->joined)
    {
      links_undo (n);
      return;
    }
  /* Under the lock, so that no container joins between the decision and
   * the links going.  */
  if (lease_store_open_wait (r->p->state_dir, r->p->lock_timeout_ms, &s, &err) < 0
      || lease_load_netns (s, &n->ns, &err) < 0)
    {
      links_undo (n);
      goto fail;
    }
  h = lease_find_netns (s, &n->ns);
  if (h)
    lease_holder_leave (h, r->c->id);
  /* Containers that joined the pod's network meanwhile use it: it stays,
   * held by them.  Only the network nobody else uses is taken down.  */
  if (h && n->made && strv_len (h->containers) == 0)
    {
      links_undo (n);
      lease_holder_drop (s, h);
    }
  else if (h && n->made)
    roce_log (ROCE_LOG_INFO, "rolling back: the network stays, %s joined it meanwhile",
              h->containers[0]);
  else if (! h)
    links_undo (n);
  if (lease_store_commit (s, &err) < 0)
    goto fail;
  n->made = n->joined = false;
  return;
fail:
  /* The namespace dies with the refused container: `gc` recovers these.  */
  roce_log (ROCE_LOG_ERR, "releasing the leases: %s", err->msg);
}

/* ---- the fabric steps: devconf, MAC, probe, per-rail table, GIDs ---------------- */

/* Whether another selected rail lies in h's subnet.  */
static bool
shares_subnet (const struct roce_request *req, size_t i)
{
  for (size_t k = 0; k < req->n; k++)
    if (k != i && req->sel[k].hca->subnet.addr == req->sel[i].hca->subnet.addr
        && req->sel[k].hca->subnet.prefix == req->sel[i].hca->subnet.prefix)
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
static void
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

/* The MAC of an address: the policy's two-octet prefix, then the address;
 * without a prefix a random one (locally administered, unicast), as the
 * kernel would pick.  Chosen before the link is made, so that the lease
 * records it: while the parent lists it, the interface lives.  */
static void
mac_pick (const struct policy_fabric *f, uint32_t addr, struct plan_item *it)
{
  it->has_mac = true;
  if (! f->has_mac_prefix)
    {
      if (getrandom (it->mac, sizeof (it->mac), 0) != (ssize_t) sizeof (it->mac))
        {
          struct timespec t;
          clock_gettime (CLOCK_MONOTONIC, &t);
          for (int b = 0; b < 6; b++)
            it->mac[b] = (uint8_t) ((uint64_t) t.tv_nsec >> (8 * b)) ^ (uint8_t) (addr >> (8 * (b % 4)));
        }
      it->mac[0] = (uint8_t) ((it->mac[0] & 0xfe) | 0x02);
      return;
    }
  it->mac[0] = f->mac_prefix[0];
  it->mac[1] = f->mac_prefix[1];
  for (int b = 0; b < 4; b++)
    it->mac[2 + b] = (uint8_t) (addr >> (24 - 8 * b));
}

/* A GID finding, of the QoS gate's kind: refuses under fabric.gid_check
 * enforce, is logged under warn.  */
static int
gid_finding (const struct net_run *r, const char *what, const char *expected, const char *found,
             const char *fix, roce_error_t *err)
{
  if (r->p->fabric.gid_check == QOS_MODE_ENFORCE)
    {
      roce_log (ROCE_LOG_ERR, "gid check (enforce): %s: %s vs %s (fix: %s)", what, expected, found, fix);
      return roce_error_refuse (err, what, expected, found, fix);
    }
  roce_log (ROCE_LOG_WARN, "gid check (warn): %s: %s vs %s (fix: %s)", what, expected, found, fix);
  return 0;
}

/* Before any link: each rail's port must have room for the entries its
 * address adds (v1 and v2, and two more for an IPv6 link-local).  */
static int
gid_room (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  const struct roce_policy *p = r->p;
  unsigned need = p->fabric.ipv6_link_local ? 4 : 2;

  for (size_t i = 0; i < pl->n; i++)
    {
      struct plan_item *it = &pl->items[i];
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
                                              "%s/class/infiniband/%s)", hca, p->sysfs_root, hca);
          if (gid_finding (r, what, "a table to hold the container's GID", found, fix, err) < 0)
            return -1;
          continue;
        }
      port = gid_port_of (use, n, it->parent);
      if (port->size < port->used + need)
        {
          cleanup_free char *what = xasprintf ("RoCE GID table of %s port %u", hca, port->port);
          cleanup_free char *exp = xasprintf ("%u free entries (v1 and v2 of the container's address%s)",
                                              need, need > 2 ? " and of its IPv6 link-local" : "");
          cleanup_free char *found = xasprintf ("%u of %u used", port->used, port->size);
          cleanup_free char *fix = xasprintf (
            "stop containers on %s (every address takes 2 entries), or keep "
            "fabric.ipv6_link_local false in %s; `roce-hook check` shows the table", hca, p->path);
          ret = gid_finding (r, what, exp, found, fix, err);
        }
      else
        it->gid_wanted = true;
      gid_port_use_free (use, n);
      if (ret < 0)
        return -1;
    }
  return 0;
}

/* After the links: each rail's RoCE v2 GID, polled in sysfs as the kernel
 * adds it (roce_gid_mgmt.c, on the address event), bounded by gid_wait_ms
 * for all rails together.  */
static int
gids_wait (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  const struct roce_policy *p = r->p;
  struct timespec t0, now;
  size_t pending = 0;

  for (size_t i = 0; i < pl->n; i++)
    pending += pl->items[i].gid_wanted;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  for (;;)
    {
      int64_t ms;
      for (size_t i = 0; i < pl->n; i++)
        {
          struct plan_item *it = &pl->items[i];
          cleanup_error roce_error_t lerr = NULL;
          int f;
          if (! it->gid_wanted || it->has_gid)
            continue;
          f = gid_find_v4 (p->sysfs_root, it->sel->hca->name, it->addr, it->ifname, &it->gid_port,
                           &it->gid_index, &lerr);
          if (f > 0)
            {
              it->has_gid = true;
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
    {
      const struct plan_item *it = &pl->items[i];
      char a[IPV4_STR_MAX], g[GID_STR_MAX];
      if (! it->gid_wanted)
        continue;
      if (it->has_gid)
        {
          roce_log (ROCE_LOG_INFO, "gid: %s %s is RoCE v2 GID index %u of %s port %u", it->ifname,
                    ipv4_format (it->addr, a), it->gid_index, it->sel->hca->name, it->gid_port);
          continue;
        }
      {
        cleanup_free char *what = xasprintf ("RoCE v2 GID of %s (%s) on %s", ipv4_format (it->addr, a),
                                             it->ifname, it->sel->hca->name);
        cleanup_free char *exp = xasprintf ("an entry %s on %s within %u ms", gid_v4_mapped (it->addr, g),
                                            it->ifname, p->fabric.gid_wait_ms);
        cleanup_free char *fix = xasprintf (
          "check that %s is the RoCE netdev of %s (hcas.%s.netdev) and that RoCE v2 is enabled, "
          "or raise fabric.gid_wait_ms in %s", it->parent, it->sel->hca->name, it->sel->hca->name,
          p->path);
        if (gid_finding (r, what, exp, "none", fix, err) < 0)
          return -1;
      }
    }
  return 0;
}

/* The GIDs found go to the leases (so that a container joining the pod's
 * network, and `leases`, see them).  */
static void
gids_record (const struct net_run *r, const struct plan *pl)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *h;
  bool any = false;

  for (size_t i = 0; i < pl->n; i++)
    any = any || pl->items[i].has_gid;
  if (! any)
    return;
  if (lease_store_open_wait (r->p->state_dir, r->p->lock_timeout_ms, &s, &err) < 0
      || lease_load_netns (s, &r->n->ns, &err) < 0)
    goto fail;
  h = lease_find_netns (s, &r->n->ns);
  for (size_t i = 0; h && i < h->n_addrs; i++)
    for (size_t k = 0; k < pl->n; k++)
      if (pl->items[k].has_gid && h->addrs[i].addr == pl->items[k].addr)
        {
          h->addrs[i].has_gid = true;
          h->addrs[i].gid_port = pl->items[k].gid_port;
          h->addrs[i].gid_index = pl->items[k].gid_index;
        }
  if (h && lease_store_commit (s, &err) < 0)
    goto fail;
  return;
fail:
  roce_log (ROCE_LOG_WARN, "recording the GIDs in the lease store: %s", err->msg);
}

static void
rails_fill (struct net_state *n, const struct plan *pl)
{
  n->rails = xmalloc0 ((pl->n + 1) * sizeof (*n->rails));
  for (size_t i = 0; i < pl->n; i++)
    {
      const struct plan_item *it = &pl->items[i];
      strv_push (&n->rail_netdevs, it->parent);
      n->rails[i] = (struct net_rail){ .hca = it->sel->hca->name, .addr = it->addr,
                                       .prefix = it->sel->hca->subnet.prefix,
                                       .has_gid = it->has_gid, .gid_port = it->gid_port,
                                       .gid_index = it->gid_index };
      memcpy (n->rails[i].ifname, it->ifname, IFNAME_SIZE);
    }
  for (size_t i = 0; i < pl->n; i++)
    n->rails[i].netdev = n->rail_netdevs[i];
  n->n_rails = pl->n;
}

/* ---- the links ----------------------------------------------------------------------- */

/* The per-rail table: the subnet on-link and the policy's routes via the
 * gateway, and the rule that sends the rail's own address there.  With
 * route_table 0: the policy's routes in the main table (the kernel's subnet
 * route is there either way).  */
static int
rail_routes (const struct net_run *r, const struct plan_item *it, int ifindex, roce_error_t *err)
{
  const struct policy_hca *hca = it->sel->hca;
  cleanup_error roce_error_t lerr = NULL;
  char a[IPV4_STR_MAX], c[CIDR_STR_MAX];
  int rc;

  if (it->table && netlink_route_add_table (r->n->csock, ifindex, &hca->subnet, 0, it->addr, it->table,
                                            err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  for (size_t k = 0; k < hca->n_routes; k++)
    {
      rc = it->table ? netlink_route_add_table (r->n->csock, ifindex, &hca->routes[k], hca->gateway,
                                                0, it->table, &lerr)
                     : netlink_route_add (r->n->csock, ifindex, &hca->routes[k], hca->gateway, &lerr);
      if (rc < 0)
        {
          cleanup_free char *what = xasprintf ("route %s via %s in the container",
                                               cidr_format (&hca->routes[k], c),
                                               ipv4_format (hca->gateway, a));
          if (roce_error_status (&lerr) == EEXIST)
            return roce_error_refuse (err, what, "absent", "already present",
                                      it->table ? "list each destination once in an HCA's routes"
                                                : "list each destination once across the selected "
                                                  "HCAs' routes, or set fabric.route_table");
          *err = steal_pointer (&lerr);
          return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
        }
    }
  if (it->table && netlink_rule_add_from (r->n->csock, it->addr, it->table, it->table, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  if (it->table)
    {
      r->n->rules = xrealloc (r->n->rules, (r->n->n_rules + 1) * sizeof (*r->n->rules));
      r->n->rules[r->n->n_rules].addr = it->addr;
      r->n->rules[r->n->n_rules++].table = it->table;
    }
  return 0;
}

/* RFC 5227: the address is probed for on the link before it is ours.  */
static int
dad_probe (const struct net_run *r, const struct plan_item *it, int ifindex, roce_error_t *err)
{
  uint8_t who[6];
  char a[IPV4_STR_MAX], m[18];
  int rc;

  if (netlink_link_set_up (r->n->csock, ifindex, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", it->sel->hca->name, it->ifname);
  rc = arp_probe (r->c->netns_fd, ifindex, it->mac, it->addr, r->p->fabric.dad_probe_ms, who, err);
  if (rc < 0)
    return roce_error_wrap (err, "duplicate-address probe of %s", ipv4_format (it->addr, a));
  if (rc > 0)
    {
      cleanup_free char *what = xasprintf ("address %s of %s on %s", ipv4_format (it->addr, a),
                                           it->sel->hca->name, it->parent);
      cleanup_free char *found = xasprintf ("in use by MAC %s", arp_mac_format (who, m));
      cleanup_free char *fix = xasprintf ("find the host with MAC %s and free %s, or give this "
                                          "container another address (roce.io/ip)", m, a);
      return roce_error_refuse (err, what, "no other host on the link answering for it (RFC 5227 "
                                "probe)", found, fix);
    }
  return 0;
}

static int
link_setup (const struct net_run *r, struct nl_sock *host, struct plan_item *it, roce_error_t *err)
{
  struct net_state *n = r->n;
  const struct policy_fabric *f = &r->p->fabric;
  const struct policy_hca *hca = it->sel->hca;
  cleanup_error roce_error_t lerr = NULL;
  struct netlink_link l;
  struct netlink_macvlan mv = { .parent_ifindex = it->parent_link.ifindex, .name = it->ifname,
                                .mtu = it->parent_link.mtu, .netns_fd = r->c->netns_fd };
  char a[IPV4_STR_MAX], c[CIDR_STR_MAX], m[18];

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
  if (f->dad_probe_ms && it->has_mac && dad_probe (r, it, l.ifindex, err) < 0)
    return -1;
  if (netlink_addr_add (n->csock, l.ifindex, it->addr, hca->subnet.prefix, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  if (! (f->dad_probe_ms && it->has_mac))
    {
      /* Up with its address: with arp_notify the kernel announces it.  */
      if (netlink_link_set_up (n->csock, l.ifindex, err) < 0)
        return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
    }
  else if (it->devconf.arp_notify != 0
           && arp_announce (r->c->netns_fd, l.ifindex, it->mac, it->addr, &lerr) < 0)
    roce_log (ROCE_LOG_WARN, "announcing %s: %s", ipv4_format (it->addr, a), lerr->msg);
  if (rail_routes (r, it, l.ifindex, err) < 0)
    return -1;
  roce_log (ROCE_LOG_INFO, "network: %s %s/%u on %s (mtu %u, mac %s, table %u, %zu routes via %s)",
            it->ifname, ipv4_format (it->addr, a), hca->subnet.prefix, it->parent,
            it->parent_link.mtu, it->has_mac ? arp_mac_format (it->mac, m) : "random",
            it->table ? it->table : 254, hca->n_routes,
            hca->has_gateway ? ipv4_format (hca->gateway, c) : "-");
  return 0;
}

static void
links_undo (struct net_state *n)
{
  /* A pod's pinned namespace outlives the rollback: its rules go too.  */
  for (size_t i = n->n_rules; i > 0; i--)
    {
      cleanup_error roce_error_t err = NULL;
      if (netlink_rule_del_from (n->csock, n->rules[i - 1].addr, n->rules[i - 1].table,
                                 n->rules[i - 1].table, &err) < 0)
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
  lease_untake (&r);
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
                              "the host's", "do not run a RoCE container with the host's network "
                              "(--net=host)");
  return 0;
}

int
net_setup (const struct roce_policy *p, const struct roce_request *req,
           const struct roce_container *c, struct net_state **out, roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *host = NULL;
  struct plan pl = { .nsid = -1 };
  struct net_state *n = xmalloc0 (sizeof (*n));
  const struct net_run run = { .p = p, .req = req, .c = c, .n = n }, *r = &run;
  int ret = -1;

  n->csock = c->netns_sock; /* taken over (container.h) */
  if (check_own_netns (r, err) < 0 || netlink_open (-1, &host, err) < 0
      || (n->csock == NULL && netlink_open (c->netns_fd, &n->csock, err) < 0)
      || netns_id_of (c->netns_fd, netlink_fd (n->csock), &n->ns, err) < 0
      || plan_make (r, host, &pl, err) < 0)
    goto out;
  {
    /* Poststop asks the kernel through this id whether the namespace
     * lives; without one it falls back to scanning.  */
    cleanup_error roce_error_t nerr = NULL;
    if (netlink_nsid_of (c->netns_fd, &pl.nsid, &nerr) < 0)
      {
        roce_log (ROCE_LOG_DEBUG, "%s", nerr->msg);
        pl.nsid = -1;
      }
  }
  if (lease_take (r, &pl, err) < 0)
    goto out;
  /* The filter a statically linked hook with `cluster` put off (container.h):
   * past the leases no start is handed over any more.  */
  if (c->seccomp_after_leases && confine_seccomp_net (CONFINE_STAGE, true, err) < 0)
    {
      lease_untake (r);
      goto out;
    }
  if (! n->joined)
    {
      roce_crash_point ("lease");
      plan_fabric (r, &pl);
      if (gid_room (r, &pl, err) < 0)
        {
          lease_untake (r);
          goto out;
        }
      for (size_t i = 0; i < pl.n; i++)
        if (link_setup (r, host, &pl.items[i], err) < 0)
          {
            lease_untake (r);
            goto out;
          }
      if (gids_wait (r, &pl, err) < 0)
        {
          lease_untake (r);
          goto out;
        }
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

/* ---- poststop ------------------------------------------------------------------------ */

/* A Kubernetes pod sandbox names its namespace by the path the CRI runtime
 * pinned it at; at the sandbox's poststop the pod is going (CNI DEL and the
 * pin's removal come next), so our interfaces and leases go now, as CNI's
 * do.  An fd of that namespace, or -1 (not a sandbox, no path, unreadable). */
static int
pod_sandbox_pin (const struct roce_container *c, struct netns_id *id)
{
  const char *t = roce_kv_get (c->annotations, c->n_annotations, "io.kubernetes.cri.container-type");
  const char *t2 = roce_kv_get (c->annotations, c->n_annotations, "io.kubernetes.cri-o.ContainerType");
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_config struct oci_config *own = NULL;
  const struct oci_config *cfg = c->config;
  const struct oci_namespace *ns;
  int fd;

  if (! ((t && strcmp (t, "sandbox") == 0) || (t2 && strcmp (t2, "sandbox") == 0)))
    return -1;
  if (cfg == NULL)
    {
      if (oci_config_load (c->bundle, &own, &err) < 0)
        goto fail;
      cfg = own;
    }
  ns = oci_config_namespace (cfg, "network");
  if (ns == NULL || ns->path == NULL)
    return -1;
  if ((fd = netns_open_pinned (ns->path, id, &err)) >= 0)
    return fd;
fail:
  roce_log (ROCE_LOG_WARN, "pod sandbox: %s; its leases wait for gc", err->msg);
  return -1;
}

/* Removes the holder's links from the pod's namespace (fd, pinned).  */
static void
pod_links_remove (const struct roce_policy *p, int fd, const struct lease_holder *h)
{
  cleanup_nl_sock struct nl_sock *sock = NULL;
  cleanup_error roce_error_t err = NULL;
  if (netlink_open (fd, &sock, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "pod sandbox stopped: %s", err->msg);
      return;
    }
  for (size_t k = 0; k < h->n_addrs; k++)
    {
      struct netlink_link l;
      if (netlink_link_get (sock, h->addrs[k].ifname, &l, &err) < 0
          || netlink_link_del (sock, l.ifindex, &err) < 0)
        {
          roce_log (ROCE_LOG_WARN, "pod sandbox stopped: %s: %s", h->addrs[k].ifname, err->msg);
          roce_error_release (&err);
          continue;
        }
      roce_log (ROCE_LOG_INFO, "network: pod sandbox stopped: %s removed", h->addrs[k].ifname);
      /* The rail's source rule lives in the namespace, not on the link:
       * the next pod in this pin would find it in its way.  */
      if (p->fabric.route_table)
        {
          unsigned table = p->fabric.route_table + (unsigned) k;
          if (netlink_rule_del_from (sock, h->addrs[k].addr, table, table, &err) < 0)
            {
              roce_log (ROCE_LOG_WARN, "pod sandbox stopped: rule from %s: %s", h->addrs[k].ifname,
                        err->msg);
              roce_error_release (&err);
            }
        }
    }
}

/* Whether the holder's namespace still lives, asked without scanning every
 * process: through the host's id for it (the kernel forgets the id when the
 * namespace dies; a reused id holds no namespace with our address on our
 * interface).  1 alive, 0 gone, -1 the kernel cannot tell (no id recorded,
 * an older store, an error).  */
static int
holder_alive_by_nsid (struct nl_sock **host, const struct lease_holder *h)
{
  cleanup_error roce_error_t err = NULL;
  int r;

  if (h->nsid < 0 || h->n_addrs == 0)
    return -1;
  if (*host == NULL && netlink_open (-1, host, &err) < 0)
    goto unsure;
  r = netlink_addr_in_nsid (*host, h->nsid, h->addrs[0].addr, h->addrs[0].ifname, &err);
  if (r >= 0)
    return r;
  if (r == -2)
    return -1; /* a namespace without our address under that id: scan */
unsure:
  roce_log (ROCE_LOG_DEBUG, "liveness of %s by its id: %s", h->owner, err->msg);
  return -1;
}

/* Poststop's watch on a holder's namespace: the kernel's word that it
 * forgot the namespace's id, which it does when the namespace dies.  */
struct end_watch
{
  struct nl_sock *sock; /* RTM_DELNSID, or NULL */
  struct nl_sock **host;
  const struct lease_holder *h;
  bool gone;
};

/* Asked between the processes of a scan: never waits.  */
static bool
end_heard (void *arg)
{
  struct end_watch *w = arg;
  int r;

  if (w->gone || w->sock == NULL)
    return w->gone;
  r = netlink_nsid_forgotten (w->sock, w->h->nsid, 0);
  if (r < 0)
    {
      /* Announcements were dropped: ask the kernel once, then only scan.  */
      w->sock = NULL;
      w->gone = holder_alive_by_nsid (w->host, w->h) == 0;
    }
  else
    w->gone = r == 1;
  return w->gone;
}

static long
ms_until (const struct timespec *end)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (end->tv_sec - now.tv_sec) * 1000L + (end->tv_nsec - now.tv_nsec) / 1000000L;
}

/* Waits until the deadline for the namespace's end: the kernel's
 * announcement, or (without a watch) its id asked every 20 ms, or (when
 * the kernel cannot tell) scans 20 ms apart while only dying processes
 * hold it.  true: it ended.  */
static bool
end_wait (struct end_watch *w, const struct timespec *end)
{
  for (long left; (left = ms_until (end)) > 0;)
    {
      int k;
      if (w->sock != NULL)
        {
          int r = netlink_nsid_forgotten (w->sock, w->h->nsid, (int) left);
          if (r >= 0)
            return r == 1;
          w->sock = NULL; /* the watch cannot tell: asked instead */
        }
      usleep (20 * 1000);
      k = w->h->nsid >= 0 ? holder_alive_by_nsid (w->host, w->h) : -1;
      if (k == 0)
        return true;
      if (k < 0)
        {
          /* The kernel cannot tell: what holds it, as the scan sees it.  */
          cleanup_netns_live struct netns_live *live = NULL;
          cleanup_error roce_error_t err = NULL;
          if (netns_live_scan_one (&w->h->ns, NULL, NULL, &live, &err) < 0)
            return false;
          if (! netns_live_has (live, &w->h->ns))
            return true;
          if (! netns_live_dying (live, &w->h->ns))
            return false;
        }
    }
  return false;
}

/* The reaper's question for a holder its containers left: does the
 * namespace still live?  It is held by something else (an fd, a pin, a
 * socket made in it and passed on, a thread that entered it) or about to
 * go: runc and crun run poststop before the kernel lets the namespace of a
 * short-lived container go (it frees a netlink socket the runtime made
 * there one RCU grace period after the container's exec).  So its end is
 * listened for (RTM_DELNSID): for REAP_QUIET_MS alone, then while the
 * namespace's visible holders are looked for.  A live holder found keeps
 * the lease at once; otherwise the namespace is gone only when the kernel
 * says so, and stays (for gc) when it has not said so within 2 s.  The
 * scan alone decides only for a holder without a recorded id (an older
 * store).  */
#define REAP_QUIET_MS 100
#define REAP_LOCK_MS 10000

static bool
holder_alive (struct nl_sock **host, const struct lease_holder *h)
{
  cleanup_nl_sock struct nl_sock *sock = NULL;
  cleanup_netns_live struct netns_live *live = NULL;
  cleanup_error roce_error_t err = NULL;
  struct end_watch w = { .host = host, .h = h };
  struct timespec end;
  int alive = holder_alive_by_nsid (host, h), r;
  bool held;

  if (alive == 0)
    return false;
  if (strv_len (h->containers) > 0)
    return true; /* its other containers use it (or gc finds them gone) */
  clock_gettime (CLOCK_MONOTONIC, &end);
  end.tv_sec += 2;
  if (h->nsid >= 0)
    {
      cleanup_error roce_error_t werr = NULL;
      /* Listening first, then asking again: an end between the two is
       * heard of.  A live namespace never loses its id, so its end is
       * announced also when the address was not found under it.  */
      if (netlink_nsid_watch (&sock, &werr) < 0)
        roce_log (ROCE_LOG_DEBUG, "%s", werr->msg);
      else
        {
          int again = holder_alive_by_nsid (host, h), heard;
          w.sock = sock;
          if (again == 0)
            return false;
          if (again == 1)
            alive = 1;
          /* A short-lived container's namespace ends within a grace period
           * or two: heard of without scanning anything (the scan's CPU
           * would be taken from the runtime finishing beside it).  */
          heard = netlink_nsid_forgotten (sock, h->nsid, REAP_QUIET_MS);
          if (heard == 1)
            return false;
          if (heard < 0)
            w.sock = NULL;
        }
    }
  r = netns_live_scan_one (&h->ns, end_heard, &w, &live, &err);
  if (r < 0)
    {
      /* Unsure means alive: a lease is never released on a guess.  */
      roce_log (ROCE_LOG_WARN, "%s", err->msg);
      return true;
    }
  if (r == 1)
    return false;
  if (r == 2)
    return true; /* a live holder */
  held = netns_live_has (live, &h->ns);
  if (held && ! netns_live_dying (live, &h->ns))
    return true;
  /* Nothing the kernel vouches for and nothing visible holds it: gone.  */
  if (! held && alive != 1)
    return false;
  /* The kernel still has it (its holders hidden from /proc, or going), or
   * only processes being killed hold it (crun runs poststop right after
   * its SIGKILL): its address is released once it has gone, within the
   * bound, or stays for gc.  */
  return ! end_wait (&w, &end);
}

/* Whether every interface the holder's leases were made on is down or gone:
 * its MAC is off its parent's list (netlink_mac_on_link).  1 yes, 0 one is
 * still up, -1 cannot tell.  A lease of an older store, without its link,
 * counts as gone (the namespace's end alone decided then).  */
static int
holder_links_gone (struct nl_sock **host, const struct lease_holder *h)
{
  cleanup_error roce_error_t err = NULL;

  for (size_t k = 0; k < h->n_addrs; k++)
    {
      int r;
      if (! h->addrs[k].has_link)
        continue;
      if (*host == NULL && netlink_open (-1, host, &err) < 0)
        goto unsure;
      r = netlink_mac_on_link (*host, h->addrs[k].parent_ifindex, h->addrs[k].mac, &err);
      if (r < 0)
        goto unsure;
      if (r == 1)
        return 0;
    }
  return 1;
unsure:
  roce_log (ROCE_LOG_DEBUG, "interfaces of %s: %s", h->owner, err->msg);
  return -1;
}

/* Waits until the deadline for the holder's interfaces to go down: the
 * kernel deletes a dead namespace's interfaces a few ms after it forgot
 * its id, and until then the old interface answers for the address.  */
static bool
links_wait (struct nl_sock **host, const struct lease_holder *h, const struct timespec *end)
{
  for (;;)
    {
      int r = holder_links_gone (host, h);
      if (r == 1)
        return true;
      if (r < 0 || ms_until (end) <= 0)
        return false;
      usleep (2 * 1000);
    }
}

/* A holder left without containers: released at once when the kernel has
 * let its namespace go and its interfaces are down (a container that lived
 * longer than a few ms), else by a reaper (below).  */
struct reap_item
{
  struct lease_holder *h; /* a copy */
  int fd;                 /* its reaping/ mark, locked */
};

struct reap_list
{
  struct reap_item *items;
  size_t n;
};

static void
reap_list_clear (struct reap_list *l)
{
  for (size_t i = 0; i < l->n; i++)
    {
      lease_holder_free (l->items[i].h);
      cleanup_closep (&l->items[i].fd);
    }
  free (l->items);
  l->items = NULL;
  l->n = 0;
}

/* The reaper's work for one holder, in the child: waits for the end of the
 * namespace (holder_alive: a live holder found keeps the lease, else the
 * kernel's word within 2 s) and then of its interfaces (1 s more), and
 * releases the lease under the store's lock if it is still that holder's,
 * with no container in it.  Otherwise the lease stays for gc.  */
static void
reap_one (const struct roce_policy *p, struct reap_item *it)
{
  cleanup_nl_sock struct nl_sock *host = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  const struct lease_holder *h = it->h;
  struct lease_holder *now;
  struct timespec end;
  char ns[48];
  bool gone;

  netns_id_format (&h->ns, ns, sizeof (ns));
  roce_pause_point ("reap");
  roce_crash_point ("reap");
  gone = ! holder_alive (&host, h);
  if (gone)
    {
      clock_gettime (CLOCK_MONOTONIC, &end);
      end.tv_sec += 1;
      if (! links_wait (&host, h, &end))
        {
          roce_log (ROCE_LOG_WARN, "network: %s stays: %s is gone but its interfaces are still up; "
                    "gc releases it once they are down", h->owner, ns);
          gone = false;
        }
    }
  else
    roce_log (ROCE_LOG_INFO, "network: %s stays, %s still exists", h->owner, ns);
  /* Nobody waits for the reaper: it waits for the lock longer than a
   * start would, rather than leave the lease to gc.  */
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms > REAP_LOCK_MS ? p->lock_timeout_ms : REAP_LOCK_MS,
                             &s, &err) < 0
      || lease_load_netns (s, &h->ns, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "releasing the leases of %s: %s; gc releases them", h->owner, err->msg);
      cleanup_closep (&it->fd); /* gc removes the mark */
      return;
    }
  now = lease_find_netns (s, &h->ns);
  if (now == NULL)
    {
      /* A start in a namespace that got its inode moved it aside.  */
      struct netns_id aside = h->ns;
      aside.ino |= NETNS_INO_GONE;
      if (lease_load_netns (s, &aside, &err) < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
      now = lease_find_netns (s, &aside);
    }
  if (gone && now && strv_len (now->containers) == 0)
    {
      for (size_t k = 0; k < now->n_addrs; k++)
        {
          char a[IPV4_STR_MAX];
          roce_log (ROCE_LOG_INFO, "released %s (%s)", ipv4_format (now->addrs[k].addr, a),
                    now->addrs[k].hca);
        }
      lease_holder_drop (s, now);
      if (lease_store_commit (s, &err) < 0)
        roce_log (ROCE_LOG_WARN, "releasing the leases of %s: %s", h->owner, err->msg);
    }
  lease_reap_unmark (s, &h->ns, it->fd);
  it->fd = -1;
}

/* The reaper itself: never returns.  */
static void __attribute__ ((noreturn))
reap_run (const struct roce_policy *p, struct reap_list *l, pid_t runtime)
{
  detach_from_caller ();
  for (size_t i = 0; i < l->n; i++)
    reap_one (p, &l->items[i]);
  reap_list_clear (l);
  /* Orphaned, it was given to the nearest child subreaper.  When that is
   * the runtime that ran the hook (crun run, runc run), its end waits for
   * the runtime's own (60 s at most): crun waits for each hook with
   * sigtimedwait on SIGCHLD, and a SIGCHLD still pending from another child
   * swallows the hook's.  Any other (a containerd shim, init) reaps it.  */
  for (int i = 0; runtime > 1 && getppid () == runtime && i < 3000; i++)
    usleep (20 * 1000);
  _exit (0);
}

/* Runs the reaper: a grandchild of the hook that nobody waits for.  It has
 * no fd of the runtime's (its stdio goes to /dev/null: runc reads a hook's
 * output to its end) and a session of its own.  It is orphaned at once,
 * alive, by a child that exits before the hook does, and outlives the
 * runtime it is then given to (reap_run): a runtime that is a child
 * subreaper and waits for its hook through SIGCHLD (crun) would otherwise
 * be told of a dead reaper in the same breath as of the hook, and the one
 * signal it gets would name the reaper.  Its marks say that it lives
 * (`leases`: "releasing").  */
static void
reap_spawn (const struct roce_policy *p, struct reap_list *l, bool caller_ends)
{
  pid_t mid, pid = -1, runtime = getppid ();
  int ready[2], status, e = 0;

  if (l->n == 0)
    return;
  /* A caller that ends now (roce-runtime) is no runtime waiting for its
   * hook: its child is orphaned as soon as it exits, one fork and no wait
   * (0.2 ms of a start's whole life here).  */
  if (caller_ends)
    {
      pid = fork ();
      if (pid == 0)
        reap_run (p, l, 0);
      if (pid < 0)
        {
          e = errno;
          goto fail;
        }
      goto started;
    }
  if (pipe2 (ready, O_CLOEXEC) < 0)
    {
      e = errno;
      goto fail;
    }
  mid = fork ();
  if (mid < 0)
    {
      e = errno;
      close (ready[0]);
      close (ready[1]);
      goto fail;
    }
  if (mid == 0)
    {
      /* The middle one: tells the hook the reaper's pid, and goes.  */
      pid = fork ();
      if (pid != 0)
        {
          ssize_t w = write (ready[1], &pid, sizeof (pid));
          (void) w;
          _exit (0);
        }
      close (ready[0]);
      close (ready[1]);
      reap_run (p, l, runtime);
    }
  close (ready[1]);
  if (read (ready[0], &pid, sizeof (pid)) != (ssize_t) sizeof (pid))
    pid = -1;
  close (ready[0]);
  while (waitpid (mid, &status, 0) < 0 && errno == EINTR)
    ;
  if (pid < 0)
    {
      e = EAGAIN;
      goto fail;
    }
started:
  for (size_t i = 0; i < l->n; i++)
    {
      char ns[48];
      roce_log (ROCE_LOG_INFO, "network: %s still exists: its leases go once it and its "
                "interfaces are gone (pid %d waits for that)",
                netns_id_format (&l->items[i].h->ns, ns, sizeof (ns)), (int) pid);
    }
  roce_pause_point ("reaper-started");
  return;
fail:
  roce_log (ROCE_LOG_WARN, "network: no process to release %zu lease holder(s) once their "
            "namespaces are gone (%s); gc releases them", l->n, strerror (e));
  /* The marks go with the fds: gc removes them.  */
}

/* The holder the container leaves, in the store: released now, kept (other
 * containers use it), or handed to the reaper.  */
static void
leave_holder (const struct roce_policy *p, struct lease_store *s, struct lease_holder *h,
              struct nl_sock **host, int pin, const struct netns_id *pin_id, int *mark,
              struct reap_list *reap)
{
  cleanup_error roce_error_t err = NULL;
  int fd;

  /* The sandbox's poststop takes the pod's network down only when no
   * other container of ours is left in it: the container-type annotation
   * is the tenant's to write.  */
  if (pin >= 0 && netns_id_equal (pin_id, &h->ns) && strv_len (h->containers) == 0)
    pod_links_remove (p, pin, h);
  else if (strv_len (h->containers) > 0)
    return; /* its other containers use it (or gc finds them gone) */
  else if (holder_alive_by_nsid (host, h) != 0 || holder_links_gone (host, h) != 1)
    {
      /* The kernel still has the namespace (runc and crun run poststop
       * before it lets a short-lived container's go: it frees a netlink
       * socket made there one RCU grace period later), or its interfaces
       * are still up: the reaper waits for both, so that neither the
       * runtime nor the next container waits here.  */
      /* The mark the caller holds for this holder (net_release_mark), else
       * one of its own.  */
      fd = *mark >= 0 ? *mark : lease_reap_mark (s, &h->ns, NULL, &err);
      *mark = -1;
      if (fd == -1)
        roce_log (ROCE_LOG_WARN, "network: %s stays for gc: %s", h->owner, err->msg);
      if (fd < 0)
        return;
      reap->items = xrealloc (reap->items, (reap->n + 1) * sizeof (*reap->items));
      reap->items[reap->n++] = (struct reap_item){ .h = lease_holder_copy (h), .fd = fd };
      return;
    }
  for (size_t k = 0; k < h->n_addrs; k++)
    {
      char a[IPV4_STR_MAX];
      roce_log (ROCE_LOG_INFO, "released %s (%s)", ipv4_format (h->addrs[k].addr, a), h->addrs[k].hca);
    }
  lease_holder_drop (s, h);
}

/* Forgets container c->id in the holders that list it (ns: in that one
 * holder only, with `mark` held for it, or -1) and releases what no
 * container uses: at once when its namespace has gone, else by a reaper,
 * forked (reap_inline false) or run here.  */
static int
release_holders (const struct roce_policy *p, const struct roce_container *c,
                 const struct netns_id *ns, int mark, bool reap_inline, roce_error_t *err)
{
  const char *id = c->id;
  struct lease_store *s = NULL;
  bool changed = false;
  struct stat st;
  int ret = -1;
  struct netns_id pin_id, aside = { 0 };
  cleanup_close int pin = -1;
  cleanup_nl_sock struct nl_sock *host = NULL;
  bool pin_read = false;
  struct reap_list reap = { 0 };

  /* No store, no leases (a start refused before any): nothing to make.  */
  if (stat (p->state_dir, &st) < 0 && errno == ENOENT)
    {
      if (mark >= 0)
        close (mark);
      return 0;
    }
  if (ns)
    {
      /* A start in a namespace that got its inode moves the holder aside.  */
      aside = *ns;
      aside.ino |= NETNS_INO_GONE;
    }
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0
      || (ns ? lease_load_netns (s, ns, err) < 0 || lease_load_netns (s, &aside, err) < 0
             : lease_load_container (s, id, err) < 0))
    goto out;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      int none = -1;
      if (ns && ! netns_id_equal (&h->ns, ns) && ! netns_id_equal (&h->ns, &aside))
        continue;
      if (! lease_holder_leave (h, id))
        continue;
      changed = true;
      if (! pin_read)
        {
          pin = pod_sandbox_pin (c, &pin_id);
          pin_read = true;
        }
      /* The mark is the namespace's as it was: a holder moved aside gets
       * one of its own.  */
      leave_holder (p, s, h, &host, pin, &pin_id, ns && netns_id_equal (&h->ns, ns) ? &mark : &none,
                    &reap);
    }
  ret = changed ? lease_store_commit (s, err) : 0;
  if (ret < 0)
    {
      /* Not committed: the marks go (the holders still list the container,
       * as gc sees them).  */
      for (size_t i = 0; i < reap.n; i++)
        {
          lease_reap_unmark (s, &reap.items[i].h->ns, reap.items[i].fd);
          reap.items[i].fd = -1;
        }
      reap_list_clear (&reap);
    }
  /* A mark nothing waits on: released at once, or not ours to release.  */
  if (mark >= 0)
    {
      lease_reap_unmark (s, ns, mark);
      mark = -1;
    }
  /* The lock goes before the reaper starts: it must not hold the store.  */
  lease_store_free (s);
  s = NULL;
  netlink_close (host);
  host = NULL;
  if (reap_inline)
    for (size_t i = 0; i < reap.n; i++)
      reap_one (p, &reap.items[i]);
  else
    reap_spawn (p, &reap, c->ends_after_release);
out:
  if (mark >= 0)
    close (mark); /* its file: swept by gc */
  lease_store_free (s);
  reap_list_clear (&reap);
  return ret < 0 ? -1 : 0;
}

int
net_release (const struct roce_policy *p, const struct roce_container *c, roce_error_t *err)
{
  return release_holders (p, c, NULL, -1, false, err);
}

int
net_release_netns (const struct roce_policy *p, const struct roce_container *c,
                   const struct netns_id *ns, int mark, roce_error_t *err)
{
  return release_holders (p, c, ns, mark, true, err);
}

int
net_release_mark (const struct roce_policy *p, const struct netns_id *ns, const char *id,
                  roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  int fd;

  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0)
    return -1;
  fd = lease_reap_mark (s, ns, id, err);
  if (fd == -2)
    return roce_error_make (err, EBUSY, "the mark of %s's lease holder: free vs taken by another "
                            "process (fix: none needed: the release runs here)", id);
  return fd;
}

/* ---- operator commands ------------------------------------------------------------------- */

int
net_cmd_leases (const struct roce_policy *p, bool json, FILE *out, roce_error_t *err)
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
            json_gen_kv_string (g, "since", lease_time_format (h->since, since, sizeof (since)));
            json_gen_kv_string (g, "netns", netns_id_format (&h->ns, ns, sizeof (ns)));
            json_gen_kv_string (g, "owner", h->owner);
            /* "releasing": a process releases it once the namespace and
             * its interfaces are gone (its containers have ended: none is
             * listed, or only the one whose foreground run roce-runtime has
             * just ended, until that process commits); "in use"; "stopped":
             * no container left, gc releases it.  */
            json_gen_kv_string (g, "state", lease_reaping (s, h) ? "releasing"
                                            : strv_len (h->containers) > 0 ? "in use" : "stopped");
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
  fprintf (out, "%-10s %-15s %-8s %-20s %-18s %s\n", "HCA", "ADDRESS", "IFNAME", "SINCE", "NETNS",
           "CONTAINERS");
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        const struct lease_holder *h = s->h[i];
        cleanup_free char *users = lease_holder_users (h, lease_reaping (s, h));
        fprintf (out, "%-10s %-15s %-8s %-20s %-18s %s\n", h->addrs[k].hca,
                 ipv4_format (h->addrs[k].addr, a), h->addrs[k].ifname,
                 lease_time_format (h->since, since, sizeof (since)),
                 netns_id_format (&h->ns, ns, sizeof (ns)), users);
      }
  return 0;
}

int
net_cmd_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_netns_live struct netns_live *live = NULL;
  cleanup_nl_sock struct nl_sock *host = NULL;
  size_t released = 0, held = 0;
  struct stat st;

  if (stat (p->state_dir, &st) < 0 && errno == ENOENT)
    {
      fprintf (out, "gc: released 0 leases, 0 held\n");
      return 0;
    }
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0
      || lease_store_load_all (s, err) < 0 || netns_live_scan (&live, err) < 0)
    return -1;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      char a[IPV4_STR_MAX], since[32], ns[48];
      /* What the scan does not see the kernel may still have (a socket
       * made in the namespace and held elsewhere), and a dead namespace's
       * interfaces go a few ms after it: gone only when all three say so.  */
      if (netns_live_has (live, &h->ns) || holder_alive_by_nsid (&host, h) == 1
          || holder_links_gone (&host, h) != 1)
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
    return -1;
  fprintf (out, "gc: released %zu leases, %zu held\n", released, held);
  return 0;
}
