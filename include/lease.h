/* The IP lease store under the policy's state_dir.
 *
 * Leases belong to a network namespace (a "holder"): a container's own, or a
 * pod's that several containers share.  The store is one JSON file,
 * <state_dir>/leases.json, changed only under an exclusive flock on
 * <state_dir>/leases.lock and always replaced whole: the new state is written
 * and fsynced beside the old (leases.json.new), then renamed over it.  A hook
 * killed at any point leaves either the old or the new file, both complete,
 * and its lock goes with it.  An address is written to the store before any
 * interface carries it, so no address can be in use without a lease.  */
#ifndef ROCE_LEASE_H
#define ROCE_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "netns.h"
#include "policy.h"

#define LEASE_FILE "leases.json"
#define LEASE_LOCK "leases.lock"
/* The boot id of the boot that last wrote the store (written once a boot). */
#define LEASE_BOOT "leases.boot"

struct lease_addr
{
  char *hca;
  uint32_t addr;
  char *ifname;
  /* The RoCE v2 GID of the address on the HCA's port, once verified
   * (stored as "gid": {"port", "index"}; a store without it loads).  */
  bool has_gid;
  unsigned gid_port;
  unsigned gid_index;
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
};

/* An address block this node holds in etcd (policy `cluster`, blocks.h):
 * the aligned range first..last of a rail subnet, and the exact value its
 * etcd key was written with (a release compares it).  */
struct lease_block
{
  struct roce_cidr subnet;
  uint32_t first;
  uint32_t last;
  int64_t since;       /* claimed */
  int64_t empty_since; /* 0: some address in it is held (gc's view) */
  char *value;
};

struct lease_store
{
  char *dir;
  int dir_fd;
  int lock_fd; /* -1: a read-only snapshot */
  struct lease_holder **h;
  size_t n;
  struct lease_block *blocks; /* only with `cluster`; "blocks" in the file */
  size_t n_blocks;
};

/* The longest wait for the store's lock by default (policy lock_timeout_ms). */
#define LEASE_LOCK_WAIT_MS POLICY_LOCK_TIMEOUT_MS

/* Creates state_dir when missing, takes the lock (waiting for it at most
 * timeout_ms, then refusing with the holder's pid), loads.  */
int lease_store_open_wait (const char *dir, unsigned timeout_ms, struct lease_store **out,
                           roce_error_t *err);
int lease_store_open (const char *dir, struct lease_store **out, roce_error_t *err);
/* The store as it is now, without the lock (readers see a whole file); a
 * missing dir or file is an empty store.  */
int lease_store_snapshot (const char *dir, struct lease_store **out, roce_error_t *err);
/* Writes the new state beside the old, fsyncs, renames over it.  */
int lease_store_commit (struct lease_store *s, roce_error_t *err);
/* Releases the lock (without committing) and frees.  */
void lease_store_free (struct lease_store *s);
void cleanup_lease_storep (struct lease_store **s);
#define cleanup_lease_store __attribute__ ((cleanup (cleanup_lease_storep)))


struct lease_holder *lease_find_netns (const struct lease_store *s, const struct netns_id *id);
/* The holder of addr, and the lease in it (*addr_out), or NULL.  */
struct lease_holder *lease_find_addr (const struct lease_store *s, uint32_t addr,
                                      const struct lease_addr **addr_out);

struct lease_holder *lease_holder_add (struct lease_store *s, const struct netns_id *ns,
                                       const char *owner, int64_t since);
void lease_holder_drop (struct lease_store *s, struct lease_holder *h);
bool lease_holder_has (const struct lease_holder *h, const char *container);
void lease_holder_join (struct lease_holder *h, const char *container);
/* Returns whether the container was there.  */
bool lease_holder_leave (struct lease_holder *h, const char *container);
const struct lease_addr *lease_holder_addr (const struct lease_holder *h, const char *hca);
/* "rt-1,rt-2", or "<owner> (stopped)" when no container uses it now.  */
char *lease_holder_users (const struct lease_holder *h);

/* Whether a holder's namespace still exists.  */
typedef bool (*lease_alive_fn) (const struct netns_id *ns, void *arg);

/* Gives h an address of hca: `want` when has_want (refused when another
 * live holder has it), else the lowest free one of the pool (refused, naming
 * the pool, when none is).  A holder whose namespace is gone is dropped to
 * make room.  */
int lease_assign (struct lease_store *s, struct lease_holder *h, const struct policy_hca *hca,
                  const char *ifname, bool has_want, uint32_t want, lease_alive_fn alive, void *arg,
                  uint32_t *out, roce_error_t *err);

/* Drops the holders (but keep) whose namespace is gone; how many.  */
size_t lease_reclaim (struct lease_store *s, const struct lease_holder *keep, lease_alive_fn alive,
                      void *arg);

/* Blocks: added (value copied) and dropped by index.  */
struct lease_block *lease_block_add (struct lease_store *s, const struct roce_cidr *subnet,
                                     uint32_t first, uint32_t last, int64_t since, const char *value);
void lease_block_drop (struct lease_store *s, size_t i);

/* "2024-11-29T17:30:00Z".  */
const char *lease_time_format (int64_t t, char *buf, size_t size);

#endif
