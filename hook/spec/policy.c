/* SPDX-License-Identifier: Apache-2.0 */
/* The node admin's policy (/etc/roce-hook/config.json): parsed strictly, every
 * key typed and bounded, an unknown key refused naming it.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/utils.h"
#include "spec/policy.h"

/* Every message names the key, as "<file>: <key>: <what is wrong>".  */
struct pctx
{
  const char *path;
  roce_error_t *err;
};

static int perr (struct pctx *c, const char *key, const char *fmt, ...) ROCE_PRINTF (3, 4);

static int
perr (struct pctx *c, const char *key, const char *fmt, ...)
{
  va_list ap;
  cleanup_free char *msg = NULL;
  va_start (ap, fmt);
  msg = xvasprintf (fmt, ap);
  va_end (ap);
  return roce_error_make (c->err, EINVAL, "policy %s: %s: %s", c->path, key, msg);
}

static int
check_keys (struct pctx *c, const struct json *obj, const char *where, const char *const *allowed)
{
  for (size_t i = 0; i < json_object_len (obj); i++)
    {
      const char *k = json_object_key (obj, i);
      bool ok = false;
      for (const char *const *a = allowed; *a; a++)
        if (strcmp (*a, k) == 0)
          ok = true;
      if (! ok)
        {
          cleanup_free char *key = where[0] ? xasprintf ("%s.%s", where, k) : xstrdup (k);
          return perr (c, key, "unknown key");
        }
    }
  return 0;
}

static int
get_str (struct pctx *c, const struct json *obj, const char *where, const char *k, char **out)
{
  const struct json *v = json_object_get (obj, k);
  cleanup_free char *key = where[0] ? xasprintf ("%s.%s", where, k) : xstrdup (k);
  if (v == NULL)
    return 0;
  if (json_type (v) != JSON_STRING)
    return perr (c, key, "expected a string, found %s", json_type_name (v));
  if (! str_is_printable (json_string (v)))
    return perr (c, key, "contains control characters");
  free (*out);
  *out = xstrdup (json_string (v));
  return 0;
}

static int
get_uint (struct pctx *c, const struct json *obj, const char *where, const char *k, unsigned min,
          unsigned max, unsigned *out)
{
  const struct json *v = json_object_get (obj, k);
  cleanup_free char *key = xasprintf ("%s.%s", where, k);
  int64_t i;
  if (v == NULL)
    return 0;
  if (json_integer (v, &i) < 0)
    return perr (c, key, "expected an integer, found %s", json_type_name (v));
  if (i < (int64_t) min || i > (int64_t) max)
    return perr (c, key, "%lld is out of range %u..%u", (long long) i, min, max);
  *out = (unsigned) i;
  return 0;
}

static int
get_enum (struct pctx *c, const struct json *obj, const char *where, const char *k,
          const char *const *names, int *out)
{
  const struct json *v = json_object_get (obj, k);
  cleanup_free char *key = xasprintf ("%s.%s", where, k);
  const char *s;
  if (v == NULL)
    return 0;
  s = json_string (v);
  if (s == NULL)
    return perr (c, key, "expected a string, found %s", json_type_name (v));
  for (int i = 0; names[i]; i++)
    if (strcmp (names[i], s) == 0)
      {
        *out = i;
        return 0;
      }
  {
    cleanup_free char *list = xstrdup ("");
    for (int i = 0; names[i]; i++)
      str_list_add (&list, ", ", "'%s'", names[i]);
    return perr (c, key, "'%s' is not one of %s", s, list);
  }
}

/* A list of tenants: Kubernetes namespace names (RFC 1123 labels) or "*". */
static int
get_tenants (struct pctx *c, const struct json *obj, const char *where, const char *k, char ***out)
{
  const struct json *v = json_object_get (obj, k);
  cleanup_free char *key = where[0] ? xasprintf ("%s.%s", where, k) : xstrdup (k);
  cleanup_strv char **list = NULL;
  if (v == NULL)
    return 0;
  if (json_type (v) != JSON_ARRAY)
    return perr (c, key, "expected an array, found %s", json_type_name (v));
  list = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < json_array_len (v); i++)
    {
      const char *s = json_string (json_array_at (v, i));
      bool ok = s != NULL && strlen (s) > 0 && strlen (s) <= 63;
      for (const char *q = s; ok && *q; q++)
        ok = (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-';
      if (s && strcmp (s, "*") == 0)
        ok = true;
      if (! ok)
        return perr (c, key, "item %zu is not a Kubernetes namespace name or '*'", i);
      strv_push (&list, s);
    }
  strv_free (*out);
  *out = steal_pointer (&list);
  return 0;
}

/* `runtime`: one name or path, or a list of candidates tried in order
 * (the GPU operator's nvidia-container-runtime is under
 * /usr/local/nvidia/toolkit, a package's under /usr/bin): each an absolute
 * path or a bare name (looked up on a fixed PATH, hook/runtime/runtime.c).  */
static int
get_runtimes (struct pctx *c, const struct json *root, char ***out)
{
  const struct json *v = json_object_get (root, "runtime");
  cleanup_strv char **list = NULL;
  size_t n;
  if (v == NULL)
    return 0;
  if (json_type (v) == JSON_STRING)
    n = 1;
  else if (json_type (v) == JSON_ARRAY)
    n = json_array_len (v);
  else
    return perr (c, "runtime", "expected a string or an array of strings, found %s",
                 json_type_name (v));
  if (n == 0 || n > 16)
    return perr (c, "runtime", "expected 1..16 candidates, found %zu", n);
  list = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < n; i++)
    {
      const struct json *e = json_type (v) == JSON_ARRAY ? json_array_at (v, i) : v;
      const char *s = json_string (e);
      cleanup_free char *key
          = json_type (v) == JSON_ARRAY ? xasprintf ("runtime[%zu]", i) : xstrdup ("runtime");
      if (s == NULL)
        return perr (c, key, "expected a string, found %s", json_type_name (e));
      if (s[0] == '\0')
        return perr (c, key, "empty");
      if (! str_is_printable (s))
        return perr (c, key, "contains control characters");
      if (s[0] != '/' && strchr (s, '/') != NULL)
        return perr (c, key, "'%s' is neither an absolute path nor a bare name", s);
      strv_push (&list, s);
    }
  *out = steal_pointer (&list);
  return 0;
}

static const char *const mode_names[] = { "enforce", "warn", "off", NULL };
static const char *const ecn_names[] = { "require", "warn-unknown", "off", NULL };

const char *
qos_mode_name (enum qos_mode m)
{
  return mode_names[m];
}

const char *
qos_ecn_name (enum qos_ecn e)
{
  return ecn_names[e];
}

static bool
valid_ifname (const char *s)
{
  size_t len = strlen (s);
  if (len == 0 || len > 15 || strcmp (s, ".") == 0 || strcmp (s, "..") == 0)
    return false;
  for (const char *p = s; *p; p++)
    if (*p <= 0x20 || *p > 0x7e || *p == '/' || *p == ':')
      return false;
  return true;
}

bool
policy_valid_hca_name (const char *s)
{
  return str_is_name (s, HCA_NAME_MAX) && strcmp (s, ".") != 0 && strcmp (s, "..") != 0;
}

/* A key's address whose family is not its net's: one family per key, and
 * per net (a dual-stack rail's IPv6 goes in the keys ending in 6).  */
static int
family_refused (struct pctx *c, const char *key, const char *text, int got, int want,
                const char *why)
{
  return perr (c, key, "'%s' is %s, %s %s (one family per net: a dual-stack rail's IPv6 is in %s)",
               text, addr_family_name (got), why, addr_family_name (want),
               "subnet6, pool6, gateway6 and routes6");
}

static int
parse_cidr_key (struct pctx *c, const char *key, const char *s, struct roce_cidr *out)
{
  int r = cidr_parse (s, out);
  if (r == -2)
    return perr (c, key, "'%s' has host bits set (a subnet is its network address/prefix)", s);
  if (r < 0)
    return perr (c, key, "'%s' is not a CIDR (a.b.c.d/n, or an IPv6 prefix such as fd00:10::/64)",
                 s);
  return 0;
}

/* pool: "first-last", or a prefix (whose addresses the pool holds, but the
 * subnet's network address, and IPv4's broadcast).  */
static int
parse_pool (struct pctx *c, const char *key, char *pool, const char *subnet_key,
            struct policy_net *out)
{
  const struct roce_cidr *sn = &out->subnet;
  char a[ADDR_STR_MAX], b[ADDR_STR_MAX], snt[CIDR_STR_MAX];
  char *dash = strchr (pool, '-');

  cidr_format (sn, snt);
  if (dash == NULL && strchr (pool, '/'))
    {
      struct roce_cidr pc;
      if (parse_cidr_key (c, key, pool, &pc) < 0)
        return -1;
      if (pc.addr.family != sn->addr.family)
        return family_refused (c, key, pool, pc.addr.family, sn->addr.family, subnet_key);
      if (pc.addr.family == AF_INET6 && pc.prefix > 120)
        return perr (c, key, "'%s': a pool's prefix is /120 or shorter (256 addresses or more)",
                     pool);
      out->pool_first = pc.addr;
      out->pool_last = cidr_last (&pc);
      if (addr_eq (&out->pool_first, &sn->addr))
        out->pool_first = addr_add (&out->pool_first, 1);
      if (sn->addr.family == AF_INET)
        {
          struct roce_addr bcast = cidr_last (sn);
          if (addr_eq (&out->pool_last, &bcast))
            out->pool_last.v--;
        }
      if (addr_cmp (&out->pool_first, &out->pool_last) > 0)
        return perr (c, key, "'%s' holds no address of %s but its network or broadcast address",
                     pool, snt);
    }
  else
    {
      if (dash == NULL)
        return perr (c, key, "'%s' is not a range first-last (or a prefix)", pool);
      *dash = '\0';
      if (addr_parse (pool, &out->pool_first) < 0 || addr_parse (dash + 1, &out->pool_last) < 0)
        {
          *dash = '-';
          return perr (c, key, "'%s' is not a range of two addresses first-last", pool);
        }
      *dash = '-';
      if (out->pool_first.family != out->pool_last.family)
        return perr (c, key, "'%s' mixes IPv4 and IPv6 (one family per key)", pool);
      if (out->pool_first.family != sn->addr.family)
        return family_refused (c, key, pool, out->pool_first.family, sn->addr.family, subnet_key);
      if (addr_cmp (&out->pool_first, &out->pool_last) > 0)
        return perr (c, key, "'%s': first address is after the last", pool);
    }
  if (! cidr_contains (sn, &out->pool_first) || ! cidr_contains (sn, &out->pool_last))
    return perr (c, key, "%s-%s is not inside subnet %s", addr_format (&out->pool_first, a),
                 addr_format (&out->pool_last, b), snt);
  if (addr_eq (&out->pool_first, &sn->addr))
    return perr (c, key, "%s holds the %s address of %s", pool,
                 sn->addr.family == AF_INET ? "network or broadcast" : "Subnet-Router anycast",
                 snt);
  if (sn->addr.family == AF_INET)
    {
      struct roce_addr bcast = cidr_last (sn);
      if (addr_eq (&out->pool_last, &bcast))
        return perr (c, key, "%s holds the network or broadcast address of %s", pool, snt);
    }
  return 0;
}

static int
parse_routes (struct pctx *c, const char *where, const char *k, const struct json *routes,
              const char *subnet_key, struct policy_net *out)
{
  cleanup_free char *key = xasprintf ("%s.%s", where, k);
  if (json_type (routes) != JSON_ARRAY)
    return perr (c, key, "expected an array, found %s", json_type_name (routes));
  if (json_array_len (routes) > 0 && ! out->has_gateway)
    return perr (c, key, "routes need %s.gateway%s", where,
                 out->subnet.addr.family == AF_INET6 && strchr (k, '6') ? "6" : "");
  if (json_array_len (routes) > 256)
    return perr (c, key, "more than 256 routes");
  out->routes = xmalloc0 ((json_array_len (routes) + 1) * sizeof (*out->routes));
  for (size_t i = 0; i < json_array_len (routes); i++)
    {
      cleanup_free char *ikey = xasprintf ("%s[%zu]", key, i);
      const char *s = json_string (json_array_at (routes, i));
      if (s == NULL)
        return perr (c, ikey, "expected a string, found %s",
                     json_type_name (json_array_at (routes, i)));
      if (parse_cidr_key (c, ikey, s, &out->routes[i]) < 0)
        return -1;
      if (out->routes[i].addr.family != out->subnet.addr.family)
        return family_refused (c, ikey, s, out->routes[i].addr.family, out->subnet.addr.family,
                               subnet_key);
      if (out->routes[i].prefix == 0)
        return perr (c, ikey,
                     "'%s' would be a default route (the container's own is never "
                     "touched): list the fabric's subnets",
                     s);
      out->n_routes++;
    }
  return 0;
}

/* One net of a rail: the keys subnet, pool, gateway, routes with `suffix`
 * ("" or "6").  With "6": absent altogether is no second net (false in
 * *present), and the net must be IPv6.  */
static int
parse_net (struct pctx *c, const char *where, const struct json *h, const char *suffix,
           struct policy_net *out, bool *present)
{
  bool second = suffix[0] != '\0';
  cleanup_free char *ks = xasprintf ("subnet%s", suffix), *kp = xasprintf ("pool%s", suffix);
  cleanup_free char *kg = xasprintf ("gateway%s", suffix), *kr = xasprintf ("routes%s", suffix);
  cleanup_free char *subnet = NULL, *pool = NULL, *gateway = NULL;
  cleanup_free char *key = xasprintf ("%s.%s", where, ks);
  cleanup_free char *subnet_key = NULL;
  const struct json *routes = json_object_get (h, kr);
  unsigned lo = 8, hi;

  *present = false;
  if (get_str (c, h, where, ks, &subnet) < 0 || get_str (c, h, where, kp, &pool) < 0
      || get_str (c, h, where, kg, &gateway) < 0)
    return -1;
  if (subnet == NULL && second && pool == NULL && gateway == NULL && routes == NULL)
    return 0;
  if (subnet == NULL)
    return second ? perr (c, key, "missing (%s.%s, %s and %s need it)", where, kp, kg, kr)
                  : perr (c, key, "missing");
  *present = true;
  if (parse_cidr_key (c, key, subnet, &out->subnet) < 0)
    return -1;
  if (second && out->subnet.addr.family != AF_INET6)
    return perr (c, key, "'%s' is IPv4 (%s is the IPv6 subnet of a dual-stack rail)", subnet, ks);
  hi = out->subnet.addr.family == AF_INET ? 30 : 120;
  if (out->subnet.prefix < lo || out->subnet.prefix > hi)
    return perr (c, key, "prefix /%u is out of range /%u../%u", out->subnet.prefix, lo, hi);
  subnet_key = xasprintf ("where %s.%s is", where, ks);

  free (key);
  key = xasprintf ("%s.%s", where, kp);
  if (pool == NULL)
    return perr (c, key, "missing");
  if (parse_pool (c, key, pool, subnet_key, out) < 0)
    return -1;

  if (gateway)
    {
      char sn[CIDR_STR_MAX];
      free (key);
      key = xasprintf ("%s.%s", where, kg);
      if (addr_parse (gateway, &out->gateway) < 0)
        return perr (c, key, "'%s' is not an address", gateway);
      if (out->gateway.family != out->subnet.addr.family)
        return family_refused (c, key, gateway, out->gateway.family, out->subnet.addr.family,
                               subnet_key);
      if (! cidr_contains (&out->subnet, &out->gateway))
        return perr (c, key, "%s is not inside subnet %s", gateway, cidr_format (&out->subnet, sn));
      if (addr_cmp (&out->gateway, &out->pool_first) >= 0
          && addr_cmp (&out->gateway, &out->pool_last) <= 0)
        return perr (c, key, "%s lies inside the pool %s", gateway, pool);
      out->has_gateway = true;
    }
  if (routes && parse_routes (c, where, kr, routes, subnet_key, out) < 0)
    return -1;
  return 0;
}

static int
parse_hca (struct pctx *c, const char *name, const struct json *h, struct policy_hca *out)
{
  static const char *const keys[]
      = { "netdev", "subnet",  "pool",  "gateway",  "routes",  "tenants",
          "probe",  "subnet6", "pool6", "gateway6", "routes6", NULL };
  cleanup_free char *where = xasprintf ("hcas.%s", name);
  cleanup_free char *key = NULL;
  cleanup_free char *probe = NULL;
  bool present = false;

  out->name = xstrdup (name);
  if (! policy_valid_hca_name (name))
    return perr (c, where, "not a valid HCA name (letters, digits, '_', '-', '.'; at most %d)",
                 HCA_NAME_MAX);
  if (strcmp (name, POLICY_HCA_AUTO) == 0)
    return perr (c, where, "'%s' is reserved (roce.io/hca=%s chooses the HCAs nearest the GPUs)",
                 name, POLICY_HCA_AUTO);
  if (json_type (h) != JSON_OBJECT)
    return perr (c, where, "expected an object, found %s", json_type_name (h));
  if (check_keys (c, h, where, keys) < 0)
    return -1;
  if (get_str (c, h, where, "netdev", &out->netdev) < 0
      || get_str (c, h, where, "probe", &probe) < 0)
    return -1;
  if (probe)
    {
      if (addr_parse (probe, &out->probe) < 0)
        return perr (c, (key = xasprintf ("%s.probe", where)), "'%s' is not an address", probe);
      out->has_probe = true;
    }

  if (get_tenants (c, h, where, "tenants", &out->tenants) < 0)
    return -1;
  if (out->netdev && ! valid_ifname (out->netdev))
    return perr (c, (key = xasprintf ("%s.netdev", where)), "'%s' is not a valid interface name",
                 out->netdev);

  if (parse_net (c, where, h, "", &out->net[0], &present) < 0)
    return -1;
  out->n_nets = 1;
  if (parse_net (c, where, h, "6", &out->net[1], &present) < 0)
    return -1;
  if (present && out->net[0].subnet.addr.family == AF_INET6)
    return perr (c, (key = xasprintf ("%s.subnet6", where)),
                 "a second IPv6 subnet beside an IPv6 %s.subnet (subnet6 is the IPv6 subnet of "
                 "a rail whose subnet is IPv4)",
                 where);
  if (present)
    out->n_nets = 2;
  /* The echoes leave from the rail's address of the probe's family.  */
  if (out->has_probe && policy_hca_net (out, out->probe.family) == NULL)
    return perr (c, (key = xasprintf ("%s.probe", where)),
                 "'%s' is %s, the rail has no %s subnet (the MTU probe's echoes leave from the "
                 "rail's address of the probe's family)",
                 probe, addr_family_name (out->probe.family), addr_family_name (out->probe.family));
  return 0;
}

static int
parse_memlock (struct pctx *c, const struct json *v, struct roce_policy *p)
{
  int64_t i;
  if (v == NULL)
    return 0;
  if (json_string (v) && strcmp (json_string (v), "unlimited") == 0)
    {
      p->memlock_unlimited = true;
      return 0;
    }
  if (json_integer (v, &i) == 0 && i >= 0)
    {
      p->memlock_unlimited = false;
      p->memlock = (uint64_t) i;
      return 0;
    }
  if (json_string (v))
    {
      uint64_t u;
      if (parse_u64 (json_string (v), &u) == 0)
        {
          p->memlock_unlimited = false;
          p->memlock = u;
          return 0;
        }
    }
  return perr (c, "memlock", "expected 'unlimited' or a byte count, found %s", json_type_name (v));
}

static bool
pools_overlap (const struct policy_net *a, const struct policy_net *b)
{
  return a->subnet.addr.family == b->subnet.addr.family
         && addr_cmp (&a->pool_first, &b->pool_last) <= 0
         && addr_cmp (&b->pool_first, &a->pool_last) <= 0;
}

/* ---- policy_parse, step by step ----------------------------------------- */

static struct roce_policy *
policy_defaults (const char *path)
{
  struct roce_policy *p = xmalloc0 (sizeof (*p));
  p->path = xstrdup (path);
  p->state_dir = xstrdup ("/var/lib/roce-hook");
  p->sysfs_root = xstrdup ("/sys");
  p->procfs_root = xstrdup ("/proc");
  p->ifname_prefix = xstrdup ("roce");
  p->memlock_unlimited = true;
  p->lock_timeout_ms = POLICY_LOCK_TIMEOUT_MS;
  p->configfs_root = xstrdup ("/sys/kernel/config");
  p->stack = POLICY_STACK_DEFAULT;
  p->shm_size = POLICY_SHM_DEFAULT;
  p->qos = (struct policy_qos){ .mode = QOS_MODE_ENFORCE,
                                .pfc_priority = 3,
                                .dscp = 26,
                                .ecn = QOS_ECN_REQUIRE,
                                .min_mtu = 9000,
                                .sw = QOS_MODE_WARN };
  return p;
}

static int
absolute_path (struct pctx *c, const char *key, const char *v)
{
  if (v && v[0] != '/')
    return perr (c, key, "'%s' is not an absolute path", v);
  return 0;
}

/* The top level's scalars: paths, names, the runtime, tenants, the lock wait. */
static int
parse_top (struct pctx *c, const struct json *root, struct roce_policy *p)
{
  uint64_t ms = p->lock_timeout_ms;
  size_t len;
  bool ok;

  if (get_str (c, root, "", "state_dir", &p->state_dir) < 0
      || get_str (c, root, "", "sysfs_root", &p->sysfs_root) < 0
      || get_str (c, root, "", "procfs_root", &p->procfs_root) < 0
      || get_str (c, root, "", "log_file", &p->log_file) < 0
      || get_str (c, root, "", "ifname_prefix", &p->ifname_prefix) < 0
      || get_runtimes (c, root, &p->runtimes) < 0
      || get_str (c, root, "", "configfs_root", &p->configfs_root) < 0
      || get_tenants (c, root, "", "default_tenants", &p->default_tenants) < 0)
    return -1;
  if (p->default_tenants == NULL)
    strv_push (&p->default_tenants, "*");
  if (json_member_u64 (root, "", "lock_timeout_ms", false, 1, 600000, &ms, NULL) < 0)
    return perr (c, "lock_timeout_ms", "expected an integer in 1..600000");
  p->lock_timeout_ms = (unsigned) ms;
  if (p->log_file && p->log_file[0] == '\0')
    {
      free (p->log_file);
      p->log_file = NULL;
    }
  if (absolute_path (c, "state_dir", p->state_dir) < 0
      || absolute_path (c, "sysfs_root", p->sysfs_root) < 0
      || absolute_path (c, "procfs_root", p->procfs_root) < 0
      || absolute_path (c, "log_file", p->log_file) < 0
      || absolute_path (c, "configfs_root", p->configfs_root) < 0)
    return -1;
  len = strlen (p->ifname_prefix);
  ok = len > 0 && len <= IFNAME_PREFIX_MAX;
  for (const char *q = p->ifname_prefix; ok && *q; q++)
    ok = (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_' || *q == '-';
  if (! ok)
    return perr (c, "ifname_prefix", "'%s' must be 1-%d of [a-z0-9_-]", p->ifname_prefix,
                 IFNAME_PREFIX_MAX);
  return 0;
}

/* qos.pfc_stall_prevention: "auto" (the driver's default timeout) or a
 * timeout in ms (0 turns it off), as ethtool's pfc-prevention-tout.  */
static int
parse_stall (struct pctx *c, const struct json *v, struct roce_policy *p)
{
  int64_t i;
  if (v == NULL)
    return 0;
  if (json_string (v) && strcmp (json_string (v), "auto") == 0)
    {
      p->qos.has_stall = true;
      p->qos.stall_ms = 0xffff;
      return 0;
    }
  if (json_integer (v, &i) < 0 || i < 0 || i >= 0xffff)
    return perr (c, "qos.pfc_stall_prevention",
                 "expected 'auto' or a timeout in ms (0..65534; 0 "
                 "turns it off)");
  p->qos.has_stall = true;
  p->qos.stall_ms = (unsigned) i;
  return 0;
}

/* A byte count (an integer or a decimal string), or "unlimited" where
 * `unlimited` is allowed.  */
static int
parse_bytes (struct pctx *c, const struct json *v, const char *key, uint64_t min, bool *unlimited,
             uint64_t *out)
{
  int64_t i;
  uint64_t u;
  if (v == NULL)
    return 0;
  if (unlimited && json_string (v) && strcmp (json_string (v), "unlimited") == 0)
    {
      *unlimited = true;
      return 0;
    }
  if (json_integer (v, &i) == 0 && i >= 0)
    u = (uint64_t) i;
  else if (! json_string (v) || parse_u64 (json_string (v), &u) < 0)
    return perr (c, key, "expected %sa byte count, found %s", unlimited ? "'unlimited' or " : "",
                 json_type_name (v));
  if (u < min)
    return perr (c, key, "%llu is below %llu bytes", (unsigned long long) u,
                 (unsigned long long) min);
  if (unlimited)
    *unlimited = false;
  *out = u;
  return 0;
}

static int
parse_qos (struct pctx *c, const struct json *v, struct roce_policy *p)
{
  static const char *const qos_keys[] = { "mode",
                                          "pfc_priority",
                                          "dscp",
                                          "ecn",
                                          "min_mtu",
                                          "pfc_stall_prevention",
                                          "pfc_other_priorities",
                                          "switch",
                                          NULL };
  static const char *const others_names[] = { "keep", "off", NULL };
  int others = p->qos.pfc_others_off ? 1 : 0;
  int mode = (int) p->qos.mode, ecn = (int) p->qos.ecn, sw = (int) p->qos.sw;

  if (v == NULL)
    return 0;
  if (json_type (v) != JSON_OBJECT)
    return perr (c, "qos", "expected an object, found %s", json_type_name (v));
  if (check_keys (c, v, "qos", qos_keys) < 0
      || get_enum (c, v, "qos", "mode", mode_names, &mode) < 0
      || get_uint (c, v, "qos", "pfc_priority", 0, 7, &p->qos.pfc_priority) < 0
      || get_uint (c, v, "qos", "dscp", 0, 63, &p->qos.dscp) < 0
      || get_enum (c, v, "qos", "ecn", ecn_names, &ecn) < 0
      || get_uint (c, v, "qos", "min_mtu", 68, 65535, &p->qos.min_mtu) < 0
      || get_enum (c, v, "qos", "pfc_other_priorities", others_names, &others) < 0
      || get_enum (c, v, "qos", "switch", mode_names, &sw) < 0)
    return -1;
  p->qos.sw = (enum qos_mode) sw;
  p->qos.pfc_others_off = others == 1;
  p->qos.mode = (enum qos_mode) mode;
  p->qos.ecn = (enum qos_ecn) ecn;
  return parse_stall (c, json_object_get (v, "pfc_stall_prevention"), p);
}

static int
parse_hcas (struct pctx *c, const struct json *v, struct roce_policy *p)
{
  if (v == NULL)
    return perr (c, "hcas", "missing (list the HCAs containers may use)");
  if (json_type (v) != JSON_OBJECT)
    return perr (c, "hcas", "expected an object, found %s", json_type_name (v));
  if (json_object_len (v) > 64)
    return perr (c, "hcas", "more than 64 HCAs");
  p->hcas = xmalloc0 ((json_object_len (v) + 1) * sizeof (*p->hcas));
  for (size_t i = 0; i < json_object_len (v); i++)
    {
      p->n_hcas++;
      if (parse_hca (c, json_object_key (v, i), json_object_value (v, i), &p->hcas[i]) < 0)
        return -1;
    }
  return 0;
}

/* No two HCAs share a pool's addresses or a netdev.  */
static int
check_hcas_apart (struct pctx *c, const struct roce_policy *p)
{
  for (size_t i = 0; i < p->n_hcas; i++)
    for (size_t k = i + 1; k < p->n_hcas; k++)
      {
        const struct policy_hca *a = &p->hcas[i], *b = &p->hcas[k];
        for (size_t x = 0; x < a->n_nets; x++)
          for (size_t y = 0; y < b->n_nets; y++)
            if (pools_overlap (&a->net[x], &b->net[y]))
              {
                cleanup_free char *key = xasprintf ("hcas.%s.pool%s", b->name, y ? "6" : "");
                return perr (c, key, "overlaps hcas.%s.pool%s", a->name, x ? "6" : "");
              }
        if (a->netdev && b->netdev && strcmp (a->netdev, b->netdev) == 0)
          {
            cleanup_free char *key = xasprintf ("hcas.%s.netdev", b->name);
            return perr (c, key, "'%s' is also hcas.%s.netdev", b->netdev, a->name);
          }
      }
  return 0;
}

int
policy_parse (const char *buf, const char *path, struct roce_policy **out, roce_error_t *err)
{
  static const char *const top_keys[]
      = { "state_dir",     "sysfs_root", "log_file",        "ifname_prefix",   "memlock", "qos",
          "hcas",          "runtime",    "default_tenants", "lock_timeout_ms", "fabric",  "cluster",
          "configfs_root", "stack",      "shm_size",        "procfs_root",     NULL };
  struct pctx c = { .path = path, .err = err };
  cleanup_json struct json *root = NULL;
  cleanup_policy struct roce_policy *p = NULL;

  if (json_parse (buf, &root, err) < 0)
    return roce_error_wrap (err, "policy %s", path);
  if (json_type (root) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "policy %s: expected an object, found %s", path,
                            json_type_name (root));
  p = policy_defaults (path);
  if (check_keys (&c, root, "", top_keys) < 0 || parse_top (&c, root, p) < 0
      || parse_memlock (&c, json_object_get (root, "memlock"), p) < 0
      || parse_bytes (&c, json_object_get (root, "stack"), "stack", 1 << 20, &p->stack_unlimited,
                      &p->stack)
             < 0
      || parse_bytes (&c, json_object_get (root, "shm_size"), "shm_size", 1 << 20, NULL,
                      &p->shm_size)
             < 0
      || parse_qos (&c, json_object_get (root, "qos"), p) < 0
      || parse_hcas (&c, json_object_get (root, "hcas"), p) < 0 || check_hcas_apart (&c, p) < 0
      || policy_parse_fabric (json_object_get (root, "fabric"), path, p, err) < 0
      || (json_object_get (root, "cluster")
          && policy_cluster_parse (json_object_get (root, "cluster"), path, &p->cluster, err) < 0))
    return -1;
  *out = steal_pointer (&p);
  return 0;
}

int
policy_load (const char *path, struct roce_policy **out, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_free char *dir = xstrdup (path);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  cleanup_close int dirfd = -1;
  char *slash;

  if (fd < 0)
    return roce_error_sys (err, errno, "policy: open `%s`", path);
  /* A policy anyone can write is anyone's policy: refused, as sshd does.  */
  slash = strrchr (dir, '/');
  if (slash == dir)
    slash[1] = '\0'; /* "/config.json": the root directory */
  else if (slash)
    *slash = '\0';
  dirfd = open (slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (check_trusted (fd, path, "the policy", err) < 0
      || (dirfd >= 0
          && check_trusted (dirfd, slash ? dir : ".", "the policy's directory", err) < 0))
    return -1;
  if (read_all_fd (fd, POLICY_MAX, &buf, NULL, err) < 0)
    return roce_error_wrap (err, "policy `%s`", path);
  return policy_parse (buf, path, out, err);
}

void
policy_free (struct roce_policy *p)
{
  if (p == NULL)
    return;
  free (p->path);
  free (p->state_dir);
  free (p->sysfs_root);
  free (p->procfs_root);
  free (p->log_file);
  free (p->ifname_prefix);
  strv_free (p->runtimes);
  free (p->configfs_root);
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      free (p->hcas[i].name);
      free (p->hcas[i].netdev);
      for (size_t k = 0; k < POLICY_NETS; k++)
        free (p->hcas[i].net[k].routes);
      strv_free (p->hcas[i].tenants);
    }
  strv_free (p->default_tenants);
  policy_cluster_free (p->cluster);
  free (p->hcas);
  free (p);
}

void
cleanup_policyp (struct roce_policy **p)
{
  policy_free (*p);
  *p = NULL;
}

char *const *
policy_hca_tenants (const struct roce_policy *p, const struct policy_hca *h, const char **key)
{
  if (h->tenants)
    {
      *key = "tenants";
      return h->tenants;
    }
  *key = "default_tenants";
  return p->default_tenants;
}

const struct policy_hca *
policy_find_hca (const struct roce_policy *p, const char *name)
{
  for (size_t i = 0; i < p->n_hcas; i++)
    if (strcmp (p->hcas[i].name, name) == 0)
      return &p->hcas[i];
  return NULL;
}

const struct policy_net *
policy_hca_net (const struct policy_hca *h, int family)
{
  for (size_t i = 0; i < h->n_nets; i++)
    if (h->net[i].subnet.addr.family == family)
      return &h->net[i];
  return NULL;
}

const struct roce_addr *
policy_hca_probe_peer (const struct policy_hca *h)
{
  const struct policy_net *n4 = policy_hca_net (h, AF_INET), *n6 = policy_hca_net (h, AF_INET6);
  if (h->has_probe)
    return &h->probe;
  if (n4 && n4->has_gateway)
    return &n4->gateway;
  if (n6 && n6->has_gateway)
    return &n6->gateway;
  return NULL;
}

char *
policy_net_pool_text (const struct policy_net *n)
{
  char a[ADDR_STR_MAX], b[ADDR_STR_MAX];
  return xasprintf ("%s-%s", addr_format (&n->pool_first, a), addr_format (&n->pool_last, b));
}

bool
policy_nccl_range (const struct policy_hca *const *hcas, size_t n, struct roce_cidr *out)
{
  int family = n ? hcas[0]->net[0].subnet.addr.family : 0;
  for (size_t i = 1; i < n; i++)
    if (hcas[i]->net[0].subnet.addr.family != family)
      family = 0;
  for (int f = AF_INET; family == 0 && n && f != 0; f = f == AF_INET ? AF_INET6 : 0)
    {
      bool all = true;
      for (size_t i = 0; i < n; i++)
        all = all && policy_hca_net (hcas[i], f) != NULL;
      if (all)
        family = f;
    }
  if (family == 0)
    return false;
  *out = policy_hca_net (hcas[0], family)->subnet;
  for (size_t i = 1; i < n; i++)
    {
      const struct roce_cidr *s = &policy_hca_net (hcas[i], family)->subnet;
      unsigned prefix = out->prefix < s->prefix ? out->prefix : s->prefix;
      while (prefix > 0
             && (out->addr.v & cidr_mask (family, prefix))
                    != (s->addr.v & cidr_mask (family, prefix)))
        prefix--;
      out->prefix = prefix;
      out->addr.v &= cidr_mask (family, prefix);
    }
  return true;
}

char *
policy_hca_names (const struct roce_policy *p)
{
  char *list = xstrdup ("");
  for (size_t i = 0; i < p->n_hcas; i++)
    str_list_add (&list, ", ", "%s", p->hcas[i].name);
  return list;
}

const char *
policy_default_path (const char *cli)
{
  const char *env;
  if (cli && *cli)
    return cli;
  env = getenv ("ROCE_HOOK_CONFIG");
  if (env && *env)
    return env;
  return ROCE_DEFAULT_CONFIG;
}
