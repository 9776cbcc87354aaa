/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of ipv4 (Criterion).  */
#include "lib/ipv4.h"
#include "unit.h"

Test (ipv4, strict_dotted_quad)
{
  uint32_t a;
  cr_assert_eq (ipv4_parse ("192.168.100.105", &a), 0);
  cr_assert_eq (a, 0xc0a86469u);
  const char *bad[]
      = { "",         "1e9",       "::1",      "192.168.100.105/0", "192.168.100", "256.1.1.1",
          "01.2.3.4", "0x1.2.3.4", " 1.2.3.4", "1.2.3.4 ",          "1.2.3.4.5" };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    cr_assert_lt (ipv4_parse (bad[i], &a), 0, "`%s` must not parse", bad[i]);
}

Test (ipv4, cidr)
{
  struct roce_cidr c;
  char buf[CIDR_STR_MAX];
  cr_assert_eq (cidr_parse ("192.168.100.0/24", &c), 0);
  cr_assert_eq (c.prefix, 24);
  cr_assert_str_eq (cidr_format (&c, buf), "192.168.100.0/24");
  cr_assert (cidr_contains (&c, 0xc0a864ffu));
  cr_assert_not (cidr_contains (&c, 0xc0a86500u));
  cr_assert_eq (cidr_parse ("192.168.100.1/24", &c), -2, "host bits set");
  cr_assert_eq (cidr_parse ("0.0.0.0/0", &c), 0);
  cr_assert_eq (cidr_parse ("255.255.255.255/32", &c), 0);
  const char *bad[] = { "192.168.100.0",     "192.168.100.0/33", "192.168.100.0/",
                        "192.168.100.0/024", "192.168.100.0/2a", "x/24",
                        "192.168.100.0/24/1" };
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    cr_assert_eq (cidr_parse (bad[i], &c), -1, "`%s` must not parse", bad[i]);
}
