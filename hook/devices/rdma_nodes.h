/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA device nodes of the HCAs a container selected, read from sysfs as
 * libibverbs's own enumeration reads it (hook/devices/rdma_nodes.c: no
 * libibverbs, no netlink, so that roce-runtime, linked statically, needs
 * neither).  Used by the hook (bind mounts, device cgroup) and by the shim
 * (linux.devices and linux.resources.devices in config.json).  */
#ifndef ROCE_RDMA_NODES_H
#define ROCE_RDMA_NODES_H

#include <stddef.h>

#include "lib/error.h"
#include "spec/annot.h"
#include "spec/policy.h"

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

/* Parses a sysfs "dev" value, "231:192".  */
int rdma_parse_devno (const char *s, unsigned *major, unsigned *minor);

/* The node's name under /dev/infiniband ("uverbs0").  */
const char *rdma_node_name (const struct rdma_node *n);

#endif
