/* SPDX-License-Identifier: Apache-2.0 */
/* The host's side of a start's HCAs, found once and shared by the QoS gate
 * and the network step: one NETLINK_ROUTE socket in the host's namespace
 * (rtnetlink and DCB queries alike) and, for each selected HCA in request
 * order, its netdev (sysfs, or the policy's) and that link (ifindex, MTU).
 * Nothing is refused here: a netdev that is not there is said by each step
 * in its own words, as when each looked it up itself (the gate a finding,
 * the network step a refusal).  */
#ifndef ROCE_UPLINK_H
#define ROCE_UPLINK_H

#include <stddef.h>

#include "lib/error.h"
#include "spec/annot.h"
#include "spec/policy.h"
#include "sys/netlink.h"

struct roce_uplink
{
  char *netdev; /* NULL: netdev_err says why */
  roce_error_t netdev_err;
  struct netlink_link link; /* the host's link; valid when netdev is and link_err is NULL */
  roce_error_t link_err;    /* status ENODEV: no such link on the host */
};

struct roce_uplinks
{
  struct nl_sock *host; /* the host's namespace; libnl-route calls and raw requests share it */
  struct roce_uplink *v;
  size_t n;
};

/* Opens the socket and resolves req's HCAs.  Fails only when the socket
 * cannot be made.  */
int uplinks_open (const struct roce_policy *p, const struct roce_request *req,
                  struct roce_uplinks *out, roce_error_t *err);
void uplinks_clear (struct roce_uplinks *u);

/* Copies what is known of HCA i into *err (its netdev_err, or link_err) and
 * returns -1; 0 when both were found.  */
int uplink_error (const struct roce_uplink *u, roce_error_t *err);

#endif
