/* SPDX-License-Identifier: Apache-2.0 */
/* `qos apply`'s pieces that qos_apply.c and the unit tests share; not part
 * of any public header.  */
#ifndef ROCE_QOS_INT_H
#define ROCE_QOS_INT_H

#include "lib/error.h"

struct roce_policy;
struct qos_probe;
struct qa_plan;
/* The pfc and dscp items from a DCB probe (canned in the unit tests).  */
int qos_apply_plan_dcb (const struct roce_policy *p, const char *hca, const char *netdev,
                        unsigned groups, const struct qos_probe *pr, struct qa_plan *pl,
                        roce_error_t *err);

#endif
