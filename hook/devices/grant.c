/* SPDX-License-Identifier: Apache-2.0 */
/* What a RoCE container is granted in its spec (devices/grant.h).  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "devices/grant.h"
#include "lib/utils.h"

int
spec_grant_make (const struct roce_policy *p, const struct roce_request *r, struct spec_grant *out,
                 roce_error_t *err)
{
  cleanup_free const struct policy_hca **hcas = xmalloc0 ((r->n + 1) * sizeof (*hcas));
  struct roce_cidr cover;

  memset (out, 0, sizeof (*out));
  if (rdma_nodes_for_request (p, r, &out->nodes, &out->n_nodes, err) < 0)
    return -1;
  out->nccl_ib_hca = annot_request_names (r);
  out->nccl_ib_tc = xasprintf ("%u", p->qos.dscp << 2 | 2);
  out->nccl_ib_sl = xasprintf ("%u", p->qos.pfc_priority);
  for (size_t i = 0; i < r->n; i++)
    hcas[i] = r->sel[i].hca;
  if (policy_nccl_range (hcas, r->n, &cover))
    {
      cidr_format (&cover, out->nccl_ib_addr_range);
      out->nccl_ib_addr_family = cover.addr.family == AF_INET6 ? "AF_INET6" : NULL;
    }
  return 0;
}

void
spec_grant_clear (struct spec_grant *g)
{
  free (g->nodes);
  free (g->nccl_ib_hca);
  free (g->nccl_ib_tc);
  free (g->nccl_ib_sl);
  memset (g, 0, sizeof (*g));
}
