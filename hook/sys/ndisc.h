/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 4861 and 4862 on a container's new interface, as arp.h does RFC 5227
 * for IPv4: the duplicate-address probe (a Neighbor Solicitation from the
 * unspecified address to the target's solicited-node group) that finds
 * another host holding an IPv6 address before it is ours, and the
 * unsolicited Neighbor Advertisement (to all-nodes, override set) that
 * refreshes the peers' caches once it is.  The kernel's own DAD would
 * leave the address tentative for a second (dad_transmits x
 * retrans_time_ms), unusable by the workload; the hook probes itself for
 * the policy's dad_probe_ms, then adds the address with IFA_F_NODAD.  An
 * AF_PACKET socket made inside the container's network namespace, bound to
 * the interface; nothing here runs a program.  */
#ifndef ROCE_NDISC_H
#define ROCE_NDISC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/ipaddr.h"

/* An IPv6 header and the ICMPv6 message: a solicitation (24 bytes) or an
 * advertisement with its target link-layer address option (32).  */
#define NDISC_PKT_MAX (40 + 32)
#define NDISC_PROBE_NUM 3

/* Fills buf (NDISC_PKT_MAX bytes) with the IPv6 packet of a DAD probe for
 * target (advert false: from ::, to its solicited-node group) or of an
 * unsolicited advertisement of it from mac (advert true: to ff02::1,
 * override set); its length.  *dst_mac: the Ethernet group it goes to.  */
size_t ndisc_pkt_build (uint8_t *buf, bool advert, const uint8_t mac[6], const uint8_t target[16],
                        uint8_t dst_mac[6]);

/* Whether an IPv6 packet (no link header) from link address `from` says
 * that someone other than `mac` holds or probes for target: an
 * advertisement of target, or a DAD probe for it (RFC 4862 section 5.4.3).
 * Hop limit 255 and a right checksum only, as a host takes them.  */
bool ndisc_pkt_conflict (const uint8_t *pkt, size_t len, const uint8_t from[6],
                         const uint8_t mac[6], const uint8_t target[16]);

/* Probes for addr (IPv6) from ifindex (a link of netns_fd's namespace, up,
 * with MAC `mac`) for `ms` milliseconds, NDISC_PROBE_NUM solicitations
 * spread over it.  1: someone answered (*who), 0: nobody did, < 0: error. */
int ndisc_probe (int netns_fd, int ifindex, const uint8_t mac[6], const struct roce_addr *addr,
                 unsigned ms, uint8_t who[6], roce_error_t *err);

/* Two unsolicited advertisements of addr from ifindex.  */
int ndisc_announce (int netns_fd, int ifindex, const uint8_t mac[6], const struct roce_addr *addr,
                    roce_error_t *err);

#endif
