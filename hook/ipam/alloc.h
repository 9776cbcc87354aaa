/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator: which address of an HCA's pool a holder gets.  It reads
 * and changes the store only through lease.h (as CNI host-local's allocator
 * stands apart from its disk store); the cluster's blocks (blocks/) narrow
 * it to the node's blocks.  */
#ifndef ROCE_IPAM_ALLOC_H
#define ROCE_IPAM_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipam/lease.h"
#include "lib/error.h"
#include "spec/policy.h"

/* Whether a holder's namespace still exists.  */
typedef bool (*alloc_alive_fn) (const struct lease_holder *h, void *arg);

/* Gives h an address of hca in its net `net` (one of hca->net): `want`
 * when not NULL (refused when another live holder has it), else the lowest
 * free one of the pool (refused, naming the pool, when none is).  A holder
 * whose namespace is gone is dropped to make room.  */
int alloc_assign (struct lease_store *s, struct lease_holder *h, const struct policy_hca *hca,
                  const struct policy_net *net, const char *ifname, const struct roce_addr *want,
                  alloc_alive_fn alive, void *arg, struct roce_addr *out, roce_error_t *err);

/* Reads every holder and drops those (but keep) whose namespace is gone;
 * how many (0 also when they cannot be read: the error is logged).  */
size_t alloc_reclaim (struct lease_store *s, const struct lease_holder *keep, alloc_alive_fn alive,
                      void *arg);

#endif
