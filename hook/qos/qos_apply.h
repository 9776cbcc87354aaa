/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook qos apply`: brings each policy HCA's netdev to the policy
 * through the interfaces `check` reads, so that a node goes from bare to
 * gated with this tool alone (no mlnx_qos, no hand-written script):
 *   pfc        DCB_CMD_IEEE_SET DCB_ATTR_IEEE_PFC: pfc_priority on, the other
 *              priorities' bits as they are (read-modify-write);
 *   dscp       DSCP APP entries: dscp -> pfc_priority added (DCB_CMD_IEEE_SET),
 *              then that DSCP's entries on other priorities deleted
 *              (DCB_CMD_IEEE_DEL); the first DSCP entry is trust dscp on mlx5;
 *   ecn        RoCE ECN NP and RP on the priority, where the driver exposes
 *              <sysfs_root>/class/net/<if>/ecn/roce_{np,rp}/enable/<prio>;
 *   pfc-stall  the ethtool tunable PFC_PREVENTION_TOUT, where the policy asks
 *              (qos.pfc_stall_prevention);
 *   rdma-cm    default_roce_tos (dscp << 2) and default_roce_mode (RoCE v2) of
 *              every port in <configfs_root>/rdma_cm/<hca>.
 * Plan, then apply: the plan probes everything and refuses (naming the
 * netdev) before anything changes when an item cannot be applied; the apply
 * changes only what differs, and puts back what it changed if a later item
 * fails.  */
#ifndef ROCE_QOS_APPLY_H
#define ROCE_QOS_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "lib/error.h"
#include "spec/policy.h"
#include "sys/dcb.h"

enum qa_group
{
  QA_PFC = 1 << 0,
  QA_DSCP = 1 << 1,
  QA_ECN = 1 << 2,
  QA_STALL = 1 << 3,
  QA_RDMACM = 1 << 4,
  QA_ALL = (1 << 5) - 1,
};

/* "ecn,rdma-cm" -> QA_ECN | QA_RDMACM.  Unknown or empty names: EINVAL
 * naming the ones there are.  */
int qos_apply_parse_only (const char *list, unsigned *groups, roce_error_t *err);

enum qa_action
{
  QA_KEEP,   /* already as the policy wants */
  QA_CHANGE, /* differs: apply changes it */
  QA_SKIP,   /* not applicable here (why says) */
  QA_CANNOT, /* asked for and impossible here (why says): a dry run's plan */
};

enum qa_op
{
  QA_OP_NONE,
  QA_OP_PFC,   /* a PFC set with pfc_en */
  QA_OP_APP,   /* APP adds, then deletes */
  QA_OP_WRITE, /* value to an attribute file (after mkdir of group, when set) */
  QA_OP_STALL, /* the ethtool tunable */
};

struct qa_item
{
  const char
      *item; /* "pfc", "dscp", "ecn-np", "ecn-rp", "pfc-stall", "rdma-cm-tos", "rdma-cm-mode" */
  char *hca;
  char *netdev;
  char *now;
  char *target;
  enum qa_action action;
  char *why; /* QA_SKIP */
  enum qa_op op;
  struct dcb_ieee ieee; /* QA_OP_PFC, QA_OP_APP: the state read */
  uint8_t pfc_en;
  struct dcb_app_diff diff;
  const char *root; /* QA_OP_WRITE: the policy's sysfs_root or configfs_root, path's tree */
  char *path;       /* QA_OP_WRITE */
  char *value;
  char *old;       /* what the file held, to put back */
  char *group;     /* QA_OP_WRITE: a configfs group to make first */
  bool made_group; /* this run made group (not EEXIST): removed on rollback */
  unsigned stall, stall_old;
  bool done;
};

struct qa_plan
{
  struct qa_item *v;
  size_t n;
  size_t changes;
  /* A dry run plans on past what cannot be applied (QA_CANNOT items), the
   * first such refusal kept here; an apply refuses at once.  */
  bool keep_going;
  size_t cannot;
  roce_error_t blocked;
};

/* Probes every HCA of p (or only_hca) for the groups asked.  Read-only.  A
 * refusal (a netdev without DCB when pfc or dscp is asked, an unreadable
 * item, no rdma_cm in configfs) fails naming the netdev or file, with
 * nothing changed.  */
int qos_apply_plan (const struct roce_policy *p, const char *only_hca, unsigned groups,
                    struct qa_plan *out, roce_error_t *err);
/* The same, planning on past what cannot be applied when keep_going (the
 * dry run shows the whole plan): those items are QA_CANNOT and out->blocked
 * holds the first refusal.  */
int qos_apply_plan_ex (const struct roce_policy *p, const char *only_hca, unsigned groups,
                       bool keep_going, struct qa_plan *out, roce_error_t *err);
/* Applies the QA_CHANGE items in order; on a failure puts back the ones
 * already done (in reverse), removes the rdma_cm groups this run made (not
 * the ones that were there), and fails with the item named.  */
int qos_apply_run (struct qa_plan *plan, roce_error_t *err);
/* The table (HCA, NETDEV, ITEM, NOW, TARGET, ACTION) and the last line.  */
void qos_apply_render (FILE *out, const struct qa_plan *plan, bool dry_run);
void qos_apply_clear (struct qa_plan *plan);

/* The subcommand: plan, apply unless dry_run, print the table to out.  A
 * refusal prints no table (nothing was changed), but for a dry run, which
 * prints the whole plan with what cannot be applied marked, then fails with
 * the first refusal; a failed apply prints the table (what was set and put
 * back) before failing.  */
int qos_apply_command (const struct roce_policy *p, const char *only_hca, unsigned groups,
                       bool dry_run, FILE *out, roce_error_t *err);

#endif
