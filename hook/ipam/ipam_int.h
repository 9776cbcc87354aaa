/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of the IPAM door share (ipam_take.c, ipam_release.c,
 * ipam_admin.c, ipam_alive.c): whether a holder's namespace lives, and the
 * release's bounds; not part of any public header.  */
#ifndef ROCE_IPAM_INT_H
#define ROCE_IPAM_INT_H

#include <stdbool.h>
#include <time.h>

#include "ipam/ipam.h"
#include "ipam/lease.h"
#include "netlink.h"
#include "netns.h"

/* The store's lock timeout of a release, at least (a reaper waits longer
 * than a start would).  */
#define REAP_LOCK_MS 10000
/* How long a reaper asks again about a namespace not gone yet, and how
 * often (the shim's release process lives 30 s at most).  */
#define REAP_PATIENCE_MS 12000
#define REAP_RETRY_MS 250
/* gc's scan (outside the store's lock), at most this long: then unsure.  */
#define GC_SCAN_MS 2000

/* ---- liveness, scanned once per transaction, only when needed ---------------- */

/* Under the store's lock only the kernel is asked (by namespace id, and
 * for the holder's interfaces), never a scan, never a wait: a holder it
 * cannot tell about counts as alive and asks for a scan (want_scan), a
 * holder being released for a wait for its release (wait), both done by
 * the caller without the lock before the transaction runs again (ipam_take).  */
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

/* ---- ipam_alive.c ---------------------------------------------------------- */

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

#endif
