/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of hook/topo (Criterion): the distance classes, the choice of
 * roce.io/hca=auto, its refusals, and `roce-hook topo`, on fake hosts whose
 * PCI trees are shaped like published servers':
 *
 * - dgx: an NVIDIA DGX H100.  Its eight compute ConnectX-7s and the GPU each
 *   serves are the DGX H100/H200 User Guide's table "Network Modules"
 *   (section 1.2.3: OSFP port, CX device, CPU, GPU, ibp<bus>s0, mlx5_N):
 *   GPU0 mlx5_0 ibp24s0 (bus 0x18), GPU1 mlx5_3 ibp64s0 (0x40), GPU2 mlx5_4
 *   ibp79s0 (0x4f), GPU3 mlx5_5 ibp94s0 (0x5e) on CPU 0; GPU4 mlx5_6
 *   ibp154s0 (0x9a), GPU5 mlx5_9 ibp192s0 (0xc0), GPU6 mlx5_10 ibp206s0
 *   (0xce), GPU7 mlx5_11 ibp220s0 (0xdc) on CPU 1.  The GPUs' buses (0x1b,
 *   0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf: each its NIC's + 3) are the
 *   ones DGX H100 nvidia-smi listings show.  Each GPU and its NIC sit under
 *   one PCIe switch on a root port of their own, the shape whose
 *   `nvidia-smi topo -m` HGX H100 owners publish (NVIDIA/nccl#1264 on a
 *   Supermicro SYS-821GE-TNHR, deepseek-ai/DeepEP#60, sgl-project/sglang
 *   #19687): PIX on the diagonal, NODE to the other NICs of the socket, SYS
 *   across.
 * - pair: two GPUs per NIC port.  The `lspci -tv` of an Ice Lake server in
 *   NVIDIA/nccl#1405: host bridge 0000:97, root port 02.0, one PCIe switch
 *   (98:00.0 up, 99:0x.0 down) holding a dual-port ConnectX-6 Dx (9a:00.0,
 *   9a:00.1 and two VFs, 9a:00.2-3) and four A100 PCIe (9b-9e).  The other
 *   socket's host bridge 0000:30 is cut off in the post; it is modelled as
 *   the same tree (buses 31-37).
 * - flat: a two-socket PCIe server without switches: the 8x RTX 4090
 *   server of NVIDIA/go-gpuallocator#17 (CPU affinity 0-55,112-167 and
 *   56-111,168-223), a dual-port NIC on the host bridge of GPU6, which its
 *   `nvidia-smi topo -m` shows PHB to both ports and every other GPU SYS to
 *   them, GPU-GPU SYS even within a socket: the firmware gave the devices
 *   no NUMA node (numa_node -1).  flat_numa is the same host with the nodes
 *   given (GPUs 0-3 node 0, 4-7 and the NIC node 1), where the same
 *   socket's host bridges are NODE.  Each GPU has a host bridge of its own,
 *   as on Sapphire Rapids, whose root ports each are one.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipam/ipam_int.h"
#include "ipam/lease.h"
#include "lib/json.h"
#include "lib/utils.h"
#include "spec/annot.h"
#include "topo/topo.h"
#include "topo/topo_int.h"
#include "unit.h"

TestSuite (topo, .init = tree_setup, .fini = tree_teardown);

/* ---- the fake host -------------------------------------------------------- */

static void
link_at (const char *rel, const char *target)
{
  cleanup_free char *path = xasprintf ("%s/%s", tree_root, rel);
  tree_mk (rel, NULL);
  cr_assert_eq (symlink (target, path), 0, "symlink %s: %s", path, strerror (errno));
}

static const char *
last (const char *path)
{
  return strrchr (path, '/') + 1;
}

/* A PCI function at sys/devices/<path>, listed in sys/bus/pci/devices.  */
static void
pci_fn (const char *path, int numa)
{
  cleanup_free char *rel = xasprintf ("sys/devices/%s/numa_node", path);
  cleanup_free char *val = xasprintf ("%d\n", numa);
  cleanup_free char *link = xasprintf ("sys/bus/pci/devices/%s", last (path));
  cleanup_free char *target = xasprintf ("../../../devices/%s", path);
  tree_mk (rel, val);
  link_at (link, target);
}

static void
hca_at (const char *name, const char *path, int numa)
{
  cleanup_free char *link = xasprintf ("sys/class/infiniband/%s/device", name);
  cleanup_free char *target = xasprintf ("../../../devices/%s", path);
  if (numa != -2)
    pci_fn (path, numa);
  link_at (link, target);
}

/* A VF at vfpath (a sibling of its PF, as mlx5's are) named name.  */
static void
vf_at (const char *name, const char *vfpath, const char *pf, int numa)
{
  cleanup_free char *link = xasprintf ("sys/devices/%s/physfn", vfpath);
  cleanup_free char *target = xasprintf ("../%s", pf);
  hca_at (name, vfpath, numa);
  link_at (link, target);
}

static void
gpu_at (const char *path, int numa, int minor)
{
  cleanup_free char *rel = xasprintf ("proc/driver/nvidia/gpus/%s/information", last (path));
  cleanup_free char *info = xasprintf ("Model: \t\t NVIDIA H100 80GB HBM3\n"
                                       "IRQ:   \t\t 17\n"
                                       "GPU UUID: \t GPU-%08x-aaaa-bbbb-cccc-ddddeeeeffff\n"
                                       "Video BIOS: \t 96.00.74.00.0d\n"
                                       "Bus Type: \t PCIe\n"
                                       "DMA Size: \t 52 bits\n"
                                       "DMA Mask: \t 0xfffffffffffff\n"
                                       "Bus Location: \t %s\n"
                                       "Device Minor: \t %d\n"
                                       "GPU Excluded:\t No\n",
                                       (unsigned) minor, last (path), minor);
  pci_fn (path, numa);
  tree_mk (rel, info);
}

static void
node_cpus (int node, const char *cpulist)
{
  cleanup_free char *rel = xasprintf ("sys/devices/system/node/node%d/cpulist", node);
  cleanup_free char *val = xasprintf ("%s\n", cpulist);
  tree_mk (rel, val);
}

static struct roce_policy *
policy_of (const char *const *hcas)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = xasprintf ("{\"sysfs_root\":\"%s/sys\",\"procfs_root\":\"%s/proc\","
                                       "\"hcas\":{",
                                       tree_root, tree_root);
  struct roce_policy *p = NULL;
  for (size_t i = 0; hcas[i]; i++)
    str_list_add (
        &text, i ? "," : "",
        "\"%s\":{\"subnet\":\"198.18.%zu.0/24\",\"pool\":\"198.18.%zu.10-198.18.%zu.20\"}", hcas[i],
        i, i, i);
  str_list_add (&text, "", "}}");
  cr_assert_eq (policy_parse (text, "/etc/roce-hook/config.json", &p, &err), 0, "%s",
                err ? err->msg : "");
  return p;
}

/* The DGX H100: pair k is the GPU on bus gpu[k] and the NIC on bus nic[k]
 * under one switch: host bridge nic-3, root port nic-3:01.0, upstream port
 * nic-2:00.0, downstream ports nic-1:00.0 (the NIC) and nic-1:03.0 (the
 * GPU).  Minors count down (GPU0 is /dev/nvidia7): a minor maps through the
 * information file, not by index.  */
static const char *const dgx_hcas[]
    = { "mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11", NULL };
static const unsigned dgx_nic[] = { 0x18, 0x40, 0x4f, 0x5e, 0x9a, 0xc0, 0xce, 0xdc };

static char *
dgx_path (unsigned nic, bool gpu)
{
  unsigned hb = nic - 3, up = nic - 2, dn = nic - 1;
  return gpu ? xasprintf (
             "pci0000:%02x/0000:%02x:01.0/0000:%02x:00.0/0000:%02x:03.0/0000:%02x:00.0", hb, hb, up,
             dn, nic + 3)
             : xasprintf (
                 "pci0000:%02x/0000:%02x:01.0/0000:%02x:00.0/0000:%02x:00.0/0000:%02x:00.0", hb, hb,
                 up, dn, nic);
}

static struct roce_policy *
dgx_host (void)
{
  for (int k = 0; k < 8; k++)
    {
      cleanup_free char *g = dgx_path (dgx_nic[k], true);
      cleanup_free char *n = dgx_path (dgx_nic[k], false);
      gpu_at (g, k / 4, 7 - k);
      hca_at (dgx_hcas[k], n, k / 4);
    }
  node_cpus (0, "0-55,112-167");
  node_cpus (1, "56-111,168-223");
  return policy_of (dgx_hcas);
}

/* nccl#1405's socket (host bridge hb, buses from b): the NIC's two PFs
 * and two VFs, four GPUs, one switch.  */
static void
pair_socket (unsigned hb, unsigned b, int numa, int first_minor)
{
  for (unsigned f = 0; f < 2; f++)
    {
      cleanup_free char *n
          = xasprintf ("pci0000:%02x/0000:%02x:02.0/0000:%02x:00.0/0000:%02x:00.0/0000:%02x:00.%u",
                       hb, hb, b, b + 1, b + 2, f);
      pci_fn (n, numa);
    }
  for (unsigned k = 0; k < 4; k++)
    {
      cleanup_free char *g
          = xasprintf ("pci0000:%02x/0000:%02x:02.0/0000:%02x:00.0/0000:%02x:%02x.0/0000:%02x:00.0",
                       hb, hb, b, b + 1, k + 1, b + 3 + k);
      gpu_at (g, numa, first_minor + (int) k);
    }
}

static const char *const pair_hcas[] = { "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", NULL };

static struct roce_policy *
pair_host (void)
{
  pair_socket (0x30, 0x31, 0, 0);
  pair_socket (0x97, 0x98, 1, 4);
  hca_at ("mlx5_0", "pci0000:30/0000:30:02.0/0000:31:00.0/0000:32:00.0/0000:33:00.0", -2);
  hca_at ("mlx5_1", "pci0000:30/0000:30:02.0/0000:31:00.0/0000:32:00.0/0000:33:00.1", -2);
  hca_at ("mlx5_2", "pci0000:97/0000:97:02.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0", -2);
  hca_at ("mlx5_3", "pci0000:97/0000:97:02.0/0000:98:00.0/0000:99:00.0/0000:9a:00.1", -2);
  node_cpus (0, "0-31,64-95");
  node_cpus (1, "32-63,96-127");
  return policy_of (pair_hcas);
}

/* go-gpuallocator#17's host: GPU k on host bridge hb[k] (root port 01.0),
 * the NIC's two ports on GPU6's (root port 03.0).  numa: -1 as published,
 * else by socket.  */
static const unsigned flat_hb[] = { 0x15, 0x37, 0x49, 0x5b, 0x97, 0xa7, 0xb7, 0xc7 };
static const char *const flat_hcas[] = { "mlx5_0", "mlx5_1", NULL };

static struct roce_policy *
flat_host (bool numa)
{
  for (int k = 0; k < 8; k++)
    {
      cleanup_free char *g = xasprintf ("pci0000:%02x/0000:%02x:01.0/0000:%02x:00.0", flat_hb[k],
                                        flat_hb[k], flat_hb[k] + 1);
      gpu_at (g, numa ? k / 4 : -1, k);
    }
  hca_at ("mlx5_0", "pci0000:b7/0000:b7:03.0/0000:b9:00.0", numa ? 1 : -1);
  hca_at ("mlx5_1", "pci0000:b7/0000:b7:03.0/0000:b9:00.1", numa ? 1 : -1);
  node_cpus (0, "0-55,112-167");
  node_cpus (1, "56-111,168-223");
  return policy_of (flat_hcas);
}

/* ---- helpers ------------------------------------------------------------- */

/* The class between host GPU g and policy HCA h.  */
static const char *
class_of (const struct roce_policy *p, size_t g, size_t h)
{
  cleanup_error roce_error_t err = NULL;
  struct topo_table t;
  const char *c;
  cr_assert_eq (topo_table_init (&t, p, &err), 0);
  cr_assert_eq (topo_table_list (&t, &err), 0);
  cr_assert_eq (topo_table_locate (&t, g, "test", &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (topo_table_hca (&t, h, &err), 0, "%s", err ? err->msg : "");
  c = topo_class_name (topo_distance (&t.gpus[g].pos, &t.hcas[h].pos));
  topo_table_clear (&t);
  return c;
}

struct run
{
  const char *visible;
  const struct oci_device *devices;
  size_t n_devices;
  const char *cpus;
  const bool *allowed;
};

static int
choose (const struct roce_policy *p, struct run r, struct topo_choice *out, roce_error_t *err)
{
  cleanup_free char *env0 = r.visible ? xasprintf (TOPO_ENV_GPUS "=%s", r.visible) : NULL;
  char *env[] = { "PATH=/bin", env0, NULL };
  struct oci_config spec = { .env = env,
                             .devices = (struct oci_device *) r.devices,
                             .n_devices = r.n_devices,
                             .cpus = (char *) r.cpus };
  struct topo_container c = {
    .what = "annotation roce.io/hca", .key = "roce.io/hca", .config = &spec, .allowed = r.allowed
  };
  return topo_choose (p, &c, out, err);
}

/* The choice's HCAs, "mlx5_0,mlx5_3", or the refusal's text.  */
static char *
chosen (const struct roce_policy *p, struct run r)
{
  cleanup_error roce_error_t err = NULL;
  struct topo_choice ch = { 0 };
  char *names;
  if (choose (p, r, &ch, &err) < 0)
    {
      cleanup_free char *shown = str_escape (err->msg); /* as printed */
      return xasprintf ("refused: %s", shown);
    }
  names = topo_choice_names (&ch);
  topo_choice_clear (&ch);
  return names;
}

#define assert_chosen(p, r, want)                                                                  \
  do                                                                                               \
    {                                                                                              \
      cleanup_free char *got_ = chosen ((p), (r));                                                 \
      cr_assert_str_eq (got_, (want));                                                             \
    }                                                                                              \
  while (0)

#define assert_refused(p, r, want)                                                                 \
  do                                                                                               \
    {                                                                                              \
      cleanup_free char *got_ = chosen ((p), (r));                                                 \
      cr_assert_str_eq (got_, "refused: " want);                                                   \
    }                                                                                              \
  while (0)

/* ---- the classes --------------------------------------------------------- */

Test (topo, dgx_matrix_as_published)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  /* PIX on the diagonal, NODE within the socket, SYS across.  */
  for (size_t g = 0; g < 8; g++)
    for (size_t h = 0; h < 8; h++)
      {
        const char *want = g == h ? "PIX" : g / 4 == h / 4 ? "NODE" : "SYS";
        cr_assert_str_eq (class_of (p, g, h), want, "GPU%zu %s", g, dgx_hcas[h]);
      }
}

Test (topo, pair_switch_shared_by_four_gpus_and_two_ports)
{
  cleanup_policy struct roce_policy *p = pair_host ();
  for (size_t g = 0; g < 8; g++)
    for (size_t h = 0; h < 4; h++)
      cr_assert_str_eq (class_of (p, g, h), g / 4 == h / 2 ? "PIX" : "SYS", "GPU%zu mlx5_%zu", g,
                        h);
}

Test (topo, flat_phb_and_sys_as_published)
{
  cleanup_policy struct roce_policy *p = flat_host (false);
  for (size_t g = 0; g < 8; g++)
    for (size_t h = 0; h < 2; h++)
      cr_assert_str_eq (class_of (p, g, h), g == 6 ? "PHB" : "SYS", "GPU%zu", g);
}

Test (topo, flat_with_numa_nodes_is_node_within_a_socket)
{
  cleanup_policy struct roce_policy *p = flat_host (true);
  for (size_t g = 0; g < 8; g++)
    cr_assert_str_eq (class_of (p, g, 0), g == 6 ? "PHB" : g >= 4 ? "NODE" : "SYS", "GPU%zu", g);
}

Test (topo, pxb_below_two_switches)
{
  cleanup_error roce_error_t err = NULL;
  struct topo_pos gpu, nic, far;
  /* A DGX A100's shape: a switch with a switch below it per GPU pair.  */
  cr_assert_eq (topo_pos_parse ("pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/"
                                "0000:03:00.0/0000:04:10.0/0000:07:00.0",
                                &gpu, &err),
                0);
  cr_assert_eq (
      topo_pos_parse ("pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:08.0/0000:0c:00.0", &nic, &err),
      0);
  cr_assert_eq (topo_pos_parse ("pci0000:00/0000:00:03.1/0000:21:00.0", &far, &err), 0);
  cr_assert_eq (gpu.n_switches, 2);
  cr_assert_str_eq (gpu.switches[0], "0000:01:00.0");
  cr_assert_str_eq (gpu.switches[1], "0000:03:00.0");
  cr_assert_str_eq (gpu.root, "pci0000:00");
  cr_assert_str_eq (gpu.pci, "0000:07:00.0");
  cr_assert_eq (topo_distance (&gpu, &nic), TOPO_PXB);
  cr_assert_eq (topo_distance (&nic, &gpu), TOPO_PXB);
  cr_assert_eq (topo_distance (&gpu, &far), TOPO_PHB, "same host bridge, no shared switch");
  topo_pos_clear (&gpu);
  topo_pos_clear (&nic);
  topo_pos_clear (&far);
}

Test (topo, pos_parse_refuses_what_is_not_a_pci_path)
{
  cleanup_error roce_error_t err = NULL;
  struct topo_pos pos;
  assert_err_contains (topo_pos_parse ("platform/foo", &pos, &err), err,
                       "not below a PCI host bridge");
  roce_error_release (&err);
  assert_err_contains (topo_pos_parse ("pci0000:00/0000:00:01.0/usb1", &pos, &err), err,
                       "`usb1` is not a PCI address");
  roce_error_release (&err);
  assert_err_contains (topo_pos_parse ("pci0000:00", &pos, &err), err, "not below");
  roce_error_release (&err);
  cr_assert_eq (topo_pos_parse ("pci10000:e0/10000:e0:06.0/10000:e1:00.0", &pos, &err), 0);
  cr_assert_eq (pos.n_switches, 0);
  topo_pos_clear (&pos);
}

Test (topo, vf_takes_its_pf_place)
{
  cleanup_policy struct roce_policy *p = NULL;
  static const char *const hcas[] = { "mlx5_0", "mlx5_4", NULL };
  const char *pf = "pci0000:97/0000:97:02.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0";
  pair_socket (0x97, 0x98, 1, 0);
  hca_at ("mlx5_0", "pci0000:30/0000:30:02.0/0000:33:00.0", 0);
  vf_at ("mlx5_4", "pci0000:97/0000:97:02.0/0000:98:00.0/0000:99:00.0/0000:9a:00.2", last (pf), 1);
  p = policy_of (hcas);
  cr_assert_str_eq (class_of (p, 0, 1), "PIX");
  assert_chosen (p, ((struct run){ .visible = "0" }), "mlx5_4");
  {
    cleanup_error roce_error_t err = NULL;
    struct topo_table t;
    cr_assert_eq (topo_table_init (&t, p, &err), 0);
    cr_assert_eq (topo_table_hcas (&t, &err), 0);
    cr_assert (t.hcas[1].vf);
    cr_assert_str_eq (t.hcas[1].pos.pci, "0000:9a:00.0");
    cr_assert_not (t.hcas[0].vf);
    topo_table_clear (&t);
  }
}

/* ---- the rule ------------------------------------------------------------ */

Test (topo, dgx_each_gpu_its_own_nic)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  cleanup_error roce_error_t err = NULL;
  struct topo_choice ch = { 0 };

  assert_chosen (p, ((struct run){ .visible = "2,5" }), "mlx5_4,mlx5_9");
  assert_chosen (p, ((struct run){ .visible = "5,2" }), "mlx5_9,mlx5_4");
  assert_chosen (p, ((struct run){ .visible = "all" }),
                 "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11");
  /* A MIG instance is where its GPU is.  */
  assert_chosen (p, ((struct run){ .visible = "3:1,3:2" }), "mlx5_5");
  /* The rails say which GPU each serves.  */
  cr_assert_eq (choose (p, (struct run){ .visible = "0,7" }, &ch, &err), 0);
  cr_assert_eq (ch.n, 2);
  cr_assert_str_eq (ch.rails[0].gpus[0], "0000:1b:00.0");
  cr_assert_null (ch.rails[0].gpus[1]);
  cr_assert_eq (ch.rails[1].cls, TOPO_PIX);
  cr_assert_str_eq (ch.rails[1].gpus[0], "0000:df:00.0");
  cr_assert_str_eq (ch.basis, "GPUs 0000:1b:00.0,0000:df:00.0");
  topo_choice_clear (&ch);
}

Test (topo, gpus_by_uuid_and_by_device_minor)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  /* GPU k has minor 7-k: /dev/nvidia1 is GPU6.  */
  struct oci_device dev[] = {
    { 'c', 195, 1 }, { 'c', 195, 255 }, { 'c', 195, 254 }, { 'b', 195, 0 }, { 'c', 231, 192 }
  };
  assert_chosen (p, ((struct run){ .devices = dev, .n_devices = 5 }), "mlx5_10");
  /* GPU k has UUID GPU-0000000<7-k>-...: GPU2.  */
  assert_chosen (p, ((struct run){ .visible = "GPU-00000005-aaaa-bbbb-cccc-ddddeeeeffff" }),
                 "mlx5_4");
  /* The hex digits' case does not matter; the prefix is GPU-.  */
  assert_chosen (p, ((struct run){ .visible = "GPU-00000005-AAAA-BBBB-CCCC-DDDDEEEEFFFF" }),
                 "mlx5_4");
  assert_chosen (p, ((struct run){ .visible = "gpu-00000005-aaaa-bbbb-cccc-ddddeeeeffff" }),
                 "refused: environment variable NVIDIA_VISIBLE_DEVICES: GPU indexes, GPU- UUIDs "
                 "or <index>:<mig> items, or all, none, void vs "
                 "'gpu-00000005-aaaa-bbbb-cccc-ddddeeeeffff' (fix: give GPUs as NVIDIA's runtimes "
                 "take them (0,1 or GPU-<uuid>))");
  /* The environment's order first, then the devices', each GPU once.  */
  {
    struct oci_device d2[] = { { 'c', 195, 4 }, { 'c', 195, 6 } }; /* GPU3, GPU1 */
    assert_chosen (p, ((struct run){ .visible = "3", .devices = d2, .n_devices = 2 }),
                   "mlx5_5,mlx5_3");
  }
}

Test (topo, only_the_driver_s_other_nodes_is_no_gpu)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  struct oci_device dev[] = { { 'c', 195, 255 }, { 'c', 195, 254 } };
  assert_refused (p, ((struct run){ .visible = "void", .devices = dev, .n_devices = 2 }),
                  "annotation roce.io/hca=auto: GPUs in the spec (NVIDIA_VISIBLE_DEVICES, "
                  "/dev/nvidiaN in linux.devices) or a cpuset (linux.resources.cpu.cpus) vs "
                  "neither (fix: name the HCAs (roce.io/hca=mlx5_0,mlx5_1), or give the "
                  "container GPUs)");
  assert_refused (p, ((struct run){ .visible = "none" }),
                  "annotation roce.io/hca=auto: GPUs in the spec (NVIDIA_VISIBLE_DEVICES, "
                  "/dev/nvidiaN in linux.devices) or a cpuset (linux.resources.cpu.cpus) vs "
                  "neither (fix: name the HCAs (roce.io/hca=mlx5_0,mlx5_1), or give the "
                  "container GPUs)");
}

Test (topo, pair_two_gpus_per_port_tie_goes_to_the_less_taken)
{
  cleanup_policy struct roce_policy *p = pair_host ();
  cleanup_error roce_error_t err = NULL;
  struct topo_choice ch = { 0 };

  assert_chosen (p, ((struct run){ .visible = "0" }), "mlx5_0");
  assert_chosen (p, ((struct run){ .visible = "0,1" }), "mlx5_0,mlx5_1");
  assert_chosen (p, ((struct run){ .visible = "5,4" }), "mlx5_2,mlx5_3");
  cr_assert_eq (choose (p, (struct run){ .visible = "0,1,2,3" }, &ch, &err), 0);
  cr_assert_eq (ch.n, 2);
  cr_assert_str_eq (ch.rails[0].hca->name, "mlx5_0");
  cr_assert_str_eq (ch.rails[0].gpus[0], "0000:34:00.0");
  cr_assert_str_eq (ch.rails[0].gpus[1], "0000:36:00.0");
  cr_assert_str_eq (ch.rails[1].gpus[0], "0000:35:00.0");
  cr_assert_str_eq (ch.rails[1].gpus[1], "0000:37:00.0");
  topo_choice_clear (&ch);
  /* Across sockets each GPU still takes its own socket's ports.  */
  assert_chosen (p, ((struct run){ .visible = "0,4,1,5" }), "mlx5_0,mlx5_2,mlx5_1,mlx5_3");
}

Test (topo, flat_ties_and_the_nearest_host_bridge)
{
  cleanup_policy struct roce_policy *p = flat_host (true);
  assert_chosen (p, ((struct run){ .visible = "6" }), "mlx5_0");
  assert_chosen (p, ((struct run){ .visible = "4,5" }), "mlx5_0,mlx5_1");
  assert_chosen (p, ((struct run){ .visible = "0" }), "mlx5_0");
}

Test (topo, the_tenant_s_hcas_only)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  bool allowed[8] = { false, true, true, true, true, true, true, true };
  bool none[8] = { 0 };
  /* mlx5_0 is GPU0's; the nearest the tenant may use is NODE: mlx5_3
   * first of the three.  */
  assert_chosen (p, ((struct run){ .visible = "0", .allowed = allowed }), "mlx5_3");
  assert_chosen (p, ((struct run){ .visible = "0,2", .allowed = allowed }), "mlx5_3,mlx5_4");
  assert_refused (p, ((struct run){ .visible = "0", .allowed = none }),
                  "annotation roce.io/hca=auto: an HCA of the policy this tenant may use vs none "
                  "of mlx5_0, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_9, mlx5_10, mlx5_11 (fix: ask "
                  "the node admin to add the namespace to hcas.<hca>.tenants or default_tenants "
                  "in /etc/roce-hook/config.json)");
}

Test (topo, no_gpu_the_cpuset_s_numa_nodes)
{
  cleanup_policy struct roce_policy *p = flat_host (true);
  cleanup_policy struct roce_policy *dgx = NULL;
  assert_chosen (p, ((struct run){ .cpus = "60-63" }), "mlx5_0,mlx5_1");
  assert_refused (p, ((struct run){ .cpus = "0-3" }),
                  "annotation roce.io/hca=auto: a policy HCA the tenant may use on NUMA node 0 "
                  "(of cpuset 0-3) vs none (mlx5_0: node 1, mlx5_1: node 1) (fix: name the HCAs "
                  "(roce.io/hca=mlx5_0,...), request GPUs, or run the container on the CPUs of "
                  "an HCA's NUMA node)");
  assert_refused (p, ((struct run){ .cpus = "0-99999" }),
                  "linux.resources.cpu.cpus: a CPU list such as 0-3,8 (CPUs below 16384) vs "
                  "'0-99999' (fix: give the container a valid cpuset)");
  assert_refused (p, ((struct run){ .cpus = "1\x1b[2J" }),
                  "linux.resources.cpu.cpus: a CPU list such as 0-3,8 (CPUs below 16384) vs "
                  "'1\\x1b[2J' (fix: give the container a valid cpuset)");
  tree_teardown ();
  tree_setup ();
  dgx = dgx_host ();
  assert_chosen (dgx, ((struct run){ .cpus = "0-55,112-167" }), "mlx5_0,mlx5_3,mlx5_4,mlx5_5");
  assert_chosen (dgx, ((struct run){ .cpus = "55-56" }),
                 "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11");
}

Test (topo, one_node_host_unknown_node_is_that_node)
{
  cleanup_policy struct roce_policy *p = NULL;
  static const char *const hcas[] = { "mlx5_0", NULL };
  hca_at ("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0", -1);
  node_cpus (0, "0-7");
  p = policy_of (hcas);
  assert_chosen (p, ((struct run){ .cpus = "2" }), "mlx5_0");
}

/* ---- refusals ------------------------------------------------------------ */

Test (topo, gpu_or_hca_missing_from_sysfs)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  cleanup_free char *gone = xasprintf ("%s/sys/bus/pci/devices/0000:52:00.0", tree_root);
  cleanup_free char *want = NULL;
  cleanup_free char *got = NULL;
  cr_assert_eq (unlink (gone), 0);
  want = xasprintf ("refused: PCI position of GPU 2 (0000:52:00.0, GPU of annotation "
                    "roce.io/hca): %s/sys/bus/pci/devices/0000:52:00.0, a link into %s/sys/devices "
                    "vs `%s/sys/bus/pci/devices/0000:52:00.0`: No such file or directory (fix: the "
                    "driver lists a GPU that sysfs lacks: check the host, or name the HCAs)",
                    tree_root, tree_root, tree_root);
  got = chosen (p, (struct run){ .visible = "2" });
  cr_assert_str_eq (got, want);
  /* GPUs that are there still work.  */
  assert_chosen (p, ((struct run){ .visible = "1" }), "mlx5_3");

  free (gone);
  gone = xasprintf ("%s/sys/class/infiniband/mlx5_9/device", tree_root);
  cr_assert_eq (unlink (gone), 0);
  free (want);
  free (got);
  want = xasprintf ("refused: PCI position of HCA mlx5_9: %s/sys/class/infiniband/mlx5_9/device, a "
                    "link into %s/sys/devices vs `%s/sys/class/infiniband/mlx5_9/device`: No such "
                    "file or directory (fix: bring mlx5_9 back, or remove it from "
                    "/etc/roce-hook/config.json (roce.io/hca=auto weighs every policy HCA))",
                    tree_root, tree_root, tree_root);
  got = chosen (p, (struct run){ .visible = "1" });
  cr_assert_str_eq (got, want);
}

Test (topo, gpus_the_host_does_not_have)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  cleanup_free char *want = xasprintf (
      "refused: GPU linux.devices /dev/nvidia9 (195:9) of annotation roce.io/hca: a GPU whose "
      "%s/proc/driver/nvidia/gpus/<pci>/information has that Device Minor vs none (fix: give the "
      "container GPUs of this host, or name the HCAs (the host's GPUs: roce-hook topo))",
      tree_root);
  struct oci_device dev[] = { { 'c', 195, 9 } };
  cleanup_free char *got = chosen (p, (struct run){ .devices = dev, .n_devices = 1 });
  cr_assert_str_eq (got, want);
  assert_refused (p, ((struct run){ .visible = "8" }),
                  "GPU NVIDIA_VISIBLE_DEVICES=8 of annotation roce.io/hca: an index below 8 (the "
                  "host's GPUs in PCI address order) vs 8 (fix: give the container GPUs of this "
                  "host, or name the HCAs (the host's GPUs: roce-hook topo))");
}

Test (topo, no_driver_no_gpus)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *want = NULL;
  cleanup_free char *got = NULL;
  static const char *const hcas[] = { "mlx5_0", NULL };
  hca_at ("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0", 0);
  p = policy_of (hcas);
  want = xasprintf ("refused: GPU NVIDIA_VISIBLE_DEVICES=0 of annotation roce.io/hca: a GPU the "
                    "nvidia driver lists in %s/proc/driver/nvidia/gpus vs no such directory (no "
                    "nvidia driver) (fix: give the container GPUs of this host, or name the HCAs "
                    "(the host's GPUs: roce-hook topo))",
                    tree_root);
  got = chosen (p, (struct run){ .visible = "0" });
  cr_assert_str_eq (got, want);
  free (want);
  free (got);
  want = xasprintf ("refused: GPUs NVIDIA_VISIBLE_DEVICES=all of annotation roce.io/hca: a GPU "
                    "the nvidia driver lists in %s/proc/driver/nvidia/gpus vs none (fix: run the "
                    "container where its GPUs are, or name the HCAs)",
                    tree_root);
  got = chosen (p, (struct run){ .visible = "all" });
  cr_assert_str_eq (got, want);
}

Test (topo, hostile_visible_devices)
{
  static const struct
  {
    const char *in, *found;
  } bad[] = {
    { "0,\x1b[2J", "'0,\\x1b[2J'" },
    { "0,,1", "''" },
    { "all,0", "'all'" },
    { "-1", "'-1'" },
    { "99999", "'99999'" },
    { "GPU-zz", "'GPU-zz'" },
    { "0;reboot", "'0;reboot'" },
    { "GPU-", "'GPU-'" },
    { "1:", "'1:'" },
    { "\xc3\xa9", "'\\xc3\\xa9'" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct topo_refs refs = { 0 };
      cr_assert_lt (topo_parse_visible ("environment variable NVIDIA_VISIBLE_DEVICES", bad[i].in,
                                        &refs, &err),
                    0, "%s", bad[i].in);
      cleanup_free char *shown = str_escape (err->msg); /* as printed */
      cr_assert_not_null (strstr (shown, bad[i].found), "%s: %s", bad[i].in, shown);
      cr_assert (str_is_printable (shown), "%s", shown);
      topo_refs_clear (&refs);
    }
  {
    cleanup_error roce_error_t err = NULL;
    struct topo_refs refs = { 0 };
    cleanup_free char *big = xmalloc0 (5001);
    memset (big, '0', 5000);
    assert_err_contains (topo_parse_visible ("x", big, &refs, &err), err,
                         "x: at most 4096 bytes vs 5000 bytes");
    topo_refs_clear (&refs);
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct topo_refs refs = { 0 };
    cleanup_free char *many = xstrdup ("0");
    for (int i = 0; i < 300; i++)
      str_list_add (&many, ",", "%d", i % 8);
    assert_err_contains (topo_parse_visible ("x", many, &refs, &err), err,
                         "x: at most 256 GPUs vs 301 items");
    topo_refs_clear (&refs);
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct topo_refs refs = { 0 };
    assert_err_contains (topo_parse_visible ("x", "MIG-4d9a0b7c-aaaa", &refs, &err), err,
                         "x: GPUs roce.io/hca=auto can place (a MIG UUID names no GPU here) vs "
                         "'MIG-4d9a0b7c-aaaa' (fix: give MIG devices as <gpu index>:<mig index>, "
                         "or name the HCAs)");
    topo_refs_clear (&refs);
  }
}

Test (topo, visible_devices_accepted)
{
  static const struct
  {
    const char *in;
    bool all;
    size_t n;
  } ok[] = {
    { "", false, 0 },        { " none ", false, 0 },      { "void", false, 0 }, { "all", true, 0 },
    { " 0 , 1 ", false, 2 }, { "GPU-ABC-def", false, 1 }, { "3:1", false, 1 },  { "0,0", false, 2 },
  };
  for (size_t i = 0; i < ARRAY_SIZE (ok); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct topo_refs refs = { 0 };
      cr_assert_eq (topo_parse_visible ("x", ok[i].in, &refs, &err), 0, "%s: %s", ok[i].in,
                    err ? err->msg : "");
      cr_assert_eq (refs.all, ok[i].all, "%s", ok[i].in);
      cr_assert_eq (refs.n, ok[i].n, "%s", ok[i].in);
      topo_refs_clear (&refs);
    }
}

Test (topo, information_file)
{
  char *uuid;
  int minor;
  topo_parse_information ("Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t "
                          "GPU-2b0e6b2a-9f4b-7e34-1234-0123456789ab\nDevice Minor: \t 6\n",
                          &uuid, &minor);
  cr_assert_str_eq (uuid, "GPU-2b0e6b2a-9f4b-7e34-1234-0123456789ab");
  cr_assert_eq (minor, 6);
  free (uuid);
  topo_parse_information ("GPU UUID: \t nonsense\nDevice Minor: \t -3\n", &uuid, &minor);
  cr_assert_null (uuid);
  cr_assert_eq (minor, -1);
  topo_parse_information ("", &uuid, &minor);
  cr_assert_null (uuid);
  cr_assert_eq (minor, -1);
}

Test (topo, cpulist)
{
  struct topo_cpuset *a = xmalloc0 (sizeof (*a)), *b = xmalloc0 (sizeof (*b));
  cr_assert_eq (topo_parse_cpulist ("0-23,96-119\n", a), 0);
  cr_assert_eq (topo_parse_cpulist ("23", b), 0);
  cr_assert (topo_cpuset_meets (a, b));
  cr_assert_eq (topo_parse_cpulist ("24-95", b), 0);
  cr_assert_not (topo_cpuset_meets (a, b));
  cr_assert_eq (topo_parse_cpulist ("16383", b), 0);
  cr_assert_lt (topo_parse_cpulist ("16384", b), 0);
  cr_assert_lt (topo_parse_cpulist ("3-1", b), 0);
  cr_assert_lt (topo_parse_cpulist ("1,", b), 0);
  cr_assert_lt (topo_parse_cpulist ("1--2", b), 0);
  cr_assert_lt (topo_parse_cpulist ("99999999999", b), 0);
  cr_assert_eq (topo_parse_cpulist ("", b), 0);
  cr_assert (topo_cpuset_empty (b));
  free (a);
  free (b);
}

/* ---- roce-hook topo ------------------------------------------------------ */

static char *
report (const struct roce_policy *p, const char *gpus, bool json)
{
  cleanup_error roce_error_t err = NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream (&buf, &len);
  cr_assert_eq (topo_report (p, gpus, json, o, &err), 0, "%s", err ? err->msg : "");
  fclose (o);
  return buf;
}

Test (topo, report_json)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  cleanup_free char *text = report (p, "0,4", true);
  cleanup_json struct json *j = NULL;
  cleanup_error roce_error_t err = NULL;
  const struct json *g, *h, *m;

  cr_assert_eq (json_parse (text, &j, &err), 0, "%s", text);
  g = json_array_at (json_object_get (j, "gpus"), 4);
  cr_assert_str_eq (json_string (json_object_get (g, "pci")), "0000:9d:00.0");
  cr_assert_str_eq (json_string (json_object_get (g, "pcie_root")), "pci0000:97");
  cr_assert_str_eq (json_string (json_object_get (g, "uuid")),
                    "GPU-00000003-aaaa-bbbb-cccc-ddddeeeeffff");
  h = json_array_at (json_object_get (j, "hcas"), 0);
  cr_assert_str_eq (json_string (json_object_get (h, "name")), "mlx5_0");
  cr_assert_str_eq (json_string (json_object_get (h, "pci")), "0000:18:00.0");
  cr_assert_str_eq (json_string (json_object_get (h, "pcie_root")), "pci0000:15");
  {
    int64_t numa;
    cr_assert_eq (json_integer (json_object_get (g, "numa"), &numa), 0);
    cr_assert_eq (numa, 1);
  }
  m = json_object_get (j, "matrix");
  cr_assert_str_eq (json_string (json_object_get (json_object_get (m, "0"), "mlx5_0")), "PIX");
  cr_assert_str_eq (json_string (json_object_get (json_object_get (m, "0"), "mlx5_3")), "NODE");
  cr_assert_str_eq (json_string (json_object_get (json_object_get (m, "7"), "mlx5_0")), "SYS");
  cr_assert_eq (json_array_len (json_object_get (j, "selected")), 2);
  cr_assert_str_eq (json_string (json_array_at (json_object_get (j, "selected"), 1)), "mlx5_6");
}

Test (topo, report_text)
{
  cleanup_policy struct roce_policy *p = pair_host ();
  cleanup_free char *text = report (p, "0,1", false);
  cr_assert_not_null (strstr (text, "GPU0   0000:34:00.0  0     pci0000:30   GPU-00000000-"), "%s",
                      text);
  cr_assert_not_null (strstr (text, "       mlx5_0  mlx5_1  mlx5_2  mlx5_3\n"
                                    "GPU0   PIX     PIX     SYS     SYS\n"),
                      "%s", text);
  cr_assert_not_null (strstr (text, "roce.io/hca=auto with NVIDIA_VISIBLE_DEVICES=0,1: mlx5_0 "
                                    "(0000:34:00.0: PIX), mlx5_1 (0000:35:00.0: PIX)\n"),
                      "%s", text);
}

Test (topo, report_without_gpus_or_with_an_hca_gone)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *text = NULL;
  static const char *const hcas[] = { "mlx5_0", "mlx5_1", NULL };
  hca_at ("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0", 0);
  tree_mk ("sys/class/infiniband/mlx5_1/node_type", "1: CA\n");
  p = policy_of (hcas);
  text = report (p, NULL, false);
  cr_assert_not_null (strstr (text, "GPUs: none ("), "%s", text);
  cr_assert_not_null (strstr (text, "absent, no nvidia driver)"), "%s", text);
  cr_assert_not_null (strstr (text, "mlx5_0  0000:01:00.0  0     pci0000:00\n"), "%s", text);
  cr_assert_not_null (strstr (text, "mlx5_1  -             -     absent from sysfs\n"), "%s", text);
}

/* ---- the policy's keys ---------------------------------------------------- */

Test (topo, policy_procfs_root_and_the_reserved_name)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  struct roce_policy *q = NULL;
  const char *hca = "\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-"
                    "198.18.0.20\"}}";
  cleanup_free char *plain = xasprintf ("{%s}", hca);
  cleanup_free char *set = xasprintf ("{\"procfs_root\":\"/tmp/fake/proc\",%s}", hca);
  cleanup_free char *rel = xasprintf ("{\"procfs_root\":\"proc\",%s}", hca);
  const char *autoname = "{\"hcas\":{\"auto\":{\"subnet\":\"198.18.0.0/24\",\"pool\":"
                         "\"198.18.0.10-198.18.0.20\"}}}";

  cr_assert_eq (policy_parse (plain, "c.json", &p, &err), 0);
  cr_assert_str_eq (p->procfs_root, "/proc");
  policy_free (p);
  p = NULL;
  cr_assert_eq (policy_parse (set, "c.json", &p, &err), 0);
  cr_assert_str_eq (p->procfs_root, "/tmp/fake/proc");
  assert_err_contains (policy_parse (rel, "c.json", &q, &err), err,
                       "policy c.json: procfs_root: 'proc' is not an absolute path");
  roce_error_release (&err);
  assert_err_contains (policy_parse (autoname, "c.json", &q, &err), err,
                       "policy c.json: hcas.auto: 'auto' is reserved (roce.io/hca=auto chooses the "
                       "HCAs nearest the GPUs)");
}

/* ---- the request: topo_request_resolve, shared by the hook and the shim ---------- */

static int
resolve (const struct roce_policy *p, const char *hca, const char *ip, const char *visible,
         const struct roce_kv *kv, size_t n_kv, struct roce_request *r, roce_error_t *err)
{
  cleanup_free char *env0 = visible ? xasprintf (TOPO_ENV_GPUS "=%s", visible) : NULL;
  char *env[] = { env0, NULL };
  struct oci_config spec = { .env = env };
  return topo_request_resolve (p, &annot_from_annotations, hca, ip, &spec, kv, n_kv, r, err);
}

Test (topo, resolve_auto_and_its_address)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  cleanup_error roce_error_t err = NULL;
  struct roce_request r = { 0 };

  cr_assert_eq (resolve (p, "auto", "198.18.2.15", "2", NULL, 0, &r, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_eq (r.n, 1);
  cr_assert_str_eq (r.sel[0].hca->name, "mlx5_4");
  cr_assert_eq (r.sel[0].ip[0].family, AF_INET);
  cr_assert_str_eq (r.sel[0].gpus[0], "0000:52:00.0");
  annot_request_clear (&r);
  assert_err_contains (resolve (p, "auto", "198.18.2.15", "2,3", NULL, 0, &r, &err), err,
                       "annotation roce.io/ip: a bare address, with roce.io/hca=auto choosing one "
                       "HCA vs 2 HCAs chosen (mlx5_4,mlx5_5) (fix: name the HCAs in roce.io/hca to "
                       "give each an address, or omit roce.io/ip to get one from each pool)");
  roce_error_release (&err);
  assert_err_contains (resolve (p, "auto", "mlx5_4=198.18.2.15", "2", NULL, 0, &r, &err), err,
                       "annotation roce.io/ip: a bare address, with roce.io/hca=auto choosing one "
                       "HCA vs <hca>=<address> items, HCAs chosen: mlx5_4");
  roce_error_release (&err);
  assert_err_contains (resolve (p, "auto", "198.18.9.1", "2", NULL, 0, &r, &err), err,
                       "an address in mlx5_4's pool 198.18.2.10-198.18.2.20");
}

Test (topo, resolve_named_hcas_reads_no_topology)
{
  cleanup_policy struct roce_policy *p = dgx_host ();
  cleanup_error roce_error_t err = NULL;
  struct roce_request r = { 0 };
  cleanup_free char *sys = xasprintf ("%s/sys", tree_root);
  cleanup_free char *proc = xasprintf ("%s/proc", tree_root);

  /* No sysfs, no procfs at all: named HCAs do not look.  */
  tree_remove (sys);
  tree_remove (proc);
  cr_assert_eq (resolve (p, "mlx5_3,mlx5_0", NULL, "all", NULL, 0, &r, &err), 0);
  cr_assert_eq (r.n, 2);
  cr_assert_null (r.sel[0].gpus);
  annot_request_clear (&r);
  assert_err_contains (resolve (p, "auto", NULL, "0", NULL, 0, &r, &err), err, "sysfs_root");
}

Test (topo, resolve_among_the_tenant_s_hcas)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  struct roce_request r = { 0 };
  cleanup_free char *text = NULL;
  struct roce_kv team_b[] = { { "io.kubernetes.pod.namespace", "team-b" } };
  struct roce_kv team_a[] = { { "io.kubernetes.pod.namespace", "team-a" } };
  struct roce_kv sandbox[] = { { "io.kubernetes.cri.container-type", "sandbox" } };
  struct roce_kv sidecar[] = { { "io.kubernetes.cri-o.ContainerType", "container" },
                               { "io.kubernetes.pod.namespace", "team-b" } };

  for (int k = 0; k < 2; k++)
    {
      cleanup_free char *g = dgx_path (dgx_nic[k], true);
      cleanup_free char *n = dgx_path (dgx_nic[k], false);
      gpu_at (g, 0, k);
      hca_at (dgx_hcas[k], n, 0);
    }
  text = xasprintf (
      "{\"sysfs_root\":\"%s/sys\",\"procfs_root\":\"%s/proc\",\"hcas\":{"
      "\"mlx5_0\":{\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\","
      "\"tenants\":[\"team-a\"]},"
      "\"mlx5_3\":{\"subnet\":\"198.18.1.0/24\",\"pool\":\"198.18.1.10-198.18.1.20\"}}}",
      tree_root, tree_root);
  cr_assert_eq (policy_parse (text, "/etc/roce-hook/config.json", &p, &err), 0);
  cr_assert_eq (resolve (p, "auto", NULL, "0", team_a, 1, &r, &err), 0);
  cr_assert_str_eq (r.sel[0].hca->name, "mlx5_0");
  annot_request_clear (&r);
  cr_assert_eq (resolve (p, "auto", NULL, "0", team_b, 1, &r, &err), 0);
  cr_assert_eq (r.n, 1);
  cr_assert_str_eq (r.sel[0].hca->name, "mlx5_3", "the nearest team-b may use");
  annot_request_clear (&r);
  /* A pod's sandbox: nothing, whatever it has.  */
  cr_assert_eq (resolve (p, "auto", NULL, "0", sandbox, 1, &r, &err), 0);
  cr_assert_eq (r.n, 0);
  /* A pod's container without GPUs (a sidecar): nothing; with: its NICs. */
  cr_assert_eq (resolve (p, "auto", NULL, "void", sidecar, 2, &r, &err), 0);
  cr_assert_eq (r.n, 0);
  cr_assert_eq (resolve (p, "auto", NULL, "1", sidecar, 2, &r, &err), 0);
  cr_assert_eq (r.n, 1);
  cr_assert_str_eq (r.sel[0].hca->name, "mlx5_3");
  annot_request_clear (&r);
  /* Outside Kubernetes, neither is a refusal.  */
  assert_err_contains (resolve (p, "auto", NULL, "void", NULL, 0, &r, &err), err,
                       "annotation roce.io/hca=auto: GPUs in the spec");
  roce_error_release (&err);
  /* A pod's container whose NVIDIA_VISIBLE_DEVICES is not one is refused.  */
  assert_err_contains (resolve (p, "auto", NULL, "0,x", sidecar, 2, &r, &err), err,
                       "environment variable NVIDIA_VISIBLE_DEVICES: GPU indexes");
}

/* ---- leases: the GPUs a rail serves --------------------------------------- */

Test (topo, lease_gpus_round_trip_and_older_stores_load)
{
  cleanup_lease_store struct lease_store *s = xmalloc0 (sizeof (*s));
  cleanup_lease_store struct lease_store *t = xmalloc0 (sizeof (*t));
  cleanup_lease_store struct lease_store *bad = xmalloc0 (sizeof (*bad));
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  char *const gpus[] = { "0000:1b:00.0", "0000:43:00.0", NULL };
  struct lease_holder *h;

  s->dir_fd = s->lock_fd = t->dir_fd = t->lock_fd = bad->dir_fd = bad->lock_fd = -1;
  h = lease_holder_add (s, &(struct netns_id){ .boot_id = "b", .ino = 7 }, "c1", 1);
  h->addrs = xmalloc0 (2 * sizeof (*h->addrs));
  h->addrs[0] = (struct lease_addr){ .hca = xstrdup ("mlx5_0"),
                                     .addr = { .v = 0xc6120a64, .family = AF_INET },
                                     .ifname = xstrdup ("roce0") };
  h->addrs[1] = (struct lease_addr){ .hca = xstrdup ("mlx5_3"),
                                     .addr = { .v = 0xc6120b64, .family = AF_INET },
                                     .ifname = xstrdup ("roce1") };
  h->n_addrs = 2;
  lease_holder_set_gpus (h, "mlx5_0", gpus);
  text = lease_store_format (s);
  cr_assert_not_null (strstr (text, "\"gpus\":[\"0000:1b:00.0\",\"0000:43:00.0\"]"), "%s", text);
  cr_assert_eq (lease_store_parse (t, text, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (t->h[0]->addrs[0].gpus[1], "0000:43:00.0");
  cr_assert_null (t->h[0]->addrs[0].gpus[2]);
  cr_assert_null (t->h[0]->addrs[1].gpus, "a named HCA's rail has none");
  {
    cleanup_free char *evil = xstrdup (text);
    char *at = strstr (evil, "0000:1b:00.0");
    memcpy (at, "00/0:1b:00.0", 12);
    assert_err_contains (lease_store_parse (bad, evil, &err), err, ".gpus[0]: not a PCI address");
  }
}

/* ---- check: the host's view and its NFD labels ---------------------------- */

Test (topo, view_labels_for_the_scheduler)
{
  cleanup_policy struct roce_policy *p = pair_host ();
  struct topo_view *v = topo_view_read (p);
  cleanup_free char *labels = topo_view_nfd (v);
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream (&buf, &len);

  cr_assert_eq (topo_view_gpus (v), 8);
  cr_assert_not_null (strstr (labels, "roce.io/hca.mlx5_0.pcie-root=pci0000-30\n"
                                      "roce.io/hca.mlx5_0.numa=0\n"
                                      "roce.io/hca.mlx5_0.gpus=0.1.2.3\n"
                                      "roce.io/hca.mlx5_0.gpu-class=PIX\n"),
                      "%s", labels);
  cr_assert_not_null (strstr (labels, "roce.io/hca.mlx5_3.gpus=4.5.6.7\n"), "%s", labels);
  topo_view_text (v, o);
  fclose (o);
  cr_assert_not_null (strstr (buf, "GPU7   SYS     SYS     PIX     PIX\n"), "%s", buf);
  free (buf);
  topo_view_free (v);
}

Test (topo, view_of_a_host_without_gpus_labels_the_hcas)
{
  cleanup_policy struct roce_policy *p = NULL;
  static const char *const hcas[] = { "mlx5_0", NULL };
  struct topo_view *v;
  cleanup_free char *labels = NULL;
  hca_at ("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0", -1);
  p = policy_of (hcas);
  v = topo_view_read (p);
  labels = topo_view_nfd (v);
  cr_assert_eq (topo_view_gpus (v), 0);
  cr_assert_str_eq (labels, "roce.io/hca.mlx5_0.pcie-root=pci0000-00\n");
  topo_view_free (v);
}
