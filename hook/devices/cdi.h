/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook cdi`: a Container Device Interface spec (kind roce.io/hca) with
 * one device per policy HCA, for CRI-O, Podman and containerd 1.7+ users who
 * prefer CDI for devices (`--device roce.io/hca=mlx5_0`).  */
#ifndef ROCE_CDI_H
#define ROCE_CDI_H

#include <stdio.h>

#include "lib/error.h"
#include "spec/policy.h"

/* The spec as JSON text (caller frees), or NULL with *err set.  */
char *cdi_spec_text (const struct roce_policy *p, roce_error_t *err);

/* The cdiVersion the spec declares: the lowest its fields need.  */
const char *cdi_min_version (const struct roce_policy *p);

#endif
