/* SPDX-License-Identifier: Apache-2.0 */
/* The start's floor, for contrib/bench/start.sh: the kernel work an annotated
 * prestart cannot do without, and nothing else.  No policy, no spec, no check,
 * no log, no confinement: the OCI state's pid, the container's namespaces, a
 * macvlan made in its network namespace (mtu, mode bridge) given an address
 * and brought up, the lease written and linked as hook/ipam/lease_commit.c
 * does, the two RDMA nodes bound into the container's /dev/infiniband and the
 * rails file beside them, the device cgroup's two rules and RLIMIT_MEMLOCK.
 * Linked as roce-hook is (static-pie, libnl-route), so that the hook's own
 * time over this one is what its checks, its parsing and its process cost.
 *
 * Usage: floor PARENT_IFINDEX STATE_DIR CGROUP_DIR|- NODE... < OCI state  */
#define _GNU_SOURCE
#include <fcntl.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/macvlan.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int
die (const char *what)
{
  fprintf (stderr, "floor: %s\n", what);
  exit (1);
}

int
main (int argc, char **argv)
{
  char state[4096], path[256], *p;
  ssize_t n;
  int pid, netns, mntns, self_net, self_mnt, sd, fd, dir, tree;
  struct nl_sock *host, *cont;
  struct rtnl_link *l, *got;
  struct rtnl_addr *a;
  struct nl_addr *local;
  struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };

  if (argc < 5)
    return die ("usage: floor PARENT_IFINDEX STATE_DIR CGROUP_DIR|- NODE...");
  n = read (0, state, sizeof (state) - 1);
  if (n <= 0)
    return die ("no state");
  state[n] = '\0';
  if ((p = strstr (state, "\"pid\":")) == NULL)
    return die ("no pid");
  pid = atoi (p + 6);

  /* The container's namespaces, and a netlink socket in its netns.  */
  if (syscall (SYS_pidfd_open, pid, 0) < 0)
    return die ("pidfd_open");
  snprintf (path, sizeof (path), "/proc/%d/ns/net", pid);
  netns = open (path, O_RDONLY | O_CLOEXEC);
  snprintf (path, sizeof (path), "/proc/%d/ns/mnt", pid);
  mntns = open (path, O_RDONLY | O_CLOEXEC);
  self_net = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  self_mnt = open ("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (netns < 0 || mntns < 0 || self_net < 0 || self_mnt < 0)
    return die ("namespaces");
  host = nl_socket_alloc ();
  cont = nl_socket_alloc ();
  if (nl_connect (host, NETLINK_ROUTE) < 0 || setns (netns, CLONE_NEWNET) < 0
      || nl_connect (cont, NETLINK_ROUTE) < 0 || setns (self_net, CLONE_NEWNET) < 0)
    return die ("netlink sockets");

  /* The interface, made in the container's netns, addressed, up.  */
  l = rtnl_link_macvlan_alloc ();
  rtnl_link_set_name (l, "roce0");
  rtnl_link_set_link (l, atoi (argv[1]));
  rtnl_link_set_mtu (l, 9000);
  rtnl_link_set_ns_fd (l, netns);
  rtnl_link_macvlan_set_mode (l, MACVLAN_MODE_BRIDGE);
  if (rtnl_link_add (host, l, NLM_F_CREATE | NLM_F_EXCL) < 0)
    return die ("macvlan");
  if (rtnl_link_get_kernel (cont, 0, "roce0", &got) < 0)
    return die ("getlink");
  a = rtnl_addr_alloc ();
  nl_addr_parse ("198.18.10.250/24", AF_INET, &local);
  rtnl_addr_set_ifindex (a, rtnl_link_get_ifindex (got));
  rtnl_addr_set_local (a, local);
  if (rtnl_addr_add (cont, a, 0) < 0)
    return die ("address");
  rtnl_link_put (l);
  l = rtnl_link_alloc ();
  rtnl_link_set_flags (l, IFF_UP);
  if (rtnl_link_change (cont, got, l, 0) < 0)
    return die ("up");

  /* The lease: the holder's file, its two index links, its rename.  */
  sd = open (argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  fd = sd < 0 ? -1 : openat (sd, ".h.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write (fd, state, 285 < n ? 285 : (size_t) n) < 0 || close (fd) < 0
      || linkat (sd, ".h.new", sd, "a", 0) < 0 || linkat (sd, ".h.new", sd, "c", 0) < 0
      || renameat (sd, ".h.new", sd, "h") < 0)
    return die ("lease");

  /* The nodes: detached clones of the host's, bound in the container's
   * /dev/infiniband, with the rails file in /dev/roce.  */
  int trees[8], nn = 0;
  for (int i = 4; i < argc && nn < 8; i++)
    {
      int node = open (argv[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
      trees[nn++] = (int) syscall (SYS_open_tree, node, "",
                                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
      close (node);
    }
  if (setns (mntns, CLONE_NEWNS) < 0)
    return die ("mount namespace");
  mkdir ("/dev/infiniband", 0755);
  dir = open ("/dev/infiniband", O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < nn; i++)
    {
      const char *name = strrchr (argv[4 + i], '/') + 1;
      fd = openat (dir, name, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0 || trees[i] < 0
          || syscall (SYS_move_mount, trees[i], "", fd, "",
                      MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
                 < 0)
        return die ("node");
      close (fd);
    }
  mkdir ("/dev/roce", 0755);
  fd = open ("/dev/roce/rails", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0 || write (fd, "# hca ifname address\nmlx5_0 roce0 198.18.10.250/24\n", 51) < 0)
    return die ("rails");
  tree = (int) syscall (SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (tree < 0
      || syscall (SYS_move_mount, tree, "", fd, "",
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
             < 0)
    return die ("rails mount");
  if (setns (self_mnt, CLONE_NEWNS) < 0)
    return die ("back");

  /* The device cgroup's rules (v1) and the memlock limit.  */
  if (strcmp (argv[3], "-") != 0)
    for (int i = 0; i < 2; i++)
      {
        snprintf (path, sizeof (path), "%s/devices.allow", argv[3]);
        fd = open (path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write (fd, i ? "c 10:58 rw" : "c 231:192 rw", i ? 10 : 12) < 0)
          return die ("devices.allow");
        close (fd);
      }
  if (prlimit (pid, RLIMIT_MEMLOCK, &unlimited, NULL) < 0)
    prlimit (pid, RLIMIT_MEMLOCK, NULL, NULL);
  return 0;
}
