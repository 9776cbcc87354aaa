/* SPDX-License-Identifier: Apache-2.0 */
/* The rest of the seed's docker run (stack, /dev/shm, NCCL_IB_SL, GPUDirect)
 * checked against a container's spec, for `check` and the shim.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices/rdmacm.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "probe/gpudirect.h"
#include "probe/seed.h"

static char *
bytes_text (bool unlimited, uint64_t v)
{
  if (unlimited || v == UINT64_MAX)
    return xstrdup ("unlimited");
  if (v % (1ull << 20) == 0)
    return xasprintf ("%llu MiB", (unsigned long long) (v >> 20));
  return xasprintf ("%llu bytes", (unsigned long long) v);
}

static void
stack_finding (const struct roce_policy *p, const struct oci_config *config, struct findings *out)
{
  const struct oci_rlimit *rl = oci_config_rlimit (config, "RLIMIT_STACK");
  uint64_t want = p->stack_unlimited ? UINT64_MAX : p->stack;
  cleanup_free char *w = bytes_text (p->stack_unlimited, p->stack);
  struct finding *f;
  bool ok = rl && rl->soft >= want;

  f = findings_push (out, ok ? FINDING_OK : FINDING_WARN, false, "stack", NULL, NULL);
  f->what = xstrdup ("RLIMIT_STACK of the container");
  f->expected = xasprintf ("at least %s (the policy's stack, as the seed's --ulimit stack)", w);
  if (rl)
    {
      cleanup_free char *s = bytes_text (false, rl->soft);
      f->found = xasprintf ("soft %s from config.json process.rlimits", s);
    }
  else
    f->found = xstrdup ("not set: the runtime's own (8 MiB on most hosts)");
  if (! ok)
    f->fix = p->stack_unlimited
                 ? xstrdup ("--ulimit stack=-1, or start it through roce-runtime")
                 : xasprintf ("--ulimit stack=%llu, or start it through roce-runtime",
                              (unsigned long long) p->stack);
  f->source = xstrdup ("config.json process.rlimits");
}

static void
shm_finding (const struct roce_policy *p, const struct oci_config *config, struct findings *out)
{
  cleanup_free char *w = bytes_text (false, p->shm_size);
  struct finding *f;
  uint64_t have = 0;
  enum finding_status st = FINDING_OK;
  char *found;

  if (! config->has_shm)
    {
      st = FINDING_WARN;
      found = xstrdup ("no /dev/shm mount");
    }
  else if (config->shm_type == NULL || strcmp (config->shm_type, "tmpfs") != 0)
    found = xasprintf ("a %s mount (its size is its source's)",
                       config->shm_type ? config->shm_type : "typeless");
  else if (config->shm_size == NULL)
    found = xstrdup ("a tmpfs without size= (half the host's memory)");
  else if (tmpfs_size_parse (config->shm_size, &have) < 0)
    found = xasprintf ("a tmpfs of size=%s", config->shm_size);
  else
    {
      cleanup_free char *h = bytes_text (false, have);
      if (have < p->shm_size)
        st = FINDING_WARN;
      found = have == SEED_SHM_RUNTIME_DEFAULT
                  ? xasprintf ("%s, the runtimes' default: NCCL's shared-memory transport fails "
                               "in it",
                               h)
                  : xasprintf ("%s", h);
    }
  f = findings_push (out, st, false, "shm", NULL, NULL);
  f->what = xstrdup ("/dev/shm of the container");
  f->expected = xasprintf ("a tmpfs of at least %s (the policy's shm_size)", w);
  f->found = found;
  if (st != FINDING_OK)
    f->fix = xasprintf ("--shm-size=%llu, or start it through roce-runtime",
                        (unsigned long long) p->shm_size);
  f->source = xstrdup ("config.json mounts");
}

static void
sl_finding (const struct roce_policy *p, const struct oci_config *config, struct findings *out)
{
  const char *v = config->env ? oci_env_get (config->env, "NCCL_IB_SL") : NULL;
  struct finding *f;
  if (v && *v)
    return; /* set: qos_verdict's nccl-sl checks its value */
  f = findings_push (out, FINDING_WARN, false, "nccl-sl-unset", NULL, NULL);
  f->what = xstrdup ("NCCL_IB_SL in the container's env");
  f->expected = xasprintf ("%u (the PFC priority: the 802.1p priority of PCP-trusting or "
                           "VLAN-tagged hops)",
                           p->qos.pfc_priority);
  f->found = xstrdup ("unset: NCCL sends on SL 0");
  f->fix = xasprintf ("NCCL_IB_SL=%u, or start it through roce-runtime", p->qos.pfc_priority);
  f->source = xstrdup ("config.json process.env");
}

void
seed_findings (const struct roce_policy *p, const struct roce_request *req,
               const struct oci_config *config, struct findings *out)
{
  struct gpudirect_probe g;

  stack_finding (p, config, out);
  shm_finding (p, config, out);
  sl_finding (p, config, out);
  gpudirect_probe_run (p->sysfs_root, NULL, &g);
  gpudirect_finding (&g, NULL, NULL, out);
  gpudirect_probe_clear (&g);
  for (size_t i = 0; i < req->n; i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct rdmacm_probe cm;
      if (rdmacm_probe_run (p, req->sel[i].hca->name, &cm, &err) < 0)
        continue;
      rdmacm_findings (p, &cm, req->sel[i].hca->name, NULL, out);
      rdmacm_probe_clear (&cm);
    }
}

void
seed_verify (const struct roce_policy *p, const struct roce_request *req,
             const struct roce_container *c)
{
  struct findings f = { 0 };
  size_t bad = 0;

  if (c->config == NULL)
    return;
  seed_findings (p, req, c->config, &f);
  /* A line per check, in one write to the log_file (six to eight of them at
   * every start of a container not seeded by roce-runtime).  */
  roce_log_batch (true);
  for (size_t i = 0; i < f.n; i++)
    {
      const struct finding *x = &f.v[i];
      if (x->status == FINDING_OK)
        continue;
      bad++;
      roce_log (ROCE_LOG_WARN, "seed %s %s: %s: %s vs %s%s%s%s", finding_status_name (x->status),
                x->check, x->what, x->expected, x->found, x->fix ? " (fix: " : "",
                x->fix ? x->fix : "", x->fix ? ")" : "");
    }
  roce_log (bad ? ROCE_LOG_WARN : ROCE_LOG_INFO,
            "seed: %zu of %zu check(s) not as the seed's "
            "recipe wants (never refused)",
            bad, f.n);
  roce_log_batch (false);
  findings_clear (&f);
}
