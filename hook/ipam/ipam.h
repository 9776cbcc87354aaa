/* SPDX-License-Identifier: Apache-2.0 */
/* IPAM: the addresses of the containers' RoCE interfaces, behind one door.
 *
 * Leases belong to a network namespace (a holder: a container's own, or a
 * pod's that its containers share) and live as long as it does.  A start
 * takes them (ipam_take) before any interface exists and gives them back
 * when a later step fails (ipam_untake); poststop releases them
 * (ipam_release) at once when the namespace has gone, else through a
 * process that waits for its end; `leases` lists them and `gc` releases
 * those of namespaces that died without a poststop.
 *
 * Inside: the store on disk (lease.h, lease_*.c), the allocator apart from
 * it (alloc.h), the cluster's etcd blocks (blocks/), and whether a
 * holder's namespace still lives (ipam_alive.c, asked of the kernel).  net/,
 * the shim and the commands change leases through this header only; what
 * only reads goes to the parts themselves (metrics and check read the
 * store's snapshot and the blocks, `blocks` is the blocks' own command,
 * `version` says the store's format).  */
#ifndef ROCE_IPAM_H
#define ROCE_IPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ipam/lease.h"
#include "lib/error.h"
#include "lib/linkage.h"
#include "spec/policy.h"
#include "sys/netns.h"

#define IPAM_IFNAME_SIZE 16

/* One address of a rail, in one net of its HCA.  In: the address asked
 * for (roce.io/ip; family 0: none).  Out: the address; for a start that
 * joined a pod's network, the GID the pod has.  ipam_record_gids: the GID
 * found.  */
struct ipam_addr
{
  struct roce_addr want;
  struct roce_addr addr;
  bool has_gid;
  unsigned gid_port, gid_index;
};

/* One rail of a start.  In: the HCA, the interface's name and its parent
 * on the host.  Out: the MAC of the link that will carry its addresses
 * (chosen with them, so that the lease records it); for a start that
 * joined a pod's network, the interface the pod has.  a[i]: the address in
 * hca->net[i] (a dual-stack rail has two).  */
struct ipam_rail
{
  const struct policy_hca *hca;
  struct ipam_addr a[POLICY_NETS];
  int parent_ifindex;
  char ifname[IPAM_IFNAME_SIZE];
  bool has_mac;
  uint8_t mac[6];
  /* In: roce.io/hca=auto's GPUs of the rail (PCI addresses, recorded in its
   * lease), NULL-terminated; NULL for an HCA named.  */
  char *const *gpus;
};

/* What a start holds once ipam_take succeeded.  */
enum ipam_hold
{
  IPAM_NONE,
  IPAM_MADE,   /* the namespace's holder is this container's: it sets the network up */
  IPAM_JOINED, /* the namespace already had its network: the container joined it */
};

/* Takes the leases of the rails for container id in namespace ns (nsid:
 * the host's id for it, -1 none) in one transaction, or joins the holder
 * the namespace already has (every rail must then be one it has, with the
 * address asked for, if any).  Waits, within the policy's lock_timeout_ms,
 * for what only time can answer (a release under way, a dead namespace's
 * interfaces); talks to etcd, for a new block, without the store's lock
 * (refused with ROCE_ERROR_NEEDS_ENGINE, before anything is made, by a
 * program that cannot load etcd's client: linkage.h).  */
int ipam_take (const struct roce_policy *p, const char *id, const struct netns_id *ns, int32_t nsid,
               struct ipam_rail *rails, size_t n, enum roce_linkage linkage, enum ipam_hold *hold,
               roce_error_t *err);
/* The GIDs found for a holder's addresses (rails[].has_gid), recorded for
 * `leases` and for containers joining later; logs, never fails.  */
void ipam_record_gids (const struct roce_policy *p, const struct netns_id *ns,
                       const struct ipam_rail *rails, size_t n);
/* Forgets what ipam_take gave container id: its holder when it made one
 * (then undo_links(arg) takes the interfaces down, under the store's lock,
 * unless a container joined meanwhile), its membership when it joined.
 * 0 done, -1 not (logged; gc recovers it).  */
int ipam_untake (const struct roce_policy *p, const char *id, const struct netns_id *ns,
                 enum ipam_hold hold, void (*undo_links) (void *arg), void *arg);

/* Poststop's question for a holder its last container left, asked under the
 * store's lock: whether the caller took its interfaces down with the pod
 * (its sandbox stopped), so that its leases go now.  */
typedef bool (*ipam_pod_down_fn) (const struct lease_holder *h, void *arg);
/* How poststop's release ends for a holder whose namespace the kernel
 * still has: a process left behind waits for its end (reap_inline false;
 * caller_ends: the caller exits next, so that process is its own child,
 * else its runtime's), or the caller waits itself.  */
struct ipam_release_how
{
  bool reap_inline;
  bool caller_ends;
  ipam_pod_down_fn pod_down;
  void *arg;
  /* Called first in a reaper the caller leaves (may be NULL): what of a
   * long-running caller's the reaper must not keep (the NRI plugin's
   * connection to the runtime).  */
  void (*in_reaper) (void *arg);
  void *reaper_arg;
};
/* Forgets container id in the holders that list it (ns: in that one
 * holder only, with `mark` held for it (ipam_release_mark), or -1) and
 * releases what no container uses: at once when its namespace has gone,
 * else once it has.  Idempotent; no store, no leases.  */
int ipam_release (const struct roce_policy *p, const char *id, const struct netns_id *ns, int mark,
                  const struct ipam_release_how *how, roce_error_t *err);
/* roce-runtime, after a foreground run, marks the holder of ns as being
 * released for container id (`leases`: "releasing"): the mark's fd,
 * locked; refused when another process holds it.  */
int ipam_release_mark (const struct roce_policy *p, const struct netns_id *ns, const char *id,
                       roce_error_t *err);

/* What the holders of the namespaces ns[0..n) hold, each in one line
 * ("198.18.10.100 (mlx5_0), ..."; out[i] NULL: nothing), from one look at
 * the store (no lock): what the NRI plugin takes up of the pods it finds
 * running when it (re)connects.  */
int ipam_held (const struct roce_policy *p, const struct netns_id *ns, size_t n, char **out,
               roce_error_t *err);

/* `leases`: what is held, by whom, since when (a table, or JSON).  */
int ipam_list (const struct roce_policy *p, bool json, FILE *out, roce_error_t *err);
/* `gc`: releases the leases whose namespace is gone, one line an address;
 * with `cluster`, then the blocks' part (blocks_gc).  */
int ipam_gc (const struct roce_policy *p, FILE *out, roce_error_t *err);

#endif
