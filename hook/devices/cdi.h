/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook cdi`: a Container Device Interface spec (kind roce.io/hca) with
 * one device per policy HCA, each activating the whole container as
 * roce.io/hca does, for Podman, CRI-O, Docker >= 25, containerd 1.7+ and
 * device plugins (`--device roce.io/hca=mlx5_0`, CRI's CDIDevices).  */
#ifndef ROCE_CDI_H
#define ROCE_CDI_H

#include <stdio.h>

#include "lib/error.h"
#include "spec/policy.h"

/* What the spec's hooks run: roce-hook at `hook`, with the policy at
 * `config` (absolute paths).  */
struct cdi_hooks
{
  const char *hook;
  const char *config;
};

/* The spec as JSON text (caller frees), or NULL with *err set.  */
char *cdi_spec_text (const struct roce_policy *p, const struct cdi_hooks *hooks, roce_error_t *err);

/* The cdiVersion the spec declares: the lowest its fields need.  */
const char *cdi_min_version (const struct roce_policy *p);

#endif
