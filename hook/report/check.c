/* SPDX-License-Identifier: Apache-2.0 */
/* `check`'s report built: per policy HCA each QoS finding, the probes'
 * findings, GIDs, devices and the RDMA netns mode.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/rdmacm.h"
#include "ipam/lease.h"
#include "lib/utils.h"
#include "net/gid.h"
#include "net/net.h"
#include "report/check.h"
#include "sys/sysfs.h"
#include "topo/topo.h"

/* ---- the report ---------------------------------------------------------------- */

static struct finding *
push (struct findings *f, enum finding_status st, bool blocking, const char *check,
      const struct check_hca *hr)
{
  if (hr == NULL)
    return findings_push (f, st, blocking, check, NULL, NULL);
  return findings_push (f, st, blocking, check, hr->h->name, hr->netdev ? hr->netdev : "-");
}

static void
stall_row (struct check_hca *hr)
{
  const struct qos_probe *pr = &hr->probe;
  struct finding *x;

  switch (pr->stall.state)
    {
      case PROBE_OK:
        x = push (&hr->f, pr->stall_ms ? FINDING_OK : FINDING_WARN, false, "pfc-stall", hr);
        if (pr->stall_ms)
          x->found = xasprintf ("%u ms", pr->stall_ms);
        else
          {
            x->found = xstrdup ("0 (disabled): a PFC storm can freeze the fabric");
            x->fix = xasprintf ("ethtool --set-tunable %s pfc-prevention-tout auto", pr->netdev);
          }
        break;
      case PROBE_UNSUPPORTED:
        x = push (&hr->f, FINDING_UNKNOWN, false, "pfc-stall", hr);
        x->found = xasprintf ("not supported by this netdev (%s)",
                              strerrorname_np (pr->stall.errnum) ?: "?");
        break;
      case PROBE_ERROR:
      default:
        x = push (&hr->f, FINDING_UNKNOWN, false, "pfc-stall", hr);
        x->found = xasprintf ("unreadable: %s", pr->stall.detail ? pr->stall.detail : "?");
        break;
    }
  x->what = xasprintf ("PFC stall prevention of %s (%s)", pr->netdev, hr->h->name);
  x->expected = xstrdup ("on (a timeout stops a PFC storm)");
  x->source = xstrdup (pr->stall.source);
}

/* Whether the host's libibverbs, with its providers, lists the HCA: the
 * start path reads the uverbs devices from sysfs only (rdma.h).  */
static void
verbs_row (const struct roce_policy *p, struct check_hca *hr)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *names = NULL;
  struct finding *x;
  bool listed = false;

  if (rdma_ibverbs_lists (p, hr->h->name, &listed, &names, &err) < 0)
    {
      x = push (&hr->f, FINDING_UNKNOWN, false, "verbs", hr);
      x->found = xasprintf ("unreadable: %s", err->msg);
    }
  else if (listed)
    {
      x = push (&hr->f, FINDING_OK, false, "verbs", hr);
      x->found = xstrdup ("listed");
    }
  else
    {
      x = push (&hr->f, FINDING_WARN, false, "verbs", hr);
      x->found = xasprintf ("not listed (it lists %s)", names);
      x->fix = xstrdup ("install ibverbs-providers (the HCA's userspace driver), load ib_uverbs");
    }
  x->what = xasprintf ("libibverbs device %s", hr->h->name);
  x->expected = xstrdup ("listed, with a userspace provider");
  x->source = xasprintf ("ibv_get_device_list, SYSFS_PATH=%s", p->sysfs_root);
}

/* What the seed's container needs beyond QoS: GPUDirect RDMA and the
 * rdma_cm defaults, per HCA.  */
static void
readiness_rows (const struct roce_policy *p, const struct gpudirect_probe *gdr,
                struct check_hca *hr)
{
  cleanup_error roce_error_t err = NULL;
  struct rdmacm_probe cm;

  gpudirect_finding (gdr, hr->h->name, hr->netdev ? hr->netdev : "-", &hr->f);
  if (rdmacm_probe_run (p, hr->h->name, &cm, &err) < 0)
    return; /* no ports: the GID table says so */
  rdmacm_findings (p, &cm, hr->h->name, hr->netdev ? hr->netdev : "-", &hr->f);
  rdmacm_probe_clear (&cm);
}

unsigned
check_gids_per_container (const struct check_hca *hr)
{
  return gid_entries_per_container (hr->h->n_nets ? hr->h->n_nets : 1, hr->link_local);
}

unsigned
check_gid_room (const struct check_hca *hr, const struct gid_port_use *u)
{
  return (u->size > u->used ? u->size - u->used : 0) / check_gids_per_container (hr);
}

const char *
check_rail_families (const struct check_hca *hr)
{
  if (hr->h->n_nets > 1)
    return "dual-stack";
  return hr->h->net[0].subnet.addr.family == AF_INET6 ? "ipv6" : "ipv4";
}

/* Each net's pool against the leases held in it, from a snapshot of the
 * store (no lock: check never waits for a start).  */
static void
pool_use (const struct roce_policy *p, struct check_report *r)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;

  if (lease_store_snapshot (p->state_dir, &s, &err) < 0)
    {
      for (size_t i = 0; i < r->n; i++)
        r->hcas[i].held_error = xstrdup (err->msg);
      return;
    }
  for (size_t i = 0; i < r->n; i++)
    for (size_t k = 0; k < r->hcas[i].h->n_nets; k++)
      {
        const struct policy_net *net = &r->hcas[i].h->net[k];
        r->hcas[i].held[k]
            = lease_store_held (s, r->hcas[i].h->name, &net->pool_first, &net->pool_last);
      }
}

/* A rail with IPv6 on a kernel without it (booted with ipv6.disable=1):
 * every start asking for it is refused, so the node is not ready and its
 * roce.io/ipv6 label says false.  */
static void
ipv6_row (const struct roce_policy *p, struct check_hca *hr)
{
  struct finding *x;

  if (policy_hca_net (hr->h, AF_INET6) == NULL || access ("/proc/sys/net/ipv6", F_OK) == 0)
    return;
  hr->no_ipv6 = true;
  x = push (&hr->f, FINDING_FAIL, true, "ipv6", hr);
  x->what = xasprintf ("IPv6 in the kernel (%s's rail is %s)", hr->h->name,
                       hr->h->n_nets > 1 ? "dual-stack" : "IPv6");
  x->expected = xstrdup ("on");
  x->found = xstrdup ("off (no /proc/sys/net/ipv6)");
  x->fix = xasprintf ("boot without ipv6.disable=1, or take the IPv6 side out of hcas.%s in %s",
                      hr->h->name, p->path);
  x->source = xstrdup ("/proc/sys/net/ipv6");
}

static void
probe_hca (const struct roce_policy *p, const struct gpudirect_probe *gdr, struct check_hca *hr)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_error roce_error_t gerr = NULL;

  if (sysfs_hca_netdev (p, hr->h, &hr->netdev, &err) < 0
      || qos_probe_run (p, hr->netdev, &hr->probe, &err) < 0)
    {
      struct finding *x = push (&hr->f, FINDING_FAIL, true, "netdev", hr);
      char *cut = strstr (err->msg, " (fix: ");
      if (cut)
        *cut = '\0'; /* the row has its own fix */
      x->what = xasprintf ("netdev of %s", hr->h->name);
      x->expected = xstrdup ("the HCA's netdev (policy netdev, or sysfs device/net)");
      x->found = xstrdup (err->msg);
      x->fix = xasprintf ("set hcas.%s.netdev in %s", hr->h->name, p->path);
      x->source = xasprintf ("%s/class/infiniband/%s", p->sysfs_root, hr->h->name);
    }
  else
    {
      struct qos_subject s = { .hca = hr->h->name, .probe = &hr->probe };
      hr->probed = true;
      qos_verdict (p, &s, 1, NULL, &hr->f);
      stall_row (hr);
    }
  ipv6_row (p, hr);
  verbs_row (p, hr);
  readiness_rows (p, gdr, hr);
  if (gid_list_roce_v2 (p->sysfs_root, hr->h->name, &hr->gids, &hr->n_gids, &gerr) < 0)
    hr->gid_error = xstrdup (gerr->msg);
  else
    {
      cleanup_error roce_error_t uerr = NULL;
      (void) gid_table_use (p->sysfs_root, hr->h->name, &hr->gid_use, &hr->n_gid_use, &uerr);
    }
}

static void
netns_row (struct check_report *r)
{
  struct finding *x = &r->netns_row;
  memset (x, 0, sizeof (*x));
  x->check = "rdma-netns";
  x->what = xstrdup ("RDMA netns mode");
  x->expected = xstrdup ("shared (containers share each HCA through macvlans)");
  x->source = xstrdup (r->netns.source ? r->netns.source : "RDMA netlink, ib_core netns_mode");
  switch (r->netns.mode)
    {
      case RDMA_NETNS_SHARED:
        x->status = FINDING_OK;
        x->found = xstrdup ("shared");
        break;
      case RDMA_NETNS_EXCLUSIVE:
        x->status = FINDING_WARN;
        x->found = xstrdup ("exclusive: an HCA is visible in one network namespace only");
        x->fix = xstrdup ("rdma system set netns shared (with no other network namespace)");
        break;
      case RDMA_NETNS_UNKNOWN:
        x->status = FINDING_UNKNOWN;
        x->found = xstrdup ("unknown: neither RDMA netlink nor ib_core's netns_mode answers");
        break;
    }
}

/* Which runtime roce-runtime would chain to: for a create (no fallback),
 * and for state/kill/delete when none of the policy's is there.  */
static void
runtime_probe (const struct roce_policy *p, struct check_report *r)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_error roce_error_t oerr = NULL;
  if (runtime_find (p->runtimes, false, &r->runtime, &r->runtime_how, &err) < 0)
    {
      r->runtime_error = xstrdup (err->msg);
      (void) runtime_find (p->runtimes, true, &r->runtime_other, NULL, &oerr);
    }
}

static void
finding_free (struct finding *x)
{
  struct findings one = { .v = xmalloc0 (sizeof (*x)), .n = 1 };
  one.v[0] = *x;
  findings_clear (&one);
  memset (x, 0, sizeof (*x));
}

void
check_report_clear (struct check_report *r)
{
  for (size_t i = 0; i < r->n; i++)
    {
      struct check_hca *hr = &r->hcas[i];
      free (hr->netdev);
      qos_probe_clear (&hr->probe);
      findings_clear (&hr->f);
      gid_entries_free (hr->gids, hr->n_gids);
      gid_port_use_free (hr->gid_use, hr->n_gid_use);
      free (hr->gid_error);
      free (hr->held_error);
    }
  free (r->hcas);
  free (r->runtime);
  free (r->runtime_other);
  free (r->runtime_error);
  finding_free (&r->netns_row);
  rdma_netns_clear (&r->netns);
  gpudirect_probe_clear (&r->gdr);
  topo_view_free (r->topo);
  r->topo = NULL;
  findings_clear (&r->nri);
}

static void
tally (struct check_report *r, const struct finding *x)
{
  if (x->blocking)
    r->blocking++;
  else if (x->status == FINDING_WARN || x->status == FINDING_FAIL)
    r->warnings++; /* a FAIL that blocks nothing: a switch's under qos.switch warn */
  else if (x->status == FINDING_UNKNOWN)
    r->unknown++;
}

int
check_report_build (const struct roce_policy *p, const char *only, struct check_report *r,
                    roce_error_t *err)
{
  if (only && policy_find_hca (p, only) == NULL)
    {
      cleanup_free char *names = policy_hca_names (p);
      return roce_error_make (err, EINVAL, "--hca '%s': not an HCA of %s (it lists %s)", only,
                              p->path, names);
    }
  memset (r, 0, sizeof (*r));
  r->p = p;
  r->hcas = xmalloc0 ((p->n_hcas + 1) * sizeof (*r->hcas));
  rdma_netns_probe (p->sysfs_root, &r->netns);
  gpudirect_probe_run (p->sysfs_root, NULL, &r->gdr);
  r->topo = topo_view_read (p);
  netns_row (r);
  tally (r, &r->netns_row);
  runtime_probe (p, r);
  check_nri_rows (p, &r->nri);
  for (size_t k = 0; k < r->nri.n; k++)
    tally (r, &r->nri.v[k]);
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      if (only && strcmp (only, p->hcas[i].name) != 0)
        continue;
      r->hcas[r->n].h = &p->hcas[i];
      r->hcas[r->n].link_local = p->fabric.ipv6_link_local;
      probe_hca (p, &r->gdr, &r->hcas[r->n]);
      for (size_t k = 0; k < r->hcas[r->n].f.n; k++)
        tally (r, &r->hcas[r->n].f.v[k]);
      r->n++;
    }
  pool_use (p, r);
  return 0;
}

int
check_report_status (const struct check_report *r)
{
  return r->blocking ? 1 : 0;
}

/* ---- check --probe ----------------------------------------------------------------- */

static void
probe_row (const struct roce_policy *p, struct check_hca *hr, unsigned timeout_ms)
{
  const struct policy_hca *h = hr->h;
  cleanup_error roce_error_t err = NULL;
  const struct roce_addr *peer = policy_hca_probe_peer (h);
  int family = peer ? peer->family : AF_INET;
  char src_s[ADDR_STR_MAX], dst_s[ADDR_STR_MAX], hop_s[ADDR_STR_MAX];
  struct net_probe pr = { .dst = peer ? *peer : (struct roce_addr){ 0 }, .timeout_ms = timeout_ms };
  unsigned mtu = hr->probe.mtu_value, over = pmtu_overhead (family);
  struct finding *x;

  addr_format (&pr.dst, dst_s);
  if (peer == NULL)
    {
      x = push (&hr->f, FINDING_UNKNOWN, false, "path-mtu", hr);
      x->found = xstrdup ("no peer to probe");
      x->fix = xasprintf ("set hcas.%s.probe (an %s host on the same rail) or hcas.%s.gateway "
                          "in %s",
                          h->name, policy_hca_net (h, AF_INET) ? "IPv4" : "IPv6", h->name, p->path);
      x->what = xasprintf ("path MTU from %s (%s)", hr->netdev, h->name);
    }
  else if (net_probe_rail (p, h, &pr, &err) < 0)
    {
      /* The rail a container would get could not be made: its refusal
       * (the pool full, the address in use) is the finding.  */
      char *cut = strstr (err->msg, " (fix: ");
      x = push (&hr->f, FINDING_UNKNOWN, false, "path-mtu", hr);
      if (cut)
        {
          x->fix = xstrndup (cut + 7, strlen (cut + 7) - (cut[strlen (cut) - 1] == ')'));
          *cut = '\0';
        }
      x->found = xasprintf ("not probed: no rail for a container: %s", err->msg);
      x->what = xasprintf ("path MTU from a macvlan on %s (%s) to %s", hr->netdev, h->name, dst_s);
    }
  else
    {
      const struct pmtu_result *res = &pr.res;
      mtu = pr.mtu;
      switch (res->outcome)
        {
          case PMTU_OK:
            x = push (&hr->f, FINDING_OK, false, "path-mtu", hr);
            x->found = xasprintf ("MTU %u end to end (%u bytes echoed back whole)", mtu, res->got);
            break;
          case PMTU_CUT:
            x = push (&hr->f, FINDING_FAIL, false, "path-mtu", hr);
            x->found = pmtu_found (res, family, mtu, dst_s);
            x->fix = xasprintf ("raise the MTU of %s's next hop towards %s to %u",
                                addr_format (&res->hop, hop_s), dst_s, mtu);
            break;
          case PMTU_SHORT:
            x = push (&hr->f, FINDING_FAIL, false, "path-mtu", hr);
            x->found = pmtu_found (res, family, mtu, dst_s);
            break;
          case PMTU_SILENT:
            x = push (&hr->f, FINDING_FAIL, false, "path-mtu", hr);
            x->found = pmtu_found (res, family, mtu, dst_s);
            x->fix = xasprintf ("raise the switch ports' MTU on the way to %s to at least %u (the "
                                "frame: MTU + 18)",
                                dst_s, mtu + 18);
            break;
          case PMTU_NO_ANSWER:
            x = push (&hr->f, FINDING_UNKNOWN, false, "path-mtu", hr);
            x->found
                = xasprintf ("no answer from %s at any size (ICMP blocked, or no host)", dst_s);
            x->fix = xasprintf ("set hcas.%s.probe to a host on the same rail that answers ping",
                                h->name);
            break;
          case PMTU_ERROR:
          default:
            x = push (&hr->f, FINDING_UNKNOWN, false, "path-mtu", hr);
            x->found = xasprintf ("not probed: %s", res->detail);
            break;
        }
      x->what = xasprintf ("path MTU from %s (a macvlan on %s) to %s", addr_format (&pr.src, src_s),
                           hr->netdev, dst_s);
    }
  x->blocking = false;
  x->expected = xasprintf ("MTU %u end to end (%s of %u bytes answered whole)", mtu,
                           family == AF_INET6 ? "unfragmented echo" : "DF echo",
                           mtu > over ? mtu - over : 0);
  x->source = xstrdup (family == AF_INET6
                           ? "ICMPv6 echo, unfragmented (IPV6_DONTFRAG, IPV6_PMTUDISC_PROBE), "
                             "from a macvlan with a pool address in a network namespace of the "
                             "probe's own"
                           : "ICMP echo, DF (IP_PMTUDISC_PROBE), from a macvlan with a pool "
                             "address in a network namespace of the probe's own");
}

void
check_report_probe (struct check_report *r, unsigned timeout_ms)
{
  for (size_t i = 0; i < r->n; i++)
    {
      struct check_hca *hr = &r->hcas[i];
      if (! hr->probed || hr->probe.mtu.state != PROBE_OK)
        continue;
      probe_row (r->p, hr, timeout_ms);
      tally (r, &hr->f.v[hr->f.n - 1]);
    }
}
