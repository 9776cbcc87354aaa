/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook metrics`: label escaping, rendering by family, the sysfs
 * counter and GID readers on a fake tree, the ethtool name patterns (mlx5
 * names) and the ioctl's negative paths, pools and leases from a store,
 * and the atomic file write.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipam/ipam_int.h"
#include "ipam/lease.h"
#include "lib/utils.h"
#include "report/metrics.h"
#include "unit.h"

TestSuite (metrics, .init = tree_setup, .fini = tree_teardown);

/* The number of comment lines containing needle.  */
static size_t
comments_with (const struct metrics *m, const char *needle)
{
  size_t n = 0;
  for (char **c = m->comments; c && *c; c++)
    if (strstr (*c, needle))
      n++;
  return n;
}

/* The value of the sample of family name whose labels are exactly labels,
 * or NULL.  */
static const char *
sample (const struct metrics *m, const char *name, const char *labels)
{
  const struct metric_family *f = metrics_find (m, name);
  for (size_t i = 0; f && i < f->n; i++)
    if (strcmp (f->v[i].labels, labels) == 0)
      return f->v[i].value;
  return NULL;
}

static void
assert_sample (const struct metrics *m, const char *name, const char *labels, const char *value)
{
  const char *v = sample (m, name, labels);
  cr_assert_not_null (v, "no sample %s{%s}", name, labels);
  cr_assert_str_eq (v, value, "%s{%s}", name, labels);
}

/* ---- escaping and rendering ---------------------------------------------------- */

Test (metrics, label_values_are_escaped_as_the_format_wants)
{
  cleanup_free char *a = metrics_escape_label ("rt-1");
  cleanup_free char *b = metrics_escape_label ("a\"b\\c\nd");
  cleanup_free char *c = metrics_escape_label ("x\001y\377z\t");
  cr_assert_str_eq (a, "rt-1");
  cr_assert_str_eq (b, "a\\\"b\\\\c\\nd");
  /* Neither a control byte nor invalid UTF-8 reaches the file: an escaped
   * backslash, so the value reads \x01.  */
  cr_assert_str_eq (c, "x\\\\x01y\\\\xffz\\\\x09");
}

Test (metrics, render_groups_samples_by_family_with_help_and_type)
{
  struct metrics m = { 0 };
  cleanup_free char *text = NULL;

  metrics_add_u64 (&m, "roce_a_total", METRIC_COUNTER, "A things.", 5, "hca", "mlx5_0", NULL);
  metrics_add (&m, "roce_b", METRIC_GAUGE, "B.", "-1", NULL);
  metrics_add_u64 (&m, "roce_a_total", METRIC_COUNTER, "A things.", 7, "hca", "mlx5_1", "port", "1",
                   NULL);
  metrics_comment (&m, "mlx5_0 port 1: no hw_counters\nsecond line");
  text = metrics_render (&m);
  cr_assert_str_eq (text, "# roce-hook: mlx5_0 port 1: no hw_counters\\x0asecond line\n"
                          "# HELP roce_a_total A things.\n"
                          "# TYPE roce_a_total counter\n"
                          "roce_a_total{hca=\"mlx5_0\"} 5\n"
                          "roce_a_total{hca=\"mlx5_1\",port=\"1\"} 7\n"
                          "# HELP roce_b B.\n"
                          "# TYPE roce_b gauge\n"
                          "roce_b -1\n");
  metrics_clear (&m);
}

Test (metrics, render_of_nothing_is_empty)
{
  struct metrics m = { 0 };
  cleanup_free char *text = metrics_render (&m);
  cr_assert_str_eq (text, "");
}

/* ---- sysfs counters ----------------------------------------------------------- */

Test (metrics, read_counter)
{
  cleanup_free char *good = xasprintf ("%s/good", tree_root);
  cleanup_free char *bare = xasprintf ("%s/bare", tree_root);
  cleanup_free char *bad = xasprintf ("%s/bad", tree_root);
  cleanup_free char *big = xasprintf ("%s/big", tree_root);
  cleanup_free char *none = xasprintf ("%s/none", tree_root);
  uint64_t v = 0;

  tree_mk ("good", "18446744073709551615\n");
  tree_mk ("bare", "42");
  tree_mk ("bad", "N/A\n");
  tree_mk ("big", "18446744073709551616\n");
  {
    cleanup_error roce_error_t err = NULL;
    cr_assert_eq (metrics_read_counter (good, &v, &err), 0);
    cr_assert_eq (v, UINT64_MAX);
    cr_assert_eq (metrics_read_counter (bare, &v, &err), 0);
    cr_assert_eq (v, 42);
  }
  {
    cleanup_error roce_error_t err = NULL;
    assert_err_contains (metrics_read_counter (bad, &v, &err), err, "not a counter");
    cr_assert_eq (err->status, EINVAL);
  }
  {
    cleanup_error roce_error_t err = NULL;
    assert_err_contains (metrics_read_counter (big, &v, &err), err, "not a counter");
  }
  {
    cleanup_error roce_error_t err = NULL;
    cr_assert_lt (metrics_read_counter (none, &v, &err), 0);
    cr_assert_eq (err->status, ENOENT);
  }
}

#define P1 "class/infiniband/mlx5_0/ports/1/"
#define P2 "class/infiniband/mlx5_0/ports/2/"

Test (metrics, ports_counters_and_gids)
{
  struct metrics m = { 0 };

  tree_mk (P1 "hw_counters/np_cnp_sent", "1234\n");
  tree_mk (P1 "hw_counters/rp_cnp_handled", "77\n");
  tree_mk (P1 "hw_counters/np_ecn_marked_roce_packets", "5\n");
  tree_mk (P1 "hw_counters/out_of_sequence", "garbage\n");
  tree_mk (P1 "hw_counters/some_other_counter", "9\n");
  tree_mk (P1 "counters/port_xmit_data", "25\n");
  tree_mk (P1 "counters/port_rcv_data", "4611686018427387904\n"); /* 2^62: times 4 saturates */
  tree_mk (P1 "counters/port_rcv_packets", "3\n");
  tree_mk (P1 "gids/0", "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n");
  tree_mk (P1 "gids/1", "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n");
  tree_mk (P1 "gids/2", "0000:0000:0000:0000:0000:ffff:c612:0a64\n");
  tree_mk (P1 "gids/3", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  tree_mk (P1 "gids/4", ""); /* what an EINVAL read of an empty slot comes to */
  tree_mk (P1 "gids/bogus", "x");
  /* Port 2: what an upstream kernel or the fake host has, no counters.  */
  tree_mk (P2 "gids/0", "0000:0000:0000:0000:0000:0000:0000:0000\n");

  metrics_collect_ports (&m, tree_root, "mlx5_0");
  assert_sample (&m, "roce_np_cnp_sent_total", "hca=\"mlx5_0\",port=\"1\"", "1234");
  assert_sample (&m, "roce_rp_cnp_handled_total", "hca=\"mlx5_0\",port=\"1\"", "77");
  assert_sample (&m, "roce_np_ecn_marked_roce_packets_total", "hca=\"mlx5_0\",port=\"1\"", "5");
  cr_assert_null (metrics_find (&m, "roce_out_of_sequence_total"), "a garbage file is left out");
  cr_assert_eq (comments_with (&m, "mlx5_0 port 1: out_of_sequence left out"), 1);
  cr_assert_null (metrics_find (&m, "roce_rp_cnp_ignored_total"), "absent files are absent");
  cr_assert_eq (comments_with (&m, "rp_cnp_ignored"), 0, "an absent file alone needs no comment");
  assert_sample (&m, "roce_port_transmit_bytes_total", "hca=\"mlx5_0\",port=\"1\"", "100");
  assert_sample (&m, "roce_port_receive_bytes_total", "hca=\"mlx5_0\",port=\"1\"",
                 "18446744073709551615");
  assert_sample (&m, "roce_port_receive_packets_total", "hca=\"mlx5_0\",port=\"1\"", "3");
  assert_sample (&m, "roce_gid_table_entries", "hca=\"mlx5_0\",port=\"1\"", "5");
  assert_sample (&m, "roce_gid_table_entries_used", "hca=\"mlx5_0\",port=\"1\"", "3");

  cr_assert_null (sample (&m, "roce_np_cnp_sent_total", "hca=\"mlx5_0\",port=\"2\""));
  cr_assert_eq (comments_with (&m, "mlx5_0 port 2: no hw_counters"), 1);
  cr_assert_eq (comments_with (&m, "mlx5_0 port 2: no counters"), 1);
  cr_assert_eq (comments_with (&m, "mlx5_0 port 1: no"), 0);
  assert_sample (&m, "roce_gid_table_entries", "hca=\"mlx5_0\",port=\"2\"", "1");
  assert_sample (&m, "roce_gid_table_entries_used", "hca=\"mlx5_0\",port=\"2\"", "0");
  metrics_clear (&m);
}

Test (metrics, a_directory_without_any_known_counter_says_so)
{
  struct metrics m = { 0 };
  tree_mk (P1 "hw_counters/something_new", "1\n");
  tree_mk (P1 "counters/", NULL);
  metrics_collect_ports (&m, tree_root, "mlx5_0");
  cr_assert_eq (comments_with (&m, "mlx5_0 port 1: none of the counters this exports is in"), 2);
  cr_assert_eq (comments_with (&m, "no GID table"), 1);
  cr_assert_null (metrics_find (&m, "roce_gid_table_entries"));
  metrics_clear (&m);
}

Test (metrics, an_hca_without_ports_is_a_comment)
{
  struct metrics m = { 0 };
  metrics_collect_ports (&m, tree_root, "mlx5_9");
  cr_assert_eq (m.n_fam, 0);
  cr_assert_eq (comments_with (&m, "mlx5_9: no ports"), 1);
  metrics_clear (&m);
}

/* ---- ethtool ------------------------------------------------------------------- */

Test (metrics, ethtool_names_by_pattern)
{
  static const struct
  {
    const char *name;
    enum ethtool_kind kind;
    const char *dir;
    int prio;
  } cases[] = {
    { "rx_prio3_pause", ETHTOOL_STAT_PRIO_PAUSE, "rx", 3 },
    { "tx_prio0_pause", ETHTOOL_STAT_PRIO_PAUSE, "tx", 0 },
    { "tx_prio7_pause_duration", ETHTOOL_STAT_PRIO_PAUSE_DURATION, "tx", 7 },
    { "rx_prio3_pause_transition", ETHTOOL_STAT_PRIO_PAUSE_TRANSITION, "rx", 3 },
    { "rx_prio3_bytes", ETHTOOL_STAT_PRIO_BYTES, "rx", 3 },
    { "tx_prio5_packets", ETHTOOL_STAT_PRIO_PACKETS, "tx", 5 },
    { "rx_pause_ctrl_phy", ETHTOOL_STAT_PAUSE, "rx", -1 },
    { "tx_discards_phy", ETHTOOL_STAT_DISCARDS, "tx", -1 },
    { "rx_prio8_pause", ETHTOOL_STAT_NONE, NULL, -1 },
    { "rx_prio33_pause", ETHTOOL_STAT_NONE, NULL, -1 },
    { "rx_prio3_pause_x", ETHTOOL_STAT_NONE, NULL, -1 },
    { "rx_prio3_discards", ETHTOOL_STAT_NONE, NULL, -1 },
    { "xx_prio3_pause", ETHTOOL_STAT_NONE, NULL, -1 },
    { "peer_ifindex", ETHTOOL_STAT_NONE, NULL, -1 },
    { "rx_queue_0_drops", ETHTOOL_STAT_NONE, NULL, -1 },
    { "rx_prio", ETHTOOL_STAT_NONE, NULL, -1 },
    { "", ETHTOOL_STAT_NONE, NULL, -1 },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      struct ethtool_class c;
      bool hit = metrics_ethtool_classify (cases[i].name, &c);
      cr_assert_eq (hit, cases[i].kind != ETHTOOL_STAT_NONE, "%s", cases[i].name);
      cr_assert_eq (c.kind, cases[i].kind, "%s", cases[i].name);
      if (hit)
        {
          cr_assert_str_eq (c.direction, cases[i].dir, "%s", cases[i].name);
          cr_assert_eq (c.prio, cases[i].prio, "%s", cases[i].name);
        }
    }
}

Test (metrics, ethtool_samples_of_an_mlx5_netdev)
{
  char *names[]
      = { "rx_prio3_pause",    "tx_prio3_pause",  "rx_prio3_pause_duration",     "rx_prio0_pause",
          "rx_pause_ctrl_phy", "tx_discards_phy", "rx_vport_rdma_unicast_bytes", NULL };
  uint64_t values[] = { 1500, 20, 2500001, 0, 4, 9, 123 };
  struct ethtool_values st = { .names = names, .values = values, .n = 7 };
  struct metrics m = { 0 };

  metrics_add_ethtool (&m, "mlx5_0", "ens1f0np0", &st);
  assert_sample (&m, "roce_ethtool_statistics", "hca=\"mlx5_0\",netdev=\"ens1f0np0\"", "7");
  assert_sample (&m, "roce_pfc_pause_frames_total",
                 "hca=\"mlx5_0\",netdev=\"ens1f0np0\",direction=\"rx\",priority=\"3\"", "1500");
  assert_sample (&m, "roce_pfc_pause_frames_total",
                 "hca=\"mlx5_0\",netdev=\"ens1f0np0\",direction=\"tx\",priority=\"3\"", "20");
  assert_sample (&m, "roce_pfc_pause_frames_total",
                 "hca=\"mlx5_0\",netdev=\"ens1f0np0\",direction=\"rx\",priority=\"0\"", "0");
  /* Microseconds, as seconds, exactly.  */
  assert_sample (&m, "roce_pfc_pause_duration_seconds_total",
                 "hca=\"mlx5_0\",netdev=\"ens1f0np0\",direction=\"rx\",priority=\"3\"", "2.500001");
  assert_sample (&m, "roce_pause_frames_total",
                 "hca=\"mlx5_0\",netdev=\"ens1f0np0\",direction=\"rx\"", "4");
  assert_sample (&m, "roce_netdev_discards_total",
                 "hca=\"mlx5_0\",netdev=\"ens1f0np0\",direction=\"tx\"", "9");
  cr_assert_eq (metrics_find (&m, "roce_pfc_pause_frames_total")->n, 3);
  cr_assert_eq (comments_with (&m, "no PFC pause counters"), 0);
  metrics_clear (&m);
}

Test (metrics, ethtool_without_pfc_counters_is_a_comment)
{
  char *names[] = { "peer_ifindex", "rx_queue_0_drops", NULL };
  uint64_t values[] = { 5, 0 };
  struct ethtool_values st = { .names = names, .values = values, .n = 2 };
  struct metrics m = { 0 };

  metrics_add_ethtool (&m, "mlx5_0", "veth0", &st);
  assert_sample (&m, "roce_ethtool_statistics", "hca=\"mlx5_0\",netdev=\"veth0\"", "2");
  cr_assert_null (metrics_find (&m, "roce_pfc_pause_frames_total"));
  cr_assert_eq (comments_with (&m, "mlx5_0: veth0: no PFC pause counters (rx_prio<N>_pause) "
                                   "among its 2 ethtool statistics"),
                1);
  metrics_clear (&m);
}

Test (metrics, ethtool_ioctl_negative_paths)
{
  struct ethtool_values st = { 0 };
  {
    cleanup_error roce_error_t err = NULL;
    assert_err_contains (metrics_ethtool_read ("rq-no-such-if0", &st, &err), err,
                         "ethtool ioctl ETHTOOL_GSSET_INFO on rq-no-such-if0");
    cr_assert_eq (err->status, ENODEV);
  }
  {
    cleanup_error roce_error_t err = NULL;
    assert_err_contains (metrics_ethtool_read ("a-name-far-too-long-for-ifnamsiz", &st, &err), err,
                         "not an interface name");
  }
  {
    /* lo has no ethtool statistics: none, not an error.  */
    cleanup_error roce_error_t err = NULL;
    if (metrics_ethtool_read ("lo", &st, &err) == 0)
      {
        cr_assert_eq (st.n, 0);
        cr_assert_not_null (st.names);
        cr_assert_null (st.names[0]);
      }
    else
      cr_assert_eq (err->status, EOPNOTSUPP, "%s", err->msg);
    metrics_ethtool_clear (&st);
  }
}

/* ---- pools and leases ------------------------------------------------------------ */

static const char policy_json[]
    = "{\"hcas\":{"
      "\"mlx5_0\":{\"subnet\":\"198.18.10.0/24\",\"pool\":\"198.18.10.100-198.18.10.199\"},"
      "\"mlx5_1\":{\"subnet\":\"198.18.11.0/24\",\"pool\":\"198.18.11.100-198.18.11.103\"}}}";

/* Two holders: a pod with two containers on both rails (one id with a quote
 * and a backslash), and a stopped one that still holds mlx5_1's address.  */
static const char store_json[]
    = "{\"version\":1,\"holders\":["
      "{\"netns\":{\"boot_id\":\"b\",\"dev\":4,\"ino\":1,\"cookie\":2},\"owner\":\"pod-1\","
      "\"containers\":[\"pod-1\",\"app\\\"x\\\\y\"],\"since\":0,\"leases\":["
      "{\"hca\":\"mlx5_0\",\"address\":\"198.18.10.100\",\"ifname\":\"roce0\"},"
      "{\"hca\":\"mlx5_1\",\"address\":\"198.18.11.100\",\"ifname\":\"roce1\"}]},"
      "{\"netns\":{\"boot_id\":\"b\",\"dev\":4,\"ino\":3,\"cookie\":4},\"owner\":\"gone-2\","
      "\"containers\":[],\"since\":0,\"leases\":["
      "{\"hca\":\"mlx5_1\",\"address\":\"198.18.11.101\",\"ifname\":\"roce0\"}]}]}";

Test (metrics, pools_and_leases)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_lease_store struct lease_store *s = xmalloc0 (sizeof (*s));
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  struct metrics m = { 0 };

  s->dir_fd = s->lock_fd = -1;
  cr_assert_eq (policy_parse (policy_json, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_store_parse (s, store_json, &err), 0, "%s", err ? err->msg : "");
  metrics_add_leases (&m, p, NULL, s);
  assert_sample (&m, "roce_pool_addresses", "hca=\"mlx5_0\"", "100");
  assert_sample (&m, "roce_pool_addresses_held", "hca=\"mlx5_0\"", "1");
  assert_sample (&m, "roce_pool_addresses", "hca=\"mlx5_1\"", "4");
  assert_sample (&m, "roce_pool_addresses_held", "hca=\"mlx5_1\"", "2");
  assert_sample (&m, "roce_lease",
                 "hca=\"mlx5_0\",address=\"198.18.10.100\",ifname=\"roce0\",container=\"pod-1\"",
                 "1");
  assert_sample (
      &m, "roce_lease",
      "hca=\"mlx5_0\",address=\"198.18.10.100\",ifname=\"roce0\",container=\"app\\\"x\\\\y\"", "1");
  assert_sample (&m, "roce_lease",
                 "hca=\"mlx5_1\",address=\"198.18.11.101\",ifname=\"roce0\",container=\"gone-2\"",
                 "0");
  cr_assert_eq (metrics_find (&m, "roce_lease")->n, 5);
  text = metrics_render (&m);
  cr_assert_not_null (strstr (text, "container=\"app\\\"x\\\\y\"} 1\n"), "%s", text);
  metrics_clear (&m);

  /* --hca: that HCA's pool and leases only.  */
  metrics_add_leases (&m, p, "mlx5_1", s);
  cr_assert_null (sample (&m, "roce_pool_addresses", "hca=\"mlx5_0\""));
  cr_assert_eq (metrics_find (&m, "roce_lease")->n, 3);
  metrics_clear (&m);
}

/* IPv6 pools: a /64's size says 2^64 - 1 (its gauge cannot say 2^64), a
 * dual-stack rail's IPv6 pool has family="ipv6" beside its IPv4 one's
 * samples, which stay the HCA's alone; an IPv6 lease is one like any.  */
Test (metrics, ipv6_and_dual_stack_pools)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_lease_store struct lease_store *s = xmalloc0 (sizeof (*s));
  cleanup_error roce_error_t err = NULL;
  struct metrics m = { 0 };
  const char *pol
      = "{\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"2001:2:0:10::/64\",\"pool\":\"2001:2:0:10::/64\"},"
        "\"mlx5_1\":{\"subnet\":\"198.18.11.0/24\",\"pool\":\"198.18.11.100-198.18.11.103\","
        "\"subnet6\":\"2001:2:0:11::/64\",\"pool6\":\"2001:2:0:11::100-2001:2:0:11::1ff\"}}}";
  const char *store
      = "{\"version\":1,\"holders\":["
        "{\"netns\":{\"boot_id\":\"b\",\"dev\":4,\"ino\":1,\"cookie\":2},\"owner\":\"c1\","
        "\"containers\":[\"c1\"],\"since\":0,\"leases\":["
        "{\"hca\":\"mlx5_0\",\"address\":\"2001:2:0:10::1\",\"ifname\":\"roce0\"},"
        "{\"hca\":\"mlx5_1\",\"address\":\"198.18.11.100\",\"ifname\":\"roce1\"},"
        "{\"hca\":\"mlx5_1\",\"address\":\"2001:2:0:11::100\",\"ifname\":\"roce1\"}]}]}";

  s->dir_fd = s->lock_fd = -1;
  cr_assert_eq (policy_parse (pol, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_store_parse (s, store, &err), 0, "%s", err ? err->msg : "");
  metrics_add_leases (&m, p, NULL, s);
  assert_sample (&m, "roce_pool_addresses", "hca=\"mlx5_0\"", "18446744073709551615");
  assert_sample (&m, "roce_pool_addresses_held", "hca=\"mlx5_0\"", "1");
  assert_sample (&m, "roce_pool_addresses", "hca=\"mlx5_1\"", "4");
  assert_sample (&m, "roce_pool_addresses_held", "hca=\"mlx5_1\"", "1");
  assert_sample (&m, "roce_pool_addresses", "hca=\"mlx5_1\",family=\"ipv6\"", "256");
  assert_sample (&m, "roce_pool_addresses_held", "hca=\"mlx5_1\",family=\"ipv6\"", "1");
  assert_sample (&m, "roce_lease",
                 "hca=\"mlx5_1\",address=\"2001:2:0:11::100\",ifname=\"roce1\",container=\"c1\"",
                 "1");
  cr_assert_eq (metrics_find (&m, "roce_pool_addresses")->n, 3);
  metrics_clear (&m);
}

Test (metrics, collect_refuses_an_hca_the_policy_does_not_list)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  struct metrics m = { 0 };
  cr_assert_eq (policy_parse (policy_json, "p.json", &p, &err), 0);
  assert_err_contains (metrics_collect (p, "mlx5_7", &m, &err), err,
                       "--hca: an HCA of the policy vs 'mlx5_7' (fix: pick one of mlx5_0, mlx5_1)");
  cr_assert_eq (m.n_fam, 0);
}

/* ---- the file ------------------------------------------------------------------- */

static size_t
entries (const char *dir)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;
  size_t n = 0;
  while (d && (de = readdir (d)) != NULL)
    if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      n++;
  return n;
}

Test (metrics, write_file_replaces_whole_and_leaves_no_temporary)
{
  cleanup_free char *path = xasprintf ("%s/out/roce.prom", tree_root);
  cleanup_free char *dir = xasprintf ("%s/out", tree_root);
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *got = NULL;
  size_t len = 0;
  struct stat st;

  tree_mk ("out/roce.prom", "old content that is longer than the new one\n");
  cr_assert_eq (file_replace (path, "roce_b 1\n", 9, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (read_file_at (AT_FDCWD, path, 4096, &got, &len, &err), 0);
  cr_assert_str_eq (got, "roce_b 1\n");
  cr_assert_eq (entries (dir), 1, "a temporary file was left behind");
  cr_assert_eq (stat (path, &st), 0);
  cr_assert_eq (st.st_mode & 07777, 0644);
}

/* A temporary left by a killed run with the same pid does not block the
 * next one.  */
Test (metrics, write_file_over_a_stale_temporary_of_its_pid)
{
  cleanup_free char *path = xasprintf ("%s/out/roce.prom", tree_root);
  cleanup_free char *dir = xasprintf ("%s/out", tree_root);
  cleanup_free char *stale = xasprintf ("out/.roce.prom.roce-%d", (int) getpid ());
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *got = NULL;
  size_t len = 0;

  tree_mk (stale, "half a fi");
  cr_assert_eq (file_replace (path, "roce_b 2\n", strlen ("roce_b 2\n"), &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_eq (read_file_at (AT_FDCWD, path, 4096, &got, &len, &err), 0);
  cr_assert_str_eq (got, "roce_b 2\n");
  cr_assert_eq (entries (dir), 1, "the stale temporary is still there");
}

Test (metrics, write_file_into_a_missing_directory_fails_naming_it)
{
  cleanup_free char *path = xasprintf ("%s/nodir/roce.prom", tree_root);
  cleanup_error roce_error_t err = NULL;
  assert_err_contains (file_replace (path, "x 1\n", strlen ("x 1\n"), &err), err,
                       "nodir/.roce.prom.roce-");
  cr_assert_eq (err->status, ENOENT);
}

/* The whole collection on a tree with no netdev to find for mlx5_0 and a
 * netdev that does not exist for mlx5_1: the gate's verdicts say so, the
 * rest is comments; nothing fails.  */
Test (metrics, collect_without_netdevs)
{
  cleanup_free char *in = xasprintf (
      "{\"state_dir\":\"%s/state\",\"sysfs_root\":\"%s\",\"hcas\":{"
      "\"mlx5_0\":{\"subnet\":\"198.18.10.0/24\",\"pool\":\"198.18.10.100-198.18.10.199\"},"
      "\"mlx5_1\":{\"netdev\":\"rq-none0\",\"subnet\":\"198.18.11.0/24\","
      "\"pool\":\"198.18.11.100-198.18.11.103\"}}}",
      tree_root, tree_root);
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  struct metrics m = { 0 };

  tree_mk ("class/infiniband/mlx5_1/ports/1/hw_counters/np_cnp_sent", "3\n");
  cr_assert_eq (policy_parse (in, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (metrics_collect (p, NULL, &m, &err), 0, "%s", err ? err->msg : "");
  assert_sample (&m, "roce_gate_check", "hca=\"mlx5_0\",netdev=\"\",check=\"netdev\"", "0");
  assert_sample (&m, "roce_gate_blocking_findings", "hca=\"mlx5_0\",netdev=\"\"", "1");
  cr_assert_eq (comments_with (&m, "mlx5_0: not probed: netdev of HCA mlx5_0"), 1);
  assert_sample (&m, "roce_gate_check", "hca=\"mlx5_1\",netdev=\"rq-none0\",check=\"mtu\"", "-1");
  assert_sample (&m, "roce_gate_check", "hca=\"mlx5_1\",netdev=\"rq-none0\",check=\"pfc\"", "-1");
  cr_assert_eq (comments_with (&m, "mlx5_1: rq-none0: no ethtool statistics (ethtool ioctl "
                                   "ETHTOOL_GSSET_INFO on rq-none0: No such device)"),
                1);
  assert_sample (&m, "roce_np_cnp_sent_total", "hca=\"mlx5_1\",port=\"1\"", "3");
  assert_sample (&m, "roce_lease_store_readable", "", "1");
  assert_sample (&m, "roce_pool_addresses", "hca=\"mlx5_1\"", "4");
  cr_assert_null (metrics_find (&m, "roce_lease"), "no store: no leases");
  assert_sample (&m, "roce_policy_info",
                 "qos_mode=\"enforce\",pfc_priority=\"3\",dscp=\"26\",ecn=\"require\"", "1");
  text = metrics_render (&m);
  /* One family each, in one block.  */
  cr_assert_eq (
      strstr (strstr (text, "# TYPE roce_gate_check gauge") + 1, "# TYPE roce_gate_check"), NULL);
  metrics_clear (&m);
}
