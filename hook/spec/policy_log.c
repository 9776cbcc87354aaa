/* SPDX-License-Identifier: Apache-2.0 */
/* The policy's log file, opened for roce_log's lines by each program that
 * reads a policy (the hook's stages, the shim, gc); apart from policy.c,
 * which the shim's musl front links without the log.  */
#define _GNU_SOURCE

#include "lib/log.h"
#include "spec/policy.h"

void
policy_open_log (const struct roce_policy *p)
{
  cleanup_error roce_error_t lerr = NULL;
  /* A log file we cannot open is not a reason to refuse a container.  */
  if (p->log_file && roce_log_set_file (p->log_file, &lerr) < 0)
    roce_log (ROCE_LOG_WARN, "%s", lerr->msg);
}
