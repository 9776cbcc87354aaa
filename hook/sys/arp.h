/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 5227 on a container's new interface: the ARP probe (sender address
 * 0.0.0.0, "who has <addr>?") that finds another host already using the
 * address, and the announcement (a gratuitous ARP request) that refreshes
 * the peers' caches once the address is ours.  An AF_PACKET socket made
 * inside the container's network namespace, bound to the interface; nothing
 * here runs a program.  */
#ifndef ROCE_ARP_H
#define ROCE_ARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* An Ethernet/IPv4 ARP packet (RFC 826), without the link header.  */
#define ARP_PKT_LEN 28
#define ARP_PROBE_NUM 3

/* Fills buf (ARP_PKT_LEN bytes): op 1 request or 2 reply; addresses in host
 * order.  */
void arp_pkt_build (uint8_t *buf, unsigned op, const uint8_t sha[6], uint32_t spa,
                    const uint8_t tha[6], uint32_t tpa);

/* Whether the packet says that someone other than `mac` holds (or probes
 * for) `addr`: a reply or request whose sender address is addr, or a probe
 * for addr from another MAC (RFC 5227 section 2.1.1).  *who gets its MAC.  */
bool arp_pkt_conflict (const uint8_t *pkt, size_t len, const uint8_t mac[6], uint32_t addr,
                       uint8_t who[6]);

/* Probes for addr from ifindex (a link of netns_fd's namespace, up, with
 * MAC `mac`) for `ms` milliseconds, ARP_PROBE_NUM probes spread over it.
 * 1: someone answered (*who), 0: nobody did, < 0: error.  */
int arp_probe (int netns_fd, int ifindex, const uint8_t mac[6], uint32_t addr, unsigned ms,
               uint8_t who[6], roce_error_t *err);

/* Two announcements of addr from ifindex.  */
int arp_announce (int netns_fd, int ifindex, const uint8_t mac[6], uint32_t addr,
                  roce_error_t *err);

#endif
