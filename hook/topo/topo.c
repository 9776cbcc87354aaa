/* SPDX-License-Identifier: Apache-2.0 */
/* roce.io/hca=auto: the container's GPUs from its spec, the table of their
 * positions and the policy HCAs', and the rule that chooses.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/utils.h"
#include "spec/oci.h"
#include "topo/topo_int.h"

void
topo_choice_clear (struct topo_choice *c)
{
  for (size_t i = 0; i < c->n; i++)
    strv_free (c->rails[i].gpus);
  free (c->rails);
  free (c->basis);
  *c = (struct topo_choice){ 0 };
}

char *
topo_choice_names (const struct topo_choice *c)
{
  char *list = xstrdup ("");
  for (size_t i = 0; i < c->n; i++)
    str_list_add (&list, ",", "%s", c->rails[i].hca->name);
  return list;
}

/* The rail of HCA h in out, added at the end when it has none yet.  */
static struct topo_rail *
rail_of (struct topo_choice *out, const struct policy_hca *h)
{
  for (size_t i = 0; i < out->n; i++)
    if (out->rails[i].hca == h)
      return &out->rails[i];
  out->rails = xrealloc (out->rails, (out->n + 1) * sizeof (*out->rails));
  out->rails[out->n] = (struct topo_rail){ .hca = h, .cls = TOPO_PIX };
  return &out->rails[out->n++];
}

static bool
permitted (const bool *allowed, size_t i)
{
  return allowed == NULL || allowed[i];
}

static int
refuse_none_allowed (const struct topo_table *t, const char *what, roce_error_t *err)
{
  cleanup_free char *names = policy_hca_names (t->p);
  cleanup_free char *w = xasprintf ("%s=" POLICY_HCA_AUTO, what);
  cleanup_free char *found = xasprintf ("none of %s", names);
  cleanup_free char *fix = xasprintf (
      "ask the node admin to add the namespace to hcas.<hca>.tenants or default_tenants in %s",
      t->p->path);
  return roce_error_refuse (err, w, "an HCA of the policy this tenant may use", found, fix);
}

int
topo_select (const struct topo_table *t, const size_t *gpus, size_t n, const bool *allowed,
             const char *what, struct topo_choice *out, roce_error_t *err)
{
  cleanup_free unsigned *taken = xmalloc0 ((t->n_hcas + 1) * sizeof (*taken));
  struct topo_choice c = { 0 };

  for (size_t k = 0; k < n; k++)
    {
      const struct topo_gpu *g = &t->gpus[gpus[k]];
      size_t best = SIZE_MAX, near = SIZE_MAX;
      enum topo_class best_cls = TOPO_SYS, near_cls = TOPO_SYS;
      struct topo_rail *rail;

      for (size_t i = 0; i < t->n_hcas; i++)
        {
          enum topo_class cls = topo_distance (&g->pos, &t->hcas[i].pos);
          if (near == SIZE_MAX || cls < near_cls)
            near = i, near_cls = cls;
          if (! permitted (allowed, i))
            continue;
          if (best == SIZE_MAX || cls < best_cls || (cls == best_cls && taken[i] < taken[best]))
            best = i, best_cls = cls;
        }
      if (best == SIZE_MAX)
        {
          topo_choice_clear (&c);
          return refuse_none_allowed (t, what, err);
        }
      if (near_cls < best_cls)
        roce_log (ROCE_LOG_INFO,
                  "%s=auto: GPU %u (%s): HCA %s is nearer (%s) but this tenant may not use it; "
                  "%s (%s) instead",
                  what, g->index, g->pci, t->hcas[near].h->name, topo_class_name (near_cls),
                  t->hcas[best].h->name, topo_class_name (best_cls));
      taken[best]++;
      rail = rail_of (&c, t->hcas[best].h);
      strv_push (&rail->gpus, g->pci);
      if (best_cls > rail->cls)
        rail->cls = best_cls;
    }
  c.basis = xstrdup ("GPUs ");
  for (size_t k = 0; k < n; k++)
    str_list_add (&c.basis, k ? "," : "", "%s", t->gpus[gpus[k]].pci);
  *out = c;
  return 0;
}

/* ---- no GPU: the NUMA nodes of the cpuset -------------------------------- */

#define NODES_MAX 1024

/* The NUMA nodes (node<N> under <sysfs>/devices/system/node) whose CPUs
 * meet cpus; *n_nodes counts the host's.  */
static int
nodes_of (const struct topo_table *t, const struct topo_cpuset *cpus, bool *in, size_t *n_nodes,
          roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/devices/system/node", t->p->sysfs_root);
  cleanup_dir DIR *d = opendir (dir);
  cleanup_free struct topo_cpuset *node = xmalloc0 (sizeof (*node));
  struct dirent *de;

  *n_nodes = 0;
  if (d == NULL)
    return roce_error_sys (err, errno, "`%s`", dir);
  while ((de = readdir (d)) != NULL)
    {
      cleanup_free char *path = NULL;
      cleanup_free char *line = NULL;
      cleanup_error roce_error_t lerr = NULL;
      uint64_t id;
      if (strncmp (de->d_name, "node", 4) != 0 || parse_u64 (de->d_name + 4, &id) < 0
          || id >= NODES_MAX)
        continue;
      (*n_nodes)++;
      path = xasprintf ("%s/%s/cpulist", dir, de->d_name);
      if (read_line_at (AT_FDCWD, path, &line, &lerr) < 0 || topo_parse_cpulist (line, node) < 0)
        continue;
      if (topo_cpuset_meets (cpus, node))
        in[id] = true;
    }
  return 0;
}

static int
choose_by_numa (struct topo_table *t, const struct topo_container *c, struct topo_choice *out,
                roce_error_t *err)
{
  cleanup_free struct topo_cpuset *cpus = xmalloc0 (sizeof (*cpus));
  cleanup_free bool *in = xmalloc0 (NODES_MAX);
  cleanup_free char *nodes = xstrdup ("");
  struct topo_choice ch = { 0 };
  size_t n_nodes = 0;

  if (topo_parse_cpulist (c->config->cpus, cpus) < 0)
    {
      cleanup_free char *found = str_quote (c->config->cpus);
      cleanup_free char *exp
          = xasprintf ("a CPU list such as 0-3,8 (CPUs below %d)", TOPO_CPUS_MAX);
      return roce_error_refuse (err, "linux.resources.cpu.cpus", exp, found,
                                "give the container a valid cpuset");
    }
  if (nodes_of (t, cpus, in, &n_nodes, err) < 0 || topo_table_hcas (t, err) < 0)
    return -1;
  for (size_t id = 0; id < NODES_MAX; id++)
    if (in[id])
      str_list_add (&nodes, ",", "%zu", id);

  for (size_t i = 0; i < t->n_hcas; i++)
    {
      const struct topo_hca *h = &t->hcas[i];
      /* A host of one node: an unknown node is that one.  */
      int numa = h->pos.numa < 0 && n_nodes == 1 ? 0 : h->pos.numa;
      if (numa < 0 || numa >= NODES_MAX || ! in[numa])
        continue;
      if (! permitted (c->allowed, i))
        {
          roce_log (ROCE_LOG_INFO,
                    "%s=auto: HCA %s is on NUMA node %d of the cpuset but this tenant may not "
                    "use it",
                    c->key, h->h->name, numa);
          continue;
        }
      rail_of (&ch, h->h)->cls = TOPO_NODE;
    }
  if (ch.n == 0)
    {
      cleanup_free char *w = xasprintf ("%s=" POLICY_HCA_AUTO, c->what);
      cleanup_free char *exp = xasprintf ("a policy HCA the tenant may use on NUMA node %s (of "
                                          "cpuset %s)",
                                          *nodes ? nodes : "(none)", c->config->cpus);
      cleanup_free char *found = xstrdup ("none (");
      cleanup_free char *fix = xasprintf ("name the HCAs (%s=mlx5_0,...), request GPUs, or run "
                                          "the container on the CPUs of an HCA's NUMA node",
                                          c->key);
      for (size_t i = 0; i < t->n_hcas; i++)
        {
          if (t->hcas[i].pos.numa < 0)
            str_list_add (&found, i ? ", " : "", "%s: node unknown", t->hcas[i].h->name);
          else
            str_list_add (&found, i ? ", " : "", "%s: node %d", t->hcas[i].h->name,
                          t->hcas[i].pos.numa);
        }
      str_list_add (&found, "", ")");
      return roce_error_refuse (err, w, exp, found, fix);
    }
  ch.basis = xasprintf ("NUMA node %s of cpuset %s", nodes, c->config->cpus);
  *out = ch;
  return 0;
}

/* ---- the entry ----------------------------------------------------------- */

int
topo_choose_gpus (struct topo_table *t, const struct topo_container *c,
                  const struct topo_refs *refs, struct topo_choice *out, roce_error_t *err)
{
  cleanup_free size_t *gpus = NULL;
  size_t n = 0;

  if (topo_table_list (t, err) < 0)
    return -1;
  if (refs->all && t->n_gpus == 0)
    {
      cleanup_free char *w = xasprintf ("GPUs " TOPO_ENV_GPUS "=all of %s", c->what);
      cleanup_free char *exp
          = xasprintf ("a GPU the nvidia driver lists in %s/driver/nvidia/gpus", t->p->procfs_root);
      return roce_error_refuse (err, w, exp, "none",
                                "run the container where its GPUs are, or name the HCAs");
    }
  if (topo_table_resolve (t, c->what, refs, &gpus, &n, err) < 0)
    return -1;
  for (size_t k = 0; k < n; k++)
    {
      cleanup_free char *source = xasprintf ("GPU of %s", c->what);
      if (topo_table_locate (t, gpus[k], source, err) < 0)
        return -1;
    }
  if (topo_table_hcas (t, err) < 0)
    return -1;
  return topo_select (t, gpus, n, c->allowed, c->what, out, err);
}

bool
topo_spec_asks (const struct oci_config *spec)
{
  const char *visible = oci_env_get (spec->env, TOPO_ENV_GPUS);
  struct topo_refs refs = { 0 };
  bool asks = spec->cpus && *spec->cpus;

  if (visible)
    {
      cleanup_error roce_error_t err = NULL;
      /* A value that is not one asks (and is refused by topo_choose).  */
      asks = asks || topo_parse_visible ("", visible, &refs, &err) < 0 || refs.all || refs.n;
    }
  topo_refs_from_devices (spec->devices, spec->n_devices, &refs);
  asks = asks || refs.n;
  topo_refs_clear (&refs);
  return asks;
}

int
topo_choose (const struct roce_policy *p, const struct topo_container *c, struct topo_choice *out,
             roce_error_t *err)
{
  const struct oci_config *spec = c->config;
  const char *visible = oci_env_get (spec->env, TOPO_ENV_GPUS);
  struct topo_refs refs = { 0 };
  struct topo_table t = { 0 };
  int ret;

  if (visible
      && topo_parse_visible ("environment variable " TOPO_ENV_GPUS, visible, &refs, err) < 0)
    goto out;
  topo_refs_from_devices (spec->devices, spec->n_devices, &refs);
  if (topo_table_init (&t, p, err) < 0)
    goto out;

  if (refs.all || refs.n)
    ret = topo_choose_gpus (&t, c, &refs, out, err);
  else if (spec->cpus && *spec->cpus)
    ret = choose_by_numa (&t, c, out, err);
  else
    {
      cleanup_free char *w = xasprintf ("%s=" POLICY_HCA_AUTO, c->what);
      cleanup_free char *fix
          = xasprintf ("name the HCAs (%s=mlx5_0,mlx5_1), or give the container GPUs", c->key);
      ret = roce_error_refuse (err, w,
                               "GPUs in the spec (" TOPO_ENV_GPUS ", /dev/nvidiaN in "
                               "linux.devices) or a cpuset (linux.resources.cpu.cpus)",
                               "neither", fix);
    }
  if (ret == 0)
    {
      cleanup_free char *names = topo_choice_names (out);
      roce_log (ROCE_LOG_INFO, "%s=auto: %s: %s", c->key, out->basis, names);
    }
  topo_refs_clear (&refs);
  topo_table_clear (&t);
  return ret;

out:
  topo_refs_clear (&refs);
  topo_table_clear (&t);
  return -1;
}
