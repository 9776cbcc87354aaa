/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA CM's per-port defaults in configfs (default_roce_tos,
 * default_roce_mode): read for `check`, planned for `qos apply`.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/rdmacm.h"
#include "lib/utils.h"

unsigned
rdmacm_target_tos (const struct roce_policy *p)
{
  return p->qos.dscp << 2;
}

static int
cmp_unsigned (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  return x < y ? -1 : x > y;
}

/* The HCA's port numbers, sorted.  */
static int
list_ports (const char *sysfs_root, const char *hca, unsigned **out, size_t *n, roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/class/infiniband/%s/ports", sysfs_root, hca);
  cleanup_dir DIR *d = opendir (dir);
  cleanup_free unsigned *v = NULL;
  struct dirent *de;
  size_t k = 0;

  if (d == NULL)
    return roce_error_sys (err, errno, "ports of %s (`%s`)", hca, dir);
  while ((de = readdir (d)) != NULL)
    {
      uint64_t port;
      if (parse_u64 (de->d_name, &port) < 0 || port == 0 || port > 255)
        continue;
      v = xrealloc (v, (k + 1) * sizeof (*v));
      v[k++] = (unsigned) port;
    }
  if (k > 1)
    qsort (v, k, sizeof (*v), cmp_unsigned);
  *out = steal_pointer (&v);
  *n = k;
  return 0;
}

static bool
is_dir (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISDIR (st.st_mode);
}

static void
item_error (struct probe_item *it, const char *path, roce_error_t e)
{
  it->state = (e->status == ENOENT || e->status == ENOTDIR) ? PROBE_UNSUPPORTED : PROBE_ERROR;
  it->errnum = e->status;
  it->detail = xstrdup (e->msg);
  it->source = xstrdup (path);
}

static void
read_port (struct rdmacm_port *pt)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v = NULL;
  uint64_t tos;

  if (read_line_at (AT_FDCWD, pt->tos_path, &v, &err) < 0)
    item_error (&pt->tos, pt->tos_path, err);
  else if (parse_u64 (v, &tos) < 0 || tos > 255)
    {
      pt->tos.state = PROBE_ERROR;
      pt->tos.errnum = EINVAL;
      pt->tos.detail = xstrdup ("not a ToS 0..255");
      pt->tos.source = xstrdup (pt->tos_path);
    }
  else
    {
      pt->tos_value = (unsigned) tos;
      pt->tos.source = xstrdup (pt->tos_path);
    }
  roce_error_release (&err);
  free (v);
  v = NULL;
  if (read_line_at (AT_FDCWD, pt->mode_path, &v, &err) < 0)
    item_error (&pt->mode, pt->mode_path, err);
  else if (! str_is_printable (v) || strlen (v) > 32)
    {
      pt->mode.state = PROBE_ERROR;
      pt->mode.errnum = EINVAL;
      pt->mode.detail = xstrdup ("not a RoCE mode name");
      pt->mode.source = xstrdup (pt->mode_path);
    }
  else
    {
      pt->mode_value = steal_pointer (&v);
      pt->mode.source = xstrdup (pt->mode_path);
    }
}

int
rdmacm_probe_run (const struct roce_policy *p, const char *hca, struct rdmacm_probe *out,
                  roce_error_t *err)
{
  cleanup_free unsigned *ports = NULL;
  size_t n = 0;

  memset (out, 0, sizeof (*out));
  if (list_ports (p->sysfs_root, hca, &ports, &n, err) < 0)
    return -1;
  out->root = xasprintf ("%s/rdma_cm", p->configfs_root);
  out->group = xasprintf ("%s/%s", out->root, hca);
  out->state = ! is_dir (out->root)    ? RDMACM_ABSENT
               : ! is_dir (out->group) ? RDMACM_NO_GROUP
                                       : RDMACM_OK;
  out->ports = xmalloc0 ((n + 1) * sizeof (*out->ports));
  out->n = n;
  for (size_t i = 0; i < n; i++)
    {
      struct rdmacm_port *pt = &out->ports[i];
      pt->port = ports[i];
      pt->tos_path = xasprintf ("%s/ports/%u/default_roce_tos", out->group, pt->port);
      pt->mode_path = xasprintf ("%s/ports/%u/default_roce_mode", out->group, pt->port);
      if (out->state == RDMACM_OK)
        read_port (pt);
    }
  return 0;
}

static void
item_free (struct probe_item *it)
{
  free (it->detail);
  free (it->source);
}

void
rdmacm_probe_clear (struct rdmacm_probe *r)
{
  for (size_t i = 0; i < r->n; i++)
    {
      free (r->ports[i].tos_path);
      free (r->ports[i].mode_path);
      free (r->ports[i].mode_value);
      item_free (&r->ports[i].tos);
      item_free (&r->ports[i].mode);
    }
  free (r->ports);
  free (r->root);
  free (r->group);
  memset (r, 0, sizeof (*r));
}

static const char *const apply_fix = "roce-hook qos apply --only rdma-cm";

static void
port_finding (const struct roce_policy *p, const struct rdmacm_probe *r,
              const struct rdmacm_port *pt, bool tos, const char *hca, const char *netdev,
              struct findings *out)
{
  unsigned want = rdmacm_target_tos (p);
  const struct probe_item *it = tos ? &pt->tos : &pt->mode;
  struct finding *f;

  if (r->state == RDMACM_ABSENT)
    {
      f = findings_push (out, FINDING_UNKNOWN, false, tos ? "rdma-cm-tos" : "rdma-cm-mode", hca,
                         netdev);
      f->found = xasprintf ("unknown: no %s (the rdma_cm module is not loaded, or configfs is not "
                            "mounted there)",
                            r->root);
      f->fix = xstrdup ("modprobe rdma_cm, and mount configfs: mount -t configfs none "
                        "/sys/kernel/config");
    }
  else if (r->state == RDMACM_NO_GROUP)
    {
      f = findings_push (out, FINDING_WARN, false, tos ? "rdma-cm-tos" : "rdma-cm-mode", hca,
                         netdev);
      f->found = xasprintf ("rdma_cm's built-in default (no configfs group %s)", r->group);
      f->fix = xstrdup (apply_fix);
    }
  else if (it->state != PROBE_OK)
    {
      f = findings_push (out, FINDING_UNKNOWN, false, tos ? "rdma-cm-tos" : "rdma-cm-mode", hca,
                         netdev);
      f->found = xasprintf ("unreadable: %s", it->detail ? it->detail : "?");
    }
  else if (tos)
    {
      bool ok = pt->tos_value == want;
      f = findings_push (out, ok ? FINDING_OK : FINDING_WARN, false, "rdma-cm-tos", hca, netdev);
      f->found = xasprintf ("%u (DSCP %u)", pt->tos_value, pt->tos_value >> 2);
      if (! ok)
        f->fix = xstrdup (apply_fix);
    }
  else
    {
      bool ok = strcmp (pt->mode_value, RDMACM_MODE_V2) == 0;
      f = findings_push (out, ok ? FINDING_OK : FINDING_WARN, false, "rdma-cm-mode", hca, netdev);
      f->found = xasprintf ("'%s'", pt->mode_value);
      if (! ok)
        f->fix = xstrdup (apply_fix);
    }
  if (tos)
    {
      f->what = xasprintf ("rdma_cm default RoCE ToS of %s port %u", hca, pt->port);
      f->expected = xasprintf ("%u (DSCP %u << 2), for UCX, MPI and perftest", want, p->qos.dscp);
    }
  else
    {
      f->what = xasprintf ("rdma_cm default RoCE mode of %s port %u", hca, pt->port);
      f->expected = xstrdup ("'" RDMACM_MODE_V2 "' (routable, DSCP-classified)");
    }
  f->source = xstrdup (tos ? pt->tos_path : pt->mode_path);
}

void
rdmacm_findings (const struct roce_policy *p, const struct rdmacm_probe *r, const char *hca,
                 const char *netdev, struct findings *out)
{
  for (size_t i = 0; i < r->n; i++)
    {
      port_finding (p, r, &r->ports[i], true, hca, netdev, out);
      port_finding (p, r, &r->ports[i], false, hca, netdev, out);
    }
}

int
rdmacm_make_group (const char *group, bool *made, roce_error_t *err)
{
  *made = false;
  if (mkdir (group, 0755) == 0)
    {
      *made = true;
      return 0;
    }
  if (errno != EEXIST)
    return roce_error_sys (err, errno, "mkdir `%s`", group);
  return 0;
}

int
rdmacm_remove_group (const char *group, roce_error_t *err)
{
  if (rmdir (group) < 0)
    return roce_error_sys (err, errno, "rmdir `%s`", group);
  return 0;
}
