/* SPDX-License-Identifier: Apache-2.0 */
/* DCB netlink: the request as the kernel expects it, and replies laid out
 * byte for byte as net/dcb/dcbnl.c (dcbnl_ieee_fill) builds them, fed to the
 * parser the probe uses.  Then the real kernel's answers on this machine.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "lib/utils.h"
#include "qos/qos.h"
#include "sys/dcb.h"
#include "sys/netlink.h"
#include "unit.h"

#define SEQ 4242

/* ---- a byte-level message writer, the kernel's way ------------------------ */

struct wbuf
{
  unsigned char b[16384];
  size_t len;
};

static void
pad (struct wbuf *w)
{
  while (w->len % 4)
    w->b[w->len++] = 0;
}

static size_t
msg_start (struct wbuf *w, uint16_t type, uint16_t flags, uint32_t seq)
{
  struct nlmsghdr h = { .nlmsg_type = type, .nlmsg_flags = flags, .nlmsg_seq = seq };
  size_t off = w->len;
  memcpy (w->b + w->len, &h, sizeof (h));
  w->len += sizeof (h);
  return off;
}

static void
msg_end (struct wbuf *w, size_t off)
{
  uint32_t len = (uint32_t) (w->len - off);
  memcpy (w->b + off, &len, sizeof (len));
}

static void
put (struct wbuf *w, const void *p, size_t len)
{
  memcpy (w->b + w->len, p, len);
  w->len += len;
}

/* nla_put(): the header's length excludes the padding.  */
static void
attr (struct wbuf *w, uint16_t type, const void *data, size_t len)
{
  struct nlattr a = { .nla_len = (uint16_t) (NLA_HDRLEN + len), .nla_type = type };
  put (w, &a, sizeof (a));
  put (w, data, len);
  pad (w);
}

static size_t
nest_start (struct wbuf *w, uint16_t type)
{
  struct nlattr a = { .nla_type = type };
  size_t off = w->len;
  put (w, &a, sizeof (a));
  return off;
}

static void
nest_end (struct wbuf *w, size_t off)
{
  uint16_t len = (uint16_t) (w->len - off);
  memcpy (w->b + off, &len, sizeof (len));
}

static void
ack (struct wbuf *w, uint32_t seq, int error)
{
  /* NETLINK_CAP_ACK: the request's header only.  */
  size_t m = msg_start (w, NLMSG_ERROR, NLM_F_CAPPED, seq);
  struct nlmsgerr e = { .error = error,
                        .msg = { .nlmsg_len = 36,
                                 .nlmsg_type = RTM_GETDCB,
                                 .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
                                 .nlmsg_seq = seq } };
  put (w, &e, sizeof (e));
  msg_end (w, m);
}

struct canned
{
  bool pfc;
  uint8_t pfc_en;
  int n_app;
  struct dcb_app app[80];
  bool ets;
  uint8_t prio_tc[8];
  bool dcbx;
  uint8_t dcbx_val;
};

/* mlx5's defaults: prio 3 -> tc 3, PFC as given, the DSCP table that
 * `mlnx_qos --trust dscp` installs (DSCP d -> priority d >> 3).  */
static struct canned
mlx5 (uint8_t pfc_en, bool dscp_table)
{
  struct canned c = { .pfc = true,
                      .pfc_en = pfc_en,
                      .ets = true,
                      .prio_tc = { 1, 0, 2, 3, 4, 5, 6, 7 },
                      .dcbx = true,
                      .dcbx_val = 0x0d };
  if (dscp_table)
    for (int d = 0; d < 64; d++)
      c.app[c.n_app++] = (struct dcb_app){ .selector = IEEE_8021QAZ_APP_SEL_DSCP,
                                           .priority = (uint8_t) (d >> 3),
                                           .protocol = (uint16_t) d };
  return c;
}

/* The reply dcbnl_ieee_get() sends for mlx5 (dcbnl_ieee_fill(): IFNAME,
 * IEEE { ETS, MAXRATE, PFC, DCB_BUFFER, APP_TABLE, REWR_TABLE }, DCBX).  */
static void
reply (struct wbuf *w, const struct canned *c, uint32_t seq)
{
  struct dcbmsg d = { .dcb_family = AF_UNSPEC, .cmd = DCB_CMD_IEEE_GET };
  size_t m = msg_start (w, RTM_GETDCB, NLM_F_REQUEST | NLM_F_ACK, seq);
  size_t ieee, app, rewr;

  put (w, &d, sizeof (d));
  attr (w, DCB_ATTR_IFNAME, "ens1f0np0", 10);
  ieee = nest_start (w, DCB_ATTR_IEEE);
  if (c->ets)
    {
      struct ieee_ets ets = { .ets_cap = 8 };
      memcpy (ets.prio_tc, c->prio_tc, 8);
      attr (w, DCB_ATTR_IEEE_ETS, &ets, sizeof (ets));
    }
  {
    struct ieee_maxrate mr = { 0 };
    attr (w, DCB_ATTR_IEEE_MAXRATE, &mr, sizeof (mr));
  }
  if (c->pfc)
    {
      struct ieee_pfc pfc = { .pfc_cap = 8, .pfc_en = c->pfc_en, .delay = 7 };
      pfc.requests[3] = 12345;
      attr (w, DCB_ATTR_IEEE_PFC, &pfc, sizeof (pfc));
    }
  {
    struct dcbnl_buffer buf = { .total_size = 262144 };
    attr (w, DCB_ATTR_DCB_BUFFER, &buf, sizeof (buf));
  }
  app = nest_start (w, DCB_ATTR_IEEE_APP_TABLE);
  for (int i = 0; i < c->n_app; i++)
    attr (w, c->app[i].selector == 255 ? DCB_ATTR_DCB_APP_ : DCB_ATTR_IEEE_APP, &c->app[i],
          sizeof (c->app[i]));
  nest_end (w, app);
  rewr = nest_start (w, NLA_F_NESTED | DCB_ATTR_DCB_REWR_TABLE_);
  nest_end (w, rewr);
  nest_end (w, ieee);
  if (c->dcbx)
    attr (w, DCB_ATTR_DCBX, &c->dcbx_val, 1);
  msg_end (w, m);
}

static int
feed_all (const struct wbuf *w, struct dcb_reply *r, roce_error_t *err)
{
  dcb_reply_init (r, SEQ);
  return dcb_reply_feed (r, w->b, w->len, err);
}

/* ---- the request ------------------------------------------------------------ */

Test (dcb, request_is_laid_out_for_dcb_doit)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  struct nlmsghdr *h;
  const struct dcbmsg *d;
  struct nlattr *a;

  cr_assert_eq (dcb_build_ieee_get ("ens1f0np0", &m, &err), 0);
  h = nlmsg_hdr (m);
  cr_assert_eq (h->nlmsg_type, RTM_GETDCB);
  cr_assert_eq (h->nlmsg_type, 78);
  cr_assert_eq (h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  /* header 16 + dcbmsg 4 + IFNAME (4 + "ens1f0np0\0" padded to 12) */
  cr_assert_eq (h->nlmsg_len, 36);
  d = nlmsg_data (h);
  cr_assert_eq (d->dcb_family, AF_UNSPEC);
  cr_assert_eq (d->cmd, DCB_CMD_IEEE_GET);
  cr_assert_eq (d->cmd, 21);
  cr_assert_eq (d->dcb_pad, 0);
  a = nlmsg_attrdata (h, sizeof (*d));
  cr_assert_eq (nla_type (a), DCB_ATTR_IFNAME);
  cr_assert_eq (nla_len (a), 10, "the name and its NUL");
  cr_assert_str_eq (nla_get_string (a), "ens1f0np0");
  cr_assert_eq (nlmsg_attrlen (h, sizeof (*d)), 16);
}

Test (dcb, request_refuses_names_that_are_no_names)
{
  cleanup_error roce_error_t err = NULL;
  struct nl_msg *m = NULL;
  assert_err_contains (dcb_build_ieee_get ("", &m, &err), err, "bad interface name");
  roce_error_release (&err);
  assert_err_contains (dcb_build_ieee_get ("a/b", &m, &err), err, "bad interface name");
  roce_error_release (&err);
  assert_err_contains (dcb_build_ieee_get ("a\nb", &m, &err), err, "bad interface name");
  cr_assert_null (m);
}

/* ---- replies --------------------------------------------------------------- */

Test (dcb, pfc_on_priority_3_and_the_default_dscp_table)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x08, true);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;

  reply (&w, &c, SEQ);
  dcb_reply_init (&r, SEQ);
  cr_assert_eq (dcb_reply_feed (&r, w.b, w.len, &err), 0, "%s", err ? err->msg : "");
  cr_assert (r.have_data);
  cr_assert_not (r.done, "the ack is still to come");
  w.len = 0;
  ack (&w, SEQ, 0);
  cr_assert_eq (dcb_reply_feed (&r, w.b, w.len, &err), 0, "%s", err ? err->msg : "");
  cr_assert (r.done);

  cr_assert (r.ieee.has_pfc);
  cr_assert_eq (r.ieee.pfc_en, 0x08);
  cr_assert_eq (r.ieee.pfc_cap, 8);
  cr_assert_eq (r.ieee.pfc_delay, 7);
  cr_assert (r.ieee.has_ets);
  cr_assert_eq (r.ieee.prio_tc[0], 1);
  cr_assert_eq (r.ieee.prio_tc[3], 3);
  cr_assert (r.ieee.has_app_table);
  cr_assert_eq (r.ieee.n_dscp, 64);
  cr_assert_eq (r.ieee.n_app, 64);
  cr_assert_eq (dcb_dscp_prios (&r.ieee, 26), 1u << 3);
  cr_assert_eq (dcb_dscp_prios (&r.ieee, 24), 1u << 3);
  cr_assert_eq (dcb_dscp_prios (&r.ieee, 0), 1u << 0);
  cr_assert_eq (dcb_dscp_prios (&r.ieee, 63), 1u << 7);
  cr_assert (r.ieee.has_dcbx);
  cr_assert_eq (r.ieee.dcbx, 0x0d);
}

Test (dcb, reply_and_ack_in_one_datagram)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x08, true);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  reply (&w, &c, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (feed_all (&w, &r, &err), 0, "%s", err ? err->msg : "");
  cr_assert (r.done);
}

Test (dcb, pfc_off_and_pfc_everywhere)
{
  for (unsigned en = 0; en <= 0xff; en += 0xff)
    {
      cleanup_error roce_error_t err = NULL;
      struct canned c = mlx5 ((uint8_t) en, true);
      struct wbuf w = { .len = 0 };
      struct dcb_reply r;
      cleanup_free char *list = NULL;
      reply (&w, &c, SEQ);
      ack (&w, SEQ, 0);
      cr_assert_eq (feed_all (&w, &r, &err), 0);
      cr_assert_eq (r.ieee.pfc_en, en);
      list = dcb_prio_list (r.ieee.pfc_en);
      cr_assert_str_eq (list, en ? "0,1,2,3,4,5,6,7" : "none");
    }
}

Test (dcb, pfc_on_each_priority_alone)
{
  for (unsigned p = 0; p < 8; p++)
    {
      cleanup_error roce_error_t err = NULL;
      struct canned c = mlx5 ((uint8_t) (1u << p), true);
      struct wbuf w = { .len = 0 };
      struct dcb_reply r;
      cleanup_free char *list = NULL;
      cleanup_free char *want = xasprintf ("%u", p);
      reply (&w, &c, SEQ);
      ack (&w, SEQ, 0);
      cr_assert_eq (feed_all (&w, &r, &err), 0);
      cr_assert_eq (r.ieee.pfc_en, 1u << p);
      list = dcb_prio_list (r.ieee.pfc_en);
      cr_assert_str_eq (list, want);
    }
}

Test (dcb, empty_dscp_table_is_trust_pcp)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x08, false);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  /* PCP entries travel as DCB_ATTR_DCB_APP (kernel >= 6.3); they are not
   * DSCP trust.  */
  c.app[c.n_app++] = (struct dcb_app){ .selector = 255, .priority = 3, .protocol = 3 };
  c.app[c.n_app++] = (struct dcb_app){ .selector = IEEE_8021QAZ_APP_SEL_ETHERTYPE,
                                       .priority = 4,
                                       .protocol = 0x8915 };
  reply (&w, &c, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (feed_all (&w, &r, &err), 0, "%s", err ? err->msg : "");
  cr_assert (r.ieee.has_app_table);
  cr_assert_eq (r.ieee.n_dscp, 0);
  cr_assert_eq (r.ieee.n_app, 2);
  cr_assert_eq (dcb_dscp_prios (&r.ieee, 26), 0);
}

Test (dcb, one_dscp_on_two_priorities)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x08, false);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  c.app[c.n_app++] = (struct dcb_app){ .selector = 5, .priority = 0, .protocol = 26 };
  c.app[c.n_app++] = (struct dcb_app){ .selector = 5, .priority = 3, .protocol = 26 };
  reply (&w, &c, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (feed_all (&w, &r, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (r.ieee.n_dscp, 1);
  cr_assert_eq (dcb_dscp_prios (&r.ieee, 26), (1u << 0) | (1u << 3));
}

Test (dcb, driver_without_pfc_or_ets_or_dcbx)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0, true);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  c.pfc = false;
  c.ets = false;
  c.dcbx = false;
  reply (&w, &c, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (feed_all (&w, &r, &err), 0, "%s", err ? err->msg : "");
  cr_assert_not (r.ieee.has_pfc);
  cr_assert_not (r.ieee.has_ets);
  cr_assert_not (r.ieee.has_dcbx);
  cr_assert_eq (r.ieee.n_dscp, 64);
}

/* ---- malformed replies ------------------------------------------------------ */

Test (dcb, short_pfc_fails_its_policy)
{
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  struct dcbmsg d = { .cmd = DCB_CMD_IEEE_GET };
  size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ), ieee;
  struct ieee_pfc pfc = { .pfc_en = 0x08 };
  put (&w, &d, sizeof (d));
  ieee = nest_start (&w, DCB_ATTR_IEEE);
  attr (&w, DCB_ATTR_IEEE_PFC, &pfc, 8); /* 8 of 136 bytes */
  nest_end (&w, ieee);
  msg_end (&w, m);
  assert_err_contains (feed_all (&w, &r, &err), err, "fails its policy");
  cr_assert_eq (err->status, EBADMSG);
  cr_assert_not (r.have_data);
}

Test (dcb, short_ets_and_short_app_entry)
{
  for (int which = 0; which < 2; which++)
    {
      cleanup_error roce_error_t err = NULL;
      struct wbuf w = { .len = 0 };
      struct dcb_reply r;
      struct dcbmsg d = { .cmd = DCB_CMD_IEEE_GET };
      size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ), ieee, app;
      unsigned char junk[64] = { 0 };
      put (&w, &d, sizeof (d));
      ieee = nest_start (&w, DCB_ATTR_IEEE);
      if (which == 0)
        attr (&w, DCB_ATTR_IEEE_ETS, junk, 20);
      app = nest_start (&w, DCB_ATTR_IEEE_APP_TABLE);
      if (which == 1)
        attr (&w, DCB_ATTR_IEEE_APP, junk, 2);
      nest_end (&w, app);
      nest_end (&w, ieee);
      msg_end (&w, m);
      assert_err_contains (feed_all (&w, &r, &err), err,
                           which == 0 ? "fails its policy" : "APP entry of 2 bytes");
    }
}

Test (dcb, message_longer_than_the_datagram)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x08, true);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  reply (&w, &c, SEQ);
  w.len -= 100; /* the kernel said more than arrived */
  assert_err_contains (feed_all (&w, &r, &err), err, "truncated netlink message");
  cr_assert_eq (err->status, EBADMSG);
}

Test (dcb, attribute_running_past_its_nest)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x08, false);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  size_t app_hdr;
  c.app[c.n_app++] = (struct dcb_app){ .selector = 5, .priority = 3, .protocol = 26 };
  reply (&w, &c, SEQ);
  /* Find the APP entry (type 1, len 8) inside the APP table and make it
   * claim more than the table holds.  */
  app_hdr = 0;
  for (size_t i = 0; i + 8 <= w.len; i += 4)
    {
      struct nlattr a;
      struct dcb_app x;
      memcpy (&a, w.b + i, sizeof (a));
      memcpy (&x, w.b + i + 4, sizeof (x));
      if (a.nla_type == DCB_ATTR_IEEE_APP && a.nla_len == 8 && x.selector == 5 && x.protocol == 26)
        app_hdr = i;
    }
  cr_assert_neq (app_hdr, 0);
  w.b[app_hdr] = 40;
  assert_err_contains (feed_all (&w, &r, &err), err, "truncated");
}

Test (dcb, garbage_after_the_last_attribute)
{
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  struct dcbmsg d = { .cmd = DCB_CMD_IEEE_GET };
  size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ), ieee;
  uint32_t junk = 0x00020001; /* an attribute header claiming 1 byte */
  put (&w, &d, sizeof (d));
  ieee = nest_start (&w, DCB_ATTR_IEEE);
  nest_end (&w, ieee);
  put (&w, &junk, sizeof (junk));
  msg_end (&w, m);
  assert_err_contains (feed_all (&w, &r, &err), err, "truncated attribute");
}

Test (dcb, dscp_and_tc_out_of_range)
{
  {
    cleanup_error roce_error_t err = NULL;
    struct canned c = mlx5 (0x08, false);
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    c.app[c.n_app++] = (struct dcb_app){ .selector = 5, .priority = 3, .protocol = 64 };
    reply (&w, &c, SEQ);
    assert_err_contains (feed_all (&w, &r, &err), err,
                         "DSCP APP entry 64 -> priority 3 out of range");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct canned c = mlx5 (0x08, false);
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    c.prio_tc[3] = 9;
    reply (&w, &c, SEQ);
    assert_err_contains (feed_all (&w, &r, &err), err, "ETS maps priority 3 to traffic class 9");
  }
}

Test (dcb, no_ieee_nest_wrong_command_short_header)
{
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    struct dcbmsg d = { .cmd = DCB_CMD_IEEE_GET };
    size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ);
    put (&w, &d, sizeof (d));
    attr (&w, DCB_ATTR_IFNAME, "eth0", 5);
    msg_end (&w, m);
    assert_err_contains (feed_all (&w, &r, &err), err, "no DCB_ATTR_IEEE");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    struct dcbmsg d = { .cmd = DCB_CMD_GDCBX };
    size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ);
    put (&w, &d, sizeof (d));
    msg_end (&w, m);
    assert_err_contains (feed_all (&w, &r, &err), err, "command 22, expected DCB_CMD_IEEE_GET");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ);
    msg_end (&w, m);
    assert_err_contains (feed_all (&w, &r, &err), err, "has no DCB header");
  }
}

Test (dcb, unterminated_ifname_fails_its_policy)
{
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  struct dcbmsg d = { .cmd = DCB_CMD_IEEE_GET };
  size_t m = msg_start (&w, RTM_GETDCB, 0, SEQ), ieee;
  put (&w, &d, sizeof (d));
  attr (&w, DCB_ATTR_IFNAME, "eth0", 4);
  ieee = nest_start (&w, DCB_ATTR_IEEE);
  nest_end (&w, ieee);
  msg_end (&w, m);
  assert_err_contains (feed_all (&w, &r, &err), err, "fails its policy");
}

/* ---- error replies ------------------------------------------------------------ */

Test (dcb, error_reply_carries_the_errno)
{
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  ack (&w, SEQ, -EOPNOTSUPP);
  assert_err_contains (feed_all (&w, &r, &err), err, "Operation not supported (EOPNOTSUPP)");
  cr_assert_eq (err->status, EOPNOTSUPP);
}

static void
error_with_ext_ack (struct wbuf *w, bool capped, const char *text)
{
  uint16_t flags = NLM_F_ACK_TLVS | (capped ? NLM_F_CAPPED : 0);
  size_t m = msg_start (w, NLMSG_ERROR, flags, SEQ);
  int error = -EINVAL;
  put (w, &error, sizeof (error));
  if (capped)
    {
      struct nlmsghdr req = { .nlmsg_len = 44, .nlmsg_type = RTM_GETDCB, .nlmsg_seq = SEQ };
      put (w, &req, sizeof (req));
    }
  else
    {
      /* The whole request echoed: header, dcbmsg, a 20-byte IFNAME.  */
      struct nlmsghdr req
          = { .nlmsg_len = 16 + 4 + 24, .nlmsg_type = RTM_GETDCB, .nlmsg_seq = SEQ };
      struct dcbmsg d = { .cmd = DCB_CMD_IEEE_GET };
      put (w, &req, sizeof (req));
      put (w, &d, sizeof (d));
      attr (w, DCB_ATTR_IFNAME, "abcdefghijklmnopqrs", 20);
    }
  attr (w, NLMSGERR_ATTR_MSG, text, strlen (text) + 1);
  {
    uint32_t offs = 20;
    attr (w, NLMSGERR_ATTR_OFFS, &offs, sizeof (offs));
  }
  msg_end (w, m);
}

Test (dcb, extended_ack_text_is_surfaced)
{
  for (int capped = 0; capped <= 1; capped++)
    {
      cleanup_error roce_error_t err = NULL;
      struct wbuf w = { .len = 0 };
      struct dcb_reply r;
      error_with_ext_ack (&w, capped, "Attribute failed policy validation");
      assert_err_contains (feed_all (&w, &r, &err), err,
                           "Invalid argument (EINVAL); the kernel says: Attribute failed policy "
                           "validation");
      cr_assert_eq (err->status, EINVAL);
    }
}

Test (dcb, other_sequence_numbers_are_skipped)
{
  cleanup_error roce_error_t err = NULL;
  struct canned c = mlx5 (0x00, true);
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  reply (&w, &c, SEQ - 1); /* a stale answer */
  ack (&w, SEQ - 1, -ENODEV);
  c = mlx5 (0x08, true);
  reply (&w, &c, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (feed_all (&w, &r, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (r.ieee.pfc_en, 0x08);
  cr_assert (r.done);
}

Test (dcb, ack_without_reply_and_two_replies)
{
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    ack (&w, SEQ, 0);
    assert_err_contains (feed_all (&w, &r, &err), err, "an ack but no reply");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct canned c = mlx5 (0x08, true);
    struct wbuf w = { .len = 0 };
    struct dcb_reply r;
    reply (&w, &c, SEQ);
    reply (&w, &c, SEQ);
    assert_err_contains (feed_all (&w, &r, &err), err, "two replies");
  }
}

Test (dcb, texts_for_reports)
{
  cleanup_free char *a = dcb_dcbx_text (0x0d);
  cleanup_free char *b = dcb_dcbx_text (0x0c);
  cleanup_free char *l = dcb_prio_list (0x28);
  cr_assert_str_eq (a, "host,cee,ieee (0x0d, OS-controlled)");
  cr_assert_str_eq (b, "cee,ieee (0x0c, firmware-controlled)");
  cr_assert_str_eq (l, "3,5");
}

/* ---- the real kernel on this machine ----------------------------------------- */

Test (dcb, kernel_lo_has_no_dcb)
{
  cleanup_error roce_error_t err = NULL;
  struct dcb_ieee d;
  assert_err_contains (dcb_query_ieee ("lo", &d, &err), err, "EOPNOTSUPP");
  cr_assert_eq (err->status, EOPNOTSUPP);
}

Test (dcb, kernel_unknown_name_is_enodev)
{
  cleanup_error roce_error_t err = NULL;
  struct dcb_ieee d;
  assert_err_contains (dcb_query_ieee ("rhnonexist9", &d, &err), err, "No such device (ENODEV)");
  cr_assert_eq (err->status, ENODEV);
}

Test (dcb, kernel_policy_error_comes_with_its_extended_ack)
{
  /* A name longer than IFNAMSIZ - 1 fails dcbnl's attribute policy; the
   * kernel explains it in an extended ack, which reaches the message.  */
  cleanup_error roce_error_t err = NULL;
  cleanup_nl_sock struct nl_sock *sk = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  struct dcb_reply r;
  uint32_t seq;
  int ret = 0;

  cr_assert_eq (netlink_open_proto (NETLINK_ROUTE, -1, &sk, &err), 0);
  cr_assert_eq (dcb_build_ieee_get ("abcdefghijklmnopqrstuvwxyz", &m, &err), 0);
  cr_assert_eq (netlink_send (sk, m, &seq, &err), 0);
  dcb_reply_init (&r, seq);
  while (ret == 0 && ! r.done)
    {
      cleanup_free unsigned char *buf = NULL;
      size_t len;
      cr_assert_eq (netlink_recv (sk, &buf, &len, &err), 0);
      ret = dcb_reply_feed (&r, buf, len, &err);
    }
  cr_assert_lt (ret, 0);
  cr_assert (err->status == EINVAL || err->status == ERANGE, "%s", err->msg);
  cr_assert_not_null (strstr (err->msg, "the kernel says: "), "no extended ack in `%s`", err->msg);
}

Test (dcb, kernel_mtu_and_stall_prevention_of_lo)
{
  struct probe_item it = { 0 };
  unsigned v = 1;
  qos_probe_mtu ("lo", &it, &v);
  cr_assert_eq (it.state, PROBE_OK, "%s", it.detail ? it.detail : "");
  cr_assert_eq (v, 65536);
  free (it.detail);
  free (it.source);
  memset (&it, 0, sizeof (it));
  qos_probe_mtu ("rhnonexist9", &it, &v);
  cr_assert_eq (it.state, PROBE_ERROR);
  cr_assert_eq (it.errnum, ENODEV);
  free (it.detail);
  free (it.source);
  memset (&it, 0, sizeof (it));
  qos_probe_stall ("lo", &it, &v);
  cr_assert_eq (it.state, PROBE_UNSUPPORTED);
  cr_assert_eq (it.errnum, EOPNOTSUPP);
  free (it.detail);
  free (it.source);
}

/* ---- set messages: RTM_SETDCB as iproute2's dcb builds them ------------------- */

/* A request as libnl leaves it before sending (seq and port 0).  */
static void
request_head (struct wbuf *w, uint8_t cmd, size_t *m, size_t *ieee)
{
  struct dcbmsg d = { .dcb_family = AF_UNSPEC, .cmd = cmd };
  *m = msg_start (w, RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, 0);
  put (w, &d, sizeof (d));
  attr (w, DCB_ATTR_IFNAME, "ens1f0np0", 10);
  *ieee = nest_start (w, NLA_F_NESTED | DCB_ATTR_IEEE);
}

static void
assert_bytes (struct nl_msg *m, const struct wbuf *want)
{
  struct nlmsghdr *h = nlmsg_hdr (m);
  cr_assert_eq (h->nlmsg_len, want->len, "length %u, expected %zu", h->nlmsg_len, want->len);
  for (size_t i = 0; i < want->len; i++)
    cr_assert_eq (((const unsigned char *) h)[i], want->b[i], "byte %zu: 0x%02x, expected 0x%02x",
                  i, ((const unsigned char *) h)[i], want->b[i]);
}

static struct dcb_ieee
parsed (const struct canned *c)
{
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_reply r;
  reply (&w, c, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (feed_all (&w, &r, &err), 0, "%s", err ? err->msg : "");
  return r.ieee;
}

Test (dcb_set, pfc_set_is_read_modify_write_byte_for_byte)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  struct canned c = mlx5 (0x01, true);
  struct dcb_ieee now = parsed (&c);
  struct wbuf w = { .len = 0 };
  size_t msg, ieee;
  /* What the driver reported (cap 8, delay 7, a request counter), only the
   * enable bits changed: priority 0 kept, priority 3 on.  */
  struct ieee_pfc pfc = { .pfc_cap = 8, .pfc_en = 0x09, .delay = 7 };
  pfc.requests[3] = 12345;

  cr_assert_eq (dcb_build_pfc_set ("ens1f0np0", &now, 0x09, &m, &err), 0, "%s",
                err ? err->msg : "");
  request_head (&w, DCB_CMD_IEEE_SET, &msg, &ieee);
  attr (&w, DCB_ATTR_IEEE_PFC, &pfc, sizeof (pfc));
  nest_end (&w, ieee);
  msg_end (&w, msg);
  assert_bytes (m, &w);
  /* The numbers themselves, as include/uapi/linux/dcbnl.h has them.  */
  cr_assert_eq (nlmsg_hdr (m)->nlmsg_type, 79, "RTM_SETDCB");
  cr_assert_eq (((const struct dcbmsg *) nlmsg_data (nlmsg_hdr (m)))->cmd, 20, "DCB_CMD_IEEE_SET");
  cr_assert_eq (w.len, 16 + 4 + 16 + 4 + 4 + 136);
}

Test (dcb_set, pfc_set_needs_a_pfc_state_and_a_name)
{
  cleanup_error roce_error_t err = NULL;
  struct nl_msg *m = NULL;
  struct dcb_ieee none = { 0 };
  struct canned c = mlx5 (0x00, false);
  struct dcb_ieee now = parsed (&c);
  assert_err_contains (dcb_build_pfc_set ("ens1f0np0", &none, 0x08, &m, &err), err,
                       "no PFC state to modify");
  roce_error_release (&err);
  assert_err_contains (dcb_build_pfc_set ("a/b", &now, 0x08, &m, &err), err, "bad interface name");
  roce_error_release (&err);
  assert_err_contains (dcb_build_pfc_set ("abcdefghijklmnop", &now, 0x08, &m, &err), err,
                       "bad interface name");
  cr_assert_null (m);
}

Test (dcb_set, app_add_and_delete_byte_for_byte)
{
  static const struct dcb_app_entry add[] = { { 5, 3, 26 } };
  static const struct dcb_app_entry del[] = { { 5, 4, 26 }, { 5, 0, 26 } };
  for (int k = 0; k < 2; k++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_nlmsg struct nl_msg *m = NULL;
      uint8_t cmd = k == 0 ? DCB_CMD_IEEE_SET : DCB_CMD_IEEE_DEL;
      const struct dcb_app_entry *v = k == 0 ? add : del;
      size_t n = k == 0 ? 1 : 2;
      struct wbuf w = { .len = 0 };
      size_t msg, ieee, table;

      cr_assert_eq (dcb_build_app ("ens1f0np0", cmd, v, n, &m, &err), 0, "%s", err ? err->msg : "");
      request_head (&w, cmd, &msg, &ieee);
      table = nest_start (&w, NLA_F_NESTED | DCB_ATTR_IEEE_APP_TABLE);
      for (size_t i = 0; i < n; i++)
        {
          /* struct dcb_app { u8 selector; u8 priority; u16 protocol; }  */
          unsigned char e[4] = { v[i].selector, v[i].priority, 0, 0 };
          memcpy (e + 2, &v[i].protocol, 2);
          attr (&w, DCB_ATTR_IEEE_APP, e, 4);
        }
      nest_end (&w, table);
      nest_end (&w, ieee);
      msg_end (&w, msg);
      assert_bytes (m, &w);
      cr_assert_eq (((const struct dcbmsg *) nlmsg_data (nlmsg_hdr (m)))->cmd, k == 0 ? 20 : 27);
    }
}

Test (dcb_set, app_requests_refuse_what_is_no_dscp_entry)
{
  static const struct dcb_app_entry bad_sel[] = { { 1, 3, 0x8906 } };
  static const struct dcb_app_entry bad_dscp[] = { { 5, 3, 64 } };
  static const struct dcb_app_entry bad_prio[] = { { 5, 8, 26 } };
  static const struct dcb_app_entry ok[] = { { 5, 3, 26 } };
  cleanup_error roce_error_t err = NULL;
  struct nl_msg *m = NULL;
  assert_err_contains (dcb_build_app ("eth0x", DCB_CMD_IEEE_SET, bad_sel, 1, &m, &err), err,
                       "no DSCP entry");
  roce_error_release (&err);
  assert_err_contains (dcb_build_app ("eth0x", DCB_CMD_IEEE_SET, bad_dscp, 1, &m, &err), err,
                       "no DSCP entry");
  roce_error_release (&err);
  assert_err_contains (dcb_build_app ("eth0x", DCB_CMD_IEEE_DEL, bad_prio, 1, &m, &err), err,
                       "no DSCP entry");
  roce_error_release (&err);
  assert_err_contains (dcb_build_app ("eth0x", DCB_CMD_IEEE_SET, ok, 0, &m, &err), err,
                       "0 entries");
  roce_error_release (&err);
  assert_err_contains (dcb_build_app ("eth0x", DCB_CMD_IEEE_GET, ok, 1, &m, &err), err,
                       "neither IEEE_SET nor IEEE_DEL");
  cr_assert_null (m);
}

static void
assert_diff (const struct dcb_app_diff *d, const char *want)
{
  char got[128] = "";
  size_t off = 0;
  for (size_t i = 0; i < d->n_add; i++)
    off += (size_t) snprintf (got + off, sizeof (got) - off, "+%u:%u ", d->add[i].protocol,
                              d->add[i].priority);
  for (size_t i = 0; i < d->n_del; i++)
    off += (size_t) snprintf (got + off, sizeof (got) - off, "-%u:%u ", d->del[i].protocol,
                              d->del[i].priority);
  cr_assert_str_eq (got, want);
  for (size_t i = 0; i < d->n_add; i++)
    cr_assert_eq (d->add[i].selector, IEEE_8021QAZ_APP_SEL_DSCP);
  for (size_t i = 0; i < d->n_del; i++)
    cr_assert_eq (d->del[i].selector, IEEE_8021QAZ_APP_SEL_DSCP);
}

Test (dcb_set, app_table_diff)
{
  struct dcb_app_diff d;
  struct canned c;
  struct dcb_ieee now;

  /* mlnx_qos --trust dscp's table already maps 26 -> 3: nothing to do.  */
  c = mlx5 (0x08, true);
  now = parsed (&c);
  dcb_app_diff (&now, 26, 3, &d);
  assert_diff (&d, "");
  /* ...but for priority 5: add 26:5, then delete 26:3.  */
  dcb_app_diff (&now, 26, 5, &d);
  assert_diff (&d, "+26:5 -26:3 ");
  /* trust pcp (no DSCP entry): one entry added, nothing deleted.  */
  c = mlx5 (0x08, false);
  now = parsed (&c);
  dcb_app_diff (&now, 26, 3, &d);
  assert_diff (&d, "+26:3 ");
  /* 26 on 3 and on 5 and 0: 26:3 stays, the others go; other DSCPs and
   * other selectors are not touched.  */
  c = mlx5 (0x08, false);
  c.app[c.n_app++] = (struct dcb_app){ IEEE_8021QAZ_APP_SEL_DSCP, 5, 26 };
  c.app[c.n_app++] = (struct dcb_app){ IEEE_8021QAZ_APP_SEL_DSCP, 3, 26 };
  c.app[c.n_app++] = (struct dcb_app){ IEEE_8021QAZ_APP_SEL_DSCP, 0, 26 };
  c.app[c.n_app++] = (struct dcb_app){ IEEE_8021QAZ_APP_SEL_DSCP, 1, 27 };
  c.app[c.n_app++] = (struct dcb_app){ IEEE_8021QAZ_APP_SEL_ETHERTYPE, 4, 26 };
  now = parsed (&c);
  dcb_app_diff (&now, 26, 3, &d);
  assert_diff (&d, "-26:0 -26:5 ");
  /* Out of range asks for nothing.  */
  dcb_app_diff (&now, 64, 3, &d);
  assert_diff (&d, "");
}

/* dcbnl_ieee_set()'s answer: RTM_SETDCB { dcbmsg, DCB_ATTR_IEEE u8 }.  */
static void
set_answer (struct wbuf *w, uint8_t cmd, const void *status, size_t len, uint32_t seq)
{
  struct dcbmsg d = { .dcb_family = AF_UNSPEC, .cmd = cmd };
  size_t m = msg_start (w, RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, seq);
  put (w, &d, sizeof (d));
  if (status)
    attr (w, DCB_ATTR_IEEE, status, len);
  msg_end (w, m);
}

static int
set_feed (const struct wbuf *w, uint8_t cmd, struct dcb_set_reply *r, roce_error_t *err)
{
  dcb_set_reply_init (r, SEQ, cmd);
  return dcb_set_reply_feed (r, w->b, w->len, err);
}

Test (dcb_set, status_zero_then_ack_is_done)
{
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_set_reply r;
  uint8_t ok = 0;
  set_answer (&w, DCB_CMD_IEEE_SET, &ok, 1, SEQ);
  cr_assert_eq (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), 0, "%s", err ? err->msg : "");
  cr_assert (r.have_status);
  cr_assert_not (r.done);
  ack (&w, SEQ, 0);
  dcb_set_reply_init (&r, SEQ, DCB_CMD_IEEE_DEL);
  w.len = 0;
  set_answer (&w, DCB_CMD_IEEE_DEL, &ok, 1, SEQ - 1); /* someone else's */
  set_answer (&w, DCB_CMD_IEEE_DEL, &ok, 1, SEQ);
  ack (&w, SEQ, 0);
  cr_assert_eq (dcb_set_reply_feed (&r, w.b, w.len, &err), 0, "%s", err ? err->msg : "");
  cr_assert (r.done);
}

Test (dcb_set, driver_status_is_its_negative_errno)
{
  /* dcb_ieee_setapp() on an entry already there: -EEXIST, 0xef in a byte.  */
  cleanup_error roce_error_t err = NULL;
  struct wbuf w = { .len = 0 };
  struct dcb_set_reply r;
  uint8_t st = (uint8_t) -EEXIST;
  cr_assert_eq (st, 0xef);
  set_answer (&w, DCB_CMD_IEEE_SET, &st, 1, SEQ);
  ack (&w, SEQ, 0);
  assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err,
                       "the driver refused DCB_CMD_IEEE_SET: File exists (EEXIST)");
  cr_assert_eq (err->status, EEXIST);
  roce_error_release (&err);
  w.len = 0;
  st = (uint8_t) -ENOENT; /* dcb_ieee_delapp() of an entry not there */
  set_answer (&w, DCB_CMD_IEEE_DEL, &st, 1, SEQ);
  assert_err_contains (set_feed (&w, DCB_CMD_IEEE_DEL, &r, &err), err,
                       "the driver refused DCB_CMD_IEEE_DEL: No such file or directory (ENOENT)");
  cr_assert_eq (err->status, ENOENT);
}

Test (dcb_set, malformed_answers)
{
  uint8_t ok = 0;
  uint16_t two = 0;
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_set_reply r;
    set_answer (&w, DCB_CMD_IEEE_SET, NULL, 0, SEQ);
    assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err,
                         "no one-byte DCB_ATTR_IEEE status");
    cr_assert_eq (err->status, EBADMSG);
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_set_reply r;
    set_answer (&w, DCB_CMD_IEEE_SET, &two, 2, SEQ);
    assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err, "malformed DCB reply");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_set_reply r;
    set_answer (&w, DCB_CMD_IEEE_DEL, &ok, 1, SEQ);
    assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err,
                         "command 27, expected DCB_CMD_IEEE_SET");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_set_reply r;
    ack (&w, SEQ, 0);
    assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err,
                         "an ack but no DCB_CMD_IEEE_SET answer");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_set_reply r;
    set_answer (&w, DCB_CMD_IEEE_SET, &ok, 1, SEQ);
    set_answer (&w, DCB_CMD_IEEE_SET, &ok, 1, SEQ);
    assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err, "two answers");
  }
  {
    cleanup_error roce_error_t err = NULL;
    struct wbuf w = { .len = 0 };
    struct dcb_set_reply r;
    ack (&w, SEQ, -EPERM); /* dcb_doit() without CAP_NET_ADMIN */
    assert_err_contains (set_feed (&w, DCB_CMD_IEEE_SET, &r, &err), err,
                         "Operation not permitted (EPERM)");
    cr_assert_eq (err->status, EPERM);
  }
}

Test (dcb_set, kernel_refuses_a_set_on_lo)
{
  /* A real RTM_SETDCB: lo has no dcbnl_ops (EOPNOTSUPP); without
   * CAP_NET_ADMIN dcb_doit() refuses first (EPERM).  Nothing changes.  */
  cleanup_error roce_error_t err = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  static const struct dcb_app_entry e[] = { { 5, 3, 26 } };
  cr_assert_eq (dcb_build_app ("lo", DCB_CMD_IEEE_SET, e, 1, &m, &err), 0);
  cr_assert_lt (dcb_set_send ("lo", m, &err), 0);
  cr_assert (err->status == EOPNOTSUPP || err->status == EPERM, "%s", err->msg);
  cr_assert_not_null (strstr (err->msg, "DCB set on lo"), "%s", err->msg);
}
