/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster addressing's common pieces (blocks.h): the block geometry, the
 * etcd keys and values, the node's identity, the `check` line.  The claims
 * are in blocks_claim.c, gc in blocks_gc.c, the command in cmd/cmd_blocks.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blocks_int.h"
#include "ipam/blocks/blocks.h"
#include "ipam/blocks/etcd.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"

/* ---- geometry, keys, values --------------------------------------------------------- */

bool
blocks_same_subnet (const struct roce_cidr *a, const struct roce_cidr *b)
{
  return cidr_eq (a, b);
}

/* An address as the keys spell it: an IPv4 one dotted, an IPv6 one in full
 * (eight groups of four hex digits), so that one block has one key and the
 * keys of a subnet sort as their addresses do.  buf: ADDR_STR_MAX.  */
static char *
key_addr (const struct roce_addr *a, char *buf)
{
  uint8_t b[16];
  if (a->family == AF_INET)
    return addr_format (a, buf);
  addr_bytes (a, b);
  for (int i = 0; i < 8; i++)
    snprintf (buf + 5 * i, ADDR_STR_MAX - 5 * (size_t) i, "%02x%02x%s", b[2 * i], b[2 * i + 1],
              i < 7 ? ":" : "");
  return buf;
}

/* "<subnet>_<prefix>" of the keys.  */
static char *
key_subnet (const struct roce_cidr *subnet)
{
  char a[ADDR_STR_MAX];
  return xasprintf ("%s_%u", key_addr (&subnet->addr, a), subnet->prefix);
}

struct roce_addr
blocks_align (const struct policy_cluster *c, const struct roce_addr *addr)
{
  return (struct roce_addr){ .v = addr->v & ~(roce_u128) (c->block - 1), .family = addr->family };
}

struct roce_addr
block_last (const struct policy_cluster *c, const struct roce_addr *first)
{
  return addr_add (first, c->block - 1);
}

bool
blocks_usable (const struct policy_cluster *c, const struct policy_net *net,
               const struct roce_addr *first, struct roce_addr *lo, struct roce_addr *hi)
{
  struct roce_addr last = block_last (c, first);
  const struct roce_addr *a = addr_cmp (first, &net->pool_first) > 0 ? first : &net->pool_first;
  const struct roce_addr *b = addr_cmp (&last, &net->pool_last) < 0 ? &last : &net->pool_last;
  if (first->family != net->pool_first.family || addr_cmp (a, b) > 0)
    return false;
  *lo = *a;
  *hi = *b;
  return true;
}

unsigned
blocks_max (const struct roce_policy *p, const struct policy_net *net)
{
  const struct policy_cluster *c = p->cluster;
  uint64_t n = 0, m;
  if (c->max_blocks)
    return c->max_blocks;
  for (size_t i = 0; i < p->n_hcas; i++)
    for (size_t k = 0; k < p->hcas[i].n_nets; k++)
      if (blocks_same_subnet (&p->hcas[i].net[k].subnet, &net->subnet))
        n++;
  m = (n * CLUSTER_ADDRS_PER_HCA + c->block - 1) / c->block;
  return m < 2 ? 2 : (unsigned) m;
}

char *
blocks_subnet_dir (const struct policy_cluster *c, const struct roce_cidr *subnet)
{
  cleanup_free char *sn = key_subnet (subnet);
  return xasprintf ("%sblocks/%s/", c->etcd.prefix, sn);
}

char *
blocks_geometry_key (const struct policy_cluster *c, const struct roce_cidr *subnet)
{
  cleanup_free char *sn = key_subnet (subnet);
  return xasprintf ("%sgeometry/%s", c->etcd.prefix, sn);
}

char *
blocks_geometry_value (unsigned block)
{
  return xasprintf ("{\"block\":%u}", block);
}

char *
blocks_node_key (const struct policy_cluster *c, const char *node)
{
  return xasprintf ("%snodes/%s", c->etcd.prefix, node);
}

char *
blocks_affinity_key (const struct policy_cluster *c, const char *node,
                     const struct roce_cidr *subnet, const struct roce_addr *first)
{
  cleanup_free char *sn = key_subnet (subnet);
  char f[ADDR_STR_MAX];
  return xasprintf ("%snodes/%s/blocks/%s/%s", c->etcd.prefix, node, sn, key_addr (first, f));
}

char *
blocks_affinity_dir (const struct policy_cluster *c, const char *node)
{
  return xasprintf ("%snodes/%s/blocks/", c->etcd.prefix, node);
}

int
blocks_delete (struct etcd_client *e, const struct policy_cluster *c, const char *node,
               const struct roce_cidr *subnet, const struct roce_addr *first, const char *value,
               int64_t rev, roce_error_t *err)
{
  cleanup_free char *key = blocks_key (c, subnet, first);
  cleanup_free char *aff = blocks_affinity_key (c, node, subnet, first);
  struct etcd_cmp cmps[] = { { .key = key, .value = value }, { .key = key, .mod = rev } };
  struct etcd_op del[]
      = { { .kind = ETCD_OP_DELETE, .key = key }, { .kind = ETCD_OP_DELETE, .key = aff } };
  struct etcd_txn t = { 0 };
  int r = etcd_txn (e, cmps, rev > 0 ? 2 : 1, del, 2, NULL, 0, &t, err);
  etcd_txn_clear (&t);
  return r;
}

char *
blocks_key (const struct policy_cluster *c, const struct roce_cidr *subnet,
            const struct roce_addr *first)
{
  cleanup_free char *dir = blocks_subnet_dir (c, subnet);
  char a[ADDR_STR_MAX];
  return xasprintf ("%s%s", dir, key_addr (first, a));
}

int
blocks_key_parse (const struct policy_cluster *c, const char *key, struct roce_cidr *subnet,
                  struct roce_addr *first)
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
  if (cidr_parse (rest, subnet) < 0 || addr_parse (slash + 1, first) < 0
      || ! cidr_contains (subnet, first))
    return -1;
  return 0;
}

char *
blocks_value (const char *node, const char *id, int64_t since, unsigned size)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const char *buf;
  size_t len;
  json_gen_map_open (g);
  json_gen_kv_string (g, "node", node);
  if (id)
    json_gen_kv_string (g, "id", id);
  json_gen_kv_integer (g, "since", since);
  json_gen_kv_integer (g, "size", size);
  json_gen_map_close (g);
  if (json_gen_result (g, &buf, &len, NULL) < 0)
    abort (); /* balanced by construction */
  return xstrndup (buf, len);
}

static bool
valid_id (const char *s)
{
  if (strlen (s) != BLOCKS_ID_LEN)
    return false;
  for (; *s; s++)
    if (! ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return false;
  return true;
}

int
blocks_value_parse (const char *value, char **node, char **id, int64_t *since, unsigned *size,
                    roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  cleanup_free char *i = NULL;
  uint64_t t = 0, z = 0;
  if (json_parse (value, &j, err) < 0)
    return -1;
  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "not a JSON object");
  if (json_member_string (j, "", "node", true, CLUSTER_NODE_MAX, true, node, err) < 0
      || json_member_string (j, "", "id", false, BLOCKS_ID_LEN, true, &i, err) < 0
      || json_member_u64 (j, "", "since", false, 0, INT64_MAX, &t, err) < 0
      || json_member_u64 (j, "", "size", false, 1, 65536, &z, err) < 0)
    return -1;
  if (z & (z - 1))
    return roce_error_make (err, EINVAL, "size: %llu is not a power of two",
                            (unsigned long long) z);
  if (i && ! valid_id (i))
    return roce_error_make (err, EINVAL, "id: not %d hex digits", BLOCKS_ID_LEN);
  *since = (int64_t) t;
  if (size)
    *size = (unsigned) z; /* 0: not given */
  if (id)
    *id = steal_pointer (&i);
  return 0;
}

char *
blocks_value_node (const char *value, int64_t *since)
{
  cleanup_error roce_error_t err = NULL;
  char *node = NULL;
  int64_t t = 0;
  if (blocks_value_parse (value, &node, NULL, &t, NULL, &err) < 0)
    {
      free (node);
      return NULL;
    }
  if (since)
    *since = t;
  return node;
}

/* Whose a block's value is: another's (or unreadable), this node name's
 * without an id (an earlier version), or this node's, name and id.  */
enum value_owner
{
  VALUE_OTHER,
  VALUE_NAME_ONLY,
  VALUE_MINE,
};

static enum value_owner
value_owner (const struct policy_cluster *c, const char *id, const char *value)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *node = NULL, *vid = NULL;
  int64_t t;
  if (blocks_value_parse (value, &node, &vid, &t, NULL, &err) < 0 || strcmp (node, c->node) != 0)
    return VALUE_OTHER;
  if (vid == NULL)
    return VALUE_NAME_ONLY;
  return strcmp (vid, id) == 0 ? VALUE_MINE : VALUE_OTHER;
}

bool
blocks_value_is_mine (const struct policy_cluster *c, const char *id, const char *value)
{
  return value_owner (c, id, value) == VALUE_MINE;
}

bool
blocks_value_is_other (const struct policy_cluster *c, const char *id, const char *value)
{
  return value_owner (c, id, value) == VALUE_OTHER;
}

char *
blocks_liveness_value (const char *node, const char *id)
{
  return xasprintf ("{\"id\":\"%s\",\"node\":\"%s\"}", id, node);
}

int
blocks_liveness_parse (const char *value, char **node, char **id, roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  if (json_parse (value, &j, err) < 0)
    return -1;
  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "not a JSON object");
  if (json_member_string (j, "", "node", true, CLUSTER_NODE_MAX, true, node, err) < 0
      || json_member_string (j, "", "id", true, BLOCKS_ID_LEN, true, id, err) < 0)
    return -1;
  if (! valid_id (*id))
    return roce_error_make (err, EINVAL, "id: not %d hex digits", BLOCKS_ID_LEN);
  return 0;
}

struct lease_block *
blocks_held (const struct lease_store *s, const struct roce_cidr *subnet,
             const struct roce_addr *addr)
{
  for (size_t i = 0; i < s->n_blocks; i++)
    if (blocks_same_subnet (&s->blocks[i].subnet, subnet)
        && addr_cmp (&s->blocks[i].first, addr) <= 0 && addr_cmp (addr, &s->blocks[i].last) <= 0)
      return &s->blocks[i];
  return NULL;
}

size_t
blocks_held_count (const struct lease_store *s, const struct lease_block *b)
{
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      if (addr_cmp (&s->h[i]->addrs[k].addr, &b->first) >= 0
          && addr_cmp (&s->h[i]->addrs[k].addr, &b->last) <= 0)
        n++;
  return n;
}

void
blocks_print (FILE *out, const char *verb, const struct lease_block *b, const char *tail)
{
  char a[ADDR_STR_MAX], z[ADDR_STR_MAX], sn[CIDR_STR_MAX];
  roce_print (out, "%s block %s-%s of %s%s", verb, addr_format (&b->first, a),
              addr_format (&b->last, z), cidr_format (&b->subnet, sn), tail);
}

void
block_list_add (struct lease_block **v, size_t *n, const struct lease_block *b)
{
  *v = xrealloc (*v, (*n + 1) * sizeof (**v));
  (*v)[*n] = *b;
  (*v)[*n].value = xstrdup (b->value ? b->value : "");
  (*n)++;
}

void
block_list_clear (struct lease_block **v, size_t *n)
{
  for (size_t i = 0; i < *n; i++)
    free ((*v)[i].value);
  free (*v);
  *v = NULL;
  *n = 0;
}

/* ---- the node's identity and liveness, in state_dir ------------------------------------- */

/* This machine's id (/etc/machine-id), or "" with why not in *why.  */
static void
machine_id (char out[33], const char **why)
{
  cleanup_free char *line = NULL;
  cleanup_error roce_error_t err = NULL;
  out[0] = '\0';
  if (read_line_at (AT_FDCWD, "/etc/machine-id", &line, &err) < 0)
    *why = err->status == ENOENT ? "missing" : "unreadable";
  else if (line[0] == '\0')
    *why = "empty";
  else if (strlen (line) != 32 || ! valid_id (line))
    *why = "not 32 hex digits";
  else
    memcpy (out, line, 33);
}

/* Writes path with data through a name of its own, then renames it (or
 * links it, with `excl`: only when path does not exist).  Returns 1 done, 0
 * exists (excl), < 0 error.  */
static int
write_file (const char *path, const char *data, bool excl, roce_error_t *err)
{
  cleanup_free char *tmp = xasprintf ("%s.roce-%d", path, (int) getpid ());
  cleanup_close int fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  size_t len = strlen (data);
  int r = 1;
  if (fd < 0)
    return roce_error_sys (err, errno, "create %s", tmp);
  if (write (fd, data, len) != (ssize_t) len)
    {
      unlink (tmp);
      return roce_error_sys (err, errno ? errno : EIO, "write %s", tmp);
    }
  if (excl)
    {
      if (link (tmp, path) < 0)
        r = errno == EEXIST ? 0 : roce_error_sys (err, errno, "link %s", path);
      unlink (tmp);
      return r;
    }
  if (rename (tmp, path) < 0)
    {
      unlink (tmp);
      return roce_error_sys (err, errno, "rename %s", path);
    }
  return 1;
}

int
blocks_node_id (const char *state_dir, bool make, char out[BLOCKS_ID_LEN + 1], roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/%s", state_dir, BLOCKS_NODE_ID);
  const char *why = NULL;
  char mid[33];

  /* An id binds a state_dir to one machine: without this machine's id
   * (a container that does not see the host's /etc/machine-id) none is made
   * or used, else a clone of the state_dir would keep it on two machines. */
  machine_id (mid, &why);
  if (make && mid[0] == '\0')
    {
      cleanup_free char *found = xasprintf ("/etc/machine-id %s", why);
      return roce_error_refuse (err, "the node id of the cluster's fencing",
                                "this machine's id in /etc/machine-id (32 hex digits)", found,
                                "mount the host's /etc/machine-id in this container, read-only "
                                "(the DaemonSet's gc does), or make one "
                                "(systemd-machine-id-setup)");
    }
  for (int round = 0; round < 3; round++)
    {
      cleanup_free char *line = NULL;
      cleanup_error roce_error_t rerr = NULL;
      unsigned char rnd[BLOCKS_ID_LEN / 2];
      char id[BLOCKS_ID_LEN + 1];
      cleanup_free char *text = NULL;
      int r;

      if (read_line_at (AT_FDCWD, path, &line, &rerr) == 0)
        {
          char *sp = strchr (line, ' ');
          const char *recorded = sp ? sp + 1 : "";
          if (sp)
            *sp = '\0';
          if (! valid_id (line))
            return roce_error_refuse (err, path, "a node id (32 hex digits, then the machine-id)",
                                      "something else",
                                      "remove it; the node gets a new id and "
                                      "adopts no block of the old one");
          /* The state_dir of another machine (restored or cloned), or an
           * id recorded without a machine id (by a process that did not see
           * it): not this machine's, nor are its blocks.  */
          if (mid[0] != '\0' && strcmp (recorded, mid) == 0)
            {
              memcpy (out, line, BLOCKS_ID_LEN + 1);
              return 0;
            }
          if (! make)
            {
              out[0] = '\0';
              return 0;
            }
          roce_log (ROCE_LOG_ERR,
                    "%s names machine %s, this is %s: a new node id (the blocks of the "
                    "old one are not this machine's)",
                    path, recorded[0] ? recorded : "(none)", mid);
          if (unlink (path) < 0 && errno != ENOENT)
            return roce_error_sys (err, errno, "remove %s", path);
        }
      else if (rerr->status != ENOENT)
        return roce_error_make (err, rerr->status, "%s", rerr->msg);
      else if (! make)
        {
          out[0] = '\0';
          return 0;
        }
      if (getrandom (rnd, sizeof (rnd), 0) != (ssize_t) sizeof (rnd))
        return roce_error_sys (err, errno, "getrandom");
      for (size_t i = 0; i < sizeof (rnd); i++)
        snprintf (id + 2 * i, 3, "%02x", rnd[i]);
      text = xasprintf ("%s %s\n", id, mid);
      /* A new id holds nothing yet: the liveness file of the old one (a
       * restored or cloned state_dir) must not spare its first start the
       * check of the store's blocks against etcd.  */
      {
        cleanup_free char *lv = xasprintf ("%s/%s", state_dir, BLOCKS_LIVENESS);
        if (unlink (lv) < 0 && errno != ENOENT)
          return roce_error_sys (err, errno, "remove %s", lv);
      }
      /* Two first starts at once: one id wins, both read it.  */
      if ((r = write_file (path, text, true, err)) < 0)
        return -1;
    }
  return roce_error_make (err, EAGAIN, "%s: changing under us", path);
}

bool
blocks_liveness_fresh (const char *state_dir)
{
  cleanup_free char *path = xasprintf ("%s/%s", state_dir, BLOCKS_LIVENESS);
  cleanup_free char *line = NULL;
  cleanup_error roce_error_t err = NULL;
  char boot[NETNS_BOOT_ID_MAX], b[64];
  long long until = 0;

  if (read_line_at (AT_FDCWD, path, &line, &err) < 0 || netns_boot_id (boot, &err) < 0
      || sscanf (line, "{\"boot\":\"%63[0-9a-f-]\",\"fresh_until\":%lld}", b, &until) != 2)
    return false;
  return strcmp (b, boot) == 0 && (long long) time (NULL) < until;
}

int
blocks_liveness_write (const char *state_dir, int64_t until, roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/%s", state_dir, BLOCKS_LIVENESS);
  cleanup_free char *text = NULL;
  char boot[NETNS_BOOT_ID_MAX];
  if (netns_boot_id (boot, err) < 0)
    return -1;
  text = xasprintf ("{\"boot\":\"%s\",\"fresh_until\":%lld}\n", boot, (long long) until);
  return write_file (path, text, false, err) < 0 ? -1 : 0;
}

/* intents/<kind>_<subnet>_<prefix>_<first>: the value a claim or a release
 * is about to write or delete; gc finishes what one left.  */
char *
blocks_intent_path (const char *state_dir, const struct lease_block *b, const char *kind)
{
  cleanup_free char *sn = key_subnet (&b->subnet);
  char f[ADDR_STR_MAX];
  return xasprintf ("%s/%s/%s_%s_%s", state_dir, BLOCKS_INTENTS, kind, sn, key_addr (&b->first, f));
}

int
blocks_intent_write (const char *state_dir, const struct lease_block *b, const char *kind,
                     roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/%s", state_dir, BLOCKS_INTENTS);
  cleanup_free char *path = blocks_intent_path (state_dir, b, kind);
  cleanup_free char *text
      = xasprintf ("%s %d %lld %s\n", kind, (int) getpid (), (long long) b->rev, b->value);
  if (mkdir (dir, 0700) < 0 && errno != EEXIST)
    return roce_error_sys (err, errno, "mkdir %s", dir);
  return write_file (path, text, false, err) < 0 ? -1 : 0;
}

void
blocks_intent_drop (const char *state_dir, const struct lease_block *b, const char *kind)
{
  cleanup_free char *path = blocks_intent_path (state_dir, b, kind);
  unlink (path);
}

/* ---- etcd ----------------------------------------------------------------------------- */

void
blocks_ctx_clear (struct blocks_ctx *bc)
{
  etcd_close (bc->etcd);
  bc->etcd = NULL;
  block_list_clear (&bc->held, &bc->n_held);
  block_list_clear (&bc->pending, &bc->n_pending);
  block_list_clear (&bc->stale, &bc->n_stale);
}

int
blocks_etcd (struct blocks_ctx *bc, roce_error_t *err)
{
  if (bc->etcd == NULL && ! linkage_can_load (bc->linkage))
    return linkage_needs_engine (err, "etcd's client (libcurl)");
  if (bc->etcd == NULL && etcd_open (&bc->p->cluster->etcd, &bc->etcd, err) < 0)
    return -1;
  return 0;
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

  if (blocks_etcd (&bc, &err) < 0 || etcd_version (bc.etcd, &pr->version, &pr->endpoint, &err) < 0)
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
  fprintf (out,
           "addressing: cluster, node %s, blocks of %u, reserve %u, %zu blocks held; etcd %s%s: ",
           c->node, c->block, c->reserve, pr.blocks, eps,
           c->etcd.cert     ? " (TLS, client certificate)"
           : c->etcd.cacert ? " (TLS)"
                            : "");
  if (pr.error)
    roce_print (out, "UNREACHABLE: %s (starts that need a new block are refused)", pr.error);
  else
    roce_print (out, "etcd %s answered at %s", pr.version, pr.endpoint);
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
