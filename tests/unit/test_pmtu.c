/* SPDX-License-Identifier: Apache-2.0 */
/* The probe's matching of what its raw ICMP socket reads against the echoes
 * it sent (pmtu_match), on the seed corpus of its fuzzer
 * (tests/fixtures/fuzz/icmp/, made by tests/helpers/icmp-datagrams.py):
 * the peer's replies and a hop's "fragmentation needed" quoting 8, 128
 * (RFC 4884) or 548 bytes are answers; a reply or a quote that is not our
 * round's echo byte for byte, an MTU that would not cut what was sent, and
 * the forgery an off-path host could make of a predictable prober are not.  */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
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

static struct dgram
load (const char *name)
{
  cleanup_free char *path = xasprintf ("%s/fuzz/icmp/%s", FIXTURES, name);
  cleanup_free char *buf = NULL;
  struct dgram d = { { 0 }, 0 };
  cr_assert_eq (read_file_at (AT_FDCWD, path, sizeof (d.b), &buf, &d.len, NULL), 0, "%s", path);
  memcpy (d.b, buf, d.len);
  return d;
}

static int
match (const struct dgram *d, struct pmtu_result *r)
{
  struct pmtu_echoes e;
  fuzz_icmp_echoes (&e);
  memset (r, 0, sizeof (*r));
  return pmtu_match (&e, d->b, d->len, r);
}

Test (pmtu, the_peers_replies_are_answers)
{
  struct pmtu_result r;
  struct dgram d = load ("reply-whole");
  cr_assert_eq (match (&d, &r), 1);
  cr_assert_eq (r.outcome, PMTU_OK);
  cr_assert_eq (r.got, FUZZ_ICMP_PAYLOAD);
  d = load ("reply-short");
  cr_assert_eq (match (&d, &r), 1);
  cr_assert_eq (r.outcome, PMTU_SHORT);
  cr_assert_eq (r.got, 120);
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
      cr_assert_eq (r.hop, 0xc6120b01, "%s", names[i]); /* 198.18.11.1 */
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
