/* SPDX-License-Identifier: Apache-2.0 */
/* What libibverbs and RDMA netlink say (hook/devices/rdma.c): whether
 * libibverbs lists an HCA (loaded at run time, the policy's sysfs_root as
 * SYSFS_PATH), and the RDMA subsystem's netns mode.  A container's device
 * nodes are read from sysfs (rdma_nodes.h).  */
#ifndef ROCE_RDMA_H
#define ROCE_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/rdma_nodes.h"
#include "lib/error.h"
#include "spec/annot.h"
#include "spec/policy.h"

/* Whether libibverbs itself (loaded now, with the host's providers) lists
 * hca; *names: what it lists ("none"), caller frees.  For `check`.  */
int rdma_ibverbs_lists (const struct roce_policy *p, const char *hca, bool *listed, char **names,
                        roce_error_t *err);

/* ---- RDMA netns mode ------------------------------------------------------------ */

enum rdma_netns_mode
{
  RDMA_NETNS_UNKNOWN,
  RDMA_NETNS_SHARED,
  RDMA_NETNS_EXCLUSIVE,
};

struct rdma_netns
{
  enum rdma_netns_mode mode;
  char *source; /* where the answer came from */
  char *detail; /* why it is unknown */
};

/* RDMA netlink (RDMA_NLDEV_CMD_SYS_GET) first, then
 * <sysfs_root>/module/ib_core/parameters/netns_mode (Y shared, N exclusive).  */
void rdma_netns_probe (const char *sysfs_root, struct rdma_netns *out);
void rdma_netns_clear (struct rdma_netns *r);
const char *rdma_netns_mode_name (enum rdma_netns_mode m);

/* Parses one datagram answering RDMA_NLDEV_CMD_SYS_GET (seq): returns 1 with
 * *mode set once the reply is in, 0 when more is to come, < 0 on a kernel
 * error or a malformed reply.  */
int rdma_sys_feed (const void *buf, size_t len, uint32_t seq, bool *have, uint8_t *mode,
                   roce_error_t *err);

#endif
