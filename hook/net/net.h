/* SPDX-License-Identifier: Apache-2.0 */
/* The container's RoCE network: per selected HCA a macvlan (mode bridge) on
 * the HCA's netdev, made straight into the container's network namespace as
 * <ifname_prefix><i>, with the parent's MTU, an address leased (ipam.h), up, and the subnet's and the policy's routes.
 *
 * Containers that share a network namespace (a pod) get it once: the first
 * one sets it up, every later one finds its namespace in the store and only
 * joins.  Leases live as long as the namespace does.  */
#ifndef ROCE_NET_H
#define ROCE_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"
#include "probe/pmtu.h"
#include "spec/annot.h"
#include "spec/container.h"
#include "spec/policy.h"

struct net_state;
struct netns_id;

/* Start stage (after the container's namespaces are open): everything
 * above, or a refusal with the host as it was (what it made is rolled back
 * first).  On success *out records what was made, for net_undo.
 * netns_sock: a NETLINK_ROUTE socket already in c->netns_fd's namespace
 * (roce-runtime makes one while it is in the namespace it has just made),
 * taken over: closed whatever the outcome; NULL: one is made here.  */
struct nl_sock;
int net_setup (const struct roce_policy *p, const struct roce_request *req,
               const struct roce_container *c, struct nl_sock *netns_sock, struct net_state **out,
               roce_error_t *err);
/* Undoes a successful net_setup when a later step of the start fails:
 * deletes the links it made and releases their leases, or, for a container
 * that joined a pod's network, leaves it alone and forgets the container.
 * Safe to call when net_setup did nothing.  */
void net_undo (const struct roce_policy *p, const struct roce_container *c, struct net_state *n);
/* Poststop: forgets the container; when its network namespace is gone, the
 * leases are released.  Idempotent; a container or namespace that is already
 * gone is not an error.  */
int net_release (const struct roce_policy *p, const struct roce_container *c, roce_error_t *err);
void net_state_free (struct net_state *n);
/* The namespace the network was made in (its holder's id); false when
 * none was.  */
bool net_state_netns (const struct net_state *n, struct netns_id *out);
/* Whether this start made the network (else it joined one already there:
 * net_undo then forgets the container, and a pod's network stays).  */
bool net_state_made (const struct net_state *n);

/* A pod's stop without an OCI state (the NRI plugin's StopPodSandbox): id
 * leaves the holders it is in, and the holder of the namespace pinned at
 * pin (the pod's network namespace, by the runtime's path) loses its
 * interfaces and its leases at once, as a sandbox's poststop takes them.
 * A holder whose namespace cannot be opened goes as net_release's do (a
 * reaper, in_reaper(arg) called first in it).  */
int net_release_pod (const struct roce_policy *p, const char *id, const char *pin,
                     void (*in_reaper) (void *arg), void *arg, roce_error_t *err);

/* roce-runtime after a foreground run hands the release to a process of
 * its own and returns.  Before that it marks the holder of ns as being
 * released for container id (ipam_release_mark).  The process it leaves
 * then releases id from that holder only, by the namespace (a run of the
 * same id that has started since has a holder of its own), with that mark,
 * and waits for the namespace's end itself (no reaper of its own).  */
int net_release_netns (const struct roce_policy *p, const struct roce_container *c,
                       const struct netns_id *ns, int mark, roce_error_t *err);

/* `check --probe`: the path MTU of a rail as a container on it sees it.
 * In a network namespace of the probe's own (netlink_netns_new: held by an
 * fd alone, so it ends with the probe however the probe ends), the start's
 * own steps make hca's rail as they would a container's with that one HCA:
 * a lease from the pool (the lock, the allocator, etcd's blocks with
 * `cluster`), taken for container NET_PROBE_ID-<pid>, a macvlan on the
 * HCA's netdev with the parent's MTU, its devconf, RFC 5227 probe, address,
 * routes and rule; no GID steps.  From there DF echoes of the parent's MTU
 * go to dst for timeout_ms (pmtu.h); then everything is undone: the link
 * deleted, the lease released, the namespace closed.  The address is held
 * for the probe's few seconds only; a probe killed on the way leaves a
 * lease whose namespace is gone (its macvlan with it), which the kernel's
 * word on its id gives back at once to the next start that wants the
 * address, and `gc` releases.  0: the probe ran (pr->res says what it
 * saw; PMTU_ERROR when the rail has no address of dst's family); -1:
 * the rail could not be made (nothing left of it).  */
#define NET_PROBE_ID "check-probe"
struct net_probe
{
  struct roce_addr dst; /* in: the peer (policy_hca_probe_peer) */
  unsigned timeout_ms;
  struct roce_addr src; /* out: the rail's address of dst's family, leased for the probe */
  unsigned mtu;         /* the parent's, the rail's */
  char ifname[16];
  struct pmtu_result res;
};
int net_probe_rail (const struct roce_policy *p, const struct policy_hca *h, struct net_probe *pr,
                    roce_error_t *err);

/* What the container's network is, per address of each rail (a
 * dual-stack rail has two, IPv4 first), once net_setup succeeded (made or
 * joined): what the published rails file lists.  */
struct net_rail
{
  const char *hca;
  char ifname[16];
  struct roce_addr addr;
  unsigned prefix;
  bool has_gid; /* the RoCE v2 GID of addr was found */
  unsigned gid_port;
  unsigned gid_index;
  const char *netdev; /* the HCA's netdev on the host */
  /* roce.io/hca=auto: the container's GPUs it serves (PCI addresses),
   * NULL-terminated; NULL: the HCAs were named.  */
  char *const *gpus;
};
const struct net_rail *net_state_rails (const struct net_state *n, size_t *count);

#endif
