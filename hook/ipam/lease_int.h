/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of the lease store share: lease.c (the holders in
 * memory), lease_store.c (the lock, opening), lease_index.c (the layout
 * read), lease_commit.c (written), lease_reap.c (the release marks) and
 * lease_json.c (the files' JSON); nothing else includes it.  */
#ifndef ROCE_LEASE_INT_H
#define ROCE_LEASE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"
#include "ipam/lease.h"

#define LEASE_FILE_NEW LEASE_FILE ".new"
#define LEASE_FILE_MAX (64 * 1024 * 1024)
#define HOLDER_FILE_MAX (1024 * 1024)
#define LEASE_VERSION 1
/* <boot>_<dev>_<ino>: a holder's file name.  */
#define KEY_MAX (NETNS_BOOT_ID_MAX + 48)

/* used/<a>.<b>: which addresses of the /16 a.b.0.0 some holder has, a bit
 * each (address a.b.c.d is bit c * 256 + d), after a header naming it: the
 * set a free address is chosen from, read in one 8 KiB read whatever the
 * leases held (a directory of 4,000 entries cost 1.7 ms to list).  Derived
 * from the holders: a bit is set before the holder that has the address is
 * written and cleared after it is removed; a file missing or unreadable is
 * made again from addrs/, and gc makes every one again from the holders.  */
#define BITS_MAGIC "RHUSED01"
#define BITS_HDR 16
#define BITS_MAP 8192

struct lease_bits
{
  uint32_t hi; /* address >> 16 */
  uint8_t map[BITS_MAP];
  int fd; /* O_RDWR, -1 until written */
};

/* <boot>_<dev>_<ino> of a namespace: its holder's file name.  */
void lease_holder_key (const struct netns_id *ns, char *buf, size_t size);
/* Container ids that can name an index entry: [A-Za-z0-9_.-], not hidden.  */
bool lease_container_indexable (const char *id);
bool lease_holder_lists (const struct lease_holder *h, uint32_t addr,
                         const struct lease_addr **addr_out);
struct lease_holder *lease_loaded_with_addr (const struct lease_store *s, uint32_t addr,
                                             const struct lease_addr **addr_out);
/* Released in this transaction: its entry goes at the commit.  */
bool lease_gone_with_addr (const struct lease_store *s, uint32_t addr);
/* A holder's file; blocks.json (NULL when the node holds none).  */
char *lease_holder_format (const struct lease_holder *h);
char *lease_blocks_format (const struct lease_store *s);
int lease_holder_parse (const struct json *j, const char *where, struct lease_holder *h,
                        roce_error_t *err);
int lease_blocks_parse (const struct json *root, struct lease_store *s, roce_error_t *err);

/* ---- lease_index.c --------------------------------------------------------- */

int lease_subdir (const struct lease_store *s, const char *name, bool create, roce_error_t *err);
struct lease_holder *lease_loaded_with_key (const struct lease_store *s, const char *key);
int lease_entry_read (int fd, const char *name, char *key, roce_error_t *err);
int lease_bits_write (struct lease_store *s, struct lease_bits *b, roce_error_t *err);
int lease_bits_mark (struct lease_store *s, uint32_t addr, bool used, roce_error_t *err);

#endif
