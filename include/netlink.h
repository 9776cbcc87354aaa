/* rtnetlink through libnl-route-3: the links, addresses and routes the hook
 * makes.  Every failure carries the kernel's errno as its status and, when
 * the kernel sent one, its extended-ack text.  Nothing here runs a program.  */
#ifndef ROCE_NETLINK_H
#define ROCE_NETLINK_H

#include <stdint.h>

#include "error.h"
#include "ipv4.h"

struct nl_sock;

/* A NETLINK_ROUTE socket in the caller's network namespace (netns_fd < 0),
 * or in netns_fd's (entered only while the socket is made: it stays bound to
 * that namespace).  */
int netlink_open (int netns_fd, struct nl_sock **out, roce_error_t *err);
void netlink_close (struct nl_sock *s);
void cleanup_nl_sockp (struct nl_sock **s);
#define cleanup_nl_sock __attribute__ ((cleanup (cleanup_nl_sockp)))
int netlink_fd (struct nl_sock *s);

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

/* addr/prefix on ifindex (the kernel adds the subnet's route).  */
int netlink_addr_add (struct nl_sock *s, int ifindex, uint32_t addr, unsigned prefix,
                      roce_error_t *err);

/* dst via gw on ifindex, in the main table; never replaces a route (an
 * existing one fails with EEXIST).  */
int netlink_route_add (struct nl_sock *s, int ifindex, const struct roce_cidr *dst, uint32_t gw,
                       roce_error_t *err);

int netlink_link_del (struct nl_sock *s, int ifindex, roce_error_t *err);

#endif
