#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
};

void
net_state_free (struct net_state *n)
{
  if (n == NULL)
    return;
  netlink_close (n->csock);
  free (n->links);
  free (n);
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
};

static bool
alive_cb (const struct netns_id *ns, void *arg)
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
  /* Unsure means alive: a lease is never released on a guess.  */
  return a->failed || netns_live_has (a->live, ns);
}

static void
alive_clear (struct alive_ctx *a)
{
  netns_live_free (a->live);
  a->live = NULL;
}

/* ---- the plan: everything checked before the host is touched ------------------- */

struct plan_item
{
  const struct roce_selection *sel;
  char *parent;
  struct netlink_link parent_link;
  char ifname[IFNAME_SIZE];
  uint32_t addr; /* leased */
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

/* Takes the leases (or joins the namespace's network) in one transaction.  */
static int
lease_take (const struct net_run *r, struct plan *pl, roce_error_t *err)
{
  struct net_state *n = r->n;
  const char *id = r->c->id;
  cleanup_lease_store struct lease_store *s = NULL;
  struct alive_ctx alive = { 0 };
  struct lease_holder *h;
  char ns[48];
  int ret = -1;

  if (lease_store_open_wait (r->p->state_dir, r->p->lock_timeout_ms, &s, err) < 0)
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
      roce_log (ROCE_LOG_INFO, "network: joined %s, set up by %s", netns_id_format (&n->ns, ns, sizeof (ns)),
                h->owner);
      return 0;
    }

  /* A holder with our inode but another cookie had a namespace that died
   * and whose inode number was handed out again.  */
  for (size_t i = s->n; i > 0; i--)
    if (netns_id_same_inode (&s->h[i - 1]->ns, &n->ns))
      {
        roce_log (ROCE_LOG_INFO, "dropping the leases of %s: its namespace is gone", s->h[i - 1]->owner);
        lease_holder_drop (s, s->h[i - 1]);
      }

  h = lease_holder_add (s, &n->ns, id, (int64_t) time (NULL));
  h->nsid = pl->nsid;
  lease_holder_join (h, id);
  for (size_t i = 0; i < pl->n; i++)
    {
      const struct roce_selection *sel = pl->items[i].sel;
      if (lease_assign (s, h, sel->hca, pl->items[i].ifname, sel->has_ip, sel->ip, alive_cb, &alive,
                        &pl->items[i].addr, err) < 0)
        goto out;
    }
  if (lease_store_commit (s, err) < 0)
    goto out;
  n->made = true;
  ret = 0;
out:
  alive_clear (&alive);
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
  if (lease_store_open_wait (r->p->state_dir, r->p->lock_timeout_ms, &s, &err) < 0)
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

/* ---- the links ----------------------------------------------------------------------- */

static int
link_setup (const struct net_run *r, struct nl_sock *host, const struct plan_item *it, roce_error_t *err)
{
  struct net_state *n = r->n;
  const struct policy_hca *hca = it->sel->hca;
  cleanup_error roce_error_t lerr = NULL;
  struct netlink_link l;
  char a[IPV4_STR_MAX], c[CIDR_STR_MAX];

  if (netlink_macvlan_add (host, it->parent_link.ifindex, it->ifname, it->parent_link.mtu,
                           r->c->netns_fd, &lerr) < 0)
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

  if (netlink_addr_add (n->csock, l.ifindex, it->addr, hca->subnet.prefix, err) < 0)
    return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
  for (size_t k = 0; k < hca->n_routes; k++)
    if (netlink_route_add (n->csock, l.ifindex, &hca->routes[k], hca->gateway, &lerr) < 0)
      {
        cleanup_free char *what = xasprintf ("route %s via %s in the container",
                                             cidr_format (&hca->routes[k], c),
                                             ipv4_format (hca->gateway, a));
        if (roce_error_status (&lerr) == EEXIST)
          return roce_error_refuse (err, what, "absent", "already present",
                                    "list each destination once across the selected HCAs' routes");
        *err = steal_pointer (&lerr);
        return roce_error_wrap (err, "network of %s: %s", hca->name, it->ifname);
      }
  roce_log (ROCE_LOG_INFO, "network: %s %s/%u on %s (mtu %u, %zu routes via %s)", it->ifname,
            ipv4_format (it->addr, a), hca->subnet.prefix, it->parent, it->parent_link.mtu, hca->n_routes,
            hca->has_gateway ? ipv4_format (hca->gateway, c) : "-");
  return 0;
}

static void
links_undo (struct net_state *n)
{
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

  if (check_own_netns (r, err) < 0 || netlink_open (-1, &host, err) < 0
      || netlink_open (c->netns_fd, &n->csock, err) < 0
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
  if (! n->joined)
    {
      roce_crash_point ("lease");
      for (size_t i = 0; i < pl.n; i++)
        if (link_setup (r, host, &pl.items[i], err) < 0)
          {
            lease_untake (r);
            goto out;
          }
    }
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
pod_links_remove (int fd, const struct lease_holder *h)
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
unsure:
  roce_log (ROCE_LOG_DEBUG, "liveness of %s by its id: %s", h->owner, err->msg);
  return -1;
}

/* Poststop's question for a holder the container left: does the namespace
 * still live?  The kernel answers through the recorded id in the common
 * case (`runc delete`, a CRI pod's end): gone, nothing scanned.  Only a
 * namespace that outlives the container with no container of ours left in
 * it (an fd or a bind mount elsewhere holds it, or the runtime itself for a
 * moment: `runc run` runs poststop before it lets the container's mounts
 * go) is scanned for, as gc does.  */
static bool
holder_alive (struct nl_sock **host, const struct lease_holder *h, struct alive_ctx *scan)
{
  int alive = holder_alive_by_nsid (host, h);

  if (alive == 0)
    return false;
  if (strv_len (h->containers) > 0)
    return true; /* its other containers use it (or gc finds them gone) */
  return alive_cb (&h->ns, scan);
}

int
net_release (const struct roce_policy *p, const struct roce_container *c, roce_error_t *err)
{
  const struct net_run run = { .p = p, .c = c }, *r = &run;
  const char *id = c->id;
  cleanup_lease_store struct lease_store *s = NULL;
  struct alive_ctx alive_scan = { 0 };
  bool changed = false;
  struct stat st;
  int ret = -1;
  struct netns_id pin_id;
  cleanup_close int pin = -1;
  cleanup_nl_sock struct nl_sock *host = NULL;
  bool pin_read = false;

  /* No store, no leases (a start refused before any): nothing to make.  */
  if (stat (r->p->state_dir, &st) < 0 && errno == ENOENT)
    return 0;
  if (lease_store_open_wait (r->p->state_dir, r->p->lock_timeout_ms, &s, err) < 0)
    return -1;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      if (! lease_holder_leave (h, id))
        continue;
      changed = true;
      if (! pin_read)
        {
          pin = pod_sandbox_pin (c, &pin_id);
          pin_read = true;
        }
      if (pin >= 0 && netns_id_equal (&pin_id, &h->ns))
        pod_links_remove (pin, h);
      else
        {
          if (holder_alive (&host, h, &alive_scan))
            {
              char ns[48];
              roce_log (ROCE_LOG_INFO, "network: %s stays, %s still exists", h->owner,
                        netns_id_format (&h->ns, ns, sizeof (ns)));
              continue;
            }
        }
      for (size_t k = 0; k < h->n_addrs; k++)
        {
          char a[IPV4_STR_MAX];
          roce_log (ROCE_LOG_INFO, "released %s (%s)", ipv4_format (h->addrs[k].addr, a),
                    h->addrs[k].hca);
        }
      lease_holder_drop (s, h);
    }
  ret = changed ? lease_store_commit (s, err) : 0;
  alive_clear (&alive_scan);
  return ret < 0 ? -1 : 0;
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
      const char *buf;
      size_t len;
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
            json_gen_kv_string (g, "since", lease_time_format (h->since, since, sizeof (since)));
            json_gen_kv_string (g, "netns", netns_id_format (&h->ns, ns, sizeof (ns)));
            json_gen_kv_string (g, "owner", h->owner);
            json_gen_string (g, "containers");
            json_gen_array_open (g);
            for (char **c = h->containers; c && *c; c++)
              json_gen_string (g, *c);
            json_gen_array_close (g);
            json_gen_map_close (g);
          }
      json_gen_array_close (g);
      json_gen_map_close (g);
      if (json_gen_result (g, &buf, &len, err) < 0)
        return -1;
      fprintf (out, "%.*s\n", (int) len, buf);
      return 0;
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
        cleanup_free char *users = lease_holder_users (h);
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
  size_t released = 0, held = 0;
  struct stat st;

  if (stat (p->state_dir, &st) < 0 && errno == ENOENT)
    {
      fprintf (out, "gc: released 0 leases, 0 held\n");
      return 0;
    }
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0 || netns_live_scan (&live, err) < 0)
    return -1;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      char a[IPV4_STR_MAX], since[32], ns[48];
      if (netns_live_has (live, &h->ns))
        {
          held += h->n_addrs;
          continue;
        }
      for (size_t k = 0; k < h->n_addrs; k++)
        {
          cleanup_free char *users = lease_holder_users (h);
          fprintf (out, "released %s (%s, %s) of %s, held since %s: %s is gone\n",
                   ipv4_format (h->addrs[k].addr, a), h->addrs[k].hca, h->addrs[k].ifname, users,
                   lease_time_format (h->since, since, sizeof (since)),
                   netns_id_format (&h->ns, ns, sizeof (ns)));
          roce_log (ROCE_LOG_INFO, "gc: released %s (%s) of %s", a, h->addrs[k].hca, h->owner);
        }
      released += h->n_addrs;
      lease_holder_drop (s, h);
    }
  if (released && lease_store_commit (s, err) < 0)
    return -1;
  fprintf (out, "gc: released %zu leases, %zu held\n", released, held);
  return 0;
}
