/* SPDX-License-Identifier: Apache-2.0 */
/* The jumbo path probe (`check --probe`): echoes of the full MTU (8972 bytes
 * of payload for 9000 over IPv4, 8952 over IPv6) from a rail address, bound
 * to the rail's netdev, never fragmented (IPv4: DF, IP_PMTUDISC_PROBE;
 * IPv6: IPV6_DONTFRAG, IPV6_PMTUDISC_PROBE: a cached route PMTU cannot make
 * the send fail locally), and the reply's size checked.  A hop that cuts it
 * answers with "fragmentation needed" (IPv4) or "packet too big" (IPv6):
 * its address and the MTU it can take; one that drops silently shows as a
 * small echo answered where the full one is not.  */
#ifndef ROCE_PMTU_H
#define ROCE_PMTU_H

#include <stddef.h>
#include <stdint.h>

#include "lib/ipaddr.h"

enum pmtu_outcome
{
  PMTU_OK,        /* the full-size echo came back whole */
  PMTU_CUT,       /* a hop said "fragmentation needed" / "packet too big" */
  PMTU_SHORT,     /* a reply, but shorter than the echo */
  PMTU_SILENT,    /* no answer at full size, an answer at the small size */
  PMTU_NO_ANSWER, /* no answer at any size (ICMP blocked, or no peer) */
  PMTU_ERROR,     /* could not send (the detail says why) */
};

struct pmtu_result
{
  enum pmtu_outcome outcome;
  struct roce_addr hop; /* PMTU_CUT: who said so */
  unsigned next_mtu;    /* PMTU_CUT: the MTU it named (0: none, IPv4 only) */
  unsigned sent;        /* ICMP payload bytes of the full echo */
  unsigned got;         /* PMTU_OK/SHORT: payload bytes of the reply */
  char detail[128];
};

/* The IP and ICMP headers of an echo in family: 28 (IPv4), 48 (IPv6).  */
unsigned pmtu_overhead (int family);
/* The size of the small echo a silent drop is told by (84, 104).  */
unsigned pmtu_small (int family);

/* Probes dst from src (one family) on netdev, in the network namespace of
 * netns_fd (-1: this one), with echoes of an IP packet of `mtu` bytes for
 * timeout_ms, then at the small size for half as long (300 ms at least),
 * while a late answer to a full-size echo still decides.  Never fails: the
 * outcome says what was seen.  The start step fabric.mtu_probe_ms, from
 * the container's address on its rail, and `check --probe`, from a rail
 * made for it (net.h: net_probe_rail).  */
void pmtu_probe_in (int netns_fd, const char *netdev, const struct roce_addr *src,
                    const struct roce_addr *dst, unsigned mtu, unsigned timeout_ms,
                    struct pmtu_result *out);
const char *pmtu_outcome_name (enum pmtu_outcome o);
/* What a probe of family found when it is not the full MTU end to end
 * (PMTU_CUT, PMTU_SHORT, PMTU_SILENT), for a message's "found": "<hop> cut
 * it: fragmentation needed, next-hop MTU 1500" (IPv6: "packet too big,
 * MTU 1500"), "<peer> echoed N of M bytes", "no answer at MTU 9000,
 * answers at 84 bytes: ..." (IPv6: 104).  NULL for any other outcome.
 * dst_s: the peer, formatted.  Caller frees.  */
char *pmtu_found (const struct pmtu_result *res, int family, unsigned mtu, const char *dst_s);

/* What a probe's round sent, against which each datagram off the raw
 * socket is matched (pmtu_match; exposed for the unit tests and the
 * fuzzer).  The id, the first sequence number and the payload are random
 * for each round (the full-size one, then the small one): an echo reply
 * must echo them, and a "fragmentation
 * needed" or "packet too big" must quote one of the round's echoes as it
 * left (addresses, length, IPv4's DF, IPv6's next header, id, sequence,
 * checksum, and every payload byte it quotes).  */
#define PMTU_ROUND_MAX 4
struct pmtu_echoes
{
  struct roce_addr src, dst; /* one family: the round's */
  uint16_t id;
  uint16_t seq_first;   /* the round's first sequence number */
  unsigned n_sent;      /* echoes sent in this round */
  unsigned payload;     /* ICMP payload bytes of each */
  uint32_t payload_sum; /* its ones' complement sum */
  const uint8_t *data;  /* the payload: at least `payload` bytes */
};
/* 1 when the datagram b (n bytes, as the round's raw socket reads it)
 * answers this round (*out set: PMTU_OK, PMTU_SHORT or PMTU_CUT), 0 when
 * it is anything else.  IPv4: b is the IP datagram, its header naming the
 * sender (from is not read); IPv6: b is the ICMPv6 message alone, from
 * whom the socket says sent it.  */
int pmtu_match (const struct pmtu_echoes *e, const struct roce_addr *from, const uint8_t *b,
                size_t n, struct pmtu_result *out);

#endif
