/* SPDX-License-Identifier: Apache-2.0 */
/* The in-root resolver: both implementations (openat2 and the fd walk) must
 * give the same answer for every path, and no path may leave the root.  The
 * tree lives in <outer>/root; <outer>/victim is what an escape would reach.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "sys/rootfs.h"
#include "unit.h"

static char outer[] = "/tmp/roce-rootfs-XXXXXX";
static char *root;
static int rootfd = -1;

static void sh (const char *fmt, ...) ROCE_PRINTF (1, 2);

static void
sh (const char *fmt, ...)
{
  cleanup_free char *cmd = NULL;
  va_list ap;
  va_start (ap, fmt);
  cr_assert_geq (vasprintf (&cmd, fmt, ap), 0);
  va_end (ap);
  cr_assert_eq (system (cmd), 0, "%s", cmd);
}

static void
setup (void)
{
  cr_assert_not_null (mkdtemp (outer));
  root = xasprintf ("%s/root", outer);
  sh ("set -e; cd %s; mkdir -p root/a/b root/etc victim/infiniband; echo inside > root/a/b/f;"
      "echo root > root/etc/passwd; echo host > victim/x;"
      "cd root; ln -s /a/b abs; ln -s a/b rel; ln -s ../../../../victim up;"
      "ln -s ../../../a up2; ln -s /etc etcl; ln -s ../.. a/dotdot; ln -s loop2 loop1;"
      "ln -s loop1 loop2; ln -s /nonexistent/x dangling; ln -s ../b/f a/b/sym_to_file;"
      "ln -s / slash; ln -s /proc/self/root procl; ln -s ../../victim/infiniband vic;"
      "mkfifo a/fifo",
      outer);
  rootfd = open (root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq (rootfd, 0);
}

static void
teardown (void)
{
  close (rootfd);
  sh ("rm -rf '%s'", outer);
  free (root);
}

TestSuite (rootfs, .init = setup, .fini = teardown);

/* 0 with *st filled, or -errno.  */
static int
resolve_stat (const char *path, int flags, enum rootfs_resolver how, struct stat *st)
{
  int fd = rootfs_openat (rootfd, path, flags, how);
  if (fd < 0)
    return fd;
  cr_assert_eq (fstat (fd, st), 0);
  close (fd);
  return 0;
}

/* openat2 is missing under valgrind (and before 5.6): then only the walk
 * (and "auto", which falls back to it) is compared.  */
static bool
have_openat2 (void)
{
  int fd = rootfs_openat (rootfd, ".", O_PATH, ROOTFS_OPENAT2);
  if (fd >= 0)
    close (fd);
  return fd != -ENOSYS;
}

static void
expect (const char *path, int flags, const char *expected_rel, int expected_err)
{
  static const enum rootfs_resolver hows[] = { ROOTFS_OPENAT2, ROOTFS_WALK, ROOTFS_AUTO };
  static const char *const names[] = { "openat2", "walk", "auto" };
  struct stat want = { 0 };

  if (expected_rel)
    {
      cleanup_free char *p = xasprintf ("%s/%s", root, expected_rel);
      cr_assert_eq (fstatat (AT_FDCWD, p, &want, AT_SYMLINK_NOFOLLOW), 0, "%s", p);
    }
  for (size_t i = have_openat2 () ? 0 : 1; i < 3; i++)
    {
      struct stat st;
      int ret = resolve_stat (path, flags, hows[i], &st);
      if (expected_rel)
        {
          cr_assert_eq (ret, 0, "%s `%s`: %s", names[i], path, strerror (-ret));
          cr_assert (st.st_dev == want.st_dev && st.st_ino == want.st_ino,
                     "%s `%s` did not resolve to %s", names[i], path, expected_rel);
        }
      else
        cr_assert_eq (ret, -expected_err, "%s `%s`: %s, expected %s", names[i], path,
                      ret < 0 ? strerror (-ret) : "success", strerror (expected_err));
    }
}

Test (rootfs, plain_and_absolute_paths)
{
  expect ("a/b/f", O_RDONLY, "a/b/f", 0);
  expect ("/a/b/f", O_RDONLY, "a/b/f", 0);
  expect ("//a/./b//f", O_RDONLY, "a/b/f", 0);
  expect ("/", O_PATH | O_DIRECTORY, ".", 0);
  expect (".", O_PATH | O_DIRECTORY, ".", 0);
  expect ("a/b/", O_PATH, "a/b", 0);
}

Test (rootfs, dotdot_stops_at_the_root)
{
  expect ("../../a/b/f", O_RDONLY, "a/b/f", 0);
  expect ("a/../../../../a", O_PATH | O_DIRECTORY, "a", 0);
  expect ("..", O_PATH | O_DIRECTORY, ".", 0);
  expect ("../victim/x", O_RDONLY, NULL, ENOENT);
}

Test (rootfs, symlinks_are_followed_inside_the_root)
{
  expect ("abs/f", O_RDONLY, "a/b/f", 0);
  expect ("rel/f", O_RDONLY, "a/b/f", 0);
  expect ("up2/b/f", O_RDONLY, "a/b/f", 0);
  expect ("etcl/passwd", O_RDONLY, "etc/passwd", 0);
  expect ("a/dotdot/a/b/f", O_RDONLY, "a/b/f", 0);
  expect ("a/b/sym_to_file", O_RDONLY, "a/b/f", 0);
  expect ("abs/../b/f", O_RDONLY, "a/b/f", 0); /* ".." of /a/b is /a */
  expect ("slash/slash/a", O_PATH | O_DIRECTORY, "a", 0);
}

Test (rootfs, escapes_do_not_resolve)
{
  /* ../../../../victim from /: /victim inside the root, which is not there.  */
  expect ("up", O_PATH, NULL, ENOENT);
  expect ("up/x", O_RDONLY, NULL, ENOENT);
  expect ("vic", O_PATH | O_DIRECTORY, NULL, ENOENT);
  expect ("dangling", O_RDONLY, NULL, ENOENT);
  /* /proc/self/root inside the root: no /proc there.  */
  expect ("procl", O_PATH, NULL, ENOENT);
}

Test (rootfs, loops_and_non_directories)
{
  expect ("loop1", O_RDONLY, NULL, ELOOP);
  expect ("loop1/x", O_RDONLY, NULL, ELOOP);
  expect ("a/b/f/x", O_RDONLY, NULL, ENOTDIR);
  expect ("a/b/f/", O_RDONLY, NULL, ENOTDIR);
  expect ("a/fifo/x", O_PATH, NULL, ENOTDIR);
  expect ("a/b/f", O_PATH | O_DIRECTORY, NULL, ENOTDIR);
  expect ("", O_PATH, NULL, ENOENT);
}

Test (rootfs, nofollow_applies_to_the_last_component)
{
  struct stat st;
  expect ("abs", O_PATH | O_NOFOLLOW, "abs", 0);
  expect ("abs", O_RDONLY | O_NOFOLLOW, NULL, ELOOP);
  expect ("abs/f", O_RDONLY | O_NOFOLLOW, "a/b/f", 0);
  cr_assert_eq (resolve_stat ("dangling", O_PATH | O_NOFOLLOW, ROOTFS_WALK, &st), 0);
  cr_assert (S_ISLNK (st.st_mode));
}

Test (rootfs, the_walk_never_follows_proc_magic_links)
{
  /* A root that is /proc/self: its "root" entry is a magic link to "/".  */
  int pfd = open ("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq (pfd, 0);
  cr_assert_eq (rootfs_openat (pfd, "root/tmp", O_PATH, ROOTFS_WALK), -ELOOP);
  if (have_openat2 ())
    cr_assert_eq (rootfs_openat (pfd, "root/tmp", O_PATH, ROOTFS_OPENAT2), -ELOOP);
  close (pfd);
}

Test (rootfs, deep_symlink_chains_are_bounded)
{
  /* 41 links in a row: one more than the kernel follows.  */
  sh ("set -e; cd %s/root; ln -s a c0; for i in $(seq 1 40); do ln -s c$((i-1)) c$i; done", outer);
  expect ("c39", O_PATH | O_DIRECTORY, "a", 0);
  expect ("c40", O_PATH | O_DIRECTORY, NULL, ELOOP);
}

static bool
exists (const char *rel)
{
  struct stat st;
  cleanup_free char *p = xasprintf ("%s/%s", outer, rel);
  return fstatat (AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Test (rootfs, mkdirs_creates_and_counts)
{
  cleanup_error roce_error_t err = NULL;
  unsigned created = 9;
  int fd = rootfs_mkdirs (rootfd, "dev/infiniband", &created, NULL, &err);
  cr_assert_geq (fd, 0, "%s", err ? err->msg : "");
  cr_assert_eq (created, 2);
  cr_assert (exists ("root/dev/infiniband"));
  close (fd);
  fd = rootfs_mkdirs (rootfd, "dev/infiniband", &created, NULL, &err);
  cr_assert_eq (created, 0);
  close (fd);
  rootfs_rmdirs (rootfd, "dev/infiniband", 2);
  cr_assert_not (exists ("root/dev"));
}

Test (rootfs, mkdirs_follows_a_symlink_inside_the_root)
{
  cleanup_error roce_error_t err = NULL;
  unsigned created;
  int fd;
  sh ("ln -s /etc %s/root/dev", outer);
  fd = rootfs_mkdirs (rootfd, "dev/infiniband", &created, NULL, &err);
  cr_assert_geq (fd, 0, "%s", err ? err->msg : "");
  cr_assert_eq (created, 1);
  cr_assert (exists ("root/etc/infiniband"));
  close (fd);
  rootfs_rmdirs (rootfd, "dev/infiniband", created);
  cr_assert_not (exists ("root/etc/infiniband"));
  cr_assert (exists ("root/dev"));
}

Test (rootfs, mkdirs_refuses_an_escaping_or_dangling_link)
{
  cleanup_error roce_error_t err = NULL;
  unsigned created;
  sh ("ln -s ../../victim %s/root/dev", outer);
  assert_err_contains (rootfs_mkdirs (rootfd, "dev/infiniband", &created, NULL, &err), err,
                       "`/dev` in the container's rootfs: a directory, or nothing vs a symlink "
                       "that leads nowhere inside the rootfs (fix: ");
  cr_assert_eq (created, 0);
  cr_assert_not (exists ("root/victim"));
  cr_assert_not (exists ("victim/infiniband/uverbs0"));
}

Test (rootfs, mkdirs_refuses_files_fifos_and_loops)
{
  struct
  {
    const char *make, *found;
  } cases[] = {
    { "echo x > $R/root/dev", "a regular file" },
    { "mkfifo $R/root/dev", "a fifo" },
    { "mkdir $R/root/dev && mkfifo $R/root/dev/infiniband", "a fifo" },
    { "ln -s /a/b/f $R/root/dev", "a symlink to something that is not a directory" },
    { "ln -s /loop1 $R/root/dev", "a symlink loop" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      unsigned created;
      cleanup_free char *make = NULL;
      sh ("rm -rf %s/root/dev", outer);
      /* Each case names the root once or twice.  */
      make = xasprintf ("R=%s; %s", outer, cases[i].make);
      sh ("%s", make);
      assert_err_contains (rootfs_mkdirs (rootfd, "dev/infiniband", &created, NULL, &err), err,
                           cases[i].found);
    }
}

Test (rootfs, mkdirs_never_creates_in_proc)
{
  cleanup_error roce_error_t err = NULL;
  unsigned created;
  int pfd = open ("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
  assert_err_contains (rootfs_mkdirs (pfd, "fdinfo/infiniband", &created, NULL, &err), err,
                       "a path into /proc or /sys");
  close (pfd);
}

Test (rootfs, node_target_creates_or_reuses)
{
  cleanup_error roce_error_t err = NULL;
  int dfd = rootfs_openat (rootfd, "a/b", O_PATH | O_DIRECTORY, ROOTFS_AUTO);
  bool created;
  int fd = rootfs_node_target (dfd, "uverbs0", "/a/b/uverbs0", &created, &err);
  struct stat st;
  cr_assert_geq (fd, 0, "%s", err ? err->msg : "");
  cr_assert (created);
  cr_assert_eq (fstat (fd, &st), 0);
  cr_assert (S_ISREG (st.st_mode) && st.st_size == 0);
  close (fd);
  fd = rootfs_node_target (dfd, "f", "/a/b/f", &created, &err);
  cr_assert_geq (fd, 0);
  cr_assert_not (created);
  close (fd);
  close (dfd);
}

Test (rootfs, node_target_refuses_links_fifos_dirs)
{
  struct
  {
    const char *name, *found;
  } cases[] = {
    { "abs", "a symlink" },
    { "up", "a symlink" },
    { "dangling", "a symlink" },
    { "a", "a directory" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      bool created;
      assert_err_contains (rootfs_node_target (rootfd, cases[i].name, "/x", &created, &err), err,
                           cases[i].found);
      cr_assert_not (created);
    }
  {
    cleanup_error roce_error_t err = NULL;
    bool created;
    int dfd = rootfs_openat (rootfd, "a", O_PATH | O_DIRECTORY, ROOTFS_AUTO);
    assert_err_contains (rootfs_node_target (dfd, "fifo", "/a/fifo", &created, &err), err,
                         "`/a/fifo` in the container's rootfs: a device node, a regular file or "
                         "nothing vs a fifo (fix: ");
    close (dfd);
  }
  cr_assert (exists ("victim/x"));
  cr_assert_not (exists ("victim/uverbs0"));
}
