/* SPDX-License-Identifier: Apache-2.0 */
/* A small etcd v3 client: the JSON gateway (POST /v3/kv/...) over libcurl.
 *
 * Keys and values are base64 on the wire; here they are C strings (ours
 * are printable text).  Every exchange tries the policy's endpoints in turn
 * (a refused connection moves on at once) within one time budget, the
 * policy's timeout_ms: a hung member can hold the caller no longer than
 * that.  An answer without a `header` is a failure (a member without quorum
 * answers "request timed out").  TLS with the policy's CA and client
 * certificate.
 *
 * libcurl is loaded with dlopen on the first etcd_open: linked, it and its
 * 30 libraries cost every hook run (annotated or not, cluster or not) about
 * 5 ms of dynamic linking; loaded, only a node with `cluster` pays, and only
 * when a start needs etcd.  No signal (CURLOPT_NOSIGNAL); with IP-literal
 * endpoints no resolver thread either.  */
#ifndef ROCE_ETCD_H
#define ROCE_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "spec/policy.h"

struct etcd_client;

struct etcd_kv
{
  char *key;
  char *value;
  int64_t create_revision;
  int64_t mod_revision;
};

struct etcd_kvs
{
  struct etcd_kv *v;
  size_t n;
};

/* Loads libcurl (once) and makes a client; its time budget starts now.  No
 * network traffic yet.  */
int etcd_open (const struct policy_etcd *conf, struct etcd_client **out, roce_error_t *err);
void etcd_close (struct etcd_client *c);
void cleanup_etcd_clientp (struct etcd_client **c);
#define cleanup_etcd_client __attribute__ ((cleanup (cleanup_etcd_clientp)))
/* A fresh budget of timeout_ms (gc: one per operation).  */
void etcd_budget_reset (struct etcd_client *c);
/* A fresh budget of ms: an operator's listing of every block.  */
void etcd_budget_set (struct etcd_client *c, unsigned ms);
/* The budget of a listing of every block by an operator's command.  */
#define ETCD_LISTING_BUDGETS 10
/* A client whose answers come from fn instead of etcd (the unit tests, the
 * fuzzer): fn(arg, path, body) sets *answer (malloc'd) and *len, or < 0 for
 * no answer.  Everything else is as etcd_open's.  */
typedef int (*etcd_transport_fn) (void *arg, const char *path, const char *body, char **answer,
                                  size_t *len);
int etcd_open_transport (const struct policy_etcd *conf, etcd_transport_fn fn, void *arg,
                         struct etcd_client **out);

/* Creates key = value when the key does not exist (one transaction:
 * create revision 0).  Returns 1 created, 0 it exists (*current, when not
 * NULL, holds it), < 0 etcd could not be asked.  */
int etcd_create (struct etcd_client *c, const char *key, const char *value, struct etcd_kv *current,
                 roce_error_t *err);
/* Deletes key when its value is exactly `value` (one transaction).  Returns
 * 1 deleted, 0 not (absent or another value), < 0 failure.  */
int etcd_delete_if (struct etcd_client *c, const char *key, const char *value, roce_error_t *err);
/* Every key under prefix, in key order.  */
int etcd_range_prefix (struct etcd_client *c, const char *prefix, struct etcd_kvs *out,
                       roce_error_t *err);
/* `GET /version`: "3.4.23", and the endpoint that answered.  */
int etcd_version (struct etcd_client *c, char **version, char **endpoint, roce_error_t *err);

/* A transaction: every comparison must hold (all of them), then the
 * success requests, else the failure ones.  A comparison with a value is
 * "the key's value is exactly this"; without, "the key does not exist"
 * (create revision 0).  */
struct etcd_cmp
{
  const char *key;
  const char *value;
  int64_t mod; /* > 0 (and no value): "the key's mod_revision is exactly this" */
};

enum etcd_op_kind
{
  ETCD_OP_PUT,
  ETCD_OP_DELETE,
  ETCD_OP_RANGE,
};

struct etcd_op
{
  enum etcd_op_kind kind;
  const char *key;
  bool key_nul;          /* the key with a NUL byte after it (the next key) */
  const char *range_end; /* NULL: the key alone */
  const char *value;     /* PUT */
  int64_t lease;         /* PUT: 0 none */
  int64_t limit;         /* RANGE: 0 none */
  bool keys_only;        /* RANGE */
  bool count_only;       /* RANGE: how many keys, none of them */
};

/* Requests of a branch answered (etcd's --max-txn-ops is 128 by default).  */
#define ETCD_TXN_MAX 32
/* The answer: which branch ran, and the kvs of each of its range requests
 * (by position) with the keys the range holds (its count: all of them,
 * whatever its limit).  */
struct etcd_txn
{
  bool succeeded;
  int64_t revision; /* the store's revision after it (a put's mod_revision) */
  struct etcd_kvs ranges[ETCD_TXN_MAX];
  bool more[ETCD_TXN_MAX];
  int64_t count[ETCD_TXN_MAX];
};

/* 1 succeeded, 0 the failure branch ran, < 0 etcd could not be asked.  */
int etcd_txn (struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
              const struct etcd_op *ok, size_t n_ok, const struct etcd_op *fail, size_t n_fail,
              struct etcd_txn *out, roce_error_t *err);
void etcd_txn_clear (struct etcd_txn *t);
char *etcd_txn_body (const struct etcd_cmp *cmps, size_t n_cmps, const struct etcd_op *ok,
                     size_t n_ok, const struct etcd_op *fail, size_t n_fail);
/* Parses a txn's answer and checks it against the requests of the branch
 * that ran: one response each, of its kind; a range's keys where it asked,
 * in order, within its limit (else EPROTO: a faulty or hostile member).  */
int etcd_parse_txn_full (const char *body, size_t len, const struct etcd_op *ok, size_t n_ok,
                         const struct etcd_op *fail, size_t n_fail, struct etcd_txn *t,
                         roce_error_t *err);

/* One page of keys from `from` (just after it when `after`) to end:
 * at most limit, *more when there are others.  */
int etcd_range_page (struct etcd_client *c, const char *from, bool after, const char *end,
                     int64_t limit, bool keys_only, struct etcd_kvs *out, bool *more,
                     roce_error_t *err);
/* Every key under prefix, in pages of ETCD_PAGE, handed to fn in key order;
 * fn < 0 stops.  The pages share the client's budget (one operation), each
 * must move past the last (a page's keys lie after it, "more" comes with a
 * key), and there are at most ETCD_RANGE_KEYS_MAX keys.  */
#define ETCD_PAGE 1000
#define ETCD_RANGE_KEYS_MAX (1 << 18)
typedef int (*etcd_kv_fn) (const struct etcd_kv *kv, void *arg);
int etcd_range_each (struct etcd_client *c, const char *prefix, bool keys_only, etcd_kv_fn fn,
                     void *arg, roce_error_t *err);

/* A lease of ttl_s seconds: its ID.  */
int etcd_lease_grant (struct etcd_client *c, unsigned ttl_s, int64_t *id, roce_error_t *err);

void etcd_kv_clear (struct etcd_kv *kv);
void etcd_kvs_clear (struct etcd_kvs *kvs);

/* The pieces, exposed for the unit tests.  */
char *etcd_b64_encode (const char *s, size_t len);
/* NULL when b64 is not canonical base64; *len gets the decoded length.  */
char *etcd_b64_decode (const char *b64, size_t *len);
/* "/roce-hook/" -> "/roce-hook0": the end of a prefix range.  */
char *etcd_prefix_end (const char *prefix);
/* Parses a txn answer: 1 succeeded, 0 failed (with the first range
 * response's first kv in *kv when there is one), < 0 not an answer.  */
int etcd_parse_txn (const char *body, size_t len, struct etcd_kv *kv, roce_error_t *err);
int etcd_parse_range (const char *body, size_t len, struct etcd_kvs *out, roce_error_t *err);
/* The deleted count of a txn whose success branch was one delete.  */
int etcd_parse_txn_deleted (const char *body, size_t len, int64_t *deleted, roce_error_t *err);

#endif
