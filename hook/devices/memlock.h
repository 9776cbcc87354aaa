/* SPDX-License-Identifier: Apache-2.0 */
/* Memory locking for RDMA: the container's RLIMIT_MEMLOCK (the policy's
 * `memlock`) and CAP_IPC_LOCK in its capability sets.  */
#ifndef ROCE_MEMLOCK_H
#define ROCE_MEMLOCK_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "lib/error.h"
#include "spec/oci.h"
#include "spec/policy.h"

struct memlock_plan
{
  bool apply; /* false: config.json's own RLIMIT_MEMLOCK, at least the policy's, applies */
  rlim_t
      value; /* what the container gets: soft = hard = value when applied, else the spec's soft */
};

/* Decides what to do.  runc applies process.rlimits to the container's init
 * after the prestart/createRuntime hooks have run, so a RLIMIT_MEMLOCK there
 * would override whatever the hook sets: one below the policy's value is a
 * refusal, one at or above it is left to the runtime.  */
int memlock_decide (const struct roce_policy *p, const struct oci_config *c,
                    struct memlock_plan *out, roce_error_t *err);

/* prlimit()s the container's process; *saved gets the limit it had.  Raising
 * the hard limit needs CAP_SYS_RESOURCE: without it this is a refusal that
 * names the hard limit the hook could set.  */
int memlock_apply (pid_t pid, const struct roce_policy *p, const struct memlock_plan *plan,
                   struct rlimit *saved, roce_error_t *err);
/* Puts the saved limit back; where that would raise the hard limit without
 * CAP_SYS_RESOURCE it cannot, and says so in the log (a refused container's
 * process is killed by the runtime anyway).  */
void memlock_restore (pid_t pid, const struct rlimit *saved);

/* "unlimited" or the byte count; caller frees.  */
char *memlock_str (rlim_t v);

/* NULL when the container gets CAP_IPC_LOCK (in its bounding, permitted and
 * effective sets; for a non-root user also inheritable and ambient, which
 * carry it over execve).  Else the warning line, naming the sets that lack it
 * and the fix; caller frees.  Names are matched with libcap's cap_from_name. */
char *memlock_cap_warning (const struct oci_config *c);

#endif
