/* SPDX-License-Identifier: Apache-2.0 */
/* The jumbo path probe: full-MTU DF echoes on a raw ICMP socket (pmtu.h).  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lib/utils.h"
#include "probe/pmtu.h"
#include "sys/netns.h"

#define ICMP_HDR 8
#define IP_HDR 20
#define SMALL_PAYLOAD 56
#define BUF_MAX 65536
#define MIN_MTU 68 /* RFC 791: every hop passes this much */

struct pctx
{
  int fd;
  struct pmtu_echoes e; /* this round's echoes, what a reply must quote */
  uint8_t *buf;         /* BUF_MAX: what comes back */
};

/* The ones' complement sum of n bytes (RFC 1071), folded, from s.  */
static uint32_t
sum16 (const uint8_t *p, size_t n, uint32_t s)
{
  for (size_t i = 0; i + 1 < n; i += 2)
    s += (uint32_t) (p[i] << 8 | p[i + 1]);
  if (n & 1)
    s += (uint32_t) p[n - 1] << 8;
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return s;
}

static void
put16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) (v >> 8);
  p[1] = (uint8_t) v;
}

/* Echo i of the round: its 8-byte header (checksum over the payload too).  */
static void
echo_header (const struct pmtu_echoes *e, unsigned i, uint8_t h[ICMP_HDR])
{
  memset (h, 0, ICMP_HDR);
  h[0] = 8; /* echo request */
  put16 (h + 4, e->id);
  put16 (h + 6, (uint16_t) (e->seq_first + i));
  put16 (h + 2, (uint16_t) ~sum16 (h, ICMP_HDR, e->payload_sum));
}

static int
send_echo (struct pctx *c)
{
  struct pmtu_echoes *e = &c->e;
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (e->dst) };
  uint8_t h[ICMP_HDR];
  struct iovec v[2] = { { .iov_base = h, .iov_len = ICMP_HDR },
                        { .iov_base = (void *) e->data, .iov_len = e->payload } };
  struct msghdr m = { .msg_name = &to, .msg_namelen = sizeof (to), .msg_iov = v, .msg_iovlen = 2 };

  if (e->n_sent >= PMTU_ROUND_MAX)
    return 0;
  echo_header (e, e->n_sent, h);
  if (sendmsg (c->fd, &m, 0) < 0)
    return -1;
  e->n_sent++;
  return 0;
}

static uint16_t
be16 (const uint8_t *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

static uint32_t
be32 (const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

/* Which echo of the round a header names: its index, or -1 when the id,
 * the sequence number or (quoted) the checksum is not one we sent.  */
static int
echo_of (const struct pmtu_echoes *e, const uint8_t *icmp, bool quoted)
{
  uint16_t i = (uint16_t) (be16 (icmp + 6) - e->seq_first);
  uint8_t h[ICMP_HDR];

  if (be16 (icmp + 4) != e->id || i >= e->n_sent)
    return -1;
  if (quoted)
    {
      echo_header (e, i, h);
      if (memcmp (icmp, h, ICMP_HDR) != 0)
        return -1;
    }
  return i;
}

int
pmtu_match (const struct pmtu_echoes *e, const uint8_t *b, size_t n, struct pmtu_result *out)
{
  const uint8_t *icmp, *in, *q;
  size_t ihl, len, qlen;
  unsigned next_mtu, sent_len = IP_HDR + ICMP_HDR + e->payload;

  if (n < IP_HDR || (b[0] >> 4) != 4 || (ihl = (size_t) (b[0] & 0x0f) * 4) < IP_HDR
      || n < ihl + ICMP_HDR || b[9] != IPPROTO_ICMP || (be16 (b + 6) & 0x3fff) != 0)
    return 0;
  /* The datagram's own length, when the buffer holds more (padding).  */
  if ((len = be16 (b + 2)) < ihl + ICMP_HDR || len > n)
    return 0;
  icmp = b + ihl;
  if (icmp[0] == 0 && icmp[1] == 0)
    {
      /* An echo reply: from the peer, to one echo of this round, the
       * bytes it echoes ours.  */
      size_t got = len - ihl - ICMP_HDR;
      if (be32 (b + 12) != e->dst || echo_of (e, icmp, false) < 0 || got > e->payload
          || memcmp (icmp + ICMP_HDR, e->data, got) != 0)
        return 0;
      out->got = (unsigned) got;
      out->outcome = got >= e->payload ? PMTU_OK : PMTU_SHORT;
      return 1;
    }
  if (icmp[0] != 3 || icmp[1] != 4)
    return 0;
  /* Fragmentation needed: it quotes the IP header of one of this round's
   * echoes as sent (from src to dst, its length, no options), then at
   * least its ICMP header (RFC 792: 8 bytes) with our id, sequence number
   * and checksum (over the random payload: unguessable), then whatever
   * more of the payload the hop quoted (RFC 1812: up to 576 bytes in all;
   * RFC 4884: the length in 32-bit words in byte 5), every byte ours.  */
  in = icmp + ICMP_HDR;
  qlen = len - ihl - ICMP_HDR;
  if (icmp[5] != 0 && (size_t) icmp[5] * 4 < qlen)
    qlen = (size_t) icmp[5] * 4;
  if (qlen < IP_HDR + ICMP_HDR || in[0] != 0x45 || in[9] != IPPROTO_ICMP
      || be16 (in + 2) != sent_len || (be16 (in + 6) & 0x7fff) != 0x4000 /* DF, whole */
      || be32 (in + 12) != e->src || be32 (in + 16) != e->dst || echo_of (e, in + IP_HDR, true) < 0)
    return 0;
  q = in + IP_HDR + ICMP_HDR;
  qlen -= IP_HDR + ICMP_HDR;
  if (qlen > e->payload)
    qlen = e->payload;
  if (memcmp (q, e->data, qlen) != 0)
    return 0;
  /* The MTU it names must be one that cuts what was sent (0: a hop of
   * before RFC 1191 names none).  */
  next_mtu = be16 (icmp + 6);
  if (next_mtu != 0 && (next_mtu < MIN_MTU || next_mtu >= sent_len))
    return 0;
  out->outcome = PMTU_CUT;
  out->hop = be32 (b + 12);
  out->next_mtu = next_mtu;
  return 1;
}

/* A fresh round of echoes of `payload` bytes: the next sequence numbers,
 * the payload's sum.  */
static void
round_start (struct pctx *c, unsigned payload)
{
  struct pmtu_echoes *e = &c->e;
  e->seq_first = (uint16_t) (e->seq_first + e->n_sent);
  e->n_sent = 0;
  e->payload = payload;
  e->payload_sum = sum16 (e->data, payload, 0);
}

/* Echoes of `payload` bytes, `tries` of them spread over ms; 1 answered.
 * Never longer than ms, however much else arrives.  */
static int
round_trip (struct pctx *c, unsigned payload, int tries, unsigned ms, struct pmtu_result *out)
{
  int64_t end = mono_ms () + ms, next = 0;
  int sent = 0;

  round_start (c, payload);
  for (;;)
    {
      int64_t now = mono_ms ();
      struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
      int64_t wait;
      if (now >= end)
        return 0;
      if (sent < tries && now >= next)
        {
          if (send_echo (c) < 0)
            {
              out->outcome = PMTU_ERROR;
              snprintf (out->detail, sizeof (out->detail), "sending %u bytes: %s",
                        payload + ICMP_HDR + IP_HDR, strerror (errno));
              return 1;
            }
          sent++;
          next = now + ms / (unsigned) tries;
        }
      wait = (sent < tries ? next : end) - now;
      if (poll (&pfd, 1, (int) (wait < 0 ? 0 : wait)) > 0)
        {
          ssize_t n;
          while ((n = recv (c->fd, c->buf, BUF_MAX, MSG_DONTWAIT)) > 0)
            {
              if (pmtu_match (&c->e, c->buf, (size_t) n, out))
                return 1;
              /* A flood keeps the socket readable: the clock still runs.  */
              if (mono_ms () >= end)
                return 0;
            }
        }
    }
}

/* n random bytes (getrandom may give fewer than asked at once).  */
static int
random_fill (void *buf, size_t n)
{
  for (size_t got = 0; got < n;)
    {
      ssize_t r = getrandom ((uint8_t *) buf + got, n - got, GRND_NONBLOCK);
      if (r < 0 && errno != EINTR)
        return -1;
      if (r > 0)
        got += (size_t) r;
    }
  return 0;
}

void
pmtu_probe_in (int netns_fd, const char *netdev, uint32_t src, uint32_t dst, unsigned mtu,
               unsigned timeout_ms, struct pmtu_result *out)
{
  struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (src) };
  int disc = IP_PMTUDISC_PROBE;
  cleanup_free uint8_t *buf = xmalloc0 (BUF_MAX);
  cleanup_free uint8_t *data = NULL;
  cleanup_close int fd = -1;
  struct pctx c = { .buf = buf, .e = { .src = src, .dst = dst } };
  uint16_t rnd[2];

  memset (out, 0, sizeof (*out));
  out->sent = mtu > IP_HDR + ICMP_HDR ? mtu - IP_HDR - ICMP_HDR : 0;
  if (netns_fd >= 0)
    {
      cleanup_error roce_error_t err = NULL;
      int saved = -1, e;
      if (netns_enter (netns_fd, &saved, &err) < 0)
        {
          out->outcome = PMTU_ERROR;
          snprintf (out->detail, sizeof (out->detail), "%s", err->msg);
          return;
        }
      fd = socket (AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
      e = errno;
      netns_leave (&saved);
      errno = e;
    }
  else
    fd = socket (AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
  if (fd < 0
      || setsockopt (fd, SOL_SOCKET, SO_BINDTODEVICE, netdev, (socklen_t) strlen (netdev)) < 0
      || bind (fd, (struct sockaddr *) &from, sizeof (from)) < 0
      || setsockopt (fd, IPPROTO_IP, IP_MTU_DISCOVER, &disc, sizeof (disc)) < 0)
    {
      out->outcome = PMTU_ERROR;
      snprintf (out->detail, sizeof (out->detail), "%s: %s",
                fd < 0 ? "raw ICMP socket (needs CAP_NET_RAW)" : "binding it to the rail",
                strerror (errno));
      return;
    }
  /* What an off-path host cannot guess: the id, the first sequence number
   * and the payload (hence the checksum), drawn afresh for each probe.  */
  data = xmalloc0 (out->sent > SMALL_PAYLOAD ? out->sent : SMALL_PAYLOAD);
  if (random_fill (rnd, sizeof (rnd)) < 0
      || random_fill (data, out->sent > SMALL_PAYLOAD ? out->sent : SMALL_PAYLOAD) < 0)
    {
      out->outcome = PMTU_ERROR;
      snprintf (out->detail, sizeof (out->detail), "random echo ids and payload: %s",
                strerror (errno));
      return;
    }
  c.fd = fd;
  c.e.id = rnd[0];
  c.e.seq_first = rnd[1];
  c.e.data = data;
  if (round_trip (&c, out->sent, 3, timeout_ms, out))
    return;
  if (round_trip (&c, SMALL_PAYLOAD, 2, timeout_ms / 2 > 300 ? timeout_ms / 2 : 300, out)
      && out->outcome != PMTU_ERROR)
    {
      out->outcome = PMTU_SILENT;
      return;
    }
  if (out->outcome != PMTU_ERROR)
    out->outcome = PMTU_NO_ANSWER;
}

const char *
pmtu_outcome_name (enum pmtu_outcome o)
{
  static const char *const names[] = { "ok", "cut", "short", "silent", "no-answer", "error" };
  return names[o];
}
