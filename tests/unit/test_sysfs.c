/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of sysfs (Criterion).  */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "sys/sysfs.h"
#include "unit.h"

static struct roce_policy *
policy_for (const char *netdev_json)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  cleanup_free char *in = xasprintf ("{\"sysfs_root\":\"%s\",\"hcas\":{\"mlx5_0\":{%s\"subnet\":"
                                     "\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                                     tree_root, netdev_json);
  cr_assert_eq (policy_parse (in, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

TestSuite (sysfs, .init = tree_setup, .fini = tree_teardown);

Test (sysfs, policy_netdev_wins)
{
  cleanup_policy struct roce_policy *p = policy_for ("\"netdev\":\"ens1f0np0\",");
  cleanup_free char *nd = NULL;
  cleanup_error roce_error_t err = NULL;
  tree_mk ("class/infiniband/mlx5_0/device/net/other/x", NULL);
  cr_assert_eq (sysfs_hca_netdev (p, &p->hcas[0], &nd, &err), 0);
  cr_assert_str_eq (nd, "ens1f0np0");
}

Test (sysfs, device_net_then_gid_ndev)
{
  cleanup_policy struct roce_policy *p = policy_for ("");
  cleanup_free char *nd = NULL;
  cleanup_error roce_error_t err = NULL;
  tree_mk ("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens9\n");
  cr_assert_eq (sysfs_hca_netdev (p, &p->hcas[0], &nd, &err), 0);
  cr_assert_str_eq (nd, "ens9");
  free (nd);
  nd = NULL;
  tree_mk ("class/infiniband/mlx5_0/device/net/ens1f0np0/x", NULL);
  cr_assert_eq (sysfs_hca_netdev (p, &p->hcas[0], &nd, &err), 0);
  cr_assert_str_eq (nd, "ens1f0np0");
}

Test (sysfs, none_found_names_the_fix)
{
  cleanup_policy struct roce_policy *p = policy_for ("");
  char *nd = NULL;
  cleanup_error roce_error_t err = NULL;
  assert_err_contains (
      sysfs_hca_netdev (p, &p->hcas[0], &nd, &err), err,
      "netdev of HCA mlx5_0: found in sysfs (device/net or gid_attrs/ndevs/0) vs none "
      "(fix: set hcas.mlx5_0.netdev in p.json)");
}
