/* SPDX-License-Identifier: Apache-2.0 */
/* The RoCE GID table of an HCA's ports, read from sysfs: the entry of a
 * container's address, and the room left for more.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/utils.h"
#include "net/gid.h"
#include "sys/sysfs.h"

void
gid_entries_free (struct gid_entry *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (v[i].gid);
      free (v[i].type);
      free (v[i].ndev);
    }
  free (v);
}

bool
gid_parse_index (const char *s, unsigned *out)
{
  uint64_t v;
  if (parse_u64 (s, &v) < 0 || v > 65535)
    return false;
  *out = (unsigned) v;
  return true;
}

/* One sysfs attribute; NULL when the entry is empty: ENOENT (not there),
 * EINVAL (what the kernel answers for an empty GID slot), or no text.  */
static char *
read_attr (const char *path)
{
  cleanup_error roce_error_t err = NULL;
  char *s = NULL;
  if (read_line_at (AT_FDCWD, path, &s, &err) < 0)
    return NULL;
  if (*s == '\0' || ! str_is_printable (s))
    {
      free (s);
      return NULL;
    }
  return s;
}

static bool
gid_is_zero (const char *g)
{
  for (const char *p = g; *p; p++)
    if (*p != '0' && *p != ':')
      return false;
  return true;
}

static int
gid_cmp (const void *a, const void *b)
{
  const struct gid_entry *x = a, *y = b;
  if (x->port != y->port)
    return x->port < y->port ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static void
port_gids (const char *portdir, unsigned port, struct gid_entry **v, size_t *n)
{
  cleanup_free char *gdir = xasprintf ("%s/gids", portdir);
  cleanup_dir DIR *d = opendir (gdir);
  struct dirent *de;

  if (d == NULL)
    return;
  while ((de = readdir (d)) != NULL)
    {
      cleanup_free char *gp = NULL, *tp = NULL, *np = NULL;
      cleanup_free char *gid = NULL, *type = NULL;
      unsigned idx;
      if (! gid_parse_index (de->d_name, &idx))
        continue;
      gp = xasprintf ("%s/%s", gdir, de->d_name);
      gid = read_attr (gp);
      if (gid == NULL || gid_is_zero (gid))
        continue;
      tp = xasprintf ("%s/gid_attrs/types/%u", portdir, idx);
      type = read_attr (tp);
      if (type == NULL || strcmp (type, "RoCE v2") != 0)
        continue;
      np = xasprintf ("%s/gid_attrs/ndevs/%u", portdir, idx);
      *v = xrealloc (*v, (*n + 1) * sizeof (**v));
      (*v)[*n] = (struct gid_entry){ .port = port,
                                     .index = idx,
                                     .gid = steal_pointer (&gid),
                                     .type = steal_pointer (&type),
                                     .ndev = read_attr (np) };
      if ((*v)[*n].ndev == NULL)
        (*v)[*n].ndev = xstrdup ("");
      (*n)++;
    }
}

/* Calls fn for each numbered port directory of <sysfs_root>/class/infiniband/<hca>/ports.
 * Fails when hca is no plain name or has no ports directory.  */
static int
each_port (const char *sysfs_root, const char *hca,
           void (*fn) (const char *portdir, unsigned port, void *ctx), void *ctx, roce_error_t *err)
{
  cleanup_free char *pdir = NULL;
  cleanup_dir DIR *d = NULL;
  struct dirent *de;

  if (strchr (hca, '/') || strcmp (hca, "..") == 0 || strcmp (hca, ".") == 0)
    return roce_error_make (err, EINVAL, "bad HCA name '%s'", hca);
  pdir = xasprintf ("%s/class/infiniband/%s/ports", sysfs_root, hca);
  d = opendir (pdir);
  if (d == NULL)
    return roce_error_sys (err, errno, "%s", pdir);
  while ((de = readdir (d)) != NULL)
    {
      cleanup_free char *portdir = NULL;
      unsigned port;
      if (! gid_parse_index (de->d_name, &port))
        continue;
      portdir = xasprintf ("%s/%s", pdir, de->d_name);
      fn (portdir, port, ctx);
    }
  return 0;
}

struct gid_vec
{
  struct gid_entry *v;
  size_t n;
};

static void
list_port (const char *portdir, unsigned port, void *ctx)
{
  struct gid_vec *g = ctx;
  port_gids (portdir, port, &g->v, &g->n);
}

int
gid_list_roce_v2 (const char *sysfs_root, const char *hca, struct gid_entry **out, size_t *n,
                  roce_error_t *err)
{
  struct gid_vec g = { NULL, 0 };

  *out = NULL;
  *n = 0;
  if (each_port (sysfs_root, hca, list_port, &g, err) < 0)
    {
      gid_entries_free (g.v, g.n);
      return -1;
    }
  if (g.n > 1)
    qsort (g.v, g.n, sizeof (*g.v), gid_cmp);
  *out = g.v;
  *n = g.n;
  return 0;
}

/* ---- table use and the container's GID --------------------------------------- */

void
gid_port_use_free (struct gid_port_use *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (v[i].ndev0);
  free (v);
}

static int
use_cmp (const void *a, const void *b)
{
  const struct gid_port_use *x = a, *y = b;
  return x->port < y->port ? -1 : x->port > y->port;
}

int
gid_port_count (const char *portdir, unsigned *size, unsigned *used, roce_error_t *err)
{
  cleanup_free char *gdir = xasprintf ("%s/gids", portdir);
  cleanup_dir DIR *d = opendir (gdir);
  struct dirent *de;

  *size = *used = 0;
  if (d == NULL)
    return roce_error_sys (err, errno, "%s", gdir);
  while ((de = readdir (d)) != NULL)
    {
      cleanup_free char *gp = NULL, *gid = NULL;
      unsigned idx;
      if (! gid_parse_index (de->d_name, &idx))
        continue;
      (*size)++;
      gp = xasprintf ("%s/%s", gdir, de->d_name);
      gid = read_attr (gp);
      if (gid && ! gid_is_zero (gid))
        (*used)++;
    }
  return 0;
}

static void
port_use (const char *portdir, struct gid_port_use *u)
{
  cleanup_free char *np = xasprintf ("%s/gid_attrs/ndevs/0", portdir);

  u->ndev0 = read_attr (np);
  if (u->ndev0 == NULL)
    u->ndev0 = xstrdup ("");
  /* No gids directory: a table of no slots.  */
  (void) gid_port_count (portdir, &u->size, &u->used, NULL);
}

struct use_vec
{
  struct gid_port_use *v;
  size_t n;
};

static void
use_port (const char *portdir, unsigned port, void *ctx)
{
  struct use_vec *u = ctx;
  u->v = xrealloc (u->v, (u->n + 1) * sizeof (*u->v));
  u->v[u->n] = (struct gid_port_use){ .port = port };
  port_use (portdir, &u->v[u->n]);
  u->n++;
}

int
gid_table_use (const char *sysfs_root, const char *hca, struct gid_port_use **out, size_t *n,
               roce_error_t *err)
{
  struct use_vec u = { NULL, 0 };

  *out = NULL;
  *n = 0;
  if (each_port (sysfs_root, hca, use_port, &u, err) < 0)
    {
      gid_port_use_free (u.v, u.n);
      return -1;
    }
  if (u.n > 1)
    qsort (u.v, u.n, sizeof (*u.v), use_cmp);
  *out = u.v;
  *n = u.n;
  return 0;
}

const struct gid_port_use *
gid_port_of (const struct gid_port_use *v, size_t n, const char *netdev)
{
  for (size_t i = 0; i < n; i++)
    if (netdev && strcmp (v[i].ndev0, netdev) == 0)
      return &v[i];
  return n ? &v[0] : NULL;
}

const char *
gid_of_addr (const struct roce_addr *a, char *buf)
{
  /* The kernel's %pI6 of the GID: eight groups of four hex digits.  */
  roce_u128 g = a->family == AF_INET ? (roce_u128) 0xffff << 32 | a->v : a->v;
  for (int i = 0; i < 8; i++)
    snprintf (buf + 5 * i, GID_STR_MAX - 5 * (size_t) i, "%04x%s",
              (unsigned) (g >> (112 - 16 * i)) & 0xffff, i < 7 ? ":" : "");
  return buf;
}

int
gid_find (const char *sysfs_root, const char *hca, const struct roce_addr *addr, const char *ndev,
          unsigned *port, unsigned *index, roce_error_t *err)
{
  struct gid_entry *v = NULL;
  size_t n = 0;
  char want[GID_STR_MAX];
  int found = 0;

  if (gid_list_roce_v2 (sysfs_root, hca, &v, &n, err) < 0)
    return -1;
  gid_of_addr (addr, want);
  for (size_t i = 0; i < n && ! found; i++)
    if (strcasecmp (v[i].gid, want) == 0 && strcmp (v[i].ndev, ndev) == 0)
      {
        *port = v[i].port;
        *index = v[i].index;
        found = 1;
      }
  gid_entries_free (v, n);
  return found;
}

unsigned
gid_entries_per_container (size_t n_addrs, bool ipv6_link_local)
{
  return 2 * (unsigned) n_addrs + (ipv6_link_local ? 2 : 0);
}
