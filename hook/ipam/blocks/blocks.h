/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster addressing (policy `cluster`): each HCA's pool is the range of its
 * rail subnet that every node shares.  It is cut into aligned blocks of
 * cluster.block addresses; a node allocates only inside blocks it holds in
 * etcd, under the key
 *
 *   <prefix>blocks/<subnet, '/' as '_'>/<the block's aligned first address>
 *
 * (per subnet, not per HCA name: mlx5_0 on two nodes may be two rails), with
 * the value {"node":"<node>","id":"<node id>","since":<unix time>,"size":<block>}.
 * A block is claimed with one transaction that succeeds only when the key
 * does not exist and the subnet's geometry key
 *
 *   <prefix>geometry/<subnet, '/' as '_'>   {"block":<block>}
 *
 * still says this node's block size (so no node cuts blocks of another size
 * across ours), and given back with one that deletes it only when it still
 * holds that exact value.  The node's lease store (lease.h) keeps the blocks
 * it holds, so a start that finds a free address in one makes no etcd call.
 *
 * Fencing: a node is its name and an id (node.id in state_dir, made on
 * first use and made again when the state_dir turns up on another machine:
 * /etc/machine-id).  Its liveness record <prefix>nodes/<node> (its id, on an
 * etcd lease of cluster.liveness_ttl_s) is renewed by each claim and by gc;
 * `blocks release --node` refuses a node whose record lives, unless forced.
 * A node whose own record lapsed (liveness.json in state_dir), or that
 * rebooted, checks every held block against etcd before it allocates from
 * one again.  Each claim and release leaves an intent file (intents/) first,
 * and each block has an entry in its node's index (blocks_affinity_key),
 * so that gc finds what a lost answer left in etcd without reading the
 * fleet's keys.
 *
 * Without `cluster` every function here is the node-local store's own.  */
#ifndef ROCE_BLOCKS_H
#define ROCE_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ipam/alloc.h"
#include "ipam/lease.h"
#include "lib/error.h"
#include "lib/linkage.h"
#include "spec/policy.h"

struct etcd_client;

#define BLOCKS_ID_LEN 32
#define BLOCKS_NODE_ID "node.id"
#define BLOCKS_LIVENESS "liveness.json"
#define BLOCKS_INTENTS "intents"
/* blocks_assign's "do the etcd part outside the lock, then again".  */
#define BLOCKS_AGAIN 1

/* One start's (or command's) view: the etcd client opened on first need.  */
struct blocks_ctx
{
  const struct roce_policy *p;
  struct etcd_client *etcd;
  /* A static roce-hook's start (linkage.h): etcd's client is not loaded
   * here, and what needs it is refused with ROCE_ERROR_NEEDS_ENGINE, before
   * anything of etcd's is touched.  */
  enum roce_linkage linkage;
  /* The caller frees the store when blocks_assign says BLOCKS_AGAIN, runs
   * blocks_outside() and starts over; false: etcd under the lock.  */
  bool unlocked;
  char id[BLOCKS_ID_LEN + 1]; /* "" until read */
  bool validated;             /* the held blocks were checked by this process */
  bool refused;               /* the last error is a refusal of its own, not etcd's */
  /* What blocks_outside does next.  */
  bool need_validate;
  bool need_renew;    /* the liveness record, made or renewed with a claim */
  int64_t fold_lease; /* granted for the record a claim makes (0: none) */
  int64_t fold_t0;
  const struct policy_hca *need_hca;
  const struct policy_net *need_net;
  bool need_want;
  struct roce_addr want;
  /* The store's blocks as the last round saw them (copies).  */
  struct lease_block *held;
  size_t n_held;
  /* What the next round applies to the store.  */
  struct lease_block *pending; /* claimed or adopted in etcd */
  size_t n_pending;
  struct lease_block *stale; /* held here, no longer this node's in etcd */
  size_t n_stale;
  unsigned tries; /* transactions of the claim going on (its log line says) */
};

void blocks_ctx_clear (struct blocks_ctx *bc);

/* alloc_assign (alloc.h), and with `cluster` only inside this node's blocks:
 * the lowest free address of a held block; when none has one, a new block.
 * `want` must lie in a held block, or in a free one (then claimed); another
 * node's block is refused naming that node.  etcd unreachable: refused only
 * when a block is needed, or when the node's liveness lapsed.  With
 * bc->unlocked it returns BLOCKS_AGAIN instead of calling etcd.  */
int blocks_assign (struct blocks_ctx *bc, struct lease_store *s, struct lease_holder *h,
                   const struct policy_hca *hca, const struct policy_net *net, const char *ifname,
                   const struct roce_addr *want, alloc_alive_fn alive, void *arg,
                   struct roce_addr *out, roce_error_t *err);
/* The etcd part blocks_assign asked for, without the store's lock.  */
int blocks_outside (struct blocks_ctx *bc, roce_error_t *err);

/* `gc`'s cluster part: renew the liveness record, check the held blocks
 * against etcd, finish what intents say (adopt a claim whose answer was
 * lost, retry a release), keep cluster.reserve free addresses claimed per
 * subnet, give back blocks wholly free for cluster.release_after_s (here
 * first, then in etcd).  The store's lock is never held across etcd.  */
int blocks_gc (const struct roce_policy *p, FILE *out, roce_error_t *err);

/* `check`: one line (or a "cluster" member) naming the node, the blocks it
 * holds and whether etcd answers (GET /version).  A node-local policy
 * says so.  */
struct json_gen;
void blocks_check_text (const struct roce_policy *p, FILE *out);
void blocks_check_json (const struct roce_policy *p, struct json_gen *g);

/* The most blocks this node holds in net's subnet: cluster.max_blocks, by
 * default CLUSTER_ADDRS_PER_HCA addresses for each HCA of the subnet, in
 * blocks (at least 2).  */
unsigned blocks_max (const struct roce_policy *p, const struct policy_net *net);

/* The node's id (node.id in state_dir, "<id> <machine-id>"): read, made
 * when missing (`make`), made again when the file names another
 * machine-id or none.  With `make`, refused when this process cannot read
 * this machine's /etc/machine-id; without, "" for an id not this
 * machine's.  */
int blocks_node_id (const char *state_dir, bool make, char out[BLOCKS_ID_LEN + 1],
                    roce_error_t *err);

/* The pieces, for the unit tests and the blocks command.  */
struct roce_addr blocks_align (const struct policy_cluster *c, const struct roce_addr *addr);
/* The part of the block at `first` that lies in net's pool; false when none. */
bool blocks_usable (const struct policy_cluster *c, const struct policy_net *net,
                    const struct roce_addr *first, struct roce_addr *lo, struct roce_addr *hi);
char *blocks_key (const struct policy_cluster *c, const struct roce_cidr *subnet,
                  const struct roce_addr *first);
char *blocks_subnet_dir (const struct policy_cluster *c, const struct roce_cidr *subnet);
char *blocks_node_key (const struct policy_cluster *c, const char *node);
/* <prefix>nodes/<node>/blocks/<subnet>_<prefix>/<first>: the node's index
 * of its blocks (the block's value), written and deleted in the block's
 * own transactions: a node finds its blocks without the fleet's keys.  */
char *blocks_affinity_key (const struct policy_cluster *c, const char *node,
                           const struct roce_cidr *subnet, const struct roce_addr *first);
char *blocks_affinity_dir (const struct policy_cluster *c, const char *node);
/* Deletes the block and its index entry when the block's value is exactly
 * value and (rev > 0) its key is at that mod_revision: 1 done, 0 not
 * (another value or revision, or gone), < 0 etcd failed.  */
int blocks_delete (struct etcd_client *e, const struct policy_cluster *c, const char *node,
                   const struct roce_cidr *subnet, const struct roce_addr *first, const char *value,
                   int64_t rev, roce_error_t *err);
/* The subnet and first address of a key under <prefix>blocks/.  */
int blocks_key_parse (const struct policy_cluster *c, const char *key, struct roce_cidr *subnet,
                      struct roce_addr *first);
/* {"node":"<node>","id":"<id>","since":<unix>,"size":<block>}, one
 * serialization (a release compares the bytes); no id when id is NULL.  */
char *blocks_value (const char *node, const char *id, int64_t since, unsigned size);
/* *id gets NULL and *size 0 when a value has none.  */
int blocks_value_parse (const char *value, char **node, char **id, int64_t *since, unsigned *size,
                        roce_error_t *err);
/* Who holds a block, from its etcd value, for messages: never raw bytes
 * (NULL when unreadable).  */
char *blocks_value_node (const char *value, int64_t *since);
/* Whether value names this node (name and id).  */
bool blocks_value_is_mine (const struct policy_cluster *c, const char *id, const char *value);
/* Whether value names another node, or another id of this node's name (a
 * value of an older version, with no id, is not another's); unreadable: true.  */
bool blocks_value_is_other (const struct policy_cluster *c, const char *id, const char *value);
/* {"id":"<id>","node":"<node>"}: the liveness record's value.  */
char *blocks_liveness_value (const char *node, const char *id);
int blocks_liveness_parse (const char *value, char **node, char **id, roce_error_t *err);
struct lease_block *blocks_held (const struct lease_store *s, const struct roce_cidr *subnet,
                                 const struct roce_addr *addr);
size_t blocks_held_count (const struct lease_store *s, const struct lease_block *b);
void blocks_print (FILE *out, const char *verb, const struct lease_block *b, const char *tail);
bool blocks_same_subnet (const struct roce_cidr *a, const struct roce_cidr *b);
int blocks_etcd (struct blocks_ctx *bc, roce_error_t *err);

#endif
