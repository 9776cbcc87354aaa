/* SPDX-License-Identifier: Apache-2.0 */
/* The devices step of a start: the HCAs' /dev/infiniband nodes bind-mounted
 * into the container's mount namespace, their cgroup access, RLIMIT_MEMLOCK
 * and the CAP_IPC_LOCK check.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devices/devcgroup.h"
#include "devices/devices.h"
#include "devices/memlock.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/netns.h"
#include "sys/rootfs.h"

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

/* Where the nodes go, relative to the container's rootfs.  */
#define NODE_DIR "dev/infiniband"

struct devices_state
{
  pid_t pid;
  char *root_path;
  struct stat root_st;     /* the rootfs as the host sees it */
  struct rdma_node *nodes; /* what the container gets */
  size_t n;
  struct stat *host_st; /* each host node: recognises our mounts */
  unsigned dirs_created;
  bool *file_created;
  bool *mounted;
  struct devcg_state *cg;
  bool memlock_set;
  struct rlimit memlock_saved;
  const struct devices_also *also; /* during devices_setup only */
  bool also_done;
  struct rootfs_host host;         /* taken here when the caller had not */
  const struct rootfs_host *hostp; /* the caller's (c->rootfs_host), else &host */
};

void
devices_state_free (struct devices_state *s)
{
  if (s == NULL)
    return;
  devcg_state_free (s->cg);
  free (s->root_path);
  free (s->nodes);
  free (s->host_st);
  free (s->file_created);
  free (s->mounted);
  rootfs_host_clear (&s->host);
  free (s);
}

static bool
anything_mounted (const struct devices_state *s)
{
  if (s->dirs_created)
    return true;
  for (size_t i = 0; i < s->n; i++)
    if (s->mounted[i] || s->file_created[i])
      return true;
  return false;
}

/* ---- the host side ------------------------------------------------------- */

/* The host's node, opened (O_PATH) in the host's mount namespace and checked
 * against the numbers sysfs gave: a char device, that major:minor.  Returns
 * 1 when it does not exist.  */
static int
open_host_node (const struct rdma_node *n, const char *policy_path, int *fd_out, struct stat *st,
                roce_error_t *err)
{
  cleanup_close int fd = open (n->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *what = xasprintf ("host node %s", n->path);
  cleanup_free char *expected
      = xasprintf ("a char device %u:%u (as sysfs says)", n->major, n->minor);
  cleanup_free char *fix
      = xasprintf ("recreate the node (udevadm trigger) or check sysfs_root in %s", policy_path);

  if (fd < 0 && errno == ENOENT)
    return 1;
  if (fd < 0)
    return roce_error_sys (err, errno, "open %s", n->path);
  if (fstat (fd, st) < 0)
    return roce_error_sys (err, errno, "stat %s", n->path);
  if (! S_ISCHR (st->st_mode) || st->st_rdev != makedev (n->major, n->minor))
    {
      cleanup_free char *found = NULL;
      if (S_ISCHR (st->st_mode))
        found = xasprintf ("a char device %u:%u", major (st->st_rdev), minor (st->st_rdev));
      else
        found = xasprintf ("a %s", file_type_name (st->st_mode));
      return roce_error_refuse (err, what, expected, found, fix);
    }
  *fd_out = steal_fd (&fd);
  return 0;
}

/* ---- inside the container's mount namespace ---------------------------- */

/* The rootfs, recognised by the inode the host sees at root.path: at
 * root.path before pivot_root (runc), or "/" after it.  */
static int
open_container_rootfs (const struct devices_state *s, roce_error_t *err)
{
  const char *candidates[] = { s->root_path, "/" };
  for (size_t i = 0; i < ARRAY_SIZE (candidates); i++)
    {
      struct stat st;
      int fd = open (candidates[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0)
        continue;
      if (fstat (fd, &st) == 0 && st.st_dev == s->root_st.st_dev && st.st_ino == s->root_st.st_ino)
        return fd;
      close (fd);
    }
  return roce_error_refuse (
      err, "container rootfs", "root.path (or /) in the container's mount namespace",
      "neither is the rootfs", "run roce-hook as a prestart or createRuntime hook");
}

static bool
is_our_mount (int dirfd, const char *name, const struct stat *host)
{
  struct stat st;
  return fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR (st.st_mode)
         && st.st_rdev == host->st_rdev && st.st_dev == host->st_dev && st.st_ino == host->st_ino;
}

/* Removes what this hook made, deepest first; only what is still ours.  */
static void
unmount_nodes (struct devices_state *s, int rootfd, int dirfd)
{
  for (size_t i = s->n; i > 0; i--)
    {
      const char *name = rdma_node_name (&s->nodes[i - 1]);
      struct stat st;
      if (dirfd >= 0 && s->mounted[i - 1] && is_our_mount (dirfd, name, &s->host_st[i - 1]))
        {
          /* Relative to the directory's fd, last component not followed.  */
          if (fchdir (dirfd) < 0 || umount2 (name, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
            roce_log (ROCE_LOG_WARN, "umount %s in the container: %s", s->nodes[i - 1].path,
                      strerror (errno));
          else
            s->mounted[i - 1] = false;
        }
      if (dirfd >= 0 && s->file_created[i - 1]
          && fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode)
          && st.st_size == 0 && unlinkat (dirfd, name, 0) == 0)
        s->file_created[i - 1] = false;
    }
  if (s->dirs_created)
    {
      rootfs_rmdirs (rootfd, NODE_DIR, s->dirs_created);
      s->dirs_created = 0;
    }
}

static int
bind_node (const struct devices_state *s, size_t i, int tree_fd, int target_fd, roce_error_t *err)
{
  const struct rdma_node *n = &s->nodes[i];
  char src[64], dst[64];
  cleanup_close int fd = -1;
  struct stat st;

  if (tree_fd >= 0)
    {
      /* The clone of the host's node, made in the host's namespace.  */
      if (syscall (SYS_move_mount, tree_fd, "", target_fd, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
          < 0)
        return roce_error_sys (err, errno, "bind-mount %s into the container", n->path);
      return 0;
    }
  /* No open_tree (before 5.2): a bind mount can only take its source from
   * this namespace, where the host's /dev is still visible before
   * pivot_root; it must be the very node checked on the host.  */
  fd = open (n->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat (fd, &st) < 0)
    return roce_error_sys (err, errno,
                           "%s in the container's mount namespace (the kernel has no open_tree, "
                           "and the runtime has already pivoted)",
                           n->path);
  if (st.st_dev != s->host_st[i].st_dev || st.st_ino != s->host_st[i].st_ino
      || st.st_rdev != s->host_st[i].st_rdev)
    return roce_error_make (err, EXDEV,
                            "%s in the container's mount namespace is not the host's node (the "
                            "kernel has no open_tree, and the runtime has already pivoted)",
                            n->path);
  snprintf (src, sizeof (src), "/proc/self/fd/%d", fd);
  snprintf (dst, sizeof (dst), "/proc/self/fd/%d", target_fd);
  /* The type is ignored for MS_BIND; "" rather than NULL keeps valgrind's
   * syscall checker quiet.  */
  if (mount (src, dst, "", MS_BIND, NULL) < 0)
    return roce_error_sys (err, errno, "bind-mount %s into the container", n->path);
  return 0;
}

struct mount_args
{
  const int *tree_fds;
};

static int
do_mount_nodes (struct devices_state *s, void *arg, roce_error_t *err)
{
  const struct mount_args *a = arg;
  cleanup_close int rootfd = -1;
  cleanup_close int dirfd = -1;

  rootfd = open_container_rootfs (s, err);
  if (rootfd < 0)
    return -1;
  dirfd = rootfs_mkdirs (rootfd, NODE_DIR, &s->dirs_created, s->hostp, err);
  if (dirfd < 0)
    return -1;
  /* A node to create makes the directory's check, once for all its nodes. */
  for (size_t i = 0; i < s->n; i++)
    {
      struct stat st;
      if (fstatat (dirfd, rdma_node_name (&s->nodes[i]), &st, AT_SYMLINK_NOFOLLOW) < 0)
        {
          if (rootfs_check_creatable (rootfd, dirfd, NODE_DIR, s->hostp, err) < 0)
            goto fail;
          break;
        }
    }
  for (size_t i = 0; i < s->n; i++)
    {
      const char *name = rdma_node_name (&s->nodes[i]);
      cleanup_close int target
          = rootfs_node_target (dirfd, name, s->nodes[i].path, &s->file_created[i], err);
      if (target < 0 || bind_node (s, i, a->tree_fds[i], target, err) < 0)
        goto fail;
      s->mounted[i] = true;
      if (! is_our_mount (dirfd, name, &s->host_st[i]))
        {
          roce_error_make (err, EIO, "%s in the container is not the host's node after the mount",
                           s->nodes[i].path);
          goto fail;
        }
    }
  /* The rest of the start's work in this namespace, in the same entry.  */
  if (s->also && s->also->here (s->also->arg, rootfd, s->hostp, err) < 0)
    goto fail;
  s->also_done = s->also != NULL;
  return 0;

fail:
  unmount_nodes (s, rootfd, dirfd);
  return -1;
}

static int
do_unmount_nodes (struct devices_state *s, void *arg, roce_error_t *err)
{
  cleanup_close int rootfd = open_container_rootfs (s, err);
  cleanup_close int dirfd = -1;
  (void) arg;

  if (rootfd < 0)
    return -1;
  if (s->also_done && s->also)
    {
      s->also->undo (s->also->arg, rootfd);
      s->also_done = false;
    }
  dirfd = rootfs_openat (rootfd, NODE_DIR, O_PATH | O_DIRECTORY, ROOTFS_AUTO);
  unmount_nodes (s, rootfd, dirfd);
  return 0;
}

/* ---- running a step in the container's mount namespace ------------------ */

typedef int (*ns_step) (struct devices_state *s, void *arg, roce_error_t *err);

static int
in_container_mntns (const struct roce_container *c, struct devices_state *s, ns_step step,
                    void *arg, roce_error_t *err)
{
  struct mntns_saved saved;
  int ret;

  /* The host's side, seen from the host, before entering.  */
  s->hostp = c->rootfs_host;
  if (s->hostp == NULL)
    {
      if (rootfs_host_of (c, &s->host, err) < 0)
        {
          rootfs_host_clear (&s->host);
          return -1;
        }
      s->hostp = &s->host;
    }
  if (mntns_enter (c->mntns_fd, &saved, err) < 0)
    {
      rootfs_host_clear (&s->host);
      s->hostp = NULL;
      return -1;
    }
  ret = step (s, arg, err);
  mntns_leave (&saved);
  rootfs_host_clear (&s->host);
  s->hostp = NULL;
  return ret;
}

/* ---- the whole ------------------------------------------------------------ */

static void
cleanup_fdsp (int **fds)
{
  /* The arrays below end with a -2 sentinel.  */
  for (int *p = *fds; p && *p != -2; p++)
    if (*p >= 0)
      close (*p);
  free (*fds);
}
#define cleanup_fds __attribute__ ((cleanup (cleanup_fdsp)))

static char *
describe_nodes (const struct devices_state *s)
{
  char *d = xstrdup ("");
  for (size_t i = 0; i < s->n; i++)
    {
      str_list_add (&d, ", ", "%s (%u:%u)", s->nodes[i].path, s->nodes[i].major, s->nodes[i].minor);
    }
  return d;
}

static void
rollback (const struct roce_container *c, struct devices_state *s)
{
  devcg_undo (s->cg);
  s->cg = NULL;
  if (anything_mounted (s) || s->also_done)
    {
      cleanup_error roce_error_t err = NULL;
      if (in_container_mntns (c, s, do_unmount_nodes, NULL, &err) < 0)
        roce_log (ROCE_LOG_WARN, "undo of the device mounts: %s", err->msg);
    }
  if (s->memlock_set)
    memlock_restore (s->pid, &s->memlock_saved);
  s->memlock_set = false;
}

/* Mounts in a mount namespace the container shares with the host would
 * outlive it, on the host.  */
static int
refuse_host_mntns (const struct roce_container *c, roce_error_t *err)
{
  int self = ns_is_self (c->mntns_fd, "mnt", err);
  if (self < 0)
    return -1;
  if (self)
    return roce_error_refuse (err, "mount namespace of the container", "one of its own",
                              "the host's",
                              "give the container a mount namespace (linux.namespaces)");
  return 0;
}

/* Plan: the host's nodes, opened and checked in the host's namespace, each
 * with a detached clone (open_tree) where the kernel has it.  s->nodes gets
 * the nodes that will be mounted; rdma_cm missing on the host is left out.  */
static int
plan_nodes (const struct roce_policy *p, const struct roce_container *c,
            const struct rdma_node *nodes, size_t n, struct devices_state *s, int *host_fds,
            int *tree_fds, roce_error_t *err)
{
  s->root_path = xstrdup (c->config->root_path);
  if (stat (s->root_path, &s->root_st) < 0)
    return roce_error_sys (err, errno, "container rootfs `%s`", s->root_path);
  s->nodes = xmalloc0 ((n + 1) * sizeof (*s->nodes));
  s->host_st = xmalloc0 ((n + 1) * sizeof (*s->host_st));
  s->file_created = xmalloc0 (n + 1);
  s->mounted = xmalloc0 (n + 1);
  for (size_t i = 0; i < n; i++)
    {
      int fd = -1;
      int r = open_host_node (&nodes[i], p->path, &fd, &s->host_st[s->n], err);
      if (r < 0)
        return -1;
      if (r > 0)
        {
          if (strcmp (rdma_node_name (&nodes[i]), "rdma_cm") == 0)
            {
              roce_log (ROCE_LOG_WARN, "sysfs has rdma_cm but the host has no %s: left out",
                        nodes[i].path);
              continue;
            }
          cleanup_free char *what = xasprintf ("host node %s", nodes[i].path);
          cleanup_free char *expected
              = xasprintf ("a char device %u:%u (as sysfs says)", nodes[i].major, nodes[i].minor);
          return roce_error_refuse (err, what, expected, "missing",
                                    "load ib_uverbs and let udev create /dev/infiniband");
        }
      host_fds[s->n] = fd;
      tree_fds[s->n] = (int) syscall (SYS_open_tree, fd, "",
                                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
      if (tree_fds[s->n] < 0 && errno != ENOSYS && errno != EPERM)
        return roce_error_sys (err, errno, "open_tree %s", nodes[i].path);
      s->nodes[s->n++] = nodes[i];
    }
  return 0;
}

/* Apply: the mounts, the cgroup, then the limit.  A lowered hard limit
 * cannot be raised back without CAP_SYS_RESOURCE, so the limit goes last:
 * a refusal here never needs it undone.  */
static int
apply (const struct roce_policy *p, const struct roce_container *c, const struct memlock_plan *plan,
       int *tree_fds, struct devices_state *s, roce_error_t *err)
{
  struct mount_args margs = { .tree_fds = tree_fds };

  if (in_container_mntns (c, s, do_mount_nodes, &margs, err) < 0
      || devcg_allow (s->pid, c->pidfd, c->config, NULL, s->nodes, s->n, &s->cg, err) < 0
      || memlock_apply (s->pid, p, plan, &s->memlock_saved, err) < 0)
    return -1;
  s->memlock_set = plan->apply;
  return 0;
}

static void
log_done (const struct devices_state *s, const struct memlock_plan *plan)
{
  cleanup_free char *what = describe_nodes (s);
  cleanup_free char *cg = devcg_describe (s->cg);
  cleanup_free char *ml = memlock_str (plan->value);
  roce_log (ROCE_LOG_INFO, "devices: %s; device cgroup: %s; RLIMIT_MEMLOCK %s%s", what, cg, ml,
            plan->apply ? "" : " (from config.json, applied by the runtime)");
}

int
devices_setup (const struct roce_policy *p, const struct roce_request *req,
               const struct roce_container *c, const struct devices_also *also,
               struct devices_state **out, roce_error_t *err)
{
  struct devices_state *s = xmalloc0 (sizeof (*s));
  cleanup_fds int *host_fds = NULL;
  cleanup_fds int *tree_fds = NULL;
  cleanup_free struct rdma_node *nodes = NULL;
  cleanup_free char *warning = NULL;
  struct memlock_plan plan;
  size_t n = 0;

  s->pid = c->pid;
  s->also = also;
  if (rdma_nodes_for_request (p, req, &nodes, &n, err) < 0
      || memlock_decide (p, c->config, &plan, err) < 0)
    goto fail;
  warning = memlock_cap_warning (c->config);
  if (warning)
    roce_log (ROCE_LOG_WARN, "%s", warning);
  if (refuse_host_mntns (c, err) < 0)
    goto fail;
  host_fds = xmalloc0 ((n + 1) * sizeof (int));
  tree_fds = xmalloc0 ((n + 1) * sizeof (int));
  for (size_t i = 0; i <= n; i++)
    host_fds[i] = tree_fds[i] = -2;
  if (plan_nodes (p, c, nodes, n, s, host_fds, tree_fds, err) < 0
      || apply (p, c, &plan, tree_fds, s, err) < 0)
    goto fail;
  log_done (s, &plan);
  /* also's arg is the caller's, for this call: a later undo leaves what it
   * made to the container's end.  */
  s->also = NULL;
  s->also_done = false;
  *out = s;
  return 0;

fail:
  rollback (c, s);
  devices_state_free (s);
  return -1;
}

void
devices_undo (const struct roce_container *c, struct devices_state *s)
{
  if (s == NULL)
    return;
  rollback (c, s);
  devices_state_free (s);
}
