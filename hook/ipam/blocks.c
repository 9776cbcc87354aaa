#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "blocks.h"
#include "confine.h"
#include "etcd.h"
#include "json.h"
#include "log.h"
#include "utils.h"

/* ---- geometry, keys, values --------------------------------------------------------- */

static bool
same_subnet (const struct roce_cidr *a, const struct roce_cidr *b)
{
  return a->addr == b->addr && a->prefix == b->prefix;
}

uint32_t
blocks_align (const struct policy_cluster *c, uint32_t addr)
{
  return addr & ~(c->block - 1);
}

static uint32_t
block_last (const struct policy_cluster *c, uint32_t first)
{
  return first + (c->block - 1);
}

bool
blocks_usable (const struct policy_cluster *c, const struct policy_hca *hca, uint32_t first,
               uint32_t *lo, uint32_t *hi)
{
  uint32_t last = block_last (c, first);
  uint32_t a = first > hca->pool_first ? first : hca->pool_first;
  uint32_t b = last < hca->pool_last ? last : hca->pool_last;
  if (a > b)
    return false;
  *lo = a;
  *hi = b;
  return true;
}

static char *
subnet_dir (const struct policy_cluster *c, const struct roce_cidr *subnet)
{
  char a[IPV4_STR_MAX];
  return xasprintf ("%sblocks/%s_%u/", c->etcd.prefix, ipv4_format (subnet->addr, a), subnet->prefix);
}

char *
blocks_key (const struct policy_cluster *c, const struct roce_cidr *subnet, uint32_t first)
{
  cleanup_free char *dir = subnet_dir (c, subnet);
  char a[IPV4_STR_MAX];
  return xasprintf ("%s%s", dir, ipv4_format (first, a));
}

int
blocks_key_parse (const struct policy_cluster *c, const char *key, struct roce_cidr *subnet,
                  uint32_t *first)
{
  cleanup_free char *base = xasprintf ("%sblocks/", c->etcd.prefix);
  cleanup_free char *rest = NULL;
  char *slash, *us;

  if (strncmp (key, base, strlen (base)) != 0)
    return -1;
  rest = xstrdup (key + strlen (base));
  slash = strchr (rest, '/');
  us = strchr (rest, '_');
  if (slash == NULL || us == NULL || us > slash)
    return -1;
  *slash = '\0';
  *us = '/';
  if (cidr_parse (rest, subnet) < 0 || ipv4_parse (slash + 1, first) < 0)
    return -1;
  return 0;
}

char *
blocks_value (const char *node, int64_t since, unsigned size)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const char *buf;
  size_t len;
  json_gen_map_open (g);
  json_gen_kv_string (g, "node", node);
  json_gen_kv_integer (g, "since", since);
  json_gen_kv_integer (g, "size", size);
  json_gen_map_close (g);
  if (json_gen_result (g, &buf, &len, NULL) < 0)
    abort (); /* balanced by construction */
  return xstrndup (buf, len);
}

int
blocks_value_parse (const char *value, char **node, int64_t *since, unsigned *size, roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  uint64_t t = 0, z = 0;
  if (json_parse (value, &j, err) < 0)
    return -1;
  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "not a JSON object");
  if (json_member_string (j, "", "node", true, CLUSTER_NODE_MAX, true, node, err) < 0
      || json_member_u64 (j, "", "since", false, 0, INT64_MAX, &t, err) < 0
      || json_member_u64 (j, "", "size", false, 1, 65536, &z, err) < 0)
    return -1;
  if (z & (z - 1))
    return roce_error_make (err, EINVAL, "size: %llu is not a power of two", (unsigned long long) z);
  *since = (int64_t) t;
  if (size)
    *size = (unsigned) z; /* 0: not given */
  return 0;
}

/* Who holds a block, from its etcd value, for messages: never raw bytes.  */
static char *
value_node (const char *value, int64_t *since)
{
  cleanup_error roce_error_t err = NULL;
  char *node = NULL;
  int64_t t = 0;
  if (blocks_value_parse (value, &node, &t, NULL, &err) < 0)
    {
      free (node);
      return NULL;
    }
  if (since)
    *since = t;
  return node;
}

/* The etcd block of subnet that overlaps first..last, if any.  A value's
 * size guards against a node whose policy cuts blocks of another size (it
 * must be the same everywhere): its blocks are never claimed across.  An
 * unreadable value counts as our size, held by someone.  */
static const struct etcd_kv *
overlapping (const struct policy_cluster *c, const struct etcd_kvs *kvs, const struct roce_cidr *subnet,
             uint32_t first, uint32_t last)
{
  for (size_t i = 0; i < kvs->n; i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_free char *node = NULL;
      struct roce_cidr sub;
      uint32_t f;
      int64_t t;
      unsigned size = 0;
      if (blocks_key_parse (c, kvs->v[i].key, &sub, &f) < 0 || ! same_subnet (&sub, subnet))
        continue;
      if (blocks_value_parse (kvs->v[i].value, &node, &t, &size, &err) < 0 || size == 0)
        size = c->block;
      if ((uint64_t) f <= last && first <= (uint64_t) f + size - 1)
        return &kvs->v[i];
    }
  return NULL;
}

static bool
value_is_mine (const struct policy_cluster *c, const char *value)
{
  cleanup_free char *node = value_node (value, NULL);
  return node && strcmp (node, c->node) == 0;
}

static struct lease_block *
held_block (const struct lease_store *s, const struct roce_cidr *subnet, uint32_t addr)
{
  for (size_t i = 0; i < s->n_blocks; i++)
    if (same_subnet (&s->blocks[i].subnet, subnet) && s->blocks[i].first <= addr
        && addr <= s->blocks[i].last)
      return &s->blocks[i];
  return NULL;
}

static size_t
block_held_count (const struct lease_store *s, const struct lease_block *b)
{
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      if (s->h[i]->addrs[k].addr >= b->first && s->h[i]->addrs[k].addr <= b->last)
        n++;
  return n;
}

/* The lowest address of hca's pool in a held block that no holder has.  */
static bool
lowest_free_held (const struct roce_policy *p, const struct lease_store *s,
                  const struct policy_hca *hca, uint32_t *out)
{
  bool found = false;
  for (size_t i = 0; i < s->n_blocks; i++)
    {
      const struct lease_block *b = &s->blocks[i];
      uint32_t lo, hi;
      if (! same_subnet (&b->subnet, &hca->subnet) || ! blocks_usable (p->cluster, hca, b->first, &lo, &hi))
        continue;
      for (uint64_t a = lo; a <= hi && (! found || a < *out); a++)
        if (! lease_addr_used (s, (uint32_t) a))
          {
            *out = (uint32_t) a;
            found = true;
            break;
          }
    }
  return found;
}

/* ---- etcd ----------------------------------------------------------------------------- */

void
blocks_ctx_clear (struct blocks_ctx *bc)
{
  etcd_close (bc->etcd);
  bc->etcd = NULL;
}

static int
etcd_need (struct blocks_ctx *bc, roce_error_t *err)
{
  if (bc->etcd == NULL && etcd_open (&bc->p->cluster->etcd, &bc->etcd, err) < 0)
    return -1;
  return 0;
}

static struct lease_block *
adopt (struct lease_store *s, const struct policy_cluster *c, const struct roce_cidr *subnet,
       uint32_t first, const char *value, const char *why)
{
  char a[IPV4_STR_MAX], sn[CIDR_STR_MAX];
  int64_t since = 0;
  cleanup_free char *node = value_node (value, &since);
  roce_log (ROCE_LOG_INFO, "block %s/%u of %s: %s", ipv4_format (first, a),
            32 - __builtin_ctz (c->block), cidr_format (subnet, sn), why);
  return lease_block_add (s, subnet, first, block_last (c, first), since, value);
}

static int
etcd_refusal (roce_error_t *err, const struct policy_hca *hca, const char *need)
{
  char sn[CIDR_STR_MAX];
  cleanup_free char *what = xasprintf ("address block of %s (%s) in etcd, %s", hca->name,
                                       cidr_format (&hca->subnet, sn), need);
  return roce_error_wrap (err, "%s", what);
}

/* Claims the lowest free block of hca's pool (or adopts one etcd says is
 * ours).  Returns the block, or NULL with *err set.  */
static struct lease_block *
claim_any (struct blocks_ctx *bc, struct lease_store *s, const struct policy_hca *hca, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *dir = subnet_dir (c, &hca->subnet);
  struct etcd_kvs kvs = { 0 };
  struct lease_block *got = NULL;
  size_t others = 0;
  char a[IPV4_STR_MAX], b[IPV4_STR_MAX];

  if (etcd_need (bc, err) < 0 || etcd_range_prefix (bc->etcd, dir, &kvs, err) < 0)
    {
      etcd_refusal (err, hca, "needed for a new address");
      goto out;
    }
  /* Ours in etcd, lost by the store: adopt the first with room.  */
  for (size_t i = 0; i < kvs.n && got == NULL; i++)
    {
      struct roce_cidr sub;
      uint32_t first, lo, hi;
      if (blocks_key_parse (c, kvs.v[i].key, &sub, &first) < 0 || ! value_is_mine (c, kvs.v[i].value)
          || held_block (s, &sub, first) != NULL || ! blocks_usable (c, hca, first, &lo, &hi))
        continue;
      got = adopt (s, c, &sub, first, kvs.v[i].value, "adopted: etcd names this node");
    }
  for (uint64_t f = blocks_align (c, hca->pool_first); f <= hca->pool_last && got == NULL; f += c->block)
    {
      cleanup_free char *key = blocks_key (c, &hca->subnet, (uint32_t) f);
      cleanup_free char *value = NULL;
      struct etcd_kv cur = { 0 };
      bool taken = held_block (s, &hca->subnet, (uint32_t) f) != NULL
                   || overlapping (c, &kvs, &hca->subnet, (uint32_t) f, block_last (c, (uint32_t) f)) != NULL;
      int r;
      if (taken)
        {
          others++;
          continue;
        }
      value = blocks_value (c->node, (int64_t) time (NULL), c->block);
      r = etcd_create (bc->etcd, key, value, &cur, err);
      if (r < 0)
        {
          etcd_refusal (err, hca, "needed for a new address");
          goto out;
        }
      if (r == 1)
        {
          got = lease_block_add (s, &hca->subnet, (uint32_t) f, block_last (c, (uint32_t) f),
                                 (int64_t) time (NULL), value);
          roce_log (ROCE_LOG_INFO, "claimed block %s-%s of %s for node %s", ipv4_format ((uint32_t) f, a),
                    ipv4_format (block_last (c, (uint32_t) f), b), hca->name, c->node);
        }
      else if (cur.value && value_is_mine (c, cur.value))
        got = adopt (s, c, &hca->subnet, (uint32_t) f, cur.value, "adopted: claimed by this node before");
      else
        others++; /* another node was faster */
      etcd_kv_clear (&cur);
    }
  if (got == NULL)
    {
      cleanup_free char *what = xasprintf ("address blocks of %s", hca->name);
      cleanup_free char *exp = xasprintf ("a free block of %u in %s-%s", c->block,
                                          ipv4_format (hca->pool_first, a), ipv4_format (hca->pool_last, b));
      cleanup_free char *found = xasprintf ("all %zu held (roce-hook blocks --all lists them)", others);
      cleanup_free char *fix = xasprintf ("stop containers, free the blocks of nodes that are gone "
                                          "(roce-hook blocks release --node N), or widen hcas.%s.pool",
                                          hca->name);
      roce_error_refuse (err, what, exp, found, fix);
    }
out:
  etcd_kvs_clear (&kvs);
  return got;
}

/* The block of want: held, or claimed now; another node's is refused.  */
static int
claim_for (struct blocks_ctx *bc, struct lease_store *s, const struct policy_hca *hca, uint32_t want,
           roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  uint32_t first = blocks_align (c, want);
  cleanup_free char *key = blocks_key (c, &hca->subnet, first);
  cleanup_free char *value = blocks_value (c->node, (int64_t) time (NULL), c->block);
  cleanup_free char *dir = subnet_dir (c, &hca->subnet);
  struct etcd_kvs kvs = { 0 };
  struct etcd_kv cur = { 0 };
  const struct etcd_kv *other;
  char a[IPV4_STR_MAX], b[IPV4_STR_MAX], w[IPV4_STR_MAX], since[32];
  int r;

  if (held_block (s, &hca->subnet, want))
    return 0;
  /* A range first: a block of another size may cover this one under
   * another key, which the transaction alone would not see.  */
  if (etcd_need (bc, err) < 0 || etcd_range_prefix (bc->etcd, dir, &kvs, err) < 0)
    goto etcd_failed;
  other = overlapping (c, &kvs, &hca->subnet, first, block_last (c, first));
  if (other && strcmp (other->key, key) != 0)
    {
      cur.key = xstrdup (other->key);
      cur.value = xstrdup (other->value);
      etcd_kvs_clear (&kvs);
      goto refuse;
    }
  etcd_kvs_clear (&kvs);
  if ((r = etcd_create (bc->etcd, key, value, &cur, err)) < 0)
    goto etcd_failed;
  if (r == 1)
    {
      lease_block_add (s, &hca->subnet, first, block_last (c, first), (int64_t) time (NULL), value);
      roce_log (ROCE_LOG_INFO, "claimed block %s-%s of %s for node %s (roce.io/ip)", ipv4_format (first, a),
                ipv4_format (block_last (c, first), b), hca->name, c->node);
      return 0;
    }
  if (cur.value && value_is_mine (c, cur.value))
    {
      adopt (s, c, &hca->subnet, first, cur.value, "adopted: claimed by this node before");
      etcd_kv_clear (&cur);
      return 0;
    }
refuse:
  {
    int64_t t = 0;
    struct roce_cidr sub;
    uint32_t ofirst = first, olast = block_last (c, first);
    unsigned osize = 0;
    cleanup_error roce_error_t verr = NULL;
    cleanup_free char *onode = NULL;
    cleanup_free char *node = cur.value ? value_node (cur.value, &t) : NULL;
    cleanup_free char *what = xasprintf ("address %s of %s", ipv4_format (want, w), hca->name);
    cleanup_free char *exp = xasprintf ("an address in a block node %s holds, or in a free block", c->node);
    cleanup_free char *found = NULL;
    if (cur.key && blocks_key_parse (c, cur.key, &sub, &ofirst) < 0)
      ofirst = first;
    olast = block_last (c, ofirst);
    if (cur.value && blocks_value_parse (cur.value, &onode, &t, &osize, &verr) == 0 && osize > 0)
      olast = ofirst + (osize - 1);
    found = xasprintf ("block %s-%s held by node %s since %s", ipv4_format (ofirst, a),
                       ipv4_format (olast, b), node ? node : "(unreadable value)",
                       lease_time_format (t, since, sizeof (since)));
    etcd_kv_clear (&cur);
    return roce_error_refuse (err, what, exp, found,
                              "pick an address in a block of this node (roce-hook blocks), or omit "
                              "roce.io/ip to get a free one");
  }
etcd_failed:
  {
    cleanup_free char *need = xasprintf ("needed for roce.io/ip %s", ipv4_format (want, w));
    etcd_kvs_clear (&kvs);
    return etcd_refusal (err, hca, need);
  }
}

/* Which addresses of the held blocks of hca's subnet are used (the bits of
 * their /16s, not the whole subnet's: a cluster's may be a /8).  */
static int
index_blocks (struct lease_store *s, const struct policy_hca *hca, roce_error_t *err)
{
  for (size_t i = 0; i < s->n_blocks; i++)
    if (same_subnet (&s->blocks[i].subnet, &hca->subnet)
        && lease_store_index (s, s->blocks[i].first, s->blocks[i].last, err) < 0)
      return -1;
  return 0;
}

int
blocks_assign (struct blocks_ctx *bc, struct lease_store *s, struct lease_holder *h,
               const struct policy_hca *hca, const char *ifname, bool has_want, uint32_t want,
               lease_alive_fn alive, void *arg, uint32_t *out, roce_error_t *err)
{
  uint32_t cand;

  if (bc->p->cluster == NULL)
    return lease_assign (s, h, hca, ifname, has_want, want, alive, arg, out, err);
  if (has_want)
    {
      if (claim_for (bc, s, hca, want, err) < 0)
        return -1;
      return lease_assign (s, h, hca, ifname, true, want, alive, arg, out, err);
    }
  /* The start path: a free address in a held block needs no etcd.  */
  if (index_blocks (s, hca, err) < 0)
    return -1;
  if (! lowest_free_held (bc->p, s, hca, &cand)
      && (lease_reclaim (s, h, alive, arg) == 0 || ! lowest_free_held (bc->p, s, hca, &cand)))
    {
      if (claim_any (bc, s, hca, err) == NULL || index_blocks (s, hca, err) < 0)
        return -1;
      if (! lowest_free_held (bc->p, s, hca, &cand))
        return roce_error_make (err, EINVAL, "internal error: a new block of %s without room", hca->name);
    }
  return lease_assign (s, h, hca, ifname, true, cand, alive, arg, out, err);
}

/* ---- gc ------------------------------------------------------------------------------- */

/* Free addresses of the held blocks of hca's subnet inside hca's pool.  */
static uint64_t
free_in_subnet (const struct roce_policy *p, const struct lease_store *s, const struct policy_hca *hca)
{
  uint64_t n = 0;
  for (size_t i = 0; i < s->n_blocks; i++)
    {
      uint32_t lo, hi;
      if (! same_subnet (&s->blocks[i].subnet, &hca->subnet)
          || ! blocks_usable (p->cluster, hca, s->blocks[i].first, &lo, &hi))
        continue;
      for (uint64_t a = lo; a <= hi; a++)
        if (! lease_addr_used (s, (uint32_t) a))
          n++;
    }
  return n;
}

static uint64_t
usable_size (const struct roce_policy *p, const struct policy_hca *hca, const struct lease_block *b)
{
  uint32_t lo, hi;
  return blocks_usable (p->cluster, hca, b->first, &lo, &hi) ? (uint64_t) hi - lo + 1 : 0;
}

static void
print_block (FILE *out, const char *verb, const struct lease_block *b, const char *tail)
{
  char a[IPV4_STR_MAX], z[IPV4_STR_MAX], sn[CIDR_STR_MAX];
  fprintf (out, "%s block %s-%s of %s%s\n", verb, ipv4_format (b->first, a), ipv4_format (b->last, z),
           cidr_format (&b->subnet, sn), tail);
}

/* One subnet (its first HCA in the policy stands for the pool).  */
static int
gc_subnet (struct blocks_ctx *bc, struct lease_store *s, const struct policy_hca *hca, FILE *out,
           size_t *claimed, size_t *released, roce_error_t *err)
{
  const struct policy_cluster *c = bc->p->cluster;
  cleanup_free char *dir = subnet_dir (c, &hca->subnet);
  struct etcd_kvs kvs = { 0 };
  int64_t now = (int64_t) time (NULL);
  uint64_t free_n;
  int ret = -1;

  etcd_budget_reset (bc->etcd);
  if (etcd_range_prefix (bc->etcd, dir, &kvs, err) < 0)
    return -1;
  /* Reconcile: ours in etcd but not in the store (adopt); in the store
   * but gone from etcd (claim again, or drop when another node has it).  */
  for (size_t i = 0; i < kvs.n; i++)
    {
      struct roce_cidr sub;
      uint32_t first;
      if (blocks_key_parse (c, kvs.v[i].key, &sub, &first) == 0 && value_is_mine (c, kvs.v[i].value)
          && held_block (s, &sub, first) == NULL)
        print_block (out, "adopted", adopt (s, c, &sub, first, kvs.v[i].value, "adopted by gc"),
                     ": etcd names this node");
    }
  for (size_t i = s->n_blocks; i > 0; i--)
    {
      struct lease_block *b = &s->blocks[i - 1];
      cleanup_free char *key = NULL;
      const struct etcd_kv *found = NULL;
      if (! same_subnet (&b->subnet, &hca->subnet))
        continue;
      key = blocks_key (c, &b->subnet, b->first);
      for (size_t k = 0; k < kvs.n && ! found; k++)
        if (strcmp (kvs.v[k].key, key) == 0)
          found = &kvs.v[k];
      if (found && value_is_mine (c, found->value))
        {
          if (strcmp (found->value, b->value) != 0)
            {
              free (b->value);
              b->value = xstrdup (found->value);
            }
          continue;
        }
      cleanup_free char *node = NULL;
      if (found == NULL)
        {
          struct etcd_kv cur = { 0 };
          int r;
          etcd_budget_reset (bc->etcd);
          r = etcd_create (bc->etcd, key, b->value, &cur, err);
          if (r == 0 && cur.value)
            node = value_node (cur.value, NULL);
          etcd_kv_clear (&cur);
          if (r < 0)
            goto out;
          if (r == 1)
            {
              print_block (out, "re-claimed", b, ": it was missing from etcd");
              continue;
            }
        }
      {
        size_t held = block_held_count (s, b);
        if (found)
          node = value_node (found->value, NULL);
        fprintf (out, "block %s of %s: etcd names node %s; %s\n", key + strlen (dir), hca->name,
                 node ? node : "?", held ? "its leases stay until their containers stop" : "dropped here");
        roce_log (ROCE_LOG_ERR, "block %s: held here and by node %s in etcd", key, node ? node : "?");
        if (held == 0)
          lease_block_drop (s, i - 1);
      }
    }

  /* Empty since when, then the reserve, then the releases.  */
  for (size_t i = 0; i < s->n_blocks; i++)
    if (same_subnet (&s->blocks[i].subnet, &hca->subnet))
      {
        bool empty = block_held_count (s, &s->blocks[i]) == 0;
        if (! empty)
          s->blocks[i].empty_since = 0;
        else if (s->blocks[i].empty_since == 0)
          s->blocks[i].empty_since = now;
      }
  free_n = free_in_subnet (bc->p, s, hca);
  while (free_n < c->reserve)
    {
      struct lease_block *b;
      etcd_budget_reset (bc->etcd);
      b = claim_any (bc, s, hca, err);
      if (b == NULL)
        goto out;
      b->empty_since = now;
      print_block (out, "claimed", b, " (reserve)");
      (*claimed)++;
      free_n = free_in_subnet (bc->p, s, hca);
    }
  for (;;)
    {
      size_t pick = SIZE_MAX;
      for (size_t i = 0; i < s->n_blocks; i++)
        {
          const struct lease_block *b = &s->blocks[i];
          if (same_subnet (&b->subnet, &hca->subnet) && b->empty_since > 0
              && now - b->empty_since >= (int64_t) c->release_after_s
              && free_n >= usable_size (bc->p, hca, b) + c->reserve
              && (pick == SIZE_MAX || b->empty_since < s->blocks[pick].empty_since))
            pick = i;
        }
      if (pick == SIZE_MAX)
        break;
      {
        struct lease_block *b = &s->blocks[pick];
        cleanup_free char *key = blocks_key (c, &b->subnet, b->first);
        int r;
        etcd_budget_reset (bc->etcd);
        r = etcd_delete_if (bc->etcd, key, b->value, err);
        if (r < 0)
          goto out;
        print_block (out, "released", b, r ? ": wholly free" : ": etcd no longer named this node");
        free_n -= usable_size (bc->p, hca, b);
        lease_block_drop (s, pick);
        (*released)++;
      }
    }
  ret = 0;
out:
  etcd_kvs_clear (&kvs);
  return ret;
}

int
blocks_gc (const struct roce_policy *p, FILE *out, roce_error_t *err)
{
  struct blocks_ctx bc = { .p = p };
  cleanup_lease_store struct lease_store *s = NULL;
  size_t claimed = 0, released = 0;
  uint64_t free_total = 0;
  int ret = -1;

  if (p->cluster == NULL)
    return 0;
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, err) < 0
      || lease_store_load_all (s, err) < 0 || etcd_need (&bc, err) < 0)
    goto out;
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      bool seen = false;
      for (size_t k = 0; k < i; k++)
        seen = seen || same_subnet (&p->hcas[k].subnet, &p->hcas[i].subnet);
      if (seen)
        continue;
      if (gc_subnet (&bc, s, &p->hcas[i], out, &claimed, &released, err) < 0)
        {
          /* What was done so far is kept.  */
          cleanup_error roce_error_t cerr = NULL;
          if (lease_store_commit (s, &cerr) < 0)
            roce_log (ROCE_LOG_ERR, "gc: %s", cerr->msg);
          roce_error_wrap (err, "gc of the address blocks of %s", p->hcas[i].name);
          goto out;
        }
      free_total += free_in_subnet (p, s, &p->hcas[i]);
    }
  if (lease_store_commit (s, err) < 0)
    goto out;
  fprintf (out, "gc: node %s holds %zu blocks (%llu free addresses), claimed %zu, released %zu\n",
           p->cluster->node, s->n_blocks, (unsigned long long) free_total, claimed, released);
  ret = 0;
out:
  blocks_ctx_clear (&bc);
  return ret;
}

/* ---- the `blocks` command --------------------------------------------------------------- */

struct row
{
  char *node;
  struct roce_cidr subnet;
  uint32_t first, last;
  int64_t since;
  long long held; /* -1: another node's */
};

static int
cmp_row (const void *x, const void *y)
{
  const struct row *a = x, *b = y;
  if (a->subnet.addr != b->subnet.addr)
    return a->subnet.addr < b->subnet.addr ? -1 : 1;
  return a->first < b->first ? -1 : a->first > b->first;
}

static int
print_rows (FILE *out, const char *node, struct row *rows, size_t n, bool json, roce_error_t *err)
{
  char a[IPV4_STR_MAX], z[IPV4_STR_MAX], sn[CIDR_STR_MAX], since[32];

  qsort (rows, n, sizeof (*rows), cmp_row);
  if (json)
    {
      cleanup_json_gen struct json_gen *g = json_gen_new (true);
      json_gen_map_open (g);
      json_gen_kv_string (g, "node", node);
      json_gen_string (g, "blocks");
      json_gen_array_open (g);
      for (size_t i = 0; i < n; i++)
        {
          json_gen_map_open (g);
          json_gen_kv_string (g, "node", rows[i].node);
          json_gen_kv_string (g, "subnet", cidr_format (&rows[i].subnet, sn));
          json_gen_kv_string (g, "first", ipv4_format (rows[i].first, a));
          json_gen_kv_string (g, "last", ipv4_format (rows[i].last, z));
          json_gen_kv_string (g, "since", lease_time_format (rows[i].since, since, sizeof (since)));
          json_gen_string (g, "held");
          if (rows[i].held >= 0)
            json_gen_integer (g, rows[i].held);
          else
            json_gen_null (g);
          json_gen_map_close (g);
        }
      json_gen_array_close (g);
      json_gen_map_close (g);
      return json_gen_print (g, out, err);
    }
  if (n == 0)
    {
      fprintf (out, "no address blocks held (node %s)\n", node);
      return 0;
    }
  fprintf (out, "%-20s %-18s %-31s %-5s %s\n", "NODE", "SUBNET", "BLOCK", "HELD", "SINCE");
  for (size_t i = 0; i < n; i++)
    {
      char held[24] = "-";
      cleanup_free char *range = xasprintf ("%s-%s", ipv4_format (rows[i].first, a),
                                            ipv4_format (rows[i].last, z));
      if (rows[i].held >= 0)
        snprintf (held, sizeof (held), "%lld", rows[i].held);
      fprintf (out, "%-20s %-18s %-31s %-5s %s\n", rows[i].node, cidr_format (&rows[i].subnet, sn), range,
               held, lease_time_format (rows[i].since, since, sizeof (since)));
    }
  return 0;
}

static int
cmd_list (const struct roce_policy *p, bool json, bool all, FILE *out, roce_error_t *err)
{
  const struct policy_cluster *c = p->cluster;
  cleanup_lease_store struct lease_store *s = NULL;
  struct blocks_ctx bc = { .p = p };
  struct etcd_kvs kvs = { 0 };
  struct row *rows = NULL;
  size_t n = 0;
  int ret = -1;

  if (lease_store_snapshot (p->state_dir, &s, err) < 0)
    return -1;
  if (! all)
    {
      rows = xmalloc0 ((s->n_blocks + 1) * sizeof (*rows));
      for (size_t i = 0; i < s->n_blocks; i++)
        rows[n++] = (struct row){ .node = xstrdup (c->node), .subnet = s->blocks[i].subnet,
                                  .first = s->blocks[i].first, .last = s->blocks[i].last,
                                  .since = s->blocks[i].since,
                                  .held = (long long) block_held_count (s, &s->blocks[i]) };
    }
  else
    {
      cleanup_free char *base = xasprintf ("%sblocks/", c->etcd.prefix);
      if (etcd_need (&bc, err) < 0 || etcd_range_prefix (bc.etcd, base, &kvs, err) < 0)
        goto out;
      rows = xmalloc0 ((kvs.n + 1) * sizeof (*rows));
      for (size_t i = 0; i < kvs.n; i++)
        {
          struct row *r = &rows[n];
          const struct lease_block *mine;
          if (blocks_key_parse (c, kvs.v[i].key, &r->subnet, &r->first) < 0)
            continue;
          r->node = value_node (kvs.v[i].value, &r->since);
          if (r->node == NULL)
            r->node = xstrdup ("(unreadable)");
          r->last = block_last (c, r->first);
          mine = strcmp (r->node, c->node) == 0 ? held_block (s, &r->subnet, r->first) : NULL;
          r->held = mine ? (long long) block_held_count (s, mine) : -1;
          n++;
        }
    }
  ret = print_rows (out, c->node, rows, n, json, err);
out:
  for (size_t i = 0; i < n; i++)
    free (rows[i].node);
  free (rows);
  etcd_kvs_clear (&kvs);
  blocks_ctx_clear (&bc);
  return ret;
}

static int
cmd_release (const struct roce_policy *p, const char *node, FILE *out, roce_error_t *err)
{
  const struct policy_cluster *c = p->cluster;
  cleanup_free char *base = xasprintf ("%sblocks/", c->etcd.prefix);
  struct blocks_ctx bc = { .p = p };
  struct etcd_kvs kvs = { 0 };
  size_t freed = 0, seen = 0;
  int ret = -1;

  if (strcmp (node, c->node) == 0)
    return roce_error_refuse (err, "blocks release --node", "a node that is gone for good",
                              "this node", "run it from another node; this node gives back its own "
                              "free blocks with roce-hook gc");
  if (etcd_need (&bc, err) < 0 || etcd_range_prefix (bc.etcd, base, &kvs, err) < 0)
    goto out;
  for (size_t i = 0; i < kvs.n; i++)
    {
      struct lease_block b = { 0 };
      int64_t since = 0;
      cleanup_free char *who = value_node (kvs.v[i].value, &since);
      char t[32];
      int r;
      if (who == NULL || strcmp (who, node) != 0
          || blocks_key_parse (c, kvs.v[i].key, &b.subnet, &b.first) < 0)
        continue;
      seen++;
      b.last = block_last (c, b.first);
      etcd_budget_reset (bc.etcd);
      r = etcd_delete_if (bc.etcd, kvs.v[i].key, kvs.v[i].value, err);
      if (r < 0)
        goto out;
      if (r == 0)
        {
          print_block (out, "kept", &b, ": it changed meanwhile");
          continue;
        }
      {
        cleanup_free char *tail = xasprintf (" of node %s (held since %s)", node,
                                             lease_time_format (since, t, sizeof (t)));
        print_block (out, "released", &b, tail);
      }
      roce_log (ROCE_LOG_INFO, "blocks release: %s of node %s", kvs.v[i].key, node);
      freed++;
    }
  fprintf (out, "blocks release: freed %zu of %zu blocks of node %s\n", freed, seen, node);
  ret = 0;
out:
  etcd_kvs_clear (&kvs);
  blocks_ctx_clear (&bc);
  return ret;
}

static void
blocks_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] blocks [--json] [--all]   address blocks held in etcd\n"
         "       roce-hook [--config F] blocks release --node N   free the blocks of a node gone "
         "for good\n",
         out);
}

int
blocks_main (const char *config_path, int argc, char **argv, FILE *out, FILE *err_out)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'j' },
    { "all", no_argument, NULL, 'a' },
    { "node", required_argument, NULL, 'n' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  const char *node = NULL;
  bool json = false, all = false, release = false;
  int c, ret;

  optind = 0;
  while ((c = getopt_long (argc, argv, "+jan:h", opts, NULL)) != -1)
    switch (c)
      {
      case 'j':
        json = true;
        break;
      case 'a':
        all = true;
        break;
      case 'n':
        node = optarg;
        break;
      case 'h':
        blocks_usage (out);
        return 0;
      default:
        blocks_usage (err_out);
        return 2;
      }
  if (optind < argc && strcmp (argv[optind], "release") == 0)
    {
      release = true;
      optind++;
      while ((c = getopt_long (argc, argv, "+n:", opts, NULL)) != -1)
        if (c == 'n')
          node = optarg;
        else
          {
            blocks_usage (err_out);
            return 2;
          }
    }
  if (optind < argc || (release && (node == NULL || json || all)) || (! release && node))
    {
      blocks_usage (err_out);
      return 2;
    }
  if (policy_load (config_path, &p, &err) < 0)
    goto fail;
  if (p->cluster == NULL)
    {
      fprintf (err_out, "roce-hook: blocks: policy %s has no `cluster` section: addresses are "
                        "node-local (roce-hook leases lists them)\n",
               p->path);
      return 2;
    }
  /* Reading, and etcd over TCP; release deletes only etcd keys.  */
  if (confine_caps (CONFINE_QUERY, &err) < 0 || confine_phase (PHASE_NONE, &err) < 0
      || confine_seccomp_net (CONFINE_QUERY, true, &err) < 0)
    goto fail;
  ret = release ? cmd_release (p, node, out, &err) : cmd_list (p, json, all, out, &err);
  if (ret == 0)
    return 0;
fail:
  roce_log (ROCE_LOG_ERR, "blocks: %s", err->msg);
  roce_log_refusal (err_out, "roce-hook", "blocks", err->msg);
  return 2;
}

/* ---- `check` -------------------------------------------------------------------------- */

struct probe
{
  char *version;
  char *endpoint;
  char *error;
  size_t blocks;
};

static void
probe_run (const struct roce_policy *p, struct probe *pr)
{
  struct blocks_ctx bc = { .p = p };
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;

  if (etcd_need (&bc, &err) < 0 || etcd_version (bc.etcd, &pr->version, &pr->endpoint, &err) < 0)
    pr->error = xstrdup (err->msg);
  roce_error_release (&err);
  if (lease_store_snapshot (p->state_dir, &s, &err) == 0)
    pr->blocks = s->n_blocks;
  blocks_ctx_clear (&bc);
}

static void
probe_clear (struct probe *pr)
{
  free (pr->version);
  free (pr->endpoint);
  free (pr->error);
}

void
blocks_check_text (const struct roce_policy *p, FILE *out)
{
  const struct policy_cluster *c = p->cluster;
  struct probe pr = { 0 };
  cleanup_free char *eps = NULL;

  if (c == NULL)
    {
      fprintf (out, "addressing: node-local (no `cluster` in the policy)\n");
      return;
    }
  probe_run (p, &pr);
  eps = strv_join (c->etcd.endpoints, ",");
  fprintf (out, "addressing: cluster, node %s, blocks of %u, reserve %u, %zu blocks held; etcd %s%s: ",
           c->node, c->block, c->reserve, pr.blocks, eps, c->etcd.cert ? " (TLS, client certificate)"
                                                            : c->etcd.cacert ? " (TLS)" : "");
  if (pr.error)
    fprintf (out, "UNREACHABLE: %s (starts that need a new block are refused)\n", pr.error);
  else
    fprintf (out, "etcd %s answered at %s\n", pr.version, pr.endpoint);
  probe_clear (&pr);
}

void
blocks_check_json (const struct roce_policy *p, struct json_gen *g)
{
  const struct policy_cluster *c = p->cluster;
  struct probe pr = { 0 };

  json_gen_string (g, "cluster");
  if (c == NULL)
    {
      json_gen_null (g);
      return;
    }
  probe_run (p, &pr);
  json_gen_map_open (g);
  json_gen_kv_string (g, "node", c->node);
  json_gen_kv_integer (g, "block", c->block);
  json_gen_kv_integer (g, "reserve", c->reserve);
  json_gen_kv_integer (g, "blocks_held", (int64_t) pr.blocks);
  json_gen_string (g, "etcd");
  json_gen_map_open (g);
  json_gen_string (g, "endpoints");
  json_gen_array_open (g);
  for (char **e = c->etcd.endpoints; *e; e++)
    json_gen_string (g, *e);
  json_gen_array_close (g);
  json_gen_string (g, "reachable");
  json_gen_bool (g, pr.error == NULL);
  json_gen_string (g, "version");
  if (pr.version)
    json_gen_string (g, pr.version);
  else
    json_gen_null (g);
  json_gen_string (g, "error");
  if (pr.error)
    json_gen_string (g, pr.error);
  else
    json_gen_null (g);
  json_gen_map_close (g);
  json_gen_map_close (g);
  probe_clear (&pr);
}
