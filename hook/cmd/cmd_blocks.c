/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook blocks`: the address blocks held in etcd (this node's, or
 * every node's, read in pages), and their release for a node gone for good
 * (refused while the node's liveness record lives, unless --force).  */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "ipam/blocks/blocks.h"
#include "ipam/blocks/etcd.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/confine.h"

struct row
{
  char *node;
  struct roce_cidr subnet;
  struct roce_addr first, last;
  int64_t since;
  long long held; /* -1: another node's */
};

struct rows
{
  const struct policy_cluster *c;
  const struct lease_store *s;
  const char *id;
  struct row *v;
  size_t n;
};

static int
cmp_row (const void *x, const void *y)
{
  const struct row *a = x, *b = y;
  int c = addr_cmp (&a->subnet.addr, &b->subnet.addr);
  return c ? c : addr_cmp (&a->first, &b->first);
}

static int
print_rows (FILE *out, const char *node, struct row *rows, size_t n, bool json, roce_error_t *err)
{
  char a[ADDR_STR_MAX], z[ADDR_STR_MAX], sn[CIDR_STR_MAX], since[32];

  if (n > 1)
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
          json_gen_kv_string (g, "first", addr_format (&rows[i].first, a));
          json_gen_kv_string (g, "last", addr_format (&rows[i].last, z));
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
      roce_print (out, "no address blocks held (node %s)", node);
      return 0;
    }
  fprintf (out, "%-20s %-18s %-31s %-5s %s\n", "NODE", "SUBNET", "BLOCK", "HELD", "SINCE");
  for (size_t i = 0; i < n; i++)
    {
      char held[24] = "-";
      cleanup_free char *range
          = xasprintf ("%s-%s", addr_format (&rows[i].first, a), addr_format (&rows[i].last, z));
      if (rows[i].held >= 0)
        snprintf (held, sizeof (held), "%lld", rows[i].held);
      roce_print (out, "%-20s %-18s %-31s %-5s %s", rows[i].node, cidr_format (&rows[i].subnet, sn),
                  range, held, lease_time_format (rows[i].since, since, sizeof (since)));
    }
  return 0;
}

static int
row_add (const struct etcd_kv *kv, void *arg)
{
  struct rows *rs = arg;
  struct row r = { 0 };
  const struct lease_block *mine;
  unsigned size = 0;
  if (blocks_key_parse (rs->c, kv->key, &r.subnet, &r.first) < 0)
    return 0;
  {
    cleanup_error roce_error_t verr = NULL;
    cleanup_free char *id = NULL;
    if (blocks_value_parse (kv->value, &r.node, &id, &r.since, &size, &verr) < 0)
      {
        free (r.node);
        r.node = xstrdup ("(unreadable)");
      }
  }
  r.last = addr_add (&r.first, (size ? size : rs->c->block) - 1);
  mine = blocks_value_is_mine (rs->c, rs->id, kv->value) ? blocks_held (rs->s, &r.subnet, &r.first)
                                                         : NULL;
  r.held = mine ? (long long) blocks_held_count (rs->s, mine) : -1;
  rs->v = xrealloc (rs->v, (rs->n + 1) * sizeof (*rs->v));
  rs->v[rs->n++] = r;
  return 0;
}

static int
cmd_list (const struct roce_policy *p, bool json, bool all, FILE *out, roce_error_t *err)
{
  const struct policy_cluster *c = p->cluster;
  cleanup_lease_store struct lease_store *s = NULL;
  struct blocks_ctx bc = { .p = p };
  char id[BLOCKS_ID_LEN + 1] = "";
  struct rows rs = { .c = c };
  int ret = -1;

  if (lease_store_snapshot (p->state_dir, &s, err) < 0
      || blocks_node_id (p->state_dir, false, id, err) < 0)
    return -1;
  rs.s = s;
  rs.id = id;
  if (! all)
    for (size_t i = 0; i < s->n_blocks; i++)
      {
        rs.v = xrealloc (rs.v, (rs.n + 1) * sizeof (*rs.v));
        rs.v[rs.n++] = (struct row){ .node = xstrdup (c->node),
                                     .subnet = s->blocks[i].subnet,
                                     .first = s->blocks[i].first,
                                     .last = s->blocks[i].last,
                                     .since = s->blocks[i].since,
                                     .held = (long long) blocks_held_count (s, &s->blocks[i]) };
      }
  else
    {
      cleanup_free char *base = xasprintf ("%sblocks/", c->etcd.prefix);
      if (blocks_etcd (&bc, err) < 0)
        goto out;
      etcd_budget_set (bc.etcd, ETCD_LISTING_BUDGETS * c->etcd.timeout_ms);
      if (etcd_range_each (bc.etcd, base, false, row_add, &rs, err) < 0)
        goto out;
    }
  ret = print_rows (out, c->node, rs.v, rs.n, json, err);
out:
  for (size_t i = 0; i < rs.n; i++)
    free (rs.v[i].node);
  free (rs.v);
  blocks_ctx_clear (&bc);
  return ret;
}

struct of_node
{
  const struct policy_cluster *c;
  const char *node;
  struct etcd_kvs kvs;
};

static int
of_node_add (const struct etcd_kv *kv, void *arg)
{
  struct of_node *o = arg;
  cleanup_free char *who = blocks_value_node (kv->value, NULL);
  if (who == NULL || strcmp (who, o->node) != 0)
    return 0;
  o->kvs.v = xrealloc (o->kvs.v, (o->kvs.n + 1) * sizeof (*o->kvs.v));
  o->kvs.v[o->kvs.n++] = (struct etcd_kv){ .key = xstrdup (kv->key),
                                           .value = xstrdup (kv->value),
                                           .mod_revision = kv->mod_revision };
  return 0;
}

/* The node's liveness record: 1 alive (*id its id), 0 lapsed.  */
static int
node_alive (struct blocks_ctx *bc, const char *node, char **id, roce_error_t *err)
{
  cleanup_free char *key = blocks_node_key (bc->p->cluster, node);
  struct etcd_op get = { .kind = ETCD_OP_RANGE, .key = key };
  struct etcd_txn t = { 0 };
  int alive;

  if (etcd_txn (bc->etcd, NULL, 0, &get, 1, NULL, 0, &t, err) < 0)
    return -1;
  alive = t.ranges[0].n > 0;
  if (alive)
    {
      cleanup_error roce_error_t perr = NULL;
      cleanup_free char *n = NULL;
      if (blocks_liveness_parse (t.ranges[0].v[0].value, &n, id, &perr) < 0)
        {
          free (*id);
          *id = NULL;
        }
    }
  etcd_txn_clear (&t);
  return alive;
}

static int
cmd_release (const struct roce_policy *p, const char *node, bool force, FILE *out,
             roce_error_t *err)
{
  const struct policy_cluster *c = p->cluster;
  cleanup_free char *base = xasprintf ("%sblocks/", c->etcd.prefix);
  cleanup_free char *live_id = NULL;
  struct blocks_ctx bc = { .p = p };
  struct of_node o = { .c = c, .node = node };
  size_t freed = 0, kept = 0;
  int alive, ret = -1;

  if (strcmp (node, c->node) == 0)
    return roce_error_refuse (err, "blocks release --node", "a node that is gone for good",
                              "this node",
                              "run it from another node; this node gives back its own "
                              "free blocks with roce-hook gc");
  if (blocks_etcd (&bc, err) < 0 || (alive = node_alive (&bc, node, &live_id, err)) < 0)
    goto out;
  if (alive && force)
    {
      /* Its record goes first: the node, if it lives, finds it gone at its
       * next gc and checks its blocks (the ones freed here are dropped).  */
      cleanup_free char *key = blocks_node_key (c, node);
      struct etcd_op del = { .kind = ETCD_OP_DELETE, .key = key };
      struct etcd_txn t = { 0 };
      if (etcd_txn (bc.etcd, NULL, 0, &del, 1, NULL, 0, &t, err) < 0)
        goto out;
      etcd_txn_clear (&t);
      roce_print (out, "blocks release: node %s's liveness record deleted (--force)", node);
    }
  etcd_budget_set (bc.etcd, ETCD_LISTING_BUDGETS * c->etcd.timeout_ms);
  if (etcd_range_each (bc.etcd, base, false, of_node_add, &o, err) < 0)
    goto out;
  for (size_t i = 0; i < o.kvs.n; i++)
    {
      struct lease_block b = { 0 };
      cleanup_error roce_error_t verr = NULL;
      cleanup_free char *who = NULL, *id = NULL;
      int64_t since = 0;
      char t[32];
      int r;
      if (blocks_key_parse (c, o.kvs.v[i].key, &b.subnet, &b.first) < 0
          || blocks_value_parse (o.kvs.v[i].value, &who, &id, &since, NULL, &verr) < 0)
        continue;
      b.last = addr_add (&b.first, c->block - 1);
      /* A live node's own blocks stay; those of an earlier incarnation of
       * its name (another id: a state_dir wiped) are no one's.  */
      if (alive && ! force && (live_id == NULL || id == NULL || strcmp (id, live_id) == 0))
        {
          kept++;
          continue;
        }
      etcd_budget_reset (bc.etcd);
      r = blocks_delete (bc.etcd, c, node, &b.subnet, &b.first, o.kvs.v[i].value,
                         o.kvs.v[i].mod_revision, err);
      if (r < 0)
        goto out;
      if (r == 0)
        {
          blocks_print (out, "kept", &b, ": it changed meanwhile");
          continue;
        }
      {
        cleanup_free char *tail = xasprintf (" of node %s (held since %s)", node,
                                             lease_time_format (since, t, sizeof (t)));
        blocks_print (out, "released", &b, tail);
      }
      roce_log (ROCE_LOG_INFO, "blocks release: %s of node %s%s", o.kvs.v[i].key, node,
                force ? " (forced)" : "");
      freed++;
    }
  roce_print (out, "blocks release: freed %zu of %zu blocks of node %s", freed, o.kvs.n, node);
  if (kept)
    {
      cleanup_free char *what = xasprintf ("blocks release --node %s", node);
      cleanup_free char *found
          = xasprintf ("node %s alive: its liveness record %snodes/%s lives (renewed by "
                       "its gc; it lapses cluster.liveness_ttl_s after the last), %zu "
                       "block(s) kept",
                       node, c->etcd.prefix, node, kept);
      ret = roce_error_refuse (
          err, what, "a node whose liveness record lapsed", found,
          "stop roce-hook on that node for good and wait for the record to lapse; "
          "--force frees the blocks of a live node, whose addresses may then be "
          "given twice until its next gc");
      goto out;
    }
  ret = 0;
out:
  etcd_kvs_clear (&o.kvs);
  blocks_ctx_clear (&bc);
  return ret;
}

static void
blocks_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] blocks [--json] [--all]   address blocks held in etcd\n"
         "       roce-hook [--config F] blocks release --node N [--force]   free the blocks of a "
         "node gone for good\n",
         out);
}

int
cmd_blocks (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  FILE *out = stdout;
  cleanup_policy struct roce_policy *p = NULL;
  const char *node = NULL;
  bool json = false, all = false, release = false, force = false;
  const struct cmd_opt list_opts[] = {
    { "json", 'j', &json, NULL },
    { "all", 'a', &all, NULL },
    { "node", 'n', NULL, &node },
    { NULL, 0, NULL, NULL },
  };
  const struct cmd_opt release_opts[] = {
    { "node", 'n', NULL, &node },
    { "force", 'f', &force, NULL },
    { NULL, 0, NULL, NULL },
  };
  int go = cmd_options (argc, argv, list_opts, blocks_usage);

  if (go != CMD_GO)
    return go;
  if (optind < argc && strcmp (argv[optind], "release") == 0)
    {
      /* `release` and its own options, as a command of its own.  */
      release = true;
      argc -= optind;
      argv += optind;
      if ((go = cmd_options (argc, argv, release_opts, blocks_usage)) != CMD_GO)
        return go;
    }
  if (optind < argc || (release && (node == NULL || json || all)) || (! release && node))
    {
      blocks_usage (stderr);
      return 2;
    }
  if (policy_load (config_path, &p, err) < 0)
    return 2;
  if (p->cluster == NULL)
    {
      roce_error_make (err, 0,
                       "policy %s has no `cluster` section: addresses are node-local (roce-hook "
                       "leases lists them)",
                       p->path);
      return 2;
    }
  /* Reading, and etcd over TCP; release deletes only etcd keys.  */
  if (confine_caps (CONFINE_QUERY, err) < 0 || confine_phase (PHASE_NONE, err) < 0
      || confine_seccomp_net (CONFINE_QUERY, true, err) < 0)
    return 2;
  if ((release ? cmd_release (p, node, force, out, err) : cmd_list (p, json, all, out, err)) < 0)
    return 2;
  return 0;
}
