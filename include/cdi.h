/* `roce-hook cdi`: a Container Device Interface spec (kind roce.io/hca) with
 * one device per policy HCA, for CRI-O, Podman and containerd 1.7+ users who
 * prefer CDI for devices (`--device roce.io/hca=mlx5_0`).  */
#ifndef ROCE_CDI_H
#define ROCE_CDI_H

#include <stdio.h>

#include "error.h"
#include "policy.h"

/* Writes the spec as JSON to out.  */
int cdi_write_spec (const struct roce_policy *p, FILE *out, roce_error_t *err);

/* The same into path, replaced atomically (written beside it, fsynced,
 * renamed): a reader sees the old spec or the new one, never a part.  */
int cdi_write_file (const struct roce_policy *p, const char *path, roce_error_t *err);

/* The cdiVersion the spec declares: the lowest its fields need.  */
const char *cdi_min_version (const struct roce_policy *p);

#endif
