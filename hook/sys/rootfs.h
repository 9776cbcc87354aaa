/* SPDX-License-Identifier: Apache-2.0 */
/* Paths inside a container's rootfs, which is hostile: its image may hold
 * symlinks (absolute, relative, "..") anywhere.  Everything here works on
 * fds: a path is resolved once, inside the root, and the result is an fd;
 * nothing is ever re-walked as a string from outside the root.
 *
 * Resolution follows openat2(2) RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: a
 * symlink is followed as if the root were "/", ".." stops at the root, so no
 * path can leave it.  Where openat2 is missing (kernels before 5.6, or a
 * seccomp profile that refuses it) an fd-based walk gives the same answer:
 * one component at a time with O_NOFOLLOW, symlinks read and expanded by
 * hand, ".." handled by going back to the fd it came from (the kernel's
 * ".." is never used).  */
#ifndef ROCE_ROOTFS_H
#define ROCE_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/error.h"

struct rootfs_host;

enum rootfs_resolver
{
  ROOTFS_AUTO,    /* openat2, else the walk */
  ROOTFS_OPENAT2, /* openat2 only (-ENOSYS where missing) */
  ROOTFS_WALK,    /* the fd walk only */
};

#define ROOTFS_MAX_SYMLINKS 40

/* Opens `path` inside rootfd.  `flags` are open(2) flags (O_CREAT is not
 * accepted); O_NOFOLLOW applies to the last component only, as in open(2).
 * O_CLOEXEC is always added.  Returns the fd, or -errno.  */
int rootfs_openat (int rootfd, const char *path, int flags, enum rootfs_resolver how);

/* Opens directory `path` inside rootfd (O_PATH), creating the components that
 * do not exist (mode 0755), each with mkdirat + an O_NOFOLLOW open of what was
 * made.  Never creates through a symlink: a dangling one is refused.
 * *created is the number of trailing components it made (0..n), for
 * rootfs_rmdirs().  */
int rootfs_mkdirs (int rootfd, const char *path, unsigned *created, const struct rootfs_host *host,
                   roce_error_t *err);

/* Undoes rootfs_mkdirs(): removes the last `created` components of `path`
 * (deepest first), each only if it is still an empty directory.  */
void rootfs_rmdirs (int rootfd, const char *path, unsigned created);

/* A mount point for a non-directory (a device node) called `name` in dirfd:
 * an existing regular file or char device is used as it is; nothing there
 * makes an empty regular file (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0644) and
 * sets *created; anything else (a symlink, a directory, a fifo, a socket, a
 * block device) is refused.  Returns an fd on the mount point.  `shown` is
 * the path for messages.  */
int rootfs_node_target (int dirfd, const char *name, const char *shown, bool *created,
                        roce_error_t *err);

/* What tells a tmpfs of the container's own (the runtime's /dev, made for
 * it) from a filesystem of the host's bind-mounted in (a host tmpfs, the
 * host's devtmpfs, which reports itself as a tmpfs): taken in the host's
 * mount namespace before a step enters the container's, without listing
 * the host's mounts (a node of thousands of mounts pays nothing for them).
 *
 * Where the kernel has statmount (6.8), a tmpfs is the container's own when
 * its mount, and each mount between it and the rootfs's, is a whole tmpfs
 * (not a devtmpfs, not a subtree), none of them on a filesystem that one of
 * the spec's bind mounts brings from the host (their sources, stat'ed here),
 * nor on the one the host has at the same place under root.path (a host
 * mount under the rootfs, copied into the container's namespace or
 * propagated there).  That is every way a filesystem of the host gets under
 * a rootfs: the rootfs's own mount and its submounts, and the spec's mounts.
 * Elsewhere (an older kernel, a seccomp profile that refuses statmount, a
 * mount namespace the container joined, whose mounts no spec of ours made)
 * the host's whole mount table is read, as before: `devs`.  */
struct rootfs_host
{
  int root_fd; /* root.path in the host's mount namespace (O_PATH), -1: none */
  char *root_path;
  dev_t *binds; /* the filesystems of the spec's bind-mount sources */
  size_t n_binds;
  bool by_list; /* the fallback: devs is every filesystem the host has mounted */
  dev_t *devs;
  size_t n;
  struct rootfs_seen *seen; /* what the rule found so far this start (rootfs.c) */
};
#define ROOTFS_HOST_INIT                                                                           \
  {                                                                                                \
    .root_fd = -1                                                                                  \
  }
/* In the host's mount namespace.  bind_sources: NULL-terminated (may be
 * NULL); by_list: use the host's mount table (a joined mount namespace).  */
int rootfs_host_open (struct rootfs_host *h, const char *root_path, char *const *bind_sources,
                      bool by_list, roce_error_t *err);
void rootfs_host_clear (struct rootfs_host *h);
/* rootfs_host_open for container c (its root.path and bind mounts; the
 * host's table when it joined a mount namespace).  */
struct roce_container;
int rootfs_host_of (const struct roce_container *c, struct rootfs_host *h, roce_error_t *err);

/* Whether something may be created in dirfd without it outliving the
 * container: dirfd lies on the rootfs's own mount, or on a tmpfs of the
 * container's own (above).  A directory that the spec bind-mounts from the
 * host, tmpfs or devtmpfs included, is refused: what is made there would
 * stay on the host.  host NULL: no host view (unit tests), any tmpfs counts
 * as the container's.  Called in the container's mount namespace.  */
int rootfs_check_creatable (int rootfd, int dirfd, const char *shown,
                            const struct rootfs_host *host, roce_error_t *err);

/* True when the fd lies on procfs or sysfs, where nothing may be mounted.  */
bool rootfs_on_pseudo_fs (int fd);

#endif
