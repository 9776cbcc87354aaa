/* SPDX-License-Identifier: Apache-2.0 */
/* DCB netlink: a netdev's IEEE 802.1Qaz state (PFC, ETS, the APP table's DSCP
 * entries) read, and the set messages `qos apply` sends, built.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "lib/utils.h"
#include "sys/dcb.h"
#include "sys/netlink.h"

#define IEEE_MAX_KNOWN DCB_ATTR_DCB_REWR_TABLE_

_Static_assert(sizeof (struct ieee_pfc) == DCB_IEEE_PFC_LEN, "struct ieee_pfc is 136 bytes");
_Static_assert(sizeof (struct dcb_app) == 4, "struct dcb_app is 4 bytes");

/* What the kernel's dcbnl_ieee_fill() may put in the reply.  Lengths are
 * minimums: a later kernel may grow a struct, never shrink it.  */
static const struct nla_policy dcb_policy[DCB_ATTR_MAX + 1] = {
  [DCB_ATTR_IFNAME] = { .type = NLA_STRING, .maxlen = IFNAMSIZ },
  [DCB_ATTR_IEEE] = { .type = NLA_NESTED },
  [DCB_ATTR_DCBX] = { .type = NLA_U8 },
};

static const struct nla_policy ieee_policy[IEEE_MAX_KNOWN + 1] = {
  [DCB_ATTR_IEEE_ETS] = { .minlen = sizeof (struct ieee_ets) },
  [DCB_ATTR_IEEE_PFC] = { .minlen = sizeof (struct ieee_pfc) },
  [DCB_ATTR_IEEE_APP_TABLE] = { .type = NLA_NESTED },
  [DCB_ATTR_IEEE_PEER_APP] = { .type = NLA_NESTED },
  [DCB_ATTR_DCB_APP_TRUST_TABLE_] = { .type = NLA_NESTED },
  [DCB_ATTR_DCB_REWR_TABLE_] = { .type = NLA_NESTED },
};

static int bad (roce_error_t *err, const char *fmt, ...) ROCE_PRINTF (2, 3);

static int
bad (roce_error_t *err, const char *fmt, ...)
{
  va_list ap;
  cleanup_free char *msg = NULL;
  va_start (ap, fmt);
  msg = xvasprintf (fmt, ap);
  va_end (ap);
  return roce_error_make (err, EBADMSG, "malformed DCB reply: %s", msg);
}

/* libnl's nla_parse() stops quietly at the first attribute that does not
 * fit; a reply must be attributes up to its last byte.  */
static bool
attrs_whole (struct nlattr *head, int len)
{
  struct nlattr *nla;
  int rem;
  nla_for_each_attr (nla, head, len, rem);
  return rem <= 0;
}

static bool
ifname_ok (const char *ifname, size_t max)
{
  size_t len = strlen (ifname);
  return len > 0 && len <= max && str_is_printable (ifname) && strchr (ifname, '/') == NULL;
}

int
dcb_build_ieee_get (const char *ifname, struct nl_msg **out, roce_error_t *err)
{
  struct dcbmsg d = { .dcb_family = AF_UNSPEC, .cmd = DCB_CMD_IEEE_GET };
  cleanup_nlmsg struct nl_msg *m = NULL;

  /* The kernel enforces IFNAMSIZ itself (and says so in an extended ack);
   * callers that probe a real netdev check it first.  */
  if (! ifname_ok (ifname, 255))
    return roce_error_make (err, EINVAL, "DCB request: bad interface name '%s'", ifname);
  m = nlmsg_alloc_simple (RTM_GETDCB, NLM_F_REQUEST | NLM_F_ACK);
  if (m == NULL)
    return roce_error_make (err, ENOMEM, "nlmsg_alloc");
  if (nlmsg_append (m, &d, sizeof (d), NLMSG_ALIGNTO) < 0
      || nla_put_string (m, DCB_ATTR_IFNAME, ifname) < 0)
    return roce_error_make (err, EMSGSIZE, "DCB request: message too small");
  *out = steal_pointer (&m);
  return 0;
}

static int
parse_app_table (struct nlattr *table, struct dcb_ieee *out, roce_error_t *err)
{
  struct nlattr *a;
  int rem;

  out->has_app_table = true;
  if (! attrs_whole (nla_data (table), nla_len (table)))
    return bad (err, "APP table: truncated entry");
  nla_for_each_nested (a, table, rem)
  {
    struct dcb_app app;
    int type = nla_type (a);
    if (type != DCB_ATTR_IEEE_APP && type != DCB_ATTR_DCB_APP_)
      continue; /* a later kernel's addition */
    if (nla_len (a) < (int) sizeof (app))
      return bad (err, "APP entry of %d bytes, expected %zu", nla_len (a), sizeof (app));
    memcpy (&app, nla_data (a), sizeof (app));
    out->n_app++;
    if (type != DCB_ATTR_IEEE_APP || app.selector != IEEE_8021QAZ_APP_SEL_DSCP)
      continue;
    if (app.protocol >= DCB_NDSCP || app.priority >= DCB_NPRIO)
      return bad (err, "DSCP APP entry %u -> priority %u out of range", app.protocol, app.priority);
    if (dcb_dscp_prios (out, app.protocol) == 0)
      out->n_dscp++;
    out->dscp_prio[app.protocol] |= (uint8_t) (1u << app.priority);
  }
  return 0;
}

int
dcb_parse_ieee (const struct nlmsghdr *nlh_c, struct dcb_ieee *out, roce_error_t *err)
{
  struct nlmsghdr *nlh = (struct nlmsghdr *) nlh_c;
  struct nlattr *tb[DCB_ATTR_MAX + 1];
  struct nlattr *ieee[IEEE_MAX_KNOWN + 1];
  const struct dcbmsg *d;
  int ret;

  memset (out, 0, sizeof (*out));
  if (nlh->nlmsg_type != RTM_GETDCB)
    return bad (err, "message type %u, expected RTM_GETDCB", nlh->nlmsg_type);
  if (! nlmsg_valid_hdr (nlh, sizeof (struct dcbmsg)))
    return bad (err, "message of %u bytes has no DCB header", nlh->nlmsg_len);
  d = nlmsg_data (nlh);
  if (d->cmd != DCB_CMD_IEEE_GET)
    return bad (err, "command %u, expected DCB_CMD_IEEE_GET", d->cmd);
  if (! attrs_whole (nlmsg_attrdata (nlh, sizeof (*d)), nlmsg_attrlen (nlh, sizeof (*d))))
    return bad (err, "truncated attribute");
  ret = nlmsg_parse (nlh, sizeof (*d), tb, DCB_ATTR_MAX, dcb_policy);
  if (ret < 0)
    return bad (err, "attribute fails its policy: %s", nl_geterror (ret));
  if (tb[DCB_ATTR_IEEE] == NULL)
    return bad (err, "no DCB_ATTR_IEEE");
  if (! attrs_whole (nla_data (tb[DCB_ATTR_IEEE]), nla_len (tb[DCB_ATTR_IEEE])))
    return bad (err, "truncated attribute in DCB_ATTR_IEEE");
  ret = nla_parse_nested (ieee, IEEE_MAX_KNOWN, tb[DCB_ATTR_IEEE], ieee_policy);
  if (ret < 0)
    return bad (err,
                "DCB_ATTR_IEEE attribute fails its policy (a short ETS, PFC or APP "
                "table?): %s",
                nl_geterror (ret));

  if (ieee[DCB_ATTR_IEEE_ETS])
    {
      struct ieee_ets ets;
      memcpy (&ets, nla_data (ieee[DCB_ATTR_IEEE_ETS]), sizeof (ets));
      for (int p = 0; p < DCB_NPRIO; p++)
        if (ets.prio_tc[p] >= IEEE_8021QAZ_MAX_TCS)
          return bad (err, "ETS maps priority %d to traffic class %u", p, ets.prio_tc[p]);
      memcpy (out->prio_tc, ets.prio_tc, sizeof (out->prio_tc));
      out->has_ets = true;
    }
  if (ieee[DCB_ATTR_IEEE_PFC])
    {
      struct ieee_pfc pfc;
      memcpy (&pfc, nla_data (ieee[DCB_ATTR_IEEE_PFC]), sizeof (pfc));
      memcpy (out->pfc_raw, &pfc, sizeof (out->pfc_raw));
      out->has_pfc = true;
      out->pfc_cap = pfc.pfc_cap;
      out->pfc_en = pfc.pfc_en;
      out->mbc = pfc.mbc;
      out->pfc_delay = pfc.delay;
    }
  if (ieee[DCB_ATTR_IEEE_APP_TABLE]
      && parse_app_table (ieee[DCB_ATTR_IEEE_APP_TABLE], out, err) < 0)
    return -1;
  if (tb[DCB_ATTR_DCBX])
    {
      out->has_dcbx = true;
      out->dcbx = nla_get_u8 (tb[DCB_ATTR_DCBX]);
    }
  return 0;
}

void
dcb_reply_init (struct dcb_reply *r, uint32_t seq)
{
  memset (r, 0, sizeof (*r));
  r->seq = seq;
}

static int
kernel_error (const struct nlmsghdr *nlh, int errnum, roce_error_t *err)
{
  cleanup_free char *text = netlink_errno_text (errnum);
  const char *ext = netlink_ext_ack_msg (nlh);
  if (ext && *ext)
    {
      cleanup_free char *clean = xstrdup (ext);
      for (char *p = clean; *p; p++)
        if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e)
          *p = '?';
      return roce_error_make (err, errnum, "%s; the kernel says: %s", text, clean);
    }
  return roce_error_make (err, errnum, "%s", text);
}

/* One answer's walk, shared by the get and the set exchanges: skips other
 * sequence numbers and NOOPs, turns an error ack into the kernel's errno,
 * hands each message of data_type to data(), and on the ack (or, where
 * done_ok, NLMSG_DONE) asks end() whether the answer came, then sets *done.  */
struct reply_walk
{
  uint32_t seq;
  uint16_t data_type;
  bool done_ok;
  int (*data) (void *ctx, const struct nlmsghdr *nlh, roce_error_t *err);
  int (*end) (void *ctx, bool ack, roce_error_t *err);
  void *ctx;
};

static int
reply_walk (const struct reply_walk *w, const void *buf, size_t len, bool *done, roce_error_t *err)
{
  struct nlmsghdr *nlh = (struct nlmsghdr *) buf;
  int rem;

  if (len == 0 || len > (size_t) INT32_MAX)
    return bad (err, "empty datagram");
  rem = (int) len;
  for (; nlmsg_ok (nlh, rem); nlh = nlmsg_next (nlh, &rem))
    {
      if (nlh->nlmsg_seq != w->seq)
        continue; /* an answer to someone else's question */
      if (nlh->nlmsg_type == NLMSG_NOOP)
        continue;
      if (nlh->nlmsg_type == NLMSG_ERROR)
        {
          const struct nlmsgerr *e = nlmsg_data (nlh);
          if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof (struct nlmsgerr))
            return bad (err, "short NLMSG_ERROR (%u bytes)", nlh->nlmsg_len);
          if (e->error > 0)
            return bad (err, "NLMSG_ERROR with a positive code %d", e->error);
          if (e->error < 0)
            return kernel_error (nlh, -e->error, err);
          if (w->end (w->ctx, true, err) < 0)
            return -1;
          *done = true;
          return 0;
        }
      if (nlh->nlmsg_type == NLMSG_DONE && w->done_ok)
        {
          if (w->end (w->ctx, false, err) < 0)
            return -1;
          *done = true;
          return 0;
        }
      if (nlh->nlmsg_type == NLMSG_OVERRUN)
        return roce_error_make (err, ENOBUFS, "netlink overrun");
      if (nlh->nlmsg_type != w->data_type)
        return bad (err, "unexpected message type %u", nlh->nlmsg_type);
      if (w->data (w->ctx, nlh, err) < 0)
        return -1;
    }
  if (rem > 0)
    return bad (err, "truncated netlink message (%d bytes left over)", rem);
  return 0;
}

static int
get_reply_data (void *ctx, const struct nlmsghdr *nlh, roce_error_t *err)
{
  struct dcb_reply *r = ctx;
  if (r->have_data)
    return bad (err, "two replies to one request");
  if (dcb_parse_ieee (nlh, &r->ieee, err) < 0)
    return -1;
  r->have_data = true;
  return 0;
}

static int
get_reply_end (void *ctx, bool ack, roce_error_t *err)
{
  const struct dcb_reply *r = ctx;
  if (r->have_data)
    return 0;
  if (ack)
    return bad (err, "an ack but no reply");
  return bad (err, "NLMSG_DONE but no reply");
}

int
dcb_reply_feed (struct dcb_reply *r, const void *buf, size_t len, roce_error_t *err)
{
  const struct reply_walk w = { .seq = r->seq,
                                .data_type = RTM_GETDCB,
                                .done_ok = true,
                                .data = get_reply_data,
                                .end = get_reply_end,
                                .ctx = r };
  return reply_walk (&w, buf, len, &r->done, err);
}

int
dcb_query_ieee (const char *ifname, struct dcb_ieee *out, roce_error_t *err)
{
  return dcb_query_ieee_on (NULL, ifname, out, err);
}

int
dcb_query_ieee_on (struct nl_sock *host, const char *ifname, struct dcb_ieee *out,
                   roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *own = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  struct nl_sock *sk = host;
  struct dcb_reply r;
  uint32_t seq;

  if (! ifname_ok (ifname, IFNAMSIZ - 1))
    return roce_error_make (err, EINVAL, "bad interface name '%s'", ifname);
  if ((sk == NULL && netlink_open_proto (NETLINK_ROUTE, -1, &own, err) < 0)
      || dcb_build_ieee_get (ifname, &m, err) < 0
      || netlink_send_aside (sk ? sk : own, m, &seq, err) < 0)
    return -1;
  sk = sk ? sk : own;
  dcb_reply_init (&r, seq);
  while (! r.done)
    {
      cleanup_free unsigned char *buf = NULL;
      size_t len = 0;
      if (netlink_recv (sk, &buf, &len, err) < 0 || dcb_reply_feed (&r, buf, len, err) < 0)
        return -1;
    }
  *out = r.ieee;
  return 0;
}

/* ---- set messages ---------------------------------------------------------- */

/* RTM_SETDCB with its dcbmsg and IFNAME, DCB_ATTR_IEEE opened (the caller
 * closes it), as dcb_doit() wants a set: NLA_NUL_STRING name, then the
 * command's nest.  Nests carry NLA_F_NESTED, as iproute2's
 * mnl_attr_nest_start() sets it (dcbnl's parser masks the flag).  */
static struct nl_msg *
set_start (const char *ifname, uint8_t cmd, struct nlattr **ieee, roce_error_t *err)
{
  struct dcbmsg d = { .dcb_family = AF_UNSPEC, .cmd = cmd };
  cleanup_nlmsg struct nl_msg *m = NULL;

  if (! ifname_ok (ifname, IFNAMSIZ - 1))
    {
      roce_error_make (err, EINVAL, "DCB request: bad interface name '%s'", ifname);
      return NULL;
    }
  m = nlmsg_alloc_simple (RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK);
  if (m == NULL)
    {
      roce_error_make (err, ENOMEM, "nlmsg_alloc");
      return NULL;
    }
  if (nlmsg_append (m, &d, sizeof (d), NLMSG_ALIGNTO) < 0
      || nla_put_string (m, DCB_ATTR_IFNAME, ifname) < 0
      || (*ieee = nla_nest_start (m, NLA_F_NESTED | DCB_ATTR_IEEE)) == NULL)
    {
      roce_error_make (err, EMSGSIZE, "DCB request: message too small");
      return NULL;
    }
  return steal_pointer (&m);
}

int
dcb_build_pfc_set (const char *ifname, const struct dcb_ieee *now, uint8_t pfc_en,
                   struct nl_msg **out, roce_error_t *err)
{
  cleanup_nlmsg struct nl_msg *m = NULL;
  struct nlattr *ieee = NULL;
  struct ieee_pfc pfc;

  if (! now->has_pfc)
    return roce_error_make (err, EINVAL, "PFC set: the driver reported no PFC state to modify");
  /* Read-modify-write: capability, MBC, delay (cable length) as the driver
   * reported them; only the enable bits change.  */
  memcpy (&pfc, now->pfc_raw, sizeof (pfc));
  pfc.pfc_en = pfc_en;
  if ((m = set_start (ifname, DCB_CMD_IEEE_SET, &ieee, err)) == NULL)
    return -1;
  if (nla_put (m, DCB_ATTR_IEEE_PFC, sizeof (pfc), &pfc) < 0)
    return roce_error_make (err, EMSGSIZE, "DCB request: message too small");
  nla_nest_end (m, ieee);
  *out = steal_pointer (&m);
  return 0;
}

int
dcb_build_app (const char *ifname, uint8_t cmd, const struct dcb_app_entry *v, size_t n,
               struct nl_msg **out, roce_error_t *err)
{
  cleanup_nlmsg struct nl_msg *m = NULL;
  struct nlattr *ieee = NULL, *table;

  if (cmd != DCB_CMD_IEEE_SET && cmd != DCB_CMD_IEEE_DEL)
    return roce_error_make (err, EINVAL, "APP request: command %u is neither IEEE_SET nor IEEE_DEL",
                            cmd);
  if (n == 0 || n > DCB_NDSCP)
    return roce_error_make (err, EINVAL, "APP request: %zu entries (1..%d)", n, DCB_NDSCP);
  for (size_t i = 0; i < n; i++)
    if (v[i].selector != IEEE_8021QAZ_APP_SEL_DSCP || v[i].protocol >= DCB_NDSCP
        || v[i].priority >= DCB_NPRIO)
      return roce_error_make (err, EINVAL, "APP request: entry %u/%u/%u is no DSCP entry",
                              v[i].selector, v[i].priority, v[i].protocol);
  if ((m = set_start (ifname, cmd, &ieee, err)) == NULL)
    return -1;
  table = nla_nest_start (m, NLA_F_NESTED | DCB_ATTR_IEEE_APP_TABLE);
  if (table == NULL)
    return roce_error_make (err, EMSGSIZE, "DCB request: message too small");
  for (size_t i = 0; i < n; i++)
    {
      /* The kernel's own struct, so its padding and byte order are the
       * kernel's: protocol is host-endian u16.  */
      struct dcb_app a
          = { .selector = v[i].selector, .priority = v[i].priority, .protocol = v[i].protocol };
      if (nla_put (m, DCB_ATTR_IEEE_APP, sizeof (a), &a) < 0)
        return roce_error_make (err, EMSGSIZE, "DCB request: message too small");
    }
  nla_nest_end (m, table);
  nla_nest_end (m, ieee);
  *out = steal_pointer (&m);
  return 0;
}

void
dcb_app_diff (const struct dcb_ieee *now, unsigned dscp, unsigned prio, struct dcb_app_diff *out)
{
  uint8_t have = dcb_dscp_prios (now, dscp);

  memset (out, 0, sizeof (*out));
  if (dscp >= DCB_NDSCP || prio >= DCB_NPRIO)
    return;
  if (! (have & (1u << prio)))
    out->add[out->n_add++] = (struct dcb_app_entry){ .selector = IEEE_8021QAZ_APP_SEL_DSCP,
                                                     .priority = (uint8_t) prio,
                                                     .protocol = (uint16_t) dscp };
  for (unsigned q = 0; q < DCB_NPRIO; q++)
    if (q != prio && (have & (1u << q)))
      out->del[out->n_del++] = (struct dcb_app_entry){ .selector = IEEE_8021QAZ_APP_SEL_DSCP,
                                                       .priority = (uint8_t) q,
                                                       .protocol = (uint16_t) dscp };
}

void
dcb_set_reply_init (struct dcb_set_reply *r, uint32_t seq, uint8_t cmd)
{
  memset (r, 0, sizeof (*r));
  r->seq = seq;
  r->cmd = cmd;
}

static const struct nla_policy set_reply_policy[DCB_ATTR_MAX + 1] = {
  [DCB_ATTR_IEEE] = { .type = NLA_U8 },
};

static const char *
set_cmd_name (uint8_t cmd)
{
  return cmd == DCB_CMD_IEEE_SET   ? "DCB_CMD_IEEE_SET"
         : cmd == DCB_CMD_IEEE_DEL ? "DCB_CMD_IEEE_DEL"
                                   : "?";
}

/* RTM_SETDCB { dcbmsg, DCB_ATTR_IEEE u8 }: the status byte.  */
static int
parse_set_status (const struct nlmsghdr *nlh_c, uint8_t cmd, uint8_t *status, roce_error_t *err)
{
  struct nlmsghdr *nlh = (struct nlmsghdr *) nlh_c;
  struct nlattr *tb[DCB_ATTR_MAX + 1];
  const struct dcbmsg *d;
  int ret;

  if (! nlmsg_valid_hdr (nlh, sizeof (struct dcbmsg)))
    return bad (err, "message of %u bytes has no DCB header", nlh->nlmsg_len);
  d = nlmsg_data (nlh);
  if (d->cmd != cmd)
    return bad (err, "command %u, expected %s", d->cmd, set_cmd_name (cmd));
  if (! attrs_whole (nlmsg_attrdata (nlh, sizeof (*d)), nlmsg_attrlen (nlh, sizeof (*d))))
    return bad (err, "truncated attribute");
  ret = nlmsg_parse (nlh, sizeof (*d), tb, DCB_ATTR_MAX, set_reply_policy);
  if (ret < 0)
    return bad (err, "attribute fails its policy: %s", nl_geterror (ret));
  /* iproute2's dcb insists on one byte, as the kernel's nla_put_u8.  */
  if (tb[DCB_ATTR_IEEE] == NULL || nla_len (tb[DCB_ATTR_IEEE]) != 1)
    return bad (err, "no one-byte DCB_ATTR_IEEE status in the %s answer", set_cmd_name (cmd));
  *status = nla_get_u8 (tb[DCB_ATTR_IEEE]);
  return 0;
}

static int
set_reply_data (void *ctx, const struct nlmsghdr *nlh, roce_error_t *err)
{
  struct dcb_set_reply *r = ctx;
  uint8_t status = 0;
  if (r->have_status)
    return bad (err, "two answers to one request");
  if (parse_set_status (nlh, r->cmd, &status, err) < 0)
    return -1;
  if (status != 0)
    {
      /* nla_put_u8 (skb, DCB_ATTR_IEEE, err): -errno in a byte.  */
      int e = 256 - status;
      cleanup_free char *text = netlink_errno_text (e);
      return roce_error_make (err, e, "the driver refused %s: %s", set_cmd_name (r->cmd), text);
    }
  r->have_status = true;
  return 0;
}

static int
set_reply_end (void *ctx, bool ack, roce_error_t *err)
{
  const struct dcb_set_reply *r = ctx;
  (void) ack; /* the set answer ends with the ack alone */
  if (! r->have_status)
    return bad (err, "an ack but no %s answer", set_cmd_name (r->cmd));
  return 0;
}

int
dcb_set_reply_feed (struct dcb_set_reply *r, const void *buf, size_t len, roce_error_t *err)
{
  const struct reply_walk w = { .seq = r->seq,
                                .data_type = RTM_SETDCB,
                                .done_ok = false,
                                .data = set_reply_data,
                                .end = set_reply_end,
                                .ctx = r };
  return reply_walk (&w, buf, len, &r->done, err);
}

int
dcb_set_send (const char *ifname, struct nl_msg *m, roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *sk = NULL;
  const struct dcbmsg *d = nlmsg_data (nlmsg_hdr (m));
  struct dcb_set_reply r;
  uint32_t seq;

  if (netlink_open_proto (NETLINK_ROUTE, -1, &sk, err) < 0 || netlink_send (sk, m, &seq, err) < 0)
    return roce_error_wrap (err, "DCB set on %s", ifname);
  dcb_set_reply_init (&r, seq, d->cmd);
  while (! r.done)
    {
      cleanup_free unsigned char *buf = NULL;
      size_t len = 0;
      if (netlink_recv (sk, &buf, &len, err) < 0 || dcb_set_reply_feed (&r, buf, len, err) < 0)
        return roce_error_wrap (err, "DCB set on %s", ifname);
    }
  return 0;
}

uint8_t
dcb_dscp_prios (const struct dcb_ieee *d, unsigned dscp)
{
  return dscp < DCB_NDSCP ? d->dscp_prio[dscp] : 0;
}

char *
dcb_prio_list (uint8_t mask)
{
  char buf[32] = "";
  size_t off = 0;
  if (mask == 0)
    return xstrdup ("none");
  for (int p = 0; p < DCB_NPRIO; p++)
    if (mask & (1u << p))
      off += (size_t) snprintf (buf + off, sizeof (buf) - off, "%s%d", off ? "," : "", p);
  return xstrdup (buf);
}

char *
dcb_dcbx_text (uint8_t dcbx)
{
  static const struct
  {
    uint8_t bit;
    const char *name;
  } names[] = {
    { DCB_CAP_DCBX_HOST, "host" },     { DCB_CAP_DCBX_LLD_MANAGED, "lld-managed" },
    { DCB_CAP_DCBX_VER_CEE, "cee" },   { DCB_CAP_DCBX_VER_IEEE, "ieee" },
    { DCB_CAP_DCBX_STATIC, "static" },
  };
  char buf[96] = "";
  size_t off = 0;
  for (size_t i = 0; i < ARRAY_SIZE (names); i++)
    if (dcbx & names[i].bit)
      off += (size_t) snprintf (buf + off, sizeof (buf) - off, "%s%s", off ? "," : "",
                                names[i].name);
  if (off == 0)
    return xasprintf ("0x%02x", dcbx);
  /* mlnx_qos' words: without HOST the firmware runs DCBX.  */
  return xasprintf ("%s (0x%02x, %s-controlled)", buf, dcbx,
                    (dcbx & DCB_CAP_DCBX_HOST) ? "OS" : "firmware");
}
