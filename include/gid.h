/* The RoCE GID table of an HCA's ports, read from sysfs
 * (<sysfs_root>/class/infiniband/<hca>/ports/<p>/gids/<i>, gid_attrs/types/<i>,
 * gid_attrs/ndevs/<i>): what `check` shows and what RDMA resolves a peer
 * through.  */
#ifndef ROCE_GID_H
#define ROCE_GID_H

#include <stddef.h>

#include "error.h"

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
int gid_list_roce_v2 (const char *sysfs_root, const char *hca, struct gid_entry **out, size_t *n,
                      roce_error_t *err);
void gid_entries_free (struct gid_entry *v, size_t n);

#endif
