/* SPDX-License-Identifier: Apache-2.0 */
/* What a RoCE container is granted in its spec, whoever writes it there:
 * roce-runtime into config.json (shim/bundle.c), the NRI plugin into the
 * runtime's adjustment (hook/nri): the RDMA device nodes of its HCAs and
 * rdma_cm, and the NCCL variables it gets where it set none.  Memory
 * locking and the stack come from the policy as they are.  */
#ifndef ROCE_SPEC_GRANT_H
#define ROCE_SPEC_GRANT_H

#include <stddef.h>

#include "spec/annot.h"
#include "lib/error.h"
#include "lib/ipaddr.h"
#include "spec/policy.h"
#include "devices/rdma_nodes.h"

struct spec_grant
{
  char *nccl_ib_hca; /* "mlx5_0,mlx5_1": the selected HCAs, in order */
  char *nccl_ib_tc;  /* the policy's DSCP as a traffic class: dscp << 2 | 2 */
  char *nccl_ib_sl;  /* the PFC priority */
  /* One range covering each selected rail's addresses
   * (policy_nccl_range: NCCL takes one), "" when the rails share no
   * family; its NCCL_IB_ADDR_FAMILY, "AF_INET6" for an IPv6 range (NULL:
   * NCCL's default, AF_INET), so that NCCL's GID choice takes the rails'
   * IPv6 GIDs.  */
  char nccl_ib_addr_range[CIDR_STR_MAX];
  const char *nccl_ib_addr_family;
  struct rdma_node *nodes; /* rdma_nodes_for_request's */
  size_t n_nodes;
};

/* The grant of a request (r->n > 0); refused when an HCA's device node is
 * not found (rdma_nodes_for_request).  */
int spec_grant_make (const struct roce_policy *p, const struct roce_request *r,
                     struct spec_grant *out, roce_error_t *err);
void spec_grant_clear (struct spec_grant *g);

#endif
