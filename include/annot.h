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
void annot_request_clear (struct roce_request *r);
/* "mlx5_0,mlx5_1", caller frees.  */
char *annot_request_names (const struct roce_request *r);

#endif
