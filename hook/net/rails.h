/* SPDX-License-Identifier: Apache-2.0 */
/* The rails file: what a workload needs to pick its own RoCE GID on each
 * HCA without a global NCCL_IB_GID_INDEX (the index differs per HCA and per
 * pod).  Published read-only in the container at RAILS_PATH, one line per
 * rail after a header comment:
 *
 *   # hca ifname address prefix gid_port gid_index roce netdev gpus
 *   mlx5_0 roce0 198.18.10.100 24 1 3 v2 ens1f0np0 0000:1b:00.0
 *
 * gid_port and gid_index are "-" when the GID was not verified (gid_check
 * off, or a warn finding).  gpus: roce.io/hca=auto's, the PCI addresses of
 * the container's GPUs the rail serves (comma list), "-" for HCAs named.
 *
 * Why /dev/roce/rails: /dev is the one directory that every runtime
 * (runc, crun, Docker, Podman, containerd, Kubernetes) gives a container as
 * a tmpfs of its own, so the file is made without writing into the image,
 * goes away with the container, and sits next to /dev/infiniband, whose
 * nodes it describes.  The path is resolved inside the rootfs like the
 * device nodes (rootfs.h: never through a symlink out of it), and the file
 * is bind-mounted over itself read-only.  */
#ifndef ROCE_RAILS_H
#define ROCE_RAILS_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "net/net.h"
#include "spec/container.h"
#include "spec/policy.h"

#define RAILS_DIR "dev/roce"
#define RAILS_NAME "rails"

/* The file's text.  Caller frees.  */
char *rails_render (const struct net_rail *r, size_t n);

/* The file published in the container's mount namespace, in the entry
 * the devices make there (devices.h: struct devices_also): what was made,
 * for the undo.  */
struct rootfs_host;
struct rails_pub
{
  char *text; /* NULL: no rails, nothing to publish */
  unsigned dirs_created;
  bool made;
  bool mounted;
};
void rails_pub_init (struct rails_pub *pub, const struct net_rail *r, size_t n);
void rails_pub_clear (struct rails_pub *pub);
/* In the container's mount namespace, rootfd its rootfs: writes the file,
 * read-only (a read-only bind of itself).  A file or symlink already there
 * is replaced (the link itself); a directory or mount point there is
 * refused; a /dev or /dev/roce on a mount from elsewhere (the host's) gets
 * no file, and the start goes on (logged).  On failure nothing is left.  */
int rails_publish_here (void *pub, int rootfd, const struct rootfs_host *host, roce_error_t *err);
/* Takes back what rails_publish_here made (a later step failed).  */
void rails_unpublish_here (void *pub, int rootfd);

#endif
