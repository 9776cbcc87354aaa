/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA device nodes of a request, read from sysfs (rdma_nodes.h): no
 * libibverbs, no netlink, apart from rdma.c, so that roce-runtime, which
 * needs only these, links neither (it is linked statically).  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "devices/rdma_nodes.h"
#include "lib/utils.h"
#include "sys/sysfs.h"

int
rdma_parse_devno (const char *s, unsigned *major, unsigned *minor)
{
  const char *colon = strchr (s, ':');
  cleanup_free char *maj = NULL;
  uint64_t a, b;

  if (colon == NULL)
    return -1;
  maj = xstrndup (s, (size_t) (colon - s));
  if (parse_u64 (maj, &a) < 0 || parse_u64 (colon + 1, &b) < 0)
    return -1;
  /* The kernel's limits: 12-bit major, 20-bit minor.  */
  if (a > 0xfff || b > 0xfffff)
    return -1;
  *major = (unsigned) a;
  *minor = (unsigned) b;
  return 0;
}

const char *
rdma_node_name (const struct rdma_node *n)
{
  const char *s = strrchr (n->path, '/');
  return s ? s + 1 : n->path;
}

/* "uverbs" and a number: the only names that go into a path.  */
static bool
valid_uverbs_name (const char *s)
{
  size_t len = strlen (s);
  if (strncmp (s, "uverbs", 6) != 0 || len < 7 || len > 12)
    return false;
  for (const char *p = s + 6; *p; p++)
    if (*p < '0' || *p > '9')
      return false;
  return true;
}

/* The node's numbers from `dev` (read from rel), or read here when NULL.  */
static int
node_from_sysfs (const struct roce_policy *p, const char *rel, const char *name,
                 const char *dev_read, struct rdma_node *out, roce_error_t *err)
{
  cleanup_free char *read_here = NULL;
  const char *dev = dev_read;

  if (dev == NULL && sysfs_read_line (p->sysfs_root, rel, &read_here, err) < 0)
    return roce_error_wrap (err, "device numbers of %s", name);
  if (dev == NULL)
    dev = read_here;
  if (rdma_parse_devno (dev, &out->major, &out->minor) < 0)
    {
      cleanup_free char *what = xasprintf ("%s/%s", p->sysfs_root, rel);
      cleanup_free char *found = xasprintf ("'%s'", dev);
      return roce_error_refuse (err, what, "major:minor", found, "check the host's sysfs_root");
    }
  return check_snprintf (out->path, sizeof (out->path), err, RDMA_CDEV_DIR "/%s", name) < 0 ? -1
                                                                                            : 0;
}

/* The kernel's uverbs devices, read the way libibverbs's own sysfs
 * enumeration reads them (rdma-core libibverbs/sysfs.c and init.c):
 * class/infiniband_verbs/abi_version in 3..6, and per uverbsN its ibdev, an
 * existing class/infiniband/<ibdev>, its dev numbers, and a node at
 * /dev/infiniband/uverbsN.  libibverbs itself is not asked on the start path:
 * its device list loads every provider library the host has (about 2.4 ms
 * of a start here, `make bench`), and the providers that matter are the
 * container image's own, not the host's.  `check` still asks it.  */
struct uverbs_dev
{
  char name[16]; /* uverbsN */
  char *ibdev;
};

static void
uverbs_devs_free (struct uverbs_dev *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (v[i].ibdev);
  free (v);
}

/* class/infiniband_verbs/abi_version in 3..6, as libibverbs wants it.  */
static bool
uverbs_abi_ok (const char *sysfs_root, char **abi)
{
  cleanup_error roce_error_t err = NULL;
  uint64_t v = 0;
  return sysfs_read_line (sysfs_root, "class/infiniband_verbs/abi_version", abi, &err) == 0
         && parse_u64 (*abi, &v) == 0 && v >= 3 && v <= 6;
}

/* One uverbsN as libibverbs takes it: its name, its ibdev (a valid HCA
 * name, *ibdev), class/infiniband/<ibdev> and /dev/infiniband/uverbsN.  */
static bool
uverbs_entry (const char *sysfs_root, const char *name, char **ibdev)
{
  cleanup_free char *rel = NULL, *ibpath = NULL, *node = NULL;
  cleanup_error roce_error_t err = NULL;
  struct stat st;

  *ibdev = NULL;
  if (name[0] == '.' || ! valid_uverbs_name (name))
    return false;
  rel = xasprintf ("class/infiniband_verbs/%s/ibdev", name);
  if (sysfs_read_line (sysfs_root, rel, ibdev, &err) < 0)
    return false;
  ibpath = xasprintf ("%s/class/infiniband/%s", sysfs_root, *ibdev);
  node = xasprintf (RDMA_CDEV_DIR "/%s", name);
  /* libibverbs drops a device whose ibdev or node is missing.  */
  if (! policy_valid_hca_name (*ibdev) || stat (ibpath, &st) < 0 || stat (node, &st) < 0)
    {
      free (*ibdev);
      *ibdev = NULL;
      return false;
    }
  return true;
}

static int
uverbs_list (const char *sysfs_root, struct uverbs_dev **out, size_t *n_out, roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/class/infiniband_verbs", sysfs_root);
  cleanup_free char *abi = NULL;
  struct uverbs_dev *v = NULL;
  size_t n = 0;
  DIR *d;
  struct dirent *e;

  d = opendir (dir);
  if (d == NULL || ! uverbs_abi_ok (sysfs_root, &abi))
    {
      cleanup_free char *found = d == NULL ? xasprintf ("none (%s: %s)", dir, strerror (errno))
                                           : xasprintf ("uverbs ABI %s", abi ? abi : "unreadable");
      if (d)
        closedir (d);
      return roce_error_refuse (err, "RDMA devices", "the kernel's uverbs devices (ABI 3..6)",
                                found, "load the HCA's driver and ib_uverbs on the host");
    }
  while ((e = readdir (d)) != NULL)
    {
      cleanup_free char *ibdev = NULL;
      if (! uverbs_entry (sysfs_root, e->d_name, &ibdev))
        continue;
      v = xrealloc (v, (n + 1) * sizeof (*v));
      /* valid_uverbs_name: at most 12 characters.  */
      memcpy (v[n].name, e->d_name, strlen (e->d_name) + 1);
      v[n].ibdev = steal_pointer (&ibdev);
      n++;
    }
  closedir (d);
  *out = v;
  *n_out = n;
  return 0;
}

/* The HCA's own uverbs device, found from the HCA: the directory of its
 * PCI function lists it (class/infiniband/<hca>/device/infiniband_verbs/),
 * and it passes the checks of the scan above (ibdev names the HCA, the
 * node exists).  A node with a hundred HCAs and VFs costs a start what one
 * does; the whole scan is left to a host whose sysfs lacks that directory,
 * or whose entry there is not the HCA's.  1: found (*name), 0: not so.  */
static int
uverbs_of_hca (const char *sysfs_root, const char *hca, char name[16])
{
  cleanup_free char *dir
      = xasprintf ("%s/class/infiniband/%s/device/infiniband_verbs", sysfs_root, hca);
  int found = 0;
  DIR *d;
  struct dirent *e;

  d = opendir (dir);
  if (d == NULL)
    return 0;
  while (! found && (e = readdir (d)) != NULL)
    {
      cleanup_free char *ibdev = NULL;
      if (! uverbs_entry (sysfs_root, e->d_name, &ibdev) || strcmp (ibdev, hca) != 0)
        continue;
      /* valid_uverbs_name: at most 12 characters.  */
      memcpy (name, e->d_name, strlen (e->d_name) + 1);
      found = 1;
    }
  closedir (d);
  return found;
}

int
rdma_nodes_for_request (const struct roce_policy *p, const struct roce_request *r,
                        struct rdma_node **out, size_t *n_out, roce_error_t *err)
{
  struct uverbs_dev *devs = NULL;
  size_t n_dev = 0, n = 0;
  bool scanned = false, abi_ok;
  cleanup_free char *abi = NULL;
  cleanup_free struct rdma_node *nodes = NULL;
  cleanup_free char *cm = NULL;
  cleanup_error roce_error_t cm_err = NULL;
  int ret = -1;

  /* An ABI libibverbs would not take: the scan refuses, saying so.  */
  abi_ok = uverbs_abi_ok (p->sysfs_root, &abi);
  nodes = xmalloc0 ((r->n + 1) * sizeof (*nodes));
  for (size_t i = 0; i < r->n; i++)
    {
      const char *hca = r->sel[i].hca->name;
      const struct uverbs_dev *dev = NULL;
      struct uverbs_dev direct = { .ibdev = NULL };
      cleanup_free char *rel = NULL;

      if (abi_ok && uverbs_of_hca (p->sysfs_root, hca, direct.name))
        dev = &direct;
      if (dev == NULL && ! scanned)
        {
          if (uverbs_list (p->sysfs_root, &devs, &n_dev, err) < 0)
            goto out;
          scanned = true;
        }
      for (size_t j = 0; j < n_dev && dev == NULL; j++)
        if (strcmp (devs[j].ibdev, hca) == 0)
          dev = &devs[j];
      if (dev == NULL)
        {
          cleanup_free char *what = xasprintf ("HCA %s", hca);
          cleanup_free char *names = xstrdup ("");
          cleanup_free char *expected = NULL;
          cleanup_free char *fix
              = xasprintf ("check the HCA's driver, `ibv_devices` and " RDMA_CDEV_DIR
                           "/uverbs* on the host, or remove %s from %s",
                           hca, p->path);
          for (size_t j = 0; j < n_dev; j++)
            str_list_add (&names, ", ", "%s", devs[j].ibdev);
          expected = xasprintf ("an RDMA device with a uverbs node (the host has %s)",
                                *names ? names : "none");
          roce_error_refuse (err, what, expected, "not listed", fix);
          goto out;
        }
      rel = xasprintf ("class/infiniband_verbs/%s/dev", dev->name);
      if (node_from_sysfs (p, rel, dev->name, NULL, &nodes[n], err) < 0)
        {
          roce_error_wrap (err, "HCA %s", hca);
          goto out;
        }
      n++;
    }
  ret = 0;
out:
  uverbs_devs_free (devs, n_dev);
  if (ret < 0)
    return -1;

  /* rdma_cm: where the host has it (the rdma_ucm module), with its own,
   * dynamic, misc minor.  */
  if (sysfs_read_line (p->sysfs_root, "class/misc/rdma_cm/dev", &cm, &cm_err) == 0)
    {
      if (node_from_sysfs (p, "class/misc/rdma_cm/dev", "rdma_cm", cm, &nodes[n], err) < 0)
        return -1;
      n++;
    }
  else if (cm_err->status != ENOENT)
    return roce_error_make (err, cm_err->status, "rdma_cm: %s", cm_err->msg);

  *out = steal_pointer (&nodes);
  *n_out = n;
  return 0;
}
