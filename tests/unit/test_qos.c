/* SPDX-License-Identifier: Apache-2.0 */
/* The verdict matrix: a host that passes everything, then every check
 * failing alone; the ECN sysfs reader on a tree of files.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "qos/qos.h"
#include "unit.h"

static struct roce_policy *
policy (const char *ecn)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  cleanup_free char *in = xasprintf (
      "{\"sysfs_root\":\"/sysroot\",\"qos\":{\"mode\":\"enforce\",\"pfc_priority\":3,\"dscp\":26,"
      "\"ecn\":\"%s\",\"min_mtu\":9000},\"hcas\":{"
      "\"mlx5_0\":{\"netdev\":\"ens1f0np0\",\"subnet\":\"198.18.0.0/"
      "24\",\"pool\":\"198.18.0.10-198.18.0.20\"},"
      "\"mlx5_1\":{\"netdev\":\"ens1f1np1\",\"subnet\":\"198.18.1.0/"
      "24\",\"pool\":\"198.18.1.10-198.18.1.20\"},"
      "\"mlx5_10\":{\"netdev\":\"ens2f0np0\",\"subnet\":\"198.18.2.0/"
      "24\",\"pool\":\"198.18.2.10-198.18.2.20\"}}}",
      ecn);
  cr_assert_eq (policy_parse (in, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

/* A netdev that passes every check: PFC on 3 only, trust dscp with the
 * default table (DSCP d -> priority d >> 3), ECN NP and RP on, MTU 9000.  */
static void
good (struct qos_probe *pr, const char *netdev)
{
  memset (pr, 0, sizeof (*pr));
  pr->netdev = xstrdup (netdev);
  pr->prio = 3;
  pr->dcb.state = PROBE_OK;
  pr->dcb.source = xstrdup ("DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET)");
  pr->ieee.has_pfc = true;
  pr->ieee.pfc_cap = 8;
  pr->ieee.pfc_en = 0x08;
  pr->ieee.has_ets = true;
  pr->ieee.has_app_table = true;
  for (unsigned d = 0; d < 64; d++)
    pr->ieee.dscp_prio[d] = (uint8_t) (1u << (d >> 3));
  pr->ieee.n_dscp = pr->ieee.n_app = 64;
  for (int pt = 0; pt < QOS_ECN_N; pt++)
    {
      pr->ecn[pt].state = PROBE_OK;
      pr->ecn[pt].source = qos_ecn_path ("/sysroot", netdev, (enum qos_ecn_point) pt, 3);
      pr->ecn_on[pt] = true;
    }
  pr->mtu.state = PROBE_OK;
  pr->mtu.source = xstrdup ("rtnetlink (RTM_GETLINK, IFLA_MTU)");
  pr->mtu_value = 9000;
  pr->stall.state = PROBE_OK;
  pr->stall_ms = 100;
}

static void
only_table (struct qos_probe *pr, unsigned dscp, unsigned prio)
{
  memset (pr->ieee.dscp_prio, 0, sizeof (pr->ieee.dscp_prio));
  pr->ieee.dscp_prio[dscp] = (uint8_t) (1u << prio);
  pr->ieee.n_dscp = pr->ieee.n_app = 1;
}

struct run
{
  struct roce_policy *p;
  struct qos_probe pr[2];
  struct findings f;
};

static void
run_clear (struct run *r)
{
  findings_clear (&r->f);
  for (int i = 0; i < 2; i++)
    qos_probe_clear (&r->pr[i]);
  policy_free (r->p);
}
#define cleanup_run __attribute__ ((cleanup (run_clear)))

/* One HCA (mlx5_0 on ens1f0np0), optionally a container env.  */
static void
verdict1 (struct run *r, char *const *env, unsigned macvlan_mtu)
{
  struct qos_subject s = { .hca = "mlx5_0", .probe = &r->pr[0], .macvlan_mtu = macvlan_mtu };
  findings_clear (&r->f);
  qos_verdict (r->p, &s, 1, env, &r->f);
}

static const struct finding *
find (const struct findings *f, const char *check)
{
  for (size_t i = 0; i < f->n; i++)
    if (strcmp (f->v[i].check, check) == 0)
      return &f->v[i];
  return NULL;
}

/* Asserts that `check` has this status and blocking flag and that every
 * other finding is OK.  */
static const struct finding *
alone (const struct findings *f, const char *check, enum finding_status st, bool blocking)
{
  const struct finding *x = find (f, check);
  cr_assert_not_null (x, "no `%s` finding", check);
  cr_assert_eq (x->status, st, "%s: status %s, expected %s (found: %s)", check,
                finding_status_name (x->status), finding_status_name (st), x->found);
  cr_assert_eq (x->blocking, blocking, "%s: blocking %d", check, x->blocking);
  for (size_t i = 0; i < f->n; i++)
    if (&f->v[i] != x)
      cr_assert_eq (f->v[i].status, FINDING_OK, "%s is %s too: %s", f->v[i].check,
                    finding_status_name (f->v[i].status), f->v[i].found);
  return x;
}

static char *
refusal (const struct finding *x)
{
  roce_error_t err = NULL;
  char *msg;
  cr_assert_lt (finding_refuse (x, &err), 0);
  msg = steal_pointer (&err->msg);
  roce_error_release (&err);
  return msg;
}

static char *good_env[]
    = { "PATH=/bin", "NCCL_IB_TC=106", "NCCL_IB_SL=3", "NCCL_IB_HCA=mlx5_0", NULL };
static char *no_nccl[] = { "PATH=/bin", NULL };

Test (verdict, everything_passes)
{
  cleanup_run struct run r = { .p = policy ("require") };
  static const char *const order[]
      = { "mtu", "pfc", "pfc-other", "dscp", "ecn-np", "ecn-rp", "nccl-tc", "nccl-sl", "nccl-hca" };
  good (&r.pr[0], "ens1f0np0");
  verdict1 (&r, good_env, 0);
  cr_assert_eq (r.f.n, ARRAY_SIZE (order));
  for (size_t i = 0; i < r.f.n; i++)
    {
      cr_assert_str_eq (r.f.v[i].check, order[i]);
      cr_assert_eq (r.f.v[i].status, FINDING_OK, "%s: %s", r.f.v[i].check, r.f.v[i].found);
      cr_assert_not (r.f.v[i].blocking);
      cr_assert_null (r.f.v[i].fix, "%s has a fix", r.f.v[i].check);
    }
  cr_assert_null (findings_first_blocking (&r.f));
  cr_assert_str_eq (find (&r.f, "dscp")->found,
                    "trust dscp, DSCP 26 -> priority 3 (64 DSCP entries)");
  cr_assert_str_eq (find (&r.f, "pfc")->found, "enabled (PFC on priorities 3)");
  cr_assert_str_eq (find (&r.f, "mtu")->hca, "mlx5_0");
  cr_assert_str_eq (find (&r.f, "mtu")->netdev, "ens1f0np0");
  cr_assert_null (find (&r.f, "nccl-tc")->hca, "env checks belong to the container");
}

Test (verdict, no_container_env_means_no_nccl_checks)
{
  cleanup_run struct run r = { .p = policy ("require") };
  char *empty[] = { "NCCL_IB_TC=", "NCCL_IB_SL=", "NCCL_IB_HCA=", NULL };
  good (&r.pr[0], "ens1f0np0");
  verdict1 (&r, NULL, 0);
  cr_assert_null (find (&r.f, "nccl-tc"));
  cr_assert_eq (r.f.n, 6);
  verdict1 (&r, no_nccl, 0);
  cr_assert_eq (r.f.n, 6, "unset NCCL variables are not checked");
  verdict1 (&r, empty, 0);
  cr_assert_eq (r.f.n, 6, "NCCL reads empty variables as unset");
}

Test (verdict, pfc_off)
{
  cleanup_run struct run r = { .p = policy ("require") };
  cleanup_free char *msg = NULL;
  good (&r.pr[0], "ens1f0np0");
  r.pr[0].ieee.pfc_en = 0;
  verdict1 (&r, no_nccl, 0);
  msg = refusal (alone (&r.f, "pfc", FINDING_FAIL, true));
  cr_assert_str_eq (msg, "PFC on priority 3 of ens1f0np0 (mlx5_0): enabled vs disabled (PFC on "
                         "priorities: none) (fix: dcb pfc set dev ens1f0np0 prio-pfc 3:on)");
  cr_assert_eq (findings_first_blocking (&r.f), find (&r.f, "pfc"));
}

Test (verdict, pfc_on_priorities_without_rdma_warns)
{
  cleanup_run struct run r = { .p = policy ("require") };
  const struct finding *x;
  good (&r.pr[0], "ens1f0np0");
  r.pr[0].ieee.pfc_en = 0x29; /* 0, 3, 5 */
  verdict1 (&r, no_nccl, 0);
  x = alone (&r.f, "pfc-other", FINDING_WARN, false);
  cr_assert_str_eq (x->fix, "dcb pfc set dev ens1f0np0 prio-pfc 0:off 5:off");
  cr_assert_not_null (strstr (x->found, "on for 0,5"), "%s", x->found);
  cr_assert_null (findings_first_blocking (&r.f), "a warning never refuses");
}

Test (verdict, dscp_trust_pcp)
{
  cleanup_run struct run r = { .p = policy ("require") };
  cleanup_free char *msg = NULL;
  good (&r.pr[0], "ens1f0np0");
  memset (r.pr[0].ieee.dscp_prio, 0, sizeof (r.pr[0].ieee.dscp_prio));
  r.pr[0].ieee.n_dscp = 0;
  verdict1 (&r, no_nccl, 0);
  msg = refusal (alone (&r.f, "dscp", FINDING_FAIL, true));
  cr_assert_str_eq (msg, "DSCP 26 of ens1f0np0 (mlx5_0): trust dscp, DSCP 26 -> priority 3 vs "
                         "trust pcp (no DSCP entries in the APP table) (fix: dcb app add dev "
                         "ens1f0np0 dscp-prio 26:3)");
}

Test (verdict, dscp_mapped_elsewhere_or_missing_or_ambiguous)
{
  struct
  {
    uint8_t mask;
    const char *found, *fix;
  } cases[] = {
    { 1u << 0, "trust dscp, DSCP 26 -> priority 0",
      "dcb app replace dev ens1f0np0 dscp-prio 26:3" },
    { 0, "trust dscp, but DSCP 26 is not in the APP table (63 other DSCP entries)",
      "dcb app add dev ens1f0np0 dscp-prio 26:3" },
    { (1u << 0) | (1u << 3), "trust dscp, DSCP 26 -> priority 0,3",
      "dcb app replace dev ens1f0np0 dscp-prio 26:3" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_run struct run r = { .p = policy ("require") };
      const struct finding *x;
      good (&r.pr[0], "ens1f0np0");
      r.pr[0].ieee.dscp_prio[26] = cases[i].mask;
      if (cases[i].mask == 0)
        r.pr[0].ieee.n_dscp = 63;
      verdict1 (&r, no_nccl, 0);
      x = alone (&r.f, "dscp", FINDING_FAIL, true);
      cr_assert_str_eq (x->found, cases[i].found);
      cr_assert_str_eq (x->fix, cases[i].fix);
    }
}

Test (verdict, ecn_disabled_fails_in_every_mode_but_off)
{
  for (int pt = 0; pt < QOS_ECN_N; pt++)
    for (int m = 0; m < 3; m++)
      {
        static const char *const modes[] = { "require", "warn-unknown", "off" };
        cleanup_run struct run r = { .p = policy (modes[m]) };
        const char *check = pt == QOS_ECN_NP ? "ecn-np" : "ecn-rp";
        good (&r.pr[0], "ens1f0np0");
        r.pr[0].ecn_on[pt] = false;
        verdict1 (&r, no_nccl, 0);
        if (m == 2)
          {
            cr_assert_null (find (&r.f, check), "qos.ecn off checks nothing");
            continue;
          }
        const struct finding *x = alone (&r.f, check, FINDING_FAIL, true);
        cleanup_free char *fix = xasprintf ("echo 1 > /sysroot/class/net/ens1f0np0/ecn/%s/enable/3",
                                            pt == QOS_ECN_NP ? "roce_np" : "roce_rp");
        cr_assert_str_eq (x->fix, fix);
        cr_assert_str_eq (x->found, "disabled (0)");
      }
}

Test (verdict, ecn_missing_blocks_only_under_require)
{
  for (int m = 0; m < 2; m++)
    {
      cleanup_run struct run r = { .p = policy (m == 0 ? "require" : "warn-unknown") };
      const struct finding *x;
      good (&r.pr[0], "ens1f0np0");
      r.pr[0].ecn[QOS_ECN_RP].state = PROBE_UNSUPPORTED;
      r.pr[0].ecn[QOS_ECN_RP].errnum = ENOENT;
      verdict1 (&r, no_nccl, 0);
      x = alone (&r.f, "ecn-rp", FINDING_UNKNOWN, m == 0);
      cr_assert_not_null (strstr (x->found, "the driver has no roce_rp/enable/3"), "%s", x->found);
      if (m == 0)
        cr_assert_not_null (strstr (x->fix, "qos.ecn to 'warn-unknown' in p.json"), "%s", x->fix);
      else
        cr_assert_null (x->fix);
    }
}

Test (verdict, ecn_empty_read_is_unknown_not_zero)
{
  for (int m = 0; m < 2; m++)
    {
      cleanup_run struct run r = { .p = policy (m == 0 ? "require" : "warn-unknown") };
      const struct finding *x;
      good (&r.pr[0], "ens1f0np0");
      r.pr[0].ecn[QOS_ECN_NP].state = PROBE_ERROR;
      r.pr[0].ecn[QOS_ECN_NP].detail
          = xstrdup ("empty read (the driver could not query the firmware)");
      r.pr[0].ecn_on[QOS_ECN_NP] = false;
      verdict1 (&r, no_nccl, 0);
      x = alone (&r.f, "ecn-np", FINDING_UNKNOWN, m == 0);
      cr_assert_str_eq (x->found, "unknown: empty read (the driver could not query the firmware)");
    }
}

Test (verdict, parent_mtu_too_small)
{
  cleanup_run struct run r = { .p = policy ("require") };
  cleanup_free char *msg = NULL;
  good (&r.pr[0], "ens1f0np0");
  r.pr[0].mtu_value = 1500;
  verdict1 (&r, no_nccl, 0);
  msg = refusal (alone (&r.f, "mtu", FINDING_FAIL, true));
  cr_assert_str_eq (msg, "MTU of ens1f0np0 (mlx5_0): at least 9000 (the container's macvlan "
                         "inherits it) vs 1500 (fix: ip link set ens1f0np0 mtu 9000)");
}

Test (verdict, mtu_unreadable_blocks)
{
  cleanup_run struct run r = { .p = policy ("require") };
  const struct finding *x;
  good (&r.pr[0], "ens1f0np0");
  r.pr[0].mtu.state = PROBE_ERROR;
  r.pr[0].mtu.errnum = ENODEV;
  r.pr[0].mtu.detail = xstrdup ("no netdev 'ens1f0np0' in the host's network namespace");
  verdict1 (&r, no_nccl, 0);
  x = alone (&r.f, "mtu", FINDING_UNKNOWN, true);
  cr_assert_str_eq (x->found, "unreadable: no netdev 'ens1f0np0' in the host's network namespace");
}

Test (verdict, macvlan_mtu_must_equal_the_parent)
{
  cleanup_run struct run r = { .p = policy ("require") };
  good (&r.pr[0], "ens1f0np0");
  verdict1 (&r, no_nccl, 9000);
  cr_assert_eq (find (&r.f, "macvlan-mtu")->status, FINDING_OK);
  verdict1 (&r, no_nccl, 1500);
  alone (&r.f, "macvlan-mtu", FINDING_FAIL, true);
  cr_assert_str_eq (find (&r.f, "macvlan-mtu")->expected, "9000 (its parent's)");
}

Test (verdict, nic_without_dcb_cannot_prove_it_is_lossless)
{
  cleanup_run struct run r = { .p = policy ("warn-unknown") };
  cleanup_free char *msg = NULL;
  const struct finding *pfc, *dscp;
  good (&r.pr[0], "rh1a2b3c");
  memset (&r.pr[0].ieee, 0, sizeof (r.pr[0].ieee));
  r.pr[0].dcb.state = PROBE_UNSUPPORTED;
  r.pr[0].dcb.errnum = EOPNOTSUPP;
  verdict1 (&r, no_nccl, 0);
  pfc = find (&r.f, "pfc");
  dscp = find (&r.f, "dscp");
  cr_assert_eq (pfc->status, FINDING_UNKNOWN, "unsupported is not `wrong`");
  cr_assert (pfc->blocking, "but it does not prove losslessness");
  cr_assert_eq (dscp->status, FINDING_UNKNOWN);
  cr_assert (dscp->blocking);
  cr_assert_null (find (&r.f, "pfc-other"), "nothing to say about other priorities");
  cr_assert_eq (findings_first_blocking (&r.f), pfc);
  msg = refusal (pfc);
  cr_assert_str_eq (msg, "PFC on priority 3 of rh1a2b3c (mlx5_0): enabled vs DCB not supported "
                         "by this netdev (EOPNOTSUPP): the host cannot prove it is lossless "
                         "(fix: set hcas.mlx5_0.netdev in p.json to the HCA's DCB-capable PF "
                         "netdev, or set qos.mode to 'warn' there to run on an unproven fabric)");
  cr_assert_null (strchr (msg, '"'), "runc escapes double quotes");
  /* Under warn the way out is already taken: the fix does not offer it.  */
  r.p->qos.mode = QOS_MODE_WARN;
  verdict1 (&r, no_nccl, 0);
  cr_assert_str_eq (find (&r.f, "pfc")->fix, "set hcas.mlx5_0.netdev in p.json to the HCA's "
                                             "DCB-capable PF netdev");
}

Test (verdict, dcb_query_errors_and_missing_parts)
{
  {
    cleanup_run struct run r = { .p = policy ("require") };
    good (&r.pr[0], "ens1f0np0");
    r.pr[0].dcb.state = PROBE_ERROR;
    r.pr[0].dcb.errnum = ENODEV;
    r.pr[0].dcb.detail = xstrdup ("No such device (ENODEV)");
    verdict1 (&r, no_nccl, 0);
    cr_assert_str_eq (find (&r.f, "pfc")->found, "DCB state unreadable (No such device (ENODEV)): "
                                                 "the host cannot prove it is lossless");
    cr_assert_not_null (strstr (find (&r.f, "pfc")->fix, "does not exist"));
  }
  {
    cleanup_run struct run r = { .p = policy ("require") };
    good (&r.pr[0], "ens1f0np0");
    r.pr[0].ieee.has_pfc = false;
    verdict1 (&r, no_nccl, 0);
    alone (&r.f, "pfc", FINDING_UNKNOWN, true);
    cr_assert_str_eq (find (&r.f, "pfc")->found,
                      "the driver reports no IEEE PFC state: the host cannot prove it is lossless");
  }
}

Test (verdict, nccl_ib_tc)
{
  struct
  {
    const char *tc;
    int table; /* 0 default (d >> 3), 1 only 26 -> 3, 2 no DCB */
    bool ok;
    const char *found;
  } cases[] = {
    { "106", 0, true, "106 (DSCP 26)" },
    { "104", 1, true, "104 (DSCP 26)" },
    { "0x6a", 1, true, "106 (DSCP 26)" },
    { "96", 0, true, "96 (DSCP 24)" }, /* the default table maps 24 to priority 3 too */
    { "96", 1, false, "96 (DSCP 24), which ens1f0np0 maps to priority none, not 3" },
    { "96", 2, false,
      "96 (DSCP 24), but the policy's lossless DSCP is 26 (and the DSCP table of "
      "ens1f0np0 cannot be read)" },
    { "106", 2, true, "106 (DSCP 26)" },
    { "8", 0, false, "8 (DSCP 2), which ens1f0np0 maps to priority 0, not 3" },
    { "abc", 0, false, "'abc', not a traffic class 0..255" },
    { "300", 0, false, "'300', not a traffic class 0..255" },
    { "096", 0, false, "'096', not a traffic class 0..255" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_run struct run r = { .p = policy ("require") };
      cleanup_free char *var = xasprintf ("NCCL_IB_TC=%s", cases[i].tc);
      char *env[] = { var, NULL };
      const struct finding *x;
      good (&r.pr[0], "ens1f0np0");
      if (cases[i].table == 1)
        only_table (&r.pr[0], 26, 3);
      if (cases[i].table == 2)
        {
          memset (&r.pr[0].ieee, 0, sizeof (r.pr[0].ieee));
          r.pr[0].dcb.state = PROBE_UNSUPPORTED;
        }
      verdict1 (&r, env, 0);
      x = find (&r.f, "nccl-tc");
      cr_assert_not_null (x);
      cr_assert_eq (x->status, cases[i].ok ? FINDING_OK : FINDING_FAIL, "[%s] %s", cases[i].tc,
                    x->found);
      cr_assert_str_eq (x->found, cases[i].found);
      if (! cases[i].ok)
        {
          cr_assert (x->blocking);
          cr_assert_str_eq (x->fix, "NCCL_IB_TC=106 (DSCP 26 << 2 | ECT(0)), or leave it unset");
        }
      if (cases[i].table != 2)
        alone (&r.f, "nccl-tc", x->status, x->blocking);
    }
}

Test (verdict, nccl_ib_tc_without_any_probed_hca)
{
  cleanup_run struct run r = { .p = policy ("require") };
  char *env[] = { "NCCL_IB_TC=96", NULL };
  qos_verdict (r.p, NULL, 0, env, &r.f);
  cr_assert_eq (r.f.n, 1);
  cr_assert_eq (r.f.v[0].status, FINDING_FAIL);
  cr_assert_str_eq (r.f.v[0].found, "96 (DSCP 24), but the policy's lossless DSCP is 26");
}

Test (verdict, nccl_ib_sl)
{
  static const char *const vals[] = { "3", "5", "x", "03" };
  static const bool ok[] = { true, false, false, true };
  for (size_t i = 0; i < ARRAY_SIZE (vals); i++)
    {
      cleanup_run struct run r = { .p = policy ("require") };
      cleanup_free char *var = xasprintf ("NCCL_IB_SL=%s", vals[i]);
      char *env[] = { var, NULL };
      good (&r.pr[0], "ens1f0np0");
      verdict1 (&r, env, 0);
      if (ok[i])
        cr_assert_eq (find (&r.f, "nccl-sl")->status, FINDING_OK, "%s", vals[i]);
      else
        {
          const struct finding *x = alone (&r.f, "nccl-sl", FINDING_FAIL, true);
          cr_assert_str_eq (x->fix, "NCCL_IB_SL=3, or leave it unset");
          cr_assert_str_eq (x->expected, "3 (the PFC priority)");
        }
    }
}

Test (verdict, nccl_ib_hca_names_only_selected_hcas)
{
  struct
  {
    const char *sel[2];
    const char *val;
    const char *found; /* NULL: OK */
    const char *fix;
  } cases[] = {
    { { "mlx5_0" }, "mlx5_0", NULL, NULL },
    { { "mlx5_0" }, "mlx5_0:1", NULL, NULL },
    { { "mlx5_0" }, "=mlx5_0:1", NULL, NULL },
    { { "mlx5_0", "mlx5_1" }, "=mlx5_1,mlx5_0", NULL, NULL },
    { { "mlx5_0", "mlx5_1" },
      "mlx5_1,mlx5_0",
      "'mlx5_1', a prefix that also matches mlx5_10, which is not selected",
      "NCCL_IB_HCA==mlx5_0,mlx5_1, or leave it unset" },
    { { "mlx5_0" },
      "mlx5_1",
      "'mlx5_1', which is not a selected HCA",
      "NCCL_IB_HCA=mlx5_0, or leave it unset" },
    { { "mlx5_0" },
      "mlx5_0,mlx5_1",
      "'mlx5_1', which is not a selected HCA",
      "NCCL_IB_HCA=mlx5_0, or leave it unset" },
    { { "mlx5_0" },
      "^mlx5_1",
      "'^mlx5_1', an exclude list: NCCL would use every other HCA it sees",
      "NCCL_IB_HCA=mlx5_0, or leave it unset" },
    { { "mlx5_1" },
      "mlx5_1",
      "'mlx5_1', a prefix that also matches mlx5_10, which is not selected",
      "NCCL_IB_HCA==mlx5_1, or leave it unset" },
    { { "mlx5_1" }, "=mlx5_1", NULL, NULL },
    { { "mlx5_0" },
      ",:1",
      "',:1', no HCA name: NCCL would use every HCA it sees",
      "NCCL_IB_HCA=mlx5_0, or leave it unset" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_run struct run r = { .p = policy ("require") };
      cleanup_free char *var = xasprintf ("NCCL_IB_HCA=%s", cases[i].val);
      char *env[] = { var, NULL };
      struct qos_subject s[2];
      size_t n = cases[i].sel[1] ? 2 : 1;
      const struct finding *x;
      for (size_t k = 0; k < n; k++)
        {
          good (&r.pr[k], k ? "ens1f1np1" : "ens1f0np0");
          s[k] = (struct qos_subject){ .hca = cases[i].sel[k], .probe = &r.pr[k] };
        }
      qos_verdict (r.p, s, n, env, &r.f);
      x = find (&r.f, "nccl-hca");
      cr_assert_not_null (x);
      if (cases[i].found == NULL)
        {
          cr_assert_eq (x->status, FINDING_OK, "[%s] %s", cases[i].val, x->found);
          continue;
        }
      x = alone (&r.f, "nccl-hca", FINDING_FAIL, true);
      cr_assert_str_eq (x->found, cases[i].found);
      cr_assert_str_eq (x->fix, cases[i].fix);
    }
}

Test (verdict, two_hcas_in_order_first_blocking_wins)
{
  cleanup_run struct run r = { .p = policy ("require") };
  struct qos_subject s[2];
  good (&r.pr[0], "ens1f0np0");
  good (&r.pr[1], "ens1f1np1");
  r.pr[0].ecn_on[QOS_ECN_RP] = false;
  r.pr[1].mtu_value = 1500;
  s[0] = (struct qos_subject){ .hca = "mlx5_0", .probe = &r.pr[0] };
  s[1] = (struct qos_subject){ .hca = "mlx5_1", .probe = &r.pr[1] };
  qos_verdict (r.p, s, 2, good_env, &r.f);
  cr_assert_eq (r.f.n, 6 + 6 + 3);
  cr_assert_str_eq (r.f.v[6].hca, "mlx5_1");
  cr_assert_str_eq (findings_first_blocking (&r.f)->check, "ecn-rp");
  cr_assert_str_eq (findings_first_blocking (&r.f)->hca, "mlx5_0");
}

/* ---- the ECN reader on a sysfs tree ----------------------------------------- */

static void
ecn_file (const char *point, const char *content)
{
  cleanup_free char *rel = xasprintf ("class/net/ens1f0np0/ecn/%s/enable/3", point);
  tree_mk (rel, content);
}

TestSuite (ecn, .init = tree_setup, .fini = tree_teardown);

Test (ecn, reads_one_zero_empty_missing_garbage)
{
  struct
  {
    const char *content; /* NULL: no file */
    enum probe_state st;
    bool on;
    const char *detail;
  } cases[] = {
    { "1\n", PROBE_OK, true, NULL },
    { "0\n", PROBE_OK, false, NULL },
    { "", PROBE_ERROR, false, "empty read (the driver could not query the firmware)" },
    { "enabled\n", PROBE_ERROR, false, "unexpected content 'enabled'" },
    { NULL, PROBE_UNSUPPORTED, false, "the driver exposes no such file" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      struct probe_item it = { 0 };
      bool on = ! cases[i].on;
      cleanup_free char *want
          = xasprintf ("%s/class/net/ens1f0np0/ecn/roce_np/enable/3", tree_root);
      cleanup_free char *class = xasprintf ("%s/class", tree_root);
      tree_remove (class);
      if (cases[i].content)
        ecn_file ("roce_np", cases[i].content);
      qos_probe_ecn (tree_root, "ens1f0np0", 3, QOS_ECN_NP, &it, &on);
      cr_assert_eq (it.state, cases[i].st, "case %zu: %d", i, it.state);
      cr_assert_eq (on, cases[i].on, "case %zu", i);
      cr_assert_str_eq (it.source, want);
      if (cases[i].detail)
        cr_assert_str_eq (it.detail, cases[i].detail);
      free (it.detail);
      free (it.source);
    }
}

Test (ecn, probe_run_refuses_a_name_that_is_no_netdev)
{
  cleanup_run struct run r = { .p = policy ("require") };
  cleanup_error roce_error_t err = NULL;
  assert_err_contains (qos_probe_run (r.p, "../etc", &r.pr[0], &err), err,
                       "not a valid interface name");
}

Test (ecn, probe_run_on_lo_keeps_unsupported_apart)
{
  cleanup_run struct run r = { .p = policy ("warn-unknown") };
  cleanup_error roce_error_t err = NULL;
  free (r.p->sysfs_root);
  r.p->sysfs_root = xstrdup (tree_root);
  ecn_file ("roce_np", "1\n");
  cr_assert_eq (qos_probe_run (r.p, "lo", &r.pr[0], &err), 0);
  cr_assert_eq (r.pr[0].dcb.state, PROBE_UNSUPPORTED);
  cr_assert_eq (r.pr[0].dcb.errnum, EOPNOTSUPP);
  cr_assert_eq (r.pr[0].mtu.state, PROBE_OK);
  cr_assert_eq (r.pr[0].mtu_value, 65536);
  cr_assert_eq (r.pr[0].stall.state, PROBE_UNSUPPORTED);
  cr_assert_eq (r.pr[0].ecn[QOS_ECN_NP].state, PROBE_UNSUPPORTED, "the file is for ens1f0np0");
  cr_assert_eq (r.pr[0].ecn[QOS_ECN_RP].state, PROBE_UNSUPPORTED);
}
