/* SPDX-License-Identifier: Apache-2.0 */
/* The rest of the seed's `docker run` (--ulimit stack=67108864, a large
 * /dev/shm, NCCL_IB_SL, GPUDirect with NCCL_NET_GDR_LEVEL) and the rdma_cm
 * defaults: roce-runtime sets what it can in config.json; the hook alone
 * cannot change a spec, so it verifies and logs a finding for each, never
 * refusing (a container without them runs, slower or on SL 0).  */
#ifndef ROCE_SEED_H
#define ROCE_SEED_H

#include <stdint.h>

#include "lib/findings.h"
#include "spec/annot.h"
#include "spec/container.h"
#include "spec/policy.h"

/* The size a /dev/shm tmpfs has when nobody chose one: the 64 MiB that
 * Docker, containerd, Podman and runc's spec all default to, and that
 * NCCL's shared-memory transport does not fit in.  */
#define SEED_SHM_RUNTIME_DEFAULT (64ull << 20)

/* Pure but for the GPUDirect and rdma_cm probes: findings "stack", "shm",
 * "nccl-sl-unset", "gpudirect", "rdma-cm-tos", "rdma-cm-mode" (per
 * selected HCA), OK or WARN, never blocking.  */
void seed_findings (const struct roce_policy *p, const struct roce_request *req,
                    const struct oci_config *config, struct findings *out);

/* The start stage's step: logs every finding that is not OK, one line
 * each.  */
void seed_verify (const struct roce_policy *p, const struct roce_request *req,
                  const struct roce_container *c);

#endif
