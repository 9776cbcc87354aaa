/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 5227 on a container's new interface: the ARP probe for a duplicate
 * address and the gratuitous announcement.  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>

#include "lib/utils.h"
#include "sys/arp.h"
#include "sys/dadprobe.h"
#include "sys/netns.h"

/* RFC 826 on Ethernet: htype 1, ptype 0x0800, hlen 6, plen 4, op, then
 * sha(6) spa(4) tha(6) tpa(4).  */
enum
{
  OFF_HTYPE = 0,
  OFF_PTYPE = 2,
  OFF_HLEN = 4,
  OFF_PLEN = 5,
  OFF_OP = 6,
  OFF_SHA = 8,
  OFF_SPA = 14,
  OFF_THA = 18,
  OFF_TPA = 24,
};

static void
put16 (uint8_t *p, unsigned v)
{
  p[0] = (uint8_t) (v >> 8);
  p[1] = (uint8_t) v;
}

static unsigned
get16 (const uint8_t *p)
{
  return (unsigned) p[0] << 8 | p[1];
}

static void
put32 (uint8_t *p, uint32_t v)
{
  uint32_t be = htonl (v);
  memcpy (p, &be, 4);
}

static uint32_t
get32 (const uint8_t *p)
{
  uint32_t be;
  memcpy (&be, p, 4);
  return ntohl (be);
}

void
arp_pkt_build (uint8_t *buf, unsigned op, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
               uint32_t tpa)
{
  put16 (buf + OFF_HTYPE, ARPHRD_ETHER);
  put16 (buf + OFF_PTYPE, ETH_P_IP);
  buf[OFF_HLEN] = 6;
  buf[OFF_PLEN] = 4;
  put16 (buf + OFF_OP, op);
  memcpy (buf + OFF_SHA, sha, 6);
  put32 (buf + OFF_SPA, spa);
  memcpy (buf + OFF_THA, tha, 6);
  put32 (buf + OFF_TPA, tpa);
}

bool
arp_pkt_conflict (const uint8_t *pkt, size_t len, const uint8_t mac[6], uint32_t addr,
                  uint8_t who[6])
{
  unsigned op;
  uint32_t spa, tpa;

  if (len < ARP_PKT_LEN || get16 (pkt + OFF_HTYPE) != ARPHRD_ETHER
      || get16 (pkt + OFF_PTYPE) != ETH_P_IP || pkt[OFF_HLEN] != 6 || pkt[OFF_PLEN] != 4)
    return false;
  op = get16 (pkt + OFF_OP);
  if (op != ARPOP_REQUEST && op != ARPOP_REPLY)
    return false;
  if (memcmp (pkt + OFF_SHA, mac, 6) == 0)
    return false; /* our own */
  spa = get32 (pkt + OFF_SPA);
  tpa = get32 (pkt + OFF_TPA);
  /* Someone uses it, or someone else probes for it right now.  */
  if (spa == addr || (spa == 0 && op == ARPOP_REQUEST && tpa == addr))
    {
      memcpy (who, pkt + OFF_SHA, 6);
      return true;
    }
  return false;
}

/* An ARP socket on ifindex, made inside netns_fd's namespace.  */
static int
arp_socket (int netns_fd, int ifindex, roce_error_t *err)
{
  struct sockaddr_ll sll
      = { .sll_family = AF_PACKET, .sll_protocol = htons (ETH_P_ARP), .sll_ifindex = ifindex };
  int saved = -1, fd, e;

  if (netns_enter (netns_fd, &saved, err) < 0)
    return -1;
  fd = socket (AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons (ETH_P_ARP));
  e = errno;
  netns_leave (&saved);
  if (fd < 0)
    return roce_error_sys (err, e, "ARP socket (AF_PACKET) in the container");
  if (bind (fd, (struct sockaddr *) &sll, sizeof (sll)) < 0)
    {
      e = errno;
      close (fd);
      return roce_error_sys (err, e, "bind the ARP socket to link %d", ifindex);
    }
  return fd;
}

static int
arp_send (int fd, int ifindex, const uint8_t *pkt, roce_error_t *err)
{
  struct sockaddr_ll to = { .sll_family = AF_PACKET,
                            .sll_protocol = htons (ETH_P_ARP),
                            .sll_ifindex = ifindex,
                            .sll_halen = 6 };
  memset (to.sll_addr, 0xff, 6);
  if (sendto (fd, pkt, ARP_PKT_LEN, 0, (struct sockaddr *) &to, sizeof (to)) < 0)
    return roce_error_sys (err, errno, "send ARP on link %d", ifindex);
  return 0;
}

struct arp_probe_ctx
{
  int fd, ifindex;
  const uint8_t *mac;
  uint32_t addr;
  uint8_t pkt[ARP_PKT_LEN];
  uint8_t *who;
};

static int
probe_send (void *ctx, roce_error_t *err)
{
  struct arp_probe_ctx *c = ctx;
  return arp_send (c->fd, c->ifindex, c->pkt, err);
}

static bool
probe_conflict (void *ctx, const uint8_t *pkt, size_t len, const struct sockaddr_ll *from)
{
  struct arp_probe_ctx *c = ctx;
  (void) from;
  return arp_pkt_conflict (pkt, len, c->mac, c->addr, c->who);
}

int
arp_probe (int netns_fd, int ifindex, const uint8_t mac[6], uint32_t addr, unsigned ms,
           uint8_t who[6], roce_error_t *err)
{
  static const uint8_t zero[6] = { 0 };
  static const struct dadprobe_ops ops = { probe_send, probe_conflict, "ARP" };
  cleanup_close int fd = arp_socket (netns_fd, ifindex, err);
  struct arp_probe_ctx c = { .fd = fd, .ifindex = ifindex, .mac = mac, .addr = addr, .who = who };

  if (fd < 0)
    return -1;
  arp_pkt_build (c.pkt, ARPOP_REQUEST, mac, 0, zero, addr);
  return dadprobe_run (fd, ms, ARP_PROBE_NUM, &ops, &c, err);
}

int
arp_announce (int netns_fd, int ifindex, const uint8_t mac[6], uint32_t addr, roce_error_t *err)
{
  static const uint8_t zero[6] = { 0 };
  cleanup_close int fd = arp_socket (netns_fd, ifindex, err);
  uint8_t pkt[ARP_PKT_LEN];

  if (fd < 0)
    return -1;
  arp_pkt_build (pkt, ARPOP_REQUEST, mac, addr, zero, addr);
  for (int i = 0; i < 2; i++)
    if (arp_send (fd, ifindex, pkt, err) < 0)
      return -1;
  return 0;
}
