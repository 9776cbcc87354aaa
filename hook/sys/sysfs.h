/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the host's sysfs (or the fake one a test supplies as the policy's
 * sysfs_root).  Paths are relative to the root; nothing here follows a path
 * that a container controls.  */
#ifndef ROCE_SYSFS_H
#define ROCE_SYSFS_H

#include <stdbool.h>

#include <linux/magic.h>

#ifndef CONFIGFS_MAGIC
#define CONFIGFS_MAGIC 0x62656570 /* fs/configfs/mount.c */
#endif

#include "lib/error.h"
#include "spec/policy.h"

/* <root>/<rel>, one line, trailing newline stripped.  */
int sysfs_read_line (const char *root, const char *rel, char **out, roce_error_t *err);

/* Writes value to an existing attribute file at the absolute path (sysfs,
 * configfs: never created, no symlink at the last component), as `echo
 * value > path` does; the kernel's refusal (EINVAL, EPERM) is the status. */
int sysfs_write_value (const char *path, const char *value, roce_error_t *err);

/* What `qos apply` writes, beneath the policy's roots.  sysfs_root_open
 * opens root (policy key `key`) when it is the filesystem of `magic`
 * (SYSFS_MAGIC, CONFIGFS_MAGIC) or a tree owned by root and writable by no
 * one else (a test's); else refuses in one line.  The others resolve path,
 * which must lie under root, with openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS: a link that leads out of the tree is refused
 * (EXDEV), nothing written outside it.  */
int sysfs_root_open (const char *root, const char *key, unsigned long magic, roce_error_t *err);
int sysfs_write_beneath (const char *root, const char *path, const char *value, roce_error_t *err);
/* mkdir (0755; *made false when it was there) and rmdir of path.  */
int sysfs_mkdir_beneath (const char *root, const char *path, bool *made, roce_error_t *err);
int sysfs_rmdir_beneath (const char *root, const char *path, roce_error_t *err);

/* The HCA's netdev: the policy's `netdev`, else the single entry of
 * <root>/class/infiniband/<hca>/device/net/, else
 * <root>/class/infiniband/<hca>/ports/1/gid_attrs/ndevs/0.  */
int sysfs_hca_netdev (const struct roce_policy *p, const struct policy_hca *h, char **out,
                      roce_error_t *err);

#endif
