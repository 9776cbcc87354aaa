/* SPDX-License-Identifier: Apache-2.0 */
/* Paths inside a container's hostile rootfs, resolved on fds beneath its root
 * (openat2 RESOLVE_IN_ROOT, or a verified walk), never as strings.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/utils.h"
#include "spec/container.h"
#include "sys/mountinfo.h"
#include "sys/rootfs.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

bool
rootfs_on_pseudo_fs (int fd)
{
  struct statfs sfs;
  if (fstatfs (fd, &sfs) < 0)
    return true; /* cannot tell: treat as unsafe */
  return sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC;
}

#ifndef SYS_statmount
#define SYS_statmount 457
#endif
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

/* The mount a file lies on: statx's mount id where the kernel has it (5.8),
 * else its device.  */
static uint64_t
mount_of (int fd)
{
  struct statx stx;
  if (statx (fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID))
    return stx.stx_mnt_id;
  if (statx (fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0)
    return ((uint64_t) 1 << 63) | ((uint64_t) stx.stx_dev_major << 32) | stx.stx_dev_minor;
  return 0;
}

/* statmount(2)'s request and the head of its answer (linux/mount.h of 6.8
 * and later; the strings follow the fixed part, 512 bytes in every version,
 * at the offsets the fields give).  */
struct sm_req
{
  uint32_t size;
  uint32_t spare;
  uint64_t mnt_id;
  uint64_t param;
};
struct sm_head
{
  uint32_t size;
  uint32_t mnt_opts;
  uint64_t mask;
  uint32_t sb_dev_major;
  uint32_t sb_dev_minor;
  uint64_t sb_magic;
  uint32_t sb_flags;
  uint32_t fs_type;
  uint64_t mnt_id;
  uint64_t mnt_parent_id;
  uint32_t mnt_id_old;
  uint32_t mnt_parent_id_old;
  uint64_t mnt_attr;
  uint64_t mnt_propagation;
  uint64_t mnt_peer_group;
  uint64_t mnt_master;
  uint64_t propagate_from;
  uint32_t mnt_root;
  uint32_t mnt_point;
};
#define SM_FIXED 512
#define SM_SB_BASIC 0x01U
#define SM_MNT_BASIC 0x02U
#define SM_MNT_ROOT 0x08U
#define SM_MNT_POINT 0x10U
#define SM_FS_TYPE 0x20U
#define SM_WANT (SM_SB_BASIC | SM_MNT_BASIC | SM_MNT_ROOT | SM_MNT_POINT | SM_FS_TYPE)

struct mount_facts
{
  uint64_t id, parent;
  dev_t dev;
  uint64_t magic;
  char fs_type[32];
  bool whole; /* its root is the filesystem's root */
  char point[PATH_MAX];
};

/* The mount's unique id (6.8), 0 when the kernel has none.  */
static uint64_t
mount_unique_of (int fd)
{
  struct statx stx;
  if (statx (fd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE, &stx) == 0
      && (stx.stx_mask & STATX_MNT_ID_UNIQUE))
    return stx.stx_mnt_id;
  return 0;
}

/* What the kernel says of mount `id` of the caller's mount namespace:
 * 0, or -errno (ENOSYS: no statmount).  */
static int
mount_facts_of (uint64_t id, struct mount_facts *f)
{
  union
  {
    struct sm_head h;
    char raw[SM_FIXED + 2 * PATH_MAX + 64];
  } buf;
  struct sm_req req = { .size = sizeof (req), .mnt_id = id, .param = SM_WANT };
  const char *str = buf.raw + SM_FIXED;
  size_t room;

  memset (&buf.h, 0, sizeof (buf.h));
  if (syscall (SYS_statmount, &req, &buf, sizeof (buf), 0) < 0)
    return -errno;
  if ((buf.h.mask & SM_WANT) != SM_WANT || buf.h.size < SM_FIXED || buf.h.size > sizeof (buf))
    return -EIO;
  room = buf.h.size - SM_FIXED;
  if (buf.h.fs_type >= room || buf.h.mnt_root >= room || buf.h.mnt_point >= room
      || ! memchr (str + buf.h.fs_type, '\0', room - buf.h.fs_type)
      || ! memchr (str + buf.h.mnt_root, '\0', room - buf.h.mnt_root)
      || ! memchr (str + buf.h.mnt_point, '\0', room - buf.h.mnt_point))
    return -EIO;
  f->id = buf.h.mnt_id;
  f->parent = buf.h.mnt_parent_id;
  f->dev = makedev (buf.h.sb_dev_major, buf.h.sb_dev_minor);
  f->magic = buf.h.sb_magic;
  snprintf (f->fs_type, sizeof (f->fs_type), "%s", str + buf.h.fs_type);
  f->whole = strcmp (str + buf.h.mnt_root, "/") == 0;
  if (snprintf (f->point, sizeof (f->point), "%s", str + buf.h.mnt_point)
      >= (int) sizeof (f->point))
    return -ENAMETOOLONG;
  return 0;
}

/* The mounts the rule found the container's own, for the rootfs whose
 * mount is root_id: a start asks of the same /dev several times (the
 * directories, each node, the rails file).  Unique mount ids are never
 * given again, and a mount made over one has an id of its own.  */
struct rootfs_seen
{
  uint64_t root_id;
  const char *here; /* the rootfs directory's path in the container's namespace */
  uint64_t own[16];
  size_t n_own;
};

static bool
collect_dev (const struct mountinfo_entry *e, void *arg)
{
  struct rootfs_host *h = arg;
  h->devs = xrealloc (h->devs, (h->n + 1) * sizeof (*h->devs));
  h->devs[h->n++] = makedev (e->major, e->minor);
  return true;
}

/* The fallback: every filesystem the host has mounted.  */
static int
host_list (struct rootfs_host *h, roce_error_t *err)
{
  cleanup_free char *text = NULL;
  cleanup_close int fd = open ("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

  if (fd < 0 || read_all_fd (fd, MOUNTINFO_MAX, &text, NULL, err) < 0)
    return fd < 0 ? roce_error_sys (err, errno, "the host's mounts (/proc/self/mountinfo)") : -1;
  mountinfo_parse (text, collect_dev, h);
  h->by_list = true;
  return 0;
}

/* Whether the kernel answers what the rule asks: statmount of the rootfs's
 * mount, and openat2 beneath it.  */
static bool
host_can_tell (const struct rootfs_host *h)
{
  struct mount_facts f;
  struct open_how how
      = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
          .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
  uint64_t id = mount_unique_of (h->root_fd);
  int fd;

  if (id == 0 || mount_facts_of (id, &f) < 0)
    return false;
  fd = (int) syscall (SYS_openat2, h->root_fd, ".", &how, sizeof (how));
  if (fd < 0)
    return false;
  close (fd);
  return true;
}

int
rootfs_host_open (struct rootfs_host *h, const char *root_path, char *const *bind_sources,
                  bool by_list, roce_error_t *err)
{
  memset (h, 0, sizeof (*h));
  h->root_fd = -1;
  if (root_path)
    {
      h->root_fd = open (root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (h->root_fd < 0)
        return roce_error_sys (err, errno, "container rootfs `%s`", root_path);
      h->root_path = xstrdup (root_path);
    }
  if (by_list || h->root_fd < 0 || ! host_can_tell (h))
    return host_list (h, err);
  h->seen = xmalloc0 (sizeof (*h->seen));
  for (char *const *s = bind_sources; s && *s; s++)
    {
      struct stat st;
      /* Followed as the runtime followed it.  A source gone since brings
       * nothing; one that cannot be looked at: the host's table decides.  */
      if (stat (*s, &st) < 0)
        {
          if (errno == ENOENT || errno == ENOTDIR)
            continue;
          free (h->binds);
          h->binds = NULL;
          h->n_binds = 0;
          return host_list (h, err);
        }
      h->binds = xrealloc (h->binds, (h->n_binds + 1) * sizeof (*h->binds));
      h->binds[h->n_binds++] = st.st_dev;
    }
  return 0;
}

int
rootfs_host_of (const struct roce_container *c, struct rootfs_host *h, roce_error_t *err)
{
  const struct oci_namespace *mnt = oci_config_namespace (c->config, "mount");
  return rootfs_host_open (h, c->config->root_path, c->config->bind_sources, mnt && mnt->path, err);
}

void
rootfs_host_clear (struct rootfs_host *h)
{
  if (h->root_path && h->root_fd >= 0)
    close (h->root_fd);
  h->root_fd = -1;
  free (h->root_path);
  free (h->binds);
  free (h->devs);
  free (h->seen);
  h->seen = NULL;
  h->root_path = NULL;
  h->binds = NULL;
  h->devs = NULL;
  h->n_binds = h->n = 0;
}

static bool
dev_in (const dev_t *v, size_t n, dev_t d)
{
  for (size_t i = 0; i < n; i++)
    if (v[i] == d)
      return true;
  return false;
}

/* The rootfs directory's path in the caller's (the container's) mount
 * namespace: root.path before pivot_root, "/" after it.  */
static const char *
rootfs_dir_here (const struct rootfs_host *h, int rootfd)
{
  struct stat a, b;
  cleanup_close int fd = open (h->root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0 && fstat (fd, &a) == 0 && fstat (rootfd, &b) == 0 && a.st_dev == b.st_dev
      && a.st_ino == b.st_ino)
    return h->root_path;
  return "/";
}

/* Whether the host has filesystem `dev` at the place under root.path where
 * the container has mount point `point` (under `here`, the rootfs directory
 * in the container's namespace).  */
static bool
host_has_there (const struct rootfs_host *h, const char *here, const char *point, dev_t dev)
{
  struct open_how how
      = { .flags = O_PATH | O_CLOEXEC,
          .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
  size_t n = strlen (here);
  const char *rel;
  struct stat st;
  int fd;

  if (strcmp (here, "/") == 0)
    rel = point;
  else if (strncmp (point, here, n) == 0 && (point[n] == '/' || point[n] == '\0'))
    rel = point + n;
  else
    return true; /* not under the rootfs: cannot be the container's */
  while (*rel == '/')
    rel++;
  fd = (int) syscall (SYS_openat2, h->root_fd, *rel ? rel : ".", &how, sizeof (how));
  if (fd < 0)
    return errno != ENOENT && errno != ENOTDIR && errno != ELOOP && errno != EXDEV;
  {
    bool same = fstat (fd, &st) == 0 && st.st_dev == dev;
    close (fd);
    return same;
  }
}

/* The rule of struct rootfs_host, where the kernel has statmount: dirfd's
 * mount and those between it and the rootfs's.  */
static bool
own_tmpfs (int rootfd, int dirfd, const struct rootfs_host *h)
{
  struct rootfs_seen *seen = h->seen;
  uint64_t root_id = mount_unique_of (rootfd), id = mount_unique_of (dirfd), walked[32];
  const char *here;
  size_t n = 0;

  if (root_id == 0 || id == 0 || seen == NULL)
    return false;
  if (seen->root_id != root_id)
    {
      seen->root_id = root_id;
      seen->here = rootfs_dir_here (h, rootfd);
      seen->n_own = 0;
    }
  here = seen->here;
  for (size_t i = 0; i < seen->n_own; i++)
    if (seen->own[i] == id)
      return true;
  for (; n < ARRAY_SIZE (walked); n++)
    {
      struct mount_facts f;
      if (id == root_id)
        break;
      if (mount_facts_of (id, &f) < 0 || f.magic != TMPFS_MAGIC || strcmp (f.fs_type, "tmpfs") != 0
          || ! f.whole || dev_in (h->binds, h->n_binds, f.dev)
          || host_has_there (h, here, f.point, f.dev) || f.parent == f.id)
        return false;
      walked[n] = id;
      id = f.parent;
    }
  if (id != root_id || n == 0)
    return false;
  for (size_t i = 0; i < n && seen->n_own < ARRAY_SIZE (seen->own); i++)
    seen->own[seen->n_own++] = walked[i];
  return true;
}

int
rootfs_check_creatable (int rootfd, int dirfd, const char *shown, const struct rootfs_host *host,
                        roce_error_t *err)
{
  struct statfs sfs;
  struct stat st;
  uint64_t dm = mount_of (dirfd);

  if (dm != 0 && dm == mount_of (rootfd))
    return 0;
  if (fstatfs (dirfd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
    {
      if (host == NULL)
        return 0;
      if (host->by_list ? fstat (dirfd, &st) == 0 && ! dev_in (host->devs, host->n, st.st_dev)
                        : own_tmpfs (rootfd, dirfd, host))
        return 0;
    }
  {
    cleanup_free char *what
        = xasprintf ("`%s%s` in the container", shown[0] == '/' ? "" : "/", shown);
    return roce_error_refuse (err, what, "on the container's own rootfs or a tmpfs of its own",
                              "a mount from elsewhere (a host directory?), where a mount point "
                              "would outlive the container",
                              "remove that mount from the container's spec: roce-hook provides "
                              "the RDMA nodes itself");
  }
}

static int
resolve_openat2 (int rootfd, const char *path, int flags)
{
  struct open_how how = {
    .flags = (unsigned) (flags | O_CLOEXEC),
    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  /* EAGAIN: the kernel saw a rename or mount race and refused to guess.  */
  for (int i = 0; i < 16; i++)
    {
      int fd = (int) syscall (SYS_openat2, rootfd, path, &how, sizeof (how));
      if (fd >= 0)
        return fd;
      if (errno != EAGAIN && errno != EINTR)
        return -errno;
    }
  return -EAGAIN;
}

/* The walk's position: the directories from the root down to where it is.
 * ".." drops the last one (never below the root), an absolute symlink goes
 * back to the root.  */
struct walk
{
  int *fds;
  size_t depth;
  size_t cap;
};

static void
walk_clear (struct walk *w)
{
  for (size_t i = 0; i < w->depth; i++)
    close (w->fds[i]);
  free (w->fds);
  w->fds = NULL;
  w->depth = 0;
}

static void
walk_push (struct walk *w, int fd)
{
  if (w->depth == w->cap)
    {
      w->cap = w->cap ? w->cap * 2 : 16;
      w->fds = xrealloc (w->fds, w->cap * sizeof (int));
    }
  w->fds[w->depth++] = fd;
}

static void
walk_pop_to (struct walk *w, size_t depth)
{
  while (w->depth > depth)
    close (w->fds[--w->depth]);
}

static int
walk_top (const struct walk *w)
{
  return w->fds[w->depth - 1];
}

/* The final open of what the walk found: the caller's flags, never following
 * a symlink the kernel's way.  */
static int
walk_open_last (int dirfd, const char *name, int flags)
{
  int fd = openat (dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;

  if (fd < 0)
    return -errno;
  if (! (flags & O_NOFOLLOW) && fstat (fd, &st) == 0 && S_ISLNK (st.st_mode))
    {
      /* It became a symlink after we looked (O_PATH opens one as itself).  */
      close (fd);
      return -ELOOP;
    }
  return fd;
}

static int
resolve_walk (int rootfd, const char *path, int flags)
{
  struct walk w = { 0 };
  cleanup_free char *rest = NULL;
  cleanup_free char *link = NULL;
  size_t pos = 0;
  int links = 0;
  int ret;
  int fd0 = fcntl (rootfd, F_DUPFD_CLOEXEC, 3);

  if (fd0 < 0)
    return -errno;
  walk_push (&w, fd0);
  rest = xstrdup (path);
  link = xmalloc0 (PATH_MAX + 1);

  for (;;)
    {
      size_t start, end, after;
      bool last, trailing_slash;
      char *name;
      struct stat st;
      int fd;

      while (rest[pos] == '/')
        pos++;
      if (rest[pos] == '\0')
        {
          /* "", "/", or a path that ended in "." or "..".  */
          ret = walk_open_last (walk_top (&w), ".", flags & ~O_NOFOLLOW);
          goto out;
        }
      start = pos;
      end = start;
      while (rest[end] != '\0' && rest[end] != '/')
        end++;
      after = end;
      while (rest[after] == '/')
        after++;
      last = rest[after] == '\0';
      trailing_slash = last && after > end;
      name = xstrndup (rest + start, end - start);
      pos = end;

      if (strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
        {
          if (name[1] == '.' && w.depth > 1)
            walk_pop_to (&w, w.depth - 1);
          free (name);
          continue;
        }

      if (last && (flags & O_NOFOLLOW) && ! trailing_slash)
        {
          ret = walk_open_last (walk_top (&w), name, flags);
          free (name);
          goto out;
        }

      fd = openat (walk_top (&w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 || fstat (fd, &st) < 0)
        {
          ret = -errno;
          if (fd >= 0)
            close (fd);
          free (name);
          goto out;
        }

      if (S_ISLNK (st.st_mode))
        {
          ssize_t len;
          char *next;

          if (++links > ROOTFS_MAX_SYMLINKS || rootfs_on_pseudo_fs (walk_top (&w)))
            {
              /* Too many, or a /proc "magic" link (RESOLVE_NO_MAGICLINKS).  */
              close (fd);
              free (name);
              ret = -ELOOP;
              goto out;
            }
          len = readlinkat (fd, "", link, PATH_MAX + 1);
          close (fd);
          free (name);
          if (len < 0 || len > PATH_MAX)
            {
              ret = len < 0 ? -errno : -ENAMETOOLONG;
              goto out;
            }
          link[len] = '\0';
          if (len == 0)
            {
              ret = -ENOENT;
              goto out;
            }
          /* The link's text takes the place of its name.  */
          next = xasprintf ("%s%s%s", link, last && ! trailing_slash ? "" : "/", rest + after);
          free (rest);
          rest = next;
          pos = 0;
          if (link[0] == '/')
            walk_pop_to (&w, 1);
          continue;
        }

      if (last)
        {
          int f = flags | (trailing_slash ? O_DIRECTORY : 0);
          if (f & O_PATH)
            {
              /* Already open the way the caller asked.  */
              if ((f & O_DIRECTORY) && ! S_ISDIR (st.st_mode))
                {
                  close (fd);
                  ret = -ENOTDIR;
                }
              else
                ret = fd;
            }
          else
            {
              close (fd);
              ret = walk_open_last (walk_top (&w), name, f);
            }
          free (name);
          goto out;
        }
      free (name);
      if (! S_ISDIR (st.st_mode))
        {
          close (fd);
          ret = -ENOTDIR;
          goto out;
        }
      walk_push (&w, fd);
    }

out:
  walk_clear (&w);
  return ret;
}

int
rootfs_openat (int rootfd, const char *path, int flags, enum rootfs_resolver how)
{
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
    return -EINVAL;
  if (*path == '\0')
    return -ENOENT;
  if (how != ROOTFS_WALK)
    {
      int fd = resolve_openat2 (rootfd, path, flags);
      /* ENOSYS: an old kernel; EPERM: a seccomp profile that predates it.  */
      if (how == ROOTFS_OPENAT2 || (fd != -ENOSYS && fd != -EPERM))
        return fd;
    }
  return resolve_walk (rootfd, path, flags);
}

/* Splits "a//b/c" into its non-empty components; "." and ".." are refused
 * (the paths given here are roce-hook's own, never the image's).  */
static char **
split_path (const char *path)
{
  char **v = xmalloc0 (sizeof (char *));
  const char *p = path;

  while (*p)
    {
      const char *e = p;
      while (*e && *e != '/')
        e++;
      if (e > p)
        {
          cleanup_free char *c = xstrndup (p, (size_t) (e - p));
          if (strcmp (c, ".") == 0 || strcmp (c, "..") == 0)
            {
              strv_free (v);
              return NULL;
            }
          strv_push (&v, c);
        }
      p = *e ? e + 1 : e;
    }
  return v;
}

static char *
join_first (char **comps, size_t n)
{
  char *s = xstrdup ("");
  for (size_t i = 0; i < n; i++)
    {
      char *t = xasprintf ("%s/%s", s, comps[i]);
      free (s);
      s = t;
    }
  return s;
}

void
rootfs_rmdirs (int rootfd, const char *path, unsigned created)
{
  cleanup_strv char **comps = split_path (path);
  size_t n = strv_len (comps);

  if (comps == NULL || created > n)
    return;
  for (size_t i = n; i > n - created; i--)
    {
      cleanup_free char *parent = join_first (comps, i - 1);
      int pfd = rootfs_openat (rootfd, parent[0] ? parent : "/", O_PATH | O_DIRECTORY, ROOTFS_AUTO);
      if (pfd < 0)
        return;
      unlinkat (pfd, comps[i - 1], AT_REMOVEDIR);
      close (pfd);
    }
}

static int
refuse_component (roce_error_t *err, const char *shown, const char *found)
{
  cleanup_free char *what = xasprintf ("`%s` in the container's rootfs", shown);
  return roce_error_refuse (err, what, "a directory, or nothing", found,
                            "fix or remove that path in the container image");
}

int
rootfs_mkdirs (int rootfd, const char *path, unsigned *created, const struct rootfs_host *host,
               roce_error_t *err)
{
  cleanup_strv char **comps = split_path (path);
  cleanup_close int fd = -1;
  size_t n;
  int ret = -1;

  *created = 0;
  if (comps == NULL)
    return roce_error_make (err, EINVAL, "internal error: `%s`: not a plain path", path);
  n = strv_len (comps);
  fd = fcntl (rootfd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0)
    return roce_error_sys (err, errno, "dup");

  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *shown = join_first (comps, i + 1);
      const char *c = comps[i];
      struct stat st;
      int next;

      if (fstatat (fd, c, &st, AT_SYMLINK_NOFOLLOW) < 0)
        {
          if (errno != ENOENT)
            {
              ret = roce_error_sys (err, errno, "`%s` in the container's rootfs", shown);
              goto fail;
            }
          if (rootfs_on_pseudo_fs (fd))
            {
              ret = refuse_component (err, shown, "a path into /proc or /sys");
              goto fail;
            }
          if (rootfs_check_creatable (rootfd, fd, shown, host, err) < 0)
            goto fail;
          if (mkdirat (fd, c, 0755) < 0)
            {
              ret = roce_error_sys (err, errno, "mkdir `%s` in the container's rootfs", shown);
              goto fail;
            }
          (*created)++;
          next = openat (fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (next < 0)
            {
              ret = roce_error_sys (err, errno, "open `%s` in the container's rootfs", shown);
              goto fail;
            }
        }
      else if (S_ISDIR (st.st_mode))
        {
          next = openat (fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (next < 0)
            {
              ret = roce_error_sys (err, errno, "open `%s` in the container's rootfs", shown);
              goto fail;
            }
        }
      else if (S_ISLNK (st.st_mode))
        {
          /* Followed, but only inside the root.  */
          next = rootfs_openat (rootfd, shown, O_PATH | O_DIRECTORY, ROOTFS_AUTO);
          if (next == -ENOENT)
            ret = refuse_component (err, shown, "a symlink that leads nowhere inside the rootfs");
          else if (next == -ENOTDIR)
            ret = refuse_component (err, shown, "a symlink to something that is not a directory");
          else if (next == -ELOOP)
            ret = refuse_component (err, shown, "a symlink loop, or a link into /proc");
          else if (next < 0)
            ret = roce_error_sys (err, -next, "`%s` in the container's rootfs", shown);
          if (next < 0)
            goto fail;
        }
      else
        {
          cleanup_free char *found = xasprintf ("a %s", file_type_name (st.st_mode));
          ret = refuse_component (err, shown, found);
          goto fail;
        }
      close (fd);
      fd = next;
    }
  if (rootfs_on_pseudo_fs (fd))
    {
      cleanup_free char *shown = join_first (comps, n);
      ret = refuse_component (err, shown, "a path into /proc or /sys");
      goto fail;
    }
  return steal_fd (&fd);

fail:
  rootfs_rmdirs (rootfd, path, *created);
  *created = 0;
  return ret;
}

int
rootfs_node_target (int dirfd, const char *name, const char *shown, bool *created,
                    roce_error_t *err)
{
  struct stat st;
  int fd;

  *created = false;
  if (strchr (name, '/') || strcmp (name, ".") == 0 || strcmp (name, "..") == 0 || ! *name)
    return roce_error_make (err, EINVAL, "internal error: `%s`: not a file name", name);
  if (rootfs_on_pseudo_fs (dirfd))
    return roce_error_refuse (err, shown, "a device node's place in the container's /dev",
                              "a path into /proc or /sys",
                              "fix or remove that path in the container image");
  fd = openat (dirfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd >= 0)
    {
      *created = true;
      return fd;
    }
  if (errno != EEXIST)
    return roce_error_sys (err, errno, "create `%s` in the container's rootfs", shown);
  fd = openat (dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s` in the container's rootfs", shown);
  if (fstat (fd, &st) < 0)
    {
      int e = errno;
      close (fd);
      return roce_error_sys (err, e, "stat `%s` in the container's rootfs", shown);
    }
  if (! S_ISREG (st.st_mode) && ! S_ISCHR (st.st_mode))
    {
      cleanup_free char *what = xasprintf ("`%s` in the container's rootfs", shown);
      cleanup_free char *found = xasprintf ("a %s", file_type_name (st.st_mode));
      close (fd);
      return roce_error_refuse (err, what, "a device node, a regular file or nothing", found,
                                "remove that path from the container image");
    }
  return fd;
}
