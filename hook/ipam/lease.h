/* SPDX-License-Identifier: Apache-2.0 */
/* The IP lease store under the policy's state_dir.
 *
 * Leases belong to a network namespace (a "holder"): a container's own, or a
 * pod's that several containers share.  The store is changed only under an
 * exclusive flock on <state_dir>/leases.lock, and its cost does not grow with
 * the leases the node holds: a start reads and writes only its own holder.
 *
 *   holders/<key>     one holder (compact JSON), key = <boot>_<dev>_<ino> of
 *                     its namespace: a start finds its own by name;
 *   addrs/<a.b.c.d>   a hard link to (a version of) the file of the holder of
 *                     the address (a link costs no inode; a symlink would);
 *   used/<a>.<b>      a bit for each address of the /16 a.b that a holder
 *                     has: a free address is chosen from it, one 8 KiB read;
 *   containers/<id>   the same for the holder a container uses: poststop's
 *                     way to its holder (an id that is no safe file name has
 *                     none, and poststop reads every holder);
 *   reaping/<key>_<cookie>  a holder whose containers have all stopped and whose
 *                     namespace the kernel still had: the process that
 *                     releases it once the namespace and its interfaces
 *                     are gone holds an OFD lock on this file (a file nobody
 *                     locks is one a killed process left: gc removes it);
 *   blocks.json       the etcd blocks of a cluster node (blocks.h);
 *   leases.json       the single-file store of earlier versions: moved into
 *                     the layout above by the first writer that finds it.
 *
 * Every file is written beside and renamed over (never fsynced: only a power
 * loss can tear one, and after one no namespace of the store is alive).  An
 * index entry is written before the holder file that lists it and removed
 * after, so a hook killed at any point can leave an entry whose holder does
 * not list it (the address stays unused until `gc` or an exhausted pool
 * reads every holder and drops it), never an address two holders list.  An
 * address is in the store before any interface carries it.  */
#ifndef ROCE_LEASE_H
#define ROCE_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "spec/policy.h"
#include "sys/netns.h"

#define LEASE_FILE "leases.json"
#define LEASE_LOCK "leases.lock"
/* The boot id of the boot that last wrote leases.json (earlier versions wrote
 * it; read only to tell a torn leases.json of an earlier boot).  */
#define LEASE_BOOT "leases.boot"
#define LEASE_HOLDERS "holders"
#define LEASE_ADDRS "addrs"
#define LEASE_CONTAINERS "containers"
#define LEASE_BLOCKS "blocks.json"
#define LEASE_USED "used"
#define LEASE_REAPING "reaping"
/* The store's on-disk format: 1 the single leases.json, 2 the layout above
 * (holders/, addrs/, ...), 3 that layout holding IPv6 addresses (in
 * holders, as addrs/ names, in used/ files of an IPv6 /112, in blocks.json),
 * which a reader of 2 cannot parse.  `roce-hook version` says which it
 * writes and the oldest it reads; an installer refuses to put back a
 * roce-hook that cannot read the format a node's state_dir has
 * (contrib/k8s/install.sh), and the hook refuses a store of a later format.
 * A format after 2 says itself in <state_dir>/format (LEASE_FORMAT_FILE):
 * written before the first IPv6 address or block is, so that a store of
 * IPv4 leases alone stays format 2, readable by the release before.  */
#define LEASE_STORE_FORMAT 3
#define LEASE_STORE_FORMAT_OLDEST 1
#define LEASE_FORMAT_FILE "format"

struct lease_addr
{
  char *hca;
  struct roce_addr addr; /* of either family: a dual-stack rail has one of each */
  char *ifname;
  /* The RoCE v2 GID of the address on the HCA's port, once verified
   * (stored as "gid": {"port", "index"}; a store without it loads).  */
  bool has_gid;
  unsigned gid_port;
  unsigned gid_index;
  /* The macvlan that carries it: its parent on the host (ifindex) and its
   * MAC, taken before the link is made (stored as "link": {"parent",
   * "mac"}; a store without it loads).  While the parent lists that MAC the
   * interface is up somewhere and can answer for the address.  */
  bool has_link;
  int parent_ifindex;
  uint8_t mac[6];
  /* roce.io/hca=auto: the PCI addresses of the container's GPUs the rail
   * serves (stored as "gpus"; NULL, and absent from the file, for HCAs
   * named), NULL-terminated.  */
  char **gpus;
};

struct lease_holder
{
  struct netns_id ns;
  char *owner;       /* the container that set the network up */
  char **containers; /* the containers using the namespace now; NULL-terminated, may be NULL */
  int64_t since;     /* unix time the leases were taken */
  /* The host's id for the namespace (RTM_NEWNSID), -1 when none was taken:
   * poststop asks the kernel through it whether the namespace still lives,
   * without scanning every process.  The kernel frees the id when the
   * namespace dies.  */
  int32_t nsid;
  struct lease_addr *addrs;
  size_t n_addrs;
  /* lease_store.c's: the holder's text as its file has it (NULL: not written
   * yet); a commit writes only the holders that changed.  */
  char *stored;
  /* The file it was read from: a file is never written in place (beside,
   * then renamed), so the same inode and change time is the same text.  */
  uint64_t file_ino;
  int64_t file_ctime_ns;
};

/* An address block this node holds in etcd (policy `cluster`, blocks.h):
 * the aligned range first..last of a rail subnet, and the exact value its
 * etcd key was written with (a release compares it).  */
struct lease_block
{
  struct roce_cidr subnet;
  struct roce_addr first;
  struct roce_addr last;
  int64_t since;       /* claimed */
  int64_t empty_since; /* 0: some address in it is held (gc's view) */
  char *value;
  /* Its key's mod_revision in etcd as this store last saw it (its claim,
   * an adoption, gc's check while the store held it); 0: not known yet.
   * gc gives the block back only at that revision: a start that adopted
   * it meanwhile wrote it again (blocks.h).  */
  int64_t rev;
  /* Claimed for a roce.io/ip outside the node's blocks: no other address is
   * given from it, and gc gives it back as soon as it is empty.  */
  bool static_only;
};

struct lease_store
{
  char *dir;
  int dir_fd;
  int lock_fd;       /* -1: a read-only snapshot */
  int64_t locked_ns; /* CLOCK_MONOTONIC when the lock was taken */
  struct lease_holder **h;
  size_t n;
  size_t cap_h;               /* room in h (lease_holder_append) */
  struct lease_block *blocks; /* only with `cluster`; blocks.json */
  size_t n_blocks;
  /* lease_store.c's.  h[] holds the holders loaded so far: every one after
   * lease_store_load_all() (and in a snapshot), else those the lookups
   * below have read.  */
  bool all;
  struct lease_bits *bits; /* used/: the /16s read by lease_store_index() */
  size_t n_bits;
  struct lease_holder **gone; /* dropped holders that have a file */
  size_t n_gone;
  char *blocks_stored;
  int format; /* what LEASE_FORMAT_FILE says (0: none, a store of format 1 or 2) */
};

/* A hold of the store's lock longer than this is logged as a warning (every
 * hold goes to log_file, when one is set: contrib/bench/lock.sh reads it).
 * Nothing slow runs under the lock: no liveness scan, no wait, no etcd.  */
#define LEASE_HOLD_WARN_MS 100
/* The longest wait for the store's lock by default (policy lock_timeout_ms). */
#define LEASE_LOCK_WAIT_MS POLICY_LOCK_TIMEOUT_MS

/* Creates state_dir when missing, takes the lock (waiting for it at most
 * timeout_ms, then refusing with the holder's pid), loads.  */
int lease_store_open_wait (const char *dir, unsigned timeout_ms, struct lease_store **out,
                           roce_error_t *err);
int lease_store_open (const char *dir, struct lease_store **out, roce_error_t *err);
/* As lease_store_open_wait, but a missing state_dir is not made: -1 with
 * roce_error_status ENOENT, nothing is held there.  What only gives back
 * (a release, its reaper) opens it so: one that comes late never brings
 * back a state_dir removed with everything it held.  */
int lease_store_open_held (const char *dir, unsigned timeout_ms, struct lease_store **out,
                           roce_error_t *err);
/* The store as it is now, every holder, without the lock (readers see whole
 * files); a missing dir is an empty store.  */
int lease_store_snapshot (const char *dir, struct lease_store **out, roce_error_t *err);
/* Writes what changed: the index entries first, then the holders' files,
 * then removes what was dropped.  With every holder loaded, also drops the
 * index entries no holder lists (what a killed hook left).  */
int lease_store_commit (struct lease_store *s, roce_error_t *err);
/* Releases the lock (without committing) and frees.  */
void lease_store_free (struct lease_store *s);
void cleanup_lease_storep (struct lease_store **s);
#define cleanup_lease_store __attribute__ ((cleanup (cleanup_lease_storep)))

/* Reads every holder (gc, the listings, a pool found exhausted).  */
int lease_store_load_all (struct lease_store *s, roce_error_t *err);
/* The same, taking from `from` (a snapshot read before the lock) each
 * holder whose file has not changed since, instead of reading it again:
 * gc reads its thousands of holders once.  The holders taken leave `from`.  */
int lease_store_load_all_from (struct lease_store *s, struct lease_store *from, roce_error_t *err);
/* Reads the holder of id's inode, if it has one (its file name).  */
int lease_load_netns (struct lease_store *s, const struct netns_id *id, roce_error_t *err);
/* Reads the holder the container uses, if any.  */
int lease_load_container (struct lease_store *s, const char *container, roce_error_t *err);
/* Reads which addresses of first..last some holder has (used/): before
 * lease_addr_used() on them.  */
int lease_store_index (struct lease_store *s, const struct roce_addr *first,
                       const struct roce_addr *last, roce_error_t *err);

/* Among the loaded holders.  */
struct lease_holder *lease_find_netns (const struct lease_store *s, const struct netns_id *id);
/* Whether some holder has addr: the loaded ones, and used/ for the others
 * (an address whose /16 was not read counts as used).  */
bool lease_addr_used (const struct lease_store *s, const struct roce_addr *addr);
/* The second half of that: whether a holder not loaded has addr, as used/
 * says (false once every holder is loaded; an address released in this
 * transaction is free).  */
bool lease_unloaded_has (const struct lease_store *s, const struct roce_addr *addr);
/* How many addresses of hca in first..last the loaded holders have (a
 * snapshot's: every holder; metrics' and check's pool rows).  */
uint64_t lease_store_held (const struct lease_store *s, const char *hca,
                           const struct roce_addr *first, const struct roce_addr *last);
/* The holder of addr, and the lease in it (*addr_out), or NULL: reads the
 * holder the index names.  */
int lease_find_addr (struct lease_store *s, const struct roce_addr *addr, struct lease_holder **out,
                     const struct lease_addr **addr_out, roce_error_t *err);

struct lease_holder *lease_holder_add (struct lease_store *s, const struct netns_id *ns,
                                       const char *owner, int64_t since);
void lease_holder_drop (struct lease_store *s, struct lease_holder *h);
/* The same for s->h[i] (a loop over every holder: no search).  */
void lease_holder_drop_at (struct lease_store *s, size_t i);
bool lease_holder_has (const struct lease_holder *h, const char *container);
void lease_holder_join (struct lease_holder *h, const char *container);
/* Returns whether the container was there.  */
bool lease_holder_leave (struct lease_holder *h, const char *container);
/* h's lease of hca in that family (AF_INET, AF_INET6), or NULL.  */
const struct lease_addr *lease_holder_addr (const struct lease_holder *h, const char *hca,
                                            int family);
/* "rt-1,rt-2", or "<owner> (stopped)" when no container uses it now
 * ("<owner> (releasing)" with `releasing`).  */
char *lease_holder_users (const struct lease_holder *h, bool releasing);
/* Records the link that carries h's lease of hca (before it is made).  */
/* The GPUs the rail of hca serves (a copy of gpus; NULL: none).  */
void lease_holder_set_gpus (struct lease_holder *h, const char *hca, char *const *gpus);
void lease_holder_set_link (struct lease_holder *h, const char *hca, int parent_ifindex,
                            const uint8_t mac[6]);
/* h's namespace died and a live one now has its inode (and so its key):
 * h is kept under an id of its own (NETNS_INO_GONE) for as long as its
 * interfaces may still be up, and released like any dead holder.  */
struct lease_holder *lease_holder_move_aside (struct lease_store *s, struct lease_holder *h);
/* A copy of h that outlives its store.  */
struct lease_holder *lease_holder_copy (const struct lease_holder *h);
void lease_holder_free (struct lease_holder *h);

/* reaping/: marks h (its containers gone) as being released by this process
 * and the children it forks (the lock goes with the fd): 1 and *fd, 0 when
 * a live process already does, < 0 an error.  Under the store's lock.
 * `container`, or NULL: the mark names the one container the holder may
 * still list while it is being released (roce-runtime after a foreground
 * run takes the mark, and the process it leaves releases).  */
int lease_reap_mark (struct lease_store *s, const struct netns_id *ns, const char *container,
                     int *fd, roce_error_t *err);
/* Removes the mark (under the store's lock) and closes fd.  */
void lease_reap_unmark (struct lease_store *s, const struct netns_id *ns, int fd);
/* Whether a live process is releasing h (no lock needed), 1 or 0: h lists
 * no container, or only the one its mark names.  -1: s was read without
 * the store's lock (lease_store_snapshot) and h's file has changed since,
 * so the answer would be about a holder that is no longer there: read the
 * store again.  */
int lease_reaping (const struct lease_store *s, const struct lease_holder *h);
/* Whether h's file is still the one it was read from (a holder read from
 * the old single file: true).  */
bool lease_holder_unchanged (const struct lease_store *s, const struct lease_holder *h);
/* Removes the marks no live process holds (gc; under the store's lock).  */
void lease_reap_sweep (struct lease_store *s);
/* Waits, at most ms and without the store's lock (lease_store_unlock), for
 * the process releasing the holder of ns to end: true when it has (its
 * mark is free or gone), false when it still runs.  */
bool lease_reap_wait (struct lease_store *s, const struct netns_id *ns, long ms);
/* Lets the store's lock go (logging how long it was held); s stays for
 * reading, and is freed as usual.  */
void lease_store_unlock (struct lease_store *s);

/* Blocks: added (value copied) and dropped by index.  */
struct lease_block *lease_block_add (struct lease_store *s, const struct roce_cidr *subnet,
                                     const struct roce_addr *first, const struct roce_addr *last,
                                     int64_t since, const char *value);
void lease_block_drop (struct lease_store *s, size_t i);

/* "2024-11-29T17:30:00Z".  */
const char *lease_time_format (int64_t t, char *buf, size_t size);

#endif
