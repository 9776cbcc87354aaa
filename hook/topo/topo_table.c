/* SPDX-License-Identifier: Apache-2.0 */
/* The table of one start: the host's GPUs as the nvidia driver lists them,
 * and the positions of the devices the choice needs, read from the few
 * sysfs and procfs paths they have.
 *
 * GPUs come from <procfs>/driver/nvidia/gpus/, one directory per GPU named
 * by its PCI address, not from a scan of <sysfs>/bus/pci/devices for vendor
 * 0x10de and class 0x03xxxx: the driver's list is what NVML enumerates (a
 * GPU bound to vfio-pci for a VM, or excluded with NVreg_ExcludedGpus, is
 * in sysfs but in neither, and counting it would shift every index after
 * it), NVSwitches and the GPUs' audio functions are not in it, and it is one
 * short directory where the PCI bus has hundreds of functions to open; the
 * information files that map UUIDs and minors are in it too.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/utils.h"
#include "topo/topo_int.h"

#define GPUS_DIR "driver/nvidia/gpus"
#define GPUS_MAX 1024

int
topo_table_init (struct topo_table *t, const struct roce_policy *p, roce_error_t *err)
{
  *t = (struct topo_table){ .p = p };
  t->sys = realpath (p->sysfs_root, NULL);
  if (t->sys == NULL)
    return roce_error_sys (err, errno, "sysfs_root `%s`", p->sysfs_root);
  t->n_hcas = p->n_hcas;
  t->hcas = xmalloc0 ((p->n_hcas + 1) * sizeof (*t->hcas));
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      t->hcas[i].h = &p->hcas[i];
      t->hcas[i].pos.numa = -1;
    }
  return 0;
}

void
topo_table_clear (struct topo_table *t)
{
  for (size_t i = 0; i < t->n_gpus; i++)
    {
      free (t->gpus[i].pci);
      free (t->gpus[i].uuid);
      topo_pos_clear (&t->gpus[i].pos);
    }
  for (size_t i = 0; i < t->n_hcas; i++)
    topo_pos_clear (&t->hcas[i].pos);
  free (t->gpus);
  free (t->hcas);
  free (t->sys);
  *t = (struct topo_table){ 0 };
}

static int
cmp_gpu (const void *a, const void *b)
{
  return topo_pci_cmp (((const struct topo_gpu *) a)->pci, ((const struct topo_gpu *) b)->pci);
}

int
topo_table_list (struct topo_table *t, roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/" GPUS_DIR, t->p->procfs_root);
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;

  if (t->listed)
    return 0;
  t->listed = true;
  if (d == NULL && errno == ENOENT)
    return 0; /* no nvidia driver: no GPUs */
  if (d == NULL)
    return roce_error_sys (err, errno, "`%s`", dir);
  t->driver = true;
  while ((de = readdir (d)) != NULL)
    {
      if (! topo_pci_addr_valid (de->d_name))
        continue;
      if (t->n_gpus == GPUS_MAX)
        return roce_error_make (err, E2BIG, "`%s`: more than %d GPUs", dir, GPUS_MAX);
      t->gpus = xrealloc (t->gpus, (t->n_gpus + 1) * sizeof (*t->gpus));
      t->gpus[t->n_gpus++] = (struct topo_gpu){ .pci = xstrdup (de->d_name), .minor = -1 };
    }
  if (t->n_gpus)
    qsort (t->gpus, t->n_gpus, sizeof (*t->gpus), cmp_gpu);
  for (size_t i = 0; i < t->n_gpus; i++)
    {
      t->gpus[i].index = (unsigned) i;
      t->gpus[i].pos.numa = -1;
    }
  return 0;
}

/* numa_node of the function at real; -1 when absent or not a number.  */
static int
numa_of (const char *real)
{
  cleanup_free char *path = xasprintf ("%s/numa_node", real);
  cleanup_free char *line = NULL;
  cleanup_error roce_error_t lerr = NULL;
  uint64_t v;

  if (read_line_at (AT_FDCWD, path, &line, &lerr) < 0 || parse_u64 (line, &v) < 0 || v > 4095)
    return -1;
  return (int) v;
}

/* Where path leads, as the kernel resolved it: an O_PATH open and the link
 * of its /proc/self/fd entry, three calls where realpath(3) reads the link
 * of every component of the path and of the target (130 calls for an auto
 * start of two GPUs here).  realpath(3) without /proc.  NULL: errno.  */
static char *
resolved (const char *path)
{
  cleanup_close int fd = open (path, O_PATH | O_CLOEXEC);
  char link[32], buf[PATH_MAX];
  ssize_t n;

  if (fd < 0)
    return NULL;
  snprintf (link, sizeof (link), "/proc/self/fd/%d", fd);
  n = readlink (link, buf, sizeof (buf));
  if (n < 0 && errno == ENOENT)
    return realpath (path, NULL);
  if (n < 0 || (size_t) n >= sizeof (buf) || buf[0] != '/')
    {
      errno = n < 0 ? errno : ENAMETOOLONG;
      return NULL;
    }
  return xstrndup (buf, (size_t) n);
}

/* The position of <sysfs>/rel, a link into <sysfs>/devices; a VF's is its
 * PF's (physfn) when vf is given.  ENOENT: absent.  */
static int
locate (const struct topo_table *t, const char *rel, struct topo_pos *out, bool *vf,
        roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/%s", t->p->sysfs_root, rel);
  cleanup_free char *real = resolved (path);
  cleanup_free char *prefix = xasprintf ("%s/devices/", t->sys);

  if (real == NULL)
    return roce_error_sys (err, errno, "`%s`", path);
  if (vf)
    {
      cleanup_free char *physfn = xasprintf ("%s/physfn", real);
      char *pf = resolved (physfn);
      *vf = pf != NULL;
      if (pf)
        {
          free (real);
          real = pf;
        }
    }
  if (strncmp (real, prefix, strlen (prefix)) != 0)
    return roce_error_make (err, EINVAL, "`%s` leads to `%s`, not below `%s`", path, real, prefix);
  if (topo_pos_parse (real + strlen (prefix), out, err) < 0)
    return roce_error_wrap (err, "`%s`", path);
  out->numa = numa_of (real);
  return 0;
}

int
topo_table_hca (struct topo_table *t, size_t i, roce_error_t *err)
{
  struct topo_hca *hca = &t->hcas[i];
  cleanup_free char *rel = NULL;
  cleanup_error roce_error_t lerr = NULL;

  if (hca->pos.pci)
    return 0;
  rel = xasprintf ("class/infiniband/%s/device", hca->h->name);
  if (locate (t, rel, &hca->pos, &hca->vf, &lerr) < 0)
    {
      cleanup_free char *what = xasprintf ("PCI position of HCA %s", hca->h->name);
      cleanup_free char *exp
          = xasprintf ("%s/%s, a link into %s/devices", t->p->sysfs_root, rel, t->p->sysfs_root);
      cleanup_free char *fix = xasprintf (
          "bring %s back, or remove it from %s (roce.io/hca=auto weighs every policy HCA)",
          hca->h->name, t->p->path);
      return roce_error_refuse (err, what, exp, lerr->msg, fix);
    }
  return 0;
}

int
topo_table_hcas (struct topo_table *t, roce_error_t *err)
{
  for (size_t i = 0; i < t->n_hcas; i++)
    if (topo_table_hca (t, i, err) < 0)
      return -1;
  return 0;
}

int
topo_table_locate (struct topo_table *t, size_t i, const char *source, roce_error_t *err)
{
  struct topo_gpu *g = &t->gpus[i];
  cleanup_free char *rel = NULL;
  cleanup_error roce_error_t lerr = NULL;

  if (g->located)
    return 0;
  rel = xasprintf ("bus/pci/devices/%s", g->pci);
  if (locate (t, rel, &g->pos, NULL, &lerr) < 0)
    {
      cleanup_free char *what
          = xasprintf ("PCI position of GPU %u (%s, %s)", g->index, g->pci, source);
      cleanup_free char *exp
          = xasprintf ("%s/%s, a link into %s/devices", t->p->sysfs_root, rel, t->p->sysfs_root);
      return roce_error_refuse (err, what, exp, lerr->msg,
                                "the driver lists a GPU that sysfs lacks: check the host, or "
                                "name the HCAs");
    }
  g->located = true;
  return 0;
}

int
topo_table_identify (struct topo_table *t, roce_error_t *err)
{
  (void) err;
  for (size_t i = 0; i < t->n_gpus; i++)
    {
      struct topo_gpu *g = &t->gpus[i];
      cleanup_free char *path = NULL;
      cleanup_free char *text = NULL;
      cleanup_error roce_error_t lerr = NULL;
      if (g->identified)
        continue;
      g->identified = true;
      path = xasprintf ("%s/" GPUS_DIR "/%s/information", t->p->procfs_root, g->pci);
      if (read_file_at (AT_FDCWD, path, 65536, &text, NULL, &lerr) == 0)
        topo_parse_information (text, &g->uuid, &g->minor);
    }
  return 0;
}

static int
refuse_ref (const struct topo_table *t, const char *what, const struct topo_ref *r,
            const char *expected, const char *found, roce_error_t *err)
{
  cleanup_free char *w = xasprintf ("GPU %s of %s", r->source, what);
  cleanup_free char *fix
      = xasprintf ("give the container GPUs of this host, or name the HCAs (the host's GPUs: "
                   "roce-hook topo)");
  (void) t;
  return roce_error_refuse (err, w, expected, found, fix);
}

static int
find_ref (struct topo_table *t, const char *what, const struct topo_ref *r, size_t *out,
          roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/" GPUS_DIR, t->p->procfs_root);

  if (! t->driver)
    {
      cleanup_free char *exp = xasprintf ("a GPU the nvidia driver lists in %s", dir);
      return refuse_ref (t, what, r, exp, "no such directory (no nvidia driver)", err);
    }
  if (r->kind == TOPO_REF_INDEX)
    {
      cleanup_free char *exp = NULL;
      cleanup_free char *found = NULL;
      if (r->n < t->n_gpus)
        {
          *out = r->n;
          return 0;
        }
      exp = xasprintf ("an index below %zu (the host's GPUs in PCI address order)", t->n_gpus);
      found = xasprintf ("%u", r->n);
      return refuse_ref (t, what, r, exp, found, err);
    }
  if (topo_table_identify (t, err) < 0)
    return -1;
  for (size_t i = 0; i < t->n_gpus; i++)
    if ((r->kind == TOPO_REF_UUID && t->gpus[i].uuid && strcasecmp (t->gpus[i].uuid, r->uuid) == 0)
        || (r->kind == TOPO_REF_MINOR && t->gpus[i].minor == (int) r->n))
      {
        *out = i;
        return 0;
      }
  {
    cleanup_free char *exp
        = xasprintf ("a GPU whose %s/<pci>/information has %s", dir,
                     r->kind == TOPO_REF_UUID ? "that GPU UUID" : "that Device Minor");
    return refuse_ref (t, what, r, exp, "none", err);
  }
}

int
topo_table_resolve (struct topo_table *t, const char *what, const struct topo_refs *refs,
                    size_t **out, size_t *n, roce_error_t *err)
{
  cleanup_free size_t *v = xmalloc0 ((t->n_gpus + 1) * sizeof (*v));
  cleanup_free bool *seen = xmalloc0 (t->n_gpus + 1);
  size_t k = 0;

  if (refs->all)
    for (size_t i = 0; i < t->n_gpus; i++)
      {
        v[k++] = i;
        seen[i] = true;
      }
  for (size_t r = 0; r < refs->n; r++)
    {
      size_t i = 0;
      if (find_ref (t, what, &refs->v[r], &i, err) < 0)
        return -1;
      if (! seen[i])
        {
          v[k++] = i;
          seen[i] = true;
        }
    }
  *out = steal_pointer (&v);
  *n = k;
  return 0;
}
