/* `roce-hook check [--json] [--hca H]`: the host readiness report.  For every
 * policy HCA: its netdev, each QoS check (OK/WARN/FAIL/UNKNOWN, expected,
 * found, the fix), the PFC stall-prevention timeout, the DCB state and the
 * RoCE v2 GID entries; for the host: the RDMA netns mode.  Exit 0 when
 * nothing blocks, 1 when a finding would refuse containers under
 * qos.mode=enforce, 2 when the check cannot run (policy unreadable, bad
 * arguments).  */
#ifndef ROCE_CHECK_H
#define ROCE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* argv[0] is "check".  Prints to out (the report) and err_out (errors).  */
int roce_check_main (const char *config_path, int argc, char **argv, FILE *out, FILE *err_out);

/* ---- RoCE v2 GIDs ------------------------------------------------------------ */

struct gid_entry
{
  unsigned port;
  unsigned index;
  char *gid;  /* as sysfs prints it: 0000:0000:...:ffff:c612:0a05 */
  char *type; /* "RoCE v2" */
  char *ndev; /* the netdev's name in its own netns, "" when none */
};

/* The RoCE v2 entries of <sysfs_root>/class/infiniband/<hca>/ports/N/gids/I
 * (with gid_attrs/types/I and gid_attrs/ndevs/I), sorted by port and index.
 * Empty entries (ENOENT, EINVAL as the kernel answers for them, the zero GID)
 * are skipped.  Fails only when the HCA has no ports directory.  */
int check_roce_v2_gids (const char *sysfs_root, const char *hca, struct gid_entry **out,
                        size_t *n, roce_error_t *err);
void gid_entries_free (struct gid_entry *v, size_t n);

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
void check_rdma_netns (const char *sysfs_root, struct rdma_netns *out);
void rdma_netns_clear (struct rdma_netns *r);
const char *rdma_netns_mode_name (enum rdma_netns_mode m);

/* Parses one datagram answering RDMA_NLDEV_CMD_SYS_GET (seq): returns 1 with
 * *mode set once the reply is in, 0 when more is to come, < 0 on a kernel
 * error or a malformed reply.  */
int check_rdma_sys_feed (const void *buf, size_t len, uint32_t seq, bool *have, uint8_t *mode,
                         roce_error_t *err);

#endif
