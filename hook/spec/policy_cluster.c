/* SPDX-License-Identifier: Apache-2.0 */
/* The policy's `cluster` section: who this node is, where etcd is, how the
 * pools are cut.  Every refusal names the key.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "lib/json.h"
#include "lib/utils.h"
#include "spec/policy.h"

static int cerr (roce_error_t *err, const char *path, const char *key, const char *fmt, ...)
    ROCE_PRINTF (4, 5);

static int
cerr (roce_error_t *err, const char *path, const char *key, const char *fmt, ...)
{
  va_list ap;
  cleanup_free char *msg = NULL;
  va_start (ap, fmt);
  msg = xvasprintf (fmt, ap);
  va_end (ap);
  return roce_error_make (err, EINVAL, "policy %s: cluster.%s: %s", path, key, msg);
}

static int
check_keys (const struct json *obj, const char *path, const char *where, const char *const *allowed,
            roce_error_t *err)
{
  for (size_t i = 0; i < json_object_len (obj); i++)
    {
      const char *k = json_object_key (obj, i);
      bool ok = false;
      for (const char *const *a = allowed; *a; a++)
        ok = ok || strcmp (*a, k) == 0;
      if (! ok)
        {
          cleanup_free char *key = where[0] ? xasprintf ("%s.%s", where, k) : xstrdup (k);
          return cerr (err, path, key, "unknown key");
        }
    }
  return 0;
}

/* A Kubernetes node name (RFC 1123 subdomain), or any host name.  */
static bool
valid_node (const char *s)
{
  return str_is_name (s, CLUSTER_NODE_MAX);
}

/* "http://host:port" or "https://host:port": printable, no spaces, no
 * query; a trailing '/' is dropped.  */
static bool
valid_endpoint (char *s)
{
  size_t len = strlen (s);
  const char *rest;
  if (strncmp (s, "http://", 7) == 0)
    rest = s + 7;
  else if (strncmp (s, "https://", 8) == 0)
    rest = s + 8;
  else
    return false;
  while (len > 0 && s[len - 1] == '/')
    s[--len] = '\0';
  if (*rest == '\0' || len > 256)
    return false;
  for (const char *p = rest; *p; p++)
    if (*p <= 0x20 || *p > 0x7e || *p == '?' || *p == '#' || *p == '@' || *p == '\\')
      return false;
  return true;
}

static int
get_path (const struct json *obj, const char *path, const char *k, char **out, roce_error_t *err)
{
  cleanup_free char *key = xasprintf ("etcd.%s", k);
  cleanup_error roce_error_t jerr = NULL;
  if (json_member_string (obj, "", k, false, 4096, true, out, &jerr) < 0)
    return cerr (err, path, key, "expected a string of printable characters");
  if (*out && (*out)[0] != '/')
    return cerr (err, path, key, "'%s' is not an absolute path", *out);
  return 0;
}

static int
get_num (const struct json *obj, const char *path, const char *where, const char *k, uint64_t min,
         uint64_t max, unsigned *out, roce_error_t *err)
{
  cleanup_error roce_error_t jerr = NULL;
  uint64_t v = *out;
  if (json_member_u64 (obj, "", k, false, min, max, &v, &jerr) < 0)
    {
      cleanup_free char *key = where[0] ? xasprintf ("%s.%s", where, k) : xstrdup (k);
      return cerr (err, path, key, "expected an integer in %llu..%llu", (unsigned long long) min,
                   (unsigned long long) max);
    }
  *out = (unsigned) v;
  return 0;
}

static int
parse_etcd (const struct json *e, const char *path, struct policy_etcd *out, roce_error_t *err)
{
  static const char *const keys[]
      = { "endpoints", "prefix", "cacert", "cert", "key", "timeout_ms", NULL };
  cleanup_error roce_error_t jerr = NULL;
  const struct json *eps;
  bool tls = false;

  if (json_type (e) != JSON_OBJECT)
    return cerr (err, path, "etcd", "expected an object, found %s", json_type_name (e));
  if (check_keys (e, path, "etcd", keys, err) < 0)
    return -1;
  eps = json_object_get (e, "endpoints");
  if (eps == NULL)
    return cerr (err, path, "etcd.endpoints", "missing (the client URLs of the etcd members)");
  if (json_type (eps) != JSON_ARRAY || json_array_len (eps) == 0
      || json_array_len (eps) > CLUSTER_ENDPOINTS_MAX)
    return cerr (err, path, "etcd.endpoints", "expected an array of 1..%d URLs",
                 CLUSTER_ENDPOINTS_MAX);
  out->endpoints = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < json_array_len (eps); i++)
    {
      const char *s = json_string (json_array_at (eps, i));
      cleanup_free char *u = s && str_is_printable (s) ? xstrdup (s) : NULL;
      cleanup_free char *key = xasprintf ("etcd.endpoints[%zu]", i);
      if (u == NULL || ! valid_endpoint (u))
        return cerr (err, path, key, "expected a URL http://host:port or https://host:port");
      tls = tls || strncmp (u, "https://", 8) == 0;
      strv_push (&out->endpoints, u);
    }
  out->prefix = xstrdup ("/roce-hook/");
  if (json_member_string (e, "", "prefix", false, 128, true, &out->prefix, &jerr) < 0)
    return cerr (err, path, "etcd.prefix", "expected a string of at most 128 printable characters");
  if (out->prefix[0] != '/' || out->prefix[strlen (out->prefix) - 1] != '/'
      || strchr (out->prefix, ' ') != NULL)
    return cerr (err, path, "etcd.prefix", "'%s' must start and end with '/' (\"/roce-hook/\")",
                 out->prefix);
  if (get_path (e, path, "cacert", &out->cacert, err) < 0
      || get_path (e, path, "cert", &out->cert, err) < 0
      || get_path (e, path, "key", &out->key, err) < 0)
    return -1;
  if ((out->cert == NULL) != (out->key == NULL))
    return cerr (err, path, out->cert ? "etcd.key" : "etcd.cert",
                 "missing (a client certificate needs its key, and a key its certificate)");
  if ((out->cacert || out->cert) && ! tls)
    return cerr (err, path, out->cacert ? "etcd.cacert" : "etcd.cert",
                 "TLS files given, but no endpoint is https://");
  out->timeout_ms = CLUSTER_TIMEOUT_MS;
  return get_num (e, path, "etcd", "timeout_ms", 10, 60000, &out->timeout_ms, err);
}

int
policy_cluster_parse (const struct json *v, const char *path, struct policy_cluster **out,
                      roce_error_t *err)
{
  static const char *const keys[] = { "node",
                                      "etcd",
                                      "block",
                                      "reserve",
                                      "release_after_s",
                                      "max_blocks",
                                      "liveness_ttl_s",
                                      "max_static_blocks",
                                      NULL };
  struct policy_cluster *c = xmalloc0 (sizeof (*c));
  cleanup_error roce_error_t jerr = NULL;
  const struct json *e;

  c->block = CLUSTER_BLOCK;
  c->reserve = CLUSTER_RESERVE;
  c->release_after_s = CLUSTER_RELEASE_AFTER_S;
  c->liveness_ttl_s = CLUSTER_LIVENESS_TTL_S;
  c->max_static_blocks = CLUSTER_MAX_STATIC_BLOCKS;
  if (json_type (v) != JSON_OBJECT)
    {
      roce_error_make (err, EINVAL, "policy %s: cluster: expected an object, found %s", path,
                       json_type_name (v));
      goto fail;
    }
  if (check_keys (v, path, "", keys, err) < 0)
    goto fail;
  if (json_member_string (v, "", "node", false, CLUSTER_NODE_MAX, true, &c->node, &jerr) < 0
      || (c->node && ! valid_node (c->node)))
    {
      cerr (err, path, "node", "expected a node name (letters, digits, '-', '.', '_'; at most %d)",
            CLUSTER_NODE_MAX);
      goto fail;
    }
  if (c->node == NULL)
    {
      struct utsname u;
      if (uname (&u) < 0 || ! valid_node (u.nodename))
        {
          cerr (err, path, "node", "missing, and the host name is not a usable node name");
          goto fail;
        }
      c->node = xstrdup (u.nodename);
    }
  e = json_object_get (v, "etcd");
  if (e == NULL)
    {
      cerr (err, path, "etcd", "missing (where the cluster's etcd is)");
      goto fail;
    }
  if (parse_etcd (e, path, &c->etcd, err) < 0
      || get_num (v, path, "", "block", 1, 65536, &c->block, err) < 0
      || get_num (v, path, "", "reserve", 0, 65536, &c->reserve, err) < 0
      || get_num (v, path, "", "release_after_s", 0, 30 * 86400, &c->release_after_s, err) < 0
      || get_num (v, path, "", "max_blocks", 1, 1u << 24, &c->max_blocks, err) < 0
      || get_num (v, path, "", "liveness_ttl_s", 10, 7 * 86400, &c->liveness_ttl_s, err) < 0
      || get_num (v, path, "", "max_static_blocks", 0, 1u << 24, &c->max_static_blocks, err) < 0)
    goto fail;
  if ((c->block & (c->block - 1)) != 0)
    {
      cerr (err, path, "block", "%u is not a power of two (blocks are aligned: 4, 8, 16, ...)",
            c->block);
      goto fail;
    }
  *out = c;
  return 0;
fail:
  policy_cluster_free (c);
  return -1;
}

void
policy_cluster_free (struct policy_cluster *c)
{
  if (c == NULL)
    return;
  free (c->node);
  strv_free (c->etcd.endpoints);
  free (c->etcd.prefix);
  free (c->etcd.cacert);
  free (c->etcd.cert);
  free (c->etcd.key);
  free (c);
}
