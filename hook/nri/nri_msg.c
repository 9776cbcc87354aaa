/* SPDX-License-Identifier: Apache-2.0 */
/* The pods and containers of NRI's messages, read and checked: what the
 * runtime vouches for (ids, the pod's Kubernetes namespace, its network
 * namespace's path) apart from what a tenant wrote (the pod's
 * annotations), every string bounded before it is used.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri_int.h"
#include "runtime/runtime.h"
#include "lib/log.h"
#include "lib/utils.h"

#define ROCE_PREFIX "roce.io/"
/* A tenant's roce.io/ annotations a start reads at most: the two it may
 * write, and room for those authz_check refuses by name.  */
#define POD_ROCE_KV_MAX 16

static int
check_string (const char *what, const char *s, size_t max, bool required, roce_error_t *err)
{
  size_t len = s ? strlen (s) : 0;
  if (required && len == 0)
    return roce_error_make (err, EINVAL, "NRI %s: a value vs none", what);
  if (len > max)
    return roce_error_make (err, EINVAL, "NRI %s: at most %zu bytes vs %zu", what, max, len);
  if (s && ! str_is_printable (s))
    return roce_error_make (err, EINVAL,
                            "NRI %s: printable characters vs a control or non-ASCII byte", what);
  return 0;
}

/* The path of the network namespace in a list of namespaces: absolute, or
 * NULL when none is named.  */
static int
network_path (RoceNri__LinuxNamespace *const *ns, size_t n, const char **out, roce_error_t *err)
{
  *out = NULL;
  for (size_t i = 0; i < n; i++)
    {
      if (ns[i] == NULL || ns[i]->type == NULL || strcmp (ns[i]->type, "network") != 0)
        continue;
      if (ns[i]->path == NULL || ns[i]->path[0] == '\0')
        return 0;
      if (check_string ("network namespace path", ns[i]->path, NRI_PATH_MAX, true, err) < 0)
        return -1;
      if (ns[i]->path[0] != '/')
        return roce_error_make (err, EINVAL, "NRI network namespace path: absolute vs `%s`",
                                ns[i]->path);
      *out = ns[i]->path;
      return 0;
    }
  return 0;
}

int
nri_pod_read (const RoceNri__PodSandbox *m, bool as_sandbox, struct nri_pod *out, roce_error_t *err)
{
  memset (out, 0, sizeof (*out));
  if (m == NULL)
    return roce_error_make (err, EINVAL, "NRI request: a pod vs none");
  if (check_string ("pod id", m->id, OCI_ID_MAX, true, err) < 0
      || check_string ("pod name", m->name, NRI_NAME_MAX, false, err) < 0
      || check_string ("pod namespace", m->namespace_, NRI_NAME_MAX, false, err) < 0
      || check_string ("pod uid", m->uid, NRI_NAME_MAX, false, err) < 0)
    return -1;
  out->id = m->id;
  out->name = m->name;
  out->ns = m->namespace_;
  out->uid = m->uid;
  if (m->linux_
      && network_path (m->linux_->namespaces, m->linux_->n_namespaces, &out->netns, err) < 0)
    return -1;
  /* The tenant's roce.io/ annotations, then what the runtime says.  */
  out->kv = xmalloc0 ((POD_ROCE_KV_MAX + 2) * sizeof (*out->kv));
  for (size_t i = 0; i < m->n_annotations; i++)
    {
      const RoceNri__PodSandbox__AnnotationsEntry *a = m->annotations[i];
      if (a == NULL || a->key == NULL || strncmp (a->key, ROCE_PREFIX, strlen (ROCE_PREFIX)) != 0)
        continue;
      if (strcmp (a->key, NRI_MARKER) == 0)
        out->has_marker = true;
      if (check_string ("pod annotation key", a->key, NRI_NAME_MAX, true, err) < 0
          || check_string (a->key, a->value, ANNOT_VALUE_MAX, false, err) < 0)
        goto fail;
      if (roce_kv_get (out->kv, out->n_kv, a->key))
        {
          cleanup_free char *k = str_quote (a->key);
          roce_error_make (err, EINVAL, "pod annotation %s: once vs twice", k);
          goto fail;
        }
      if (out->n_kv == POD_ROCE_KV_MAX)
        {
          roce_error_make (err, E2BIG, "pod annotations roce.io/: at most %d vs more",
                           POD_ROCE_KV_MAX);
          goto fail;
        }
      out->kv[out->n_kv++] = (struct roce_kv){ a->key, a->value ? a->value : (char *) "" };
    }
  out->hca = roce_kv_get (out->kv, out->n_kv, ANNOT_HCA);
  out->ip = roce_kv_get (out->kv, out->n_kv, ANNOT_IP);
  out->asks = out->hca != NULL;
  if (out->ns && out->ns[0])
    out->kv[out->n_kv++]
        = (struct roce_kv){ (char *) "io.kubernetes.pod.namespace", m->namespace_ };
  out->kv[out->n_kv++] = (struct roce_kv){ (char *) "io.kubernetes.cri.container-type",
                                           (char *) (as_sandbox ? "sandbox" : "container") };
  return 0;
fail:
  nri_pod_clear (out);
  return -1;
}

void
nri_pod_clear (struct nri_pod *p)
{
  free (p->kv);
  memset (p, 0, sizeof (*p));
}

static char
device_type (const char *t)
{
  return t
                 && (strcmp (t, "c") == 0 || strcmp (t, "b") == 0 || strcmp (t, "u") == 0
                     || strcmp (t, "p") == 0)
             ? t[0]
             : '\0';
}

/* What a start reads of a spec, from the container's message (the spec
 * the runtime built; the adjustments of plugins before this one).  */
static int
config_of (const RoceNri__Container *m, struct oci_config **out, roce_error_t *err)
{
  cleanup_oci_config struct oci_config *c = xmalloc0 (sizeof (*c));
  const RoceNri__LinuxContainer *lx = m->linux_;

  c->env = xmalloc0 ((m->n_env + 1) * sizeof (char *));
  for (size_t i = 0; i < m->n_env; i++)
    c->env[i] = xstrdup (m->env[i] ? m->env[i] : "");
  if (lx)
    {
      c->devices = xmalloc0 ((lx->n_devices + 1) * sizeof (*c->devices));
      for (size_t i = 0; i < lx->n_devices; i++)
        {
          const RoceNri__LinuxDevice *d = lx->devices[i];
          char t = d ? device_type (d->type) : '\0';
          if (t == '\0')
            continue; /* read leniently, as oci.c reads linux.devices */
          c->devices[c->n_devices++] = (struct oci_device){ t, d->major, d->minor };
        }
      if (lx->resources && lx->resources->cpu && lx->resources->cpu->cpus
          && lx->resources->cpu->cpus[0])
        {
          if (check_string ("container cpuset", lx->resources->cpu->cpus, NRI_NAME_MAX, false, err)
              < 0)
            return -1;
          c->cpus = xstrdup (lx->resources->cpu->cpus);
        }
    }
  c->rlimits = xmalloc0 ((m->n_rlimits + 1) * sizeof (*c->rlimits));
  for (size_t i = 0; i < m->n_rlimits; i++)
    {
      const RoceNri__POSIXRlimit *r = m->rlimits[i];
      if (r == NULL || r->type == NULL)
        continue;
      c->rlimits[c->n_rlimits++]
          = (struct oci_rlimit){ .type = xstrdup (r->type), .hard = r->hard, .soft = r->soft };
    }
  *out = steal_pointer (&c);
  return 0;
}

int
nri_ctr_read (const RoceNri__Container *m, struct nri_ctr *out, roce_error_t *err)
{
  memset (out, 0, sizeof (*out));
  if (m == NULL)
    return roce_error_make (err, EINVAL, "NRI request: a container vs none");
  /* The id names the container's rails file: a record's name.  */
  if (! runtime_record_id_valid (m->id))
    {
      cleanup_free char *id = str_quote (m->id ? m->id : "");
      return roce_error_make (err, EINVAL, "NRI container id: letters, digits, _+-. vs %s", id);
    }
  if (check_string ("container's pod id", m->pod_sandbox_id, OCI_ID_MAX, false, err) < 0
      || check_string ("container name", m->name, NRI_NAME_MAX, false, err) < 0)
    return -1;
  out->id = m->id;
  out->pod_id = m->pod_sandbox_id;
  out->name = m->name;
  out->pid = m->pid;
  for (size_t i = 0; i < m->n_annotations; i++)
    if (m->annotations[i] && m->annotations[i]->key
        && strcmp (m->annotations[i]->key, NRI_MARKER) == 0)
      out->marker = m->annotations[i]->value;
  return config_of (m, &out->config, err);
}

void
nri_ctr_clear (struct nri_ctr *c)
{
  oci_config_free (c->config);
  memset (c, 0, sizeof (*c));
}

char *
nri_refusal_line (const char *id, const char *msg)
{
  return roce_line ("roce-hook", id && id[0] ? id : "-", msg);
}
