/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of hook/net share (the state, one call's inputs, the plan,
 * the liveness and fabric steps); not part of any public header.  */
#ifndef ROCE_NET_INT_H
#define ROCE_NET_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lease.h"
#include "net.h"
#include "netlink.h"
#include "netns.h"
#include "policy.h"

#define IFNAME_SIZE 16
/* The store's lock timeout of a release, at least (a reaper waits longer
 * than a start would).  */
#define REAP_LOCK_MS 10000
/* How long a reaper asks again about a namespace not gone yet, and how
 * often (the shim's release process lives 30 s at most).  */
#define REAP_PATIENCE_MS 12000
#define REAP_RETRY_MS 250

struct net_state
{
  struct nl_sock *csock; /* NETLINK_ROUTE in the container's namespace */
  struct netns_id ns;
  bool made;   /* this container set the network up (and holds its leases) */
  bool joined; /* it joined the network of a namespace it shares */
  /* The links made in the container's namespace, by name: recorded as soon
   * as the kernel made one, before anything else can fail.  */
  char (*links)[IFNAME_SIZE];
  size_t n_links;
  /* The from-rules made (they outlive their links): address and table.  */
  struct
  {
    uint32_t addr;
    unsigned table;
  } * rules;
  size_t n_rules;
  /* Per rail, once set up (or found, for a container that joined).  */
  struct net_rail *rails;
  char **rail_netdevs;
  size_t n_rails;
};

/* One call's inputs: what the public functions were handed.  */
struct net_run
{
  const struct roce_policy *p;
  const struct roce_request *req;
  const struct roce_container *c;
  struct net_state *n;
};

/* ---- liveness, scanned once per transaction, only when needed ---------------- */

/* Under the store's lock only the kernel is asked (by namespace id, and
 * for the holder's interfaces), never a scan, never a wait: a holder it
 * cannot tell about counts as alive and asks for a scan (want_scan), a
 * holder being released for a wait for its release (wait), both done by
 * the caller without the lock before the transaction runs again (lease_take).  */
struct alive_ctx
{
  struct netns_live *live;     /* the scan made outside the lock, NULL before */
  bool failed;                 /* it could not be made: unsure, alive */
  struct nl_sock *host;        /* for the kernel's word on a namespace, by its id */
  const struct lease_store *s; /* the store open: its reaping/ marks */
  bool want_scan;              /* a holder the kernel could not tell about */
  bool has_wait;               /* a holder being released: wait for it */
  struct netns_id wait;
  bool no_wait;  /* the waits are over (the deadline): ask the kernel */
  bool links_up; /* a dead namespace's interfaces still up: again soon */
};

/* ---- the plan: everything checked before the host is touched ------------------- */

struct plan_item
{
  const struct roce_selection *sel;
  char *parent;
  struct netlink_link parent_link;
  char ifname[IFNAME_SIZE];
  uint32_t addr; /* leased */
  /* The fabric steps (policy `fabric`).  */
  unsigned table; /* 0: the main table */
  bool has_mac;
  uint8_t mac[6];
  struct netlink_devconf devconf;
  bool gid_wanted; /* wait for the GID (gid_check on, the table has room) */
  bool has_gid;
  unsigned gid_port, gid_index;
};

struct plan
{
  struct plan_item *items;
  size_t n;
  int32_t nsid; /* the host's id of the container's namespace, -1: none */
};

/* ---- net_alive.c ----------------------------------------------------------- */

/* gc's scan (outside the store's lock), at most this long: then unsure.  */
#define GC_SCAN_MS 2000

bool alive_cb (const struct lease_holder *h, void *arg);
void alive_clear (struct alive_ctx *a);
int holder_alive_by_nsid (struct nl_sock **host, const struct lease_holder *h);
/* A holder's namespace: gone; alive (a container listed, a holder seen);
 * or not gone yet (the kernel still has it, the scan ran out of time) and
 * so kept, for now.  holder_alive: not gone.  */
enum holder_state
{
  HOLDER_GONE,
  HOLDER_ALIVE,
  HOLDER_UNSURE,
};
enum holder_state holder_state (struct nl_sock **host, const struct lease_holder *h);
bool holder_alive (struct nl_sock **host, const struct lease_holder *h);
int holder_links_gone (struct nl_sock **host, const struct lease_holder *h);
bool links_wait (struct nl_sock **host, const struct lease_holder *h, const struct timespec *end);

/* ---- net_fabric.c ---------------------------------------------------------- */

void plan_fabric (const struct net_run *r, struct plan *pl);
void mac_pick (const struct policy_fabric *f, uint32_t addr, struct plan_item *it);
int gid_room (const struct net_run *r, struct plan *pl, roce_error_t *err);
int gids_wait (const struct net_run *r, struct plan *pl, roce_error_t *err);
void gids_record (const struct net_run *r, const struct plan *pl);
void rails_fill (struct net_state *n, const struct plan *pl);

#endif
