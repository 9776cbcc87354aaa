/* SPDX-License-Identifier: Apache-2.0 */
/* Fabric networking: the policy's fabric section, the ARP packets of the RFC 5227
 * probe, the GID table, the rails file and the GID in the lease store.  */
#include <stdlib.h>
#include <string.h>

#include "ipam/ipam_int.h"
#include "ipam/lease.h"
#include "lib/utils.h"
#include "net/gid.h"
#include "net/rails.h"
#include "spec/policy.h"
#include "sys/arp.h"
#include "sys/ndisc.h"
#include "unit.h"

#define HCAS "\"hcas\":{\"a\":{\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}"

Test (fabric, defaults)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  cr_assert_eq (policy_parse ("{\"qos\":{\"mode\":\"warn\"}," HCAS "}", "t", &p, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_eq (p->fabric.route_table, 100);
  cr_assert (p->fabric.has_mac_prefix);
  cr_assert_eq (p->fabric.mac_prefix[0], 0x02);
  cr_assert_eq (p->fabric.mac_prefix[1], 0xce);
  cr_assert_eq (p->fabric.arp_notify, FABRIC_AUTO);
  cr_assert_not (p->fabric.ipv6_link_local);
  cr_assert_eq (p->fabric.dad_probe_ms, 0);
  cr_assert_eq (p->fabric.gid_wait_ms, FABRIC_GID_WAIT_MS);
  cr_assert_eq (p->fabric.gid_check, QOS_MODE_WARN, "gid_check follows qos.mode");
}

Test (fabric, every_key_set)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  const char *in = "{\"fabric\":{\"route_table\":1000,\"mac_prefix\":\"0a:01\",\"arp_notify\":0,"
                   "\"arp_ignore\":2,\"arp_announce\":\"auto\",\"rp_filter\":1,"
                   "\"ipv6_link_local\":true,\"dad_probe_ms\":200,\"gid_wait_ms\":50,"
                   "\"gid_check\":\"off\"}," HCAS "}";
  cr_assert_eq (policy_parse (in, "t", &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (p->fabric.route_table, 1000);
  cr_assert_eq (p->fabric.mac_prefix[0], 0x0a);
  cr_assert_eq (p->fabric.arp_notify, 0);
  cr_assert_eq (p->fabric.arp_ignore, 2);
  cr_assert_eq (p->fabric.arp_announce, FABRIC_AUTO);
  cr_assert_eq (p->fabric.rp_filter, 1);
  cr_assert (p->fabric.ipv6_link_local);
  cr_assert_eq (p->fabric.dad_probe_ms, 200);
  cr_assert_eq (p->fabric.gid_wait_ms, 50);
  cr_assert_eq (p->fabric.gid_check, QOS_MODE_OFF);
}

Test (fabric, refusals_name_the_key)
{
  static const struct
  {
    const char *fabric, *msg;
  } cases[] = {
    { "{\"nope\":1}", "fabric.nope: unknown key" },
    { "[]", "fabric: expected an object" },
    { "{\"route_table\":253}", "fabric.route_table: 253..253 would reach the kernel's tables" },
    { "{\"route_table\":-1}", "fabric.route_table: expected an integer" },
    { "{\"mac_prefix\":\"01:00\"}",
      "fabric.mac_prefix: the first octet must be locally administered" },
    { "{\"mac_prefix\":\"zz:00\"}", "fabric.mac_prefix: expected two hex octets" },
    { "{\"arp_ignore\":5}", "fabric.arp_ignore: expected 'auto', 0, 1, 2, 3 or 8" },
    { "{\"arp_notify\":\"on\"}", "fabric.arp_notify: expected 'auto' or an integer in 0..1" },
    { "{\"rp_filter\":3}", "fabric.rp_filter: expected 'auto' or an integer in 0..2" },
    { "{\"ipv6_link_local\":1}", "fabric.ipv6_link_local: expected true or false" },
    { "{\"dad_probe_ms\":20000}", "fabric.dad_probe_ms: expected an integer in 0..10000" },
    { "{\"dad_probe_ms\":100,\"mac_prefix\":\"\"}",
      "fabric.dad_probe_ms: the probe needs the MAC" },
    { "{\"gid_wait_ms\":\"1\"}", "fabric.gid_wait_ms: expected" },
    { "{\"gid_check\":\"maybe\"}", "fabric.gid_check: expected 'enforce', 'warn' or 'off'" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_policy struct roce_policy *p = NULL;
      cleanup_free char *in = xasprintf ("{\"fabric\":%s," HCAS "}", cases[i].fabric);
      assert_err_contains (policy_parse (in, "t.json", &p, &err), err, cases[i].msg);
      cr_assert_not_null (strstr (err->msg, "policy t.json: "), "%s", err->msg);
    }
}

static const uint8_t ours[6] = { 0x02, 0xce, 0xc6, 0x12, 0x0a, 0x64 };
static const uint8_t theirs[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t zero6[6] = { 0 };
#define ADDR 0xc6120a64u /* 198.18.10.100 */
/* An IPv4 address of those, by pointer.  */
#define V4P(a) ((const struct roce_addr[]){ { .v = (a), .family = AF_INET } })

Test (fabric, arp_probe_packet_layout)
{
  uint8_t p[ARP_PKT_LEN];
  static const uint8_t want[ARP_PKT_LEN]
      = { 0, 1, 8, 0, 6, 4, 0, 1, 0x02, 0xce, 0xc6, 0x12, 0x0a, 0x64,
          0, 0, 0, 0, 0, 0, 0, 0, 0,    0,    0xc6, 0x12, 0x0a, 0x64 };
  arp_pkt_build (p, 1, ours, 0, zero6, ADDR);
  cr_assert_arr_eq (p, want, ARP_PKT_LEN, "RFC 5227 probe: sender 0.0.0.0, target the address");
}

Test (fabric, arp_conflicts)
{
  uint8_t p[ARP_PKT_LEN], who[6] = { 0 };
  /* A reply from the holder.  */
  arp_pkt_build (p, 2, theirs, ADDR, ours, 0);
  cr_assert (arp_pkt_conflict (p, sizeof (p), ours, ADDR, who));
  cr_assert_arr_eq (who, theirs, 6);
  /* Another host probing for it at the same time.  */
  arp_pkt_build (p, 1, theirs, 0, zero6, ADDR);
  cr_assert (arp_pkt_conflict (p, sizeof (p), ours, ADDR, who));
  /* Our own probe, looped back; a reply about another address; short.  */
  arp_pkt_build (p, 1, ours, 0, zero6, ADDR);
  cr_assert_not (arp_pkt_conflict (p, sizeof (p), ours, ADDR, who));
  arp_pkt_build (p, 2, theirs, ADDR + 1, ours, 0);
  cr_assert_not (arp_pkt_conflict (p, sizeof (p), ours, ADDR, who));
  arp_pkt_build (p, 2, theirs, ADDR, ours, 0);
  cr_assert_not (arp_pkt_conflict (p, ARP_PKT_LEN - 1, ours, ADDR, who));
  p[5] = 16; /* not IPv4 */
  cr_assert_not (arp_pkt_conflict (p, sizeof (p), ours, ADDR, who));
}

/* RFC 4862's probe and RFC 4861's advertisement, byte for byte: a DAD
 * solicitation from :: to the solicited-node group, an advertisement to
 * all-nodes with override and the MAC, each with a checksum a host takes
 * (the conflict check verifies it).  */
Test (fabric, ndisc_probe_and_advertisement_layout)
{
  uint8_t t[16], other[16], p[NDISC_PKT_MAX], dst[6];
  struct roce_addr a;
  size_t n;

  cr_assert_eq (addr_parse ("fd00:10::105", &a), 0);
  addr_bytes (&a, t);
  memcpy (other, t, 16);
  other[15] ^= 1;
  n = ndisc_pkt_build (p, false, ours, t, dst);
  cr_assert_eq (n, 64);
  cr_assert_eq (p[0], 0x60);
  cr_assert_eq (p[5], 24, "payload length");
  cr_assert_eq (p[6], 58, "ICMPv6");
  cr_assert_eq (p[7], 255, "hop limit");
  for (int i = 8; i < 24; i++)
    cr_assert_eq (p[i], 0, "from the unspecified address");
  cr_assert_eq (p[24], 0xff);
  cr_assert_eq (p[25], 0x02);
  cr_assert_eq (p[35], 0x01);
  cr_assert_eq (p[36], 0xff);
  cr_assert_eq (memcmp (p + 37, t + 13, 3), 0, "ff02::1:ff00:105");
  cr_assert_eq (memcmp (dst, (uint8_t[]){ 0x33, 0x33, 0xff, 0x00, 0x01, 0x05 }, 6), 0);
  cr_assert_eq (p[40], 135);
  cr_assert_eq (memcmp (p + 48, t, 16), 0, "the target");
  /* Someone else's probe for the same address is a conflict; ours, one
   * for another address or one with a bad checksum is not.  */
  cr_assert (ndisc_pkt_conflict (p, n, theirs, ours, t));
  cr_assert_not (ndisc_pkt_conflict (p, n, ours, ours, t));
  cr_assert_not (ndisc_pkt_conflict (p, n, theirs, ours, other));
  p[42] ^= 0xff;
  cr_assert_not (ndisc_pkt_conflict (p, n, theirs, ours, t), "a bad checksum");
  p[42] ^= 0xff;
  p[7] = 64;
  cr_assert_not (ndisc_pkt_conflict (p, n, theirs, ours, t), "a routed one (hop limit 64)");

  n = ndisc_pkt_build (p, true, theirs, t, dst);
  cr_assert_eq (n, 72);
  cr_assert_eq (memcmp (p + 8, t, 16), 0, "from the address itself");
  cr_assert_eq (memcmp (dst, (uint8_t[]){ 0x33, 0x33, 0, 0, 0, 1 }, 6), 0, "all-nodes");
  cr_assert_eq (p[40], 136);
  cr_assert_eq (p[44], 0x20, "override, not solicited, not a router");
  cr_assert_eq (p[64], 2, "target link-layer address option");
  cr_assert_eq (memcmp (p + 66, theirs, 6), 0);
  cr_assert (ndisc_pkt_conflict (p, n, theirs, ours, t), "another host holds it");
  cr_assert_not (ndisc_pkt_conflict (p, n - 1, theirs, ours, t), "cut short");
  /* A solicitation from an address (address resolution, not DAD) is
   * someone asking, not holding.  */
  n = ndisc_pkt_build (p, false, theirs, t, dst);
  cr_assert (ndisc_pkt_conflict (p, n, theirs, ours, t));
  {
    /* Source ::1: one more in the sum, one less in its complement.  */
    unsigned c = (unsigned) p[42] << 8 | p[43];
    c = c == 0 ? 0xfffe : c - 1;
    p[23] = 1;
    p[42] = (uint8_t) (c >> 8);
    p[43] = (uint8_t) c;
  }
  cr_assert_not (ndisc_pkt_conflict (p, n, theirs, ours, t));
}

/* An IPv6 address is its own RoCE v2 GID: found by its full text.  */
Test (fabric, ipv6_gid_of_an_address)
{
  char root[] = "/tmp/roce-unit-XXXXXX";
  char g[GID_STR_MAX];
  unsigned port = 0, index = 0;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *p0 = NULL;
  struct roce_addr a;
  const char *d = "class/infiniband/mlx5_0/ports/1/";

  cr_assert_eq (addr_parse ("2001:2:0:10::64", &a), 0);
  cr_assert_str_eq (gid_of_addr (&a, g), "2001:0002:0000:0010:0000:0000:0000:0064");
  tree_make (root);
  {
    const char *files[][2] = {
      { "gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001\n" },
      { "gid_attrs/types/0", "IB/RoCE v1\n" },
      { "gid_attrs/ndevs/0", "ens1f0np0\n" },
      { "gids/1", "0000:0000:0000:0000:0000:ffff:c612:0a64\n" },
      { "gid_attrs/types/1", "RoCE v2\n" },
      { "gid_attrs/ndevs/1", "roce0\n" },
      { "gids/2", "2001:0002:0000:0010:0000:0000:0000:0064\n" },
      { "gid_attrs/types/2", "IB/RoCE v1\n" },
      { "gid_attrs/ndevs/2", "roce0\n" },
      { "gids/3", "2001:0002:0000:0010:0000:0000:0000:0064\n" },
      { "gid_attrs/types/3", "RoCE v2\n" },
      { "gid_attrs/ndevs/3", "roce0\n" },
    };
    for (size_t i = 0; i < ARRAY_SIZE (files); i++)
      {
        cleanup_free char *rel = xasprintf ("%s%s", d, files[i][0]);
        tree_write (root, rel, files[i][1]);
      }
  }
  cr_assert_eq (gid_find (root, "mlx5_0", &a, "roce0", &port, &index, &err), 1, "%s",
                err ? err->msg : "");
  cr_assert_eq (index, 3, "the IPv6 address's v2 entry, not its v1 one nor the IPv4 one");
  cr_assert_eq (gid_find (root, "mlx5_0", V4P (ADDR), "roce0", &port, &index, &err), 1);
  cr_assert_eq (index, 1, "a dual-stack rail's IPv4 GID beside it");
  p0 = xstrdup (root);
  tree_remove (p0);
}

Test (fabric, gid_table_and_the_containers_gid)
{
  char root[] = "/tmp/roce-unit-XXXXXX";
  char g[GID_STR_MAX];
  struct gid_port_use *u = NULL;
  size_t n = 0;
  unsigned port = 0, index = 0;
  cleanup_error roce_error_t err = NULL;
  const char *d = "class/infiniband/mlx5_0/ports/1/";
  cleanup_free char *p0 = NULL;

  tree_make (root);
  cr_assert_str_eq (gid_of_addr (V4P (ADDR), g), "0000:0000:0000:0000:0000:ffff:c612:0a64");
#define W(rel, text)                                                                               \
  do                                                                                               \
    {                                                                                              \
      cleanup_free char *r_ = xasprintf ("%s%s", d, rel);                                          \
      tree_write (root, r_, text);                                                                 \
    }                                                                                              \
  while (0)
  W ("gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001\n");
  W ("gid_attrs/types/0", "IB/RoCE v1\n");
  W ("gid_attrs/ndevs/0", "ens1f0np0\n");
  W ("gids/1", "0000:0000:0000:0000:0000:ffff:c612:0a64\n");
  W ("gid_attrs/types/1", "IB/RoCE v1\n");
  W ("gid_attrs/ndevs/1", "roce0\n");
  W ("gids/2", "0000:0000:0000:0000:0000:ffff:c612:0a64\n");
  W ("gid_attrs/types/2", "RoCE v2\n");
  W ("gid_attrs/ndevs/2", "roce0\n");
  W ("gids/3", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  cr_assert_eq (gid_table_use (root, "mlx5_0", &u, &n, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (n, 1);
  cr_assert_eq (u[0].size, 4);
  cr_assert_eq (u[0].used, 3);
  cr_assert_eq (gid_port_of (u, n, "ens1f0np0"), &u[0]);
  gid_port_use_free (u, n);
  cr_assert_eq (gid_find (root, "mlx5_0", V4P (ADDR), "roce0", &port, &index, &err), 1);
  cr_assert_eq (port, 1);
  cr_assert_eq (index, 2, "the v2 entry, not the v1 one");
  cr_assert_eq (gid_find (root, "mlx5_0", V4P (ADDR), "roce1", &port, &index, &err), 0,
                "another netdev");
  cr_assert_eq (gid_find (root, "mlx5_0", V4P (ADDR + 1), "roce0", &port, &index, &err), 0);
  assert_err_contains (gid_table_use (root, "mlx5_9", &u, &n, &err), err, "mlx5_9/ports");
  p0 = xstrdup (root);
  tree_remove (p0);
}

Test (fabric, rails_file_text)
{
  char *const gpus[] = { "0000:1b:00.0", "0000:43:00.0", NULL };
  struct net_rail r[2] = {
    { .hca = "mlx5_0",
      .ifname = "roce0",
      .addr = { .v = ADDR, .family = AF_INET },
      .prefix = 24,
      .has_gid = true,
      .gid_port = 1,
      .gid_index = 3,
      .netdev = "ens1f0np0" },
    { .hca = "mlx5_1",
      .ifname = "roce1",
      .addr = { .v = ADDR + 256, .family = AF_INET },
      .prefix = 24,
      .netdev = "ens1f1np1",
      .gpus = gpus },
  };
  cleanup_free char *t = rails_render (r, 2);
  cr_assert_str_eq (t,
                    "# hca ifname address prefix gid_port gid_index roce netdev gpus\n"
                    "mlx5_0 roce0 198.18.10.100 24 1 3 v2 ens1f0np0 -\n"
                    "mlx5_1 roce1 198.18.11.100 24 - - v2 ens1f1np1 0000:1b:00.0,0000:43:00.0\n");
}

static struct lease_store *
empty_store (void)
{
  struct lease_store *s = xmalloc0 (sizeof (*s));
  s->dir_fd = s->lock_fd = -1;
  return s;
}

Test (fabric, lease_gid_round_trips_and_old_stores_load)
{
  cleanup_lease_store struct lease_store *s = empty_store ();
  cleanup_lease_store struct lease_store *t = empty_store ();
  cleanup_lease_store struct lease_store *old = empty_store ();
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL, *stripped = NULL;
  struct lease_holder *h
      = lease_holder_add (s, &(struct netns_id){ .boot_id = "b", .ino = 7 }, "c1", 1);
  char *at;

  h->addrs = xmalloc0 (2 * sizeof (*h->addrs));
  h->addrs[0] = (struct lease_addr){ .hca = xstrdup ("mlx5_0"),
                                     .addr = { .v = ADDR, .family = AF_INET },
                                     .ifname = xstrdup ("roce0"),
                                     .has_gid = true,
                                     .gid_port = 1,
                                     .gid_index = 5 };
  h->addrs[1] = (struct lease_addr){ .hca = xstrdup ("mlx5_1"),
                                     .addr = { .v = ADDR + 256, .family = AF_INET },
                                     .ifname = xstrdup ("roce1") };
  h->n_addrs = 2;
  text = lease_store_format (s);
  cr_assert_eq (lease_store_parse (t, text, &err), 0, "%s", err ? err->msg : "");
  cr_assert (t->h[0]->addrs[0].has_gid);
  cr_assert_eq (t->h[0]->addrs[0].gid_port, 1);
  cr_assert_eq (t->h[0]->addrs[0].gid_index, 5);
  cr_assert_not (t->h[0]->addrs[1].has_gid);
  /* The same store as written before the field existed.  */
  stripped = xstrdup (text);
  at = strstr (stripped, "\"gid\"");
  cr_assert_not_null (at, "%s", text);
  {
    char *end = strchr (at, '}');
    char *comma = at;
    while (comma > stripped && *comma != ',')
      comma--;
    memmove (comma, end + 1, strlen (end + 1) + 1);
  }
  cr_assert_null (strstr (stripped, "gid"), "%s", stripped);
  cr_assert_eq (lease_store_parse (old, stripped, &err), 0, "%s: %s", stripped,
                err ? err->msg : "");
  cr_assert_not (old->h[0]->addrs[0].has_gid);
  {
    cleanup_lease_store struct lease_store *bad = empty_store ();
    cleanup_free char *broken = xstrdup (text);
    char *idx = strstr (broken, "\"index\"");
    cr_assert_not_null (idx);
    memcpy (idx, "\"indey\"", 7);
    assert_err_contains (lease_store_parse (bad, broken, &err), err, "gid.index");
  }
}
