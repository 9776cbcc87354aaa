/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of authz (Criterion).  */
#include "lib/utils.h"
#include "spec/authz.h"
#include "unit.h"

static struct roce_policy *pol;

static void
setup (void)
{
  cleanup_error roce_error_t err = NULL;
  const char *in
      = "{\"default_tenants\":[\"ml-infra\"],\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"192.168.100.0/24\",\"pool\":\"192.168.100.100-192.168.100.199\","
        "\"tenants\":[\"team-a\",\"team-b\"]},"
        "\"mlx5_1\":{\"subnet\":\"192.168.101.0/24\",\"pool\":\"192.168.101.100-192.168.101.199\"},"
        "\"mlx5_2\":{\"subnet\":\"192.168.102.0/24\",\"pool\":\"192.168.102.100-192.168.102.199\","
        "\"tenants\":[\"*\"]}}}";
  cr_assert_eq (policy_parse (in, "/etc/roce-hook/config.json", &pol, &err), 0, "%s",
                err ? err->msg : "");
}

static void
teardown (void)
{
  policy_free (pol);
}

TestSuite (authz, .init = setup, .fini = teardown);

static int
check (const char *hcas, const struct roce_kv *kv, size_t n, roce_error_t *err)
{
  struct roce_request r = { 0 };
  int ret;
  cr_assert_eq (annot_parse (pol, hcas, NULL, &r, err), 0);
  ret = authz_check (pol, &r, kv, n, err);
  annot_request_clear (&r);
  return ret;
}

Test (authz, per_hca_list_and_node_default)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_kv a[] = { { "io.kubernetes.pod.namespace", "team-a" }, { "roce.io/hca", "x" } };
  cr_assert_eq (check ("mlx5_0,mlx5_2", a, 2, &err), 0);
  assert_err_contains (
      check ("mlx5_1", a, 2, &err), err,
      "use of HCA mlx5_1 (policy rule default_tenants): a namespace in [ml-infra] vs "
      "namespace 'team-a' (fix: ask the node admin to add it to default_tenants in "
      "/etc/roce-hook/config.json)");
  roce_error_release (&err);
  struct roce_kv infra[] = { { "io.kubernetes.cri.sandbox-namespace", "ml-infra" } };
  cr_assert_eq (check ("mlx5_1", infra, 1, &err), 0);
  assert_err_contains (check ("mlx5_0", infra, 1, &err), err,
                       "use of HCA mlx5_0 (policy rule hcas.mlx5_0.tenants): a namespace in "
                       "[team-a, team-b] vs namespace 'ml-infra'");
}

Test (authz, outside_kubernetes_matches_only_star)
{
  cleanup_error roce_error_t err = NULL;
  cr_assert_eq (check ("mlx5_2", NULL, 0, &err), 0);
  assert_err_contains (check ("mlx5_0", NULL, 0, &err), err, "vs a container outside Kubernetes");
}

Test (authz, disagreeing_runtime_keys_are_refused)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_kv kv[] = { { "io.kubernetes.pod.namespace", "team-a" },
                          { "io.kubernetes.cri-o.Namespace", "team-c" } };
  assert_err_contains (check ("mlx5_2", kv, 2, &err), err,
                       "tenant of the container: one Kubernetes namespace");
}

Test (authz, tenants_cannot_choose_netdev_pool_or_qos)
{
  const char *keys[] = { "roce.io/netdev", "roce.io/pool", "roce.io/qos", "roce.io/HCA" };
  for (size_t i = 0; i < 4; i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct roce_kv kv[] = { { (char *) keys[i], "off" } };
      cleanup_free char *want = xasprintf (
          "annotation %s: only roce.io/hca and roce.io/ip vs an unknown roce.io/ key", keys[i]);
      assert_err_contains (check ("mlx5_2", kv, 1, &err), err, want);
    }
}

Test (authz, policy_tenant_lists_are_validated)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  assert_err_contains (
      policy_parse ("{\"default_tenants\":[\"Team_A\"],\"hcas\":{}}", "t", &p, &err), err,
      "default_tenants: item 0 is not a Kubernetes namespace name");
  roce_error_release (&err);
  assert_err_contains (
      policy_parse ("{\"hcas\":{\"a\":{\"subnet\":\"198.18.0.0/"
                    "24\",\"pool\":\"198.18.0.10-198.18.0.20\",\"tenants\":\"x\"}}}",
                    "t", &p, &err),
      err, "hcas.a.tenants: expected an array");
}
