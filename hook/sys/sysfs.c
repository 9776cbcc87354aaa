/* SPDX-License-Identifier: Apache-2.0 */
/* Reading sysfs (or a test's tree at sysfs_root), and what `qos apply`
 * writes beneath sysfs_root and configfs_root.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include <linux/magic.h>
#include <linux/openat2.h>

#include "lib/utils.h"
#include "sys/sysfs.h"

int
sysfs_read_line (const char *root, const char *rel, char **out, roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/%s", root, rel);
  return read_line_at (AT_FDCWD, path, out, err);
}

/* ---- beneath a root: what `qos apply` writes --------------------------------- */

int
sysfs_root_open (const char *root, const char *key, unsigned long magic, roce_error_t *err)
{
  cleanup_close int fd = open (root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct statfs sfs;
  struct stat st;

  if (fd < 0)
    return roce_error_sys (err, errno, "%s `%s`", key, root);
  if (fstatfs (fd, &sfs) < 0 || fstat (fd, &st) < 0)
    return roce_error_sys (err, errno, "%s `%s`", key, root);
  if ((unsigned long) sfs.f_type == magic)
    return steal_fd (&fd);
  /* A tree a test (or an operator's dry run) supplies: root's alone.  */
  if (st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0)
    return steal_fd (&fd);
  {
    cleanup_free char *what = xasprintf ("%s `%s`", key, root);
    cleanup_free char *found
        = xasprintf ("a directory of uid %u, mode %04o, not %s", (unsigned) st.st_uid,
                     (unsigned) (st.st_mode & 07777), magic == SYSFS_MAGIC ? "sysfs" : "configfs");
    return roce_error_refuse (
        err, what,
        magic == SYSFS_MAGIC ? "sysfs, or a tree owned by root and writable by no one else"
                             : "configfs, or a tree owned by root and writable by no one else",
        found, "point it at the real mount, or chown root and chmod go-w the tree");
  }
}

/* The file at path (under root) opened with flags, resolved beneath the
 * root: no link, `..` or magic link takes it out of the tree.  */
/* Where an fd leads, as the kernel names it.  */
static int
fd_path (int fd, char *buf, size_t size)
{
  char proc[32];
  ssize_t n;

  snprintf (proc, sizeof (proc), "/proc/self/fd/%d", fd);
  n = readlink (proc, buf, size - 1);
  if (n < 0 || (size_t) n >= size - 1)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* Without openat2 (kernels before 5.6, valgrind): rel opened from rfd as
 * O_PATH, then where it led checked to lie beneath rfd's own place (the
 * kernel's name for both: nothing re-walked), then opened with flags
 * through /proc/self/fd.  -1 with errno EXDEV when it led out.  */
static int
open_checked_beneath (int rfd, const char *rel, int flags)
{
  char top[PATH_MAX], at[PATH_MAX], proc[32];
  cleanup_close int pfd = openat (rfd, rel, O_PATH | O_CLOEXEC | (flags & O_NOFOLLOW));
  struct stat st;
  size_t n;

  if (pfd < 0)
    return -1;
  if (fd_path (rfd, top, sizeof (top)) < 0 || fd_path (pfd, at, sizeof (at)) < 0)
    return -1;
  n = strlen (top);
  if (! (strncmp (at, top, n) == 0 && (at[n] == '/' || (n == 1 && top[0] == '/'))))
    {
      errno = EXDEV;
      return -1;
    }
  if (fstat (pfd, &st) < 0)
    return -1;
  if (S_ISLNK (st.st_mode))
    {
      errno = ELOOP; /* O_NOFOLLOW's answer at the last component */
      return -1;
    }
  if (flags & O_PATH)
    return steal_fd (&pfd);
  snprintf (proc, sizeof (proc), "/proc/self/fd/%d", pfd);
  return open (proc, (flags & ~O_NOFOLLOW) | O_CLOEXEC | O_NOCTTY);
}

static int
open_beneath (const char *root, const char *path, int flags, roce_error_t *err)
{
  size_t n = strlen (root);
  cleanup_close int rfd = -1;
  /* openat2 takes with O_PATH only the flags that go with it.  */
  struct open_how how = { .flags = (uint64_t) flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY),
                          .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
  const char *rel;
  int fd;

  while (n > 1 && root[n - 1] == '/')
    n--;
  if (strncmp (path, root, n) != 0 || path[n] != '/')
    return roce_error_make (err, EXDEV, "`%s` is not under `%s`", path, root);
  for (rel = path + n; *rel == '/'; rel++)
    ;
  rfd = open (root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0)
    return roce_error_sys (err, errno, "open `%s`", root);
  fd = (int) syscall (SYS_openat2, rfd, rel, &how, sizeof (how));
  if (fd < 0 && errno == ENOSYS)
    fd = open_checked_beneath (rfd, rel, flags);
  if (fd < 0 && errno == EXDEV)
    return roce_error_make (err, EXDEV, "`%s` leads out of `%s` (a link); nothing written there",
                            path, root);
  if (fd < 0 && errno == ELOOP)
    return roce_error_make (
        err, ELOOP, "`%s`: a link at its last component, or a magic link; nothing written there",
        path);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s`%s", path,
                           (flags & O_WRONLY) ? " for writing" : "");
  return fd;
}

int
sysfs_write_beneath (const char *root, const char *path, const char *value, roce_error_t *err)
{
  cleanup_close int fd = open_beneath (root, path, O_WRONLY | O_TRUNC | O_NOFOLLOW, err);
  if (fd < 0)
    return -1;
  /* One write(2): a sysfs or configfs store sees the value whole.  */
  if (write_all_fd (fd, value, strlen (value), err) < 0)
    return roce_error_wrap (err, "write '%s' to `%s`", value, path);
  if (close (steal_fd (&fd)) < 0)
    return roce_error_sys (err, errno, "write '%s' to `%s`", value, path);
  return 0;
}

/* The parent of path opened beneath root, and path's last component.  */
static int
parent_beneath (const char *root, const char *path, const char **base, roce_error_t *err)
{
  const char *slash = strrchr (path, '/');
  cleanup_free char *dir = NULL;

  if (slash == NULL || slash[1] == '\0')
    return roce_error_make (err, EINVAL, "`%s`: no name", path);
  dir = xstrndup (path, (size_t) (slash - path));
  *base = slash + 1;
  return open_beneath (root, dir, O_PATH | O_DIRECTORY, err);
}

int
sysfs_mkdir_beneath (const char *root, const char *path, bool *made, roce_error_t *err)
{
  const char *base;
  cleanup_close int pfd = parent_beneath (root, path, &base, err);

  *made = false;
  if (pfd < 0)
    return -1;
  if (mkdirat (pfd, base, 0755) == 0)
    {
      *made = true;
      return 0;
    }
  if (errno != EEXIST)
    return roce_error_sys (err, errno, "mkdir `%s`", path);
  return 0;
}

int
sysfs_rmdir_beneath (const char *root, const char *path, roce_error_t *err)
{
  const char *base;
  cleanup_close int pfd = parent_beneath (root, path, &base, err);

  if (pfd < 0)
    return -1;
  if (unlinkat (pfd, base, AT_REMOVEDIR) < 0)
    return roce_error_sys (err, errno, "rmdir `%s`", path);
  return 0;
}

int
sysfs_write_value (const char *path, const char *value, roce_error_t *err)
{
  cleanup_close int fd = open (path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s` for writing", path);
  /* One write(2): a sysfs or configfs store sees the value whole.  */
  if (write_all_fd (fd, value, strlen (value), err) < 0)
    return roce_error_wrap (err, "write '%s' to `%s`", value, path);
  if (close (steal_fd (&fd)) < 0)
    return roce_error_sys (err, errno, "write '%s' to `%s`", value, path);
  return 0;
}

static bool
plausible_ifname (const char *s)
{
  size_t len = strlen (s);
  if (len == 0 || len > 15)
    return false;
  for (const char *p = s; *p; p++)
    if (*p <= 0x20 || *p > 0x7e || *p == '/' || *p == ':')
      return false;
  return true;
}

int
sysfs_hca_netdev (const struct roce_policy *p, const struct policy_hca *h, char **out,
                  roce_error_t *err)
{
  cleanup_free char *dir = NULL;
  cleanup_free char *found = NULL;
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  int n = 0;

  if (h->netdev)
    {
      *out = xstrdup (h->netdev);
      return 0;
    }

  dir = xasprintf ("%s/class/infiniband/%s/device/net", p->sysfs_root, h->name);
  d = opendir (dir);
  if (d)
    {
      while ((de = readdir (d)) != NULL)
        {
          if (de->d_name[0] == '.')
            continue;
          n++;
          free (found);
          found = xstrdup (de->d_name);
        }
      if (n > 1)
        return roce_error_refuse (err, "netdev of HCA", "one netdev", "several in device/net",
                                  "set hcas.<hca>.netdev in the policy");
      if (n == 1 && plausible_ifname (found))
        {
          *out = steal_pointer (&found);
          return 0;
        }
    }

  {
    cleanup_free char *rel = xasprintf ("class/infiniband/%s/ports/1/gid_attrs/ndevs/0", h->name);
    cleanup_error roce_error_t lerr = NULL;
    if (sysfs_read_line (p->sysfs_root, rel, &found, &lerr) == 0 && plausible_ifname (found))
      {
        *out = steal_pointer (&found);
        return 0;
      }
  }
  {
    cleanup_free char *what = xasprintf ("netdev of HCA %s", h->name);
    cleanup_free char *fix = xasprintf ("set hcas.%s.netdev in %s", h->name, p->path);
    return roce_error_refuse (err, what, "found in sysfs (device/net or gid_attrs/ndevs/0)", "none",
                              fix);
  }
}
