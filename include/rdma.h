/* RDMA device nodes of the HCAs a container selected, found with libibverbs
 * (the policy's sysfs_root goes to it as SYSFS_PATH).  Used by the hook (bind
 * mounts, device cgroup) and by the runtime shim (linux.devices and
 * linux.resources.devices in config.json).  */
#ifndef ROCE_RDMA_H
#define ROCE_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "annot.h"
#include "error.h"
#include "policy.h"

#define RDMA_CDEV_DIR "/dev/infiniband"

struct rdma_node
{
  char path[64]; /* "/dev/infiniband/uverbs0": on the host and in the container */
  unsigned major, minor;
};

/* The uverbs node of each selected HCA, in the request's order, then
 * /dev/infiniband/rdma_cm when the host has it (<sysfs_root>/class/misc/rdma_cm/dev).
 * Read from sysfs as libibverbs's own enumeration reads it (an HCA without
 * a uverbs device, or whose /dev/infiniband node is gone, is not listed: a
 * refusal).  *out is malloc'ed (free() it).  */
int rdma_nodes_for_request (const struct roce_policy *p, const struct roce_request *r,
                            struct rdma_node **out, size_t *n, roce_error_t *err);

/* Whether libibverbs itself (loaded now, with the host's providers) lists
 * hca; *names: what it lists ("none"), caller frees.  For `check`.  */
int rdma_ibverbs_lists (const struct roce_policy *p, const char *hca, bool *listed, char **names,
                        roce_error_t *err);

/* Parses a sysfs "dev" value, "231:192".  */
int rdma_parse_devno (const char *s, unsigned *major, unsigned *minor);

/* The node's name under /dev/infiniband ("uverbs0").  */
const char *rdma_node_name (const struct rdma_node *n);

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
