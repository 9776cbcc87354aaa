/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster addressing's start path (blocks.h): an address from a held block
 * (no etcd), else a block claimed in etcd without the store's lock, at an
 * offset of the pool spread by the node's id, found from one transaction's
 * answer (its failure branch reads a page of the keys beside the one it
 * tried) or, when that page is full, from etcd's counts of where the pool
 * has room: the answers a claim reads do not grow with the blocks the
 * fleet holds, nor its transactions with where they lie.  And the node's
 * liveness and the check of its held blocks.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blocks_int.h"
#include "ipam/alloc.h"
#include "ipam/blocks/blocks.h"
#include "ipam/blocks/etcd.h"
#include "lib/log.h"
#include "lib/utils.h"

/* Keys read beside a failed try; tries before a full scan of the keys.  */
#define PAGE_KEYS 256
#define PROBES 16
#define WINDOW 512
/* Held blocks checked a transaction.  */
#define VALIDATE_BATCH 8

/* The keys a failed try reads beside it: its group, the keys that share
 * its text up to the last dot that leaves a few blocks in the group (its
 * /24 for blocks of up to 64 addresses, else its /16, else its /8).  etcd
 * 3.4 walks the whole interval of a range to count it, whatever its limit:
 * a range to the subnet's end costs etcd the keys of every node after the
 * tried one (16,000 on a full /16); a group costs at most 512 (blocks of
 * 128 in a /16), and its first PAGE_KEYS come back.  */
static int
group_dots (const struct policy_cluster *c)
{
  return c->block <= 64 ? 3 : c->block <= 16384 ? 2 : 1;
}

/* An IPv6 key (eight groups of four hex digits, blocks.c) groups by its
 * hex digits: those up to the one that leaves 64 to 1,024 blocks in the
 * group.  */
static unsigned
group_digits (const struct policy_cluster *c)
{
  unsigned bits = 0;
  while ((1u << bits) < c->block)
    bits++;
  return 32 - (bits + 6 + 3) / 4;
}

/* The addresses one group spans, in that family.  */
static roce_u128
group_span (const struct policy_cluster *c, int family)
{
  return family == AF_INET ? (roce_u128) 1 << (32 - 8 * group_dots (c))
                           : (roce_u128) 1 << (4 * (32 - group_digits (c)));
}

static char *
page_group (const struct policy_cluster *c, const char *key)
{
  int dots = group_dots (c);
  const char *ip = strrchr (key, '/'), *q;
  ip = ip ? ip + 1 : key;
  if (strchr (ip, ':'))
    {
      unsigned digits = group_digits (c);
      for (q = ip; *q && digits > 0; q++)
        if (*q != ':')
          digits--;
      return xstrndup (key, (size_t) (q - key));
    }
  for (q = ip; *q && dots > 0; q++)
    if (*q == '.' && --dots == 0)
      break;
  return xstrndup (key, (size_t) (q - key) + (*q ? 1 : 0));
}

static uint64_t
mix (uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static uint64_t
hash_str (const char *s, uint64_t salt)
{
  uint64_t h = 1469598103934665603ULL ^ salt;
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ULL;
  return mix (h);
}

/* The aligned blocks that meet net's pool: the first and how many (by
 * arithmetic: a /64 pool has 2^60 blocks of 16, never walked).  */
static void
pool_blocks (const struct policy_cluster *c, const struct policy_net *net, struct roce_addr *f0,
             roce_u128 *n)
{
  struct roce_addr last = blocks_align (c, &net->pool_last);
  *f0 = blocks_align (c, &net->pool_first);
  *n = addr_diff (&last, f0) / c->block + 1;
}

/* Block idx of the pool whose first is f0.  */
static struct roce_addr
block_at (const struct policy_cluster *c, const struct roce_addr *f0, roce_u128 idx)
{
  return addr_add (f0, idx * c->block);
}

static bool
in_list (const struct lease_block *v, size_t n, const struct roce_cidr *subnet,
         const struct roce_addr *first)
{
  for (size_t i = 0; i < n; i++)
    if (blocks_same_subnet (&v[i].subnet, subnet) && addr_eq (&v[i].first, first))
      return true;
  return false;
}

static bool
known (const struct blocks_ctx *bc, const struct roce_cidr *subnet, const struct roce_addr *first)
{
  return in_list (bc->held, bc->n_held, subnet, first)
         || in_list (bc->pending, bc->n_pending, subnet, first);
}

void
blocks_snapshot (struct blocks_ctx *bc, const struct lease_store *s)
{
  block_list_clear (&bc->held, &bc->n_held);
  for (size_t i = 0; i < s->n_blocks; i++)
    block_list_add (&bc->held, &bc->n_held, &s->blocks[i]);
}

void
blocks_apply (struct blocks_ctx *bc, struct lease_store *s)
{
  for (size_t k = 0; k < bc->n_stale; k++)
    for (size_t i = s->n_blocks; i > 0; i--)
      {
        struct lease_block *b = &s->blocks[i - 1];
        if (blocks_same_subnet (&b->subnet, &bc->stale[k].subnet)
            && addr_eq (&b->first, &bc->stale[k].first)
            && strcmp (b->value, bc->stale[k].value) == 0)
          {
            size_t used = blocks_held_count (s, b);
            if (used)
              roce_log (ROCE_LOG_ERR,
                        "block %s: etcd no longer gives it to this node; its %zu "
                        "address(es) in use stay until their containers stop, no new one is given",
                        b->value, used);
            lease_block_drop (s, i - 1);
          }
      }
  for (size_t k = 0; k < bc->n_pending; k++)
    {
      struct lease_block *b = blocks_held (s, &bc->pending[k].subnet, &bc->pending[k].first);
      if (b == NULL)
        {
          b = lease_block_add (s, &bc->pending[k].subnet, &bc->pending[k].first,
                               &bc->pending[k].last, bc->pending[k].since, bc->pending[k].value);
          b->rev = bc->pending[k].rev;
          b->static_only = bc->pending[k].static_only;
        }
      else if (strcmp (b->value, bc->pending[k].value) == 0 && bc->pending[k].rev > b->rev)
        b->rev = bc->pending[k].rev;
    }
  /* The revisions the check of the held blocks read (never an older one). */
  for (size_t k = 0; k < bc->n_held; k++)
    {
      struct lease_block *b = blocks_held (s, &bc->held[k].subnet, &bc->held[k].first);
      if (b && addr_eq (&b->first, &bc->held[k].first) && strcmp (b->value, bc->held[k].value) == 0
          && bc->held[k].rev > b->rev)
        b->rev = bc->held[k].rev;
    }
}

int
blocks_adopt (struct blocks_ctx *bc, struct lease_block *b, const char *cur, int64_t mod,
              roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *key = blocks_key (c, &b->subnet, &b->first);
  cleanup_free char *aff = blocks_affinity_key (c, c->node, &b->subnet, &b->first);
  struct etcd_cmp cmps[] = { { .key = key, .value = cur }, { .key = key, .mod = mod } };
  struct etcd_op put[] = { { .kind = ETCD_OP_PUT, .key = key, .value = cur },
                           { .kind = ETCD_OP_PUT, .key = aff, .value = cur } };
  struct etcd_txn t = { 0 };
  int r = etcd_txn (bc->etcd, cmps, mod > 0 ? 2 : 1, put, 2, NULL, 0, &t, err);
  if (r == 1)
    b->rev = t.revision;
  etcd_txn_clear (&t);
  return r;
}

static size_t
held_in_subnet (const struct lease_store *s, const struct roce_cidr *subnet, bool static_only)
{
  size_t n = 0;
  for (size_t i = 0; i < s->n_blocks; i++)
    n += blocks_same_subnet (&s->blocks[i].subnet, subnet)
         && (! static_only || s->blocks[i].static_only);
  return n;
}

/* A roce.io/ip outside the node's blocks claims a block for itself alone:
 * a few per node (cluster.max_static_blocks), each given back as soon as it
 * is empty, so that no tenant holds the pool a block per address.  */
static int
static_cap_refusal (const struct roce_policy *p, const struct policy_hca *hca,
                    const struct roce_addr *want, size_t held, roce_error_t *err)
{
  char w[ADDR_STR_MAX];
  cleanup_free char *what
      = xasprintf ("address %s of %s (roce.io/ip)", addr_format (want, w), hca->name);
  cleanup_free char *exp = xasprintf ("at most %u block(s) per node claimed for roce.io/ip "
                                      "addresses outside its blocks (cluster.max_static_blocks)",
                                      p->cluster->max_static_blocks);
  cleanup_free char *found = xasprintf ("%zu held for other containers' roce.io/ip", held);
  return roce_error_refuse (err, what, exp, found,
                            "pick an address in a block this node holds (roce-hook blocks), omit "
                            "roce.io/ip, or wait for those containers to stop");
}

static int
cap_refusal (const struct roce_policy *p, const struct policy_hca *hca,
             const struct policy_net *net, size_t held, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("address blocks of %s", hca->name);
  cleanup_free char *exp
      = xasprintf ("at most %u blocks per node (cluster.max_blocks%s)", blocks_max (p, net),
                   p->cluster->max_blocks ? "" : ", its default for the HCAs of the subnet");
  cleanup_free char *found = xasprintf ("%zu held, no free address in them", held);
  return roce_error_refuse (err, what, exp, found,
                            "stop containers of this node, or raise cluster.max_blocks in the "
                            "node's policy (the pool is shared by every node)");
}

static int
etcd_refusal (roce_error_t *err, const struct policy_hca *hca, const struct policy_net *net,
              const char *need)
{
  char sn[CIDR_STR_MAX];
  return roce_error_wrap (err, "address block of %s (%s) in etcd, %s", hca->name,
                          cidr_format (&net->subnet, sn), need);
}

/* ---- liveness, and the check of the held blocks ---------------------------------------- */

static int
name_taken (const struct policy_cluster *c, const char *id, const char *value, roce_error_t *err)
{
  cleanup_error roce_error_t perr = NULL;
  cleanup_free char *node = NULL, *other = NULL;
  cleanup_free char *what = xasprintf ("node name %s (cluster.node)", c->node);
  cleanup_free char *exp = xasprintf ("this machine's (node id %s)", id);
  cleanup_free char *found = NULL;
  if (blocks_liveness_parse (value, &node, &other, &perr) < 0)
    found = xstrdup ("an unreadable liveness record of another machine");
  else
    found = xasprintf ("another machine's, alive (node id %s)", other);
  return roce_error_refuse (err, what, exp, found,
                            "give each machine its own cluster.node (or host name); when that "
                            "machine is gone, its record lapses after cluster.liveness_ttl_s");
}

static int renew_with (struct blocks_ctx *bc, int64_t lease, int64_t t0, roce_error_t *err);

int
blocks_liveness_renew (struct blocks_ctx *bc, roce_error_t *err)
{
  int64_t t0 = (int64_t) time (NULL), lease = 0;
  if (etcd_lease_grant (bc->etcd, bc->p->cluster->liveness_ttl_s, &lease, err) < 0)
    return -1;
  return renew_with (bc, lease, t0, err);
}

/* The record on a lease granted at t0.  */
static int
renew_with (struct blocks_ctx *bc, int64_t lease, int64_t t0, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *key = blocks_node_key (c, c->node);
  cleanup_free char *value = blocks_liveness_value (c->node, bc->id);
  struct etcd_txn t = { 0 };
  int r;

  /* Ours: put on the new lease; absent: made; another machine's: refused.
   * Two starts of this node at once may both find it absent: the one that
   * loses finds it ours, and goes round once more.  */
  for (int round = 0;; round++)
    {
      struct etcd_cmp cmp = { .key = key, .value = value };
      struct etcd_cmp absent = { .key = key };
      struct etcd_op put = { .kind = ETCD_OP_PUT, .key = key, .value = value, .lease = lease };
      struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = key };
      bool exists, mine;
      if ((r = etcd_txn (bc->etcd, &cmp, 1, &put, 1, &get, 1, &t, err)) < 0)
        return -1;
      if (r == 0 && t.ranges[0].n == 0)
        {
          etcd_txn_clear (&t);
          if ((r = etcd_txn (bc->etcd, &absent, 1, &put, 1, &get, 1, &t, err)) < 0)
            return -1;
        }
      if (r == 1)
        {
          etcd_txn_clear (&t);
          break;
        }
      exists = t.ranges[0].n > 0;
      mine = exists && strcmp (t.ranges[0].v[0].value, value) == 0;
      if (! (exists && ! mine) && round < 3)
        {
          etcd_txn_clear (&t);
          continue;
        }
      {
        int ret;
        bc->refused = true;
        ret = name_taken (c, bc->id, exists ? t.ranges[0].v[0].value : "", err);
        etcd_txn_clear (&t);
        return ret;
      }
    }
  return blocks_liveness_write (bc->p->state_dir, t0 + c->liveness_ttl_s - 1, err);
}

int
blocks_validate (struct blocks_ctx *bc, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;

  if (blocks_liveness_renew (bc, err) < 0)
    return -1;
  for (size_t i = 0; i < bc->n_held; i += VALIDATE_BATCH)
    {
      size_t n = bc->n_held - i < VALIDATE_BATCH ? bc->n_held - i : VALIDATE_BATCH;
      struct etcd_op ops[VALIDATE_BATCH];
      char *keys[VALIDATE_BATCH];
      struct etcd_txn t = { 0 };
      int r;
      for (size_t k = 0; k < n; k++)
        {
          keys[k] = blocks_key (c, &bc->held[i + k].subnet, &bc->held[i + k].first);
          ops[k] = (struct etcd_op){ .kind = ETCD_OP_RANGE, .key = keys[k] };
        }
      r = etcd_txn (bc->etcd, NULL, 0, ops, n, NULL, 0, &t, err);
      for (size_t k = 0; k < n && r >= 0; k++)
        {
          const struct lease_block *b = &bc->held[i + k];
          const struct etcd_kvs *kv = &t.ranges[k];
          /* A block the store holds under another id is a state_dir of
           * another machine's (restored or cloned): never used, nor put
           * back into etcd under that id.  */
          if (blocks_value_is_other (c, bc->id, b->value))
            {
              roce_log (ROCE_LOG_ERR,
                        "block %s: held in this state_dir under another node id (a state_dir "
                        "restored or cloned from another machine): not used; once that machine "
                        "is gone, `roce-hook blocks release --node %s` frees it",
                        keys[k], c->node);
              block_list_add (&bc->stale, &bc->n_stale, b);
              continue;
            }
          if (kv->n == 1 && strcmp (kv->v[0].value, b->value) == 0)
            {
              bc->held[i + k].rev = kv->v[0].mod_revision;
              continue;
            }
          if (kv->n == 0)
            {
              /* Freed meanwhile (a forced release): ours again only if
               * nobody claimed it.  */
              struct etcd_cmp absent = { .key = keys[k] };
              cleanup_free char *aff = blocks_affinity_key (c, c->node, &b->subnet, &b->first);
              struct etcd_op put[] = { { .kind = ETCD_OP_PUT, .key = keys[k], .value = b->value },
                                       { .kind = ETCD_OP_PUT, .key = aff, .value = b->value } };
              struct etcd_txn t2 = { 0 };
              r = etcd_txn (bc->etcd, &absent, 1, put, 2, NULL, 0, &t2, err);
              if (r == 1)
                bc->held[i + k].rev = t2.revision;
              etcd_txn_clear (&t2);
              if (r == 1)
                {
                  roce_log (ROCE_LOG_WARN, "block %s was missing from etcd: claimed again",
                            keys[k]);
                  continue;
                }
              if (r < 0)
                break;
            }
          roce_log (ROCE_LOG_ERR, "block %s: etcd no longer gives it to this node", keys[k]);
          block_list_add (&bc->stale, &bc->n_stale, b);
        }
      etcd_txn_clear (&t);
      for (size_t k = 0; k < n; k++)
        free (keys[k]);
      if (r < 0)
        return -1;
    }
  bc->validated = true;
  return 0;
}

/* ---- claims ------------------------------------------------------------------------------ */

static int
size_refusal (const struct policy_cluster *c, const char *geo_key, const char *found_value,
              roce_error_t *err)
{
  cleanup_free char *exp
      = xasprintf ("blocks of %u, as every node of the cluster cuts them", c->block);
  cleanup_free char *found = xasprintf (
      "%s says %s", geo_key,
      str_is_printable (found_value) && strlen (found_value) < 64 ? found_value : "something else");
  return roce_error_refuse (err, "cluster.block", exp, found,
                            "give every node the same cluster.block (another size needs another "
                            "cluster.etcd.prefix or another subnet)");
}

struct scan
{
  const struct policy_cluster *c;
  struct roce_cidr subnet;
  const char *bad;
  char *bad_key;
  struct roce_addr *taken;
  size_t n_taken;
};

static int
scan_kv (const struct etcd_kv *kv, void *arg)
{
  struct scan *sc = arg;
  struct roce_cidr sub;
  struct roce_addr first;
  if (blocks_key_parse (sc->c, kv->key, &sub, &first) < 0
      || ! blocks_same_subnet (&sub, &sc->subnet))
    return 0;
  if (kv->value && kv->value[0])
    {
      cleanup_error roce_error_t verr = NULL;
      cleanup_free char *node = NULL, *id = NULL;
      int64_t t;
      unsigned size = 0;
      if (blocks_value_parse (kv->value, &node, &id, &t, &size, &verr) == 0 && size
          && size != sc->c->block && sc->bad_key == NULL)
        sc->bad_key = xstrdup (kv->key);
    }
  sc->taken = xrealloc (sc->taken, (sc->n_taken + 1) * sizeof (*sc->taken));
  sc->taken[sc->n_taken++] = first;
  return 0;
}

/* The subnet's geometry key, made by the first claim of the cluster (after
 * a look at every block already there: none of another size).  */
static int
geometry_make (struct blocks_ctx *bc, const struct policy_net *net, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *gk = blocks_geometry_key (c, &net->subnet);
  cleanup_free char *gv = blocks_geometry_value (c->block);
  cleanup_free char *dir = blocks_subnet_dir (c, &net->subnet);
  struct scan sc = { .c = c, .subnet = net->subnet };
  struct etcd_cmp absent = { .key = gk };
  struct etcd_op put = { .kind = ETCD_OP_PUT, .key = gk, .value = gv };
  struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = gk };
  struct etcd_txn t = { 0 };
  int r;

  r = etcd_range_each (bc->etcd, dir, false, scan_kv, &sc, err);
  free (sc.taken);
  if (r < 0)
    return -1;
  if (sc.bad_key)
    {
      cleanup_free char *k = sc.bad_key;
      cleanup_free char *exp = xasprintf ("blocks of %u (cluster.block)", c->block);
      cleanup_free char *found = xasprintf ("%s, a block of another size", k);
      bc->refused = true;
      return roce_error_refuse (err, "cluster.block", exp, found,
                                "give every node the same cluster.block; release the other blocks "
                                "first (roce-hook blocks release --node N)");
    }
  if ((r = etcd_txn (bc->etcd, &absent, 1, &put, 1, &get, 1, &t, err)) < 0)
    return -1;
  if (r == 0 && t.ranges[0].n && strcmp (t.ranges[0].v[0].value, gv) != 0)
    {
      bc->refused = true;
      r = size_refusal (c, gk, t.ranges[0].v[0].value, err);
    }
  etcd_txn_clear (&t);
  return r < 0 ? -1 : 0;
}

static unsigned
value_size (const char *value)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *node = NULL, *id = NULL;
  int64_t t;
  unsigned size = 0;
  return blocks_value_parse (value, &node, &id, &t, &size, &err) == 0 ? size : 0;
}

enum
{
  TRY_TAKEN = 0,
  TRY_CLAIMED = 1,
  TRY_NO_GEOMETRY = 2,
  TRY_NODE_EXISTS = 3,
  TRY_AGAIN = 4, /* the block changed between the read and the adoption */
};

/* One transaction on the block at first: put it when it does not exist
 * and the geometry is ours; else read it, the geometry, and the keys of
 * its page_group (into t->ranges[2]).  */
static int
claim_try (struct blocks_ctx *bc, const struct policy_hca *hca, const struct policy_net *net,
           const struct roce_addr *first, bool static_only, struct etcd_txn *t, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *key = blocks_key (c, &net->subnet, first);
  cleanup_free char *gk = blocks_geometry_key (c, &net->subnet);
  cleanup_free char *gv = blocks_geometry_value (c->block);
  cleanup_free char *group = page_group (c, key);
  cleanup_free char *end = etcd_prefix_end (group);
  cleanup_free char *value = blocks_value (c->node, bc->id, (int64_t) time (NULL), c->block);
  struct lease_block b = { .subnet = net->subnet,
                           .first = *first,
                           .last = block_last (c, first),
                           .since = (int64_t) time (NULL),
                           .value = value,
                           .static_only = static_only };
  cleanup_free char *aff = blocks_affinity_key (c, c->node, &net->subnet, first);
  /* A fresh node's liveness record is made in the same transaction (its
   * lease granted before): one write less for its first claim.  */
  cleanup_free char *nk = blocks_node_key (c, c->node);
  cleanup_free char *nv = blocks_liveness_value (c->node, bc->id);
  bool fold = bc->fold_lease != 0;
  struct etcd_cmp cmps[] = { { .key = key }, { .key = gk, .value = gv }, { .key = nk } };
  struct etcd_op put[]
      = { { .kind = ETCD_OP_PUT, .key = key, .value = value },
          { .kind = ETCD_OP_PUT, .key = aff, .value = value },
          { .kind = ETCD_OP_PUT, .key = nk, .value = nv, .lease = bc->fold_lease } };
  struct etcd_op fail[] = {
    { .kind = ETCD_OP_RANGE, .key = key },
    { .kind = ETCD_OP_RANGE, .key = gk },
    { .kind = ETCD_OP_RANGE,
      .key = group,
      .range_end = end,
      .limit = PAGE_KEYS,
      .keys_only = true },
    { .kind = ETCD_OP_RANGE, .key = nk, .keys_only = true },
  };
  char a[ADDR_STR_MAX], z[ADDR_STR_MAX];
  int r;

  bc->tries++;
  /* Before the claim: a lost answer leaves a block gc adopts.  */
  if (blocks_intent_write (bc->p->state_dir, &b, "claim", err) < 0)
    return -1;
  if ((r = etcd_txn (bc->etcd, cmps, fold ? 3 : 2, put, fold ? 3 : 2, fail, fold ? 4 : 3, t, err))
      < 0)
    return -1;
  if (r == 1)
    {
      b.rev = t->revision;
      if (fold)
        {
          bc->fold_lease = 0;
          bc->validated = true;
          if (blocks_liveness_write (bc->p->state_dir, bc->fold_t0 + c->liveness_ttl_s - 1, err)
              < 0)
            return -1;
        }
      block_list_add (&bc->pending, &bc->n_pending, &b);
      roce_log (ROCE_LOG_INFO, "claimed block %s-%s of %s for node %s (try %u)",
                addr_format (first, a), addr_format (&b.last, z), hca->name, c->node, bc->tries);
      return TRY_CLAIMED;
    }
  if (t->ranges[1].n == 0)
    return TRY_NO_GEOMETRY;
  if (strcmp (t->ranges[1].v[0].value, gv) != 0)
    {
      bc->refused = true;
      return size_refusal (c, gk, t->ranges[1].v[0].value, err);
    }
  blocks_intent_drop (bc->p->state_dir, &b, "claim");
  if (fold && t->ranges[3].n > 0)
    return TRY_NODE_EXISTS;
  if (t->ranges[0].n && blocks_value_is_mine (c, bc->id, t->ranges[0].v[0].value)
      && value_size (t->ranges[0].v[0].value) == c->block)
    {
      /* Claimed by this node before (a start killed before its commit), or
       * a block gc of this node is giving back: adopted by writing it again
       * at the revision read, so that gc's delete (at the revision its
       * store knew) no longer matches, or this adoption does not.  */
      b.value = t->ranges[0].v[0].value;
      r = blocks_adopt (bc, &b, b.value, t->ranges[0].v[0].mod_revision, err);
      if (r < 0)
        return -1;
      if (r == 0)
        return TRY_AGAIN;
      block_list_add (&bc->pending, &bc->n_pending, &b);
      roce_log (ROCE_LOG_INFO, "block %s: adopted, claimed by this node before", key);
      return TRY_CLAIMED;
    }
  return TRY_TAKEN;
}

/* The node's record exists (not a fresh node): renewed on the lease
 * granted, then the claims go on without it.  */
static int
node_exists (struct blocks_ctx *bc, roce_error_t *err)
{
  int64_t lease = bc->fold_lease;
  bc->fold_lease = 0;
  if (renew_with (bc, lease, bc->fold_t0, err) < 0)
    return -1;
  bc->validated = true;
  return 0;
}

static int
cmp_kv_key (const void *k, const void *kv)
{
  return strcmp (k, ((const struct etcd_kv *) kv)->key);
}

/* A block after index cur that the page read with the failed try shows
 * free: keys of the tried one's group in lexical order, all of them up to
 * the last (all when there are no more).  */
static bool
next_from_page (const struct blocks_ctx *bc, const struct policy_net *net,
                const struct roce_addr *f0, roce_u128 nb, roce_u128 cur, const struct etcd_txn *t,
                roce_u128 *next)
{
  const struct policy_cluster *c = bc->p->cluster;
  const struct etcd_kvs *page = &t->ranges[2];
  struct roce_addr tb = block_at (c, f0, cur);
  cleanup_free char *tried = blocks_key (c, &net->subnet, &tb);
  cleanup_free char *group = page_group (c, tried);
  size_t glen = strlen (group);
  const char *last = t->more[2] && page->n ? page->v[page->n - 1].key : NULL;
  roce_u128 w = nb < WINDOW ? nb : WINDOW;

  for (roce_u128 step = 1; step < w; step++)
    {
      roce_u128 idx = (cur + step) % nb;
      struct roce_addr g = block_at (c, f0, idx), lo, hi;
      cleanup_free char *k = NULL;
      if (known (bc, &net->subnet, &g) || ! blocks_usable (c, net, &g, &lo, &hi))
        continue;
      k = blocks_key (c, &net->subnet, &g);
      if (strncmp (k, group, glen) != 0 || (last && strcmp (k, last) > 0))
        continue;
      if (bsearch (k, page->v, page->n, sizeof (*page->v), cmp_kv_key) == NULL)
        {
          *next = idx;
          return true;
        }
    }
  return false;
}

/* ---- where the pool has room ------------------------------------------------------ */

/* A failed try whose group is full says nothing of the rest of the pool: a
 * pool held from its start (older versions claimed lowest-first) took a
 * fresh node one transaction per full group it landed on.  Then the pool's
 * groups, in their keys' order, are counted in runs (a read-only
 * transaction of count_only ranges: etcd walks the keys and answers
 * numbers), the run to go on in drawn by its room (claimers at once spread
 * over it) until ROOM_KEYS groups are left, whose keys are read: a free
 * block of theirs.  A /16 of blocks of 4 (256 groups) takes two reads
 * whatever the layout; a pool of more than ROOM_GROUPS_MAX groups is tried
 * at random as before.  */
#define ROOM_RUNS ETCD_TXN_MAX
#define ROOM_KEYS 8
#define ROOM_GROUPS_MAX 16384
#define ROOM_SEARCHES 3

enum
{
  ROOM_FOUND = 1,
  ROOM_FULL = 0,    /* etcd counts every block of the pool held */
  ROOM_UNKNOWN = 2, /* none seen (a race, or too many groups to count) */
};

struct group
{
  char *prefix;   /* page_group's */
  uint64_t first; /* the index of its first block in the pool */
  uint64_t n;     /* its blocks in the pool */
};

static int
cmp_group (const void *x, const void *y)
{
  return strcmp (((const struct group *) x)->prefix, ((const struct group *) y)->prefix);
}

static void
groups_free (struct group *g, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (g[i].prefix);
  free (g);
}

/* The pool's groups in their keys' order; 0 when there are too many (a
 * /64 pool's: tried at random, where a collision is as unlikely as the pool
 * is wide).  */
static size_t
pool_groups (const struct policy_cluster *c, const struct policy_net *net,
             const struct roce_addr *f0, roce_u128 nb, struct group **out)
{
  roce_u128 span = group_span (c, f0->family), per = span / c->block;
  size_t n = 0;
  struct group *g;

  for (roce_u128 i = 0; i < nb && n <= ROOM_GROUPS_MAX; n++)
    i += per - ((f0->v + i * c->block) % span) / c->block;
  if (n > ROOM_GROUPS_MAX)
    return 0;
  g = xmalloc0 (n * sizeof (*g));
  n = 0;
  for (roce_u128 i = 0; i < nb; n++)
    {
      struct roce_addr a = block_at (c, f0, i);
      cleanup_free char *key = blocks_key (c, &net->subnet, &a);
      roce_u128 k = per - (a.v % span) / c->block;
      g[n] = (struct group){ .prefix = page_group (c, key),
                             .first = (uint64_t) i,
                             .n = (uint64_t) (k < nb - i ? k : nb - i) };
      i += g[n].n;
    }
  qsort (g, n, sizeof (*g), cmp_group);
  *out = g;
  return n;
}

/* Which of runs (whose rooms are room[]) the draw rnd takes.  */
static size_t
draw (const uint64_t *room, size_t runs, uint64_t total, uint64_t rnd)
{
  uint64_t pick = rnd % total;
  size_t r = 0;
  while (r + 1 < runs && pick >= room[r])
    pick -= room[r++];
  return r;
}

/* Counts groups [*lo, *hi) in runs and narrows them to a run with room.  */
static int
room_count (struct blocks_ctx *bc, const struct group *g, size_t *lo, size_t *hi, uint64_t rnd,
            roce_error_t *err)
{
  size_t n = *hi - *lo, per = (n + ROOM_RUNS - 1) / ROOM_RUNS, runs = (n + per - 1) / per;
  struct etcd_op ops[ROOM_RUNS];
  char *ends[ROOM_RUNS];
  uint64_t room[ROOM_RUNS], total = 0;
  struct etcd_txn t = { 0 };
  int r;

  for (size_t k = 0; k < runs; k++)
    {
      size_t a = *lo + k * per, b = a + per < *hi ? a + per : *hi;
      ends[k] = etcd_prefix_end (g[b - 1].prefix);
      ops[k] = (struct etcd_op){
        .kind = ETCD_OP_RANGE, .key = g[a].prefix, .range_end = ends[k], .count_only = true
      };
    }
  r = etcd_txn (bc->etcd, NULL, 0, ops, runs, NULL, 0, &t, err);
  for (size_t k = 0; k < runs; k++)
    {
      size_t a = *lo + k * per, b = a + per < *hi ? a + per : *hi;
      uint64_t cap = 0;
      for (size_t i = a; i < b; i++)
        cap += g[i].n;
      room[k] = r >= 0 && (uint64_t) t.count[k] < cap ? cap - (uint64_t) t.count[k] : 0;
      total += room[k];
      free (ends[k]);
    }
  etcd_txn_clear (&t);
  if (r < 0)
    return -1;
  if (total == 0)
    return ROOM_FULL;
  {
    size_t k = draw (room, runs, total, rnd);
    *lo += k * per;
    *hi = *lo + per < *hi ? *lo + per : *hi;
  }
  return ROOM_FOUND;
}

/* A free block of groups [lo, hi) (at most ROOM_KEYS), from their keys.  */
static int
room_keys (struct blocks_ctx *bc, const struct policy_net *net, const struct roce_addr *f0,
           const struct group *g, size_t lo, size_t hi, uint64_t rnd, roce_u128 *out,
           roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  struct etcd_op ops[ROOM_KEYS];
  char *ends[ROOM_KEYS];
  struct etcd_txn t = { 0 };
  uint64_t *free_idx = NULL;
  size_t n_free = 0, n = hi - lo;
  int r;

  for (size_t k = 0; k < n; k++)
    {
      ends[k] = etcd_prefix_end (g[lo + k].prefix);
      ops[k] = (struct etcd_op){ .kind = ETCD_OP_RANGE,
                                 .key = g[lo + k].prefix,
                                 .range_end = ends[k],
                                 .limit = PAGE_KEYS,
                                 .keys_only = true };
    }
  r = etcd_txn (bc->etcd, NULL, 0, ops, n, NULL, 0, &t, err);
  for (size_t k = 0; k < n && r >= 0; k++)
    {
      const struct etcd_kvs *page = &t.ranges[k];
      const char *last = t.more[k] && page->n ? page->v[page->n - 1].key : NULL;
      for (uint64_t i = g[lo + k].first; i < g[lo + k].first + g[lo + k].n; i++)
        {
          struct roce_addr a = block_at (c, f0, i);
          cleanup_free char *key = NULL;
          if (known (bc, &net->subnet, &a))
            continue;
          key = blocks_key (c, &net->subnet, &a);
          if ((last && strcmp (key, last) > 0)
              || bsearch (key, page->v, page->n, sizeof (*page->v), cmp_kv_key))
            continue;
          free_idx = xrealloc (free_idx, (n_free + 1) * sizeof (*free_idx));
          free_idx[n_free++] = i;
        }
    }
  for (size_t k = 0; k < n; k++)
    free (ends[k]);
  etcd_txn_clear (&t);
  if (r >= 0 && n_free)
    *out = free_idx[rnd % n_free];
  free (free_idx);
  return r < 0 ? -1 : n_free ? ROOM_FOUND : ROOM_UNKNOWN;
}

/* A free block of the pool by etcd's counts (above): ROOM_FOUND (*out its
 * index), ROOM_FULL, ROOM_UNKNOWN, or < 0 etcd failed.  */
static int
room_find (struct blocks_ctx *bc, const struct policy_net *net, const struct roce_addr *f0,
           roce_u128 nb, uint64_t seed, roce_u128 *out, roce_error_t *err)
{
  struct group *g = NULL;
  size_t ng = pool_groups (bc->p->cluster, net, f0, nb, &g), lo = 0, hi = ng;
  uint64_t rnd = mix (hash_str (bc->id, seed) ^ (uint64_t) time (NULL));
  int r = ROOM_UNKNOWN;

  for (int level = 0; ng > 0; level++)
    {
      rnd = mix (rnd + 1);
      if (hi - lo <= ROOM_KEYS)
        {
          r = room_keys (bc, net, f0, g, lo, hi, rnd, out, err);
          break;
        }
      r = room_count (bc, g, &lo, &hi, rnd, err);
      if (r != ROOM_FOUND)
        {
          /* Room counted in a run and none in its parts: a race.  */
          if (r == ROOM_FULL && level > 0)
            r = ROOM_UNKNOWN;
          break;
        }
    }
  groups_free (g, ng);
  return r;
}

static int
exhausted (struct blocks_ctx *bc, const struct policy_hca *hca, const struct policy_net *net,
           size_t taken, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *pool = policy_net_pool_text (net);
  cleanup_free char *what = xasprintf ("address blocks of %s", hca->name);
  cleanup_free char *exp = xasprintf ("a free block of %u in %s", c->block, pool);
  cleanup_free char *found = xasprintf ("all %zu held (roce-hook blocks --all lists them)", taken);
  cleanup_free char *fix
      = xasprintf ("stop containers, free the blocks of nodes that are gone "
                   "(roce-hook blocks release --node N), or widen hcas.%s.pool%s",
                   hca->name, net != &hca->net[0] ? "6" : "");
  return roce_error_refuse (err, what, exp, found, fix);
}

static int
cmp_addr (const void *x, const void *y)
{
  return addr_cmp (x, y);
}

int
blocks_claim_any (struct blocks_ctx *bc, const struct policy_hca *hca, const struct policy_net *net,
                  roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  struct roce_addr f0;
  roce_u128 nb, cur;
  uint64_t salt;
  bool geometry_made = false;
  int searches = 0;

  pool_blocks (c, net, &f0, &nb);
  bc->tries = 0;
  /* Each node starts where its id says: claimers at once spread over the
   * pool instead of racing for its first block.  */
  salt = ((uint64_t) (net->subnet.addr.v ^ net->subnet.addr.v >> 64) << 8) | net->subnet.prefix;
  cur = hash_str (bc->id, salt) % nb;
  for (int probe = 0; probe < PROBES; probe++)
    {
      struct etcd_txn t = { 0 };
      struct roce_addr g = block_at (c, &f0, cur), lo, hi;
      roce_u128 next = 0;
      bool found;
      int r;
      if (known (bc, &net->subnet, &g) || ! blocks_usable (c, net, &g, &lo, &hi))
        {
          cur = (cur + 1) % nb;
          continue;
        }
      r = claim_try (bc, hca, net, &g, false, &t, err);
      if (r == TRY_NODE_EXISTS)
        {
          etcd_txn_clear (&t);
          if (node_exists (bc, err) < 0)
            return -1;
          probe--;
          continue;
        }
      if (r == TRY_AGAIN)
        {
          etcd_txn_clear (&t);
          continue;
        }
      if (r == TRY_NO_GEOMETRY && ! geometry_made)
        {
          etcd_txn_clear (&t);
          if (geometry_make (bc, net, err) < 0)
            return -1;
          geometry_made = true;
          probe--;
          continue;
        }
      if (r < 0 || r == TRY_CLAIMED || r == TRY_NO_GEOMETRY)
        {
          etcd_txn_clear (&t);
          return r < 0              ? -1
                 : r == TRY_CLAIMED ? 0
                                    : roce_error_make (err, EAGAIN, "geometry key vanished");
        }
      found = next_from_page (bc, net, &f0, nb, cur, &t, &next);
      etcd_txn_clear (&t);
      if (found)
        cur = next;
      else if (searches < ROOM_SEARCHES
               && (r = room_find (bc, net, &f0, nb, salt + (uint64_t) searches++, &next, err))
                      != ROOM_UNKNOWN)
        {
          if (r < 0)
            return -1;
          if (r == ROOM_FULL)
            break; /* the scan below tells, or finds what went free */
          cur = next;
        }
      else
        cur = hash_str (bc->id, salt + (uint64_t) probe + 1 + (uint64_t) time (NULL)) % nb;
    }
  /* A pool nearly full: one look at all its keys, then the blocks from cur
   * on; past as many as are taken or known (and a window for the claims
   * of others meanwhile) one is free, if the pool has one: a /64 pool is
   * never walked whole.  */
  {
    cleanup_free char *dir = blocks_subnet_dir (c, &net->subnet);
    struct scan sc = { .c = c, .subnet = net->subnet };
    size_t taken;
    roce_u128 bound;
    int again = 0;
    if (etcd_range_each (bc->etcd, dir, true, scan_kv, &sc, err) < 0)
      {
        free (sc.taken);
        return -1;
      }
    if (sc.n_taken > 1)
      qsort (sc.taken, sc.n_taken, sizeof (*sc.taken), cmp_addr);
    taken = sc.n_taken;
    bound = (roce_u128) sc.n_taken + bc->n_held + bc->n_pending + WINDOW;
    if (bound > nb)
      bound = nb;
    for (roce_u128 i = 0; i < bound; i++)
      {
        roce_u128 idx = (cur + i) % nb;
        struct roce_addr g = block_at (c, &f0, idx), lo, hi;
        struct etcd_txn t = { 0 };
        int r;
        if (known (bc, &net->subnet, &g) || ! blocks_usable (c, net, &g, &lo, &hi)
            || (sc.n_taken && bsearch (&g, sc.taken, sc.n_taken, sizeof (*sc.taken), cmp_addr)))
          continue;
        r = claim_try (bc, hca, net, &g, false, &t, err);
        etcd_txn_clear (&t);
        if (r == TRY_AGAIN && again++ < PROBES)
          {
            i--;
            continue;
          }
        if (r == TRY_NODE_EXISTS)
          {
            if (node_exists (bc, err) < 0)
              {
                free (sc.taken);
                return -1;
              }
            i--;
            continue;
          }
        if (r < 0)
          {
            free (sc.taken);
            return -1;
          }
        if (r == TRY_CLAIMED)
          {
            free (sc.taken);
            return 0;
          }
        taken++;
      }
    free (sc.taken);
    {
      bc->refused = true;
      return exhausted (bc, hca, net, taken, err);
    }
  }
}

/* The block of want: claimed now; another node's is refused naming it.  */
static int
claim_for (struct blocks_ctx *bc, const struct policy_hca *hca, const struct policy_net *net,
           const struct roce_addr *want, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  struct roce_addr first = blocks_align (c, want), last = block_last (c, &first);
  char a[ADDR_STR_MAX], b[ADDR_STR_MAX], w[ADDR_STR_MAX], since[32];
  struct etcd_txn t = { 0 };
  int r;

  bc->tries = 0;
  for (int round = 0; round < 3; round++)
    {
      r = claim_try (bc, hca, net, &first, true, &t, err);
      if (r == TRY_NODE_EXISTS || r == TRY_AGAIN)
        {
          etcd_txn_clear (&t);
          if (r == TRY_NODE_EXISTS && node_exists (bc, err) < 0)
            return -1;
          continue;
        }
      if (r != TRY_NO_GEOMETRY)
        break;
      etcd_txn_clear (&t);
      if (geometry_make (bc, net, err) < 0)
        return -1;
    }
  if (r < 0 || r == TRY_CLAIMED)
    {
      etcd_txn_clear (&t);
      return r < 0 ? -1 : 0;
    }
  {
    int64_t ts = 0;
    const char *cur = t.ranges[0].n ? t.ranges[0].v[0].value : NULL;
    cleanup_free char *node = cur ? blocks_value_node (cur, &ts) : NULL;
    cleanup_free char *what = xasprintf ("address %s of %s", addr_format (want, w), hca->name);
    cleanup_free char *exp
        = xasprintf ("an address in a block node %s holds, or in a free block", c->node);
    cleanup_free char *found
        = xasprintf ("block %s-%s held by node %s%s since %s", addr_format (&first, a),
                     addr_format (&last, b), node ? node : "(unreadable value)",
                     node && strcmp (node, c->node) == 0 ? " (another machine's id)" : "",
                     lease_time_format (ts, since, sizeof (since)));
    etcd_txn_clear (&t);
    bc->refused = true;
    return roce_error_refuse (err, what, exp, found,
                              "pick an address in a block of this node (roce-hook blocks), or omit "
                              "roce.io/ip to get a free one");
  }
}

int
blocks_outside (struct blocks_ctx *bc, roce_error_t *err)
{
  char w[ADDR_STR_MAX];
  const struct policy_hca *hca = bc->need_hca;
  const struct policy_net *net = bc->need_net;

  if (bc->need_validate)
    {
      bc->need_validate = false;
      if (blocks_etcd (bc, err) < 0 || blocks_validate (bc, err) < 0)
        return roce_error_wrap (err,
                                "the address blocks of node %s in etcd, checked after its "
                                "liveness lapsed or the node restarted",
                                bc->p->cluster->node);
    }
  if (hca == NULL)
    return 0;
  bc->need_hca = NULL;
  if (blocks_etcd (bc, err) < 0)
    goto failed;
  /* A node without blocks has nothing to check: its record is renewed
   * (made) before it claims one.  */
  if (bc->need_renew && ! bc->validated && bc->fold_lease == 0)
    {
      bc->fold_t0 = (int64_t) time (NULL);
      if (etcd_lease_grant (bc->etcd, bc->p->cluster->liveness_ttl_s, &bc->fold_lease, err) < 0)
        goto failed;
    }
  if (bc->need_want ? claim_for (bc, hca, net, &bc->want, err) < 0
                    : blocks_claim_any (bc, hca, net, err) < 0)
    goto failed;
  return 0;
failed:
  if (bc->refused)
    return -1; /* a refusal of its own (taken, exhausted, geometry, the name) */
  if (bc->need_want)
    {
      cleanup_free char *need = xasprintf ("needed for roce.io/ip %s", addr_format (&bc->want, w));
      return etcd_refusal (err, hca, net, need);
    }
  return etcd_refusal (err, hca, net, "needed for a new address");
}

/* ---- the start path ------------------------------------------------------------------ */

/* Which addresses of the held blocks of net's subnet are used (the bits of
 * their /16s or /112s, not the whole subnet's: a cluster's may be a /8).  */
static int
index_blocks (struct lease_store *s, const struct policy_net *net, roce_error_t *err)
{
  for (size_t i = 0; i < s->n_blocks; i++)
    if (blocks_same_subnet (&s->blocks[i].subnet, &net->subnet)
        && lease_store_index (s, &s->blocks[i].first, &s->blocks[i].last, err) < 0)
      return -1;
  return 0;
}

/* The lowest address of net's pool in a held block that no holder has.  */
static bool
lowest_free_held (const struct roce_policy *p, const struct lease_store *s,
                  const struct policy_net *net, struct roce_addr *out)
{
  bool found = false;
  for (size_t i = 0; i < s->n_blocks; i++)
    {
      const struct lease_block *b = &s->blocks[i];
      struct roce_addr lo, hi;
      if (! blocks_same_subnet (&b->subnet, &net->subnet) || b->static_only
          || ! blocks_usable (p->cluster, net, &b->first, &lo, &hi))
        continue;
      for (struct roce_addr a = lo; addr_cmp (&a, &hi) <= 0 && (! found || addr_cmp (&a, out) < 0);
           a = addr_add (&a, 1))
        if (! lease_addr_used (s, &a))
          {
            *out = a;
            found = true;
            break;
          }
    }
  return found;
}

/* Asks for the etcd part: the caller's next round, or now.  */
static int
outside (struct blocks_ctx *bc, struct lease_store *s, roce_error_t *err)
{
  blocks_snapshot (bc, s);
  if (bc->unlocked)
    return BLOCKS_AGAIN;
  if (blocks_outside (bc, err) < 0)
    return -1;
  blocks_apply (bc, s);
  return 0;
}

int
blocks_assign (struct blocks_ctx *bc, struct lease_store *s, struct lease_holder *h,
               const struct policy_hca *hca, const struct policy_net *net, const char *ifname,
               const struct roce_addr *want, alloc_alive_fn alive, void *arg, struct roce_addr *out,
               roce_error_t *err)
{
  const struct roce_policy *p = bc->p;
  struct roce_addr cand;
  bool fresh;
  int r;

  if (p->cluster == NULL)
    return alloc_assign (s, h, hca, net, ifname, want, alive, arg, out, err);
  if (bc->id[0] == '\0' && blocks_node_id (p->state_dir, true, bc->id, err) < 0)
    return -1;
  blocks_apply (bc, s);
  /* After a lapse of the liveness record or a reboot, the held blocks may
   * have been released by an operator: checked before one is used.  */
  fresh = bc->validated || blocks_liveness_fresh (p->state_dir);
  bc->need_renew = ! fresh;
  if (! fresh && s->n_blocks > 0)
    {
      bc->need_validate = true;
      if ((r = outside (bc, s, err)) != 0)
        return r;
    }
  if (want)
    {
      if (blocks_held (s, &net->subnet, want) == NULL)
        {
          size_t held = held_in_subnet (s, &net->subnet, false);
          size_t held_static = held_in_subnet (s, &net->subnet, true);
          if (held >= blocks_max (p, net))
            return cap_refusal (p, hca, net, held, err);
          if (held_static >= p->cluster->max_static_blocks)
            return static_cap_refusal (p, hca, want, held_static, err);
          bc->need_hca = hca;
          bc->need_net = net;
          bc->need_want = true;
          bc->want = *want;
          if ((r = outside (bc, s, err)) != 0)
            return r;
        }
      return alloc_assign (s, h, hca, net, ifname, want, alive, arg, out, err);
    }
  /* The start path: a free address in a held block needs no etcd.  */
  if (index_blocks (s, net, err) < 0)
    return -1;
  if (! lowest_free_held (p, s, net, &cand)
      && (alloc_reclaim (s, h, alive, arg) == 0 || ! lowest_free_held (p, s, net, &cand)))
    {
      size_t held = held_in_subnet (s, &net->subnet, false);
      if (held >= blocks_max (p, net))
        return cap_refusal (p, hca, net, held, err);
      bc->need_hca = hca;
      bc->need_net = net;
      bc->need_want = false;
      if ((r = outside (bc, s, err)) != 0)
        return r;
      if (index_blocks (s, net, err) < 0)
        return -1;
      if (! lowest_free_held (p, s, net, &cand))
        return roce_error_make (err, EINVAL, "internal error: a new block of %s without room",
                                hca->name);
    }
  return alloc_assign (s, h, hca, net, ifname, &cand, alive, arg, out, err);
}
