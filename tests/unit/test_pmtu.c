/* SPDX-License-Identifier: Apache-2.0 */
/* The probe's matching of what its raw ICMP socket reads against the echoes
 * it sent (pmtu_match), on the seed corpus of its fuzzer
 * (tests/fixtures/fuzz/icmp/, made by tests/helpers/icmp-datagrams.py):
 * the peer's replies and a hop's "fragmentation needed" quoting 8, 128
 * (RFC 4884) or 548 bytes are answers; a reply or a quote that is not our
 * round's echo byte for byte, an MTU that would not cut what was sent, and
 * the forgery an off-path host could make of a predictable prober are not.
 * The same over IPv6 (tests/fixtures/fuzz/icmp6/): replies, and a hop's
 * "packet too big" quoting 8 or 1232 bytes; a reply from another address
 * than the peer's, a quote of an echo from another source, an MTU below
 * 1280 or none are not.  */
#include <fcntl.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "lib/ipaddr.h"
#include "probe/pmtu.h"
#include "targets.h"
#include "unit.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

struct dgram
{
  uint8_t b[4096];
  size_t len;
};

/* A seed of the fuzz corpus dir (icmp, icmp6).  */
static struct dgram
load_from (const char *dir, const char *name)
{
  cleanup_free char *path = xasprintf ("%s/fuzz/%s/%s", FIXTURES, dir, name);
  cleanup_free char *buf = NULL;
  struct dgram d = { { 0 }, 0 };
  cr_assert_eq (read_file_at (AT_FDCWD, path, sizeof (d.b), &buf, &d.len, NULL), 0, "%s", path);
  memcpy (d.b, buf, d.len);
  return d;
}

static struct dgram
load (const char *name)
{
  return load_from ("icmp", name);
}

static int
match (const struct dgram *d, struct pmtu_result *r)
{
  struct pmtu_echoes e;
  fuzz_icmp_echoes (AF_INET, &e);
  memset (r, 0, sizeof (*r));
  return pmtu_match (&e, NULL, d->b, d->len, r);
}

/* The IPv6 seeds (tests/fixtures/fuzz/icmp6/): the sender's address, then
 * the ICMPv6 message the raw socket reads.  */
static struct dgram
load6 (const char *name)
{
  return load_from ("icmp6", name);
}

static int
match6 (const struct dgram *d, struct pmtu_result *r)
{
  struct pmtu_echoes e;
  struct roce_addr from;
  cr_assert_geq (d->len, 16);
  fuzz_icmp_echoes (AF_INET6, &e);
  addr_from_bytes (AF_INET6, d->b, &from);
  memset (r, 0, sizeof (*r));
  return pmtu_match (&e, &from, d->b + 16, d->len - 16, r);
}

/* The seed of that name of family's corpus, matched against its round.  */
static int
seed_match (int family, const char *name, struct pmtu_result *r)
{
  struct dgram d = family == AF_INET6 ? load6 (name) : load (name);
  return family == AF_INET6 ? match6 (&d, r) : match (&d, r);
}

Test (pmtu, the_peers_replies_are_answers_in_each_family)
{
  static const int families[] = { AF_INET, AF_INET6 };
  struct pmtu_result r;
  for (size_t i = 0; i < 2; i++)
    {
      cr_assert_eq (seed_match (families[i], "reply-whole", &r), 1, "%d", families[i]);
      cr_assert_eq (r.outcome, PMTU_OK);
      cr_assert_eq (r.got, FUZZ_ICMP_PAYLOAD);
      cr_assert_eq (seed_match (families[i], "reply-short", &r), 1, "%d", families[i]);
      cr_assert_eq (r.outcome, PMTU_SHORT);
      cr_assert_eq (r.got, 120);
    }
}

Test (pmtu, a_reply_must_echo_this_rounds_bytes)
{
  struct pmtu_result r;
  struct dgram d = load ("reply-other-bytes");
  cr_assert_eq (match (&d, &r), 0, "a reply of other bytes");
  d = load ("reply-old-seq");
  cr_assert_eq (match (&d, &r), 0, "a reply to an echo of another round");
}

Test (pmtu, a_hops_cut_is_an_answer_however_much_it_quotes)
{
  static const char *const names[] = { "cut-quote-8", "cut-rfc4884", "cut-quote-576" };
  struct pmtu_result r;
  for (size_t i = 0; i < sizeof (names) / sizeof (*names); i++)
    {
      struct dgram d = load (names[i]);
      cr_assert_eq (match (&d, &r), 1, "%s", names[i]);
      cr_assert_eq (r.outcome, PMTU_CUT, "%s", names[i]);
      cr_assert_eq (r.hop.family, AF_INET, "%s", names[i]);
      cr_assert (r.hop.v == 0xc6120b01, "%s", names[i]); /* 198.18.11.1 */
      cr_assert_eq (r.next_mtu, 1500, "%s", names[i]);
    }
  {
    struct dgram d = load ("cut-no-mtu");
    cr_assert_eq (match (&d, &r), 1);
    cr_assert_eq (r.next_mtu, 0, "a hop of before RFC 1191 names no MTU");
  }
}

Test (pmtu, a_quote_that_is_not_our_echo_is_ignored)
{
  static const char *const names[]
      = { "forged-predictable", "forged-seq", "cut-mtu-too-big", "truncated" };
  struct pmtu_result r;
  for (size_t i = 0; i < sizeof (names) / sizeof (*names); i++)
    {
      struct dgram d = load (names[i]);
      cr_assert_eq (match (&d, &r), 0, "%s", names[i]);
    }
}

/* One byte of a whole quote changed, wherever it is, and the cut is not
 * ours (but the TTL, the IP id and the IP checksum, which hops rewrite or
 * which the kernel chose).  */
Test (pmtu, every_quoted_byte_counts)
{
  struct dgram d = load ("cut-quote-576");
  struct pmtu_result r;
  size_t quote = 20 + 8; /* the outer IP and ICMP headers */
  for (size_t i = quote; i < d.len; i++)
    {
      size_t in = i - quote;
      if (in == 4 || in == 5 || in == 8 || in == 10 || in == 11 || in == 1)
        continue; /* IP id, TTL, checksum, TOS */
      d.b[i] ^= 0x40;
      cr_assert_eq (match (&d, &r), 0, "byte %zu of the quote changed", in);
      d.b[i] ^= 0x40;
    }
  cr_assert_eq (match (&d, &r), 1);
}

Test (pmtu6, a_hops_packet_too_big_is_an_answer_however_much_it_quotes)
{
  static const char *const names[] = { "cut-quote-8", "cut-quote-1232" };
  struct pmtu_result r;
  char a[ADDR_STR_MAX];
  for (size_t i = 0; i < sizeof (names) / sizeof (*names); i++)
    {
      struct dgram d = load6 (names[i]);
      cr_assert_eq (match6 (&d, &r), 1, "%s", names[i]);
      cr_assert_eq (r.outcome, PMTU_CUT, "%s", names[i]);
      cr_assert_str_eq (addr_format (&r.hop, a), "fd00:10::1", "%s", names[i]);
      cr_assert_eq (r.next_mtu, 1500, "%s", names[i]);
    }
}

Test (pmtu6, what_is_not_this_rounds_answer_is_ignored)
{
  static const char *const names[]
      = { "reply-other-bytes",  "reply-old-seq", "reply-other-source", "cut-mtu-too-big",
          "cut-mtu-below-1280", "cut-no-mtu",    "cut-other-source",   "forged-predictable",
          "forged-seq",         "truncated" };
  struct pmtu_result r;
  for (size_t i = 0; i < sizeof (names) / sizeof (*names); i++)
    {
      struct dgram d = load6 (names[i]);
      cr_assert_eq (match6 (&d, &r), 0, "%s", names[i]);
    }
  /* An IPv4 datagram read against an IPv6 round, and the other way.  */
  {
    struct dgram d4 = load ("reply-whole"), d6 = load6 ("reply-whole");
    struct pmtu_echoes e;
    struct roce_addr from;
    fuzz_icmp_echoes (AF_INET6, &e);
    addr_from_bytes (AF_INET6, d6.b, &from);
    cr_assert_eq (pmtu_match (&e, NULL, d6.b + 16, d6.len - 16, &r), 0, "no sender");
    cr_assert_eq (pmtu_match (&e, &from, d4.b, d4.len, &r), 0, "an IPv4 datagram");
    fuzz_icmp_echoes (AF_INET, &e);
    cr_assert_eq (pmtu_match (&e, &from, d6.b + 16, d6.len - 16, &r), 0, "an ICMPv6 message");
  }
}

/* One byte of a quote of 1232 changed, wherever it is, and the cut is not
 * ours (but the traffic class, the flow label and the hop limit, which
 * hops rewrite or the kernel chose).  */
Test (pmtu6, every_quoted_byte_counts)
{
  struct dgram d = load6 ("cut-quote-1232");
  struct pmtu_result r;
  size_t quote = 16 + 8; /* the sender, the ICMPv6 header */
  for (size_t i = quote; i < d.len; i++)
    {
      size_t in = i - quote;
      if (in == 0 || in == 1 || in == 2 || in == 3 || in == 7)
        continue; /* version and traffic class, flow label, hop limit */
      d.b[i] ^= 0x40;
      cr_assert_eq (match6 (&d, &r), 0, "byte %zu of the quote changed", in);
      d.b[i] ^= 0x40;
    }
  d.b[quote] ^= 0x40; /* the version */
  cr_assert_eq (match6 (&d, &r), 0, "version 6 ^ 0x4");
  d.b[quote] ^= 0x40;
  cr_assert_eq (match6 (&d, &r), 1);
}

/* What the start's line and check --probe's row say a probe found: IPv4's
 * words as they always were, IPv6's of its own ICMP.  */
Test (pmtu, what_was_found_in_each_family)
{
  struct pmtu_result r = { .outcome = PMTU_CUT, .next_mtu = 1500, .sent = 8972 };
  cleanup_free char *c4 = NULL, *c6 = NULL, *s4 = NULL, *s6 = NULL, *h4 = NULL;
  r.hop = addr_v4 (0xc6120afe);
  c4 = pmtu_found (&r, AF_INET, 9000, "198.18.11.2");
  cr_assert_str_eq (c4, "198.18.10.254 cut it: fragmentation needed, next-hop MTU 1500");
  cr_assert_eq (addr_parse ("2001:2:0:10::1", &r.hop), 0);
  c6 = pmtu_found (&r, AF_INET6, 9000, "2001:2:0:11::2");
  cr_assert_str_eq (c6, "2001:2:0:10::1 cut it: packet too big, MTU 1500");
  r.outcome = PMTU_SILENT;
  s4 = pmtu_found (&r, AF_INET, 9000, "198.18.11.2");
  cr_assert_str_eq (s4, "no answer at MTU 9000, answers at 84 bytes: a hop drops large frames "
                        "silently");
  s6 = pmtu_found (&r, AF_INET6, 9000, "2001:2:0:11::2");
  cr_assert_str_eq (s6, "no answer at MTU 9000, answers at 104 bytes: a hop drops large frames "
                        "silently");
  r.outcome = PMTU_SHORT;
  r.got = 1472;
  h4 = pmtu_found (&r, AF_INET, 9000, "198.18.11.2");
  cr_assert_str_eq (h4, "198.18.11.2 echoed 1472 of 8972 bytes");
  r.outcome = PMTU_NO_ANSWER;
  cr_assert_null (pmtu_found (&r, AF_INET6, 9000, "2001:2:0:11::2"));
}
