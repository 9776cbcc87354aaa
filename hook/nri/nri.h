/* SPDX-License-Identifier: Apache-2.0 */
/* roce-hook nri: an NRI plugin (containerd >= 1.7 with NRI on, CRI-O >=
 * 1.30), the RoCE pods' start without a shim or a RuntimeClass.
 *
 * It connects to the runtime's NRI socket, registers, and serves NRI's
 * Plugin service on the multiplexed connection (hook/nri/nri_wire.c).  A
 * pod annotated roce.io/hca gets what the hook's stages give (the lossless
 * gate, the network made in the pod's network namespace at RunPodSandbox,
 * the leases) and each of its containers what the shim writes into a spec
 * (the RDMA device nodes and their cgroup rules, RLIMIT_MEMLOCK, the NCCL
 * variables, the rails file), through the runtime's adjustment of the spec
 * it stores: processes exec'd later get them too.  Its stop releases the
 * pod's network.  Other pods are answered with no adjustment at all.
 *
 * Fail closed: each container the plugin prepared carries the annotation
 * NRI_MARKER naming it.  The guard (a second, stateless NRI plugin, called
 * after this one; or the OCI hook `roce-hook nri --guard-hook`, hooks.d
 * for CRI-O) refuses a container of a RoCE pod without it: one the plugin
 * did not see (down, restarting) or did not answer in time (the runtime
 * drops a plugin that misses its timeout and goes on without it).  */
#ifndef ROCE_NRI_H
#define ROCE_NRI_H

#include <stdbool.h>

#include "lib/error.h"
#include "lib/linkage.h"

#define NRI_SOCKET_DEFAULT "/var/run/nri/nri.sock"
/* The annotation the plugin gives each container of a RoCE pod it
 * prepared; its value is the container's id.  */
#define NRI_MARKER "roce.io/nri-prepared"
/* NRI calls plugins in the order of their indexes: the guard after. */
#define NRI_PLUGIN_NAME "roce-hook"
#define NRI_PLUGIN_INDEX "10"
#define NRI_GUARD_NAME "roce-guard"
#define NRI_GUARD_INDEX "90"

enum nri_role
{
  NRI_ROLE_PLUGIN,
  NRI_ROLE_GUARD,
};

struct nri_opts
{
  const char *config_path;
  const char *socket_path; /* NULL: NRI_SOCKET_DEFAULT */
  /* A socket already connected (a plugin the runtime started itself:
   * NRI_PLUGIN_SOCKET), -1: connect to socket_path.  */
  int fd;
  enum nri_role role;
  const char *name, *index; /* NULL: the role's own */
  enum roce_linkage linkage;
  /* Ends when the runtime's connection does (a pre-connected socket); else
   * connects again until stopped (SIGTERM, SIGINT).  */
  bool once;
};

/* Runs the plugin until it is stopped: 0, or -1 when it cannot run at all
 * (the policy, the socket's path).  */
int nri_run (const struct nri_opts *o, roce_error_t *err);

/* The guard as an OCI hook (prestart or createRuntime; the OCI state on
 * state_fd): refuses a container whose spec asks for RoCE (roce.io/hca)
 * without NRI_MARKER naming it.  *id: the container's, once read.  */
int nri_guard_hook (int state_fd, char **id, roce_error_t *err);

#endif
