/* SPDX-License-Identifier: Apache-2.0 */
/* The jumbo path probe (`check --probe`): DF-set ICMP echoes of the full MTU
 * (8972 bytes of payload for 9000) from a rail address, bound to the rail's
 * netdev, IP_PMTUDISC_PROBE (a cached route PMTU cannot make the send fail
 * locally), and the reply's size checked.  A hop that cuts it answers with
 * "fragmentation needed" (its address and next-hop MTU); one that drops
 * silently shows as a small echo answered where the full one is not.  */
#ifndef ROCE_PMTU_H
#define ROCE_PMTU_H

#include <stddef.h>
#include <stdint.h>

enum pmtu_outcome
{
  PMTU_OK,        /* the full-size echo came back whole */
  PMTU_CUT,       /* a hop said "fragmentation needed" */
  PMTU_SHORT,     /* a reply, but shorter than the echo */
  PMTU_SILENT,    /* no answer at full size, an answer at 64 bytes */
  PMTU_NO_ANSWER, /* no answer at any size (ICMP blocked, or no peer) */
  PMTU_ERROR,     /* could not send (the detail says why) */
};

struct pmtu_result
{
  enum pmtu_outcome outcome;
  uint32_t hop;      /* PMTU_CUT: who said so (host order) */
  unsigned next_mtu; /* PMTU_CUT: the MTU it named (0: none) */
  unsigned sent;     /* ICMP payload bytes of the full echo */
  unsigned got;      /* PMTU_OK/SHORT: payload bytes of the reply */
  char detail[128];
};

/* Probes dst from src (host order) on netdev, in the network namespace of
 * netns_fd (-1: this one), with echoes of an IPv4 packet of `mtu` bytes,
 * for at most timeout_ms (then once more at 64 bytes).  Never fails: the
 * outcome says what was seen.  The start step fabric.mtu_probe_ms, from
 * the container's address on its rail, and `check --probe`, from a rail
 * made for it (net.h: net_probe_rail).  */
void pmtu_probe_in (int netns_fd, const char *netdev, uint32_t src, uint32_t dst, unsigned mtu,
                    unsigned timeout_ms, struct pmtu_result *out);
const char *pmtu_outcome_name (enum pmtu_outcome o);

/* What a probe's round sent, against which each datagram off the raw
 * socket is matched (pmtu_match; exposed for the unit tests and the
 * fuzzer).  The id, the first sequence number and the payload are random
 * for each probe: an echo reply must echo them, and a "fragmentation
 * needed" must quote one of the round's echoes as it left (addresses,
 * length, DF, id, sequence, checksum, and every payload byte it quotes).  */
#define PMTU_ROUND_MAX 4
struct pmtu_echoes
{
  uint32_t src, dst; /* host order */
  uint16_t id;
  uint16_t seq_first;   /* the round's first sequence number */
  unsigned n_sent;      /* echoes sent in this round */
  unsigned payload;     /* ICMP payload bytes of each */
  uint32_t payload_sum; /* its ones' complement sum */
  const uint8_t *data;  /* the payload: at least `payload` bytes */
};
/* 1 when the IPv4 datagram b (n bytes, as a raw ICMP socket reads it)
 * answers this round (*out set: PMTU_OK, PMTU_SHORT or PMTU_CUT), 0 when
 * it is anything else.  */
int pmtu_match (const struct pmtu_echoes *e, const uint8_t *b, size_t n, struct pmtu_result *out);

#endif
