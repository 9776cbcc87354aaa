/* SPDX-License-Identifier: Apache-2.0 */
/* `gc`'s cluster part (blocks.h), in three steps so that the store's lock is
 * never held across etcd: under the lock, what to give back (dropped here
 * first, an intent written) and what the reserve needs; without it, etcd
 * (the liveness record, the check of the held blocks, the intents, the
 * releases, the reserve's claims); under the lock again, the result.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blocks_int.h"
#include "ipam/blocks/blocks.h"
#include "ipam/blocks/etcd.h"
#include "lib/log.h"
#include "lib/utils.h"

/* An intent younger than this may be a claim in flight.  */
#define INTENT_SETTLE_S 60

/* Free addresses of the held blocks of net's subnet inside net's pool.  */
static uint64_t
free_in_subnet (const struct roce_policy *p, const struct lease_store *s,
                const struct policy_net *net)
{
  uint64_t n = 0;
  for (size_t i = 0; i < s->n_blocks; i++)
    {
      struct roce_addr lo, hi;
      if (! blocks_same_subnet (&s->blocks[i].subnet, &net->subnet) || s->blocks[i].static_only
          || ! blocks_usable (p->cluster, net, &s->blocks[i].first, &lo, &hi))
        continue;
      for (struct roce_addr a = lo; addr_cmp (&a, &hi) <= 0; a = addr_add (&a, 1))
        if (! lease_addr_used (s, &a))
          n++;
    }
  return n;
}

static uint64_t
usable_size (const struct roce_policy *p, const struct policy_net *net, const struct lease_block *b)
{
  struct roce_addr lo, hi;
  return blocks_usable (p->cluster, net, &b->first, &lo, &hi) ? (uint64_t) addr_diff (&hi, &lo) + 1
                                                              : 0;
}

/* The nets of the policy, each (HCA, family) one index: h * POLICY_NETS + k.  */
static const struct policy_net *
net_at (const struct roce_policy *p, size_t i)
{
  const struct policy_hca *hca = &p->hcas[i / POLICY_NETS];
  return i % POLICY_NETS < hca->n_nets ? &hca->net[i % POLICY_NETS] : NULL;
}

/* The first net of each subnet stands for its pool.  */
static bool
first_of_subnet (const struct roce_policy *p, size_t i)
{
  const struct policy_net *n = net_at (p, i);
  if (n == NULL)
    return false;
  for (size_t k = 0; k < i; k++)
    if (net_at (p, k) && blocks_same_subnet (&net_at (p, k)->subnet, &n->subnet))
      return false;
  return true;
}

struct gc
{
  struct blocks_ctx bc;
  struct lease_block *releases; /* dropped here, to delete in etcd */
  size_t n_releases;
  unsigned *want_blocks; /* per net index (net_at): blocks the reserve needs */
  size_t claimed, released;
};

/* Under the lock: empty_since, then the blocks to give back (here first).  */
static int
plan (struct gc *g, struct lease_store *s, roce_error_t *err)
{
  const struct roce_policy *p = g->bc.p;
  const struct policy_cluster *c = p->cluster;
  int64_t now = (int64_t) time (NULL);

  for (size_t h = 0; h < p->n_hcas * POLICY_NETS; h++)
    {
      const struct policy_hca *hca = &p->hcas[h / POLICY_NETS];
      const struct policy_net *net = net_at (p, h);
      uint64_t free_n;
      if (! first_of_subnet (p, h))
        continue;
      for (size_t i = 0; i < s->n_blocks; i++)
        if (blocks_same_subnet (&s->blocks[i].subnet, &net->subnet))
          {
            bool empty = blocks_held_count (s, &s->blocks[i]) == 0;
            if (! empty)
              s->blocks[i].empty_since = 0;
            else if (s->blocks[i].empty_since == 0)
              s->blocks[i].empty_since = now;
          }
      free_n = free_in_subnet (p, s, net);
      for (;;)
        {
          size_t pick = SIZE_MAX;
          for (size_t i = 0; i < s->n_blocks; i++)
            {
              const struct lease_block *b = &s->blocks[i];
              /* Only at a revision known: gc's delete compares it (a block
               * checked by no gc of this version yet waits for the next). */
              /* A block claimed for a roce.io/ip goes as soon as it is
               * empty: it counts for no reserve (nothing else is given
               * from it) and waits for no release_after_s.  */
              if (blocks_same_subnet (&b->subnet, &net->subnet) && b->empty_since > 0 && b->rev > 0
                  && (b->static_only
                      || (now - b->empty_since >= (int64_t) c->release_after_s
                          && free_n >= usable_size (p, net, b) + c->reserve))
                  && (pick == SIZE_MAX || b->empty_since < s->blocks[pick].empty_since))
                pick = i;
            }
          if (pick == SIZE_MAX)
            break;
          /* Not given out from here on; etcd's key goes after.  */
          if (blocks_intent_write (p->state_dir, &s->blocks[pick], "release", err) < 0)
            return -1;
          blocks_intent_drop (p->state_dir, &s->blocks[pick], "claim");
          block_list_add (&g->releases, &g->n_releases, &s->blocks[pick]);
          if (! s->blocks[pick].static_only)
            free_n -= usable_size (p, net, &s->blocks[pick]);
          lease_block_drop (s, pick);
        }
      g->want_blocks[h] = 0;
      {
        size_t held = 0;
        uint64_t room = free_n;
        for (size_t i = 0; i < s->n_blocks; i++)
          held += blocks_same_subnet (&s->blocks[i].subnet, &net->subnet);
        while (room < c->reserve && held + g->want_blocks[h] < blocks_max (p, net))
          {
            g->want_blocks[h]++;
            room += c->block;
          }
        if (room < c->reserve)
          roce_log (ROCE_LOG_WARN,
                    "gc: the reserve of %u addresses of %s needs more than cluster.max_blocks "
                    "(%u) blocks",
                    c->reserve, hca->name, blocks_max (p, net));
      }
    }
  return 0;
}

/* After a release that did not match: 1 when etcd still gives the block
 * to this node (adopted again), 0 when not.  */
static int
released_or_taken (struct gc *g, const struct lease_block *b, const char *value, roce_error_t *err)
{
  cleanup_free char *key = blocks_key (g->bc.p->cluster, &b->subnet, &b->first);
  struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = key };
  struct etcd_txn t = { 0 };
  int r;
  if (etcd_txn (g->bc.etcd, NULL, 0, &get, 1, NULL, 0, &t, err) < 0)
    return -1;
  r = t.ranges[0].n == 1 && strcmp (t.ranges[0].v[0].value, value) == 0;
  etcd_txn_clear (&t);
  return r;
}

/* Finishes what an intent says.  */
static int
intent_finish (struct gc *g, const char *name, FILE *out, roce_error_t *err)
{
  const struct roce_policy *p = g->bc.p;
  const struct policy_cluster *c = p->cluster;
  cleanup_free char *path = xasprintf ("%s/%s/%s", p->state_dir, BLOCKS_INTENTS, name);
  cleanup_free char *line = NULL;
  cleanup_free char *key = NULL;
  cleanup_free char *n = xstrdup (name);
  cleanup_error roce_error_t rerr = NULL;
  struct lease_block b = { 0 };
  struct stat st;
  char *u1, *u2, *value, *pidp;
  uint64_t prefix, pid = 0, rev = 0;
  int r;

  if (lstat (path, &st) < 0 || ! S_ISREG (st.st_mode)
      || read_line_at (AT_FDCWD, path, &line, &rerr) < 0)
    return 0;
  /* <kind>_<subnet>_<prefix>_<first>: past the kind (the line says it).  */
  u1 = strchr (n, '_');
  if (u1 == NULL)
    goto drop;
  memmove (n, u1 + 1, strlen (u1 + 1) + 1);
  u1 = strchr (n, '_');
  u2 = u1 ? strchr (u1 + 1, '_') : NULL;
  pidp = strchr (line, ' ');
  value = pidp ? strchr (pidp + 1, ' ') : NULL;
  if (u2 == NULL || value == NULL)
    goto drop;
  *u1 = *u2 = '\0';
  *pidp++ = '\0';
  *value++ = '\0';
  if (parse_u64 (pidp, &pid) < 0 || pid == 0 || pid > INT32_MAX)
    goto drop;
  /* The revision, but in an intent of an earlier version (its value next).  */
  if (*value != '{')
    {
      char *sp = strchr (value, ' ');
      if (sp == NULL)
        goto drop;
      *sp = '\0';
      if (parse_u64 (value, &rev) < 0 || rev > INT64_MAX)
        goto drop;
      value = sp + 1;
    }
  if (addr_parse (n, &b.subnet.addr) < 0 || parse_u64 (u1 + 1, &prefix) < 0
      || prefix > addr_bits (b.subnet.addr.family) || addr_parse (u2 + 1, &b.first) < 0
      || b.first.family != b.subnet.addr.family)
    goto drop;
  b.subnet.prefix = (unsigned) prefix;
  b.last = block_last (c, &b.first);
  b.value = value;
  /* Another id's (a state_dir restored or cloned): not this node's to
   * finish, neither a release nor an adoption.  */
  if (blocks_value_is_other (c, g->bc.id, value))
    {
      roce_log (ROCE_LOG_WARN, "intent %s names another node id: dropped", name);
      goto drop;
    }
  key = blocks_key (c, &b.subnet, &b.first);
  if (strcmp (line, "release") == 0)
    {
      etcd_budget_reset (g->bc.etcd);
      if ((r
           = blocks_delete (g->bc.etcd, c, c->node, &b.subnet, &b.first, value, (int64_t) rev, err))
          < 0)
        return -1;
      if (r)
        {
          blocks_print (out, "released", &b, ": wholly free");
          g->released++;
        }
      else
        {
          /* Not at the revision the store knew: a start of this node took
           * it back meanwhile (it is in its store again), or it is no
           * longer this node's.  */
          int taken = released_or_taken (g, &b, value, err);
          if (taken < 0)
            return -1;
          blocks_print (out, taken ? "kept" : "released", &b,
                        taken ? ": a start of this node took it back before etcd was asked"
                              : ": etcd no longer named this node");
          g->released += ! taken;
        }
      goto drop;
    }
  if (strcmp (line, "claim") != 0)
    goto drop;
  {
    /* A release of the same block pending: not adopted again.  */
    cleanup_free char *rel = blocks_intent_path (p->state_dir, &b, "release");
    if (access (rel, F_OK) == 0)
      goto drop;
  }
  if (time (NULL) - st.st_mtime < INTENT_SETTLE_S && (kill ((pid_t) pid, 0) == 0 || errno == EPERM))
    return 0; /* its start may still be claiming */
  for (size_t i = 0; i < g->bc.n_held; i++)
    if (blocks_same_subnet (&g->bc.held[i].subnet, &b.subnet)
        && addr_eq (&g->bc.held[i].first, &b.first))
      goto drop;
  {
    struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = key };
    struct etcd_txn t = { 0 };
    etcd_budget_reset (g->bc.etcd);
    if (etcd_txn (g->bc.etcd, NULL, 0, &get, 1, NULL, 0, &t, err) < 0)
      return -1;
    if (t.ranges[0].n && strcmp (t.ranges[0].v[0].value, value) == 0)
      {
        b.value = t.ranges[0].v[0].value;
        b.since = (int64_t) time (NULL);
        r = blocks_adopt (&g->bc, &b, b.value, t.ranges[0].v[0].mod_revision, err);
        if (r < 0)
          {
            etcd_txn_clear (&t);
            return -1;
          }
        if (r == 1)
          {
            block_list_add (&g->bc.pending, &g->bc.n_pending, &b);
            blocks_print (out, "adopted", &b, ": etcd names this node (a claim's answer was lost)");
          }
      }
    etcd_txn_clear (&t);
  }
drop:
  unlink (path);
  return 0;
}

static int
intents (struct gc *g, FILE *out, roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/%s", g->bc.p->state_dir, BLOCKS_INTENTS);
  DIR *d = opendir (dir);
  struct dirent *e;
  int ret = 0;
  if (d == NULL)
    return 0;
  while (ret == 0 && (e = readdir (d)) != NULL)
    if (e->d_name[0] != '.' && strstr (e->d_name, ".roce-") == NULL)
      ret = intent_finish (g, e->d_name, out, err);
  closedir (d);
  return ret;
}

static int
collect (const struct etcd_kv *kv, void *arg)
{
  struct etcd_kvs *kvs = arg;
  kvs->v = xrealloc (kvs->v, (kvs->n + 1) * sizeof (*kvs->v));
  kvs->v[kvs->n++] = (struct etcd_kv){ .key = xstrdup (kv->key), .value = xstrdup (kv->value) };
  return 0;
}

/* The node's index in etcd: every block etcd gives it that the store lacks
 * (a start killed after its claim, a store moved aside) is adopted, full
 * or not, when its key is aligned and its value says this node's id and
 * size; an entry whose block is gone or moved is removed.  */
static int
adopt_own (struct gc *g, FILE *out, roce_error_t *err)
{
  const struct policy_cluster *c = g->bc.p->cluster;
  cleanup_free char *dir = blocks_affinity_dir (c, c->node);
  struct etcd_kvs idx = { 0 };
  int ret = -1;

  etcd_budget_reset (g->bc.etcd);
  if (etcd_range_each (g->bc.etcd, dir, false, collect, &idx, err) < 0)
    goto out;
  for (size_t i = 0; i < idx.n; i++)
    {
      cleanup_free char *bkey = NULL;
      /* The listing's keys lie under dir (etcd_range_each checks it); a key
       * is never read past its end all the same.  */
      if (strncmp (idx.v[i].key, dir, strlen (dir)) != 0)
        continue;
      bkey = xasprintf ("%sblocks/%s", c->etcd.prefix, idx.v[i].key + strlen (dir));
      struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = bkey };
      struct etcd_txn t = { 0 };
      struct lease_block b = { 0 };
      const char *cur;
      bool known = false;
      if (blocks_key_parse (c, bkey, &b.subnet, &b.first) < 0)
        continue;
      for (size_t k = 0; k < g->bc.n_held; k++)
        known = known
                || (blocks_same_subnet (&g->bc.held[k].subnet, &b.subnet)
                    && addr_eq (&g->bc.held[k].first, &b.first));
      for (size_t k = 0; k < g->bc.n_pending; k++)
        known = known
                || (blocks_same_subnet (&g->bc.pending[k].subnet, &b.subnet)
                    && addr_eq (&g->bc.pending[k].first, &b.first));
      if (known)
        continue;
      etcd_budget_reset (g->bc.etcd);
      if (etcd_txn (g->bc.etcd, NULL, 0, &get, 1, NULL, 0, &t, err) < 0)
        goto out;
      cur = t.ranges[0].n ? t.ranges[0].v[0].value : NULL;
      if (cur && strcmp (cur, idx.v[i].value) == 0)
        {
          cleanup_error roce_error_t verr = NULL;
          cleanup_free char *node = NULL, *id = NULL;
          int64_t since = 0;
          unsigned size = 0;
          if (blocks_value_parse (cur, &node, &id, &since, &size, &verr) == 0
              && strcmp (node, c->node) == 0 && id && strcmp (id, g->bc.id) == 0 && size == c->block
              && (b.first.v & (c->block - 1)) == 0)
            {
              int r;
              b.last = block_last (c, &b.first);
              b.since = since;
              b.value = (char *) cur;
              r = blocks_adopt (&g->bc, &b, cur, t.ranges[0].v[0].mod_revision, err);
              if (r < 0)
                {
                  etcd_txn_clear (&t);
                  goto out;
                }
              if (r == 1)
                {
                  block_list_add (&g->bc.pending, &g->bc.n_pending, &b);
                  blocks_print (out, "adopted", &b, ": etcd names this node");
                }
            }
          /* Another machine's of this name, or another size: left alone.  */
        }
      else
        {
          struct etcd_cmp same = { .key = idx.v[i].key, .value = idx.v[i].value };
          struct etcd_op del = { .kind = ETCD_OP_DELETE, .key = idx.v[i].key };
          struct etcd_txn t2 = { 0 };
          int r = etcd_txn (g->bc.etcd, &same, 1, &del, 1, NULL, 0, &t2, err);
          etcd_txn_clear (&t2);
          if (r < 0)
            {
              etcd_txn_clear (&t);
              goto out;
            }
        }
      etcd_txn_clear (&t);
    }
  ret = 0;
out:
  etcd_kvs_clear (&idx);
  return ret;
}

/* Without the lock: everything etcd.  */
static int
talk (struct gc *g, FILE *out, roce_error_t *err)
{
  const struct roce_policy *p = g->bc.p;

  if (blocks_etcd (&g->bc, err) < 0)
    return -1;
  etcd_budget_reset (g->bc.etcd);
  if (blocks_validate (&g->bc, err) < 0)
    return -1;
  for (size_t i = 0; i < g->bc.n_stale; i++)
    blocks_print (out, "dropped", &g->bc.stale[i],
                  blocks_value_is_other (p->cluster, g->bc.id, g->bc.stale[i].value)
                      ? ": held here under another node id (a state_dir restored or cloned); "
                        "`roce-hook blocks release --node` frees it once that machine is gone"
                      : ": etcd no longer gives it to this node");
  /* The releases planned: their intents are in intents/ too.  */
  if (intents (g, out, err) < 0 || adopt_own (g, out, err) < 0)
    return -1;
  for (size_t h = 0; h < p->n_hcas * POLICY_NETS; h++)
    for (unsigned k = 0; k < g->want_blocks[h]; k++)
      {
        etcd_budget_reset (g->bc.etcd);
        if (blocks_claim_any (&g->bc, &p->hcas[h / POLICY_NETS], net_at (p, h), err) < 0)
          return -1;
        blocks_print (out, "claimed", &g->bc.pending[g->bc.n_pending - 1], " (reserve)");
        g->claimed++;
      }
  return 0;
}

int
blocks_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  struct gc g = { .bc = { .p = p } };
  uint64_t free_total = 0;
  size_t held = 0;
  int ret = -1;

  if (p->cluster == NULL)
    return 0;
  g.want_blocks = xmalloc0 ((p->n_hcas * POLICY_NETS + 1) * sizeof (*g.want_blocks));
  {
    cleanup_lease_store struct lease_store *s = NULL;
    if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0
        || lease_store_load_all (s, err) < 0
        || blocks_node_id (p->state_dir, true, g.bc.id, err) < 0 || plan (&g, s, err) < 0
        || lease_store_commit (s, err) < 0)
      goto out;
    blocks_snapshot (&g.bc, s);
  }
  if (talk (&g, out, err) < 0)
    {
      roce_error_wrap (err, "gc of the address blocks of node %s", p->cluster->node);
      /* What etcd did so far is kept below.  */
    }
  {
    cleanup_lease_store struct lease_store *s = NULL;
    cleanup_error roce_error_t serr = NULL;
    int64_t now = (int64_t) time (NULL);
    roce_error_t *e = *err ? &serr : err;
    if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, e) < 0
        || lease_store_load_all (s, e) < 0)
      goto out;
    blocks_apply (&g.bc, s);
    for (size_t i = 0; i < s->n_blocks; i++)
      if (blocks_held_count (s, &s->blocks[i]) == 0 && s->blocks[i].empty_since == 0)
        s->blocks[i].empty_since = now;
    if (lease_store_commit (s, e) < 0)
      goto out;
    if (*err)
      goto out;
    for (size_t h = 0; h < p->n_hcas * POLICY_NETS; h++)
      if (first_of_subnet (p, h))
        free_total += free_in_subnet (p, s, net_at (p, h));
    held = s->n_blocks;
  }
  roce_print (out, "gc: node %s holds %zu blocks (%llu free addresses), claimed %zu, released %zu",
              p->cluster->node, held, (unsigned long long) free_total, g.claimed, g.released);
  ret = 0;
out:
  block_list_clear (&g.releases, &g.n_releases);
  free (g.want_blocks);
  blocks_ctx_clear (&g.bc);
  return ret;
}
