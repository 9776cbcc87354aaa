/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of hook/net share (the state, one call's inputs, the plan,
 * the fabric steps); not part of any public header.  */
#ifndef ROCE_NET_INT_H
#define ROCE_NET_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ipam/ipam.h"
#include "net/net.h"
#include "spec/policy.h"
#include "sys/netlink.h"
#include "sys/netns.h"

#define IFNAME_SIZE IPAM_IFNAME_SIZE

struct net_state
{
  struct nl_sock *csock; /* NETLINK_ROUTE in the container's namespace */
  struct netns_id ns;
  /* IPAM_MADE: this container set the network up (and holds its leases);
   * IPAM_JOINED: it joined the network of a namespace it shares.  */
  enum ipam_hold hold;
  /* The links made in the container's namespace, by name: recorded as soon
   * as the kernel made one, before anything else can fail.  */
  char (*links)[IFNAME_SIZE];
  size_t n_links;
  /* The from-rules made (they outlive their links): address and table.  */
  struct
  {
    struct roce_addr addr;
    unsigned table;
  } * rules;
  size_t n_rules;
  /* Per rail, once set up (or found, for a container that joined).  */
  struct net_rail *rails;
  char **rail_netdevs;
  size_t n_rails;
};

/* One call's inputs: what the public functions were handed.  */
struct net_run
{
  const struct roce_policy *p;
  const struct roce_request *req;
  const struct roce_container *c;
  struct net_state *n;
  /* `check --probe` (net_probe_rail): the rail made for the probe alone,
   * which runs from it instead of fabric.mtu_probe_ms; no GID steps.
   * NULL: a container's start.  */
  struct net_probe *probe;
};

/* ---- the plan: everything checked before the host is touched ------------------- */

/* One address of a rail: in net (one of the HCA's), leased, and its GID.  */
struct plan_addr
{
  const struct policy_net *net;
  struct roce_addr addr;
  bool gid_wanted; /* wait for the GID (gid_check on, the table has room) */
  bool has_gid;
  unsigned gid_port, gid_index;
};

struct plan_item
{
  const struct roce_selection *sel;
  char *parent;
  struct netlink_link parent_link;
  char ifname[IFNAME_SIZE];
  /* a[k]: the address in sel->hca->net[k] (a dual-stack rail has two).  */
  struct plan_addr a[POLICY_NETS];
  size_t n_a;
  /* The fabric steps (policy `fabric`).  */
  unsigned table; /* 0: the main table (per family: IPv4 and IPv6 keep their own) */
  bool has_mac;
  uint8_t mac[6];
  struct netlink_devconf devconf;
};

struct plan
{
  struct plan_item *items;
  size_t n;
  int32_t nsid; /* the host's id of the container's namespace, -1: none */
};

/* ---- net_fabric.c ---------------------------------------------------------- */

void plan_fabric (const struct net_run *r, struct plan *pl);
int gid_room (const struct net_run *r, struct plan *pl, roce_error_t *err);
int gids_wait (const struct net_run *r, struct plan *pl, roce_error_t *err);
void rails_fill (struct net_state *n, const struct plan *pl);

#endif
