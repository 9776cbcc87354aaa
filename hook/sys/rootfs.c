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
#include <sys/syscall.h>
#include <unistd.h>

#include "mountinfo.h"
#include "rootfs.h"
#include "utils.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

const char *
rootfs_file_type (unsigned mode)
{
  switch (mode & S_IFMT)
    {
    case S_IFREG:
      return "regular file";
    case S_IFDIR:
      return "directory";
    case S_IFLNK:
      return "symlink";
    case S_IFIFO:
      return "fifo";
    case S_IFSOCK:
      return "socket";
    case S_IFCHR:
      return "char device";
    case S_IFBLK:
      return "block device";
    }
  return "file of unknown type";
}

bool
rootfs_on_pseudo_fs (int fd)
{
  struct statfs sfs;
  if (fstatfs (fd, &sfs) < 0)
    return true; /* cannot tell: treat as unsafe */
  return sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC;
}

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

static bool
collect_dev (const struct mountinfo_entry *e, void *arg)
{
  struct rootfs_host *h = arg;
  h->devs = xrealloc (h->devs, (h->n + 1) * sizeof (*h->devs));
  h->devs[h->n++] = makedev (e->major, e->minor);
  return true;
}

int
rootfs_host_snapshot (struct rootfs_host *h, const char *mountinfo, roce_error_t *err)
{
  cleanup_free char *text = NULL;

  h->devs = NULL;
  h->n = 0;
  if (mountinfo == NULL)
    {
      cleanup_close int fd = open ("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
      if (fd < 0 || read_all_fd (fd, 16 * 1024 * 1024, &text, NULL, err) < 0)
        return fd < 0 ? roce_error_sys (err, errno, "the host's mounts (/proc/self/mountinfo)") : -1;
      mountinfo = text;
    }
  mountinfo_parse (mountinfo, collect_dev, h);
  return 0;
}

void
rootfs_host_clear (struct rootfs_host *h)
{
  free (h->devs);
  h->devs = NULL;
  h->n = 0;
}

static bool
host_has (const struct rootfs_host *host, dev_t d)
{
  for (size_t i = 0; host && i < host->n; i++)
    if (host->devs[i] == d)
      return true;
  return false;
}

int
rootfs_check_creatable (int rootfd, int dirfd, const char *shown, const struct rootfs_host *host,
                        roce_error_t *err)
{
  struct statfs sfs;
  struct stat st;
  uint64_t dm = mount_of (dirfd);

  if (fstatfs (dirfd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC && fstat (dirfd, &st) == 0
      && ! host_has (host, st.st_dev))
    return 0;
  if (dm != 0 && dm == mount_of (rootfd))
    return 0;
  {
    cleanup_free char *what = xasprintf ("`%s%s` in the container", shown[0] == '/' ? "" : "/", shown);
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
 * (the paths given here are the engine's own, never the image's).  */
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
          cleanup_free char *found = xasprintf ("a %s", rootfs_file_type (st.st_mode));
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
      cleanup_free char *found = xasprintf ("a %s", rootfs_file_type (st.st_mode));
      close (fd);
      return roce_error_refuse (err, what, "a device node, a regular file or nothing", found,
                                "remove that path from the container image");
    }
  return fd;
}
