/* SPDX-License-Identifier: Apache-2.0 */
/* The jumbo path probe: full-MTU DF echoes on a raw ICMP socket (pmtu.h).  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/icmp6.h>
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
#define IP6_HDR 40
#define SMALL_PAYLOAD 56
#define BUF_MAX 65536
#define MIN_MTU 68    /* RFC 791: every hop passes this much */
#define MIN_MTU6 1280 /* RFC 8200 */

/* What differs between the families' echoes: the ICMP types, the IP
 * header, what a hop that cannot pass them sends back.  */
struct fam
{
  int family, proto;
  unsigned ip_hdr;
  uint8_t echo, reply, cut_type, cut_code;
  unsigned min_mtu;
};
static const struct fam fam4 = { AF_INET, IPPROTO_ICMP, IP_HDR, 8, 0, 3, 4, MIN_MTU };
static const struct fam fam6 = { AF_INET6, IPPROTO_ICMPV6, IP6_HDR, 128, 129, 2, 0, MIN_MTU6 };

static const struct fam *
fam_of (int family)
{
  return family == AF_INET6 ? &fam6 : &fam4;
}

unsigned
pmtu_overhead (int family)
{
  return fam_of (family)->ip_hdr + ICMP_HDR;
}

unsigned
pmtu_small (int family)
{
  return pmtu_overhead (family) + SMALL_PAYLOAD;
}

struct pctx
{
  int fd;
  struct pmtu_echoes e;    /* this round's echoes, what a reply must quote */
  struct pmtu_echoes full; /* the full-size round's, once the small one runs */
  bool has_full;
  uint8_t *buf; /* BUF_MAX: what comes back */
};

/* Datagrams read after a round's time is up: what had arrived by then
 * (a descheduled prober still reads its answers), never a flood's all.  */
#define LATE_READS 64

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

/* Echo i of the round: its 8-byte header, the checksum over the payload
 * too (IPv6: and the pseudo-header of RFC 8200 8.1, as the kernel fills it
 * in for a raw ICMPv6 socket).  */
static void
echo_header (const struct pmtu_echoes *e, unsigned i, uint8_t h[ICMP_HDR])
{
  uint32_t s = e->payload_sum;

  if (e->dst.family == AF_INET6)
    {
      uint8_t a[16], ph[8] = { 0 };
      unsigned len = ICMP_HDR + e->payload;
      addr_bytes (&e->src, a);
      s = sum16 (a, 16, s);
      addr_bytes (&e->dst, a);
      s = sum16 (a, 16, s);
      ph[2] = (uint8_t) (len >> 8);
      ph[3] = (uint8_t) len;
      ph[7] = IPPROTO_ICMPV6;
      s = sum16 (ph, sizeof (ph), s);
    }
  memset (h, 0, ICMP_HDR);
  h[0] = fam_of (e->dst.family)->echo;
  put16 (h + 4, e->id);
  put16 (h + 6, (uint16_t) (e->seq_first + i));
  put16 (h + 2, (uint16_t) ~sum16 (h, ICMP_HDR, s));
}

/* a as a socket address (port 0); its length.  */
static socklen_t
addr_sockaddr (const struct roce_addr *a, struct sockaddr_storage *ss)
{
  uint8_t b[16];
  size_t n = addr_bytes (a, b);
  if (a->family == AF_INET6)
    {
      struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;
      s6->sin6_family = AF_INET6;
      memcpy (&s6->sin6_addr, b, n);
      return sizeof (*s6);
    }
  struct sockaddr_in *s4 = (struct sockaddr_in *) ss;
  s4->sin_family = AF_INET;
  memcpy (&s4->sin_addr, b, n);
  return sizeof (*s4);
}

static int
send_echo (struct pctx *c)
{
  struct pmtu_echoes *e = &c->e;
  struct sockaddr_storage to = { 0 };
  socklen_t tolen = addr_sockaddr (&e->dst, &to);
  uint8_t h[ICMP_HDR];
  struct iovec v[2] = { { .iov_base = h, .iov_len = ICMP_HDR },
                        { .iov_base = (void *) e->data, .iov_len = e->payload } };
  struct msghdr m = { .msg_name = &to, .msg_namelen = tolen, .msg_iov = v, .msg_iovlen = 2 };

  if (e->n_sent >= PMTU_ROUND_MAX)
    return 0;
  echo_header (e, e->n_sent, h);
  /* A frame the device dropped on the way out (a qdisc, a veth whose peer
   * takes less) is an echo lost, as IPv4's raw sendmsg says (0, without
   * IP_RECVERR); IPv6's says ENOBUFS.  */
  if (sendmsg (c->fd, &m, 0) < 0 && errno != ENOBUFS)
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

/* The address of family at p (network order) is a.  */
static bool
addr_at (const struct roce_addr *a, const uint8_t *p)
{
  uint8_t b[16];
  return memcmp (p, b, addr_bytes (a, b)) == 0;
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
      /* 0 and 0xffff are the same ones' complement sum: the kernel's
       * IPv6 checksum may be either.  */
      if (e->dst.family == AF_INET6 && be16 (icmp + 2) == 0xffff - be16 (h + 2)
          && (be16 (h + 2) == 0 || be16 (h + 2) == 0xffff))
        put16 (h + 2, be16 (icmp + 2));
      if (memcmp (icmp, h, ICMP_HDR) != 0)
        return -1;
    }
  return i;
}

/* The quoted packet's IP header, ql bytes at in: one of this round's
 * echoes as sent (from src to dst, its length; IPv4: no options, DF,
 * whole; IPv6: no extension header); its length, 0 when not.  */
static size_t
quoted_ip (const struct pmtu_echoes *e, const uint8_t *in, size_t ql)
{
  unsigned sent_len = pmtu_overhead (e->dst.family) + e->payload;

  if (e->dst.family == AF_INET6)
    return ql >= IP6_HDR && (in[0] >> 4) == 6 && in[6] == IPPROTO_ICMPV6
                   && be16 (in + 4) == sent_len - IP6_HDR && addr_at (&e->src, in + 8)
                   && addr_at (&e->dst, in + 24)
               ? IP6_HDR
               : 0;
  return ql >= IP_HDR && in[0] == 0x45 && in[9] == IPPROTO_ICMP && be16 (in + 2) == sent_len
                 && (be16 (in + 6) & 0x7fff) == 0x4000 /* DF, whole */
                 && addr_at (&e->src, in + 12) && addr_at (&e->dst, in + 16)
             ? IP_HDR
             : 0;
}

/* The ICMP message icmp (len bytes) from `from`, against the round.  */
static int
match_icmp (const struct pmtu_echoes *e, const struct roce_addr *from, const uint8_t *icmp,
            size_t len, struct pmtu_result *out)
{
  const struct fam *f = fam_of (e->dst.family);
  const uint8_t *in, *q;
  size_t qlen, iph;
  unsigned next_mtu, sent_len = f->ip_hdr + ICMP_HDR + e->payload;

  if (len < ICMP_HDR)
    return 0;
  if (icmp[0] == f->reply && icmp[1] == 0)
    {
      /* An echo reply: from the peer, to one echo of this round, the
       * bytes it echoes ours.  */
      size_t got = len - ICMP_HDR;
      if (! addr_eq (from, &e->dst) || echo_of (e, icmp, false) < 0 || got > e->payload
          || memcmp (icmp + ICMP_HDR, e->data, got) != 0)
        return 0;
      out->got = (unsigned) got;
      out->outcome = got >= e->payload ? PMTU_OK : PMTU_SHORT;
      return 1;
    }
  if (icmp[0] != f->cut_type || icmp[1] != f->cut_code)
    return 0;
  /* Fragmentation needed / packet too big: it quotes the IP header of one
   * of this round's echoes as sent, then at least its ICMP header (RFC
   * 792: 8 bytes) with our id, sequence number and checksum (over the
   * random payload: unguessable), then whatever more of the payload the
   * hop quoted (RFC 1812: up to 576 bytes in all, RFC 4884: the length in
   * 32-bit words in byte 5; RFC 4443: up to 1280 bytes in all), every byte
   * ours.  */
  in = icmp + ICMP_HDR;
  qlen = len - ICMP_HDR;
  if (e->dst.family == AF_INET && icmp[5] != 0 && (size_t) icmp[5] * 4 < qlen)
    qlen = (size_t) icmp[5] * 4;
  if ((iph = quoted_ip (e, in, qlen)) == 0 || qlen < iph + ICMP_HDR
      || echo_of (e, in + iph, true) < 0)
    return 0;
  q = in + iph + ICMP_HDR;
  qlen -= iph + ICMP_HDR;
  if (qlen > e->payload)
    qlen = e->payload;
  if (memcmp (q, e->data, qlen) != 0)
    return 0;
  /* The MTU it names must be one that cuts what was sent (0: an IPv4 hop
   * of before RFC 1191 names none).  */
  next_mtu = e->dst.family == AF_INET6 ? be32 (icmp + 4) : be16 (icmp + 6);
  if ((next_mtu != 0 || e->dst.family == AF_INET6)
      && (next_mtu < f->min_mtu || next_mtu >= sent_len))
    return 0;
  out->outcome = PMTU_CUT;
  out->hop = *from;
  out->next_mtu = next_mtu;
  return 1;
}

int
pmtu_match (const struct pmtu_echoes *e, const struct roce_addr *from, const uint8_t *b, size_t n,
            struct pmtu_result *out)
{
  size_t ihl, len;
  struct roce_addr src;

  if (e->dst.family == AF_INET6)
    return from != NULL && from->family == AF_INET6 && match_icmp (e, from, b, n, out);
  if (n < IP_HDR || (b[0] >> 4) != 4 || (ihl = (size_t) (b[0] & 0x0f) * 4) < IP_HDR
      || n < ihl + ICMP_HDR || b[9] != IPPROTO_ICMP || (be16 (b + 6) & 0x3fff) != 0)
    return 0;
  /* The datagram's own length, when the buffer holds more (padding).  */
  if ((len = be16 (b + 2)) < ihl + ICMP_HDR || len > n)
    return 0;
  src = addr_v4 (be32 (b + 12));
  return match_icmp (e, &src, b + ihl, len - ihl, out);
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

/* Echoes of `payload` bytes, `tries` of them spread over ms: 1 when one
 * of them is answered, 2 when one of the full-size round's is (its answer
 * came late: a slow path, a first hop found only on the neighbor
 * discovery's retry), 0 when neither is within ms; *out says what.  What
 * arrived by the end is read before the end is judged.  */
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
      bool over = now >= end;
      int64_t wait;
      if (! over && sent < tries && now >= next)
        {
          if (send_echo (c) < 0)
            {
              out->outcome = PMTU_ERROR;
              snprintf (out->detail, sizeof (out->detail), "sending %u bytes: %s",
                        payload + pmtu_overhead (c->e.dst.family), strerror (errno));
              return 1;
            }
          sent++;
          next = now + ms / (unsigned) tries;
        }
      wait = over ? 0 : (sent < tries ? next : end) - now;
      if (poll (&pfd, 1, (int) (wait < 0 ? 0 : wait)) > 0)
        {
          struct sockaddr_in6 sa;
          socklen_t sl = sizeof (sa);
          struct roce_addr from = { 0 };
          ssize_t n;
          int late = 0;
          struct pmtu_result small = *out;
          bool got_small = false;
          while ((n = recvfrom (c->fd, c->buf, BUF_MAX, MSG_DONTWAIT, (struct sockaddr *) &sa, &sl))
                 > 0)
            {
              /* IPv4's sender is in the datagram's own header.  */
              from = (struct roce_addr){ 0 };
              if (sa.sin6_family == AF_INET6 && sl >= sizeof (sa))
                addr_from_bytes (AF_INET6, &sa.sin6_addr, &from);
              sl = sizeof (sa);
              if (c->has_full && pmtu_match (&c->full, &from, c->buf, (size_t) n, out))
                return 2;
              if (! got_small && pmtu_match (&c->e, &from, c->buf, (size_t) n, &small))
                {
                  if (! c->has_full)
                    {
                      *out = small;
                      return 1;
                    }
                  got_small = true;
                }
              /* A flood keeps the socket readable: the clock still runs.  A
               * small echo's answer is the verdict only when no answer to
               * a full-size one is queued behind it.  */
              if ((got_small || mono_ms () >= end) && ++late > LATE_READS)
                break;
            }
          if (got_small)
            {
              *out = small;
              return 1;
            }
          if (late > LATE_READS)
            return 0;
        }
      if (over)
        return 0;
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

/* The raw ICMP socket of family, in the namespace of netns_fd (-1: this
 * one), bound to netdev and src, never fragmenting; -1 (errno set, *what
 * the step) when not.  */
static int
raw_socket (int netns_fd, const char *netdev, const struct roce_addr *src, const char **what,
            roce_error_t *err)
{
  const struct fam *f = fam_of (src->family);
  struct sockaddr_storage from = { 0 };
  socklen_t fromlen = addr_sockaddr (src, &from);
  int disc = IP_PMTUDISC_PROBE, disc6 = IPV6_PMTUDISC_PROBE, on = 1;
  cleanup_close int fd = -1;

  *what = f->family == AF_INET6 ? "raw ICMPv6 socket (needs CAP_NET_RAW)"
                                : "raw ICMP socket (needs CAP_NET_RAW)";
  if (netns_fd >= 0)
    {
      int saved = -1, e;
      if (netns_enter (netns_fd, &saved, err) < 0)
        return -1;
      fd = socket (f->family, SOCK_RAW | SOCK_CLOEXEC, f->proto);
      e = errno;
      netns_leave (&saved);
      errno = e;
    }
  else
    fd = socket (f->family, SOCK_RAW | SOCK_CLOEXEC, f->proto);
  if (fd < 0)
    return -1;
  *what = "binding it to the rail";
  if (setsockopt (fd, SOL_SOCKET, SO_BINDTODEVICE, netdev, (socklen_t) strlen (netdev)) < 0
      || bind (fd, (struct sockaddr *) &from, fromlen) < 0)
    return -1;
  if (f->family == AF_INET6
          ? setsockopt (fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &disc6, sizeof (disc6)) < 0
                || setsockopt (fd, IPPROTO_IPV6, IPV6_DONTFRAG, &on, sizeof (on)) < 0
          : setsockopt (fd, IPPROTO_IP, IP_MTU_DISCOVER, &disc, sizeof (disc)) < 0)
    return -1;
  return steal_fd (&fd);
}

void
pmtu_probe_in (int netns_fd, const char *netdev, const struct roce_addr *src,
               const struct roce_addr *dst, unsigned mtu, unsigned timeout_ms,
               struct pmtu_result *out)
{
  unsigned over = pmtu_overhead (dst->family);
  cleanup_free uint8_t *buf = xmalloc0 (BUF_MAX);
  cleanup_free uint8_t *data = NULL;
  cleanup_close int fd = -1;
  cleanup_error roce_error_t err = NULL;
  struct pctx c = { .buf = buf, .e = { .src = *src, .dst = *dst } };
  const char *what = NULL;
  uint16_t rnd[2];
  uint8_t small[SMALL_PAYLOAD];

  memset (out, 0, sizeof (*out));
  out->sent = mtu > over ? mtu - over : 0;
  if ((fd = raw_socket (netns_fd, netdev, src, &what, &err)) < 0)
    {
      out->outcome = PMTU_ERROR;
      if (err)
        snprintf (out->detail, sizeof (out->detail), "%s", err->msg);
      else
        snprintf (out->detail, sizeof (out->detail), "%s: %s", what, strerror (errno));
      return;
    }
  /* What an off-path host cannot guess: the id, the first sequence number
   * and the payload (hence the checksum), drawn afresh for each probe and
   * again for its small echoes.  */
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
  /* The full-size echoes still count while the small ones are out: a
   * late answer to them is the verdict, not a silent drop.  */
  c.full = c.e;
  c.has_full = true;
  /* The small echoes tell a host that sees them (one behind a port that
   * drops the large frames) nothing of the full-size ones: an id, sequence
   * numbers and a payload of their own.  */
  if (random_fill (rnd, sizeof (rnd)) < 0 || random_fill (small, sizeof (small)) < 0)
    {
      out->outcome = PMTU_ERROR;
      snprintf (out->detail, sizeof (out->detail), "random echo ids and payload: %s",
                strerror (errno));
      return;
    }
  c.e.id = rnd[0];
  c.e.seq_first = rnd[1];
  c.e.n_sent = 0;
  c.e.data = small;
  switch (round_trip (&c, SMALL_PAYLOAD, 2, timeout_ms / 2 > 300 ? timeout_ms / 2 : 300, out))
    {
      case 2:
        return;
      case 1:
        if (out->outcome != PMTU_ERROR)
          {
            /* The small echo's answer said nothing of the full size.  */
            out->got = 0;
            out->outcome = PMTU_SILENT;
          }
        return;
      default:
        out->outcome = PMTU_NO_ANSWER;
    }
}

char *
pmtu_found (const struct pmtu_result *res, int family, unsigned mtu, const char *dst_s)
{
  char hop[ADDR_STR_MAX];
  switch (res->outcome)
    {
      case PMTU_CUT:
        return family == AF_INET6 ? xasprintf ("%s cut it: packet too big, MTU %u",
                                               addr_format (&res->hop, hop), res->next_mtu)
                                  : xasprintf ("%s cut it: fragmentation needed, next-hop MTU %u",
                                               addr_format (&res->hop, hop), res->next_mtu);
      case PMTU_SHORT:
        return xasprintf ("%s echoed %u of %u bytes", dst_s, res->got, res->sent);
      case PMTU_SILENT:
        return xasprintf ("no answer at MTU %u, answers at %u bytes: a hop drops large frames "
                          "silently",
                          mtu, pmtu_small (family));
      default:
        return NULL;
    }
}

const char *
pmtu_outcome_name (enum pmtu_outcome o)
{
  static const char *const names[] = { "ok", "cut", "short", "silent", "no-answer", "error" };
  return names[o];
}
