/* SPDX-License-Identifier: Apache-2.0 */
/* hook/ipam's private header, a section for each family of its files: the
 * door's (ipam_*.c: whether a holder's namespace lives, the release's
 * bounds), the store's (lease_*.c: its layout's pieces) and the single-file
 * store's JSON (lease_json.c; the unit tests write stores in it).  Nothing
 * outside hook/ipam includes it but the unit tests.  */
#ifndef ROCE_IPAM_INT_H
#define ROCE_IPAM_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ipam/ipam.h"
#include "ipam/lease.h"
#include "lib/json.h"
#include "sys/netlink.h"
#include "sys/netns.h"

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

/* The kernel's view for many holders at once (gc): its namespace ids, and
 * the unicast list of each parent, each one dump, asked on first need
 * after the holders were read (a namespace or interface made after a
 * holder was read is never taken for gone, one gone before is gone).  The
 * same answers as holder_alive_by_nsid and holder_links_gone, at the cost
 * of a lookup a holder: a holder whose id is in use is asked about alone
 * (the id may be another namespace's now).  */
struct alive_view
{
  struct nl_sock **host;
  bool asked, failed; /* the ids: asked; could not be had (each holder asked alone) */
  int32_t *ids;
  size_t n_ids;
  struct view_link
  {
    int ifindex;
    bool failed;
    uint8_t (*macs)[6];
    size_t n;
  } * links;
  size_t n_links;
};
int view_alive_by_nsid (struct alive_view *v, const struct lease_holder *h);
int view_links_gone (struct alive_view *v, const struct lease_holder *h);
void view_clear (struct alive_view *v);

/* ---- the store's files (lease_*.c) ---------------------------------------- */

#define LEASE_FILE_NEW LEASE_FILE ".new"
#define LEASE_FILE_MAX (64 * 1024 * 1024)
#define HOLDER_FILE_MAX (1024 * 1024)
#define LEASE_VERSION 1
/* <boot>_<dev>_<ino>: a holder's file name.  */
#define KEY_MAX (NETNS_BOOT_ID_MAX + 48)

/* used/<a>.<b>: which addresses of the /16 a.b.0.0 some holder has, a bit
 * each (address a.b.c.d is bit c * 256 + d), after a header naming it (and
 * used/<first address> the same for an IPv6 /112, bit = the low 16 bits): the
 * set a free address is chosen from, read in one 8 KiB read whatever the
 * leases held (a directory of 4,000 entries cost 1.7 ms to list).  Derived
 * from the holders: a bit is set before the holder that has the address is
 * written and cleared after it is removed; a file missing or unreadable is
 * made again from addrs/, and gc makes every one again from the holders.  */
#define BITS_MAGIC "RHUSED01"
#define BITS_HDR 16
/* An IPv6 /112's file (used/<its first address>): the magic, its first
 * address (16 bytes), then the same map.  */
#define BITS_MAGIC6 "RHUSED06"
#define BITS_HDR6 24
#define BITS_MAP 8192
#define BITS_NAME_MAX 48

struct lease_bits
{
  struct roce_addr base; /* its first address: the low 16 bits zero */
  uint8_t map[BITS_MAP];
  int fd;         /* O_RDWR, -1 until written */
  size_t hdr_len; /* BITS_HDR or BITS_HDR6 */
};

/* <boot>_<dev>_<ino> of a namespace: its holder's file name.  */
void lease_holder_key (const struct netns_id *ns, char *buf, size_t size);
/* Container ids that can name an index entry: [A-Za-z0-9_.-], not hidden.  */
bool lease_container_indexable (const char *id);
bool lease_holder_lists (const struct lease_holder *h, const struct roce_addr *addr,
                         const struct lease_addr **addr_out);
struct lease_holder *lease_loaded_with_addr (const struct lease_store *s,
                                             const struct roce_addr *addr,
                                             const struct lease_addr **addr_out);
/* Released in this transaction: its entry goes at the commit.  */
bool lease_gone_with_addr (const struct lease_store *s, const struct roce_addr *addr);
/* A holder's file; blocks.json (NULL when the node holds none).  */
char *lease_holder_format (const struct lease_holder *h);
char *lease_blocks_format (const struct lease_store *s);
int lease_holder_parse (const struct json *j, const char *where, struct lease_holder *h,
                        roce_error_t *err);
int lease_blocks_parse (const struct json *root, struct lease_store *s, roce_error_t *err);

/* ---- lease_index.c --------------------------------------------------------- */

int lease_subdir (const struct lease_store *s, const char *name, bool create, roce_error_t *err);
struct lease_holder *lease_loaded_with_key (const struct lease_store *s, const char *key);
/* Adds h to s->h (the only way holders are added: s->cap_h is its room).  */
void lease_holder_append (struct lease_store *s, struct lease_holder *h);
/* The holders h[0..n) by key and by address, for loops over every holder
 * (gc's thousands: a walk of them all for each would be quadratic); valid
 * while that set and their addresses do not change.  */
struct holder_index
{
  struct by_key
  {
    char key[KEY_MAX];
    struct lease_holder *h;
  } * keys;
  struct by_addr
  {
    struct roce_addr addr;
    struct lease_holder *h;
  } * addrs;
  size_t n_keys, n_addrs;
};
void lease_index_make (struct lease_holder *const *h, size_t n, struct holder_index *ix);
void lease_index_clear (struct holder_index *ix);
struct lease_holder *lease_index_key (const struct holder_index *ix, const char *key);
struct lease_holder *lease_index_addr (const struct holder_index *ix, const struct roce_addr *addr);
int lease_entry_read (int fd, const char *name, char *key, roce_error_t *err);
int lease_bits_write (struct lease_store *s, struct lease_bits *b, roce_error_t *err);
int lease_bits_mark (struct lease_store *s, const struct roce_addr *addr, bool used,
                     roce_error_t *err);

/* ---- the single-file store's JSON (leases.json, format 1: lease_json.c) -----
 * Read by lease_store.c when it moves an earlier version's store into the
 * layout of lease.h, and by the unit tests, which write stores in it.  */

/* Parses / formats the store file's JSON.  */
int lease_store_parse (struct lease_store *s, const char *buf, roce_error_t *err);
char *lease_store_format (const struct lease_store *s);

#endif
