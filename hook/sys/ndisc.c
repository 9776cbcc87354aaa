/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 4861/4862 on a container's new interface: the duplicate-address
 * probe and the unsolicited advertisement (ndisc.h).  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_ether.h>
#include <linux/if_packet.h>

#include "lib/utils.h"
#include "sys/dadprobe.h"
#include "sys/ndisc.h"
#include "sys/netns.h"

/* RFC 8200's header: version/class/flow (4), payload length (2), next
 * header (1), hop limit (1), source (16), destination (16).  RFC 4861's
 * messages after it: type, code, checksum, 4 bytes (reserved, or the
 * advertisement's flags), target (16), options.  */
enum
{
  IP6_PLEN = 4,
  IP6_NEXT = 6,
  IP6_HOPS = 7,
  IP6_SRC = 8,
  IP6_DST = 24,
  IP6_HDR = 40,
  ND_TYPE = 0,
  ND_CODE = 1,
  ND_CSUM = 2,
  ND_FLAGS = 4,
  ND_TARGET = 8,
  ND_OPTS = 24,
  ND_SOLICIT = 135,
  ND_ADVERT = 136,
  ND_OPT_TLLA = 2,
  ND_ADVERT_OVERRIDE = 0x20,
  PROTO_ICMPV6 = 58,
};

static unsigned
get16 (const uint8_t *p)
{
  return (unsigned) p[0] << 8 | p[1];
}

/* The ICMPv6 checksum of the message after the header ip6 (its length
 * icmp_len): over the pseudo-header of RFC 8200 section 8.1.  A message
 * whose checksum field is right sums to 0.  */
static unsigned
icmp6_sum (const uint8_t *ip6, size_t icmp_len)
{
  const uint8_t *m = ip6 + IP6_HDR;
  uint32_t sum = (uint32_t) (icmp_len >> 16) + (uint32_t) (icmp_len & 0xffff) + PROTO_ICMPV6;
  for (size_t i = IP6_SRC; i < IP6_HDR; i += 2)
    sum += get16 (ip6 + i);
  for (size_t i = 0; i + 1 < icmp_len; i += 2)
    sum += get16 (m + i);
  if (icmp_len & 1)
    sum += (uint32_t) m[icmp_len - 1] << 8;
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return ~sum & 0xffff;
}

size_t
ndisc_pkt_build (uint8_t *buf, bool advert, const uint8_t mac[6], const uint8_t target[16],
                 uint8_t dst_mac[6])
{
  size_t ilen = advert ? ND_OPTS + 8 : ND_OPTS;
  uint8_t *m = buf + IP6_HDR;
  unsigned sum;

  memset (buf, 0, IP6_HDR + ilen);
  buf[0] = 0x60;
  buf[IP6_PLEN] = (uint8_t) (ilen >> 8);
  buf[IP6_PLEN + 1] = (uint8_t) ilen;
  buf[IP6_NEXT] = PROTO_ICMPV6;
  buf[IP6_HOPS] = 255;
  if (advert)
    {
      /* From the address, to all-nodes ff02::1 (33:33:00:00:00:01).  */
      memcpy (buf + IP6_SRC, target, 16);
      buf[IP6_DST] = 0xff;
      buf[IP6_DST + 1] = 0x02;
      buf[IP6_DST + 15] = 0x01;
      m[ND_TYPE] = ND_ADVERT;
      m[ND_FLAGS] = ND_ADVERT_OVERRIDE;
      m[ND_OPTS] = ND_OPT_TLLA;
      m[ND_OPTS + 1] = 1; /* in units of 8 bytes */
      memcpy (m + ND_OPTS + 2, mac, 6);
    }
  else
    {
      /* From ::, to the solicited-node group ff02::1:ffXX:XXXX of the
       * target's last 24 bits (33:33:ff:XX:XX:XX); no source link-layer
       * option from the unspecified address (RFC 4861 section 4.3).  */
      buf[IP6_DST] = 0xff;
      buf[IP6_DST + 1] = 0x02;
      buf[IP6_DST + 11] = 0x01;
      buf[IP6_DST + 12] = 0xff;
      memcpy (buf + IP6_DST + 13, target + 13, 3);
      m[ND_TYPE] = ND_SOLICIT;
    }
  memcpy (m + ND_TARGET, target, 16);
  dst_mac[0] = 0x33;
  dst_mac[1] = 0x33;
  memcpy (dst_mac + 2, buf + IP6_DST + 12, 4);
  sum = icmp6_sum (buf, ilen);
  m[ND_CSUM] = (uint8_t) (sum >> 8);
  m[ND_CSUM + 1] = (uint8_t) sum;
  return IP6_HDR + ilen;
}

bool
ndisc_pkt_conflict (const uint8_t *pkt, size_t len, const uint8_t from[6], const uint8_t mac[6],
                    const uint8_t target[16])
{
  static const uint8_t unspecified[16] = { 0 };
  const uint8_t *m = pkt + IP6_HDR;
  size_t ilen;

  if (len < IP6_HDR + ND_OPTS || (pkt[0] >> 4) != 6 || pkt[IP6_NEXT] != PROTO_ICMPV6
      || pkt[IP6_HOPS] != 255 || memcmp (from, mac, 6) == 0)
    return false;
  ilen = get16 (pkt + IP6_PLEN);
  if (ilen < ND_OPTS || IP6_HDR + ilen > len || m[ND_CODE] != 0 || icmp6_sum (pkt, ilen) != 0
      || memcmp (m + ND_TARGET, target, 16) != 0)
    return false;
  /* Someone holds it, or someone else probes for it right now.  */
  return m[ND_TYPE] == ND_ADVERT
         || (m[ND_TYPE] == ND_SOLICIT && memcmp (pkt + IP6_SRC, unspecified, 16) == 0);
}

/* Link-layer group membership for the socket's life: the interface then
 * takes those frames in (a macvlan filters its multicast).  */
static int
join (int fd, int ifindex, const uint8_t group[6], roce_error_t *err)
{
  struct packet_mreq mr = { .mr_ifindex = ifindex, .mr_type = PACKET_MR_MULTICAST, .mr_alen = 6 };
  memcpy (mr.mr_address, group, 6);
  if (setsockopt (fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof (mr)) < 0)
    return roce_error_sys (err, errno, "join %02x:%02x:%02x:%02x:%02x:%02x on link %d", group[0],
                           group[1], group[2], group[3], group[4], group[5], ifindex);
  return 0;
}

/* An IPv6 packet socket on ifindex, made inside netns_fd's namespace,
 * in the groups the answers to a probe for target come to.  */
static int
ndisc_socket (int netns_fd, int ifindex, const uint8_t target[16], roce_error_t *err)
{
  static const uint8_t all_nodes[6] = { 0x33, 0x33, 0, 0, 0, 1 };
  struct sockaddr_ll sll
      = { .sll_family = AF_PACKET, .sll_protocol = htons (ETH_P_IPV6), .sll_ifindex = ifindex };
  uint8_t solicited[6] = { 0x33, 0x33, 0xff, target[13], target[14], target[15] };
  int saved = -1, e;
  cleanup_close int fd = -1;

  if (netns_enter (netns_fd, &saved, err) < 0)
    return -1;
  fd = socket (AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons (ETH_P_IPV6));
  e = errno;
  netns_leave (&saved);
  if (fd < 0)
    return roce_error_sys (err, e, "IPv6 packet socket (AF_PACKET) in the container");
  if (bind (fd, (struct sockaddr *) &sll, sizeof (sll)) < 0)
    return roce_error_sys (err, errno, "bind the IPv6 packet socket to link %d", ifindex);
  if (join (fd, ifindex, all_nodes, err) < 0 || join (fd, ifindex, solicited, err) < 0)
    return -1;
  return steal_fd (&fd);
}

static int
ndisc_send (int fd, int ifindex, const uint8_t *pkt, size_t len, const uint8_t dst[6],
            roce_error_t *err)
{
  struct sockaddr_ll to = { .sll_family = AF_PACKET,
                            .sll_protocol = htons (ETH_P_IPV6),
                            .sll_ifindex = ifindex,
                            .sll_halen = 6 };
  memcpy (to.sll_addr, dst, 6);
  if (sendto (fd, pkt, len, 0, (struct sockaddr *) &to, sizeof (to)) < 0)
    return roce_error_sys (err, errno, "send a neighbor %s on link %d",
                           pkt[IP6_HDR] == ND_ADVERT ? "advertisement" : "solicitation", ifindex);
  return 0;
}

struct ndisc_probe_ctx
{
  int fd, ifindex;
  const uint8_t *mac;
  uint8_t target[16], pkt[NDISC_PKT_MAX], dst[6];
  size_t len;
  uint8_t *who;
};

static int
probe_send (void *ctx, roce_error_t *err)
{
  struct ndisc_probe_ctx *c = ctx;
  return ndisc_send (c->fd, c->ifindex, c->pkt, c->len, c->dst, err);
}

static bool
probe_conflict (void *ctx, const uint8_t *pkt, size_t len, const struct sockaddr_ll *from)
{
  struct ndisc_probe_ctx *c = ctx;
  if (from->sll_halen != 6 || ! ndisc_pkt_conflict (pkt, len, from->sll_addr, c->mac, c->target))
    return false;
  memcpy (c->who, from->sll_addr, 6);
  return true;
}

int
ndisc_probe (int netns_fd, int ifindex, const uint8_t mac[6], const struct roce_addr *addr,
             unsigned ms, uint8_t who[6], roce_error_t *err)
{
  static const struct dadprobe_ops ops = { probe_send, probe_conflict, "IPv6 packet" };
  struct ndisc_probe_ctx c = { .ifindex = ifindex, .mac = mac, .who = who };
  cleanup_close int fd = -1;

  addr_bytes (addr, c.target);
  if ((fd = ndisc_socket (netns_fd, ifindex, c.target, err)) < 0)
    return -1;
  c.fd = fd;
  c.len = ndisc_pkt_build (c.pkt, false, mac, c.target, c.dst);
  return dadprobe_run (fd, ms, NDISC_PROBE_NUM, &ops, &c, err);
}

int
ndisc_announce (int netns_fd, int ifindex, const uint8_t mac[6], const struct roce_addr *addr,
                roce_error_t *err)
{
  uint8_t target[16], pkt[NDISC_PKT_MAX], dst[6];
  cleanup_close int fd = -1;
  size_t len;

  addr_bytes (addr, target);
  if ((fd = ndisc_socket (netns_fd, ifindex, target, err)) < 0)
    return -1;
  len = ndisc_pkt_build (pkt, true, mac, target, dst);
  for (int i = 0; i < 2; i++)
    if (ndisc_send (fd, ifindex, pkt, len, dst, err) < 0)
      return -1;
  return 0;
}
