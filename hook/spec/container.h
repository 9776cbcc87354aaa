/* SPDX-License-Identifier: Apache-2.0 */
/* The container a stage works on: who it is, its spec, and its namespaces,
 * opened once, early.  The stage (stage.c) fills it; every step (qos_gate,
 * net_setup, devices_setup) takes it read-only, with the policy and the
 * request, and can be called (and tested) without the stage.  */
#ifndef ROCE_CONTAINER_H
#define ROCE_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "lib/linkage.h"
#include "spec/oci.h"

struct rootfs_host;
struct roce_uplinks;

struct roce_container
{
  const char *id;
  pid_t pid; /* the container's init; 0 at poststop */
  const char *bundle;
  const struct oci_config *config; /* NULL when not loaded (poststop) */
  /* The runtime's view of its annotations (the state's, else config.json's).  */
  const struct roce_kv *annotations;
  size_t n_annotations;
  /* -1 until opened (start stages only): a pidfd that pins the process
   * identity, and its network and mount namespaces.  */
  int pidfd;
  int netns_fd;
  int mntns_fd;
  /* What tells a tmpfs of the container's own from one of the host's
   * (rootfs.h), taken once in the host's mount namespace when the
   * namespaces are opened; NULL (poststop, a step called alone): taken
   * where needed.  */
  const struct rootfs_host *rootfs_host;
  /* The host's netlink socket and the selected HCAs' netdevs and links
   * (uplink.h), found once by the stage before the gate, which shares them
   * with the network step; NULL (a step called alone): each finds its own.  */
  const struct roce_uplinks *uplinks;
  /* The caller ends as soon as the release is done (roce-runtime after a
   * foreground run, not a runtime's hook): a reaper it leaves is its child,
   * orphaned when it exits, with no process between.  */
  bool ends_after_release;
  /* How the program running the step is linked (linkage.h): a static
   * roce-hook's start refuses what needs etcd with ROCE_ERROR_NEEDS_ENGINE
   * (before anything is made), and, with `cluster`, its seccomp filter goes
   * on in net_setup, once the leases are taken.  */
  enum roce_linkage linkage;
};

#define ROCE_CONTAINER_INIT                                                                        \
  {                                                                                                \
    .pidfd = -1, .netns_fd = -1, .mntns_fd = -1                                                    \
  }

#endif
