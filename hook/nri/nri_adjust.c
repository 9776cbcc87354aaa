/* SPDX-License-Identifier: Apache-2.0 */
/* The adjustment of a RoCE container's spec, as NRI's runtimes apply it
 * (containerd/nri pkg/runtime-tools/generate): the marker annotation, the
 * RDMA nodes in linux.devices (the runtime adds each one's device cgroup
 * rule), RLIMIT_MEMLOCK (appended: the last of a type is the one the
 * runtime sets), RLIMIT_STACK where the container has none, the NCCL
 * variables it set none of, the rails file bound read-only.  Every part is
 * malloc'ed: the whole is freed with protobuf-c's free_unpacked.  */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri_int.h"
#include "net/rails.h"
#include "devices/grant.h"
#include "lib/utils.h"

/* One more pointer in a repeated field.  */
#define PUSH(arr, n, item)                                                                         \
  do                                                                                               \
    {                                                                                              \
      (arr) = xrealloc ((arr), ((n) + 1) * sizeof (*(arr)));                                       \
      (arr)[(n)++] = (item);                                                                       \
    }                                                                                              \
  while (0)

RoceNri__ContainerAdjustment *
nri_adjust_new (const char *ctr_id)
{
  RoceNri__ContainerAdjustment *a = xmalloc0 (sizeof (*a));
  RoceNri__ContainerAdjustment__AnnotationsEntry *e = xmalloc0 (sizeof (*e));

  roce_nri__container_adjustment__init (a);
  roce_nri__container_adjustment__annotations_entry__init (e);
  e->key = xstrdup (NRI_MARKER);
  e->value = xstrdup (ctr_id);
  PUSH (a->annotations, a->n_annotations, e);
  return a;
}

static void
add_env (RoceNri__ContainerAdjustment *a, const struct oci_config *have, const char *key,
         const char *value)
{
  RoceNri__KeyValue *kv;
  if (value == NULL || (have && have->env && oci_env_get (have->env, key)))
    return; /* the container's own value is kept (the gate checked it) */
  kv = xmalloc0 (sizeof (*kv));
  roce_nri__key_value__init (kv);
  kv->key = xstrdup (key);
  kv->value = xstrdup (value);
  PUSH (a->env, a->n_env, kv);
}

static void
add_rlimit (RoceNri__ContainerAdjustment *a, const char *type, bool unlimited, uint64_t v)
{
  RoceNri__POSIXRlimit *r = xmalloc0 (sizeof (*r));
  roce_nri__posixrlimit__init (r);
  r->type = xstrdup (type);
  r->hard = r->soft = unlimited ? UINT64_MAX : v;
  PUSH (a->rlimits, a->n_rlimits, r);
}

static void
add_device (RoceNri__LinuxContainerAdjustment *lx, const struct rdma_node *n)
{
  RoceNri__LinuxDevice *d = xmalloc0 (sizeof (*d));
  roce_nri__linux_device__init (d);
  d->path = xstrdup (n->path);
  d->type = xstrdup ("c");
  d->major = n->major;
  d->minor = n->minor;
  d->file_mode = xmalloc0 (sizeof (*d->file_mode));
  roce_nri__optional_file_mode__init (d->file_mode);
  d->file_mode->value = 0666;
  d->uid = xmalloc0 (sizeof (*d->uid));
  roce_nri__optional_uint32__init (d->uid);
  d->gid = xmalloc0 (sizeof (*d->gid));
  roce_nri__optional_uint32__init (d->gid);
  PUSH (lx->devices, lx->n_devices, d);
}

static void
add_rails_mount (RoceNri__ContainerAdjustment *a, const char *source)
{
  static const char *const opts[] = { "bind", "ro", "nosuid", "nodev", "noexec" };
  RoceNri__Mount *m = xmalloc0 (sizeof (*m));
  roce_nri__mount__init (m);
  m->destination = xstrdup ("/" RAILS_DIR "/" RAILS_NAME);
  m->type = xstrdup ("bind");
  m->source = xstrdup (source);
  for (size_t i = 0; i < ARRAY_SIZE (opts); i++)
    PUSH (m->options, m->n_options, xstrdup (opts[i]));
  PUSH (a->mounts, a->n_mounts, m);
}

void
nri_adjust_grant (RoceNri__ContainerAdjustment *a, const struct roce_policy *p,
                  const struct spec_grant *g, const struct oci_config *have, const char *rails)
{
  RoceNri__LinuxContainerAdjustment *lx = xmalloc0 (sizeof (*lx));

  roce_nri__linux_container_adjustment__init (lx);
  for (size_t i = 0; i < g->n_nodes; i++)
    add_device (lx, &g->nodes[i]);
  a->linux_ = lx;
  add_rlimit (a, "RLIMIT_MEMLOCK", p->memlock_unlimited, p->memlock);
  if ((p->stack_unlimited || p->stack) && ! oci_config_rlimit (have, "RLIMIT_STACK"))
    add_rlimit (a, "RLIMIT_STACK", p->stack_unlimited, p->stack);
  add_env (a, have, "NCCL_IB_HCA", g->nccl_ib_hca);
  add_env (a, have, "NCCL_IB_TC", g->nccl_ib_tc);
  if (g->nccl_ib_addr_range[0])
    add_env (a, have, "NCCL_IB_ADDR_RANGE", g->nccl_ib_addr_range);
  add_env (a, have, "NCCL_IB_ADDR_FAMILY", g->nccl_ib_addr_family);
  add_env (a, have, "NCCL_IB_SL", g->nccl_ib_sl);
  if (rails)
    add_rails_mount (a, rails);
}
