/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster addressing: the policy section, the etcd client's wire format,
 * the block geometry.  (Against a real etcd: tests/integration/cluster.sh.) */
#include <stdlib.h>
#include <string.h>

#include "ipam/blocks/blocks.h"
#include "ipam/blocks/etcd.h"
#include "ipam/ipam_int.h"
#include "ipam/lease.h"
#include "lib/utils.h"
#include "spec/policy.h"
#include "unit.h"

static const char *base = "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.20.0/"
                          "23\",\"pool\":\"198.18.20.10-198.18.21.200\"}},";

static int
parse (const char *cluster, struct roce_policy **p, roce_error_t *err)
{
  cleanup_free char *doc = xasprintf ("%s\"cluster\":%s}", base, cluster);
  return policy_parse (doc, "p.json", p, err);
}

static void
refused (const char *cluster, const char *needle)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  int r = parse (cluster, &p, &err);
  policy_free (p);
  assert_err_contains (r, err, needle);
}

Test (cluster, policy_defaults)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  cr_assert_eq (parse ("{\"etcd\":{\"endpoints\":[\"http://127.0.0.1:2379/\"]}}", &p, &err), 0,
                "%s", err ? err->msg : "");
  cr_assert_not_null (p->cluster);
  cr_assert_gt (strlen (p->cluster->node), 0, "node defaults to the host name");
  cr_assert_str_eq (p->cluster->etcd.endpoints[0], "http://127.0.0.1:2379");
  cr_assert_str_eq (p->cluster->etcd.prefix, "/roce-hook/");
  cr_assert_eq (p->cluster->etcd.timeout_ms, CLUSTER_TIMEOUT_MS);
  cr_assert_eq (p->cluster->block, 16);
  cr_assert_eq (p->cluster->reserve, CLUSTER_RESERVE);
}

Test (cluster, policy_without_cluster_is_node_local)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *doc = xasprintf ("%s\"state_dir\":\"/x\"}", base);
  cr_assert_eq (policy_parse (doc, "p.json", &p, &err), 0);
  cr_assert_null (p->cluster);
}

Test (cluster, policy_refusals_name_the_key)
{
  refused ("[]", "cluster: expected an object");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"bogus\":1}", "cluster.bogus: unknown key");
  refused ("{}", "cluster.etcd: missing");
  refused ("{\"etcd\":{}}", "cluster.etcd.endpoints: missing");
  refused ("{\"etcd\":{\"endpoints\":[]}}", "cluster.etcd.endpoints: expected an array of 1..16");
  refused ("{\"etcd\":{\"endpoints\":[\"ftp://a:1\"]}}",
           "cluster.etcd.endpoints[0]: expected a URL");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a b:1\"]}}", "cluster.etcd.endpoints[0]");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"],\"prefix\":\"x\"}}",
           "cluster.etcd.prefix: 'x' must start and end");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"],\"cert\":\"/c\"}}",
           "cluster.etcd.key: missing");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"],\"cacert\":\"/c\"}}",
           "cluster.etcd.cacert: TLS files given, but no endpoint is https://");
  refused ("{\"etcd\":{\"endpoints\":[\"https://a:1\"],\"cacert\":\"c\"}}",
           "cluster.etcd.cacert: 'c' is not an absolute path");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"],\"timeout_ms\":0}}",
           "cluster.etcd.timeout_ms: expected an integer in 10..60000");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"block\":12}",
           "cluster.block: 12 is not a power of two");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"block\":0}",
           "cluster.block: expected an integer in 1..65536");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"node\":\"a/b\"}",
           "cluster.node: expected a node name");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"reserve\":-1}", "cluster.reserve");
}

Test (cluster, base64_round_trip_and_strictness)
{
  const char *in[] = { "",     "f",     "fo",     "foo",
                       "foob", "fooba", "foobar", "/roce-hook/blocks/198.18.20.0_23/198.18.20.0" };
  const char *out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy", NULL };
  for (size_t i = 0; i < sizeof (in) / sizeof (in[0]); i++)
    {
      cleanup_free char *e = etcd_b64_encode (in[i], strlen (in[i]));
      cleanup_free char *d = NULL;
      size_t len = 0;
      if (out[i])
        cr_assert_str_eq (e, out[i]);
      d = etcd_b64_decode (e, &len);
      cr_assert_not_null (d);
      cr_assert_eq (len, strlen (in[i]));
      cr_assert_str_eq (d, in[i]);
    }
  cr_assert_null (etcd_b64_decode ("Zg=", NULL), "length not a multiple of 4");
  cr_assert_null (etcd_b64_decode ("Z===", NULL));
  cr_assert_null (etcd_b64_decode ("Zg==Zg==", NULL), "padding in the middle");
  cr_assert_null (etcd_b64_decode ("Zm9*", NULL));
  {
    cleanup_free char *end = etcd_prefix_end ("/roce-hook/");
    cr_assert_str_eq (end, "/roce-hook0");
  }
}

/* Answers as etcd 3.4.23's gateway gives them (recorded from a real etcd-server).  */
Test (cluster, txn_answers)
{
  cleanup_error roce_error_t err = NULL;
  struct etcd_kv kv = { 0 };
  const char *ok = "{\"header\":{\"cluster_id\":\"1\",\"revision\":\"2\"},\"succeeded\":true,"
                   "\"responses\":[{\"response_put\":{\"header\":{\"revision\":\"2\"}}}]}";
  /* key /k, value {"node":"b","since":5} */
  const char *lost
      = "{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_range\":{\"header\":{},"
        "\"kvs\":[{\"key\":\"L2s=\",\"create_revision\":\"2\",\"mod_revision\":\"2\",\"version\":"
        "\"1\","
        "\"value\":\"eyJub2RlIjoiYiIsInNpbmNlIjo1fQ==\"}],\"count\":\"1\"}}]}";
  cr_assert_eq (etcd_parse_txn (ok, strlen (ok), &kv, &err), 1);
  cr_assert_eq (etcd_parse_txn (lost, strlen (lost), &kv, &err), 0, "no `succeeded`: failed");
  cr_assert_str_eq (kv.key, "/k");
  cr_assert_str_eq (kv.value, "{\"node\":\"b\",\"since\":5}");
  cr_assert_eq (kv.create_revision, 2);
  {
    cleanup_free char *node = NULL;
    int64_t since = 0;
    cr_assert_eq (blocks_value_parse (kv.value, &node, NULL, &since, NULL, &err), 0);
    cr_assert_str_eq (node, "b");
    cr_assert_eq (since, 5);
  }
  etcd_kv_clear (&kv);
  {
    const char *noheader = "{\"error\":\"etcdserver: request timed out\",\"code\":14}";
    int r = etcd_parse_txn (noheader, strlen (noheader), &kv, &err);
    assert_err_contains (r, err, "no header");
  }
}

Test (cluster, hostile_answers_refused)
{
  const char *bad[] = {
    "{\"header\":{},\"succeeded\":\"yes\"}",
    "{\"header\":{},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":\"!!!!\"}]}}]}",
    /* a value that decodes to a control character */
    "{\"header\":{},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":\"L2s=\",\"value\":\"Gw=="
    "\"}]}}]}",
    "{\"header\":{},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":\"L2s=\",\"create_"
    "revision\":\"-1\"}]}}]}",
    "not json",
  };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct etcd_kv kv = { 0 };
      cr_assert_lt (etcd_parse_txn (bad[i], strlen (bad[i]), &kv, &err), 0, "accepted: %s", bad[i]);
      etcd_kv_clear (&kv);
    }
}

Test (cluster, range_and_delete_answers)
{
  cleanup_error roce_error_t err = NULL;
  struct etcd_kvs kvs = { 0 };
  int64_t deleted = -1;
  const char *empty = "{\"header\":{\"revision\":\"7\"}}";
  const char *two = "{\"header\":{},\"kvs\":[{\"key\":\"L2E=\",\"value\":\"MQ==\"},{\"key\":\"L2I="
                    "\",\"value\":\"Mg==\"}],\"count\":\"2\"}";
  const char *del = "{\"header\":{},\"succeeded\":true,\"responses\":[{\"response_delete_range\":{"
                    "\"header\":{},\"deleted\":\"1\"}}]}";
  const char *nodel = "{\"header\":{}}";
  cr_assert_eq (etcd_parse_range (empty, strlen (empty), &kvs, &err), 0);
  cr_assert_eq (kvs.n, 0);
  cr_assert_eq (etcd_parse_range (two, strlen (two), &kvs, &err), 0);
  cr_assert_eq (kvs.n, 2);
  cr_assert_str_eq (kvs.v[1].key, "/b");
  cr_assert_str_eq (kvs.v[1].value, "2");
  etcd_kvs_clear (&kvs);
  cr_assert_eq (etcd_parse_txn_deleted (del, strlen (del), &deleted, &err), 1);
  cr_assert_eq (deleted, 1);
  cr_assert_eq (etcd_parse_txn_deleted (nodel, strlen (nodel), &deleted, &err), 0);
}

Test (cluster, block_geometry_and_keys)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  const struct policy_hca *h;
  struct roce_addr lo, hi, a, first, al;
  struct roce_cidr sub;
  char s1[ADDR_STR_MAX], s2[ADDR_STR_MAX];

  cr_assert_eq (
      parse (
          "{\"node\":\"n1\",\"etcd\":{\"endpoints\":[\"http://127.0.0.1:1\"],\"prefix\":\"/r/\"}}",
          &p, &err),
      0);
  h = &p->hcas[0];
  addr_parse ("198.18.20.13", &a);
  al = blocks_align (p->cluster, &a);
  cr_assert_str_eq (addr_format (&al, s1), "198.18.20.0");
  /* The first block is cut by the pool's start, the last by its end.  */
  cr_assert (blocks_usable (p->cluster, &h->net[0], &al, &lo, &hi));
  cr_assert_str_eq (addr_format (&lo, s1), "198.18.20.10");
  cr_assert_str_eq (addr_format (&hi, s2), "198.18.20.15");
  addr_parse ("198.18.21.192", &a);
  cr_assert (blocks_usable (p->cluster, &h->net[0], &a, &lo, &hi));
  cr_assert_str_eq (addr_format (&hi, s2), "198.18.21.200");
  addr_parse ("198.18.21.208", &a);
  cr_assert_not (blocks_usable (p->cluster, &h->net[0], &a, &lo, &hi), "a block past the pool");
  {
    struct roce_addr b = blocks_align (p->cluster, &a);
    cleanup_free char *key = blocks_key (p->cluster, &h->net[0].subnet, &b);
    cr_assert_str_eq (key, "/r/blocks/198.18.20.0_23/198.18.21.208");
    cr_assert_eq (blocks_key_parse (p->cluster, key, &sub, &first), 0);
    cr_assert (cidr_eq (&sub, &h->net[0].subnet));
    cr_assert_eq (sub.prefix, 23);
    cr_assert (addr_eq (&first, &a));
    cr_assert_lt (
        blocks_key_parse (p->cluster, "/other/blocks/198.18.20.0_23/198.18.21.208", &sub, &first),
        0);
    cr_assert_lt (blocks_key_parse (p->cluster, "/r/blocks/198.18.20.0/23/x", &sub, &first), 0);
  }
  {
    const char *id = "0123456789abcdef0123456789abcdef";
    cleanup_free char *v = blocks_value ("n1", id, 17, 16);
    cleanup_free char *old = blocks_value ("n1", NULL, 17, 16);
    cleanup_free char *node = NULL, *vid = NULL;
    unsigned size = 0;
    int64_t since = 0;
    cr_assert_str_eq (
        v, "{\"node\":\"n1\",\"id\":\"0123456789abcdef0123456789abcdef\",\"since\":17,\"size\":16}",
        "one canonical serialization");
    cr_assert_eq (blocks_value_parse (v, &node, &vid, &since, &size, &err), 0);
    cr_assert_eq (size, 16);
    cr_assert_str_eq (vid, id);
    /* Mine: the name and the id; the same name with another id (another
     * machine) or without one (an earlier version) is not.  */
    cr_assert (blocks_value_is_mine (p->cluster, id, v));
    cr_assert_not (blocks_value_is_mine (p->cluster, "ffffffffffffffffffffffffffffffff", v));
    cr_assert_not (blocks_value_is_mine (p->cluster, id, old));
    /* Another's: another name, or this name with another id; a value of
     * an earlier version (no id) is not another's, nor is this node's.  */
    {
      cleanup_free char *other = blocks_value ("n2", id, 17, 16);
      cr_assert_not (blocks_value_is_other (p->cluster, id, v));
      cr_assert (blocks_value_is_other (p->cluster, "ffffffffffffffffffffffffffffffff", v));
      cr_assert_not (blocks_value_is_other (p->cluster, id, old));
      cr_assert (blocks_value_is_other (p->cluster, id, other));
      cr_assert (blocks_value_is_other (p->cluster, id, "{\"node\":"));
    }
  }
  {
    cleanup_free char *node = NULL, *id = NULL;
    int64_t since = 0;
    cr_assert_lt (blocks_value_parse ("{\"node\":\"n1\",\"id\":\"../x\",\"since\":1}", &node, &id,
                                      &since, NULL, &err),
                  0);
    roce_error_release (&err);
  }
  {
    cleanup_free char *lv = blocks_liveness_value ("n1", "0123456789abcdef0123456789abcdef");
    cleanup_free char *node = NULL, *id = NULL;
    cr_assert_str_eq (lv, "{\"id\":\"0123456789abcdef0123456789abcdef\",\"node\":\"n1\"}");
    cr_assert_eq (blocks_liveness_parse (lv, &node, &id, &err), 0);
    cr_assert_str_eq (node, "n1");
  }
  {
    cleanup_free char *node = NULL;
    unsigned size = 0;
    int64_t since = 0;
    cr_assert_lt (
        blocks_value_parse ("{\"node\":\"n1\",\"size\":12}", &node, NULL, &since, &size, &err), 0);
  }
}

/* An IPv6 /64 pool in blocks of 16: aligned and cut by arithmetic (2^60
 * blocks, never walked), keys with every group in full so that one block
 * has one key, and the blocks of a dual-stack rail's two nets apart.  */
Test (cluster, ipv6_block_geometry_and_keys)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  const struct policy_net *n6;
  struct roce_addr lo, hi, a, first, al;
  struct roce_cidr sub;
  char s1[ADDR_STR_MAX], s2[ADDR_STR_MAX];
  const char *doc = "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.20.0/23\",\"pool\":"
                    "\"198.18.20.10-198.18.21.200\",\"subnet6\":\"2001:2:0:20::/64\",\"pool6\":"
                    "\"2001:2:0:20::/64\"}},\"cluster\":{\"node\":\"n1\",\"etcd\":{"
                    "\"endpoints\":[\"http://127.0.0.1:1\"],\"prefix\":\"/r/\"}}}";

  cr_assert_eq (policy_parse (doc, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  n6 = policy_hca_net (&p->hcas[0], AF_INET6);
  cr_assert_not_null (n6);
  /* The pool's first address skips the subnet-router anycast one.  */
  cr_assert_str_eq (addr_format (&n6->pool_first, s1), "2001:2:0:20::1");
  cr_assert_str_eq (addr_format (&n6->pool_last, s2), "2001:2:0:20:ffff:ffff:ffff:ffff");
  addr_parse ("2001:2:0:20::13", &a);
  al = blocks_align (p->cluster, &a);
  cr_assert_str_eq (addr_format (&al, s1), "2001:2:0:20::10");
  addr_parse ("2001:2:0:20::", &a);
  cr_assert (blocks_usable (p->cluster, n6, &a, &lo, &hi));
  cr_assert_str_eq (addr_format (&lo, s1), "2001:2:0:20::1");
  cr_assert_str_eq (addr_format (&hi, s2), "2001:2:0:20::f");
  addr_parse ("2001:2:0:20:ffff:ffff:ffff:fff0", &a);
  cr_assert (blocks_usable (p->cluster, n6, &a, &lo, &hi), "the last block of the /64");
  cr_assert_not (blocks_usable (p->cluster, &p->hcas[0].net[0], &a, &lo, &hi),
                 "an IPv6 block in the IPv4 pool");
  cr_assert_eq (blocks_max (p, n6), blocks_max (p, &p->hcas[0].net[0]));
  {
    cleanup_free char *key = blocks_key (p->cluster, &n6->subnet, &a);
    cr_assert_str_eq (key, "/r/blocks/2001:0002:0000:0020:0000:0000:0000:0000_64/"
                           "2001:0002:0000:0020:ffff:ffff:ffff:fff0");
    cr_assert_eq (blocks_key_parse (p->cluster, key, &sub, &first), 0);
    cr_assert (cidr_eq (&sub, &n6->subnet));
    cr_assert (addr_eq (&first, &a));
    /* A block outside its subnet is no block of it.  */
    cr_assert_lt (blocks_key_parse (p->cluster,
                                    "/r/blocks/2001:0002:0000:0020:0000:0000:0000:0000_64/"
                                    "2001:0002:0000:0021:0000:0000:0000:0000",
                                    &sub, &first),
                  0);
  }
}

/* The store keeps the held blocks across a write and a read, and a file
 * without them (node-local) reads as before.  */
Test (cluster, store_keeps_blocks)
{
  cleanup_error roce_error_t err = NULL;
  struct lease_store s = { .dir_fd = -1, .lock_fd = -1 }, t = { .dir_fd = -1, .lock_fd = -1 };
  struct roce_cidr sub = { 0 };
  cleanup_free char *text = NULL, *plain = NULL;
  cidr_parse ("198.18.20.0/23", &sub);
  plain = lease_store_format (&s);
  cr_assert_null (strstr (plain, "blocks"), "node-local: no blocks member");
  lease_block_add (&s, &sub, (struct roce_addr[]){ addr_add (&sub.addr, 16) },
                   (struct roce_addr[]){ addr_add (&sub.addr, 31) }, 100,
                   "{\"node\":\"n1\",\"since\":100}")
      ->empty_since
      = 7;
  s.blocks[0].rev = 41;
  text = lease_store_format (&s);
  cr_assert_eq (lease_store_parse (&t, text, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (t.n_blocks, 1);
  cr_assert (t.blocks[0].first.v == sub.addr.v + 16);
  cr_assert (t.blocks[0].last.v == sub.addr.v + 31);
  cr_assert_eq (t.blocks[0].empty_since, 7);
  cr_assert_eq (t.blocks[0].rev, 41, "the revision gc releases it at");
  cr_assert_str_eq (t.blocks[0].value, "{\"node\":\"n1\",\"since\":100}");
  lease_block_drop (&s, 0);
  lease_block_drop (&t, 0);
  free (s.blocks);
  free (t.blocks);
}

/* A claim's transaction: create only when absent and the geometry is ours;
 * its failure branch reads the key, the geometry and a page of keys (only
 * keys) from the tried one on.  */
Test (cluster, claim_txn_body_and_answer)
{
  cleanup_error roce_error_t err = NULL;
  struct etcd_cmp cmps[]
      = { { .key = "/r/blocks/s/1" }, { .key = "/r/geometry/s", .value = "{\"block\":16}" } };
  struct etcd_op put = { .kind = ETCD_OP_PUT, .key = "/r/blocks/s/1", .value = "v" };
  struct etcd_op fail[] = {
    { .kind = ETCD_OP_RANGE, .key = "/r/blocks/s/1" },
    { .kind = ETCD_OP_RANGE,
      .key = "/r/blocks/s/1",
      .range_end = "/r/blocks/s0",
      .limit = 64,
      .keys_only = true },
  };
  cleanup_free char *body = etcd_txn_body (cmps, 2, &put, 1, fail, 2);
  cleanup_free char *k = etcd_b64_encode ("/r/blocks/s/1", 13);
  cleanup_free char *g = etcd_b64_encode ("/r/geometry/s", 13);
  cleanup_free char *want
      = xasprintf ("{\"compare\":[{\"target\":\"CREATE\",\"key\":\"%s\",\"createRevision\":\"0\"},"
                   "{\"target\":\"VALUE\",\"key\":\"%s\",\"value\":\"eyJibG9jayI6MTZ9\"}],"
                   "\"success\":[{\"requestPut\":{\"key\":\"%s\",\"value\":\"dg==\"}}],"
                   "\"failure\":[{\"requestRange\":{\"key\":\"%s\"}},"
                   "{\"requestRange\":{\"key\":\"%s\",\"range_end\":\"L3IvYmxvY2tzL3Mw\","
                   "\"limit\":\"64\",\"keys_only\":true}}]}",
                   k, g, k, k, k);
  cr_assert_str_eq (body, want);
  {
    /* Failed: the key (another node's), no geometry, a page of two keys, more.  */
    const char *ans = "{\"header\":{\"revision\":\"9\"},\"responses\":["
                      "{\"response_range\":{\"header\":{},\"kvs\":[{\"key\":\"L2s=\",\"value\":"
                      "\"eA==\"}],\"count\":\"1\"}},"
                      "{\"response_range\":{\"header\":{}}},"
                      "{\"response_range\":{\"header\":{},\"kvs\":[{\"key\":\"L2E=\"},{\"key\":"
                      "\"L2I=\"}],\"more\":true,\"count\":\"9\"}}]}";
    struct etcd_op asked[] = {
      { .kind = ETCD_OP_RANGE, .key = "/k" },
      { .kind = ETCD_OP_RANGE, .key = "/g" },
      { .kind = ETCD_OP_RANGE, .key = "/a", .range_end = "/c", .limit = 64, .keys_only = true },
    };
    struct etcd_txn t = { 0 };
    cr_assert_eq (etcd_parse_txn_full (ans, strlen (ans), &put, 1, asked, 3, &t, &err), 0, "%s",
                  err ? err->msg : "");
    cr_assert_not (t.succeeded);
    cr_assert_eq (t.revision, 9);
    cr_assert_eq (t.ranges[0].n, 1);
    cr_assert_str_eq (t.ranges[0].v[0].value, "x");
    cr_assert_eq (t.ranges[1].n, 0, "no geometry key");
    cr_assert_eq (t.ranges[2].n, 2);
    cr_assert_str_eq (t.ranges[2].v[1].key, "/b");
    cr_assert_str_eq (t.ranges[2].v[1].value, "", "keys only");
    cr_assert (t.more[2]);
    cr_assert_not (t.more[0]);
    etcd_txn_clear (&t);
  }
  {
    const char *bad = "{\"header\":{\"revision\":\"1\"},\"responses\":{}}";
    struct etcd_txn t = { 0 };
    int r = etcd_parse_txn_full (bad, strlen (bad), &put, 1, NULL, 0, &t, &err);
    etcd_txn_clear (&t);
    assert_err_contains (r, err, "responses is not an array");
  }
}

/* A txn's answer is checked against what was asked, as a tenant's input
 * is: one response per request, of its kind; a range's keys inside it, in
 * order, within its limit; "more" only with a key to go on from.  */
Test (cluster, txn_answers_that_do_not_answer_the_request_refused)
{
  struct etcd_op one = { .kind = ETCD_OP_RANGE, .key = "/r/b/1" };
  struct etcd_op page = { .kind = ETCD_OP_RANGE, .key = "/r/b/", .range_end = "/r/b0", .limit = 2 };
  struct etcd_op put = { .kind = ETCD_OP_PUT, .key = "/r/b/1", .value = "v" };
  static const struct
  {
    const char *ans;
    int which; /* 0: one, 1: page, 2: put (success branch) */
    const char *says;
  } bad[] = {
    /* L3IvYi8y: "/r/b/2" for a range of "/r/b/1" */
    { "{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":"
      "\"L3IvYi8y\",\"value\":\"eA==\"}]}}]}",
      0, "a key outside the range asked" },
    /* L3I=: "/r", shorter than the prefix */
    { "{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":"
      "\"L3I=\"}],\"more\":true}}]}",
      1, "a key outside the range asked" },
    /* "/r/b/2" then "/r/b/1" */
    { "{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":"
      "\"L3IvYi8y\"},{\"key\":\"L3IvYi8x\"}]}}]}",
      1, "keys out of order" },
    { "{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_range\":{\"more\":true}}]}", 1,
      "more keys said, none given" },
    { "{\"header\":{\"revision\":\"3\"},\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":"
      "\"L3IvYi8x\"},{\"key\":\"L3IvYi8y\"},{\"key\":\"L3IvYi8z\"}]}}]}",
      1, "3 keys for a limit of 2" },
    { "{\"header\":{\"revision\":\"3\"},\"responses\":[]}", 0, "0 responses for 1 requests" },
    { "{\"header\":{\"revision\":\"3\"},\"succeeded\":true,\"responses\":[{\"response_range\":{}}]"
      "}",
      2, "no responses[0].response_put" },
    { "{\"header\":{},\"succeeded\":true,\"responses\":[{\"response_put\":{}}]}", 2,
      "a header without a revision" },
  };
  for (size_t i = 0; i < sizeof (bad) / sizeof (*bad); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct etcd_txn t = { 0 };
      const struct etcd_op *o = bad[i].which == 0 ? &one : bad[i].which == 1 ? &page : &put;
      int r = bad[i].which == 2
                  ? etcd_parse_txn_full (bad[i].ans, strlen (bad[i].ans), o, 1, NULL, 0, &t, &err)
                  : etcd_parse_txn_full (bad[i].ans, strlen (bad[i].ans), NULL, 0, o, 1, &t, &err);
      etcd_txn_clear (&t);
      cr_assert_lt (r, 0, "case %zu accepted", i);
      assert_err_contains (r, err, bad[i].says);
    }
}

/* max_blocks: given, or CLUSTER_ADDRS_PER_HCA addresses per HCA of the
 * subnet in blocks (at least 2); the liveness TTL's bounds.  */
Test (cluster, max_blocks_and_liveness_ttl)
{
  cleanup_error roce_error_t err = NULL;
  {
    cleanup_policy struct roce_policy *p = NULL;
    cr_assert_eq (parse ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"block\":4}", &p, &err), 0);
    cr_assert_eq (blocks_max (p, &p->hcas[0].net[0]), CLUSTER_ADDRS_PER_HCA / 4);
    cr_assert_eq (p->cluster->liveness_ttl_s, CLUSTER_LIVENESS_TTL_S);
    cr_assert_eq (p->cluster->max_static_blocks, CLUSTER_MAX_STATIC_BLOCKS);
  }
  {
    cleanup_policy struct roce_policy *p = NULL;
    cr_assert_eq (
        parse ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"max_static_blocks\":0}", &p, &err), 0,
        "0: roce.io/ip only inside the node's blocks");
    cr_assert_eq (p->cluster->max_static_blocks, 0);
  }
  {
    cleanup_policy struct roce_policy *p = NULL;
    cr_assert_eq (parse ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"block\":1024}", &p, &err),
                  0);
    cr_assert_eq (blocks_max (p, &p->hcas[0].net[0]), 2);
  }
  {
    cleanup_policy struct roce_policy *p = NULL;
    cr_assert_eq (
        parse ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"max_blocks\":3,\"liveness_ttl_s\":60}",
               &p, &err),
        0);
    cr_assert_eq (blocks_max (p, &p->hcas[0].net[0]), 3);
    cr_assert_eq (p->cluster->liveness_ttl_s, 60);
  }
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"max_blocks\":0}",
           "cluster.max_blocks: expected an integer in 1..");
  refused ("{\"etcd\":{\"endpoints\":[\"http://a:1\"]},\"liveness_ttl_s\":5}",
           "cluster.liveness_ttl_s: expected an integer in 10..");
}

/* A member that answers a listing's every page with the same page, "more"
 * and all: the listing ends at the second page, naming the fault, instead
 * of paging for ever (each page got a budget of its own before).  */
struct same_page
{
  const char *ans;
  unsigned calls;
};

static int
same_page_answer (void *arg, const char *path, const char *body, char **answer, size_t *len)
{
  struct same_page *sp = arg;
  (void) path;
  (void) body;
  sp->calls++;
  *answer = xstrdup (sp->ans);
  *len = strlen (sp->ans);
  return 0;
}

static int
count_kv (const struct etcd_kv *kv, void *arg)
{
  (void) kv;
  (*(size_t *) arg)++;
  return 0;
}

Test (cluster, a_listing_that_does_not_move_on_ends)
{
  static const struct policy_etcd conf = { .timeout_ms = 2000 };
  /* L3IvYi8x: "/r/b/1" */
  struct same_page sp
      = { .ans = "{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"L3IvYi8x\"}],"
                 "\"more\":true}" };
  cleanup_etcd_client struct etcd_client *c = NULL;
  cleanup_error roce_error_t err = NULL;
  size_t n = 0;
  int r;

  cr_assert_eq (etcd_open_transport (&conf, same_page_answer, &sp, &c), 0);
  r = etcd_range_each (c, "/r/b/", false, count_kv, &n, &err);
  assert_err_contains (r, err, "a key outside the range asked");
  cr_assert_eq (sp.calls, 2, "pages asked: %u", sp.calls);
  cr_assert_eq (n, 1);
}
