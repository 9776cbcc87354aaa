/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of rdma (Criterion).  */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>

#include "devices/rdma.h"
#include "lib/utils.h"
#include "unit.h"

Test (rdma, parses_device_numbers)
{
  unsigned a, b;
  cr_assert_eq (rdma_parse_devno ("231:192", &a, &b), 0);
  cr_assert_eq (a, 231);
  cr_assert_eq (b, 192);
  cr_assert_eq (rdma_parse_devno ("10:58", &a, &b), 0);
  cr_assert_eq (rdma_parse_devno ("4095:1048575", &a, &b), 0);
  const char *bad[]
      = { "", "231", "231:", ":1", "231:192x", "-1:2", "4096:1", "1:1048576", "a:b", "1:2:3" };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    cr_assert_lt (rdma_parse_devno (bad[i], &a, &b), 0, "%s", bad[i]);
}

/* Where the kernel answers RDMA netlink, libibverbs lists from it and never
 * reads a fake sysfs.  */
static void
need_sysfs_listing (void)
{
  int fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 20 /* NETLINK_RDMA */);
  if (fd >= 0)
    {
      close (fd);
      cr_skip_test ("this kernel has RDMA netlink: libibverbs would not read a fake sysfs");
    }
}

Test (rdma, node_name)
{
  struct rdma_node n = { .path = "/dev/infiniband/uverbs3" };
  cr_assert_str_eq (rdma_node_name (&n), "uverbs3");
}

/* A fake sysfs that libibverbs accepts, except that /dev/infiniband/uverbs0
 * is not on this machine: libibverbs drops the device, and the HCA is then
 * "not listed".  (The listed case needs a private /dev: integration tests.)  */
Test (rdma, an_hca_whose_node_is_gone_is_not_listed)
{
  char dir[] = "/tmp/roce-rdma-XXXXXX";
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  struct roce_request r = { 0 };
  struct rdma_node *nodes = NULL;
  size_t n = 0;
  need_sysfs_listing ();
  cr_assert_not_null (mkdtemp (dir));
  cleanup_free char *mk = xasprintf (
      "set -e; cd %s; mkdir -p class/infiniband_verbs/uverbs77 class/infiniband/mlx5_0/device;"
      "echo 6 > class/infiniband_verbs/abi_version; echo mlx5_0 > "
      "class/infiniband_verbs/uverbs77/ibdev;"
      "echo 231:269 > class/infiniband_verbs/uverbs77/dev; echo 1 > "
      "class/infiniband_verbs/uverbs77/abi_version;"
      "echo pci:v000015B3d0000101Dsv000015B3sd00000043bc02sc00i00 > "
      "class/infiniband/mlx5_0/device/modalias",
      dir);
  cr_assert_eq (system (mk), 0);
  cleanup_free char *in = xasprintf ("{\"sysfs_root\":\"%s\",\"hcas\":{\"mlx5_0\":{\"subnet\":"
                                     "\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                                     dir);
  cr_assert_eq (policy_parse (in, "/etc/p.json", &p, &err), 0);
  cr_assert_eq (annot_parse (p, "mlx5_0", NULL, &r, &err), 0);
  if (access ("/dev/infiniband/uverbs77", F_OK) == 0)
    cr_skip_test ("this host has /dev/infiniband/uverbs77");
  assert_err_contains (rdma_nodes_for_request (p, &r, &nodes, &n, &err), err,
                       "HCA mlx5_0: an RDMA device with a uverbs node (the host has none) vs not "
                       "listed (fix: check the HCA's driver, `ibv_devices` and "
                       "/dev/infiniband/uverbs* on the host, or remove mlx5_0 from /etc/p.json)");
  annot_request_clear (&r);
  cleanup_free char *rm = xasprintf ("rm -rf %s", dir);
  cr_assert_eq (system (rm), 0);
}

Test (rdma, no_uverbs_class_is_refused)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  struct roce_request r = { 0 };
  struct rdma_node *nodes = NULL;
  size_t n = 0;
  need_sysfs_listing ();
  cr_assert_eq (policy_parse ("{\"sysfs_root\":\"/nonexistent\",\"hcas\":{\"mlx5_0\":{\"subnet\":"
                              "\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                              "/etc/p.json", &p, &err),
                0);
  cr_assert_eq (annot_parse (p, "mlx5_0", NULL, &r, &err), 0);
  assert_err_contains (rdma_nodes_for_request (p, &r, &nodes, &n, &err), err,
                       "RDMA devices: the kernel's uverbs devices (ABI 3..6) vs none "
                       "(/nonexistent/class/infiniband_verbs: No such file or directory) "
                       "(fix: load the HCA's driver and ib_uverbs on the host)");
  annot_request_clear (&r);
}
