/* Cluster addressing (policy `cluster`): each HCA's pool is the range of its
 * rail subnet that every node shares.  It is cut into aligned blocks of
 * cluster.block addresses; a node allocates only inside blocks it holds in
 * etcd, under the key
 *
 *   <prefix>blocks/<subnet, '/' as '_'>/<the block's aligned first address>
 *
 * (per subnet, not per HCA name: mlx5_0 on two nodes may be two rails), with
 * the value {"node":"<node>","since":<unix time>,"size":<block>}.  A block is claimed with
 * one transaction that succeeds only when the key does not exist, and given
 * back with one that deletes it only when it still holds that exact value.
 * The node's lease store (lease.h) keeps the blocks it holds, so a start
 * that finds a free address in one makes no etcd call at all.
 *
 * Without `cluster` every function here is the node-local store's own.  */
#ifndef ROCE_BLOCKS_H
#define ROCE_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "lease.h"
#include "policy.h"

struct etcd_client;

/* One start's (or command's) view: the etcd client opened on first need.  */
struct blocks_ctx
{
  const struct roce_policy *p;
  struct etcd_client *etcd;
};

void blocks_ctx_clear (struct blocks_ctx *bc);

/* lease_assign (lease.h), and with `cluster` only inside this node's blocks:
 * the lowest free address of a held block; when none has one, a new block
 * claimed synchronously.  `want` must lie in a held block, or in a free one
 * (then claimed); another node's block is refused naming that node.  etcd
 * unreachable: refused only when a block is needed.  */
int blocks_assign (struct blocks_ctx *bc, struct lease_store *s, struct lease_holder *h,
                   const struct policy_hca *hca, const char *ifname, bool has_want, uint32_t want,
                   lease_alive_fn alive, void *arg, uint32_t *out, roce_error_t *err);

/* `roce-hook blocks ...` (argv after "blocks"): exit 0, 2 cannot run.  */
int blocks_main (const char *config_path, int argc, char **argv, FILE *out, FILE *err_out);
/* `gc`'s cluster part: keep cluster.reserve free addresses claimed per
 * subnet, give back blocks wholly free for cluster.release_after_s, adopt
 * blocks etcd says this node holds that the store lost (a start killed
 * between the claim and its commit).  */
int blocks_gc (const struct roce_policy *p, FILE *out, roce_error_t *err);

/* `check`: one line (or a "cluster" member) naming the node, the blocks it
 * holds and whether etcd answers (GET /version).  A node-local policy
 * says so.  */
struct json_gen;
void blocks_check_text (const struct roce_policy *p, FILE *out);
void blocks_check_json (const struct roce_policy *p, struct json_gen *g);

/* The pieces, for the unit tests.  */
uint32_t blocks_align (const struct policy_cluster *c, uint32_t addr);
/* The part of the block at `first` that lies in hca's pool; false when none. */
bool blocks_usable (const struct policy_cluster *c, const struct policy_hca *hca, uint32_t first,
                    uint32_t *lo, uint32_t *hi);
char *blocks_key (const struct policy_cluster *c, const struct roce_cidr *subnet, uint32_t first);
/* The subnet and first address of a key under <prefix>blocks/.  */
int blocks_key_parse (const struct policy_cluster *c, const char *key, struct roce_cidr *subnet,
                      uint32_t *first);
/* {"node":"<node>","since":<unix>,"size":<block>}, one serialization (a
 * release compares the bytes).  *size gets 0 when a value has none.  */
char *blocks_value (const char *node, int64_t since, unsigned size);
int blocks_value_parse (const char *value, char **node, int64_t *since, unsigned *size,
                        roce_error_t *err);

#endif
