/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of policy (Criterion).  */
#include <sys/stat.h>

#include "lib/utils.h"
#include "spec/policy.h"
#include "unit.h"

/* The policy exactly as roce-hook.json(5)'s EXAMPLE shows it.  */
static const char *spec_policy
    = "{\"state_dir\":\"/var/lib/roce-hook\",\"sysfs_root\":\"/sys\",\"log_file\":\"\","
      "\"ifname_prefix\":\"roce\",\"memlock\":\"unlimited\","
      "\"qos\":{\"mode\":\"enforce\",\"pfc_priority\":3,\"dscp\":26,\"ecn\":\"require\",\"min_"
      "mtu\":9000},"
      "\"hcas\":{\"mlx5_0\":{\"netdev\":\"ens1f0np0\",\"subnet\":\"192.168.100.0/24\","
      "\"pool\":\"192.168.100.100-192.168.100.199\",\"gateway\":\"192.168.100.1\","
      "\"routes\":[\"192.168.0.0/16\"]},"
      "\"mlx5_1\":{\"subnet\":\"192.168.101.0/24\",\"pool\":\"192.168.101.100-192.168.101.199\"}}}";

Test (policy, parses_the_spec_example)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  const struct policy_hca *h;
  cleanup_free char *names = NULL;
  cr_assert_eq (policy_parse (spec_policy, "t.json", &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (p->state_dir, "/var/lib/roce-hook");
  cr_assert_null (p->log_file);
  cr_assert (p->memlock_unlimited);
  cr_assert_eq (p->qos.mode, QOS_MODE_ENFORCE);
  cr_assert_eq (p->qos.pfc_priority, 3);
  cr_assert_eq (p->qos.dscp, 26);
  cr_assert_eq (p->qos.ecn, QOS_ECN_REQUIRE);
  cr_assert_eq (p->qos.min_mtu, 9000);
  cr_assert_eq (p->n_hcas, 2);
  h = policy_find_hca (p, "mlx5_0");
  cr_assert_str_eq (h->netdev, "ens1f0np0");
  cr_assert_eq (h->n_nets, 1);
  cr_assert_eq (h->net[0].subnet.prefix, 24);
  cr_assert (h->net[0].pool_first.v == 0xc0a86464u);
  cr_assert (h->net[0].pool_last.v == 0xc0a864c7u);
  cr_assert (h->net[0].has_gateway);
  cr_assert_eq (h->net[0].n_routes, 1);
  cr_assert_eq (h->net[0].routes[0].prefix, 16);
  h = policy_find_hca (p, "mlx5_1");
  cr_assert_null (h->netdev);
  cr_assert_not (h->net[0].has_gateway);
  cr_assert_null (policy_find_hca (p, "mlx5_2"));
  names = policy_hca_names (p);
  cr_assert_str_eq (names, "mlx5_0, mlx5_1");
}

Test (policy, defaults_and_memlock_forms)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  const char *in = "{\"memlock\":1048576,\"hcas\":{\"a\":{\"subnet\":\"198.18.0.0/24\","
                   "\"pool\":\"198.18.0.10-198.18.0.20\"}}}";
  cr_assert_eq (policy_parse (in, "t", &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_not (p->memlock_unlimited);
  cr_assert_eq (p->memlock, 1048576);
  cr_assert_str_eq (p->sysfs_root, "/sys");
  cr_assert_str_eq (p->ifname_prefix, "roce");
  cr_assert_eq (p->qos.mode, QOS_MODE_ENFORCE);
}

#define HCA(body) "{\"hcas\":{\"mlx5_0\":{" body "}}}"
#define GOOD "\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\""

Test (policy, errors_name_the_key)
{
  struct
  {
    const char *in, *msg;
  } cases[] = {
    { "[]", "expected an object" },
    { "{\"hcas\":{},\"colour\":1}", "policy t: colour: unknown key" },
    { "{\"hcas\":{},\"qos\":{\"speed\":1}}", "qos.speed: unknown key" },
    { HCA (GOOD ",\"mtu\":9000"), "hcas.mlx5_0.mtu: unknown key" },
    { "{}", "hcas: missing" },
    { "{\"hcas\":[]}", "hcas: expected an object, found an array" },
    { "{\"hcas\":{},\"state_dir\":5}", "state_dir: expected a string, found a number" },
    { "{\"hcas\":{},\"state_dir\":\"rel\"}", "state_dir: 'rel' is not an absolute path" },
    { "{\"hcas\":{},\"qos\":{\"mode\":\"strict\"}}",
      "qos.mode: 'strict' is not one of 'enforce', 'warn', 'off'" },
    { "{\"hcas\":{},\"qos\":{\"ecn\":true}}", "qos.ecn: expected a string" },
    { "{\"hcas\":{},\"qos\":{\"pfc_priority\":8}}", "qos.pfc_priority: 8 is out of range 0..7" },
    { "{\"hcas\":{},\"qos\":{\"dscp\":64}}", "qos.dscp: 64 is out of range 0..63" },
    { "{\"hcas\":{},\"qos\":{\"dscp\":\"26\"}}", "qos.dscp: expected an integer, found a string" },
    { "{\"hcas\":{},\"qos\":{\"min_mtu\":1e4}}", "qos.min_mtu: expected an integer" },
    { "{\"hcas\":{},\"memlock\":\"lots\"}", "memlock: expected 'unlimited' or a byte count" },
    { "{\"hcas\":{},\"memlock\":-5}", "memlock: expected" },
    { "{\"hcas\":{},\"ifname_prefix\":\"toolongprefix1\"}", "ifname_prefix:" },
    { "{\"hcas\":{},\"ifname_prefix\":\"a/b\"}", "ifname_prefix:" },
    { HCA ("\"pool\":\"198.18.0.10-198.18.0.20\""), "hcas.mlx5_0.subnet: missing" },
    { HCA ("\"subnet\":\"198.18.0.0/24\""), "hcas.mlx5_0.pool: missing" },
    { HCA ("\"subnet\":\"198.18.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\""),
      "hcas.mlx5_0.subnet: '198.18.0/24' is not a CIDR" },
    { HCA ("\"subnet\":\"198.18.0.1/24\",\"pool\":\"198.18.0.10-198.18.0.20\""),
      "hcas.mlx5_0.subnet: '198.18.0.1/24' has host bits set" },
    { HCA ("\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10\""),
      "hcas.mlx5_0.pool: '198.18.0.10' is not a range" },
    { HCA ("\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-x\""), "hcas.mlx5_0.pool:" },
    { HCA ("\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.20-198.18.0.10\""),
      "first address is after the last" },
    { HCA ("\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.1.20\""),
      "hcas.mlx5_0.pool: 198.18.0.10-198.18.1.20 is not inside subnet 198.18.0.0/24" },
    { HCA ("\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.0-198.18.0.20\""),
      "network or broadcast" },
    { HCA (GOOD ",\"gateway\":\"198.18.0.15\""),
      "hcas.mlx5_0.gateway: 198.18.0.15 lies inside the pool" },
    { HCA (GOOD ",\"gateway\":\"198.18.9.1\""),
      "hcas.mlx5_0.gateway: 198.18.9.1 is not inside subnet" },
    { HCA (GOOD ",\"routes\":[\"10.0.0.0/8\"]"),
      "hcas.mlx5_0.routes: routes need hcas.mlx5_0.gateway" },
    { HCA (GOOD ",\"gateway\":\"198.18.0.1\",\"routes\":[\"10.0.0.1/8\"]"),
      "hcas.mlx5_0.routes[0]: '10.0.0.1/8' has host bits set" },
    { HCA (GOOD ",\"gateway\":\"198.18.0.1\",\"routes\":[5]"),
      "hcas.mlx5_0.routes[0]: expected a string" },
    { HCA (GOOD ",\"gateway\":\"198.18.0.1\",\"routes\":[\"0.0.0.0/0\"]"),
      "hcas.mlx5_0.routes[0]: '0.0.0.0/0' would be a default route" },
    { HCA (GOOD ",\"netdev\":\"a/b\""), "hcas.mlx5_0.netdev: 'a/b' is not a valid interface name" },
    { HCA (GOOD ",\"netdev\":\"sixteen_chars_xx\""), "hcas.mlx5_0.netdev:" },
    { "{\"hcas\":{\"../x\":{" GOOD "}}}", "hcas.../x: not a valid HCA name" },
    { "{\"hcas\":{\"a\":{" GOOD
      "},\"b\":{\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.20-198.18.0.30\"}}}",
      "hcas.b.pool: overlaps hcas.a.pool" },
    { "{\"hcas\":{\"a\":{" GOOD ",\"netdev\":\"e1\"},\"b\":{\"subnet\":\"198.18.1.0/24\","
      "\"pool\":\"198.18.1.20-198.18.1.30\",\"netdev\":\"e1\"}}}",
      "hcas.b.netdev: 'e1' is also hcas.a.netdev" },
    /* IPv6 rails: one family per key and per net; a pool's prefix /120 or
     * shorter; the second family in the keys ending in 6.  */
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-198.18.0.20\""),
      "hcas.mlx5_0.pool: 'fd00:10::100-198.18.0.20' mixes IPv4 and IPv6 (one family per key)" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"198.18.0.10-198.18.0.20\""),
      "hcas.mlx5_0.pool: '198.18.0.10-198.18.0.20' is IPv4, where hcas.mlx5_0.subnet is IPv6" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::/124\""),
      "hcas.mlx5_0.pool: 'fd00:10::/124': a pool's prefix is /120 or shorter" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:11::100-fd00:11::1ff\""),
      "hcas.mlx5_0.pool: fd00:11::100-fd00:11::1ff is not inside subnet fd00:10::/64" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::-fd00:10::ff\""),
      "hcas.mlx5_0.pool: fd00:10::-fd00:10::ff holds the Subnet-Router anycast address" },
    { HCA ("\"subnet\":\"fd00:10::/124\",\"pool\":\"fd00:10::1-fd00:10::2\""),
      "hcas.mlx5_0.subnet: prefix /124 is out of range /8../120" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-fd00:10::1ff\","
           "\"gateway\":\"198.18.0.1\""),
      "hcas.mlx5_0.gateway: '198.18.0.1' is IPv4, where hcas.mlx5_0.subnet is IPv6" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-fd00:10::1ff\","
           "\"gateway\":\"fd00:10::1\",\"routes\":[\"198.19.0.0/16\"]"),
      "hcas.mlx5_0.routes[0]: '198.19.0.0/16' is IPv4, where hcas.mlx5_0.subnet is IPv6" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-fd00:10::1ff\","
           "\"gateway\":\"fd00:10::1\",\"routes\":[\"::/0\"]"),
      "hcas.mlx5_0.routes[0]: '::/0' would be a default route" },
    { HCA (GOOD ",\"subnet6\":\"198.19.0.0/24\",\"pool6\":\"198.19.0.10-198.19.0.20\""),
      "hcas.mlx5_0.subnet6: '198.19.0.0/24' is IPv4 (subnet6 is the IPv6 subnet of a dual-stack "
      "rail)" },
    { HCA (GOOD ",\"pool6\":\"fd00:10::100-fd00:10::1ff\""),
      "hcas.mlx5_0.subnet6: missing (hcas.mlx5_0.pool6, gateway6 and routes6 need it)" },
    { HCA (GOOD ",\"subnet6\":\"fd00:10::/64\",\"pool6\":\"fd00:10::100-fd00:10::1ff\","
                "\"routes6\":[\"fd00:11::/64\"]"),
      "hcas.mlx5_0.routes6: routes need hcas.mlx5_0.gateway6" },
    { HCA ("\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-fd00:10::1ff\","
           "\"subnet6\":\"fd00:11::/64\",\"pool6\":\"fd00:11::100-fd00:11::1ff\""),
      "hcas.mlx5_0.subnet6: a second IPv6 subnet beside an IPv6 hcas.mlx5_0.subnet" },
    { "{\"hcas\":{\"a\":{\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::/112\"},"
      "\"b\":{" GOOD ",\"subnet6\":\"fd00:10::/64\",\"pool6\":\"fd00:10::ff00-fd00:10::ffff\"}}}",
      "hcas.b.pool6: overlaps hcas.a.pool" },
    { "{\"hcas\":{},\"hcas\":{}}", "duplicate key `hcas`" },
    { "{\"hcas\":{},\"runtime\":\"\"}", "policy t: runtime: empty" },
    { "{\"hcas\":{},\"runtime\":5}",
      "runtime: expected a string or an array of strings, found a number" },
    { "{\"hcas\":{},\"runtime\":[]}", "runtime: expected 1..16 candidates, found 0" },
    { "{\"hcas\":{},\"runtime\":[\"/usr/bin/runc\",7]}",
      "runtime[1]: expected a string, found a number" },
    { "{\"hcas\":{},\"runtime\":[\"runc\",\"bin/runc\"]}",
      "runtime[1]: 'bin/runc' is neither an absolute path nor a bare name" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct roce_policy *p = NULL;
      assert_err_contains (policy_parse (cases[i].in, "t", &p, &err), err, cases[i].msg);
      cr_assert_null (p);
    }
}

/* IPv6 and dual-stack rails: a prefix pool skips the subnet-router
 * anycast address; the second net of a dual-stack rail; NCCL's one range
 * over rails of one family, and none over an IPv4 rail beside an IPv6 one. */
Test (policy, ipv6_and_dual_stack_rails)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  const char *in
      = "{\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::/112\","
        "\"gateway\":\"fd00:10::1:1\",\"routes\":[\"fd00:20::/48\"]},"
        "\"mlx5_1\":{\"subnet\":\"198.18.11.0/24\",\"pool\":\"198.18.11.100-198.18.11.199\","
        "\"subnet6\":\"fd00:11::/64\",\"pool6\":\"fd00:11::100-fd00:11::1ff\","
        "\"gateway6\":\"fd00:11::1\",\"routes6\":[\"fd00:21::/64\"]},"
        "\"mlx5_2\":{\"subnet\":\"198.18.12.0/24\",\"pool\":\"198.18.12.100-198.18.12.199\","
        "\"subnet6\":\"fd00:12::/64\",\"pool6\":\"fd00:12::100-fd00:12::1ff\"}}}";
  char a[ADDR_STR_MAX], c[CIDR_STR_MAX];
  const struct policy_hca *h0, *h1, *h2;
  struct roce_cidr r;

  cr_assert_eq (policy_parse (in, "t", &p, &err), 0, "%s", err ? err->msg : "");
  h0 = policy_find_hca (p, "mlx5_0");
  h1 = policy_find_hca (p, "mlx5_1");
  h2 = policy_find_hca (p, "mlx5_2");
  cr_assert_eq (h0->n_nets, 1);
  cr_assert_str_eq (addr_format (&h0->net[0].pool_first, a), "fd00:10::1");
  cr_assert_str_eq (addr_format (&h0->net[0].pool_last, a), "fd00:10::ffff");
  cr_assert_eq (h0->net[0].n_routes, 1);
  cr_assert_eq (h1->n_nets, 2);
  cr_assert_eq (h1->net[0].subnet.addr.family, AF_INET);
  cr_assert_eq (policy_hca_net (h1, AF_INET6), &h1->net[1]);
  cr_assert_str_eq (addr_format (&h1->net[1].gateway, a), "fd00:11::1");
  cr_assert_null (policy_hca_net (h0, AF_INET));
  {
    const struct policy_hca *v6[] = { h0 }, *dual[] = { h1, h2 }, *mixed[] = { h0, h1 };
    cr_assert (policy_nccl_range (v6, 1, &r));
    cr_assert_str_eq (cidr_format (&r, c), "fd00:10::/64");
    cr_assert (policy_nccl_range (dual, 2, &r));
    cr_assert_str_eq (cidr_format (&r, c), "198.18.8.0/21", "the first family, IPv4");
    /* An IPv6 rail beside a dual-stack one: the family both have.  */
    cr_assert (policy_nccl_range (mixed, 2, &r));
    cr_assert_str_eq (cidr_format (&r, c), "fd00:10::/31");
  }
  policy_free (p);
  p = NULL;
  cr_assert_eq (policy_parse ("{\"hcas\":{\"a\":{\"subnet\":\"fd00:10::/64\",\"pool\":"
                              "\"fd00:10::/112\"},\"b\":{\"subnet\":\"198.18.0.0/24\",\"pool\":"
                              "\"198.18.0.10-198.18.0.20\"}}}",
                              "t", &p, &err),
                0);
  {
    const struct policy_hca *apart[] = { &p->hcas[0], &p->hcas[1] };
    cr_assert_not (policy_nccl_range (apart, 2, &r), "an IPv6 rail beside an IPv4 one");
  }
}

/* `runtime`: one name (as before) or a list of candidates, kept in order. */
Test (policy, runtime_is_a_name_or_a_list_of_candidates)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *one = NULL;
  cleanup_policy struct roce_policy *list = NULL;
  cleanup_policy struct roce_policy *none = NULL;
  cr_assert_eq (policy_parse ("{\"hcas\":{},\"runtime\":\"/usr/bin/runc\"}", "t", &one, &err), 0);
  cr_assert_eq (strv_len (one->runtimes), 1);
  cr_assert_str_eq (one->runtimes[0], "/usr/bin/runc");
  cr_assert_eq (
      policy_parse (
          "{\"hcas\":{},\"runtime\":[\"/usr/local/nvidia/toolkit/nvidia-container-runtime\","
          "\"nvidia-container-runtime\",\"runc\"]}",
          "t", &list, &err),
      0, "%s", err ? err->msg : "");
  cr_assert_eq (strv_len (list->runtimes), 3);
  cr_assert_str_eq (list->runtimes[0], "/usr/local/nvidia/toolkit/nvidia-container-runtime");
  cr_assert_str_eq (list->runtimes[2], "runc");
  cr_assert_eq (policy_parse ("{\"hcas\":{}}", "t", &none, &err), 0);
  cr_assert_null (none->runtimes);
}

Test (policy, load_names_a_missing_file)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  assert_err_contains (policy_load ("/nonexistent/roce.json", &p, &err), err,
                       "open `/nonexistent/roce.json`: No such file or directory");
}

Test (policy, default_path_order)
{
  setenv ("ROCE_HOOK_CONFIG", "/env.json", 1);
  cr_assert_str_eq (policy_default_path ("/cli.json"), "/cli.json");
  cr_assert_str_eq (policy_default_path (NULL), "/env.json");
  unsetenv ("ROCE_HOOK_CONFIG");
  cr_assert_str_eq (policy_default_path (NULL), "/etc/roce-hook/config.json");
}

/* sshd's StrictModes: a policy (or its directory) that others may write is
 * refused, naming the path and the fix.  */
Test (policy, a_policy_others_can_write_is_refused)
{
  char d[] = "/tmp/roce-pol-XXXXXX";
  cleanup_free char *f = NULL;
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;

  cr_assert_not_null (mkdtemp (d));
  f = xasprintf ("%s/config.json", d);
  tree_write (d, "config.json",
              "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.10.0/"
              "24\",\"pool\":\"198.18.10.10-198.18.10.20\"}}}");
  cr_assert_eq (chmod (f, 0666), 0);
  assert_err_contains (policy_load (f, &p, &err), err,
                       "owned by root and writable by its owner only vs owner uid");
  cr_assert_not_null (strstr (err->msg, "mode 0666"), "%s", err->msg);
  cr_assert_not_null (strstr (err->msg, "fix: chown root"), "%s", err->msg);
  roce_error_release (&err);
  cr_assert_eq (chmod (f, 0644), 0);
  cr_assert_eq (chmod (d, 0777), 0);
  assert_err_contains (policy_load (f, &p, &err), err, "the policy's directory");
  roce_error_release (&err);
  cr_assert_eq (chmod (d, 01777), 0); /* sticky, like /tmp: fine */
  cr_assert_eq (policy_load (f, &p, &err), 0, "%s", err ? err->msg : "");
  policy_free (p);
  tree_remove (d);
}
