/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of ipaddr: both families as text and as numbers (Criterion).  */
#include "lib/ipaddr.h"
#include "unit.h"

static struct roce_addr
A (const char *s)
{
  struct roce_addr a;
  cr_assert_eq (addr_parse (s, &a), 0, "`%s` must parse", s);
  return a;
}

Test (ipaddr, strict_dotted_quad)
{
  struct roce_addr a;
  cr_assert_eq (addr_parse ("192.168.100.105", &a), 0);
  cr_assert_eq (a.family, AF_INET);
  cr_assert (a.v == 0xc0a86469u);
  const char *bad[] = { "",         "1e9",       "192.168.100.105/0", "192.168.100", "256.1.1.1",
                        "01.2.3.4", "0x1.2.3.4", " 1.2.3.4",          "1.2.3.4 ",    "1.2.3.4.5" };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    cr_assert_lt (addr_parse (bad[i], &a), 0, "`%s` must not parse", bad[i]);
}

/* IPv6 as RFC 4291 writes it (no zone, no prefix, nothing around it),
 * printed as RFC 5952 has it.  */
Test (ipaddr, ipv6_text)
{
  char buf[ADDR_STR_MAX];
  struct roce_addr a = A ("fd00:10::105");
  uint8_t b[16];
  cr_assert_eq (a.family, AF_INET6);
  cr_assert (a.v == ((roce_u128) 0xfd000010 << 96 | 0x105));
  cr_assert_str_eq (addr_format (&a, buf), "fd00:10::105");
  cr_assert_str_eq (addr_format ((struct roce_addr[]){ A ("2001:0002:0000:0000:0:0:0:00ff") }, buf),
                    "2001:2::ff");
  cr_assert_eq (addr_bytes (&a, b), 16);
  cr_assert_eq (b[0], 0xfd);
  cr_assert_eq (b[15], 0x05);
  const char *bad[] = { "fd00::1%eth0", "fd00::/64", "fd00:::1",         "fd00::1 ",
                        "[fd00::1]",    "fd00::g",   "1:2:3:4:5:6:7:8:9" };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    cr_assert_lt (addr_parse (bad[i], &a), 0, "`%s` must not parse", bad[i]);
  /* The families never compare equal, and sort apart.  */
  cr_assert_not (addr_eq ((struct roce_addr[]){ A ("::c612:a64") },
                          (struct roce_addr[]){ A ("198.18.10.100") }));
  cr_assert_lt (
      addr_cmp ((struct roce_addr[]){ A ("255.255.255.255") }, (struct roce_addr[]){ A ("::") }),
      0);
}

Test (ipaddr, cidr)
{
  struct roce_cidr c;
  char buf[CIDR_STR_MAX];
  cr_assert_eq (cidr_parse ("192.168.100.0/24", &c), 0);
  cr_assert_eq (c.prefix, 24);
  cr_assert_str_eq (cidr_format (&c, buf), "192.168.100.0/24");
  cr_assert (cidr_contains (&c, (struct roce_addr[]){ A ("192.168.100.255") }));
  cr_assert_not (cidr_contains (&c, (struct roce_addr[]){ A ("192.168.101.0") }));
  cr_assert_eq (cidr_parse ("192.168.100.1/24", &c), -2, "host bits set");
  cr_assert_eq (cidr_parse ("0.0.0.0/0", &c), 0);
  cr_assert_eq (cidr_parse ("255.255.255.255/32", &c), 0);
  const char *bad[] = { "192.168.100.0",     "192.168.100.0/33", "192.168.100.0/",
                        "192.168.100.0/024", "192.168.100.0/2a", "x/24",
                        "192.168.100.0/24/1" };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    cr_assert_eq (cidr_parse (bad[i], &c), -1, "`%s` must not parse", bad[i]);
}

Test (ipaddr, ipv6_cidr)
{
  struct roce_cidr c;
  struct roce_addr last;
  char buf[CIDR_STR_MAX], a[ADDR_STR_MAX];
  cr_assert_eq (cidr_parse ("2001:2:0:10::/64", &c), 0);
  cr_assert_eq (c.prefix, 64);
  cr_assert_str_eq (cidr_format (&c, buf), "2001:2:0:10::/64");
  cr_assert (cidr_contains (&c, (struct roce_addr[]){ A ("2001:2:0:10:ffff:ffff:ffff:ffff") }));
  cr_assert_not (cidr_contains (&c, (struct roce_addr[]){ A ("2001:2:0:11::") }));
  cr_assert_not (cidr_contains (&c, (struct roce_addr[]){ A ("198.18.10.1") }), "another family");
  last = cidr_last (&c);
  cr_assert_str_eq (addr_format (&last, a), "2001:2:0:10:ffff:ffff:ffff:ffff");
  cr_assert_eq (cidr_parse ("fd00:10::1/64", &c), -2, "host bits set");
  cr_assert_eq (cidr_parse ("::/0", &c), 0);
  cr_assert (cidr_mask (AF_INET6, 0) == 0);
  cr_assert (cidr_mask (AF_INET6, 128) == ~(roce_u128) 0);
  cr_assert (cidr_mask (AF_INET, 24) == 0xffffff00u);
  cr_assert_eq (cidr_parse ("fd00::1/128", &c), 0);
  const char *bad[] = { "fd00::/129", "fd00::/", "fd00::/064", "fd00::%1/64", "fd00::/64/1" };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    cr_assert_eq (cidr_parse (bad[i], &c), -1, "`%s` must not parse", bad[i]);
}

/* Arithmetic across a /64: counts past 2^64 in decimal, no walk.  */
Test (ipaddr, arithmetic_of_a_wide_prefix)
{
  struct roce_addr lo = A ("2001:2::"), hi = A ("2001:2::ffff:ffff:ffff:ffff"), n;
  char d[U128_STR_MAX], a[ADDR_STR_MAX];
  cr_assert_str_eq (u128_format (addr_diff (&hi, &lo) + 1, d), "18446744073709551616");
  cr_assert_str_eq (u128_format (0, d), "0");
  n = addr_add (&lo, 0x10000);
  cr_assert_str_eq (addr_format (&n, a), "2001:2::1:0");
  n = addr_add ((struct roce_addr[]){ A ("198.18.10.255") }, 1);
  cr_assert_str_eq (addr_format (&n, a), "198.18.11.0");
}
