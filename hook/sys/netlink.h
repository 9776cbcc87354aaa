/* SPDX-License-Identifier: Apache-2.0 */
/* Netlink, the one module: the socket every caller uses (rtnetlink for the
 * links, addresses and routes the hook makes; DCB and RDMA netlink for the
 * probes), one receive loop with a timeout, one extended-ack parser.  Every
 * failure carries the kernel's errno as its status and, when the kernel sent
 * one, its extended-ack text.  Nothing here runs a program.  */
#ifndef ROCE_NETLINK_H
#define ROCE_NETLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/ipaddr.h"

struct nl_sock;
struct nl_msg;
struct nlmsghdr;

/* Every socket waits this long for the kernel at most: a hook never hangs.  */
#define NETLINK_TIMEOUT_S 5

/* ---- the transport (rtnetlink, DCB, RDMA netlink alike) ------------------- */

/* A netlink socket of `protocol` set up the way every caller wants it:
 * extended acks and capped acks on, the receive timeout above, in the
 * caller's network namespace (netns_fd < 0) or in netns_fd's (entered only
 * while the socket is made: it stays bound to that namespace).  On failure
 * err->status is the errno of socket()/bind() (EPROTONOSUPPORT: no such
 * protocol in this kernel).  */
int netlink_open_proto (int protocol, int netns_fd, struct nl_sock **out, roce_error_t *err);
/* NETLINK_ROUTE.  */
int netlink_open (int netns_fd, struct nl_sock **out, roce_error_t *err);
/* A new network namespace, held by *out (an fd) alone: it ends when that
 * fd is closed, also by the end of the process.  *sock: a NETLINK_ROUTE
 * socket made in it while the calling thread is there; the thread stays in
 * its own namespace.  */
int netlink_netns_new (int *out, struct nl_sock **sock, roce_error_t *err);
void netlink_close (struct nl_sock *s);
void cleanup_nl_sockp (struct nl_sock **s);
#define cleanup_nl_sock __attribute__ ((cleanup (cleanup_nl_sockp)))
void nlmsg_freep (struct nl_msg **m);
#define cleanup_nlmsg __attribute__ ((cleanup (nlmsg_freep)))
int netlink_fd (struct nl_sock *s);

/* Sends msg (sequence number and port filled in); its sequence number in *seq.  */
int netlink_send (struct nl_sock *sk, struct nl_msg *msg, uint32_t *seq, roce_error_t *err);
/* The same for a raw request on a socket that libnl-route calls share: a
 * sequence number of its own (NETLINK_ASIDE_SEQ, outside libnl's, which
 * start at the time of day), so libnl's count of what it expects next stays
 * in step.  The caller reads the whole answer, through the ack.  */
#define NETLINK_ASIDE_SEQ 0x524f4345u
int netlink_send_aside (struct nl_sock *sk, struct nl_msg *msg, uint32_t *seq, roce_error_t *err);
/* One datagram from the kernel (malloc'ed, caller frees); ETIMEDOUT after
 * NETLINK_TIMEOUT_S.  */
int netlink_recv (struct nl_sock *sk, unsigned char **buf, size_t *len, roce_error_t *err);
/* The text of an NLMSG_ERROR's extended ack (NLMSGERR_ATTR_MSG), or NULL,
 * whether or not the kernel echoed the request (NLM_F_CAPPED).  The caller
 * has checked that nlh is a whole NLMSG_ERROR message.  */
const char *netlink_ext_ack_msg (const struct nlmsghdr *nlh);
/* "Operation not supported (EOPNOTSUPP)".  Caller frees.  */
char *netlink_errno_text (int errnum);

/* ---- rtnetlink through libnl-route-3 -------------------------------------- */

struct netlink_link
{
  int ifindex;
  unsigned mtu;
  unsigned flags; /* IFF_* */
};

/* The link named `name`; a missing link fails with status ENODEV.  */
int netlink_link_get (struct nl_sock *s, const char *name, struct netlink_link *out,
                      roce_error_t *err);

/* Creates a macvlan (mode bridge) on parent_ifindex (a link of s's
 * namespace) straight into netns_fd's namespace, named `name`, with that MTU
 * and up.  An existing `name` there fails with status EEXIST.  */
int netlink_macvlan_add (struct nl_sock *s, int parent_ifindex, const char *name, unsigned mtu,
                         int netns_fd, roce_error_t *err);

/* addr/prefix on ifindex (the kernel adds the subnet's route).  An IPv6
 * address is added IFA_F_NODAD: usable at once, never tentative (the
 * caller probed for a duplicate first, when the policy asks).  */
int netlink_addr_add (struct nl_sock *s, int ifindex, const struct roce_addr *addr, unsigned prefix,
                      roce_error_t *err);

/* dst via gw (of dst's family) on ifindex, in the main table; never
 * replaces a route (an existing one fails with EEXIST).  */
int netlink_route_add (struct nl_sock *s, int ifindex, const struct roce_cidr *dst,
                       const struct roce_addr *gw, roce_error_t *err);

int netlink_link_del (struct nl_sock *s, int ifindex, roce_error_t *err);

/* ---- the fabric steps (per-rail tables, devconf, MAC) ---------------------- */

/* A macvlan (mode bridge) on parent_ifindex of s's namespace, made straight
 * into netns_fd's namespace as `name` with that MTU; with `mac` when has_mac
 * (else the kernel's random one); up only when `up` (so that devconf and
 * addr_gen_mode can be set before the link comes up).  */
struct netlink_macvlan
{
  int parent_ifindex;
  const char *name;
  unsigned mtu;
  int netns_fd;
  bool has_mac;
  uint8_t mac[6];
  bool up;
};
int netlink_macvlan_create (struct nl_sock *s, const struct netlink_macvlan *m, roce_error_t *err);

int netlink_link_set_up (struct nl_sock *s, int ifindex, roce_error_t *err);

/* IPv4 devconf of a link (IFLA_AF_SPEC / AF_INET / IFLA_INET_CONF); a value
 * < 0 is left as it is.  */
struct netlink_devconf
{
  int arp_notify;
  int arp_ignore;
  int arp_announce;
  int rp_filter;
};
int netlink_link_set_devconf (struct nl_sock *s, int ifindex, const struct netlink_devconf *d,
                              roce_error_t *err);
/* IPv6 addr_gen_mode (IFLA_AF_SPEC / AF_INET6 / IFLA_INET6_ADDR_GEN_MODE):
 * IN6_ADDR_GEN_MODE_NONE keeps the link-local address off.  A namespace
 * without IPv6 fails with status EAFNOSUPPORT.  */
int netlink_link_set_addr_gen_mode (struct nl_sock *s, int ifindex, unsigned mode,
                                    roce_error_t *err);

/* dst in `table` on ifindex: via gw, or on-link (scope link) when gw is
 * NULL; with preferred source `src` when not NULL (both of dst's family).
 * Never replaces a route (EEXIST). */
int netlink_route_add_table (struct nl_sock *s, int ifindex, const struct roce_cidr *dst,
                             const struct roce_addr *gw, const struct roce_addr *src,
                             unsigned table, roce_error_t *err);

/* The rule `from <src>/32` (/128 for IPv6) `lookup <table>` at priority
 * `prio`, in src's family (EEXIST when the same rule is there).  */
int netlink_rule_add_from (struct nl_sock *s, const struct roce_addr *src, unsigned table,
                           unsigned prio, roce_error_t *err);
/* Deletes that rule.  */
int netlink_rule_del_from (struct nl_sock *s, const struct roce_addr *src, unsigned table,
                           unsigned prio, roce_error_t *err);
/* ---- the host's ids of other network namespaces --------------------------- */

/* The id the caller's namespace (the host's) has for netns_fd's, taking one
 * when it has none (RTM_NEWNSID).  The kernel frees it with the namespace.  */
int netlink_nsid_of (int netns_fd, int32_t *nsid, roce_error_t *err);
/* The same on `host`, a socket of the host's namespace (one libnl-route
 * calls may share).  */
int netlink_nsid_on (struct nl_sock *host, int netns_fd, int32_t *nsid, roce_error_t *err);
/* Whether the namespace the host knows as nsid still exists and has addr on
 * ifname: 1 yes, 0 no namespace has that id (it is gone), 2 a namespace has
 * it but not that address there (another namespace may have been given the
 * freed id, or the address was renamed or removed: cannot tell), < 0 an
 * error (*err set).  host
 * is a socket for raw requests only (not one libnl-route calls use).  */
int netlink_addr_in_nsid (struct nl_sock *host, int32_t nsid, const struct roce_addr *addr,
                          const char *ifname, roce_error_t *err);
/* Every id the host has for a namespace (RTM_GETNSID dump), sorted: one
 * question for a whole gc, where netlink_addr_in_nsid is one a holder.  An
 * id absent is a namespace that is gone.  */
int netlink_nsids (struct nl_sock *host, int32_t **ids, size_t *n, roce_error_t *err);
bool netlink_nsids_has (const int32_t *ids, size_t n, int32_t id);
/* A socket the kernel tells of every id the host forgets (RTM_DELNSID): it
 * forgets one when that namespace dies, so its end is heard of, not
 * searched for.  */
int netlink_nsid_watch (struct nl_sock **out, roce_error_t *err);
/* Whether the watch has heard that nsid was forgotten, waiting up to
 * wait_ms for it (0: what has come already).  1 it was, 0 not (yet), -1
 * the watch cannot tell (the kernel dropped announcements it had no room
 * for, or an error): ask the kernel again.  */
int netlink_nsid_forgotten (struct nl_sock *watch, int32_t nsid, int wait_ms);

/* Whether link ifindex of the host (a macvlan's parent) listens on unicast
 * address mac: a macvlan puts its MAC in its parent's list when it comes up
 * and takes it out when it goes down or away, in whichever namespace it is
 * (the list is the parent's; `bridge fdb show dev <parent>` prints it).  So
 * an absent MAC is an interface that can no longer answer for its address.
 * 1 listed, 0 not (also: no such link), -1 an error.  host as above.  */
int netlink_mac_on_link (struct nl_sock *host, int ifindex, const uint8_t mac[6],
                         roce_error_t *err);
/* The whole list of link ifindex, sorted (none when the link is gone): one
 * dump for every holder of a gc.  */
int netlink_link_macs (struct nl_sock *host, int ifindex, uint8_t (**macs)[6], size_t *n,
                       roce_error_t *err);
bool netlink_macs_has (uint8_t (*macs)[6], size_t n, const uint8_t mac[6]);

#endif
