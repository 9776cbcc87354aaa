/* SPDX-License-Identifier: Apache-2.0 */
/* Netlink, the one module: the socket every caller uses, one receive loop
 * with a timeout, extended acks; links, addresses, routes, rules, nsids.  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/if.h>
#include <linux/if_ether.h>
#include <linux/neighbour.h>
#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/netlink.h>
#include <linux/net_namespace.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/macvlan.h>
#include <netlink/route/rule.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>

#include "lib/utils.h"
#include "sys/netlink.h"
#include "sys/netns.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/* ---- cleanup for libnl objects ------------------------------------------ */

static void
cleanup_rtnl_linkp (struct rtnl_link **l)
{
  if (*l)
    rtnl_link_put (*l);
  *l = NULL;
}

static void
cleanup_rtnl_addrp (struct rtnl_addr **a)
{
  if (*a)
    rtnl_addr_put (*a);
  *a = NULL;
}

static void
cleanup_rtnl_routep (struct rtnl_route **r)
{
  if (*r)
    rtnl_route_put (*r);
  *r = NULL;
}

static void
cleanup_nl_addrp (struct nl_addr **a)
{
  if (*a)
    nl_addr_put (*a);
  *a = NULL;
}

#define cleanup_rtnl_link __attribute__ ((cleanup (cleanup_rtnl_linkp)))
#define cleanup_rtnl_addr __attribute__ ((cleanup (cleanup_rtnl_addrp)))
#define cleanup_rtnl_route __attribute__ ((cleanup (cleanup_rtnl_routep)))
#define cleanup_nl_addr __attribute__ ((cleanup (cleanup_nl_addrp)))

void
netlink_close (struct nl_sock *s)
{
  if (s)
    nl_socket_free (s);
}

void
cleanup_nl_sockp (struct nl_sock **s)
{
  netlink_close (*s);
  *s = NULL;
}

int
netlink_fd (struct nl_sock *s)
{
  return nl_socket_get_fd (s);
}

/* ---- the transport: one socket set-up, one receive, one ext-ack parser ---- */

void
nlmsg_freep (struct nl_msg **m)
{
  if (*m)
    nlmsg_free (*m);
  *m = NULL;
}

char *
netlink_errno_text (int errnum)
{
  const char *name = strerrorname_np (errnum);
  if (name)
    return xasprintf ("%s (%s)", strerror (errnum), name);
  return xasprintf ("%s (errno %d)", strerror (errnum), errnum);
}

#define NETLINK_RECV_BUF (64 * 1024)

int
netlink_open_proto (int protocol, int netns_fd, struct nl_sock **out, roce_error_t *err)
{
  struct sockaddr_nl local = { .nl_family = AF_NETLINK };
  struct timeval tv = { .tv_sec = NETLINK_TIMEOUT_S };
  cleanup_close int fd = -1;
  cleanup_nl_sock struct nl_sock *sk = NULL;
  int one = 1, saved = -1, ret, e;

  /* The socket is made here, not by nl_connect(), so that the kernel's errno
   * survives (libnl folds it into its own codes): NETLINK_RDMA answers
   * EPROTONOSUPPORT on a kernel without RDMA.  In netns_fd's namespace when
   * given: entered only while the socket is made, it stays bound there.  */
  if (netns_fd >= 0 && netns_enter (netns_fd, &saved, err) < 0)
    return -1;
  fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  e = errno;
  netns_leave (&saved);
  if (fd < 0)
    return roce_error_sys (err, e, "netlink socket (protocol %d)", protocol);
  /* Port 0: the kernel picks a unique one.  */
  if (bind (fd, (struct sockaddr *) &local, sizeof (local)) < 0)
    return roce_error_sys (err, errno, "bind netlink socket");
  /* Best effort: older kernels lack them, which only costs the kernel's text.  */
  (void) setsockopt (fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof (one));
  (void) setsockopt (fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof (one));
  /* A hook never waits on the kernel past this.  */
  if (setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv)) < 0)
    return roce_error_sys (err, errno, "netlink socket timeout");

  sk = nl_socket_alloc ();
  if (sk == NULL)
    return roce_error_make (err, ENOMEM, "nl_socket_alloc");
  ret = nl_socket_set_fd (sk, protocol, fd);
  if (ret < 0)
    return roce_error_make (err, EINVAL, "netlink socket: %s", nl_geterror (ret));
  steal_fd (&fd); /* the nl_sock owns it now */
  /* One recvmsg a message into a buffer no netlink message here comes near
   * (DCB replies outgrow a page; a dump's skb is at most 32 KiB): peeking
   * first cost a second recvmsg for every message.  A larger one would be
   * an error (NLE_MSG_TRUNC), never cut short.  */
  nl_socket_disable_msg_peek (sk);
  if (nl_socket_set_msg_buf_size (sk, NETLINK_RECV_BUF) < 0)
    return roce_error_make (err, ENOMEM, "netlink receive buffer");
  *out = steal_pointer (&sk);
  return 0;
}

int
netlink_open (int netns_fd, struct nl_sock **out, roce_error_t *err)
{
  return netlink_open_proto (NETLINK_ROUTE, netns_fd, out, err);
}

int
netlink_netns_new (int *out, struct nl_sock **sock, roce_error_t *err)
{
  cleanup_close int self = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  cleanup_error roce_error_t serr = NULL;
  int fd, e, made = -1;

  if (self < 0)
    return roce_error_sys (err, errno, "open `/proc/thread-self/ns/net`");
  if (unshare (CLONE_NEWNET) < 0)
    return roce_error_sys (err, errno, "unshare a network namespace");
  fd = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  e = errno;
  if (fd >= 0)
    made = netlink_open (-1, sock, &serr);
  /* Back, or abort: nothing else may run in the new namespace.  */
  netns_leave (&self);
  if (fd < 0)
    return roce_error_sys (err, e, "open the new network namespace");
  if (made < 0)
    {
      close (fd);
      *err = steal_pointer (&serr);
      return roce_error_wrap (err, "in the new network namespace");
    }
  *out = fd;
  return 0;
}

int
netlink_send (struct nl_sock *sk, struct nl_msg *msg, uint32_t *seq, roce_error_t *err)
{
  int ret = nl_send_auto (sk, msg);
  if (ret < 0)
    return roce_error_make (err, EIO, "netlink send: %s", nl_geterror (ret));
  *seq = nlmsg_hdr (msg)->nlmsg_seq;
  return 0;
}

int
netlink_send_aside (struct nl_sock *sk, struct nl_msg *msg, uint32_t *seq, roce_error_t *err)
{
  /* Set before libnl completes the message: libnl then leaves its own
   * counter alone.  */
  nlmsg_hdr (msg)->nlmsg_seq = NETLINK_ASIDE_SEQ;
  return netlink_send (sk, msg, seq, err);
}

int
netlink_recv (struct nl_sock *sk, unsigned char **buf, size_t *len, roce_error_t *err)
{
  for (;;)
    {
      struct sockaddr_nl peer = { 0 };
      unsigned char *b = NULL;
      int n = nl_recv (sk, &peer, &b, NULL);
      if (n == -NLE_INTR)
        continue;
      if (n == -NLE_AGAIN)
        return roce_error_make (err, ETIMEDOUT, "no answer from the kernel in %d s",
                                NETLINK_TIMEOUT_S);
      if (n < 0)
        return roce_error_make (err, EIO, "netlink receive: %s", nl_geterror (n));
      if (n == 0)
        {
          free (b);
          return roce_error_make (err, EIO, "netlink receive: end of stream");
        }
      if (peer.nl_pid != 0)
        {
          /* Not from the kernel: ignore.  */
          free (b);
          continue;
        }
      *buf = b;
      *len = (size_t) n;
      return 0;
    }
}

const char *
netlink_ext_ack_msg (const struct nlmsghdr *nlh)
{
  static const struct nla_policy policy[NLMSGERR_ATTR_MAX + 1] = {
    [NLMSGERR_ATTR_MSG] = { .type = NLA_STRING },
  };
  struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
  const struct nlmsgerr *e;
  size_t payload, off;

  if (! (nlh->nlmsg_flags & NLM_F_ACK_TLVS))
    return NULL;
  payload = nlh->nlmsg_len - NLMSG_HDRLEN;
  if (nlh->nlmsg_len < NLMSG_HDRLEN || payload < sizeof (struct nlmsgerr))
    return NULL;
  e = NLMSG_DATA (nlh);
  off = sizeof (struct nlmsgerr);
  if (! (nlh->nlmsg_flags & NLM_F_CAPPED))
    {
      /* The whole request is echoed; the TLVs follow it.  */
      if (e->msg.nlmsg_len < sizeof (struct nlmsghdr))
        return NULL;
      off = sizeof (int) + NLMSG_ALIGN (e->msg.nlmsg_len);
    }
  off = NLMSG_ALIGN (off);
  if (off >= payload)
    return NULL;
  if (nla_parse (tb, NLMSGERR_ATTR_MAX, (struct nlattr *) ((char *) NLMSG_DATA (nlh) + off),
                 (int) (payload - off), policy)
      < 0)
    return NULL;
  if (tb[NLMSGERR_ATTR_MSG] == NULL)
    return NULL;
  return nla_get_string (tb[NLMSGERR_ATTR_MSG]);
}

/* ---- the kernel's answer to a libnl-route request -------------------------------- */

/* What the kernel said about the last request: its errno and, with
 * NETLINK_EXT_ACK, its text.  */
struct ack
{
  int error;
  char text[256];
};

static int
ack_err_cb (struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
  /* libnl hands over the payload of the NLMSG_ERROR message; its header is
   * just before it.  */
  const struct nlmsghdr *nlh = (const struct nlmsghdr *) ((char *) e - NLMSG_HDRLEN);
  const char *text = netlink_ext_ack_msg (nlh);
  struct ack *a = arg;

  (void) nla;
  a->error = e->error < 0 ? -e->error : e->error;
  if (text)
    snprintf (a->text, sizeof (a->text), "%s", text); /* the kernel's text, cut if it must be */
  return NL_STOP;
}

static void
ack_arm (struct nl_sock *s, struct ack *a)
{
  struct nl_cb *cb = nl_socket_get_cb (s);
  memset (a, 0, sizeof (*a));
  nl_cb_err (cb, NL_CB_CUSTOM, ack_err_cb, a);
  nl_cb_put (cb);
}

static void
ack_disarm (struct nl_sock *s)
{
  struct nl_cb *cb = nl_socket_get_cb (s);
  nl_cb_err (cb, NL_CB_DEFAULT, NULL, NULL);
  nl_cb_put (cb);
}

static int nl_fail (int nlerr, const struct ack *a, roce_error_t *err, const char *fmt, ...)
    ROCE_PRINTF (4, 5);

static int
nl_fail (int nlerr, const struct ack *a, roce_error_t *err, const char *fmt, ...)
{
  cleanup_free char *what = NULL;
  va_list ap;

  va_start (ap, fmt);
  what = xvasprintf (fmt, ap);
  va_end (ap);
  if (a && a->error && a->text[0])
    return roce_error_make (err, a->error, "%s: %s (kernel: %s)", what, strerror (a->error),
                            a->text);
  if (a && a->error)
    return roce_error_sys (err, a->error, "%s", what);
  if (nlerr == -NLE_AGAIN)
    return roce_error_make (err, ETIMEDOUT, "%s: no answer from the kernel in %d s", what,
                            NETLINK_TIMEOUT_S);
  return roce_error_make (err, EPROTO, "%s: netlink: %s", what, nl_geterror (nlerr));
}

/* ---- links ------------------------------------------------------------------ */

static int request (struct nl_sock *sk, struct nl_msg *m, int type,
                    int (*fn) (struct nlmsghdr *nlh, void *arg), void *arg, int *kerr,
                    roce_error_t *err);

#ifndef RTEXT_FILTER_SKIP_STATS
#define RTEXT_FILTER_SKIP_STATS (1 << 3)
#endif

static int
link_reply (struct nlmsghdr *nlh, void *arg)
{
  static const struct nla_policy policy[IFLA_MAX + 1] = {
    [IFLA_MTU] = { .type = NLA_U32 },
  };
  struct netlink_link *out = arg;
  struct nlattr *tb[IFLA_MAX + 1];
  const struct ifinfomsg *ifi;

  if (nlh->nlmsg_len < NLMSG_LENGTH (sizeof (*ifi))
      || nlmsg_parse (nlh, sizeof (*ifi), tb, IFLA_MAX, (struct nla_policy *) policy) < 0
      || tb[IFLA_MTU] == NULL)
    return -1;
  ifi = nlmsg_data (nlh);
  out->ifindex = ifi->ifi_index;
  out->mtu = nla_get_u32 (tb[IFLA_MTU]);
  out->flags = ifi->ifi_flags;
  return 0;
}

/* RTM_GETLINK by name, for its index, MTU and flags alone: without the
 * statistics, and without libnl-route's RTEXT_FILTER_VF, which has the kernel
 * add every VF of an SR-IOV PF (its config, and its counters, a firmware
 * query a VF on mlx5) to the answer.  */
int
netlink_link_get (struct nl_sock *s, const char *name, struct netlink_link *out, roce_error_t *err)
{
  struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
  cleanup_nlmsg struct nl_msg *m = nlmsg_alloc_simple (RTM_GETLINK, NLM_F_REQUEST);
  int kerr;

  /* No link has a longer name (an altname may, but is not looked up by
   * IFLA_IFNAME); the kernel would say EINVAL.  */
  if (strnlen (name, IFNAMSIZ) >= IFNAMSIZ)
    return roce_error_make (err, ENODEV,
                            "link %s: no such interface (an interface's name has at most %d bytes)",
                            name, IFNAMSIZ - 1);
  if (m == NULL || nlmsg_append (m, &ifi, sizeof (ifi), NLMSG_ALIGNTO) < 0
      || nla_put_string (m, IFLA_IFNAME, name) < 0
      || nla_put_u32 (m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
    abort ();
  memset (out, 0, sizeof (*out));
  if (request (s, m, RTM_NEWLINK, link_reply, out, &kerr, err) < 0)
    return roce_error_wrap (err, "link %s", name);
  if (kerr == ENODEV)
    return roce_error_make (err, ENODEV, "link %s: no such interface", name);
  if (kerr)
    return roce_error_sys (err, kerr, "link %s", name);
  if (out->ifindex <= 0)
    return roce_error_make (err, EBADMSG, "link %s: an answer without the link", name);
  return 0;
}

int
netlink_macvlan_add (struct nl_sock *s, int parent_ifindex, const char *name, unsigned mtu,
                     int netns_fd, roce_error_t *err)
{
  cleanup_rtnl_link struct rtnl_link *l = rtnl_link_macvlan_alloc ();
  struct ack a;
  int r;

  if (l == NULL)
    abort ();
  rtnl_link_set_name (l, name);
  rtnl_link_set_link (l, parent_ifindex);
  rtnl_link_set_mtu (l, mtu);
  rtnl_link_set_ns_fd (l, netns_fd);
  rtnl_link_set_flags (l, IFF_UP);
  if ((r = rtnl_link_macvlan_set_mode (l, MACVLAN_MODE_BRIDGE)) < 0)
    return nl_fail (r, NULL, err, "macvlan %s", name);
  ack_arm (s, &a);
  r = rtnl_link_add (s, l, NLM_F_CREATE | NLM_F_EXCL);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &a, err, "create macvlan %s", name);
  return 0;
}

int
netlink_macvlan_create (struct nl_sock *s, const struct netlink_macvlan *m, roce_error_t *err)
{
  cleanup_rtnl_link struct rtnl_link *l = rtnl_link_macvlan_alloc ();
  cleanup_nl_addr struct nl_addr *mac = NULL;
  struct ack a;
  int r;

  if (l == NULL)
    abort ();
  rtnl_link_set_name (l, m->name);
  rtnl_link_set_link (l, m->parent_ifindex);
  rtnl_link_set_mtu (l, m->mtu);
  rtnl_link_set_ns_fd (l, m->netns_fd);
  if (m->up)
    rtnl_link_set_flags (l, IFF_UP);
  if (m->has_mac)
    {
      /* IFLA_ADDRESS at creation: the link never has another MAC.  */
      mac = nl_addr_build (AF_LLC, m->mac, 6);
      if (mac == NULL)
        abort ();
      rtnl_link_set_addr (l, mac);
    }
  if ((r = rtnl_link_macvlan_set_mode (l, MACVLAN_MODE_BRIDGE)) < 0)
    return nl_fail (r, NULL, err, "macvlan %s", m->name);
  ack_arm (s, &a);
  r = rtnl_link_add (s, l, NLM_F_CREATE | NLM_F_EXCL);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &a, err, "create macvlan %s", m->name);
  return 0;
}

/* RTM_NEWLINK on an existing ifindex with what `changes` holds.  */
static int
link_change (struct nl_sock *s, int ifindex, struct rtnl_link *changes, roce_error_t *err,
             const char *what)
{
  cleanup_rtnl_link struct rtnl_link *orig = rtnl_link_alloc ();
  struct ack a;
  int r;

  if (orig == NULL)
    abort ();
  rtnl_link_set_ifindex (orig, ifindex);
  ack_arm (s, &a);
  r = rtnl_link_change (s, orig, changes, 0);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &a, err, "%s of link %d", what, ifindex);
  return 0;
}

int
netlink_link_set_up (struct nl_sock *s, int ifindex, roce_error_t *err)
{
  cleanup_rtnl_link struct rtnl_link *c = rtnl_link_alloc ();
  if (c == NULL)
    abort ();
  rtnl_link_set_flags (c, IFF_UP);
  return link_change (s, ifindex, c, err, "set up");
}

int
netlink_link_set_devconf (struct nl_sock *s, int ifindex, const struct netlink_devconf *d,
                          roce_error_t *err)
{
  const struct
  {
    unsigned id;
    int value;
  } conf[] = {
    { IPV4_DEVCONF_ARP_NOTIFY, d->arp_notify },
    { IPV4_DEVCONF_ARP_IGNORE, d->arp_ignore },
    { IPV4_DEVCONF_ARP_ANNOUNCE, d->arp_announce },
    { IPV4_DEVCONF_RP_FILTER, d->rp_filter },
  };
  cleanup_rtnl_link struct rtnl_link *c = rtnl_link_alloc ();
  bool any = false;
  int r;

  if (c == NULL)
    abort ();
  for (size_t i = 0; i < sizeof (conf) / sizeof (conf[0]); i++)
    {
      if (conf[i].value < 0)
        continue;
      if ((r = rtnl_link_inet_set_conf (c, conf[i].id, (uint32_t) conf[i].value)) < 0)
        return nl_fail (r, NULL, err, "devconf %u of link %d", conf[i].id, ifindex);
      any = true;
    }
  if (! any)
    return 0;
  return link_change (s, ifindex, c, err, "IPv4 devconf (IFLA_AF_SPEC)");
}

int
netlink_link_set_addr_gen_mode (struct nl_sock *s, int ifindex, unsigned mode, roce_error_t *err)
{
  cleanup_rtnl_link struct rtnl_link *c = rtnl_link_alloc ();
  int r;

  if (c == NULL)
    abort ();
  if ((r = rtnl_link_inet6_set_addr_gen_mode (c, (uint8_t) mode)) < 0)
    return nl_fail (r, NULL, err, "addr_gen_mode of link %d", ifindex);
  return link_change (s, ifindex, c, err, "IPv6 addr_gen_mode (IFLA_AF_SPEC)");
}

int
netlink_link_del (struct nl_sock *s, int ifindex, roce_error_t *err)
{
  cleanup_rtnl_link struct rtnl_link *l = rtnl_link_alloc ();
  struct ack a;
  int r;

  if (l == NULL)
    abort ();
  rtnl_link_set_ifindex (l, ifindex);
  ack_arm (s, &a);
  r = rtnl_link_delete (s, l);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &a, err, "delete link %d", ifindex);
  return 0;
}

/* ---- addresses and routes ------------------------------------------------------ */

static struct nl_addr *
ip_nl_addr (const struct roce_addr *a, unsigned prefix)
{
  uint8_t b[16];
  size_t n = addr_bytes (a, b);
  struct nl_addr *na = nl_addr_build (a->family, b, n);
  if (na == NULL)
    abort ();
  nl_addr_set_prefixlen (na, (int) prefix);
  return na;
}

int
netlink_addr_add (struct nl_sock *s, int ifindex, const struct roce_addr *addr, unsigned prefix,
                  roce_error_t *err)
{
  cleanup_rtnl_addr struct rtnl_addr *a = rtnl_addr_alloc ();
  cleanup_nl_addr struct nl_addr *local = ip_nl_addr (addr, prefix);
  char buf[ADDR_STR_MAX];
  struct ack ack;
  int r;

  if (a == NULL)
    abort ();
  rtnl_addr_set_ifindex (a, ifindex);
  rtnl_addr_set_family (a, addr->family);
  if ((r = rtnl_addr_set_local (a, local)) < 0)
    return nl_fail (r, NULL, err, "address %s/%u", addr_format (addr, buf), prefix);
  rtnl_addr_set_prefixlen (a, (int) prefix);
  /* No tentative state for the workload to meet: the duplicate probe, when
   * the policy asks for one, ran before (ndisc.h).  */
  if (addr->family == AF_INET6)
    rtnl_addr_set_flags (a, IFA_F_NODAD);
  ack_arm (s, &ack);
  r = rtnl_addr_add (s, a, NLM_F_EXCL);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &ack, err, "add address %s/%u", addr_format (addr, buf), prefix);
  return 0;
}

int
netlink_route_add (struct nl_sock *s, int ifindex, const struct roce_cidr *dst,
                   const struct roce_addr *gw, roce_error_t *err)
{
  return netlink_route_add_table (s, ifindex, dst, gw, NULL, RT_TABLE_MAIN, err);
}

int
netlink_route_add_table (struct nl_sock *s, int ifindex, const struct roce_cidr *dst,
                         const struct roce_addr *gw, const struct roce_addr *src, unsigned table,
                         roce_error_t *err)
{
  unsigned bits = addr_bits (dst->addr.family);
  cleanup_rtnl_route struct rtnl_route *rt = rtnl_route_alloc ();
  cleanup_nl_addr struct nl_addr *d = ip_nl_addr (&dst->addr, dst->prefix);
  cleanup_nl_addr struct nl_addr *g = gw ? ip_nl_addr (gw, bits) : NULL;
  cleanup_nl_addr struct nl_addr *pref = src ? ip_nl_addr (src, bits) : NULL;
  struct rtnl_nexthop *nh = rtnl_route_nh_alloc ();
  char c[CIDR_STR_MAX], b[ADDR_STR_MAX];
  struct ack a;
  int r;

  if (rt == NULL || nh == NULL)
    abort ();
  rtnl_route_nh_set_ifindex (nh, ifindex);
  if (g)
    rtnl_route_nh_set_gateway (nh, g);
  rtnl_route_add_nexthop (rt, nh); /* owns nh now */
  rtnl_route_set_family (rt, (uint8_t) dst->addr.family);
  if ((r = rtnl_route_set_dst (rt, d)) < 0)
    return nl_fail (r, NULL, err, "route %s", cidr_format (dst, c));
  if (pref && (r = rtnl_route_set_pref_src (rt, pref)) < 0)
    return nl_fail (r, NULL, err, "route %s", cidr_format (dst, c));
  rtnl_route_set_table (rt, table);
  rtnl_route_set_protocol (rt, RTPROT_STATIC);
  rtnl_route_set_scope (rt, g ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK);
  rtnl_route_set_type (rt, RTN_UNICAST);
  ack_arm (s, &a);
  r = rtnl_route_add (s, rt, NLM_F_EXCL);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &a, err, "add route %s via %s in table %u", cidr_format (dst, c),
                    g ? addr_format (gw, b) : "the link", table);
  return 0;
}

static void
cleanup_rtnl_rulep (struct rtnl_rule **r)
{
  if (*r)
    rtnl_rule_put (*r);
  *r = NULL;
}

/* RTM_NEWRULE or RTM_DELRULE of `from <src>/32 lookup <table>` (/128) at
 * prio.  */
static int
rule_from (struct nl_sock *s, bool add, const struct roce_addr *src, unsigned table, unsigned prio,
           roce_error_t *err)
{
  __attribute__ ((cleanup (cleanup_rtnl_rulep))) struct rtnl_rule *rule = rtnl_rule_alloc ();
  cleanup_nl_addr struct nl_addr *from = ip_nl_addr (src, addr_bits (src->family));
  char b[ADDR_STR_MAX];
  struct ack a;
  int r;

  if (rule == NULL)
    abort ();
  rtnl_rule_set_family (rule, src->family);
  if ((r = rtnl_rule_set_src (rule, from)) < 0)
    return nl_fail (r, NULL, err, "rule from %s", addr_format (src, b));
  rtnl_rule_set_table (rule, table);
  rtnl_rule_set_prio (rule, prio);
  rtnl_rule_set_action (rule, FR_ACT_TO_TBL);
  ack_arm (s, &a);
  r = add ? rtnl_rule_add (s, rule, NLM_F_EXCL) : rtnl_rule_delete (s, rule, 0);
  ack_disarm (s);
  if (r < 0)
    return nl_fail (r, &a, err, "%s rule from %s lookup %u", add ? "add" : "delete",
                    addr_format (src, b), table);
  return 0;
}

int
netlink_rule_add_from (struct nl_sock *s, const struct roce_addr *src, unsigned table,
                       unsigned prio, roce_error_t *err)
{
  return rule_from (s, true, src, table, prio, err);
}

int
netlink_rule_del_from (struct nl_sock *s, const struct roce_addr *src, unsigned table,
                       unsigned prio, roce_error_t *err)
{
  return rule_from (s, false, src, table, prio, err);
}

/* ---- the host's ids for other namespaces (nsid) ----------------------------------- */

/* One request, its answer read whole, through the ack (the socket may be
 * one libnl-route calls share: netlink_send_aside): the NLMSG_ERROR's errno
 * (0 for an ack), and each reply of `type` handed to fn.  A dump ends at
 * NLMSG_DONE.  A reply fn cannot read fails the request only once its answer
 * is read to the end: what is left of it would be taken for the answer to the
 * next request on the socket (they share one seq).  */
static int
request (struct nl_sock *sk, struct nl_msg *m, int type,
         int (*fn) (struct nlmsghdr *nlh, void *arg), void *arg, int *kerr, roce_error_t *err)
{
  uint32_t seq = 0;
  bool dump = nlmsg_hdr (m)->nlmsg_flags & NLM_F_DUMP, acked, malformed = false;

  *kerr = 0;
  if (netlink_send_aside (sk, m, &seq, err) < 0)
    return -1;
  acked = nlmsg_hdr (m)->nlmsg_flags & NLM_F_ACK;
  for (;;)
    {
      cleanup_free unsigned char *buf = NULL;
      size_t len = 0;
      int rem;
      struct nlmsghdr *nlh;

      if (netlink_recv (sk, &buf, &len, err) < 0)
        return -1;
      if (len > INT32_MAX)
        return roce_error_make (err, EBADMSG, "netlink: oversized datagram");
      rem = (int) len;
      for (nlh = (struct nlmsghdr *) buf; nlmsg_ok (nlh, rem); nlh = nlmsg_next (nlh, &rem))
        {
          if (nlh->nlmsg_seq != seq)
            continue;
          if (nlh->nlmsg_type == NLMSG_ERROR)
            {
              const struct nlmsgerr *e = nlmsg_data (nlh);
              if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof (*e))
                return roce_error_make (err, EBADMSG, "netlink: truncated error");
              *kerr = e->error < 0 ? -e->error : 0;
              goto end;
            }
          if (nlh->nlmsg_type == NLMSG_DONE)
            {
              /* A dump that failed says why in its end.  */
              if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof (int))
                {
                  int e;
                  memcpy (&e, nlmsg_data (nlh), sizeof (e));
                  *kerr = e < 0 ? -e : 0;
                }
              goto end;
            }
          if (nlh->nlmsg_type == type && ! malformed && fn (nlh, arg) < 0)
            malformed = true;
          if (! dump && ! acked && nlh->nlmsg_type == type)
            goto end;
        }
    }
end:
  if (malformed)
    return roce_error_make (err, EBADMSG, "netlink: malformed reply");
  return 0;
}

static int
nsid_reply (struct nlmsghdr *nlh, void *arg)
{
  static const struct nla_policy policy[NETNSA_MAX + 1] = {
    [NETNSA_NSID] = { .type = NLA_S32 },
  };
  struct nlattr *tb[NETNSA_MAX + 1];
  if (nlmsg_parse (nlh, sizeof (struct rtgenmsg), tb, NETNSA_MAX, (struct nla_policy *) policy) < 0
      || tb[NETNSA_NSID] == NULL)
    return -1;
  *(int32_t *) arg = nla_get_s32 (tb[NETNSA_NSID]);
  return 0;
}

static struct nl_msg *
nsid_msg (int type, int netns_fd, bool assign)
{
  struct rtgenmsg g = { .rtgen_family = AF_UNSPEC };
  struct nl_msg *m = nlmsg_alloc_simple (type, NLM_F_REQUEST | (assign ? NLM_F_ACK : 0));
  if (m == NULL || nlmsg_append (m, &g, sizeof (g), NLMSG_ALIGNTO) < 0
      || nla_put_u32 (m, NETNSA_FD, (uint32_t) netns_fd) < 0
      || (assign && nla_put_s32 (m, NETNSA_NSID, -1) < 0))
    abort ();
  return m;
}

int
netlink_nsid_of (int netns_fd, int32_t *nsid, roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *host = NULL;

  if (netlink_open (-1, &host, err) < 0)
    return -1;
  return netlink_nsid_on (host, netns_fd, nsid, err);
}

int
netlink_nsid_on (struct nl_sock *host, int netns_fd, int32_t *nsid, roce_error_t *err)
{
  cleanup_nlmsg struct nl_msg *set = nsid_msg (RTM_NEWNSID, netns_fd, true);
  cleanup_nlmsg struct nl_msg *get = nsid_msg (RTM_GETNSID, netns_fd, false);
  int kerr;

  /* The kernel picks one where there is none (EEXIST: there is one, or
   * another hook just took it), then says which: two round trips.  */
  *nsid = -1;
  if (request (host, set, RTM_NEWNSID, nsid_reply, nsid, &kerr, err) < 0)
    return roce_error_wrap (err, "an id for the container's network namespace");
  if (kerr && kerr != EEXIST)
    return roce_error_sys (err, kerr, "an id for the container's network namespace");
  *nsid = -1;
  if (request (host, get, RTM_NEWNSID, nsid_reply, nsid, &kerr, err) < 0)
    return roce_error_wrap (err, "the host's id of the container's network namespace");
  if (kerr)
    return roce_error_sys (err, kerr, "the host's id of the container's network namespace");
  if (*nsid < 0)
    return roce_error_make (err, EAGAIN,
                            "the container's network namespace has no id after assigning one");
  return 0;
}

struct addr_find
{
  const struct roce_addr *addr;
  const char *ifname;
  int ifindex; /* IPv6 answers carry no label: the link's index, found first */
  bool found;
};

static int
addr_reply (struct nlmsghdr *nlh, void *arg)
{
  static const struct nla_policy policy[IFA_MAX + 1] = {
    [IFA_LOCAL] = { .minlen = 4 },
    [IFA_ADDRESS] = { .minlen = 4 },
    [IFA_LABEL] = { .type = NLA_STRING, .maxlen = IFNAMSIZ },
  };
  struct addr_find *f = arg;
  struct nlattr *tb[IFA_MAX + 1];
  const struct ifaddrmsg *ifa;
  const struct nlattr *at;
  struct roce_addr a;
  size_t len = f->addr->family == AF_INET ? 4 : 16;

  if (nlh->nlmsg_len < NLMSG_LENGTH (sizeof (*ifa))
      || nlmsg_parse (nlh, sizeof (*ifa), tb, IFA_MAX, (struct nla_policy *) policy) < 0)
    return -1;
  ifa = nlmsg_data (nlh);
  /* IPv4 says its local address in IFA_LOCAL and its link in IFA_LABEL,
   * IPv6 in IFA_ADDRESS and by index alone.  */
  at = f->addr->family == AF_INET ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  if (ifa->ifa_family != f->addr->family || at == NULL || (size_t) nla_len (at) != len)
    return 0;
  addr_from_bytes (f->addr->family, nla_data (at), &a);
  if (! addr_eq (&a, f->addr))
    return 0;
  if (f->addr->family == AF_INET
          ? tb[IFA_LABEL] && strcmp (nla_get_string (tb[IFA_LABEL]), f->ifname) == 0
          : (int) ifa->ifa_index == f->ifindex)
    f->found = true;
  return 0;
}

struct link_find
{
  const char *ifname;
  int ifindex;
};

static int
link_name_reply (struct nlmsghdr *nlh, void *arg)
{
  static const struct nla_policy policy[IFLA_MAX + 1] = {
    [IFLA_IFNAME] = { .type = NLA_STRING, .maxlen = IFNAMSIZ },
  };
  struct link_find *f = arg;
  struct nlattr *tb[IFLA_MAX + 1];
  if (nlh->nlmsg_len < NLMSG_LENGTH (sizeof (struct ifinfomsg))
      || nlmsg_parse (nlh, sizeof (struct ifinfomsg), tb, IFLA_MAX, (struct nla_policy *) policy)
             < 0)
    return -1;
  if (tb[IFLA_IFNAME] && strcmp (nla_get_string (tb[IFLA_IFNAME]), f->ifname) == 0)
    f->ifindex = ((const struct ifinfomsg *) nlmsg_data (nlh))->ifi_index;
  return 0;
}

/* The index of ifname in the namespace the host knows as nsid: 0 none
 * there, < 0 the request's error (EINVAL: no such namespace).  */
static int
ifindex_in_nsid (struct nl_sock *host, int32_t nsid, const char *ifname, int *kerr,
                 roce_error_t *err)
{
  struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
  cleanup_nlmsg struct nl_msg *m = nlmsg_alloc_simple (RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP);
  struct link_find f = { .ifname = ifname };

  if (m == NULL || nlmsg_append (m, &ifi, sizeof (ifi), NLMSG_ALIGNTO) < 0
      || nla_put_s32 (m, IFLA_TARGET_NETNSID, nsid) < 0
      || nla_put_u32 (m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
    abort ();
  if (request (host, m, RTM_NEWLINK, link_name_reply, &f, kerr, err) < 0)
    return -1;
  return f.ifindex;
}

int
netlink_addr_in_nsid (struct nl_sock *host, int32_t nsid, const struct roce_addr *addr,
                      const char *ifname, roce_error_t *err)
{
  struct ifaddrmsg ifa = { .ifa_family = (uint8_t) addr->family };
  cleanup_nlmsg struct nl_msg *m = nlmsg_alloc_simple (RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
  struct addr_find f = { .addr = addr, .ifname = ifname };
  int kerr, one = 1;

  /* Without strict checking the kernel ignores IFA_TARGET_NETNSID and dumps
   * the caller's own namespace.  */
  if (setsockopt (netlink_fd (host), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof (one)) < 0)
    return roce_error_sys (err, errno, "netlink strict checking");
  if (m == NULL || nlmsg_append (m, &ifa, sizeof (ifa), NLMSG_ALIGNTO) < 0
      || nla_put_s32 (m, IFA_TARGET_NETNSID, nsid) < 0)
    abort ();
  if (addr->family == AF_INET6)
    {
      f.ifindex = ifindex_in_nsid (host, nsid, ifname, &kerr, err);
      if (f.ifindex < 0)
        return roce_error_wrap (err, "links of namespace id %d", (int) nsid);
      if (kerr == EINVAL || kerr == ENOENT)
        return 0;
      if (kerr)
        return roce_error_sys (err, kerr, "links of namespace id %d", (int) nsid);
      if (f.ifindex == 0)
        return 2;
    }
  if (request (host, m, RTM_NEWADDR, addr_reply, &f, &kerr, err) < 0)
    return roce_error_wrap (err, "addresses of namespace id %d", (int) nsid);
  /* EINVAL: no namespace has that id (any more): it is gone.  */
  if (kerr == EINVAL || kerr == ENOENT)
    return 0;
  if (kerr)
    return roce_error_sys (err, kerr, "addresses of namespace id %d", (int) nsid);
  /* Found: alive.  Not found in a namespace that exists: it cannot be
   * told here (another namespace may hold the id, or a tenant renamed the
   * interface or removed the address): the caller asks the slow way.  */
  return f.found ? 1 : 2;
}

struct id_list
{
  int32_t *v;
  size_t n;
};

static int
nsid_dump_reply (struct nlmsghdr *nlh, void *arg)
{
  struct id_list *l = arg;
  int32_t id = -1;
  if (nsid_reply (nlh, &id) < 0)
    return -1;
  l->v = xrealloc (l->v, (l->n + 1) * sizeof (*l->v));
  l->v[l->n++] = id;
  return 0;
}

static int
cmp_s32 (const void *a, const void *b)
{
  int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
  return x < y ? -1 : x > y;
}

int
netlink_nsids (struct nl_sock *host, int32_t **ids, size_t *n, roce_error_t *err)
{
  struct rtgenmsg g = { .rtgen_family = AF_UNSPEC };
  cleanup_nlmsg struct nl_msg *m = nlmsg_alloc_simple (RTM_GETNSID, NLM_F_REQUEST | NLM_F_DUMP);
  struct id_list l = { 0 };
  int kerr;

  if (m == NULL || nlmsg_append (m, &g, sizeof (g), NLMSG_ALIGNTO) < 0)
    abort ();
  if (request (host, m, RTM_NEWNSID, nsid_dump_reply, &l, &kerr, err) < 0 || kerr)
    {
      free (l.v);
      if (*err)
        return roce_error_wrap (err, "the host's namespace ids");
      return roce_error_sys (err, kerr, "the host's namespace ids");
    }
  qsort (l.v, l.n, sizeof (*l.v), cmp_s32);
  *ids = l.v;
  *n = l.n;
  return 0;
}

bool
netlink_nsids_has (const int32_t *ids, size_t n, int32_t id)
{
  return bsearch (&id, ids, n, sizeof (*ids), cmp_s32) != NULL;
}

int
netlink_nsid_watch (struct nl_sock **out, roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *w = NULL;
  int group = RTNLGRP_NSID;

  if (netlink_open (-1, &w, err) < 0)
    return -1;
  if (setsockopt (netlink_fd (w), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof (group)) < 0)
    return roce_error_sys (err, errno, "netlink: listen for namespace ids");
  *out = steal_pointer (&w);
  return 0;
}

int
netlink_nsid_forgotten (struct nl_sock *watch, int32_t nsid, int wait_ms)
{
  int fd = netlink_fd (watch);
  char buf[8192] __attribute__ ((aligned (NLMSG_ALIGNTO)));
  struct timespec now, end;

  clock_gettime (CLOCK_MONOTONIC, &end);
  end.tv_sec += wait_ms / 1000;
  end.tv_nsec += (long) (wait_ms % 1000) * 1000000L;
  if (end.tv_nsec >= 1000000000L)
    {
      end.tv_sec++;
      end.tv_nsec -= 1000000000L;
    }
  for (;;)
    {
      struct pollfd p = { .fd = fd, .events = POLLIN };
      struct nlmsghdr *h;
      ssize_t n;
      int r, rem, left;

      clock_gettime (CLOCK_MONOTONIC, &now);
      left = (int) ((end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000L);
      r = poll (&p, 1, left > 0 ? left : 0);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return r < 0 ? -1 : 0;
      struct sockaddr_nl from = { 0 };
      socklen_t from_len = sizeof (from);
      n = recvfrom (fd, buf, sizeof (buf), MSG_DONTWAIT, (struct sockaddr *) &from, &from_len);
      if (n < 0 && (errno == EAGAIN || errno == EINTR))
        continue;
      if (n < 0)
        return -1; /* ENOBUFS: announcements were dropped */
      if (from.nl_pid != 0)
        continue; /* only the kernel's word counts */
      rem = (int) n;
      for (h = (struct nlmsghdr *) buf; nlmsg_ok (h, rem); h = nlmsg_next (h, &rem))
        {
          int32_t gone = -1;
          /* The same message as the id's answer, parsed as it is.  */
          if (h->nlmsg_type == RTM_DELNSID && nsid_reply (h, &gone) == 0 && gone == nsid)
            return 1;
        }
    }
}

/* ---- the unicast addresses a link listens on ------------------------------ */

struct mac_find
{
  int ifindex;
  const uint8_t *mac;
  bool found;
};

/* The MAC of one entry of a link's own unicast list (NTF_SELF, not a
 * bridge master's learned entries) when the entry is ifindex's, else NULL;
 * *bad set for a message that does not parse.  */
static const uint8_t *
fdb_self_mac (struct nlmsghdr *nlh, int ifindex, bool *bad)
{
  static const struct nla_policy policy[NDA_MAX + 1] = {
    [NDA_LLADDR] = { .minlen = ETH_ALEN },
  };
  struct nlattr *tb[NDA_MAX + 1];
  const struct ndmsg *nd;

  *bad = nlh->nlmsg_len < NLMSG_LENGTH (sizeof (*nd))
         || nlmsg_parse (nlh, sizeof (*nd), tb, NDA_MAX, (struct nla_policy *) policy) < 0;
  if (*bad)
    return NULL;
  nd = nlmsg_data (nlh);
  if (nd->ndm_ifindex == ifindex && (nd->ndm_flags & NTF_SELF) && tb[NDA_LLADDR]
      && nla_len (tb[NDA_LLADDR]) == ETH_ALEN)
    return nla_data (tb[NDA_LLADDR]);
  return NULL;
}

static int
fdb_reply (struct nlmsghdr *nlh, void *arg)
{
  struct mac_find *f = arg;
  bool bad;
  const uint8_t *mac = fdb_self_mac (nlh, f->ifindex, &bad);

  if (bad)
    return -1;
  if (mac && memcmp (mac, f->mac, ETH_ALEN) == 0)
    f->found = true;
  return 0;
}

struct mac_list
{
  int ifindex;
  uint8_t (*v)[6];
  size_t n;
};

static int
fdb_dump_reply (struct nlmsghdr *nlh, void *arg)
{
  struct mac_list *l = arg;
  bool bad;
  const uint8_t *mac = fdb_self_mac (nlh, l->ifindex, &bad);

  if (bad)
    return -1;
  if (mac)
    {
      l->v = xrealloc (l->v, (l->n + 1) * sizeof (*l->v));
      memcpy (l->v[l->n++], mac, ETH_ALEN);
    }
  return 0;
}

static int
cmp_mac (const void *a, const void *b)
{
  return memcmp (a, b, ETH_ALEN);
}

int
netlink_link_macs (struct nl_sock *host, int ifindex, uint8_t (**macs)[6], size_t *n,
                   roce_error_t *err)
{
  struct ndmsg nd = { .ndm_family = AF_BRIDGE, .ndm_ifindex = ifindex };
  cleanup_nlmsg struct nl_msg *m = nlmsg_alloc_simple (RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP);
  struct mac_list l = { .ifindex = ifindex };
  int kerr, one = 1;

  if (setsockopt (netlink_fd (host), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof (one)) < 0)
    return roce_error_sys (err, errno, "netlink strict checking");
  if (m == NULL || nlmsg_append (m, &nd, sizeof (nd), NLMSG_ALIGNTO) < 0)
    abort ();
  if (request (host, m, RTM_NEWNEIGH, fdb_dump_reply, &l, &kerr, err) < 0
      || (kerr && kerr != ENODEV))
    {
      free (l.v);
      if (*err)
        return roce_error_wrap (err, "unicast addresses of link %d", ifindex);
      return roce_error_sys (err, kerr, "unicast addresses of link %d", ifindex);
    }
  /* ENODEV: the link is gone, and every macvlan on it with it.  */
  qsort (l.v, l.n, sizeof (*l.v), cmp_mac);
  *macs = l.v;
  *n = l.n;
  return 0;
}

bool
netlink_macs_has (uint8_t (*macs)[6], size_t n, const uint8_t mac[6])
{
  return bsearch (mac, macs, n, sizeof (*macs), cmp_mac) != NULL;
}

int
netlink_mac_on_link (struct nl_sock *host, int ifindex, const uint8_t mac[6], roce_error_t *err)
{
  struct ndmsg nd = { .ndm_family = AF_BRIDGE, .ndm_ifindex = ifindex };
  cleanup_nlmsg struct nl_msg *m = nlmsg_alloc_simple (RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP);
  struct mac_find f = { .ifindex = ifindex, .mac = mac };
  int kerr, one = 1;

  /* Strict checking: the dump is of ndm_ifindex alone.  */
  if (setsockopt (netlink_fd (host), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof (one)) < 0)
    return roce_error_sys (err, errno, "netlink strict checking");
  if (m == NULL || nlmsg_append (m, &nd, sizeof (nd), NLMSG_ALIGNTO) < 0)
    abort ();
  if (request (host, m, RTM_NEWNEIGH, fdb_reply, &f, &kerr, err) < 0)
    return roce_error_wrap (err, "unicast addresses of link %d", ifindex);
  /* The link is gone, and every macvlan on it with it.  */
  if (kerr == ENODEV)
    return 0;
  if (kerr)
    return roce_error_sys (err, kerr, "unicast addresses of link %d", ifindex);
  return f.found ? 1 : 0;
}
