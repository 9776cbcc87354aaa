/* SPDX-License-Identifier: Apache-2.0 */
/* etcd's v3 JSON gateway over libcurl (loaded with dlopen): transactions,
 * paginated ranges, leases.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ipam/blocks/etcd.h"
#include "lib/dl.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"

#define ETCD_ANSWER_MAX (16 * 1024 * 1024)
#define ETCD_KEY_MAX 1024
#define ETCD_VALUE_MAX 4096

/* ---- libcurl, loaded on first use ---------------------------------------------- */

struct curl_fns
{
  void *lib;
  CURLcode (*global_init) (long);
  CURL *(*easy_init) (void);
  CURLcode (*setopt) (CURL *, CURLoption, ...);
  CURLcode (*perform) (CURL *);
  CURLcode (*getinfo) (CURL *, CURLINFO, ...);
  void (*cleanup) (CURL *);
  const char *(*strerror) (CURLcode);
  struct curl_slist *(*slist_append) (struct curl_slist *, const char *);
  void (*slist_free_all) (struct curl_slist *);
};

static int
curl_load (struct curl_fns *f, roce_error_t *err)
{
  static const char *const names[] = { "libcurl.so.4", "libcurl.so" };
  struct
  {
    const char *sym;
    void **slot;
  } syms[] = {
    { "curl_global_init", (void **) &f->global_init },
    { "curl_easy_init", (void **) &f->easy_init },
    { "curl_easy_setopt", (void **) &f->setopt },
    { "curl_easy_perform", (void **) &f->perform },
    { "curl_easy_getinfo", (void **) &f->getinfo },
    { "curl_easy_cleanup", (void **) &f->cleanup },
    { "curl_easy_strerror", (void **) &f->strerror },
    { "curl_slist_append", (void **) &f->slist_append },
    { "curl_slist_free_all", (void **) &f->slist_free_all },
  };

  for (size_t i = 0; i < ARRAY_SIZE (names) && f->lib == NULL; i++)
    f->lib = roce_dlopen (names[i], RTLD_NOW | RTLD_LOCAL);
  if (f->lib == NULL)
    return roce_error_refuse (err, "libcurl (the etcd client of the policy's `cluster`)",
                              "libcurl.so.4 loadable", "not found",
                              "install libcurl4 (Debian: apt-get install libcurl4)");
  for (size_t i = 0; i < ARRAY_SIZE (syms); i++)
    {
      *syms[i].slot = roce_dlsym (f->lib, syms[i].sym);
      if (*syms[i].slot == NULL)
        return roce_error_make (err, ENOSYS, "libcurl.so.4 lacks %s", syms[i].sym);
    }
  if (f->global_init (CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return roce_error_make (err, EIO, "curl_global_init failed");
  return 0;
}

/* ---- the client ------------------------------------------------------------------ */

struct etcd_client
{
  const struct policy_etcd *conf;
  struct curl_fns curl;
  CURL *h;
  struct timespec deadline;
  size_t next; /* the endpoint to try first: the last that answered */
  /* Instead of libcurl (the unit tests and the fuzzer): the answers.  */
  etcd_transport_fn transport;
  void *transport_arg;
};

static long
ms_left (const struct etcd_client *c)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (c->deadline.tv_sec - now.tv_sec) * 1000 + (c->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

void
etcd_budget_reset (struct etcd_client *c)
{
  etcd_budget_set (c, c->conf->timeout_ms);
}

void
etcd_budget_set (struct etcd_client *c, unsigned ms)
{
  clock_gettime (CLOCK_MONOTONIC, &c->deadline);
  c->deadline.tv_sec += ms / 1000;
  c->deadline.tv_nsec += (long) (ms % 1000) * 1000000;
  if (c->deadline.tv_nsec >= 1000000000)
    {
      c->deadline.tv_sec++;
      c->deadline.tv_nsec -= 1000000000;
    }
}

int
etcd_open (const struct policy_etcd *conf, struct etcd_client **out, roce_error_t *err)
{
  cleanup_etcd_client struct etcd_client *c = NULL;

  c = xmalloc0 (sizeof (*c));
  c->conf = conf;
  if (curl_load (&c->curl, err) < 0)
    return -1;
  c->h = c->curl.easy_init ();
  if (c->h == NULL)
    return roce_error_make (err, ENOMEM, "curl_easy_init failed");
  etcd_budget_reset (c);
  /* Every process of every node starting at the first endpoint puts the
   * whole fleet's load on one member: each starts at one of its own.  */
  {
    struct timespec ts;
    size_t n = strv_len (conf->endpoints);
    uint64_t x;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    x = ((uint64_t) getpid () << 32) ^ (uint64_t) ts.tv_nsec ^ (uint64_t) ts.tv_sec;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    c->next = n ? (size_t) (x % n) : 0;
  }
  *out = steal_pointer (&c);
  return 0;
}

int
etcd_open_transport (const struct policy_etcd *conf, etcd_transport_fn fn, void *arg,
                     struct etcd_client **out)
{
  struct etcd_client *c = xmalloc0 (sizeof (*c));
  c->conf = conf;
  c->transport = fn;
  c->transport_arg = arg;
  etcd_budget_reset (c);
  *out = c;
  return 0;
}

void
etcd_close (struct etcd_client *c)
{
  if (c == NULL)
    return;
  if (c->h)
    c->curl.cleanup (c->h);
  /* The library stays loaded: OpenSSL registers exit handlers.  */
  free (c);
}

void
cleanup_etcd_clientp (struct etcd_client **c)
{
  etcd_close (*c);
  *c = NULL;
}

struct buf
{
  char *p;
  size_t n;
  bool too_big;
};

static size_t
on_data (char *data, size_t size, size_t nmemb, void *arg)
{
  struct buf *b = arg;
  size_t n = size * nmemb;
  if (b->n + n > ETCD_ANSWER_MAX)
    {
      b->too_big = true;
      return 0;
    }
  b->p = xrealloc (b->p, b->n + n + 1);
  memcpy (b->p + b->n, data, n);
  b->n += n;
  b->p[b->n] = '\0';
  return n;
}

/* The answer of one endpoint is one the API gave (a JSON object with a
 * `header`, or /version's), else the reason it is not.  */
static char *
answer_problem (long code, const struct buf *b, bool need_header)
{
  cleanup_json struct json *j = NULL;
  cleanup_error roce_error_t jerr = NULL;
  const char *msg;

  if (b->p == NULL || json_parse_n (b->p, b->n, &j, &jerr) < 0 || json_type (j) != JSON_OBJECT)
    return xasprintf ("HTTP %ld, not a JSON answer", code);
  if (code == 200 && (! need_header || json_object_get (j, "header") != NULL))
    return NULL;
  msg = json_string (json_object_get (j, "error"));
  if (msg == NULL)
    msg = json_string (json_object_get (j, "message"));
  if (msg && str_is_printable (msg) && strlen (msg) < 200)
    return xasprintf ("HTTP %ld: %s", code, msg);
  return xasprintf ("HTTP %ld, an answer without a header", code);
}

/* POSTs body (or GETs when body is NULL) to path on each endpoint in turn
 * until one answers, within the client's budget.  */
static int
call (struct etcd_client *c, const char *path, const char *body, bool need_header, char **out,
      size_t *out_len, roce_error_t *err)
{
  const struct policy_etcd *conf = c->conf;
  size_t n = strv_len (conf->endpoints);
  cleanup_free char *tried = xstrdup ("");
  struct curl_fns *f = &c->curl;
  struct curl_slist *hdr = NULL;
  int ret = -1;

  if (c->transport)
    {
      struct buf b = { 0 };
      cleanup_free char *problem = NULL;
      if (ms_left (c) <= 0)
        problem = xasprintf ("not tried, the %u ms budget was spent", conf->timeout_ms);
      else if (c->transport (c->transport_arg, path, body, &b.p, &b.n) < 0)
        problem = xstrdup ("no answer");
      else
        problem = answer_problem (200, &b, need_header);
      if (problem == NULL)
        {
          *out = b.p;
          if (out_len)
            *out_len = b.n;
          return 0;
        }
      free (b.p);
      return roce_error_make (err, EIO, "etcd: %s", problem);
    }
  hdr = f->slist_append (NULL, "Content-Type: application/json");
  for (size_t k = 0; k < n; k++)
    {
      size_t i = (c->next + k) % n;
      const char *ep = conf->endpoints[i];
      cleanup_free char *url = xasprintf ("%s%s", ep, path);
      cleanup_free char *problem = NULL;
      struct buf b = { 0 };
      long left = ms_left (c), slice, code = 0;
      CURLcode rc;
      char *t;

      if (left <= 0)
        {
          t = xasprintf ("%s%s%s: not tried, the %u ms budget was spent", tried,
                         tried[0] ? "; " : "", ep, conf->timeout_ms);
          free (tried);
          tried = t;
          break;
        }
      /* A share of what is left, so that one hung member leaves time for
       * the others; the last one gets all the rest.  */
      slice = left / (long) (n - k);
      if (slice < 1)
        slice = 1;
      f->setopt (c->h, CURLOPT_URL, url);
      f->setopt (c->h, CURLOPT_NOSIGNAL, 1L);
      f->setopt (c->h, CURLOPT_TIMEOUT_MS, slice);
      f->setopt (c->h, CURLOPT_CONNECTTIMEOUT_MS, slice);
      f->setopt (c->h, CURLOPT_PROTOCOLS_STR, "http,https");
      f->setopt (c->h, CURLOPT_FOLLOWLOCATION, 0L);
      f->setopt (c->h, CURLOPT_NOPROXY, "*");
      f->setopt (c->h, CURLOPT_WRITEFUNCTION, on_data);
      f->setopt (c->h, CURLOPT_WRITEDATA, &b);
      f->setopt (c->h, CURLOPT_HTTPHEADER, hdr);
      if (body)
        {
          f->setopt (c->h, CURLOPT_POSTFIELDS, body);
          f->setopt (c->h, CURLOPT_POSTFIELDSIZE, (long) strlen (body));
        }
      else
        f->setopt (c->h, CURLOPT_HTTPGET, 1L);
      if (conf->cacert)
        f->setopt (c->h, CURLOPT_CAINFO, conf->cacert);
      if (conf->cert)
        {
          f->setopt (c->h, CURLOPT_SSLCERT, conf->cert);
          f->setopt (c->h, CURLOPT_SSLKEY, conf->key);
        }
      rc = f->perform (c->h);
      if (rc == CURLE_OK)
        {
          f->getinfo (c->h, CURLINFO_RESPONSE_CODE, &code);
          problem = answer_problem (code, &b, need_header);
        }
      else if (b.too_big)
        problem = xasprintf ("an answer over %d bytes", ETCD_ANSWER_MAX);
      else
        problem = xasprintf ("%s", f->strerror (rc));
      if (problem == NULL)
        {
          c->next = i;
          *out = b.p;
          if (out_len)
            *out_len = b.n;
          ret = 0;
          goto done;
        }
      free (b.p);
      roce_log (ROCE_LOG_WARN, "etcd %s: %s", url, problem);
      t = xasprintf ("%s%s%s: %s", tried, tried[0] ? "; " : "", ep, problem);
      free (tried);
      tried = t;
    }
  {
    cleanup_free char *exp = xasprintf ("an answer within %u ms (cluster.etcd.timeout_ms) from one "
                                        "of %zu endpoint(s)",
                                        conf->timeout_ms, n);
    ret = roce_error_refuse (err, "etcd", exp, tried,
                             "check that etcd runs and has quorum (etcdctl endpoint health) and "
                             "that cluster.etcd in the node policy names its client URLs and TLS "
                             "files");
  }
done:
  f->slist_free_all (hdr);
  return ret;
}

/* ---- base64 ------------------------------------------------------------------------ */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
etcd_b64_encode (const char *s, size_t len)
{
  const unsigned char *p = (const unsigned char *) s;
  char *out = xmalloc0 ((len + 2) / 3 * 4 + 1);
  size_t o = 0;
  for (size_t i = 0; i < len; i += 3)
    {
      uint32_t v = (uint32_t) p[i] << 16 | (i + 1 < len ? (uint32_t) p[i + 1] << 8 : 0)
                   | (i + 2 < len ? p[i + 2] : 0);
      out[o++] = b64chars[v >> 18 & 63];
      out[o++] = b64chars[v >> 12 & 63];
      out[o++] = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
      out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
    }
  out[o] = '\0';
  return out;
}

static int
b64val (char ch)
{
  const char *q = ch ? strchr (b64chars, ch) : NULL;
  return q ? (int) (q - b64chars) : -1;
}

char *
etcd_b64_decode (const char *b64, size_t *len)
{
  size_t n = strlen (b64), o = 0;
  cleanup_free char *out = NULL;

  if (n % 4 != 0)
    return NULL;
  out = xmalloc0 (n / 4 * 3 + 1);
  for (size_t i = 0; i < n; i += 4)
    {
      int v[4];
      bool last = i + 4 == n;
      for (int k = 0; k < 4; k++)
        v[k] = b64val (b64[i + k]);
      if (v[0] < 0 || v[1] < 0)
        return NULL;
      if ((v[2] < 0 && (! last || b64[i + 2] != '=' || b64[i + 3] != '='))
          || (v[3] < 0 && (! last || b64[i + 3] != '=')))
        return NULL;
      out[o++] = (char) (v[0] << 2 | v[1] >> 4);
      if (v[2] >= 0)
        out[o++] = (char) ((v[1] & 15) << 4 | v[2] >> 2);
      if (v[3] >= 0)
        {
          if (v[2] < 0)
            return NULL;
          out[o++] = (char) ((v[2] & 3) << 6 | v[3]);
        }
    }
  out[o] = '\0';
  if (len)
    *len = o;
  return steal_pointer (&out);
}

char *
etcd_prefix_end (const char *prefix)
{
  char *end = xstrdup (prefix);
  size_t n = strlen (end);
  /* Our prefixes end in '/', never in 0xff.  */
  if (n > 0)
    end[n - 1] = (char) (end[n - 1] + 1);
  return end;
}

/* ---- answers ------------------------------------------------------------------------ */

/* A base64 member that decodes to printable text of at most max bytes.  */
static int
b64_member (const struct json *obj, const char *where, const char *k, size_t max, bool required,
            char **out, roce_error_t *err)
{
  cleanup_free char *b64 = NULL;
  cleanup_free char *dec = NULL;
  size_t len = 0;
  int r = json_member_string (obj, where, k, required, (max + 2) / 3 * 4 + 4, true, &b64, err);
  if (r <= 0)
    {
      if (r == 0)
        *out = xstrdup ("");
      return r;
    }
  dec = etcd_b64_decode (b64, &len);
  if (dec == NULL || len != strlen (dec) || len > max || ! str_is_printable (dec))
    return roce_error_make (err, EINVAL, "%s.%s: not base64 of printable text", where, k);
  *out = steal_pointer (&dec);
  return 1;
}

/* Revisions are JSON strings of digits ("2").  */
static int
rev_member (const struct json *obj, const char *where, const char *k, int64_t *out,
            roce_error_t *err)
{
  cleanup_free char *s = NULL;
  uint64_t v = 0;
  int r = json_member_string (obj, where, k, false, 20, true, &s, err);
  if (r < 0)
    return -1;
  if (r == 0)
    {
      *out = 0;
      return 0;
    }
  if (parse_u64 (s, &v) < 0 || v > INT64_MAX)
    return roce_error_make (err, EINVAL, "%s.%s: not a revision", where, k);
  *out = (int64_t) v;
  return 0;
}

static int
parse_kv (const struct json *j, const char *where, struct etcd_kv *kv, roce_error_t *err)
{
  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "%s: not an object", where);
  if (b64_member (j, where, "key", ETCD_KEY_MAX, true, &kv->key, err) < 0
      || b64_member (j, where, "value", ETCD_VALUE_MAX, false, &kv->value, err) < 0
      || rev_member (j, where, "create_revision", &kv->create_revision, err) < 0
      || rev_member (j, where, "mod_revision", &kv->mod_revision, err) < 0)
    return -1;
  return 0;
}

static int
parse_answer (const char *body, size_t len, struct json **out, roce_error_t *err)
{
  if (json_parse_n (body, len, out, err) < 0)
    return roce_error_wrap (err, "etcd answer");
  if (json_type (*out) != JSON_OBJECT || json_object_get (*out, "header") == NULL)
    return roce_error_make (err, EINVAL, "etcd answer: no header");
  return 0;
}

static int
parse_kvs (const struct json *arr, const char *where, struct etcd_kvs *out, roce_error_t *err)
{
  if (arr == NULL)
    return 0; /* proto3 leaves an empty list out */
  if (json_type (arr) != JSON_ARRAY)
    return roce_error_make (err, EINVAL, "%s: not an array", where);
  out->v = xmalloc0 ((json_array_len (arr) + 1) * sizeof (*out->v));
  for (size_t i = 0; i < json_array_len (arr); i++)
    {
      cleanup_free char *w = xasprintf ("%s[%zu]", where, i);
      if (parse_kv (json_array_at (arr, i), w, &out->v[out->n], err) < 0)
        {
          etcd_kv_clear (&out->v[out->n]);
          return -1;
        }
      out->n++;
    }
  return 0;
}

int
etcd_parse_range (const char *body, size_t len, struct etcd_kvs *out, roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  if (parse_answer (body, len, &j, err) < 0)
    return -1;
  return parse_kvs (json_object_get (j, "kvs"), "kvs", out, err);
}

/* succeeded: true, or absent (proto3 JSON leaves out false).  */
static int
txn_succeeded (const struct json *j, roce_error_t *err)
{
  const struct json *s = json_object_get (j, "succeeded");
  if (s == NULL || json_type (s) == JSON_FALSE)
    return 0;
  if (json_type (s) == JSON_TRUE)
    return 1;
  return roce_error_make (err, EINVAL, "etcd answer: succeeded is not a boolean");
}

static const struct json *
first_response (const struct json *j, const char *kind)
{
  const struct json *rs = json_object_get (j, "responses");
  const struct json *r0
      = json_type (rs) == JSON_ARRAY && json_array_len (rs) > 0 ? json_array_at (rs, 0) : NULL;
  return r0 && json_type (r0) == JSON_OBJECT ? json_object_get (r0, kind) : NULL;
}

int
etcd_parse_txn (const char *body, size_t len, struct etcd_kv *kv, roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  const struct json *rr;
  struct etcd_kvs kvs = { 0 };
  int ok;

  if (parse_answer (body, len, &j, err) < 0 || (ok = txn_succeeded (j, err)) < 0)
    return -1;
  if (ok || kv == NULL)
    return ok;
  rr = first_response (j, "response_range");
  if (rr && json_type (rr) == JSON_OBJECT)
    {
      if (parse_kvs (json_object_get (rr, "kvs"), "responses[0].response_range.kvs", &kvs, err) < 0)
        {
          etcd_kvs_clear (&kvs);
          return -1;
        }
      if (kvs.n > 0)
        {
          *kv = kvs.v[0];
          memset (&kvs.v[0], 0, sizeof (kvs.v[0]));
        }
      etcd_kvs_clear (&kvs);
    }
  return 0;
}

int
etcd_parse_txn_deleted (const char *body, size_t len, int64_t *deleted, roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  const struct json *dr;
  int ok;

  *deleted = 0;
  if (parse_answer (body, len, &j, err) < 0 || (ok = txn_succeeded (j, err)) < 0)
    return -1;
  if (! ok)
    return 0;
  dr = first_response (j, "response_delete_range");
  if (dr && json_type (dr) == JSON_OBJECT
      && rev_member (dr, "responses[0].response_delete_range", "deleted", deleted, err) < 0)
    return -1;
  return 1;
}

void
etcd_kv_clear (struct etcd_kv *kv)
{
  free (kv->key);
  free (kv->value);
  memset (kv, 0, sizeof (*kv));
}

void
etcd_kvs_clear (struct etcd_kvs *kvs)
{
  for (size_t i = 0; i < kvs->n; i++)
    etcd_kv_clear (&kvs->v[i]);
  free (kvs->v);
  kvs->v = NULL;
  kvs->n = 0;
}

/* ---- requests ------------------------------------------------------------------------ */

static char *
gen_done (struct json_gen *g)
{
  const char *buf;
  size_t len;
  if (json_gen_result (g, &buf, &len, NULL) < 0)
    abort (); /* balanced by construction */
  return xstrndup (buf, len);
}

/* Opens a txn body with its one comparison:
 * {"compare":[{"target":target,"key":k64,field:value}] (the caller closes the map).  */
static void
txn_compare (struct json_gen *g, const char *target, const char *k64, const char *field,
             const char *value)
{
  json_gen_map_open (g);
  json_gen_string (g, "compare");
  json_gen_array_open (g);
  json_gen_map_open (g);
  json_gen_kv_string (g, "target", target);
  json_gen_kv_string (g, "key", k64);
  json_gen_kv_string (g, field, value);
  json_gen_map_close (g);
  json_gen_array_close (g);
}

/* "branch":[{op:{"key":k64[,"value":v64]}}]: a txn's success or failure list of one request.  */
static void
txn_request (struct json_gen *g, const char *branch, const char *op, const char *k64,
             const char *v64)
{
  json_gen_string (g, branch);
  json_gen_array_open (g);
  json_gen_map_open (g);
  json_gen_string (g, op);
  json_gen_map_open (g);
  json_gen_kv_string (g, "key", k64);
  if (v64)
    json_gen_kv_string (g, "value", v64);
  json_gen_map_close (g);
  json_gen_map_close (g);
  json_gen_array_close (g);
}

int
etcd_create (struct etcd_client *c, const char *key, const char *value, struct etcd_kv *current,
             roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  cleanup_free char *k64 = etcd_b64_encode (key, strlen (key));
  cleanup_free char *v64 = etcd_b64_encode (value, strlen (value));
  cleanup_free char *body = NULL;
  cleanup_free char *ans = NULL;
  size_t len = 0;
  int r;

  txn_compare (g, "CREATE", k64, "createRevision", "0");
  txn_request (g, "success", "requestPut", k64, v64);
  txn_request (g, "failure", "requestRange", k64, NULL);
  json_gen_map_close (g);
  body = gen_done (g);
  if (call (c, "/v3/kv/txn", body, true, &ans, &len, err) < 0)
    return -1;
  r = etcd_parse_txn (ans, len, current, err);
  return r < 0 ? roce_error_wrap (err, "etcd txn on %s", key) : r;
}

int
etcd_delete_if (struct etcd_client *c, const char *key, const char *value, roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  cleanup_free char *k64 = etcd_b64_encode (key, strlen (key));
  cleanup_free char *v64 = etcd_b64_encode (value, strlen (value));
  cleanup_free char *body = NULL;
  cleanup_free char *ans = NULL;
  int64_t deleted = 0;
  size_t len = 0;
  int r;

  txn_compare (g, "VALUE", k64, "value", v64);
  txn_request (g, "success", "requestDeleteRange", k64, NULL);
  json_gen_map_close (g);
  body = gen_done (g);
  if (call (c, "/v3/kv/txn", body, true, &ans, &len, err) < 0)
    return -1;
  r = etcd_parse_txn_deleted (ans, len, &deleted, err);
  if (r < 0)
    return roce_error_wrap (err, "etcd txn on %s", key);
  return r == 1 && deleted > 0 ? 1 : 0;
}

int
etcd_range_prefix (struct etcd_client *c, const char *prefix, struct etcd_kvs *out,
                   roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  cleanup_free char *end = etcd_prefix_end (prefix);
  cleanup_free char *k64 = etcd_b64_encode (prefix, strlen (prefix));
  cleanup_free char *e64 = etcd_b64_encode (end, strlen (end));
  cleanup_free char *body = NULL;
  cleanup_free char *ans = NULL;
  size_t len = 0;

  json_gen_map_open (g);
  json_gen_kv_string (g, "key", k64);
  json_gen_kv_string (g, "range_end", e64);
  json_gen_map_close (g);
  body = gen_done (g);
  if (call (c, "/v3/kv/range", body, true, &ans, &len, err) < 0)
    return -1;
  if (etcd_parse_range (ans, len, out, err) < 0)
    {
      etcd_kvs_clear (out);
      return roce_error_wrap (err, "etcd range %s", prefix);
    }
  return 0;
}

int
etcd_version (struct etcd_client *c, char **version, char **endpoint, roce_error_t *err)
{
  cleanup_free char *ans = NULL;
  cleanup_json struct json *j = NULL;
  size_t len = 0;

  if (call (c, "/version", NULL, false, &ans, &len, err) < 0)
    return -1;
  if (json_parse_n (ans, len, &j, err) < 0)
    return roce_error_wrap (err, "etcd /version");
  if (json_member_string (j, "version", "etcdserver", true, 64, true, version, err) < 0)
    return -1;
  *endpoint = xstrdup (c->conf->endpoints[c->next]);
  return 0;
}

/* ---- transactions of several comparisons and requests ------------------------------ */

static void
gen_b64 (struct json_gen *g, const char *k, const char *s, size_t len)
{
  cleanup_free char *b = etcd_b64_encode (s, len);
  json_gen_kv_string (g, k, b);
}

static void
gen_int (struct json_gen *g, const char *k, int64_t v)
{
  char buf[24];
  snprintf (buf, sizeof (buf), "%lld", (long long) v);
  json_gen_kv_string (g, k, buf); /* int64 are strings in proto3 JSON */
}

static void
gen_ops (struct json_gen *g, const char *branch, const struct etcd_op *ops, size_t n)
{
  json_gen_string (g, branch);
  json_gen_array_open (g);
  for (size_t i = 0; i < n; i++)
    {
      const struct etcd_op *o = &ops[i];
      json_gen_map_open (g);
      json_gen_string (g, o->kind == ETCD_OP_PUT      ? "requestPut"
                          : o->kind == ETCD_OP_DELETE ? "requestDeleteRange"
                                                      : "requestRange");
      json_gen_map_open (g);
      gen_b64 (g, "key", o->key, strlen (o->key) + (o->key_nul ? 1 : 0));
      if (o->range_end)
        gen_b64 (g, "range_end", o->range_end, strlen (o->range_end));
      if (o->kind == ETCD_OP_PUT)
        gen_b64 (g, "value", o->value, strlen (o->value));
      if (o->lease)
        gen_int (g, "lease", o->lease);
      if (o->limit)
        gen_int (g, "limit", o->limit);
      if (o->keys_only)
        {
          json_gen_string (g, "keys_only");
          json_gen_bool (g, true);
        }
      if (o->count_only)
        {
          json_gen_string (g, "count_only");
          json_gen_bool (g, true);
        }
      json_gen_map_close (g);
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
}

char *
etcd_txn_body (const struct etcd_cmp *cmps, size_t n_cmps, const struct etcd_op *ok, size_t n_ok,
               const struct etcd_op *fail, size_t n_fail)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  json_gen_map_open (g);
  json_gen_string (g, "compare");
  json_gen_array_open (g);
  for (size_t i = 0; i < n_cmps; i++)
    {
      json_gen_map_open (g);
      json_gen_kv_string (g, "target",
                          cmps[i].value     ? "VALUE"
                          : cmps[i].mod > 0 ? "MOD"
                                            : "CREATE");
      gen_b64 (g, "key", cmps[i].key, strlen (cmps[i].key));
      if (cmps[i].value)
        gen_b64 (g, "value", cmps[i].value, strlen (cmps[i].value));
      else if (cmps[i].mod > 0)
        gen_int (g, "mod_revision", cmps[i].mod);
      else
        json_gen_kv_string (g, "createRevision", "0");
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  gen_ops (g, "success", ok, n_ok);
  gen_ops (g, "failure", fail, n_fail);
  json_gen_map_close (g);
  return gen_done (g);
}

void
etcd_txn_clear (struct etcd_txn *t)
{
  for (size_t i = 0; i < ETCD_TXN_MAX; i++)
    etcd_kvs_clear (&t->ranges[i]);
  memset (t, 0, sizeof (*t));
}

/* Whether the kvs a range answered lie where it asked, as etcd gives them:
 * the key alone (one kv at most), or keys of [key, range_end) (past key
 * when key_nul) in ascending order, no more than its limit, and "more" only
 * with a key to go on from; a count no smaller than the keys given, and
 * none given for a count alone.  An answer that is not is a member's fault
 * (or a hostile one's): never read further.  */
static int
range_check (const struct etcd_op *o, const struct etcd_kvs *kvs, bool more, int64_t count,
             const char *where, roce_error_t *err)
{
  const char *prev = NULL;

  if (o->count_only && (kvs->n > 0 || more))
    return roce_error_make (err, EPROTO, "etcd answer: %s: keys for a count alone", where);
  if (count < (int64_t) kvs->n)
    return roce_error_make (err, EPROTO, "etcd answer: %s: %zu keys counted as %lld", where, kvs->n,
                            (long long) count);
  if (o->limit > 0 && kvs->n > (size_t) o->limit)
    return roce_error_make (err, EPROTO, "etcd answer: %s: %zu keys for a limit of %lld", where,
                            kvs->n, (long long) o->limit);
  if (o->range_end == NULL && (kvs->n > 1 || more))
    return roce_error_make (err, EPROTO, "etcd answer: %s: %zu keys for one", where, kvs->n);
  if (more && kvs->n == 0)
    return roce_error_make (err, EPROTO, "etcd answer: %s: more keys said, none given", where);
  for (size_t i = 0; i < kvs->n; i++)
    {
      const char *k = kvs->v[i].key;
      int lo = strcmp (k, o->key);
      if (o->range_end == NULL ? lo != 0
                               : lo < 0 || (lo == 0 && o->key_nul) || strcmp (k, o->range_end) >= 0)
        return roce_error_make (err, EPROTO, "etcd answer: %s: a key outside the range asked",
                                where);
      if (prev && strcmp (k, prev) <= 0)
        return roce_error_make (err, EPROTO, "etcd answer: %s: keys out of order", where);
      prev = k;
    }
  return 0;
}

int
etcd_parse_txn_full (const char *body, size_t len, const struct etcd_op *ok, size_t n_ok,
                     const struct etcd_op *fail, size_t n_fail, struct etcd_txn *t,
                     roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  const struct json *rs, *hdr;
  const struct etcd_op *ops;
  size_t n;
  int r;

  if (parse_answer (body, len, &j, err) < 0 || (r = txn_succeeded (j, err)) < 0)
    return -1;
  t->succeeded = r == 1;
  ops = t->succeeded ? ok : fail;
  n = t->succeeded ? n_ok : n_fail;
  hdr = json_object_get (j, "header");
  if (json_type (hdr) != JSON_OBJECT || json_object_get (hdr, "revision") == NULL
      || rev_member (hdr, "header", "revision", &t->revision, err) < 0 || t->revision <= 0)
    {
      roce_error_release (err);
      return roce_error_make (err, EPROTO, "etcd answer: a header without a revision");
    }
  rs = json_object_get (j, "responses");
  if (rs && json_type (rs) != JSON_ARRAY)
    return roce_error_make (err, EPROTO, "etcd answer: responses is not an array");
  /* One response per request of the branch that ran, each of its kind.  */
  if ((rs ? json_array_len (rs) : 0) != n)
    return roce_error_make (err, EPROTO, "etcd answer: %zu responses for %zu requests",
                            rs ? json_array_len (rs) : 0, n);
  for (size_t i = 0; i < n && i < ETCD_TXN_MAX; i++)
    {
      const struct json *x = json_array_at (rs, i);
      static const char *const kinds[] = { [ETCD_OP_PUT] = "response_put",
                                           [ETCD_OP_DELETE] = "response_delete_range",
                                           [ETCD_OP_RANGE] = "response_range" };
      const struct json *rr
          = json_type (x) == JSON_OBJECT ? json_object_get (x, kinds[ops[i].kind]) : NULL;
      cleanup_free char *w = xasprintf ("responses[%zu].%s", i, kinds[ops[i].kind]);
      if (json_type (rr) != JSON_OBJECT)
        return roce_error_make (err, EPROTO, "etcd answer: no %s", w);
      if (ops[i].kind != ETCD_OP_RANGE)
        continue;
      if (parse_kvs (json_object_get (rr, "kvs"), w, &t->ranges[i], err) < 0)
        return -1;
      t->more[i] = json_type (json_object_get (rr, "more")) == JSON_TRUE;
      /* A count of 0 is left out (proto3); absent, it is the keys given.  */
      t->count[i] = (int64_t) t->ranges[i].n;
      if ((json_object_get (rr, "count") && rev_member (rr, w, "count", &t->count[i], err) < 0)
          || range_check (&ops[i], &t->ranges[i], t->more[i], t->count[i], w, err) < 0)
        return -1;
    }
  return r;
}

int
etcd_txn (struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
          const struct etcd_op *ok, size_t n_ok, const struct etcd_op *fail, size_t n_fail,
          struct etcd_txn *out, roce_error_t *err)
{
  cleanup_free char *body = etcd_txn_body (cmps, n_cmps, ok, n_ok, fail, n_fail);
  cleanup_free char *ans = NULL;
  size_t len = 0;
  int r;

  memset (out, 0, sizeof (*out));
  if (call (c, "/v3/kv/txn", body, true, &ans, &len, err) < 0)
    return -1;
  r = etcd_parse_txn_full (ans, len, ok, n_ok, fail, n_fail, out, err);
  if (r < 0)
    {
      etcd_txn_clear (out);
      return roce_error_wrap (err, "etcd txn on %s", n_cmps ? cmps[0].key : ok[0].key);
    }
  return r;
}

/* ---- paginated ranges --------------------------------------------------------------- */

int
etcd_range_page (struct etcd_client *c, const char *from, bool after, const char *end,
                 int64_t limit, bool keys_only, struct etcd_kvs *out, bool *more, roce_error_t *err)
{
  struct etcd_op op = { .kind = ETCD_OP_RANGE,
                        .key = from,
                        .key_nul = after,
                        .range_end = end,
                        .limit = limit,
                        .keys_only = keys_only };
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  cleanup_free char *body = NULL;
  cleanup_free char *ans = NULL;
  cleanup_json struct json *j = NULL;
  size_t len = 0;

  /* A range request is the inside of a txn's requestRange.  */
  json_gen_map_open (g);
  gen_b64 (g, "key", op.key, strlen (op.key) + (after ? 1 : 0));
  gen_b64 (g, "range_end", end, strlen (end));
  if (limit)
    gen_int (g, "limit", limit);
  if (keys_only)
    {
      json_gen_string (g, "keys_only");
      json_gen_bool (g, true);
    }
  json_gen_map_close (g);
  body = gen_done (g);
  if (call (c, "/v3/kv/range", body, true, &ans, &len, err) < 0)
    return -1;
  if (parse_answer (ans, len, &j, err) < 0
      || parse_kvs (json_object_get (j, "kvs"), "kvs", out, err) < 0
      || range_check (&op, out, (*more = json_type (json_object_get (j, "more")) == JSON_TRUE),
                      (int64_t) out->n, "kvs", err)
             < 0)
    {
      etcd_kvs_clear (out);
      return roce_error_wrap (err, "etcd range from %s", from);
    }
  return 0;
}

int
etcd_range_each (struct etcd_client *c, const char *prefix, bool keys_only, etcd_kv_fn fn,
                 void *arg, roce_error_t *err)
{
  cleanup_free char *end = etcd_prefix_end (prefix);
  cleanup_free char *from = xstrdup (prefix);
  bool after = false, more = true;
  size_t total = 0;

  /* Each page starts past the last key of the one before (range_check:
   * keys past `from`, "more" only with one), so every page moves on; the
   * pages share the caller's budget and ETCD_RANGE_KEYS_MAX keys.  */
  while (more)
    {
      struct etcd_kvs page = { 0 };
      if (etcd_range_page (c, from, after, end, ETCD_PAGE, keys_only, &page, &more, err) < 0)
        return -1;
      total += page.n;
      if (total > ETCD_RANGE_KEYS_MAX)
        {
          etcd_kvs_clear (&page);
          return roce_error_make (err, EPROTO, "etcd range of %s: more than %d keys", prefix,
                                  ETCD_RANGE_KEYS_MAX);
        }
      for (size_t i = 0; i < page.n; i++)
        if (fn (&page.v[i], arg) < 0)
          {
            etcd_kvs_clear (&page);
            return roce_error_make (err, ECANCELED, "etcd range of %s: stopped", prefix);
          }
      if (page.n == 0)
        more = false;
      else
        {
          free (from);
          from = xstrdup (page.v[page.n - 1].key);
          after = true; /* the next page starts just after the last key */
        }
      etcd_kvs_clear (&page);
    }
  return 0;
}

/* ---- leases ---------------------------------------------------------------------------- */

int
etcd_lease_grant (struct etcd_client *c, unsigned ttl_s, int64_t *id, roce_error_t *err)
{
  cleanup_free char *body = xasprintf ("{\"TTL\":\"%u\"}", ttl_s);
  cleanup_free char *ans = NULL;
  cleanup_json struct json *j = NULL;
  size_t len = 0;

  if (call (c, "/v3/lease/grant", body, true, &ans, &len, err) < 0)
    return -1;
  if (parse_answer (ans, len, &j, err) < 0 || rev_member (j, "lease grant", "ID", id, err) < 0)
    return roce_error_wrap (err, "etcd lease grant");
  if (*id == 0)
    return roce_error_make (err, EINVAL, "etcd lease grant: no ID in the answer");
  return 0;
}
