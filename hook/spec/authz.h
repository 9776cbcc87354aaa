/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant authorization: which requesters may use which HCA.  The requester
 * is the Kubernetes namespace that the CRI runtime itself records in the
 * spec's annotations (a tenant cannot set those: CRI passes through only the
 * pod annotations the runtime handler allows, i.e. the roce.io/ ones).  */
#ifndef ROCE_AUTHZ_H
#define ROCE_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "spec/annot.h"
#include "spec/oci.h"
#include "spec/policy.h"

/* The annotations the CRI runtimes write, in the order they are read.  */
extern const char *const authz_namespace_keys[];

/* Refuses unknown roce.io/ annotations (a tenant may choose HCAs and
 * addresses, nothing else: no netdev, no pool, no QoS switch), then checks
 * every selected HCA's tenant list.  The refusal names the rule.  */
int authz_check (const struct roce_policy *p, const struct roce_request *r,
                 const struct roce_kv *annotations, size_t n, roce_error_t *err);

/* Which policy HCAs the container's tenant may use: out[i] for p->hcas[i]
 * (roce.io/hca=auto chooses among those).  Refuses as authz_check does
 * when the runtimes' namespace annotations disagree.  */
int authz_permitted (const struct roce_policy *p, const struct roce_kv *kv, size_t n, bool *out,
                     roce_error_t *err);

#endif
