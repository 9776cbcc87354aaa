/* SPDX-License-Identifier: Apache-2.0 */
/* A fresh node's claim whatever the layout of the blocks held: the
 * transactions it makes, counted on a small etcd of the test's own (its
 * transactions as etcd's gateway takes and answers them: compares,
 * puts, ranges with an end, a limit, keys or a count alone).  Against a
 * real etcd: contrib/bench/cluster.sh.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam/blocks/blocks.h"
#include "ipam/blocks/blocks_int.h"
#include "ipam/blocks/etcd.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "spec/policy.h"
#include "unit.h"

TestSuite (claim, .init = tree_setup, .fini = tree_teardown);

struct kv
{
  char *key, *value;
  int64_t mod;
};

struct fake
{
  struct kv *v; /* sorted by key */
  size_t n;
  int64_t rev;
  unsigned writes, reads; /* transactions with a put, and read-only ones */
};

static int
cmp_key (const void *k, const void *kv)
{
  return strcmp (k, ((const struct kv *) kv)->key);
}

static struct kv *
fake_get (struct fake *f, const char *key)
{
  return f->n ? bsearch (key, f->v, f->n, sizeof (*f->v), cmp_key) : NULL;
}

/* The first key not below key.  */
static size_t
fake_from (const struct fake *f, const char *key)
{
  size_t lo = 0, hi = f->n;
  while (lo < hi)
    {
      size_t mid = (lo + hi) / 2;
      if (strcmp (f->v[mid].key, key) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

static void
fake_put (struct fake *f, const char *key, const char *value)
{
  struct kv *kv = fake_get (f, key);
  size_t i = fake_from (f, key);
  f->rev++;
  if (kv)
    {
      free (kv->value);
      kv->value = xstrdup (value);
      kv->mod = f->rev;
      return;
    }
  f->v = xrealloc (f->v, (f->n + 1) * sizeof (*f->v));
  memmove (&f->v[i + 1], &f->v[i], (f->n - i) * sizeof (*f->v));
  f->v[i] = (struct kv){ xstrdup (key), xstrdup (value), f->rev };
  f->n++;
}

static int
cmp_kv (const void *a, const void *b)
{
  return strcmp (((const struct kv *) a)->key, ((const struct kv *) b)->key);
}

static void
fake_free (struct fake *f)
{
  for (size_t i = 0; i < f->n; i++)
    free (f->v[i].key), free (f->v[i].value);
  free (f->v);
}

/* A base64 member's text ("" when absent).  */
static char *
b64 (const struct json *o, const char *k)
{
  const struct json *m = json_object_get (o, k);
  return m ? etcd_b64_decode (json_string (m), NULL) : xstrdup ("");
}

static bool
flag (const struct json *o, const char *k)
{
  return json_type (json_object_get (o, k)) == JSON_TRUE;
}

static bool
holds (struct fake *f, const struct json *cmp)
{
  cleanup_free char *key = b64 (cmp, "key");
  const char *target = json_string (json_object_get (cmp, "target"));
  struct kv *kv = fake_get (f, key);
  if (strcmp (target, "CREATE") == 0)
    return kv == NULL;
  if (strcmp (target, "VALUE") == 0)
    {
      cleanup_free char *v = b64 (cmp, "value");
      return kv && strcmp (kv->value, v) == 0;
    }
  return kv && kv->mod == strtoll (json_string (json_object_get (cmp, "mod_revision")), NULL, 10);
}

static void
gen_b64 (struct json_gen *g, const char *k, const char *s)
{
  cleanup_free char *e = etcd_b64_encode (s, strlen (s));
  json_gen_kv_string (g, k, e);
}

/* A range's members, as etcd answers them: kvs, more, count.  */
static void
range_members (struct fake *f, const struct json *rq, struct json_gen *g)
{
  size_t klen = 0;
  cleanup_free char *key = etcd_b64_decode (json_string (json_object_get (rq, "key")), &klen);
  cleanup_free char *end = b64 (rq, "range_end");
  const struct json *lim = json_object_get (rq, "limit");
  long long limit = lim ? strtoll (json_string (lim), NULL, 10) : 0, count = 0, given = 0;
  bool after = klen > strlen (key); /* the key and a NUL: the next key */
  char num[24];

  json_gen_string (g, "kvs");
  json_gen_array_open (g);
  for (size_t i = fake_from (f, key); i < f->n; i++)
    {
      const struct kv *kv = &f->v[i];
      if (end[0] ? strcmp (kv->key, end) >= 0 : strcmp (kv->key, key) != 0)
        break;
      if (after && strcmp (kv->key, key) == 0)
        continue;
      count++;
      if (flag (rq, "count_only") || (limit && given == limit))
        continue;
      given++;
      json_gen_map_open (g);
      gen_b64 (g, "key", kv->key);
      if (! flag (rq, "keys_only"))
        gen_b64 (g, "value", kv->value);
      snprintf (num, sizeof (num), "%lld", (long long) kv->mod);
      json_gen_kv_string (g, "mod_revision", num);
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  if (count > given && ! flag (rq, "count_only"))
    {
      json_gen_string (g, "more");
      json_gen_bool (g, true);
    }
  snprintf (num, sizeof (num), "%lld", count);
  json_gen_kv_string (g, "count", num);
}

static void
gen_header (struct fake *f, struct json_gen *g)
{
  char rev[24];
  snprintf (rev, sizeof (rev), "%lld", (long long) (f->rev + 1));
  json_gen_string (g, "header");
  json_gen_map_open (g);
  json_gen_kv_string (g, "revision", rev);
  json_gen_map_close (g);
}

/* /v3/kv/txn and /v3/kv/range as etcd answers them.  */
static int
fake_answer (void *arg, const char *path, const char *body, char **answer, size_t *len)
{
  struct fake *f = arg;
  cleanup_error roce_error_t err = NULL;
  cleanup_json struct json *j = NULL;
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const struct json *cmps, *ops;
  const char *out;
  bool ok = true, writes = false;

  cr_assert_eq (json_parse (body, &j, &err), 0);
  json_gen_map_open (g);
  gen_header (f, g);
  if (strcmp (path, "/v3/kv/range") == 0)
    {
      f->reads++;
      range_members (f, j, g);
      goto done;
    }
  cr_assert_str_eq (path, "/v3/kv/txn");
  cmps = json_object_get (j, "compare");
  for (size_t i = 0; i < json_array_len (cmps); i++)
    ok = ok && holds (f, json_array_at (cmps, i));
  for (int b = 0; b < 2; b++)
    {
      const struct json *br = json_object_get (j, b ? "failure" : "success");
      for (size_t i = 0; i < json_array_len (br); i++)
        writes = writes || json_object_get (json_array_at (br, i), "requestPut");
    }
  if (writes)
    f->writes++;
  else
    f->reads++;
  ops = json_object_get (j, ok ? "success" : "failure");
  json_gen_string (g, "responses");
  json_gen_array_open (g);
  for (size_t i = 0; i < json_array_len (ops); i++)
    {
      const struct json *op = json_array_at (ops, i), *rq;
      json_gen_map_open (g);
      if ((rq = json_object_get (op, "requestPut")))
        {
          cleanup_free char *k = b64 (rq, "key");
          cleanup_free char *v = b64 (rq, "value");
          fake_put (f, k, v);
          json_gen_string (g, "response_put");
          json_gen_map_open (g);
          json_gen_map_close (g);
        }
      else
        {
          json_gen_string (g, "response_range");
          json_gen_map_open (g);
          range_members (f, json_object_get (op, "requestRange"), g);
          json_gen_map_close (g);
        }
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  if (ok)
    {
      json_gen_string (g, "succeeded");
      json_gen_bool (g, true);
    }
done:
  json_gen_map_close (g);
  cr_assert_eq (json_gen_result (g, &out, len, &err), 0);
  *answer = xstrdup (out);
  return 0;
}

/* Blocks of 4 of 198.18.0.0/16 held by others: every one whose index i
 * (0..16,383) held(i) says.  */
/* The pool both families' tests claim in: 16,384 blocks of 4, in groups of
 * 64 (an IPv4 /24, an IPv6 key's last two hex digits).  */
static bool v6;

static void
fill (struct fake *f, bool (*held) (unsigned i))
{
  if (v6)
    fake_put (f, "/roce-hook/geometry/2001:0002:0000:0010:0000:0000:0000:0000_64", "{\"block\":4}");
  else
    fake_put (f, "/roce-hook/geometry/198.18.0.0_16", "{\"block\":4}");
  for (unsigned i = 0; i < 16384; i++)
    if (held (i))
      {
        f->v = xrealloc (f->v, (f->n + 1) * sizeof (*f->v));
        f->v[f->n++] = (struct kv){
          v6 ? xasprintf ("/roce-hook/blocks/2001:0002:0000:0010:0000:0000:0000:0000_64/"
                          "2001:0002:0000:0010:0000:0000:0000:%04x",
                          i * 4)
             : xasprintf ("/roce-hook/blocks/198.18.0.0_16/198.18.%u.%u", i / 64, i % 64 * 4),
          xstrdup ("{\"node\":\"old\",\"since\":1,\"size\":4}"), ++f->rev
        };
      }
  qsort (f->v, f->n, sizeof (*f->v), cmp_kv);
}

/* A node of a /16 (or an IPv6 pool of as many addresses) cut in blocks of
 * 4, its state_dir in the test's tree.  */
static char *
policy_doc (void)
{
  return xasprintf ("{\"state_dir\":\"%s/state\",\"hcas\":{\"mlx5_0\":{\"subnet\":\"%s\","
                    "\"pool\":\"%s\"}},\"cluster\":{\"node\":\"n\",\"block\":4,"
                    "\"etcd\":{\"endpoints\":[\"http://127.0.0.1:1\"]}}}",
                    tree_root, v6 ? "2001:2:0:10::/64" : "198.18.0.0/16",
                    v6 ? "2001:2:0:10::2-2001:2:0:10::ffff" : "198.18.0.2-198.18.255.254");
}

/* n fresh nodes claim a block each, one after another: the most
 * transactions with a put, and read-only, that one of them made.  */
static void
claims (struct fake *f, unsigned n, unsigned *most_writes, unsigned *most_reads)
{
  static const struct policy_etcd conf = { .timeout_ms = 60000 };
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *doc = policy_doc ();

  tree_mk ("state/intents/x", NULL);
  cr_assert_eq (policy_parse (doc, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  *most_writes = *most_reads = 0;
  for (unsigned k = 0; k < n; k++)
    {
      struct blocks_ctx bc = { .p = p };
      unsigned w = f->writes, r = f->reads;
      snprintf (bc.id, sizeof (bc.id), "%016llx%016llx",
                (unsigned long long) k * 0x9e3779b97f4a7c15ULL,
                (unsigned long long) (k + 1) * 0xbf58476d1ce4e5b9ULL);
      cr_assert_eq (etcd_open_transport (&conf, fake_answer, f, &bc.etcd), 0);
      cr_assert_eq (blocks_claim_any (&bc, &p->hcas[0], &p->hcas[0].net[0], &err), 0, "%s",
                    err ? err->msg : "");
      cr_assert_eq (bc.n_pending, 1);
      if (f->writes - w > *most_writes)
        *most_writes = f->writes - w;
      if (f->reads - r > *most_reads)
        *most_reads = f->reads - r;
      blocks_ctx_clear (&bc);
    }
}

static bool
from_start (unsigned i)
{
  return i < 12000; /* as versions that claimed lowest-first left them */
}

static bool
at_end (unsigned i)
{
  return i >= 16384 - 12000;
}

static bool
every_other_group (unsigned i)
{
  return i / 64 % 2 == 0;
}

static bool
spread (unsigned i)
{
  return (i * 2654435761u) % 16384 < 4000;
}

/* Before, a try that landed in a full group was followed by one at random:
 * with 12,000 of 16,384 blocks held from the pool's start one of 40 claims
 * took 10 or 11 transactions with a put (two runs).  Now a full group sends
 * the claim to where etcd counts room: two writes at most, two reads.  */
static void
flat_layouts (void)
{
  static const struct
  {
    const char *name;
    bool (*held) (unsigned i);
  } layouts[] = { { "12,000 from the pool's start", from_start },
                  { "12,000 at its end", at_end },
                  { "every other group", every_other_group },
                  { "4,000 spread", spread } };

  for (size_t l = 0; l < sizeof (layouts) / sizeof (*layouts); l++)
    {
      struct fake f = { 0 };
      unsigned w, r;
      fill (&f, layouts[l].held);
      claims (&f, 40, &w, &r);
      cr_assert_leq (w, 2, "%s%s: a claim took %u transactions with a put", layouts[l].name,
                     v6 ? " (IPv6)" : "", w);
      cr_assert_leq (r, 2, "%s%s: a claim took %u reads", layouts[l].name, v6 ? " (IPv6)" : "", r);
      fake_free (&f);
    }
}

Test (claim, flat_whatever_the_layout)
{
  flat_layouts ();
}

/* The same in an IPv6 pool: its keys group by hex digits, and etcd counts
 * them as it counts an IPv4 pool's (before, a full page was followed by a
 * try at random: from the pool's start one of 40 claims took 10 writes).  */
Test (claim, flat_whatever_the_layout_in_an_ipv6_pool)
{
  v6 = true;
  flat_layouts ();
}

static bool
every_one (unsigned i)
{
  (void) i;
  return true;
}

/* A pool etcd counts full is refused after one count and the scan, not
 * after sixteen tries (16 transactions with a put before).  The budgets
 * here are wide: the tests count transactions, and the scan of 16,384 keys
 * from the fake member takes seconds under ASan.  */
Test (claim, a_full_pool_is_refused_after_one_try)
{
  static const struct policy_etcd conf = { .timeout_ms = 60000 };
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *doc = policy_doc ();
  struct blocks_ctx bc = { .p = NULL, .id = "0123456789abcdef0123456789abcdef" };
  struct fake f = { 0 };
  int r;

  tree_mk ("state/intents/x", NULL);
  cr_assert_eq (policy_parse (doc, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  bc.p = p;
  fill (&f, every_one);
  cr_assert_eq (etcd_open_transport (&conf, fake_answer, &f, &bc.etcd), 0);
  r = blocks_claim_any (&bc, &p->hcas[0], &p->hcas[0].net[0], &err);
  assert_err_contains (r, err, "all 16384 held");
  cr_assert_eq (f.writes, 1, "transactions with a put: %u", f.writes);
  blocks_ctx_clear (&bc);
  fake_free (&f);
}
