/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant authorization: which Kubernetes namespaces may use which HCA
 * (policy hcas.<hca>.tenants).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "spec/authz.h"

const char *const authz_namespace_keys[] = {
  "io.kubernetes.pod.namespace",         /* containerd and CRI-O, every container */
  "io.kubernetes.cri.sandbox-namespace", /* containerd */
  "io.kubernetes.cri-o.Namespace",       /* CRI-O */
  NULL,
};

/* The requester's namespace, NULL when the container does not come from
 * Kubernetes.  The runtimes' keys must agree with each other.  */
static int
requester (const struct roce_kv *kv, size_t n, const char **out, roce_error_t *err)
{
  const char *found = NULL, *found_key = NULL;
  for (const char *const *k = authz_namespace_keys; *k; k++)
    {
      const char *v = roce_kv_get (kv, n, *k);
      if (v == NULL)
        continue;
      if (found && strcmp (found, v) != 0)
        {
          cleanup_free char *exp
              = xasprintf ("one Kubernetes namespace ('%s' in %s)", found, found_key);
          cleanup_free char *got = xasprintf ("'%s' in %s", v, *k);
          return roce_error_refuse (err, "tenant of the container", exp, got,
                                    "the container's annotations were altered; recreate the pod");
        }
      found = v;
      found_key = *k;
    }
  *out = found;
  return 0;
}

/* Whether tenant (NULL: a container outside Kubernetes) may use h; key and
 * allowed say by which rule.  */
static bool
may_use (const struct roce_policy *p, const struct policy_hca *h, const char *tenant,
         const char **key, char *const **allowed)
{
  *allowed = policy_hca_tenants (p, h, key);
  for (size_t k = 0; *allowed && (*allowed)[k]; k++)
    if (strcmp ((*allowed)[k], "*") == 0 || (tenant && strcmp ((*allowed)[k], tenant) == 0))
      return true;
  return false;
}

int
authz_permitted (const struct roce_policy *p, const struct roce_kv *kv, size_t n, bool *out,
                 roce_error_t *err)
{
  const char *tenant = NULL;

  if (requester (kv, n, &tenant, err) < 0)
    return -1;
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      const char *key;
      char *const *allowed;
      out[i] = may_use (p, &p->hcas[i], tenant, &key, &allowed);
    }
  return 0;
}

int
authz_check (const struct roce_policy *p, const struct roce_request *r, const struct roce_kv *kv,
             size_t n, roce_error_t *err)
{
  const char *tenant = NULL;

  for (size_t i = 0; i < n; i++)
    if (strncmp (kv[i].key, "roce.io/", 8) == 0 && strcmp (kv[i].key, ANNOT_HCA) != 0
        && strcmp (kv[i].key, ANNOT_IP) != 0)
      {
        cleanup_free char *what = xasprintf ("annotation %.64s", kv[i].key);
        return roce_error_refuse (err, what, "only " ANNOT_HCA " and " ANNOT_IP,
                                  "an unknown roce.io/ key",
                                  "remove it: the node policy decides netdevs, pools and QoS");
      }

  if (requester (kv, n, &tenant, err) < 0)
    return -1;

  for (size_t i = 0; i < r->n; i++)
    {
      const struct policy_hca *h = r->sel[i].hca;
      const char *key;
      char *const *allowed;
      if (! may_use (p, h, tenant, &key, &allowed))
        {
          cleanup_free char *list = strv_join (allowed, ", ");
          cleanup_free char *rule = strcmp (key, "tenants") == 0
                                        ? xasprintf ("hcas.%s.tenants", h->name)
                                        : xstrdup ("default_tenants");
          cleanup_free char *what = xasprintf ("use of HCA %s (policy rule %s)", h->name, rule);
          cleanup_free char *exp = xasprintf ("a namespace in [%s]", list);
          cleanup_free char *got = tenant ? xasprintf ("namespace '%s'", tenant)
                                          : xstrdup ("a container outside Kubernetes");
          cleanup_free char *fix
              = xasprintf ("ask the node admin to add it to %s in %s", rule, p->path);
          return roce_error_refuse (err, what, exp, got, fix);
        }
    }
  return 0;
}
