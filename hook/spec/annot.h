/* SPDX-License-Identifier: Apache-2.0 */
/* The tenant's annotations `roce.io/hca` and `roce.io/ip` (untrusted).  */
#ifndef ROCE_ANNOT_H
#define ROCE_ANNOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "spec/oci.h"
#include "spec/policy.h"

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
  /* roce.io/ip: the address asked for in each net of the HCA (ip[i] in
   * hca->net[i]; family 0: none asked).  */
  struct roce_addr ip[POLICY_NETS];
  /* roce.io/hca=auto: the container's GPUs (PCI addresses) this rail
   * serves, NULL-terminated; NULL when the HCAs were named or chosen by the
   * cpuset's NUMA nodes.  */
  char **gpus;
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

/* roce.io/ip beside roce.io/hca=auto, on the request auto made (r): a bare
 * address, and only when one HCA was chosen (the tenant cannot key
 * addresses by HCAs it did not name).  */
int annot_parse_ip_auto (const struct annot_source *src, const char *ip, struct roce_request *r,
                         roce_error_t *err);
/* "mlx5_0,mlx5_1", caller frees.  */
char *annot_request_names (const struct roce_request *r);

/* A CDI request: each device of `roce-hook cdi`'s spec (cdi.c) adds
 * ANNOT_CDI_PREFIX<its policy index>=<its HCA> to the container's
 * environment, and the spec's hooks run roce-hook with --cdi.  The
 * variables are the tenant's to set too (-e), as an annotation is: the same
 * validation and tenant rules.  */
#define ANNOT_CDI_PREFIX "ROCE_CDI_HCA_"
extern const struct annot_source annot_from_cdi;
/* Whether env has a CDI device's variable.  */
bool annot_cdi_asked (char *const *env);
/* The HCAs env's CDI variables name, comma-joined in the policy's order
 * (runtimes apply a request's devices in an order of their own), names the
 * policy does not list last as found; NULL when there is none.  */
char *annot_cdi_hcas (const struct roce_policy *p, char *const *env);
/* A CDI request beside an annotation roce.io/hca or a ROCE_HCA (NULL when
 * absent): both must name the same HCAs, in any order; else a refusal
 * that shows neither value.  */
int annot_cdi_agree (const char *cdi, const char *annotation, const char *env_hca,
                     roce_error_t *err);

#endif
