/* SPDX-License-Identifier: Apache-2.0 */
/* The lossless QoS gate (the policy's `qos`, roce-hook.json(5)).
 *
 * 1. The probe reads, from the host network namespace and without running
 *    any program, what a netdev's lossless set-up is: DCB netlink (PFC, ETS,
 *    the DSCP APP table, DCBX), RoCE ECN per priority from sysfs, the MTU
 *    from rtnetlink, the PFC stall-prevention timeout from the ethtool
 *    ioctl.  Every item keeps its source, and "the driver does not support
 *    it" (EOPNOTSUPP, no such file) apart from "it is wrong".
 * 2. The verdict is a pure function: policy + probed state + the container's
 *    env -> findings, each with the HCA, the check, expected vs found and the
 *    exact command that fixes it.
 * 3. The gate runs both in the hook's start path and applies qos.mode.  */
#ifndef ROCE_QOS_H
#define ROCE_QOS_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/findings.h"
#include "lldp/lldp.h"
#include "spec/annot.h"
#include "spec/container.h"
#include "spec/policy.h"
#include "sys/dcb.h"

/* ---- probe ---------------------------------------------------------------- */

enum qos_ecn_point
{
  QOS_ECN_NP, /* notification point: marks CNPs */
  QOS_ECN_RP, /* reaction point: slows down on CNPs */
  QOS_ECN_N,
};

struct qos_probe
{
  char *netdev;
  unsigned prio; /* the priority whose ECN files were read */
  struct probe_item dcb;
  struct dcb_ieee ieee;
  struct probe_item ecn[QOS_ECN_N];
  bool ecn_on[QOS_ECN_N];
  struct probe_item mtu;
  unsigned mtu_value;
  struct probe_item stall; /* ETHTOOL_PFC_PREVENTION_TOUT */
  unsigned stall_ms;       /* 0: disabled */
  /* The switch port's last LLDP frame (lldp.h), read from state_dir when
   * qos.switch is not off: never waited for.  */
  bool sw_loaded;
  struct lldp_seen sw;
};

/* Probes netdev for the policy's pfc_priority.  Fails only for a netdev name
 * that cannot be a netdev; everything else is recorded in the items.  */
int qos_probe_run (const struct roce_policy *p, const char *netdev, struct qos_probe *out,
                   roce_error_t *err);
/* The same on a start's host socket (DCB queries on it), with the MTU of the
 * link u already looked up (uplink.h); either may be NULL.  */
struct nl_sock;
struct roce_uplink;
int qos_probe_run_on (const struct roce_policy *p, const char *netdev, struct nl_sock *host,
                      const struct roce_uplink *u, struct qos_probe *out, roce_error_t *err);
void qos_probe_clear (struct qos_probe *pr);

/* The single items, for tests and for `check`.  */
void qos_probe_dcb (const char *netdev, struct qos_probe *out);
void qos_probe_dcb_on (struct nl_sock *host, const char *netdev, struct qos_probe *out);
void qos_probe_ecn (const char *sysfs_root, const char *netdev, unsigned prio,
                    enum qos_ecn_point pt, struct probe_item *it, bool *on);
void qos_probe_mtu (const char *netdev, struct probe_item *it, unsigned *mtu);
void qos_probe_stall (const char *netdev, struct probe_item *it, unsigned *ms);
/* The PFC storm-prevention timeout (ethtool tunable PFC_PREVENTION_TOUT, ms)
 * of netdev through fd (an AF_INET socket): cmd ETHTOOL_GTUNABLE reads *ms,
 * ETHTOOL_STUNABLE writes it.  The ioctl's -1 with errno on failure
 * (ENAMETOOLONG for a name that is no interface name).  */
int qos_stall_tunable (int fd, const char *netdev, unsigned cmd, unsigned short *ms);
/* <sysfs_root>/class/net/<netdev>/ecn/roce_{np,rp}/enable/<prio>.  Caller frees.  */
char *qos_ecn_path (const char *sysfs_root, const char *netdev, enum qos_ecn_point pt,
                    unsigned prio);

/* ---- verdict -------------------------------------------------------------- */

/* One selected HCA and what was probed on its netdev.  */
struct qos_subject
{
  const char *hca;
  const struct qos_probe *probe;
  unsigned macvlan_mtu; /* 0: not created yet (it inherits the parent's) */
};

/* Pure: no I/O.  env is the container's "K=V" list, NULL when there is no
 * container (`check`): then the NCCL_* checks are left out.  The findings
 * come in a fixed order: per HCA mtu, macvlan-mtu, pfc, pfc-other, dscp,
 * ecn-np, ecn-rp; then nccl-tc, nccl-sl, nccl-hca.  OK findings are included
 * (check prints them); checks that cannot apply are left out.  */
void qos_verdict (const struct roce_policy *p, const struct qos_subject *subj, size_t n,
                  char *const *env, struct findings *out);
/* Whether the container's env sets a variable qos_verdict checks
 * (NCCL_IB_TC, NCCL_IB_SL, NCCL_IB_HCA): a verdict made without that env
 * does not stand for the container's.  */
bool qos_env_checked (char *const *env);
/* The switch checks of one subject (hook/qos/qos_switch.c): switch-pfc,
 * switch-dscp, switch-mfs, switch-tc, from s->probe->sw; nothing when
 * qos.switch is off or the record was not loaded.  qos_verdict calls it.  */
void qos_switch_verdict (const struct roce_policy *p, const struct qos_subject *s,
                         struct findings *out);
/* A switch-* finding (qos.switch decides whether it blocks).  */
bool qos_finding_is_switch (const struct finding *f);

/* The first finding the gate refuses a start on under p: a blocking switch
 * finding (qos.switch enforce), or any blocking one under qos.mode enforce.  */
const struct finding *qos_first_refusing (const struct roce_policy *p, const struct findings *f);

/* ---- the gate ------------------------------------------------------------- */

/* Called in the start stage after the request is validated and before
 * anything is created: read-only.  qos.mode enforce: refuses with the first
 * blocking finding (all findings are logged); warn: logs them and returns 0;
 * off: probes nothing.  */
int qos_gate (const struct roce_policy *p, const struct roce_request *req,
              const struct roce_container *c, roce_error_t *err);

#endif
