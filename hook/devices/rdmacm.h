/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA CM's per-port defaults in configfs, which every rdma_cm
 * application (UCX, MPI, perftest -R) uses and NCCL_IB_TC does not reach:
 *   <configfs_root>/rdma_cm/<hca>/ports/<p>/default_roce_tos   ("104")
 *   <configfs_root>/rdma_cm/<hca>/ports/<p>/default_roce_mode  ("RoCE v2")
 * The <hca> group exists once someone made it (mkdir, as mlnx-tools'
 * cma_roce_tos does); until then rdma_cm uses ToS 0 and its own default
 * mode.  The ports come from <sysfs_root>/class/infiniband/<hca>/ports.  */
#ifndef ROCE_RDMACM_H
#define ROCE_RDMACM_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/findings.h"
#include "spec/policy.h"

#define RDMACM_MODE_V2 "RoCE v2"

struct rdmacm_port
{
  unsigned port;
  char *tos_path;
  struct probe_item tos;
  unsigned tos_value;
  char *mode_path;
  struct probe_item mode;
  char *mode_value;
};

enum rdmacm_state
{
  RDMACM_OK,       /* the group is there: each port's items were read */
  RDMACM_NO_GROUP, /* rdma_cm is there, the HCA's group is not */
  RDMACM_ABSENT,   /* no <configfs_root>/rdma_cm: module not loaded or configfs not mounted */
};

struct rdmacm_probe
{
  enum rdmacm_state state;
  char *root;  /* <configfs_root>/rdma_cm */
  char *group; /* <configfs_root>/rdma_cm/<hca> */
  struct rdmacm_port *ports;
  size_t n;
};

/* The ToS the policy's DSCP asks for: dscp << 2.  */
unsigned rdmacm_target_tos (const struct roce_policy *p);

/* Fails only when the HCA's sysfs ports cannot be listed.  */
int rdmacm_probe_run (const struct roce_policy *p, const char *hca, struct rdmacm_probe *out,
                      roce_error_t *err);
void rdmacm_probe_clear (struct rdmacm_probe *r);

/* Per port: "rdma-cm-tos" and "rdma-cm-mode", never blocking (NCCL does not
 * use rdma_cm): OK, WARN with the fix, UNKNOWN when configfs has no
 * rdma_cm.  */
void rdmacm_findings (const struct roce_policy *p, const struct rdmacm_probe *r, const char *hca,
                      const char *netdev, struct findings *out);

/* mkdir of the HCA's group (configfs then makes its ports).  made: whether
 * this call made it (false when it was there: EEXIST, someone else's).  */
int rdmacm_make_group (const char *group, bool *made, roce_error_t *err);
/* rmdir of a group rdmacm_make_group made (configfs takes its ports and
 * their values with it).  */
int rdmacm_remove_group (const char *group, roce_error_t *err);

#endif
