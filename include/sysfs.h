/* Reading the host's sysfs (or the fake one a test supplies as the policy's
 * sysfs_root).  Paths are relative to the root; nothing here follows a path
 * that a container controls.  */
#ifndef ROCE_SYSFS_H
#define ROCE_SYSFS_H

#include "error.h"
#include "policy.h"

/* <root>/<rel>, one line, trailing newline stripped.  */
int sysfs_read_line (const char *root, const char *rel, char **out, roce_error_t *err);

/* Writes value to an existing attribute file at the absolute path (sysfs,
 * configfs: never created, no symlink at the last component), as `echo
 * value > path` does; the kernel's refusal (EINVAL, EPERM) is the status. */
int sysfs_write_value (const char *path, const char *value, roce_error_t *err);

/* The HCA's netdev: the policy's `netdev`, else the single entry of
 * <root>/class/infiniband/<hca>/device/net/, else
 * <root>/class/infiniband/<hca>/ports/1/gid_attrs/ndevs/0.  */
int sysfs_hca_netdev (const struct roce_policy *p, const struct policy_hca *h, char **out,
                      roce_error_t *err);

#endif
