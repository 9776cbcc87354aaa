/* SPDX-License-Identifier: Apache-2.0 */
/* The lossless QoS gate: the probe (DCB netlink, ECN sysfs, MTU), the verdict
 * of each check against the policy, and the findings a start or `check` shows.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "lib/log.h"
#include "lib/utils.h"
#include "net/uplink.h"
#include "qos/qos.h"
#include "spec/oci.h"
#include "sys/netlink.h"
#include "sys/sysfs.h"

/* ---- probe ---------------------------------------------------------------- */

static const char *const ecn_dir[QOS_ECN_N] = { "roce_np", "roce_rp" };
static const char *const ecn_check[QOS_ECN_N] = { "ecn-np", "ecn-rp" };
static const char *const ecn_words[QOS_ECN_N]
    = { "notification point (NP)", "reaction point (RP)" };

static void
item_set (struct probe_item *it, enum probe_state st, int errnum, char *detail)
{
  it->state = st;
  it->errnum = errnum;
  free (it->detail);
  it->detail = detail;
}

static void
item_clear (struct probe_item *it)
{
  free (it->detail);
  free (it->source);
  memset (it, 0, sizeof (*it));
}

static bool
netdev_name_ok (const char *s)
{
  size_t len = strlen (s);
  return len > 0 && len < IFNAMSIZ && str_is_printable (s) && strchr (s, '/') == NULL
         && strchr (s, ' ') == NULL && strcmp (s, ".") != 0 && strcmp (s, "..") != 0;
}

void
qos_probe_dcb (const char *netdev, struct qos_probe *out)
{
  qos_probe_dcb_on (NULL, netdev, out);
}

void
qos_probe_dcb_on (struct nl_sock *host, const char *netdev, struct qos_probe *out)
{
  cleanup_error roce_error_t err = NULL;

  item_clear (&out->dcb);
  out->dcb.source = xstrdup ("DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET)");
  if (dcb_query_ieee_on (host, netdev, &out->ieee, &err) == 0)
    {
      item_set (&out->dcb, PROBE_OK, 0, NULL);
      return;
    }
  memset (&out->ieee, 0, sizeof (out->ieee));
  item_set (&out->dcb, err->status == EOPNOTSUPP ? PROBE_UNSUPPORTED : PROBE_ERROR, err->status,
            xstrdup (err->msg));
}

char *
qos_ecn_path (const char *sysfs_root, const char *netdev, enum qos_ecn_point pt, unsigned prio)
{
  return xasprintf ("%s/class/net/%s/ecn/%s/enable/%u", sysfs_root, netdev, ecn_dir[pt], prio);
}

void
qos_probe_ecn (const char *sysfs_root, const char *netdev, unsigned prio, enum qos_ecn_point pt,
               struct probe_item *it, bool *on)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *buf = NULL;
  cleanup_close int fd = -1;
  size_t len = 0;

  item_clear (it);
  *on = false;
  it->source = qos_ecn_path (sysfs_root, netdev, pt, prio);
  fd = open (it->source, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    {
      int e = errno;
      if (e == ENOENT || e == ENOTDIR)
        item_set (it, PROBE_UNSUPPORTED, e, xstrdup ("the driver exposes no such file"));
      else
        item_set (it, PROBE_ERROR, e, xasprintf ("open: %s", strerror (e)));
      return;
    }
  if (read_all_fd (fd, 64, &buf, &len, &err) < 0)
    {
      item_set (it, PROBE_ERROR, err->status, xstrdup (err->msg));
      return;
    }
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
    buf[--len] = '\0';
  if (len == 0)
    {
      /* MLNX_OFED's show function returns 0 bytes when the firmware query
       * fails: that is not "0".  */
      item_set (it, PROBE_ERROR, EIO,
                xstrdup ("empty read (the driver could not query the firmware)"));
      return;
    }
  if (strcmp (buf, "1") == 0 || strcmp (buf, "0") == 0)
    {
      *on = buf[0] == '1';
      item_set (it, PROBE_OK, 0, NULL);
      return;
    }
  for (char *c = buf; *c; c++)
    if ((unsigned char) *c < 0x20 || (unsigned char) *c > 0x7e || *c == '\'')
      *c = '?';
  item_set (it, PROBE_ERROR, EINVAL, xasprintf ("unexpected content '%.32s'", buf));
}

void
qos_probe_mtu (const char *netdev, struct probe_item *it, unsigned *mtu)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_nl_sock struct nl_sock *sk = NULL;
  struct rtnl_link *link = NULL;
  int ret;

  item_clear (it);
  *mtu = 0;
  it->source = xstrdup ("rtnetlink (RTM_GETLINK, IFLA_MTU)");
  if (netlink_open_proto (NETLINK_ROUTE, -1, &sk, &err) < 0)
    {
      item_set (it, PROBE_ERROR, err->status, xstrdup (err->msg));
      return;
    }
  ret = rtnl_link_get_kernel (sk, 0, netdev, &link);
  if (ret < 0)
    {
      int e = (ret == -NLE_OBJ_NOTFOUND || ret == -NLE_NODEV) ? ENODEV : EIO;
      item_set (it, PROBE_ERROR, e,
                e == ENODEV ? xasprintf ("no netdev '%s' in the host's network namespace", netdev)
                            : xstrdup (nl_geterror (ret)));
      return;
    }
  *mtu = rtnl_link_get_mtu (link);
  rtnl_link_put (link);
  item_set (it, PROBE_OK, 0, NULL);
}

int
qos_stall_tunable (int fd, const char *netdev, unsigned cmd, unsigned short *ms)
{
  struct ethtool_tunable t = { .cmd = cmd,
                               .id = ETHTOOL_PFC_PREVENTION_TOUT,
                               .type_id = ETHTOOL_TUNABLE_U16,
                               .len = sizeof (uint16_t) };
  /* struct ethtool_tunable ends in a flexible array: the u16 follows it.  */
  union
  {
    unsigned char raw[sizeof (struct ethtool_tunable) + sizeof (uint16_t)];
    uint64_t align;
  } req;
  struct ifreq ifr = { 0 };
  uint16_t v = *ms;

  if (strlen (netdev) >= sizeof (ifr.ifr_name))
    {
      errno = ENAMETOOLONG;
      return -1;
    }
  memcpy (ifr.ifr_name, netdev, strlen (netdev) + 1);
  memset (&req, 0, sizeof (req));
  memcpy (req.raw, &t, sizeof (t));
  memcpy (req.raw + sizeof (t), &v, sizeof (v));
  ifr.ifr_data = (void *) req.raw;
  if (ioctl (fd, SIOCETHTOOL, &ifr) < 0)
    return -1;
  memcpy (&v, req.raw + sizeof (t), sizeof (v));
  *ms = v;
  return 0;
}

void
qos_probe_stall (const char *netdev, struct probe_item *it, unsigned *ms)
{
  cleanup_close int fd = -1;
  unsigned short v = 0;

  item_clear (it);
  *ms = 0;
  it->source = xstrdup ("ethtool ioctl (SIOCETHTOOL, ETHTOOL_GTUNABLE PFC_PREVENTION_TOUT)");
  fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    {
      item_set (it, PROBE_ERROR, errno, xasprintf ("socket: %s", strerror (errno)));
      return;
    }
  if (qos_stall_tunable (fd, netdev, ETHTOOL_GTUNABLE, &v) < 0)
    {
      int e = errno;
      item_set (it, e == EOPNOTSUPP ? PROBE_UNSUPPORTED : PROBE_ERROR, e, netlink_errno_text (e));
      return;
    }
  *ms = v;
  item_set (it, PROBE_OK, 0, NULL);
}

/* The MTU item from a link already looked up (uplink.h).  */
static void
probe_mtu_of (const struct roce_uplink *u, struct probe_item *it, unsigned *mtu)
{
  item_clear (it);
  *mtu = 0;
  it->source = xstrdup ("rtnetlink (RTM_GETLINK, IFLA_MTU)");
  if (u->link_err)
    {
      int e = u->link_err->status == ENODEV ? ENODEV : EIO;
      item_set (it, PROBE_ERROR, e,
                e == ENODEV
                    ? xasprintf ("no netdev '%s' in the host's network namespace", u->netdev)
                    : xstrdup (u->link_err->msg));
      return;
    }
  *mtu = u->link.mtu;
  item_set (it, PROBE_OK, 0, NULL);
}

int
qos_probe_run (const struct roce_policy *p, const char *netdev, struct qos_probe *out,
               roce_error_t *err)
{
  return qos_probe_run_on (p, netdev, NULL, NULL, out, err);
}

int
qos_probe_run_on (const struct roce_policy *p, const char *netdev, struct nl_sock *host,
                  const struct roce_uplink *u, struct qos_probe *out, roce_error_t *err)
{
  memset (out, 0, sizeof (*out));
  if (! netdev_name_ok (netdev))
    return roce_error_make (err, EINVAL, "netdev '%s' is not a valid interface name", netdev);
  out->netdev = xstrdup (netdev);
  out->prio = p->qos.pfc_priority;
  if (u)
    probe_mtu_of (u, &out->mtu, &out->mtu_value);
  else
    qos_probe_mtu (netdev, &out->mtu, &out->mtu_value);
  qos_probe_dcb_on (host, netdev, out);
  for (int pt = 0; pt < QOS_ECN_N; pt++)
    qos_probe_ecn (p->sysfs_root, netdev, out->prio, (enum qos_ecn_point) pt, &out->ecn[pt],
                   &out->ecn_on[pt]);
  qos_probe_stall (netdev, &out->stall, &out->stall_ms);
  if (p->qos.sw != QOS_MODE_OFF)
    {
      out->sw_loaded = true;
      lldp_seen_load (p->state_dir, p->sysfs_root, netdev, (int64_t) time (NULL), &out->sw);
    }
  return 0;
}

void
qos_probe_clear (struct qos_probe *pr)
{
  free (pr->netdev);
  item_clear (&pr->dcb);
  for (int pt = 0; pt < QOS_ECN_N; pt++)
    item_clear (&pr->ecn[pt]);
  item_clear (&pr->mtu);
  item_clear (&pr->stall);
  lldp_seen_clear (&pr->sw);
  memset (pr, 0, sizeof (*pr));
}

/* ---- verdict -------------------------------------------------------------- */

struct vctx
{
  const struct roce_policy *p;
  struct findings *out;
  unsigned prio;
  unsigned dscp;
};

static struct finding *
add (struct vctx *v, enum finding_status st, bool blocking, const char *check,
     const struct qos_subject *s)
{
  if (s == NULL)
    return findings_push (v->out, st, blocking, check, NULL, NULL);
  return findings_push (v->out, st, blocking, check, s->hca, s->probe->netdev);
}

/* Why the DCB state of this netdev does not prove anything; NULL when it
 * was read.  `what` is the part that is needed ("PFC", "APP table").  */
static char *
dcb_unknown_found (const struct qos_probe *pr, bool part_present, const char *part)
{
  switch (pr->dcb.state)
    {
      case PROBE_UNSUPPORTED:
        return xstrdup ("DCB not supported by this netdev (EOPNOTSUPP): the host cannot prove it "
                        "is lossless");
      case PROBE_ERROR:
        return xasprintf ("DCB state unreadable (%s): the host cannot prove it is lossless",
                          pr->dcb.detail ? pr->dcb.detail : "?");
      case PROBE_OK:
        break;
    }
  if (! part_present)
    return xasprintf ("the driver reports no IEEE %s state: the host cannot prove it is lossless",
                      part);
  return NULL;
}

static char *
dcb_unknown_fix (const struct vctx *v, const struct qos_subject *s)
{
  const struct qos_probe *pr = s->probe;
  /* The way out that accepts the risk, only where it changes something.  */
  const char *escape = v->p->qos.mode == QOS_MODE_ENFORCE
                           ? ", or set qos.mode to 'warn' there to run on an unproven fabric"
                           : "";
  if (pr->dcb.state == PROBE_ERROR && pr->dcb.errnum == ENODEV)
    return xasprintf ("set hcas.%s.netdev in %s to the HCA's PF netdev ('%s' does not exist "
                      "in the host's network namespace)",
                      s->hca, v->p->path, pr->netdev);
  if (pr->dcb.state == PROBE_ERROR)
    return xasprintf ("check 'dcb pfc show dev %s', which asks the kernel the same question%s",
                      pr->netdev, escape);
  return xasprintf ("set hcas.%s.netdev in %s to the HCA's DCB-capable PF netdev%s", s->hca,
                    v->p->path, escape);
}

/* The UNKNOWN finding `check` gets when the DCB state of the netdev does
 * not prove `part`; NULL when it was read.  */
static struct finding *
dcb_unknown (struct vctx *v, const struct qos_subject *s, bool part_present, const char *part,
             const char *check)
{
  char *found = dcb_unknown_found (s->probe, part_present, part);
  struct finding *f;

  if (found == NULL)
    return NULL;
  f = add (v, FINDING_UNKNOWN, true, check, s);
  f->found = found;
  f->fix = dcb_unknown_fix (v, s);
  return f;
}

static void
check_mtu (struct vctx *v, const struct qos_subject *s)
{
  const struct qos_probe *pr = s->probe;
  unsigned min = v->p->qos.min_mtu;
  struct finding *f;

  if (pr->mtu.state != PROBE_OK)
    {
      f = add (v, FINDING_UNKNOWN, true, "mtu", s);
      f->found = xasprintf ("unreadable: %s", pr->mtu.detail ? pr->mtu.detail : "?");
      f->fix = xasprintf ("set hcas.%s.netdev in %s to the HCA's netdev", s->hca, v->p->path);
    }
  else if (pr->mtu_value < min)
    {
      f = add (v, FINDING_FAIL, true, "mtu", s);
      f->found = xasprintf ("%u", pr->mtu_value);
      f->fix = xasprintf ("ip link set %s mtu %u", pr->netdev, min);
    }
  else
    {
      f = add (v, FINDING_OK, false, "mtu", s);
      f->found = xasprintf ("%u", pr->mtu_value);
    }
  f->what = xasprintf ("MTU of %s (%s)", pr->netdev, s->hca);
  f->expected = xasprintf ("at least %u (the container's macvlan inherits it)", min);
  f->source = xstrdup (pr->mtu.source ? pr->mtu.source : "");

  if (s->macvlan_mtu != 0 && pr->mtu.state == PROBE_OK)
    {
      bool ok = s->macvlan_mtu == pr->mtu_value;
      f = add (v, ok ? FINDING_OK : FINDING_FAIL, ! ok, "macvlan-mtu", s);
      f->what = xasprintf ("MTU of the container's macvlan on %s (%s)", pr->netdev, s->hca);
      f->expected = xasprintf ("%u (its parent's)", pr->mtu_value);
      f->found = xasprintf ("%u", s->macvlan_mtu);
      if (! ok)
        f->fix = xasprintf ("ip link set <the container's interface on %s> mtu %u", pr->netdev,
                            pr->mtu_value);
      f->source = xstrdup ("rtnetlink (RTM_GETLINK, IFLA_MTU)");
    }
}

static void
check_pfc (struct vctx *v, const struct qos_subject *s)
{
  const struct qos_probe *pr = s->probe;
  uint8_t bit = (uint8_t) (1u << v->prio);
  struct finding *unknown = dcb_unknown (v, s, pr->ieee.has_pfc, "PFC", "pfc");
  struct finding *f = unknown;

  if (unknown == NULL)
    {
      cleanup_free char *on = dcb_prio_list (pr->ieee.pfc_en);
      bool ok = (pr->ieee.pfc_en & bit) != 0;
      f = add (v, ok ? FINDING_OK : FINDING_FAIL, ! ok, "pfc", s);
      f->found = ok ? xasprintf ("enabled (PFC on priorities %s)", on)
                    : xasprintf ("disabled (PFC on priorities: %s)", on);
      if (! ok)
        f->fix = xasprintf ("dcb pfc set dev %s prio-pfc %u:on", pr->netdev, v->prio);
    }
  f->what = xasprintf ("PFC on priority %u of %s (%s)", v->prio, pr->netdev, s->hca);
  f->expected = xstrdup ("enabled");
  f->source = xstrdup (pr->dcb.source);

  if (unknown == NULL)
    {
      uint8_t other = pr->ieee.pfc_en & (uint8_t) ~bit;
      cleanup_free char *list = dcb_prio_list (other);
      f = add (v, other ? FINDING_WARN : FINDING_OK, false, "pfc-other", s);
      f->what = xasprintf ("PFC on the other priorities of %s (%s)", pr->netdev, s->hca);
      f->expected = xasprintf ("off (only priority %u carries RDMA)", v->prio);
      if (other)
        {
          char args[64] = "";
          size_t off = 0;
          for (int p = 0; p < DCB_NPRIO; p++)
            if (other & (1u << p))
              off += (size_t) snprintf (args + off, sizeof (args) - off, " %d:off", p);
          f->found = xasprintf ("on for %s (pauses there block traffic that needs no "
                                "lossless class)",
                                list);
          f->fix = xasprintf ("dcb pfc set dev %s prio-pfc%s", pr->netdev, args);
        }
      else
        f->found = xstrdup ("off");
      f->source = xstrdup (pr->dcb.source);
    }
}

static void
check_dscp (struct vctx *v, const struct qos_subject *s)
{
  const struct qos_probe *pr = s->probe;
  struct finding *f = dcb_unknown (v, s, pr->ieee.has_app_table, "APP table", "dscp");

  if (f == NULL)
    {
      uint8_t m = dcb_dscp_prios (&pr->ieee, v->dscp);
      uint8_t want = (uint8_t) (1u << v->prio);
      cleanup_free char *list = dcb_prio_list (m);
      if (m == want)
        {
          f = add (v, FINDING_OK, false, "dscp", s);
          f->found = xasprintf ("trust dscp, DSCP %u -> priority %u (%zu DSCP entries)", v->dscp,
                                v->prio, pr->ieee.n_dscp);
        }
      else
        {
          f = add (v, FINDING_FAIL, true, "dscp", s);
          if (pr->ieee.n_dscp == 0)
            f->found = xstrdup ("trust pcp (no DSCP entries in the APP table)");
          else if (m == 0)
            f->found = xasprintf ("trust dscp, but DSCP %u is not in the APP table (%zu other "
                                  "DSCP entries)",
                                  v->dscp, pr->ieee.n_dscp);
          else
            f->found = xasprintf ("trust dscp, DSCP %u -> priority %s", v->dscp, list);
          f->fix = xasprintf ("dcb app %s dev %s dscp-prio %u:%u", m == 0 ? "add" : "replace",
                              pr->netdev, v->dscp, v->prio);
        }
    }
  f->what = xasprintf ("DSCP %u of %s (%s)", v->dscp, pr->netdev, s->hca);
  f->expected = xasprintf ("trust dscp, DSCP %u -> priority %u", v->dscp, v->prio);
  f->source = xstrdup (pr->dcb.source);
}

static void
check_ecn (struct vctx *v, const struct qos_subject *s, enum qos_ecn_point pt)
{
  const struct qos_probe *pr = s->probe;
  const struct probe_item *it = &pr->ecn[pt];
  bool require = v->p->qos.ecn == QOS_ECN_REQUIRE;
  struct finding *f;

  if (v->p->qos.ecn == QOS_ECN_OFF)
    return;
  switch (it->state)
    {
      case PROBE_OK:
        f = add (v, pr->ecn_on[pt] ? FINDING_OK : FINDING_FAIL, ! pr->ecn_on[pt], ecn_check[pt], s);
        f->found = xstrdup (pr->ecn_on[pt] ? "enabled (1)" : "disabled (0)");
        if (! pr->ecn_on[pt])
          f->fix = xasprintf ("echo 1 > %s", it->source);
        break;
      case PROBE_UNSUPPORTED:
        f = add (v, FINDING_UNKNOWN, require, ecn_check[pt], s);
        f->found = xasprintf ("unknown: the driver has no %s/enable/%u (upstream mlx5 exposes no "
                              "per-priority ECN; MLNX_OFED does)",
                              ecn_dir[pt], v->prio);
        if (require)
          f->fix = xasprintf ("use MLNX_OFED's mlx5 driver, which exposes it, or set qos.ecn to "
                              "'warn-unknown' in %s",
                              v->p->path);
        break;
      case PROBE_ERROR:
      default:
        f = add (v, FINDING_UNKNOWN, require, ecn_check[pt], s);
        f->found = xasprintf ("unknown: %s", it->detail ? it->detail : "unreadable");
        if (require)
          f->fix = xasprintf ("check the HCA's congestion control (mlxconfig ROCE_CC_PRIO_MASK), "
                              "or set qos.ecn to 'warn-unknown' in %s",
                              v->p->path);
        break;
    }
  f->what = xasprintf ("RoCE ECN %s on priority %u of %s (%s)", ecn_words[pt], v->prio, pr->netdev,
                       s->hca);
  f->expected = xstrdup ("enabled (1)");
  f->source = xstrdup (it->source ? it->source : "");
}

/* NCCL reads its integer variables with strtoll(…, 0): hex and octal count.  */
static bool
nccl_int (const char *s, long long *out)
{
  char *end = NULL;
  if (s[0] < '0' || s[0] > '9')
    return false;
  errno = 0;
  *out = strtoll (s, &end, 0);
  return errno == 0 && end != s && *end == '\0';
}

static void
check_nccl_tc (struct vctx *v, const struct qos_subject *subj, size_t n, const char *val)
{
  unsigned good_tc = v->dscp << 2 | 2;
  cleanup_free char *bad = NULL;
  struct finding *f;
  long long tc;

  if (! nccl_int (val, &tc) || tc < 0 || tc > 255)
    {
      cleanup_free char *q = str_quote (val);
      bad = xasprintf ("%s, not a traffic class 0..255", q);
    }
  else
    {
      unsigned d = (unsigned) tc >> 2;
      for (size_t i = 0; i < n && bad == NULL; i++)
        {
          const struct qos_probe *pr = subj[i].probe;
          if (pr->dcb.state == PROBE_OK && pr->ieee.has_app_table)
            {
              uint8_t m = dcb_dscp_prios (&pr->ieee, d);
              cleanup_free char *list = dcb_prio_list (m);
              if (m != (1u << v->prio))
                bad = xasprintf ("%lld (DSCP %u), which %s maps to priority %s, not %u", tc, d,
                                 pr->netdev, list, v->prio);
            }
          else if (d != v->dscp)
            bad = xasprintf ("%lld (DSCP %u), but the policy's lossless DSCP is %u (and the DSCP "
                             "table of %s cannot be read)",
                             tc, d, v->dscp, pr->netdev);
        }
      if (n == 0 && d != v->dscp)
        bad = xasprintf ("%lld (DSCP %u), but the policy's lossless DSCP is %u", tc, d, v->dscp);
    }
  f = add (v, bad ? FINDING_FAIL : FINDING_OK, bad != NULL, "nccl-tc", NULL);
  f->what = xstrdup ("NCCL_IB_TC in the container's env");
  f->expected = xasprintf ("a traffic class whose DSCP (TC >> 2) maps to priority %u, e.g. %u",
                           v->prio, good_tc);
  if (bad)
    {
      f->found = steal_pointer (&bad);
      f->fix = xasprintf ("NCCL_IB_TC=%u (DSCP %u << 2 | ECT(0)), or leave it unset", good_tc,
                          v->dscp);
    }
  else
    f->found = xasprintf ("%lld (DSCP %u)", tc, (unsigned) tc >> 2);
  f->source = xstrdup ("config.json process.env");
}

static void
check_nccl_sl (struct vctx *v, const char *val)
{
  struct finding *f;
  long long sl;
  bool ok = nccl_int (val, &sl) && sl == (long long) v->prio;

  f = add (v, ok ? FINDING_OK : FINDING_FAIL, ! ok, "nccl-sl", NULL);
  f->what = xstrdup ("NCCL_IB_SL in the container's env");
  f->expected = xasprintf ("%u (the PFC priority)", v->prio);
  f->found = str_quote (val);
  if (! ok)
    f->fix = xasprintf ("NCCL_IB_SL=%u, or leave it unset", v->prio);
  f->source = xstrdup ("config.json process.env");
}

static bool
selected (const struct qos_subject *subj, size_t n, const char *name, size_t len)
{
  for (size_t i = 0; i < n; i++)
    if (strlen (subj[i].hca) == len && strncmp (subj[i].hca, name, len) == 0)
      return true;
  return false;
}

/* A policy HCA that is not selected but that the prefix `name` matches.  */
static const char *
prefix_catches (const struct vctx *v, const struct qos_subject *subj, size_t n, const char *name,
                size_t len)
{
  for (size_t i = 0; i < v->p->n_hcas; i++)
    {
      const char *h = v->p->hcas[i].name;
      if (strncmp (h, name, len) == 0 && ! selected (subj, n, h, strlen (h)))
        return h;
    }
  return NULL;
}

static void
check_nccl_hca (struct vctx *v, const struct qos_subject *subj, size_t n, const char *val)
{
  const char *s = val;
  bool exclude = false, exact = false, any = false, needs_exact = false;
  cleanup_free char *bad = NULL;
  cleanup_free char *names = NULL;
  struct finding *f;

  for (size_t i = 0; i < n; i++)
    {
      char *prev = names;
      names = xasprintf ("%s%s%s", prev ? prev : "", prev ? "," : "", subj[i].hca);
      free (prev);
      if (prefix_catches (v, subj, n, subj[i].hca, strlen (subj[i].hca)))
        needs_exact = true;
    }
  /* NCCL's syntax: [^][=]name[:port],...; without '=' names are prefixes.  */
  if (*s == '^')
    {
      exclude = true;
      s++;
    }
  if (*s == '=')
    {
      exact = true;
      s++;
    }
  if (exclude)
    {
      cleanup_free char *q = str_quote (val);
      bad = xasprintf ("%s, an exclude list: NCCL would use every other HCA it sees", q);
    }
  while (bad == NULL && *s)
    {
      size_t len = strcspn (s, ","), nlen = strcspn (s, ",:");
      if (nlen > len)
        nlen = len;
      if (nlen > 0)
        {
          cleanup_free char *tok = xstrndup (s, nlen);
          cleanup_free char *q = str_quote (tok);
          const char *other;
          any = true;
          if (! selected (subj, n, s, nlen))
            bad = xasprintf ("%s, which is not a selected HCA", q);
          else if (! exact && (other = prefix_catches (v, subj, n, s, nlen)) != NULL)
            bad = xasprintf ("%s, a prefix that also matches %s, which is not selected", q, other);
        }
      s += len;
      if (*s == ',')
        s++;
    }
  if (bad == NULL && ! any)
    {
      cleanup_free char *q = str_quote (val);
      bad = xasprintf ("%s, no HCA name: NCCL would use every HCA it sees", q);
    }

  f = add (v, bad ? FINDING_FAIL : FINDING_OK, bad != NULL, "nccl-hca", NULL);
  f->what = xstrdup ("NCCL_IB_HCA in the container's env");
  f->expected = xasprintf ("only the selected HCAs (%s)", names ? names : "");
  if (bad)
    {
      f->found = steal_pointer (&bad);
      f->fix = xasprintf ("NCCL_IB_HCA=%s%s, or leave it unset", needs_exact ? "=" : "",
                          names ? names : "");
    }
  else
    f->found = str_quote (val);
  f->source = xstrdup ("config.json process.env");
}

/* A variable of the container's env the gate checks, when set: NCCL
 * reads an empty one as unset.  */
static const char *
env_set (char *const *env, const char *name)
{
  const char *val = oci_env_get (env, name);
  return val && *val ? val : NULL;
}

void
qos_verdict (const struct roce_policy *p, const struct qos_subject *subj, size_t n,
             char *const *env, struct findings *out)
{
  struct vctx v = { .p = p, .out = out, .prio = p->qos.pfc_priority, .dscp = p->qos.dscp };
  const char *val;

  for (size_t i = 0; i < n; i++)
    {
      check_mtu (&v, &subj[i]);
      check_pfc (&v, &subj[i]);
      check_dscp (&v, &subj[i]);
      for (int pt = 0; pt < QOS_ECN_N; pt++)
        check_ecn (&v, &subj[i], (enum qos_ecn_point) pt);
      qos_switch_verdict (p, &subj[i], out);
    }
  if (env == NULL)
    return;
  if ((val = env_set (env, "NCCL_IB_TC")) != NULL)
    check_nccl_tc (&v, subj, n, val);
  if ((val = env_set (env, "NCCL_IB_SL")) != NULL)
    check_nccl_sl (&v, val);
  if ((val = env_set (env, "NCCL_IB_HCA")) != NULL)
    check_nccl_hca (&v, subj, n, val);
}

bool
qos_env_checked (char *const *env)
{
  return env
         && (env_set (env, "NCCL_IB_TC") || env_set (env, "NCCL_IB_SL")
             || env_set (env, "NCCL_IB_HCA"));
}

bool
qos_finding_is_switch (const struct finding *f)
{
  return strncmp (f->check, "switch-", 7) == 0;
}

const struct finding *
qos_first_refusing (const struct roce_policy *p, const struct findings *f)
{
  for (size_t i = 0; i < f->n; i++)
    if (f->v[i].blocking && (qos_finding_is_switch (&f->v[i]) || p->qos.mode == QOS_MODE_ENFORCE))
      return &f->v[i];
  return NULL;
}

/* ---- the gate ------------------------------------------------------------- */

/* HCA i's probe: on the start's host socket and its netdev found once
 * (c->uplinks), else looked up here.  */
static int
gate_probe (const struct roce_policy *p, const struct roce_container *c,
            const struct roce_request *req, size_t i, struct qos_probe *out, roce_error_t *err)
{
  cleanup_free char *nd = NULL;
  const struct roce_uplink *u = c->uplinks && i < c->uplinks->n ? &c->uplinks->v[i] : NULL;

  if (u)
    return u->netdev == NULL ? uplink_error (u, err)
                             : qos_probe_run_on (p, u->netdev, c->uplinks->host, u, out, err);
  if (sysfs_hca_netdev (p, req->sel[i].hca, &nd, err) < 0)
    return -1;
  return qos_probe_run (p, nd, out, err);
}

static char *const no_env[] = { NULL };

static void
log_finding (enum roce_log_level level, const struct finding *f)
{
  roce_log (level, "qos %s %s%s: %s: %s vs %s%s%s%s", finding_status_name (f->status), f->check,
            f->blocking ? " (blocking)" : "", f->what, f->expected, f->found,
            f->fix ? " (fix: " : "", f->fix ? f->fix : "", f->fix ? ")" : "");
}

int
qos_gate (const struct roce_policy *p, const struct roce_request *req,
          const struct roce_container *c, roce_error_t *err)
{
  bool enforce = p->qos.mode == QOS_MODE_ENFORCE;
  size_t n = req->n, k = 0, bad = 0;
  cleanup_free struct qos_probe *probes = NULL;
  cleanup_free struct qos_subject *subj = NULL;
  struct findings f = { 0 };
  const struct finding *first;
  int ret = 0;

  if (p->qos.mode == QOS_MODE_OFF)
    {
      roce_log (ROCE_LOG_DEBUG, "qos gate: off (qos.mode 'off')");
      return 0;
    }
  probes = xmalloc0 ((n + 1) * sizeof (*probes));
  subj = xmalloc0 ((n + 1) * sizeof (*subj));
  for (size_t i = 0; i < n; i++)
    {
      const struct policy_hca *h = req->sel[i].hca;
      cleanup_error roce_error_t lerr = NULL;

      if (gate_probe (p, c, req, i, &probes[k], &lerr) < 0)
        {
          if (enforce)
            {
              ret = roce_error_make (err, lerr->status, "%s", lerr->msg);
              goto out;
            }
          roce_log (ROCE_LOG_WARN, "qos gate (warn): %s: not probed: %s", h->name, lerr->msg);
          bad++;
          continue;
        }
      subj[k] = (struct qos_subject){ .hca = h->name, .probe = &probes[k] };
      k++;
    }

  qos_verdict (p, subj, k, c->config && c->config->env ? c->config->env : no_env, &f);
  for (size_t i = 0; i < f.n; i++)
    if (f.v[i].status != FINDING_OK)
      {
        log_finding (f.v[i].blocking && enforce ? ROCE_LOG_ERR : ROCE_LOG_WARN, &f.v[i]);
        bad++;
      }
  first = qos_first_refusing (p, &f);
  if (first)
    {
      roce_log (ROCE_LOG_ERR, "qos gate (%s): refusing the start: %zu finding(s)",
                qos_finding_is_switch (first) ? "qos.switch enforce" : "enforce", bad);
      ret = finding_refuse (first, err);
    }
  else if (bad)
    roce_log (ROCE_LOG_WARN,
              "qos gate (%s): starting although the host is not proven lossless: %zu finding(s)",
              qos_mode_name (p->qos.mode), bad);
  else
    roce_log (ROCE_LOG_INFO, "qos gate (%s): %zu check(s) passed", qos_mode_name (p->qos.mode),
              f.n);

out:
  findings_clear (&f);
  for (size_t i = 0; i < k; i++)
    qos_probe_clear (&probes[i]);
  return ret;
}
