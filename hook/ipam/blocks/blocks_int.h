/* SPDX-License-Identifier: Apache-2.0 */
/* Private to blocks.c, blocks_claim.c and blocks_gc.c: what they share
 * beyond blocks.h.  */
#ifndef ROCE_BLOCKS_INT_H
#define ROCE_BLOCKS_INT_H

#include "ipam/blocks/blocks.h"

/* blocks.c */
struct roce_addr block_last (const struct policy_cluster *c, const struct roce_addr *first);
char *blocks_geometry_key (const struct policy_cluster *c, const struct roce_cidr *subnet);
char *blocks_geometry_value (unsigned block);
void block_list_add (struct lease_block **v, size_t *n, const struct lease_block *b);
void block_list_clear (struct lease_block **v, size_t *n);
/* liveness.json: this boot's, and not past its fresh_until.  */
bool blocks_liveness_fresh (const char *state_dir);
int blocks_liveness_write (const char *state_dir, int64_t until, roce_error_t *err);
char *blocks_intent_path (const char *state_dir, const struct lease_block *b, const char *kind);
/* "<kind> <pid> <rev> <value>": kind "claim" or "release", the writer's
 * pid, the block's revision (0: not known; intents of earlier versions have
 * none), its value.  */
int blocks_intent_write (const char *state_dir, const struct lease_block *b, const char *kind,
                         roce_error_t *err);
void blocks_intent_drop (const char *state_dir, const struct lease_block *b, const char *kind);

/* blocks_claim.c */
/* Renews the node's liveness record (a new etcd lease of liveness_ttl_s):
 * refused when another machine's id holds the node's name.  Then
 * liveness.json says until when.  */
int blocks_liveness_renew (struct blocks_ctx *bc, roce_error_t *err);
/* Checks bc->held against etcd: each block's value still ours (a missing
 * one is claimed again); the others go to bc->stale.  */
int blocks_validate (struct blocks_ctx *bc, roce_error_t *err);
/* Claims a free block of net's pool (not one of bc->held), into bc->pending.  */
int blocks_claim_any (struct blocks_ctx *bc, const struct policy_hca *hca,
                      const struct policy_net *net, roce_error_t *err);
/* Takes back b, whose key holds this node's value cur at mod_revision mod
 * and which the store lacks: written again (its index entry too) only at
 * that revision, so that etcd orders it against gc's delete of a block the
 * store gave up (which compares the revision the store knew).  1 adopted
 * (b->rev the new revision), 0 it changed meanwhile, < 0 etcd failed.  */
int blocks_adopt (struct blocks_ctx *bc, struct lease_block *b, const char *cur, int64_t mod,
                  roce_error_t *err);
/* Adds bc->pending to the store, drops bc->stale from it, and records the
 * revisions bc->held was seen at.  */
void blocks_apply (struct blocks_ctx *bc, struct lease_store *s);
/* The store's blocks into bc->held.  */
void blocks_snapshot (struct blocks_ctx *bc, const struct lease_store *s);

#endif
