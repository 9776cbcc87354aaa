/* SPDX-License-Identifier: Apache-2.0 */
/* Memory locking for RDMA: the container's RLIMIT_MEMLOCK (policy `memlock`)
 * set with prlimit, and CAP_IPC_LOCK found in its capability sets.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>

#include "devices/memlock.h"
#include "lib/log.h"
#include "lib/utils.h"

char *
memlock_str (rlim_t v)
{
  if (v == RLIM_INFINITY)
    return xstrdup ("unlimited");
  return xasprintf ("%llu", (unsigned long long) v);
}

static rlim_t
policy_memlock (const struct roce_policy *p)
{
  return p->memlock_unlimited ? RLIM_INFINITY : (rlim_t) p->memlock;
}

int
memlock_decide (const struct roce_policy *p, const struct oci_config *c, struct memlock_plan *out,
                roce_error_t *err)
{
  const struct oci_rlimit *rl = oci_config_rlimit (c, "RLIMIT_MEMLOCK");
  rlim_t want = policy_memlock (p);

  out->value = want;
  out->apply = true;
  if (rl == NULL)
    return 0;
  /* RLIM_INFINITY is 2^64-1, as OCI writes "unlimited".  */
  if ((rlim_t) rl->soft >= want && (rlim_t) rl->hard >= want)
    {
      out->apply = false;
      out->value = (rlim_t) rl->soft;
      return 0;
    }
  {
    cleanup_free char *w = memlock_str (want);
    cleanup_free char *s = memlock_str ((rlim_t) rl->soft);
    cleanup_free char *h = memlock_str ((rlim_t) rl->hard);
    cleanup_free char *expected = xasprintf ("%s (the policy's memlock)", w);
    cleanup_free char *found
        = xasprintf ("soft %s, hard %s from config.json process.rlimits, which "
                     "the runtime applies after this hook",
                     s, h);
    cleanup_free char *fix = xasprintf ("drop the container's memlock ulimit or set it to %s "
                                        "(--ulimit memlock=%s)",
                                        w, want == RLIM_INFINITY ? "-1" : w);
    return roce_error_refuse (err, "RLIMIT_MEMLOCK of the container", expected, found, fix);
  }
}

int
memlock_apply (pid_t pid, const struct roce_policy *p, const struct memlock_plan *plan,
               struct rlimit *saved, roce_error_t *err)
{
  struct rlimit want = { .rlim_cur = plan->value, .rlim_max = plan->value };

  if (! plan->apply)
    return 0;
  if (prlimit (pid, RLIMIT_MEMLOCK, NULL, saved) < 0)
    return roce_error_sys (err, errno, "RLIMIT_MEMLOCK of the container's process %d", (int) pid);
  if (prlimit (pid, RLIMIT_MEMLOCK, &want, NULL) == 0)
    return 0;
  if (errno == EPERM && plan->value > saved->rlim_max)
    {
      cleanup_free char *w = memlock_str (plan->value);
      cleanup_free char *h = memlock_str (saved->rlim_max);
      cleanup_free char *expected = xasprintf ("%s (the policy's memlock)", w);
      cleanup_free char *found = xasprintf ("at most %s, the hard limit the runtime gave it "
                                            "(raising it needs CAP_SYS_RESOURCE)",
                                            h);
      cleanup_free char *fix
          = xasprintf ("run the container runtime with CAP_SYS_RESOURCE and a "
                       "high enough hard limit, or set memlock in %s to at most %s",
                       p->path, h);
      return roce_error_refuse (err, "RLIMIT_MEMLOCK of the container", expected, found, fix);
    }
  return roce_error_sys (err, errno, "set RLIMIT_MEMLOCK of the container's process %d", (int) pid);
}

void
memlock_restore (pid_t pid, const struct rlimit *saved)
{
  if (prlimit (pid, RLIMIT_MEMLOCK, saved, NULL) < 0)
    {
      cleanup_free char *s = memlock_str (saved->rlim_cur);
      cleanup_free char *h = memlock_str (saved->rlim_max);
      roce_log (ROCE_LOG_WARN, "could not restore RLIMIT_MEMLOCK %s/%s of process %d: %s", s, h,
                (int) pid, strerror (errno));
    }
}

static bool
set_has_ipc_lock (char *const *set)
{
  for (size_t i = 0; set && set[i]; i++)
    {
      cap_value_t v;
      /* OCI names capabilities "CAP_..."; cap_from_name would also take a
       * bare number, which runc does not.  */
      if (strncasecmp (set[i], "CAP_", 4) == 0 && cap_from_name (set[i], &v) == 0
          && v == CAP_IPC_LOCK)
        return true;
    }
  return false;
}

char *
memlock_cap_warning (const struct oci_config *c)
{
  static const enum oci_cap_set root_sets[]
      = { OCI_CAP_BOUNDING, OCI_CAP_PERMITTED, OCI_CAP_EFFECTIVE };
  static const enum oci_cap_set user_sets[] = { OCI_CAP_INHERITABLE, OCI_CAP_AMBIENT };
  cleanup_free char *missing = xstrdup ("");

  for (size_t i = 0; i < ARRAY_SIZE (root_sets) + (c->uid ? ARRAY_SIZE (user_sets) : 0); i++)
    {
      enum oci_cap_set s
          = i < ARRAY_SIZE (root_sets) ? root_sets[i] : user_sets[i - ARRAY_SIZE (root_sets)];
      if (! set_has_ipc_lock (c->caps[s]))
        str_list_add (&missing, ", ", "%s", oci_cap_set_names[s]);
    }
  if (! *missing)
    return NULL;
  return xasprintf (
      "CAP_IPC_LOCK: in the container's %s capabilities vs missing from %s (fix: "
      "--cap-add IPC_LOCK for docker/podman, securityContext.capabilities.add: "
      "[\"IPC_LOCK\"] in Kubernetes, or start it through roce-runtime, which adds it); "
      "memory registration is then bound by RLIMIT_MEMLOCK alone",
      c->uid ? "bounding, permitted, effective, inheritable and ambient"
             : "bounding, permitted and effective",
      missing);
}
