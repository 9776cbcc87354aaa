/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of memlock (Criterion).  */
#define _GNU_SOURCE
#include <sys/capability.h>
#include <sys/resource.h>
#include <unistd.h>

#include "devices/memlock.h"
#include "lib/utils.h"
#include "unit.h"

static struct roce_policy *
policy_with (const char *memlock)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  cleanup_free char *in = xasprintf ("{\"memlock\":%s,\"hcas\":{\"mlx5_0\":{\"subnet\":"
                                     "\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                                     memlock);
  cr_assert_eq (policy_parse (in, "/etc/p.json", &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

static struct oci_config *
config_with (const char *process)
{
  cleanup_error roce_error_t err = NULL;
  struct oci_config *c = NULL;
  cleanup_free char *in = xasprintf ("{\"root\":{\"path\":\"r\"},\"process\":{%s}}", process);
  cr_assert_eq (oci_config_parse (in, "/b", &c, &err), 0, "%s", err ? err->msg : "");
  return c;
}

Test (memlock, no_spec_rlimit_means_the_hook_sets_the_policy_value)
{
  cleanup_policy struct roce_policy *p = policy_with ("\"unlimited\"");
  cleanup_oci_config struct oci_config *c = config_with ("\"env\":[]");
  cleanup_error roce_error_t err = NULL;
  struct memlock_plan plan;
  cr_assert_eq (memlock_decide (p, c, &plan, &err), 0);
  cr_assert (plan.apply);
  cr_assert_eq (plan.value, RLIM_INFINITY);
}

Test (memlock, a_spec_rlimit_at_or_above_the_policy_is_left_to_the_runtime)
{
  cleanup_policy struct roce_policy *p = policy_with ("65536");
  cleanup_oci_config struct oci_config *c = config_with (
      "\"rlimits\":[{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,\"soft\":65536}]");
  cleanup_error roce_error_t err = NULL;
  struct memlock_plan plan;
  cr_assert_eq (memlock_decide (p, c, &plan, &err), 0);
  cr_assert_not (plan.apply);
}

Test (memlock, a_lower_spec_rlimit_is_refused_naming_the_order)
{
  cleanup_policy struct roce_policy *p = policy_with ("\"unlimited\"");
  cleanup_oci_config struct oci_config *c = config_with (
      "\"rlimits\":[{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,\"soft\":65536}]");
  cleanup_error roce_error_t err = NULL;
  struct memlock_plan plan;
  assert_err_contains (
      memlock_decide (p, c, &plan, &err), err,
      "RLIMIT_MEMLOCK of the container: unlimited (the policy's memlock) vs soft "
      "65536, hard unlimited from config.json process.rlimits, which the runtime "
      "applies after this hook (fix: drop the container's memlock ulimit or set it "
      "to unlimited (--ulimit memlock=-1))");
}

Test (memlock, apply_sets_soft_and_hard_and_restores)
{
  cleanup_policy struct roce_policy *p = policy_with ("4096");
  struct memlock_plan plan = { .apply = true, .value = 4096 };
  cleanup_error roce_error_t err = NULL;
  struct rlimit before, saved, now;
  cr_assert_eq (getrlimit (RLIMIT_MEMLOCK, &before), 0);
  cr_assert_eq (memlock_apply (getpid (), p, &plan, &saved, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (getrlimit (RLIMIT_MEMLOCK, &now), 0);
  cr_assert_eq (now.rlim_cur, 4096);
  cr_assert_eq (now.rlim_max, 4096);
  cr_assert_eq (saved.rlim_max, before.rlim_max);
}

Test (memlock, raising_without_cap_sys_resource_is_a_refusal_with_the_limit)
{
  cleanup_policy struct roce_policy *p = policy_with ("\"unlimited\"");
  struct memlock_plan plan = { .apply = true, .value = RLIM_INFINITY };
  struct rlimit low = { 1048576, 1048576 }, saved;
  cleanup_error roce_error_t err = NULL;
  cap_t caps = cap_get_proc ();
  cap_value_t res = CAP_SYS_RESOURCE;

  /* Whatever this process may do: without CAP_SYS_RESOURCE, above 1 MiB is out.  */
  cr_assert_eq (setrlimit (RLIMIT_MEMLOCK, &low), 0);
  cr_assert_eq (cap_set_flag (caps, CAP_EFFECTIVE, 1, &res, CAP_CLEAR), 0);
  cr_assert_eq (cap_set_proc (caps), 0);
  cap_free (caps);
  assert_err_contains (
      memlock_apply (getpid (), p, &plan, &saved, &err), err,
      "RLIMIT_MEMLOCK of the container: unlimited (the policy's memlock) vs at "
      "most 1048576, the hard limit the runtime gave it (raising it needs "
      "CAP_SYS_RESOURCE) (fix: run the container runtime with CAP_SYS_RESOURCE "
      "and a high enough hard limit, or set memlock in /etc/p.json to at most 1048576)");
}

Test (memlock, cap_ipc_lock_present)
{
  cleanup_oci_config struct oci_config *c = config_with (
      "\"capabilities\":{\"bounding\":[\"CAP_IPC_LOCK\"],\"permitted\":[\"cap_ipc_lock\"],"
      "\"effective\":[\"CAP_KILL\",\"CAP_IPC_LOCK\"]}");
  cr_assert_null (memlock_cap_warning (c));
}

Test (memlock, cap_ipc_lock_missing_is_a_warning_naming_sets_and_fix)
{
  cleanup_oci_config struct oci_config *c
      = config_with ("\"capabilities\":{\"bounding\":[\"CAP_IPC_LOCK\"],\"permitted\":[\"14\"],"
                     "\"effective\":[\"CAP_KILL\"]}");
  cleanup_free char *w = memlock_cap_warning (c);
  cr_assert_not_null (w);
  cr_assert_not_null (strstr (w,
                              "CAP_IPC_LOCK: in the container's bounding, permitted and "
                              "effective capabilities vs missing from permitted, effective (fix: "
                              "--cap-add IPC_LOCK"),
                      "%s", w);
  cr_assert_not_null (strstr (w, "securityContext.capabilities.add"));
  cr_assert_not_null (strstr (w, "roce-runtime"));
}

Test (memlock, a_non_root_user_needs_it_in_ambient_too)
{
  cleanup_oci_config struct oci_config *c
      = config_with ("\"user\":{\"uid\":1000},\"capabilities\":{\"bounding\":[\"CAP_IPC_LOCK\"],"
                     "\"permitted\":[\"CAP_IPC_LOCK\"],\"effective\":[\"CAP_IPC_LOCK\"],"
                     "\"inheritable\":[\"CAP_IPC_LOCK\"]}");
  cleanup_free char *w = memlock_cap_warning (c);
  cr_assert_not_null (w);
  cr_assert_not_null (strstr (w, "vs missing from ambient"), "%s", w);
}

Test (memlock, no_capabilities_at_all)
{
  cleanup_oci_config struct oci_config *c = config_with ("\"env\":[]");
  cleanup_free char *w = memlock_cap_warning (c);
  cr_assert_not_null (w);
  cr_assert_not_null (strstr (w, "missing from bounding, permitted, effective"), "%s", w);
}
