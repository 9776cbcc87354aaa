/* SPDX-License-Identifier: Apache-2.0 */
/* What a RoCE container is granted in its spec (spec/grant.h).  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "spec/grant.h"
#include "lib/utils.h"

static struct roce_cidr
covering_cidr (const struct roce_request *r)
{
  struct roce_cidr c = r->sel[0].hca->subnet;
  for (size_t i = 1; i < r->n; i++)
    {
      const struct roce_cidr *s = &r->sel[i].hca->subnet;
      unsigned prefix = c.prefix < s->prefix ? c.prefix : s->prefix;
      while (prefix > 0 && (c.addr & cidr_mask (prefix)) != (s->addr & cidr_mask (prefix)))
        prefix--;
      c.prefix = prefix;
      c.addr &= cidr_mask (prefix);
    }
  return c;
}

int
spec_grant_make (const struct roce_policy *p, const struct roce_request *r, struct spec_grant *out,
                 roce_error_t *err)
{
  struct roce_cidr cover;

  memset (out, 0, sizeof (*out));
  if (rdma_nodes_for_request (p, r, &out->nodes, &out->n_nodes, err) < 0)
    return -1;
  out->nccl_ib_hca = annot_request_names (r);
  out->nccl_ib_tc = xasprintf ("%u", p->qos.dscp << 2 | 2);
  out->nccl_ib_sl = xasprintf ("%u", p->qos.pfc_priority);
  cover = covering_cidr (r);
  cidr_format (&cover, out->nccl_ib_addr_range);
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
