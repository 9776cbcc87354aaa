/* SPDX-License-Identifier: Apache-2.0 */
/* The jumbo path probe: full-MTU DF echoes on a raw ICMP socket (pmtu.h).  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netns.h"
#include "pmtu.h"
#include "utils.h"

#define ICMP_HDR 8
#define IP_HDR 20
#define SMALL_PAYLOAD 56
#define BUF_MAX 65536

struct pctx
{
  int fd;
  uint32_t dst; /* host order */
  uint16_t id;
  uint16_t seq;
  uint8_t *buf; /* BUF_MAX */
};

static uint16_t
csum (const uint8_t *p, size_t n)
{
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2)
    s += (uint32_t) (p[i] << 8 | p[i + 1]);
  if (n & 1)
    s += (uint32_t) p[n - 1] << 8;
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return (uint16_t) ~s;
}

static int64_t
mono_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
send_echo (struct pctx *c, unsigned payload)
{
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (c->dst) };
  size_t n = ICMP_HDR + payload;
  uint8_t *p = c->buf;
  uint16_t sum;

  memset (p, 0, n);
  p[0] = 8; /* echo request */
  p[4] = (uint8_t) (c->id >> 8);
  p[5] = (uint8_t) c->id;
  c->seq++;
  p[6] = (uint8_t) (c->seq >> 8);
  p[7] = (uint8_t) c->seq;
  for (size_t i = ICMP_HDR; i < n; i++)
    p[i] = (uint8_t) i;
  sum = csum (p, n);
  p[2] = (uint8_t) (sum >> 8);
  p[3] = (uint8_t) sum;
  return sendto (c->fd, p, n, 0, (struct sockaddr *) &to, sizeof (to)) < 0 ? -1 : 0;
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

/* One datagram off the raw socket: 1 an answer to our echo (the result set),
 * 0 something else.  */
static int
take (struct pctx *c, size_t n, unsigned payload, struct pmtu_result *out)
{
  const uint8_t *b = c->buf, *icmp, *in;
  size_t ihl, iihl;

  if (n < IP_HDR || (b[0] >> 4) != 4 || (ihl = (size_t) (b[0] & 0x0f) * 4) < IP_HDR
      || n < ihl + ICMP_HDR || b[9] != IPPROTO_ICMP)
    return 0;
  icmp = b + ihl;
  if (icmp[0] == 0 && be32 (b + 12) == c->dst && be16 (icmp + 4) == c->id)
    {
      out->got = (unsigned) (n - ihl - ICMP_HDR);
      out->outcome = out->got >= payload ? PMTU_OK : PMTU_SHORT;
      return 1;
    }
  if (icmp[0] != 3 || icmp[1] != 4)
    return 0;
  /* Fragmentation needed: the echo it quotes must be ours.  */
  in = icmp + ICMP_HDR;
  if (n < ihl + ICMP_HDR + IP_HDR || (iihl = (size_t) (in[0] & 0x0f) * 4) < IP_HDR
      || n < ihl + ICMP_HDR + iihl + ICMP_HDR || in[9] != IPPROTO_ICMP || be32 (in + 16) != c->dst
      || be16 (in + iihl + 4) != c->id)
    return 0;
  out->outcome = PMTU_CUT;
  out->hop = be32 (b + 12);
  out->next_mtu = be16 (icmp + 6);
  return 1;
}

/* Echoes of `payload` bytes, `tries` of them spread over ms; 1 answered.  */
static int
round_trip (struct pctx *c, unsigned payload, int tries, unsigned ms, struct pmtu_result *out)
{
  int64_t end = mono_ms () + ms, next = 0;
  int sent = 0;

  for (;;)
    {
      int64_t now = mono_ms ();
      struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
      int64_t wait;
      if (now >= end)
        return 0;
      if (sent < tries && now >= next)
        {
          if (send_echo (c, payload) < 0)
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
            if (take (c, (size_t) n, payload, out))
              return 1;
        }
    }
}

void
pmtu_probe (const char *netdev, uint32_t src, uint32_t dst, unsigned mtu, unsigned timeout_ms,
            struct pmtu_result *out)
{
  pmtu_probe_in (-1, netdev, src, dst, mtu, timeout_ms, out);
}

void
pmtu_probe_in (int netns_fd, const char *netdev, uint32_t src, uint32_t dst, unsigned mtu,
               unsigned timeout_ms, struct pmtu_result *out)
{
  struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (src) };
  int disc = IP_PMTUDISC_PROBE;
  cleanup_free uint8_t *buf = xmalloc0 (BUF_MAX);
  cleanup_close int fd = -1;
  struct pctx c = { .dst = dst, .buf = buf };
  uint16_t rnd = 0;

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
  if (getrandom (&rnd, sizeof (rnd), 0) != sizeof (rnd))
    rnd = (uint16_t) getpid ();
  c.fd = fd;
  c.id = rnd;
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
