/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook gc`: releases the leases of containers that died without a
 * poststop, the address blocks the node no longer uses, and the shim's
 * records of containers whose bundle is gone.  */
#define _GNU_SOURCE
#include <stdio.h>

#include "cmd/cmd.h"
#include "ipam/ipam.h"
#include "lib/utils.h"
#include "runtime/runtime.h"
#include "spec/policy.h"
#include "sys/confine.h"

int
cmd_gc (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;

  if (argc > 1)
    return cmd_bad_argument (argv[1], err);
  if (policy_load (config_path, &p, err) < 0)
    return 2;
  /* What it released, and its hold of the store's lock, in log_file too.  */
  policy_open_log (p);
  /* Confined once the policy says whether it talks to etcd.  */
  if (confine_caps (CONFINE_GC, err) < 0 || confine_phase (PHASE_NETWORK, err) < 0
      || confine_seccomp_net (CONFINE_GC, p->cluster != NULL, err) < 0
      || ipam_gc (p, stdout, err) < 0 || runtime_records_sweep (p->state_dir, stdout, err) < 0)
    return 2;
  return 0;
}
