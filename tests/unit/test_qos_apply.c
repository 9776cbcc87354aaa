/* SPDX-License-Identifier: Apache-2.0 */
/* `qos apply`, GPUDirect readiness and the rdma_cm defaults on sysfs and
 * configfs trees; the policy keys they read; the findings the hook logs for
 * what only the shim can set.  DCB itself: test_dcb.c (dcb_set).  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/rdmacm.h"
#include "lib/utils.h"
#include "probe/gpudirect.h"
#include "probe/seed.h"
#include "qos/qos.h"
#include "qos/qos_apply.h"
#include "qos/qos_int.h"
#include "spec/oci.h"
#include "spec/policy.h"
#include "unit.h"

TestSuite (qos_apply, .init = tree_setup, .fini = tree_teardown);

static char *
slurp (const char *rel)
{
  cleanup_free char *path = xasprintf ("%s/%s", tree_root, rel);
  cleanup_error roce_error_t err = NULL;
  char *out = NULL;
  cr_assert_eq (read_line_at (AT_FDCWD, path, &out, &err), 0, "%s", err ? err->msg : "");
  return out;
}

/* The tree's file rel holds want (its first line).  */
static void
assert_tree_file (const char *rel, const char *want, const char *what)
{
  cleanup_free char *v = slurp (rel);
  cr_assert_str_eq (v, want, "%s: %s", rel, what);
}

/* A policy on the tree: one HCA on netdev `nd`, extra top-level JSON.  */
static struct roce_policy *
policy_on_tree (const char *nd, const char *extra, const char *qos_extra)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  cleanup_free char *js = xasprintf (
      "{\"sysfs_root\":\"%s/sys\",\"configfs_root\":\"%s/cfg\",%s\"qos\":{\"mode\":\"warn\"%s},"
      "\"hcas\":{\"mlx5_0\":{\"netdev\":\"%s\",\"subnet\":\"198.18.0.0/24\","
      "\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
      tree_root, tree_root, extra, qos_extra, nd);
  cr_assert_eq (policy_parse (js, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

static void
fake_port (void)
{
  tree_mk ("sys/class/infiniband/mlx5_0/ports/1/gids/0", "fe80::");
}

static const struct qa_item *
item (const struct qa_plan *pl, const char *name)
{
  for (size_t i = 0; i < pl->n; i++)
    if (strcmp (pl->v[i].item, name) == 0)
      return &pl->v[i];
  cr_assert_fail ("no item %s", name);
  return NULL;
}

Test (qos_apply, only_lists)
{
  cleanup_error roce_error_t err = NULL;
  unsigned g = 0;
  cr_assert_eq (qos_apply_parse_only ("ecn,rdma-cm", &g, &err), 0);
  cr_assert_eq (g, QA_ECN | QA_RDMACM);
  cr_assert_eq (qos_apply_parse_only ("pfc,dscp,pfc-stall", &g, &err), 0);
  cr_assert_eq (g, QA_PFC | QA_DSCP | QA_STALL);
  assert_err_contains (qos_apply_parse_only ("ecn,trust", &g, &err), err, "'trust' is not an item");
  roce_error_release (&err);
  assert_err_contains (qos_apply_parse_only (",", &g, &err), err, "no item");
}

Test (qos_apply, policy_keys_and_defaults)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  cleanup_policy struct roce_policy *q = NULL;
  cr_assert_eq (p->stack, 64ull << 20);
  cr_assert_not (p->stack_unlimited);
  cr_assert_eq (p->shm_size, 1ull << 30);
  cr_assert_not (p->qos.has_stall);
  policy_free (p);
  p = policy_on_tree ("lo", "\"stack\":\"unlimited\",\"shm_size\":\"2147483648\",",
                      ",\"pfc_stall_prevention\":\"auto\"");
  cr_assert (p->stack_unlimited);
  cr_assert_eq (p->shm_size, 2ull << 30);
  cr_assert (p->qos.has_stall);
  cr_assert_eq (p->qos.stall_ms, 0xffff);
  cr_assert_eq (policy_parse ("{\"hcas\":{}}", "d.json", &q, &err), 0);
  cr_assert_str_eq (q->configfs_root, "/sys/kernel/config");
  policy_free (q);
  q = NULL;
  assert_err_contains (
      policy_parse ("{\"hcas\":{},\"qos\":{\"pfc_stall_prevention\":70000}}", "d.json", &q, &err),
      err, "qos.pfc_stall_prevention: expected 'auto' or a timeout in ms");
  roce_error_release (&err);
  assert_err_contains (policy_parse ("{\"hcas\":{},\"shm_size\":\"big\"}", "d.json", &q, &err), err,
                       "shm_size: expected a byte count");
  roce_error_release (&err);
  assert_err_contains (policy_parse ("{\"hcas\":{},\"stack\":1024}", "d.json", &q, &err), err,
                       "stack: 1024 is below 1048576 bytes");
  roce_error_release (&err);
  assert_err_contains (policy_parse ("{\"hcas\":{},\"configfs_root\":\"cfg\"}", "d.json", &q, &err),
                       err, "configfs_root: 'cfg' is not an absolute path");
}

Test (qos_apply, netdev_without_dcb_is_refused_before_anything)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("sys/class/net/lo/ecn/roce_np/enable/3", "0\n");
  assert_err_contains (qos_apply_plan (p, NULL, QA_ALL, &pl, &err), err,
                       "DCB of lo (mlx5_0): a netdev whose driver speaks DCB netlink vs lo has no "
                       "DCB (EOPNOTSUPP); nothing was changed (fix: set hcas.mlx5_0.netdev in "
                       "p.json to the HCA's DCB-capable PF netdev, or apply the rest alone: --only "
                       "ecn,rdma-cm)");
  cr_assert_eq (pl.n, 0);
  roce_error_release (&err);
  assert_err_contains (qos_apply_plan (p, NULL, QA_DSCP, &pl, &err), err,
                       "vs lo has no DCB (EOPNOTSUPP); nothing was changed (fix: set "
                       "hcas.mlx5_0.netdev in p.json to the HCA's DCB-capable PF netdev)");
  roce_error_release (&err);
  assert_err_contains (qos_apply_plan (p, "mlx5_9", QA_ECN, &pl, &err), err,
                       "--hca 'mlx5_9': not an HCA of p.json (it lists mlx5_0)");
  assert_tree_file ("sys/class/net/lo/ecn/roce_np/enable/3", "0", "after the call");
}

Test (qos_apply, ecn_and_rdma_cm_plan_apply_and_plan_again)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("sys/class/net/lo/ecn/roce_np/enable/3", "0\n");
  tree_mk ("sys/class/net/lo/ecn/roce_rp/enable/3", "1\n");
  tree_mk ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos", "0\n");
  tree_mk ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_mode", "RoCE v2\n");
  cr_assert_eq (qos_apply_plan (p, NULL, QA_ECN | QA_RDMACM | QA_STALL, &pl, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_eq (pl.changes, 2);
  cr_assert_eq (item (&pl, "ecn-np")->action, QA_CHANGE);
  cr_assert_eq (item (&pl, "ecn-rp")->action, QA_KEEP);
  cr_assert_eq (item (&pl, "rdma-cm-tos")->action, QA_CHANGE);
  cr_assert_str_eq (item (&pl, "rdma-cm-tos")->value, "104");
  cr_assert_eq (item (&pl, "rdma-cm-mode")->action, QA_KEEP);
  cr_assert_eq (item (&pl, "pfc-stall")->action, QA_SKIP);
  {
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream (&buf, &len);
    qos_apply_render (o, &pl, true);
    fclose (o);
    cr_assert_not_null (strstr (buf, "2 change(s) would be made; nothing was changed"), "%s", buf);
    cr_assert_not_null (strstr (buf, "skip: the policy asks for none"), "%s", buf);
    free (buf);
  }
  cr_assert_eq (qos_apply_run (&pl, &err), 0, "%s", err ? err->msg : "");
  qos_apply_clear (&pl);
  {
    cleanup_free char *np = slurp ("sys/class/net/lo/ecn/roce_np/enable/3");
    cleanup_free char *tos = slurp ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos");
    cr_assert_str_eq (np, "1");
    cr_assert_str_eq (tos, "104");
  }
  cr_assert_eq (qos_apply_plan (p, NULL, QA_ECN | QA_RDMACM, &pl, &err), 0);
  cr_assert_eq (pl.changes, 0, "a second run finds nothing to change");
  qos_apply_clear (&pl);
}

Test (qos_apply, a_failure_puts_back_what_was_done)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("sys/class/net/lo/ecn/roce_np/enable/3", "0\n");
  tree_mk ("sys/class/net/lo/ecn/roce_rp/enable/3", "0\n");
  cr_assert_eq (qos_apply_plan (p, NULL, QA_ECN, &pl, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (pl.changes, 2);
  /* The RP file goes away between the plan and its write.  */
  {
    cleanup_free char *rp = xasprintf ("%s/sys/class/net/lo/ecn/roce_rp/enable/3", tree_root);
    cr_assert_eq (unlink (rp), 0);
  }
  assert_err_contains (qos_apply_run (&pl, &err), err,
                       "ecn-rp of lo (mlx5_0), the earlier changes put back: open");
  qos_apply_clear (&pl);
  assert_tree_file ("sys/class/net/lo/ecn/roce_np/enable/3", "0", "the NP write was put back");
}

Test (qos_apply, unreadable_ecn_and_missing_rdma_cm_refuse)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("sys/class/net/lo/ecn/roce_np/enable/3", "");
  assert_err_contains (qos_apply_plan (p, NULL, QA_ECN, &pl, &err), err,
                       "RoCE ECN of lo (mlx5_0): a readable 0 or 1 vs");
  roce_error_release (&err);
  assert_err_contains (qos_apply_plan (p, NULL, QA_RDMACM, &pl, &err), err,
                       "rdma_cm defaults of mlx5_0: rdma_cm in configfs vs no");
}

Test (qos_apply, stall_prevention_the_policy_asks_for_is_refused_on_lo)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", ",\"pfc_stall_prevention\":500");
  struct qa_plan pl;
  fake_port ();
  assert_err_contains (qos_apply_plan (p, NULL, QA_STALL, &pl, &err), err,
                       "PFC stall prevention of lo (mlx5_0): 500 ms (qos.pfc_stall_prevention) vs "
                       "lo: Operation not supported (EOPNOTSUPP); nothing was changed");
}

/* ---- GPUDirect ------------------------------------------------------------------ */

static struct gpudirect_probe
gdr (const char *kernel)
{
  struct gpudirect_probe g;
  cleanup_free char *sys = xasprintf ("%s/sys", tree_root);
  gpudirect_probe_run (sys, kernel, &g);
  return g;
}

Test (qos_apply, gpudirect_ways)
{
  struct gpudirect_probe g = gdr ("6.18.44");
  struct findings f = { 0 };
  cr_assert_eq (g.via, GPUDIRECT_NONE);
  cr_assert_not (g.nvidia);
  gpudirect_finding (&g, "mlx5_0", "eth9", &f);
  cr_assert_eq (f.v[0].status, FINDING_WARN);
  cr_assert_not (f.v[0].blocking);
  cr_assert_not_null (strstr (f.v[0].fix, "modprobe nvidia_peermem"));
  findings_clear (&f);
  gpudirect_probe_clear (&g);

  tree_mk ("sys/module/nvidia/version", "550.54.15\n");
  tree_mk ("sys/module/nvidia/taint", "OE\n");
  g = gdr ("6.18.44");
  cr_assert_eq (g.via, GPUDIRECT_DMABUF, "open module R550 on 6.18");
  gpudirect_probe_clear (&g);
  g = gdr ("5.10.0-28-amd64");
  cr_assert_eq (g.via, GPUDIRECT_NONE, "5.10 has no RDMA dma-buf");
  gpudirect_finding (&g, "mlx5_0", "eth9", &f);
  cr_assert_not_null (strstr (f.v[0].found, "kernel 5.10.0-28-amd64 is older than 5.12"), "%s",
                      f.v[0].found);
  findings_clear (&f);
  gpudirect_probe_clear (&g);

  tree_mk ("sys/module/nvidia/taint", "POE\n");
  g = gdr ("6.18.44");
  cr_assert_eq (g.via, GPUDIRECT_NONE, "the proprietary module");
  cr_assert (g.proprietary);
  gpudirect_probe_clear (&g);

  tree_mk ("sys/module/nv_peer_mem/refcnt", "0\n");
  g = gdr ("6.18.44");
  cr_assert_eq (g.via, GPUDIRECT_NV_PEER_MEM);
  gpudirect_probe_clear (&g);
  tree_mk ("sys/module/nvidia_peermem/refcnt", "0\n");
  g = gdr ("6.18.44");
  cr_assert_eq (g.via, GPUDIRECT_PEERMEM);
  gpudirect_finding (&g, "mlx5_0", "eth9", &f);
  cr_assert_eq (f.v[0].status, FINDING_OK);
  cr_assert_str_eq (f.v[0].found, "peer memory: nvidia_peermem loaded");
  findings_clear (&f);
  gpudirect_probe_clear (&g);
}

/* ---- rdma_cm -------------------------------------------------------------------- */

Test (qos_apply, rdma_cm_findings)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct rdmacm_probe cm;
  struct findings f = { 0 };

  tree_mk ("sys/class/infiniband/mlx5_0/ports/2/gids/0", "x");
  fake_port ();
  cr_assert_eq (rdmacm_probe_run (p, "mlx5_0", &cm, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (cm.state, RDMACM_ABSENT);
  cr_assert_eq (cm.n, 2);
  cr_assert_eq (cm.ports[0].port, 1, "sorted");
  rdmacm_findings (p, &cm, "mlx5_0", "lo", &f);
  cr_assert_eq (f.n, 4);
  cr_assert_eq (f.v[0].status, FINDING_UNKNOWN);
  cr_assert_not (f.v[0].blocking);
  findings_clear (&f);
  rdmacm_probe_clear (&cm);

  tree_mk ("cfg/rdma_cm/README", "");
  cr_assert_eq (rdmacm_probe_run (p, "mlx5_0", &cm, &err), 0);
  cr_assert_eq (cm.state, RDMACM_NO_GROUP);
  rdmacm_probe_clear (&cm);

  tree_mk ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos", "106\n");
  tree_mk ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_mode", "RoCE v2\n");
  tree_mk ("cfg/rdma_cm/mlx5_0/ports/2/default_roce_tos", "300\n");
  cr_assert_eq (rdmacm_probe_run (p, "mlx5_0", &cm, &err), 0);
  cr_assert_eq (cm.state, RDMACM_OK);
  rdmacm_findings (p, &cm, "mlx5_0", "lo", &f);
  cr_assert_eq (f.v[0].status, FINDING_WARN, "106 is not 104: rdma_cm takes the ToS byte whole");
  cr_assert_str_eq (f.v[0].found, "106 (DSCP 26)");
  cr_assert_str_eq (f.v[0].fix, "roce-hook qos apply --only rdma-cm");
  cr_assert_eq (f.v[1].status, FINDING_OK);
  cr_assert_eq (f.v[2].status, FINDING_UNKNOWN, "ToS 300");
  cr_assert_eq (f.v[3].status, FINDING_UNKNOWN, "no mode file");
  findings_clear (&f);
  rdmacm_probe_clear (&cm);
}

/* ---- what the hook verifies ------------------------------------------------------ */

Test (qos_apply, seed_findings_of_a_bare_and_of_a_shimmed_spec)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  cleanup_oci_config struct oci_config *bare = NULL, *shimmed = NULL;
  struct roce_request req = { 0 };
  struct findings f = { 0 };

  cr_assert_eq (
      oci_config_parse ("{\"root\":{\"path\":\"/r\"},\"mounts\":[{\"destination\":"
                        "\"/dev/shm\",\"type\":\"tmpfs\",\"options\":[\"size=65536k\"]}]}",
                        "/b", &bare, &err),
      0, "%s", err ? err->msg : "");
  seed_findings (p, &req, bare, &f);
  cr_assert_str_eq (f.v[0].check, "stack");
  cr_assert_eq (f.v[0].status, FINDING_WARN);
  cr_assert_str_eq (f.v[1].check, "shm");
  cr_assert_eq (f.v[1].status, FINDING_WARN);
  cr_assert_not_null (strstr (f.v[1].found, "64 MiB, the runtimes' default"), "%s", f.v[1].found);
  cr_assert_str_eq (f.v[2].check, "nccl-sl-unset");
  cr_assert_str_eq (f.v[3].check, "gpudirect");
  for (size_t i = 0; i < f.n; i++)
    cr_assert_not (f.v[i].blocking, "%s", f.v[i].check);
  findings_clear (&f);

  cr_assert_eq (
      oci_config_parse ("{\"root\":{\"path\":\"/r\"},\"process\":{\"env\":[\"NCCL_IB_SL=3\"],"
                        "\"rlimits\":[{\"type\":\"RLIMIT_STACK\",\"hard\":67108864,"
                        "\"soft\":67108864}]},\"mounts\":[{\"destination\":\"/dev/shm\","
                        "\"type\":\"tmpfs\",\"options\":[\"size=1g\"]}]}",
                        "/b", &shimmed, &err),
      0, "%s", err ? err->msg : "");
  seed_findings (p, &req, shimmed, &f);
  cr_assert_eq (f.v[0].status, FINDING_OK);
  cr_assert_eq (f.v[1].status, FINDING_OK);
  cr_assert_str_eq (f.v[2].check, "gpudirect", "a set SL is qos_verdict's to judge");
  findings_clear (&f);
}

/* ---- the DCB items from a probe -------------------------------------------------- */

/* What DCB_CMD_IEEE_GET reported (the parser itself: test_dcb.c).  */
static struct qos_probe
dcb_probe (uint8_t pfc_en)
{
  struct qos_probe pr = { 0 };
  pr.dcb.state = PROBE_OK;
  pr.ieee.has_pfc = true;
  pr.ieee.pfc_cap = 8;
  pr.ieee.pfc_en = pfc_en;
  pr.ieee.pfc_raw[0] = 8;
  pr.ieee.pfc_raw[1] = pfc_en;
  pr.ieee.has_app_table = true;
  return pr;
}

static void
map (struct qos_probe *pr, unsigned dscp, unsigned prio)
{
  if (pr->ieee.dscp_prio[dscp] == 0)
    pr->ieee.n_dscp++;
  pr->ieee.dscp_prio[dscp] |= (uint8_t) (1u << prio);
}

Test (qos_apply, pfc_keeps_the_other_priorities_and_dscp_replaces)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("ens1f0np0", "", "");
  struct qos_probe pr = dcb_probe (0x21); /* PFC on 0 and 5 */
  struct qa_plan pl = { 0 };
  const struct qa_item *it;

  map (&pr, 26, 4);
  map (&pr, 10, 1);
  cr_assert_eq (qos_apply_plan_dcb (p, "mlx5_0", "ens1f0np0", QA_PFC | QA_DSCP, &pr, &pl, &err), 0,
                "%s", err ? err->msg : "");
  cr_assert_eq (pl.changes, 2);
  it = item (&pl, "pfc");
  cr_assert_eq (it->action, QA_CHANGE);
  cr_assert_eq (it->pfc_en, 0x29, "3 on, 0 and 5 kept");
  cr_assert_str_eq (it->now, "on 0,5");
  cr_assert_str_eq (it->target, "on 0,3,5 (priority 3 on, the others as they are)");
  it = item (&pl, "dscp");
  cr_assert_eq (it->action, QA_CHANGE);
  cr_assert_str_eq (it->now, "trust dscp, DSCP 26 -> priority 4");
  cr_assert_eq (it->diff.n_add, 1);
  cr_assert_eq (it->diff.add[0].protocol, 26);
  cr_assert_eq (it->diff.add[0].priority, 3);
  cr_assert_eq (it->diff.n_del, 1);
  cr_assert_eq (it->diff.del[0].priority, 4);
  qos_apply_clear (&pl);

  /* As the policy wants: nothing to change.  */
  pr = dcb_probe (0x08);
  map (&pr, 26, 3);
  cr_assert_eq (qos_apply_plan_dcb (p, "mlx5_0", "ens1f0np0", QA_PFC | QA_DSCP, &pr, &pl, &err), 0);
  cr_assert_eq (pl.changes, 0);
  cr_assert_eq (item (&pl, "pfc")->action, QA_KEEP);
  cr_assert_eq (item (&pl, "dscp")->action, QA_KEEP);
  qos_apply_clear (&pl);

  /* trust pcp: one entry to add.  */
  pr = dcb_probe (0x08);
  cr_assert_eq (qos_apply_plan_dcb (p, "mlx5_0", "ens1f0np0", QA_DSCP, &pr, &pl, &err), 0);
  it = item (&pl, "dscp");
  cr_assert_str_eq (it->now, "trust pcp (no DSCP entries)");
  cr_assert_eq (it->diff.n_add, 1);
  cr_assert_eq (it->diff.n_del, 0);
  qos_apply_clear (&pl);
}

Test (qos_apply, a_driver_without_pfc_state_is_refused)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("ens1f0np0", "", "");
  struct qos_probe pr = dcb_probe (0);
  struct qa_plan pl = { 0 };
  pr.ieee.has_pfc = false;
  assert_err_contains (qos_apply_plan_dcb (p, "mlx5_0", "ens1f0np0", QA_PFC, &pr, &pl, &err), err,
                       "ens1f0np0 reports no IEEE PFC state; nothing was changed");
  cr_assert_eq (pl.n, 0);
  roce_error_release (&err);
  /* DSCP alone needs no PFC state.  */
  cr_assert_eq (qos_apply_plan_dcb (p, "mlx5_0", "ens1f0np0", QA_DSCP, &pr, &pl, &err), 0);
  qos_apply_clear (&pl);
}

Test (qos_apply, pfc_other_priorities_off_when_the_policy_says_so)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p
      = policy_on_tree ("ens1f0np0", "", ",\"pfc_other_priorities\":\"off\"");
  cleanup_policy struct roce_policy *q = NULL;
  struct qos_probe pr = dcb_probe (0x21);
  struct qa_plan pl = { 0 };
  cr_assert (p->qos.pfc_others_off);
  cr_assert_eq (qos_apply_plan_dcb (p, "mlx5_0", "ens1f0np0", QA_PFC, &pr, &pl, &err), 0);
  cr_assert_eq (item (&pl, "pfc")->pfc_en, 0x08);
  cr_assert_str_eq (item (&pl, "pfc")->target,
                    "on 3 (priority 3 on, the others off: qos.pfc_other_priorities)");
  qos_apply_clear (&pl);
  assert_err_contains (policy_parse ("{\"hcas\":{},\"qos\":{\"pfc_other_priorities\":\"drop\"}}",
                                     "d.json", &q, &err),
                       err, "qos.pfc_other_priorities: 'drop' is not one of 'keep', 'off'");
}

Test (qos_apply, ecn_off_in_the_policy_touches_nothing)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", ",\"ecn\":\"off\"");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("sys/class/net/lo/ecn/roce_np/enable/3", "0\n");
  cr_assert_eq (qos_apply_plan (p, NULL, QA_ECN, &pl, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (pl.changes, 0);
  cr_assert_eq (item (&pl, "ecn-np")->action, QA_SKIP);
  cr_assert_str_eq (item (&pl, "ecn-np")->why, "the policy asks for none (qos.ecn 'off')");
  qos_apply_clear (&pl);
}

/* ---- rollback of the rdma_cm group ----------------------------------------------- */

static bool
exists (const char *rel)
{
  cleanup_free char *path = xasprintf ("%s/%s", tree_root, rel);
  return access (path, F_OK) == 0;
}

/* A plain directory is configfs without its kernel: a group made with mkdir
 * gets no ports, so the ToS write after it fails, as a later item would.  */
Test (qos_apply, a_failure_removes_the_rdma_cm_group_this_run_made)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  cleanup_free char *tos = xasprintf ("%s/cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos", tree_root);
  cleanup_free char *want = xasprintf ("rdma-cm-tos of lo (mlx5_0), the earlier changes put back: "
                                       "open `%s` for writing: No such file or directory",
                                       tos);
  struct qa_plan pl;
  fake_port ();
  tree_mk ("sys/class/net/lo/ecn/roce_np/enable/3", "0\n");
  tree_mk ("cfg/rdma_cm/x", NULL);
  cr_assert_eq (qos_apply_plan (p, NULL, QA_ECN | QA_RDMACM, &pl, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_eq (item (&pl, "ecn-np")->action, QA_CHANGE);
  cr_assert_eq (item (&pl, "rdma-cm-tos")->action, QA_CHANGE);
  cr_assert_str_eq (item (&pl, "rdma-cm-tos")->now, "port 1: rdma_cm's default (no group)");
  assert_err_contains (qos_apply_run (&pl, &err), err, want);
  qos_apply_clear (&pl);
  cr_assert_not (exists ("cfg/rdma_cm/mlx5_0"), "the group this run made is gone");
  cr_assert (exists ("cfg/rdma_cm"), "rdma_cm itself stays");
  assert_tree_file ("sys/class/net/lo/ecn/roce_np/enable/3", "0", "the NP write was put back");
}

/* The group appears between the plan and the apply (someone else's mkdir):
 * EEXIST, so it is not this run's and stays, empty as it is.  */
Test (qos_apply, a_group_someone_else_made_stays_on_rollback)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("cfg/rdma_cm/x", NULL);
  cr_assert_eq (qos_apply_plan (p, NULL, QA_RDMACM, &pl, &err), 0, "%s", err ? err->msg : "");
  cr_assert_not_null (item (&pl, "rdma-cm-tos")->group);
  tree_mk ("cfg/rdma_cm/mlx5_0/x", NULL);
  assert_err_contains (qos_apply_run (&pl, &err), err,
                       "rdma-cm-tos of lo (mlx5_0), the earlier changes put back: open");
  qos_apply_clear (&pl);
  cr_assert (exists ("cfg/rdma_cm/mlx5_0"), "a group this run did not make stays");
}

/* The group was there: its values go back when a later item fails, and it
 * stays.  */
Test (qos_apply, a_group_that_was_there_keeps_its_values_and_stays)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = policy_on_tree ("lo", "", "");
  struct qa_plan pl;
  fake_port ();
  tree_mk ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos", "0\n");
  tree_mk ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_mode", "IB/RoCE v1\n");
  cr_assert_eq (qos_apply_plan (p, NULL, QA_RDMACM, &pl, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (pl.changes, 2);
  cr_assert_null (item (&pl, "rdma-cm-tos")->group);
  /* The mode file goes away between the plan and its write.  */
  {
    cleanup_free char *mode
        = xasprintf ("%s/cfg/rdma_cm/mlx5_0/ports/1/default_roce_mode", tree_root);
    cr_assert_eq (unlink (mode), 0);
  }
  assert_err_contains (qos_apply_run (&pl, &err), err,
                       "rdma-cm-mode of lo (mlx5_0), the earlier changes put back: open");
  qos_apply_clear (&pl);
  cr_assert (exists ("cfg/rdma_cm/mlx5_0/ports/1"), "the group stays");
  assert_tree_file ("cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos", "0",
                    "the ToS write was put back");
}
