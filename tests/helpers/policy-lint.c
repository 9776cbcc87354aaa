/* SPDX-License-Identifier: Apache-2.0 */
/* Parses a policy file with the engine's own parser and prints the error, if
 * any: tests use it to prove that the policies we ship (config/, the
 * Kubernetes ConfigMap) are ones the hook accepts.  With --effective it
 * prints every key as the parser left it, one "key value" line each, in
 * the words roce-hook.json(5) gives defaults in ("none", "unset", a key
 * whose value applies), so that the docs suite holds the manual's defaults
 * to the parser's.  */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/ipaddr.h"
#include "lib/utils.h"
#include "spec/policy.h"

static void
kv (const char *key, const char *value)
{
  printf ("%s %s\n", key, value);
}

static void
kv_u (const char *key, uint64_t value)
{
  printf ("%s %" PRIu64 "\n", key, value);
}

static void
kv_list (const char *key, char *const *list, const char *none)
{
  if (list == NULL)
    {
      kv (key, none);
      return;
    }
  printf ("%s [", key);
  for (size_t i = 0; list[i]; i++)
    printf ("%s\"%s\"", i ? "," : "", list[i]);
  printf ("]\n");
}

static void
kv_devconf (const char *key, int v)
{
  if (v == FABRIC_AUTO)
    kv (key, "auto");
  else
    kv_u (key, (uint64_t) v);
}

static void
kv_bytes (const char *key, bool unlimited, uint64_t v)
{
  if (unlimited)
    kv (key, "unlimited");
  else
    kv_u (key, v);
}

static void
print_effective (const struct roce_policy *p)
{
  char a[ADDR_STR_MAX], mac[8];

  kv ("state_dir", p->state_dir);
  kv ("sysfs_root", p->sysfs_root);
  kv ("procfs_root", p->procfs_root);
  kv ("configfs_root", p->configfs_root);
  kv ("log_file", p->log_file ? p->log_file : "\"\"");
  kv ("ifname_prefix", p->ifname_prefix);
  kv_bytes ("memlock", p->memlock_unlimited, p->memlock);
  kv_bytes ("stack", p->stack_unlimited, p->stack);
  kv_u ("shm_size", p->shm_size);
  kv_list ("runtime", p->runtimes, "none");
  kv_list ("default_tenants", p->default_tenants, "none");
  kv_u ("lock_timeout_ms", p->lock_timeout_ms);
  kv ("cluster", p->cluster ? "set" : "none");

  kv ("qos.mode", qos_mode_name (p->qos.mode));
  kv_u ("qos.pfc_priority", p->qos.pfc_priority);
  kv_u ("qos.dscp", p->qos.dscp);
  kv ("qos.ecn", qos_ecn_name (p->qos.ecn));
  kv_u ("qos.min_mtu", p->qos.min_mtu);
  if (! p->qos.has_stall)
    kv ("qos.pfc_stall_prevention", "unset");
  else if (p->qos.stall_ms == 0xffff)
    kv ("qos.pfc_stall_prevention", "auto");
  else
    kv_u ("qos.pfc_stall_prevention", p->qos.stall_ms);
  kv ("qos.pfc_other_priorities", p->qos.pfc_others_off ? "off" : "keep");
  kv ("qos.switch", qos_mode_name (p->qos.sw));

  for (size_t i = 0; i < p->n_hcas; i++)
    {
      const struct policy_hca *h = &p->hcas[i];
      kv ("hca", h->name);
      kv ("netdev", h->netdev ? h->netdev : "sysfs");
      for (size_t n = 0; n < POLICY_NETS; n++)
        {
          const struct policy_net *net = n < h->n_nets ? &h->net[n] : NULL;
          const char *sfx = n ? "6" : "";
          char key[16], c[CIDR_STR_MAX];
          /* The second net's keys: "none" on a rail of one family.  */
          if (n > 0)
            {
              snprintf (key, sizeof (key), "subnet%s", sfx);
              kv (key, net ? cidr_format (&net->subnet, c) : "none");
              snprintf (key, sizeof (key), "pool%s", sfx);
              if (net)
                {
                  cleanup_free char *pool = policy_net_pool_text (net);
                  kv (key, pool);
                }
              else
                kv (key, "none");
            }
          snprintf (key, sizeof (key), "gateway%s", sfx);
          kv (key, net && net->has_gateway ? addr_format (&net->gateway, a) : "none");
          if (net == NULL)
            {
              kv ("routes6", "none");
              continue;
            }
          printf ("routes%s [", sfx);
          for (size_t k = 0; k < net->n_routes; k++)
            printf ("%s\"%s\"", k ? "," : "", cidr_format (&net->routes[k], c));
          printf ("]\n");
        }
      kv_list ("tenants", h->tenants, "default_tenants");
      kv ("probe", h->has_probe ? addr_format (&h->probe, a) : "gateway");
    }

  kv_u ("fabric.route_table", p->fabric.route_table);
  if (p->fabric.has_mac_prefix)
    snprintf (mac, sizeof (mac), "%02x:%02x", p->fabric.mac_prefix[0], p->fabric.mac_prefix[1]);
  kv ("fabric.mac_prefix", p->fabric.has_mac_prefix ? mac : "\"\"");
  kv_devconf ("fabric.arp_notify", p->fabric.arp_notify);
  kv_devconf ("fabric.arp_ignore", p->fabric.arp_ignore);
  kv_devconf ("fabric.arp_announce", p->fabric.arp_announce);
  kv_devconf ("fabric.rp_filter", p->fabric.rp_filter);
  kv ("fabric.ipv6_link_local", p->fabric.ipv6_link_local ? "true" : "false");
  kv_u ("fabric.dad_probe_ms", p->fabric.dad_probe_ms);
  kv_u ("fabric.gid_wait_ms", p->fabric.gid_wait_ms);
  kv ("fabric.gid_check", qos_mode_name (p->fabric.gid_check));
  kv_u ("fabric.mtu_probe_ms", p->fabric.mtu_probe_ms);

  if (p->cluster)
    {
      const struct policy_cluster *c = p->cluster;
      kv ("cluster.node", c->node);
      kv_list ("cluster.etcd.endpoints", c->etcd.endpoints, "none");
      kv ("cluster.etcd.prefix", c->etcd.prefix);
      kv ("cluster.etcd.cacert", c->etcd.cacert ? c->etcd.cacert : "none");
      kv ("cluster.etcd.cert", c->etcd.cert ? c->etcd.cert : "none");
      kv ("cluster.etcd.key", c->etcd.key ? c->etcd.key : "none");
      kv_u ("cluster.etcd.timeout_ms", c->etcd.timeout_ms);
      kv_u ("cluster.block", c->block);
      kv_u ("cluster.reserve", c->reserve);
      kv_u ("cluster.release_after_s", c->release_after_s);
      kv_u ("cluster.max_blocks", c->max_blocks);
      kv_u ("cluster.max_static_blocks", c->max_static_blocks);
      kv_u ("cluster.liveness_ttl_s", c->liveness_ttl_s);
    }
}

int
main (int argc, char **argv)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  bool effective = argc == 3 && strcmp (argv[1], "--effective") == 0;
  if (argc != 2 && ! effective)
    {
      fprintf (stderr, "usage: policy-lint [--effective] FILE\n");
      return 2;
    }
  if (policy_load (argv[argc - 1], &p, &err) < 0)
    {
      fprintf (stderr, "%s\n", err->msg);
      return 1;
    }
  if (effective)
    print_effective (p);
  else
    printf ("ok: %zu HCAs, qos %s\n", p->n_hcas, qos_mode_name (p->qos.mode));
  return 0;
}
