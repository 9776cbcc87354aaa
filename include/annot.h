/* SPDX-License-Identifier: Apache-2.0 */
/* The tenant's annotations `roce.io/hca` and `roce.io/ip` (untrusted).  */
#ifndef ROCE_ANNOT_H
#define ROCE_ANNOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "policy.h"

#define ANNOT_HCA "roce.io/hca"
#define ANNOT_IP "roce.io/ip"
#define ANNOT_VALUE_MAX 4096
/* The container environment variables that stand for the two where the
 * spec carries no roce.io/ annotation: read by the shim only (Docker < 24
 * passes no annotation); the shim writes them into the spec's annotations
 * as roce.io/hca and roce.io/ip.  */
#define ANNOT_ENV_HCA "ROCE_HCA"
#define ANNOT_ENV_IP "ROCE_IP"

struct roce_selection
{
  const struct policy_hca *hca; /* points into the policy */
  bool has_ip;
  uint32_t ip;
};

struct roce_request
{
  size_t n;
  struct roce_selection *sel; /* in annotation order */
};

/* hca: the roce.io/hca value (required); ip: roce.io/ip or NULL.  Every
 * refusal is in the SPEC's "<what>: <expected> vs <found> (fix: ...)" form.  */
int annot_parse (const struct roce_policy *p, const char *hca, const char *ip,
                 struct roce_request *out, roce_error_t *err);

/* Where the two values came from, as a refusal names them: the
 * annotations, or (the shim, for Docker < 24) the container's environment
 * variables ROCE_HCA and ROCE_IP.  */
struct annot_source
{
  const char *what_hca, *what_ip; /* "annotation roce.io/hca" */
  const char *hca, *ip;           /* "roce.io/hca" */
  const char *thing;              /* "annotation" */
};
extern const struct annot_source annot_from_annotations;
extern const struct annot_source annot_from_env;
/* annot_parse, its refusals naming src's names.  */
int annot_parse_from (const struct roce_policy *p, const struct annot_source *src, const char *hca,
                      const char *ip, struct roce_request *out, roce_error_t *err);
void annot_request_clear (struct roce_request *r);
/* "mlx5_0,mlx5_1", caller frees.  */
char *annot_request_names (const struct roce_request *r);

#endif
