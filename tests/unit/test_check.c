/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook check` pieces: the RoCE v2 GID reader on a sysfs tree, the RDMA
 * netlink SYS_GET reply parser on canned messages, the netns mode fallback,
 * and the subcommand's exit codes.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "lib/utils.h"
#include "report/check.h"
#include "unit.h"

static void
gid (unsigned port, unsigned idx, const char *g, const char *type, const char *ndev)
{
  cleanup_free char *a = xasprintf ("class/infiniband/mlx5_0/ports/%u/gids/%u", port, idx);
  cleanup_free char *b
      = xasprintf ("class/infiniband/mlx5_0/ports/%u/gid_attrs/types/%u", port, idx);
  cleanup_free char *c
      = xasprintf ("class/infiniband/mlx5_0/ports/%u/gid_attrs/ndevs/%u", port, idx);
  tree_mk (a, g);
  if (type)
    tree_mk (b, type);
  if (ndev)
    tree_mk (c, ndev);
}

TestSuite (check, .init = tree_setup, .fini = tree_teardown);

Test (check, roce_v2_gids_skip_empty_v1_and_zero)
{
  cleanup_error roce_error_t err = NULL;
  struct gid_entry *v = NULL;
  size_t n = 0;
  gid (1, 0, "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n", "IB/RoCE v1\n", "ens1f0np0\n");
  gid (1, 1, "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n", "RoCE v2\n", "ens1f0np0\n");
  gid (1, 10, "0000:0000:0000:0000:0000:ffff:c612:0a05\n", "RoCE v2\n", "roce0\n");
  gid (1, 3, "0000:0000:0000:0000:0000:ffff:c612:0a05\n", "IB/RoCE v1\n", "roce0\n");
  gid (1, 4, "0000:0000:0000:0000:0000:0000:0000:0000\n", "RoCE v2\n", "x\n"); /* zero GID */
  gid (1, 5, "0000:0000:0000:0000:0000:ffff:c612:0a06\n", NULL, NULL); /* types/5 reads EINVAL */
  gid (1, 6, "0000:0000:0000:0000:0000:ffff:c612:0a07\n", "RoCE v2\n", NULL);
  gid (2, 1, "0000:0000:0000:0000:0000:ffff:c612:0b05\n", "RoCE v2\n", "ens1f1np1\n");
  tree_mk ("class/infiniband/mlx5_0/ports/1/gids/bogus", "x");
  cr_assert_eq (gid_list_roce_v2 (tree_root, "mlx5_0", &v, &n, &err), 0);
  cr_assert_eq (n, 4);
  cr_assert_eq (v[0].port, 1);
  cr_assert_eq (v[0].index, 1);
  cr_assert_eq (v[1].index, 6);
  cr_assert_str_eq (v[1].ndev, "", "no ndev: empty");
  cr_assert_eq (v[2].index, 10, "numeric order, not text order");
  cr_assert_str_eq (v[2].gid, "0000:0000:0000:0000:0000:ffff:c612:0a05");
  cr_assert_str_eq (v[2].type, "RoCE v2");
  cr_assert_str_eq (v[2].ndev, "roce0");
  cr_assert_eq (v[3].port, 2);
  gid_entries_free (v, n);
}

Test (check, gids_of_an_hca_without_ports)
{
  cleanup_error roce_error_t err = NULL;
  struct gid_entry *v = NULL;
  size_t n = 9;
  assert_err_contains (gid_list_roce_v2 (tree_root, "mlx5_9", &v, &n, &err), err, "No such file");
  cr_assert_eq (n, 0);
  roce_error_release (&err);
  assert_err_contains (gid_list_roce_v2 (tree_root, "../x", &v, &n, &err), err, "bad HCA name");
}

/* ---- RDMA netlink SYS_GET ------------------------------------------------------ */

struct wbuf
{
  unsigned char b[512];
  size_t len;
};

static void
put (struct wbuf *w, const void *p, size_t len)
{
  memcpy (w->b + w->len, p, len);
  w->len += len;
  while (w->len % 4)
    w->b[w->len++] = 0;
}

static void
sys_reply (struct wbuf *w, uint32_t seq, int mode)
{
  struct nlmsghdr h = { .nlmsg_type = RDMA_NL_GET_TYPE (RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET),
                        .nlmsg_seq = seq };
  size_t off = w->len;
  uint32_t len;
  put (w, &h, sizeof (h));
  if (mode >= 0)
    {
      struct nlattr a = { .nla_len = 5, .nla_type = RDMA_NLDEV_SYS_ATTR_NETNS_MODE };
      uint8_t v = (uint8_t) mode;
      put (w, &a, sizeof (a));
      put (w, &v, 1); /* padded to 4 */
    }
  len = (uint32_t) (w->len - off);
  memcpy (w->b + off, &len, sizeof (len));
}

static void
nl_ack (struct wbuf *w, uint32_t seq, int error)
{
  struct nlmsghdr h = { .nlmsg_len = NLMSG_HDRLEN + sizeof (struct nlmsgerr),
                        .nlmsg_type = NLMSG_ERROR,
                        .nlmsg_seq = seq };
  struct nlmsgerr e = { .error = error };
  put (w, &h, sizeof (h));
  put (w, &e, sizeof (e));
}

Test (check, rdma_sys_get_reply_shared_and_exclusive)
{
  for (int mode = 0; mode <= 1; mode++)
    {
      cleanup_error roce_error_t err = NULL;
      struct wbuf w = { .len = 0 };
      bool have = false;
      uint8_t m = 7;
      sys_reply (&w, 9, mode);
      cr_assert_eq (rdma_sys_feed (w.b, w.len, 9, &have, &m, &err), 0, "the ack is missing");
      cr_assert (have);
      cr_assert_eq (m, mode);
      w.len = 0;
      nl_ack (&w, 9, 0);
      cr_assert_eq (rdma_sys_feed (w.b, w.len, 9, &have, &m, &err), 1);
    }
}

Test (check, rdma_sys_get_errors)
{
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    bool have = false;
    uint8_t m;
    nl_ack (&w, 9, -EOPNOTSUPP);
    assert_err_contains (rdma_sys_feed (w.b, w.len, 9, &have, &m, &err), err, "EOPNOTSUPP");
    cr_assert_eq (err->status, EOPNOTSUPP);
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    bool have = false;
    uint8_t m;
    sys_reply (&w, 9, -1);
    assert_err_contains (rdma_sys_feed (w.b, w.len, 9, &have, &m, &err), err,
                         "no netns mode in the reply");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    bool have = false;
    uint8_t m;
    sys_reply (&w, 9, 1);
    w.len -= 4;
    assert_err_contains (rdma_sys_feed (w.b, w.len, 9, &have, &m, &err), err, "truncated");
  }
}

static bool
kernel_has_rdma_netlink (void)
{
  int fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
  if (fd < 0)
    return false;
  close (fd);
  return true;
}

Test (check, netns_mode_falls_back_to_ib_core_parameter)
{
  struct rdma_netns r;
  if (kernel_has_rdma_netlink ())
    cr_skip_test ("this kernel answers RDMA netlink: the sysfs fallback is not used");
  rdma_netns_probe (tree_root, &r);
  cr_assert_eq (r.mode, RDMA_NETNS_UNKNOWN);
  cr_assert_not_null (strstr (r.detail, "RDMA netlink: the kernel has none (EPROTONOSUPPORT)"),
                      "%s", r.detail);
  cr_assert_not_null (strstr (r.detail, "module/ib_core/parameters/netns_mode"), "%s", r.detail);
  rdma_netns_clear (&r);
  tree_mk ("module/ib_core/parameters/netns_mode", "Y\n");
  rdma_netns_probe (tree_root, &r);
  cr_assert_eq (r.mode, RDMA_NETNS_SHARED);
  cr_assert_not_null (strstr (r.source, "ib_core/parameters/netns_mode"));
  rdma_netns_clear (&r);
  tree_mk ("module/ib_core/parameters/netns_mode", "N\n");
  rdma_netns_probe (tree_root, &r);
  cr_assert_eq (r.mode, RDMA_NETNS_EXCLUSIVE);
  rdma_netns_clear (&r);
  tree_mk ("module/ib_core/parameters/netns_mode", "maybe\n");
  rdma_netns_probe (tree_root, &r);
  cr_assert_eq (r.mode, RDMA_NETNS_UNKNOWN);
  rdma_netns_clear (&r);
}

/* ---- the report ------------------------------------------------------------------ */

/* Builds the report for policy_json (or fails) and renders it: the status
 * it implies, and the table or JSON in *out.  */
static int
run_report (const char *policy_json, const char *only, bool json, char **out, roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/policy.json", tree_root);
  cleanup_policy struct roce_policy *p = NULL;
  struct check_report r = { 0 };
  size_t olen = 0;
  FILE *o;
  int code;

  tree_mk ("policy.json", policy_json);
  if (policy_load (path, &p, err) < 0 || check_report_build (p, only, &r, err) < 0)
    return -1;
  code = check_report_status (&r);
  o = open_memstream (out, &olen);
  if (json)
    cr_assert_eq (check_render_json (o, &r, code, err), 0);
  else
    check_render_text (o, &r, false);
  fclose (o);
  check_report_clear (&r);
  return code;
}

Test (check, status_0_when_nothing_blocks)
{
  cleanup_free char *out = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *pol = xasprintf ("{\"sysfs_root\":\"%s\",\"hcas\":{}}", tree_root);
  cr_assert_eq (run_report (pol, NULL, false, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert_not_null (strstr (out, "result: OK: "), "%s", out);
}

Test (check, status_1_when_a_netdev_has_no_dcb)
{
  cleanup_free char *out = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *pol = xasprintf (
      "{\"sysfs_root\":\"%s\",\"qos\":{\"min_mtu\":1500},\"hcas\":{\"mlx5_0\":{\"netdev\":\"lo\","
      "\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
      tree_root);
  cr_assert_eq (run_report (pol, NULL, true, &out, &err), 1, "%s", err ? err->msg : "");
  cr_assert_not_null (strstr (out, "\"exit\": 1"), "%s", out);
  cr_assert_not_null (strstr (out, "\"state\": \"unsupported\""), "%s", out);
}

Test (check, an_hca_the_policy_lacks_is_an_error_naming_what_it_lists)
{
  cleanup_free char *out = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *pol
      = xasprintf ("{\"sysfs_root\":\"%s\",\"hcas\":{\"mlx5_0\":{\"netdev\":\"lo\","
                   "\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                   tree_root);
  assert_err_contains (run_report (pol, "mlx5_9", false, &out, &err), err,
                       "--hca 'mlx5_9': not an HCA of");
  cr_assert_not_null (strstr (err->msg, "(it lists mlx5_0)"), "%s", err->msg);
}
