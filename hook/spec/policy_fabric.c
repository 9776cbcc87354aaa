/* SPDX-License-Identifier: Apache-2.0 */
/* The policy's `fabric` object: per-rail routing tables, ARP hygiene, the
 * MAC derived from the address, the duplicate-address probe and the RoCE v2
 * GID wait.  Every refusal names its key: "policy <file>: fabric.<key>: ...". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/utils.h"
#include "spec/policy.h"

#define WHERE "fabric"

static int
bad (const char *path, const char *key, roce_error_t *err, const char *what)
{
  return roce_error_make (err, EINVAL, "policy %s: " WHERE ".%s: %s", path, key, what);
}

/* An integer in min..max, or "auto" (FABRIC_AUTO).  */
static int
get_auto (const struct json *obj, const char *path, const char *key, unsigned max, int *out,
          roce_error_t *err)
{
  const struct json *v = json_object_get (obj, key);
  uint64_t u;
  if (v == NULL)
    return 0;
  if (json_string (v) && strcmp (json_string (v), "auto") == 0)
    {
      *out = FABRIC_AUTO;
      return 0;
    }
  if (json_uint64 (v, &u) < 0 || u > max)
    {
      cleanup_free char *what = xasprintf ("expected 'auto' or an integer in 0..%u", max);
      return bad (path, key, err, what);
    }
  *out = (int) u;
  return 0;
}

static int
get_ms (const struct json *obj, const char *path, const char *key, unsigned max, unsigned *out,
        roce_error_t *err)
{
  uint64_t u = *out;
  if (json_member_u64 (obj, WHERE, key, false, 0, max, &u, err) < 0)
    return roce_error_wrap (err, "policy %s", path);
  *out = (unsigned) u;
  return 0;
}

/* "02:ce": two hex octets, locally administered, unicast; "" turns it off. */
static int
get_mac_prefix (const struct json *obj, const char *path, struct policy_fabric *f,
                roce_error_t *err)
{
  cleanup_free char *s = NULL;
  unsigned a, b;
  char tail;
  if (json_member_string (obj, WHERE, "mac_prefix", false, 16, true, &s, err) < 0)
    return roce_error_wrap (err, "policy %s", path);
  if (s == NULL)
    return 0;
  if (s[0] == '\0')
    {
      f->has_mac_prefix = false;
      return 0;
    }
  if (strlen (s) != 5 || sscanf (s, "%2x:%2x%c", &a, &b, &tail) != 2 || s[2] != ':')
    return bad (path, "mac_prefix", err,
                "expected two hex octets 'xx:xx' (or \"\" for random MACs)");
  if ((a & 0x02) == 0 || (a & 0x01) != 0)
    return bad (path, "mac_prefix", err,
                "the first octet must be locally administered and unicast (x2, x6, xa or xe)");
  f->has_mac_prefix = true;
  f->mac_prefix[0] = (uint8_t) a;
  f->mac_prefix[1] = (uint8_t) b;
  return 0;
}

static void
fabric_defaults (struct roce_policy *p)
{
  p->fabric = (struct policy_fabric){
    .route_table = FABRIC_ROUTE_TABLE,
    .has_mac_prefix = true,
    .mac_prefix = { 0x02, 0xce },
    .arp_notify = FABRIC_AUTO,
    .arp_ignore = FABRIC_AUTO,
    .arp_announce = FABRIC_AUTO,
    .rp_filter = FABRIC_AUTO,
    .ipv6_link_local = false,
    .dad_probe_ms = 0,
    .gid_wait_ms = FABRIC_GID_WAIT_MS,
    .gid_check = p->qos.mode,
  };
}

int
policy_parse_fabric (const struct json *v, const char *path, struct roce_policy *p,
                     roce_error_t *err)
{
  static const char *const keys[]
      = { "route_table",  "mac_prefix", "arp_notify",      "arp_ignore",
          "arp_announce", "rp_filter",  "ipv6_link_local", "dad_probe_ms",
          "gid_wait_ms",  "gid_check",  "mtu_probe_ms",    NULL };
  static const char *const modes[] = { "enforce", "warn", "off", NULL };
  struct policy_fabric *f = &p->fabric;
  const struct json *x;
  uint64_t table;

  fabric_defaults (p);
  if (v == NULL)
    return 0;
  if (json_type (v) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "policy %s: " WHERE ": expected an object, found %s", path,
                            json_type_name (v));
  for (size_t i = 0; i < json_object_len (v); i++)
    {
      const char *k = json_object_key (v, i);
      bool ok = false;
      for (const char *const *a = keys; *a; a++)
        ok = ok || strcmp (*a, k) == 0;
      if (! ok)
        return bad (path, k, err, "unknown key");
    }

  table = f->route_table;
  if (json_member_u64 (v, WHERE, "route_table", false, 0, 0x7fffffff, &table, err) < 0)
    return roce_error_wrap (err, "policy %s", path);
  /* 253..255 are the kernel's default, main and local tables: no rail's
   * table may be one of them.  */
  if (table != 0 && table <= 255 && table + p->n_hcas > 253)
    {
      cleanup_free char *what
          = xasprintf ("%llu..%llu would reach the kernel's tables 253-255 "
                       "(default, main, local): use 1..%zu or 256 and up",
                       (unsigned long long) table, (unsigned long long) (table + p->n_hcas - 1),
                       253 - p->n_hcas);
      return bad (path, "route_table", err, what);
    }
  f->route_table = (unsigned) table;

  if (get_mac_prefix (v, path, f, err) < 0
      || get_auto (v, path, "arp_notify", 1, &f->arp_notify, err) < 0
      || get_auto (v, path, "arp_ignore", 8, &f->arp_ignore, err) < 0
      || get_auto (v, path, "arp_announce", 2, &f->arp_announce, err) < 0
      || get_auto (v, path, "rp_filter", 2, &f->rp_filter, err) < 0
      || get_ms (v, path, "dad_probe_ms", 10000, &f->dad_probe_ms, err) < 0
      || get_ms (v, path, "mtu_probe_ms", 10000, &f->mtu_probe_ms, err) < 0
      || get_ms (v, path, "gid_wait_ms", 10000, &f->gid_wait_ms, err) < 0)
    return -1;
  if (f->dad_probe_ms && ! f->has_mac_prefix)
    return bad (path, "dad_probe_ms", err,
                "the probe needs the MAC derived from the address (set fabric.mac_prefix)");
  if (f->arp_ignore > 3 && f->arp_ignore != 8)
    return bad (path, "arp_ignore", err, "expected 'auto', 0, 1, 2, 3 or 8 (the kernel's values)");

  if ((x = json_object_get (v, "ipv6_link_local")) != NULL)
    {
      if (json_type (x) != JSON_TRUE && json_type (x) != JSON_FALSE)
        return bad (path, "ipv6_link_local", err, "expected true or false");
      f->ipv6_link_local = json_type (x) == JSON_TRUE;
    }
  if ((x = json_object_get (v, "gid_check")) != NULL)
    {
      const char *s = json_string (x);
      bool ok = false;
      for (int i = 0; s && modes[i]; i++)
        if (strcmp (modes[i], s) == 0)
          {
            f->gid_check = (enum qos_mode) i;
            ok = true;
          }
      if (! ok)
        return bad (path, "gid_check", err, "expected 'enforce', 'warn' or 'off'");
    }
  return 0;
}
