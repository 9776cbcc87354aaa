/* SPDX-License-Identifier: Apache-2.0 */
/* The rails file published read-only in the container: per rail its HCA,
 * interface, address and GID index, for workloads picking their own GID.  */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/ipaddr.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "net/rails.h"
#include "sys/netns.h"
#include "sys/rootfs.h"

char *
rails_render (const struct net_rail *r, size_t n)
{
  char *out = xstrdup ("# hca ifname address prefix gid_port gid_index roce netdev gpus\n");
  for (size_t i = 0; i < n; i++)
    {
      char a[ADDR_STR_MAX], port[16] = "-", index[16] = "-";
      cleanup_free char *gpus = r[i].gpus && r[i].gpus[0] ? strv_join (r[i].gpus, ",") : NULL;
      char *line;
      if (r[i].has_gid)
        {
          snprintf (port, sizeof (port), "%u", r[i].gid_port);
          snprintf (index, sizeof (index), "%u", r[i].gid_index);
        }
      line = xasprintf ("%s%s %s %s %u %s %s v2 %s %s\n", out, r[i].hca, r[i].ifname,
                        addr_format (&r[i].addr, a), r[i].prefix, port, index, r[i].netdev,
                        gpus ? gpus : "-");
      free (out);
      out = line;
    }
  return out;
}

/* In the container's mount namespace.  */
static int
publish_here (int rootfd, struct rails_pub *pub, const struct rootfs_host *host, roce_error_t *err)
{
  cleanup_close int dirfd = -1, fd = -1, again = -1;
  const char *text = pub->text;
  char self[64], mnt[64];
  unsigned created = 0;
  /* A /dev that is not the container's own (the host's, bind-mounted by
   * the spec) gets no file: it would stay on the host and be shared with
   * every container that mounts it.  The start goes on without it (1).  */
  {
    cleanup_close int devfd = openat (rootfd, "dev", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (devfd >= 0 && rootfs_check_creatable (rootfd, devfd, "/dev", host, err) < 0)
      return 1;
  }
  dirfd = rootfs_mkdirs (rootfd, RAILS_DIR, &created, host, err);
  if (dirfd < 0)
    return -1;
  pub->dirs_created = created;
  if (rootfs_check_creatable (rootfd, dirfd, "/" RAILS_DIR, host, err) < 0)
    return 1;
  fd = openat (dirfd, RAILS_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0 && errno == EEXIST)
    {
      /* The path is ours by contract: a file or symlink the image (or an
       * earlier run on a /dev that is no tmpfs) left there is replaced; the
       * symlink itself goes, never what it points to.  A directory or a
       * mount point is refused.  */
      struct stat st = { 0 };
      if (fstatat (dirfd, RAILS_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0
          && (S_ISREG (st.st_mode) || S_ISLNK (st.st_mode)) && unlinkat (dirfd, RAILS_NAME, 0) == 0)
        fd = openat (dirfd, RAILS_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
      else
        {
          cleanup_free char *found
              = xasprintf ("a %s that cannot be replaced", file_type_name (st.st_mode));
          return roce_error_refuse (err, "/" RAILS_DIR "/" RAILS_NAME " in the container",
                                    "absent, or a file roce-hook may replace", found,
                                    "remove it from the image");
        }
    }
  if (fd < 0)
    return roce_error_sys (err, errno, "create /" RAILS_DIR "/" RAILS_NAME " in the container");
  pub->made = true;
  if (write_all_fd (fd, text, strlen (text), err) < 0 || fchmod (fd, 0444) < 0)
    return roce_error_wrap (err, "write /" RAILS_DIR "/" RAILS_NAME);
  /* Read-only even for the container's root: a read-only bind of itself.
   * By fd (open_tree, mount_setattr, move_mount): /proc in this namespace
   * may be the container's own already (a runtime that has pivoted), where
   * /proc/self means nothing to us.  The /proc/self/fd way is the fallback
   * for kernels before 5.12.  */
  {
    cleanup_close int tree = (int) syscall (SYS_open_tree, fd, "",
                                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
                                           | MOUNT_ATTR_NOEXEC };
    if (tree >= 0
        && syscall (SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof (attr)) == 0)
      {
        if (syscall (SYS_move_mount, tree, "", fd, "",
                     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
            < 0)
          return roce_error_sys (err, errno, "bind /" RAILS_DIR "/" RAILS_NAME);
        pub->mounted = true;
        return 0;
      }
    if (tree < 0 && errno != ENOSYS && errno != EPERM)
      return roce_error_sys (err, errno, "clone /" RAILS_DIR "/" RAILS_NAME);
  }
  snprintf (self, sizeof (self), "/proc/self/fd/%d", fd);
  /* "" rather than NULL for the types mount(2) ignores here: memcheck reads
   * them as strings.  */
  if (mount (self, self, "", MS_BIND, NULL) < 0)
    return roce_error_sys (err, errno, "bind /" RAILS_DIR "/" RAILS_NAME);
  pub->mounted = true;
  again = openat (dirfd, RAILS_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (again < 0)
    return roce_error_sys (err, errno, "reopen /" RAILS_DIR "/" RAILS_NAME);
  snprintf (mnt, sizeof (mnt), "/proc/self/fd/%d", again);
  if (mount ("none", mnt, "", MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
             NULL)
      < 0)
    return roce_error_sys (err, errno, "make /" RAILS_DIR "/" RAILS_NAME " read-only");
  return 0;
}

void
rails_pub_init (struct rails_pub *pub, const struct net_rail *r, size_t n)
{
  memset (pub, 0, sizeof (*pub));
  pub->text = n ? rails_render (r, n) : NULL;
}

void
rails_pub_clear (struct rails_pub *pub)
{
  free (pub->text);
  pub->text = NULL;
}

void
rails_unpublish_here (void *arg, int rootfd)
{
  struct rails_pub *pub = arg;
  cleanup_close int dirfd = rootfs_openat (rootfd, RAILS_DIR, O_PATH | O_DIRECTORY, ROOTFS_AUTO);
  struct stat st;

  if (dirfd >= 0 && pub->mounted)
    {
      /* Relative to the directory's fd, the last component not followed.  */
      if (fchdir (dirfd) < 0 || umount2 (RAILS_NAME, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
        roce_log (ROCE_LOG_WARN, "umount /" RAILS_DIR "/" RAILS_NAME " in the container: %s",
                  strerror (errno));
      else
        pub->mounted = false;
    }
  if (dirfd >= 0 && pub->made && ! pub->mounted
      && fstatat (dirfd, RAILS_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode)
      && unlinkat (dirfd, RAILS_NAME, 0) == 0)
    pub->made = false;
  if (pub->dirs_created && ! pub->made)
    {
      rootfs_rmdirs (rootfd, RAILS_DIR, pub->dirs_created);
      pub->dirs_created = 0;
    }
}

int
rails_publish_here (void *arg, int rootfd, const struct rootfs_host *host, roce_error_t *err)
{
  struct rails_pub *pub = arg;
  cleanup_error roce_error_t perr = NULL;
  int rc;

  if (pub->text == NULL)
    return 0;
  rc = publish_here (rootfd, pub, host, &perr);
  if (rc > 0)
    {
      roce_log (ROCE_LOG_WARN, "rails file not published: %s", perr->msg);
      return 0;
    }
  if (rc < 0)
    {
      rails_unpublish_here (pub, rootfd);
      *err = steal_pointer (&perr);
      return -1;
    }
  return 0;
}
