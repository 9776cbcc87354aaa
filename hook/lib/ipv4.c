/* SPDX-License-Identifier: Apache-2.0 */
/* IPv4 addresses and CIDRs as text (ipv4.h): strict dotted quads, host byte
 * order.  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ipv4.h"

int
ipv4_parse (const char *s, uint32_t *out)
{
  struct in_addr a;
  /* inet_pton(AF_INET) takes exactly a dotted quad: no "1e9", no octal, no
   * hex, no shortened forms.  */
  if (s == NULL || strlen (s) >= IPV4_STR_MAX || inet_pton (AF_INET, s, &a) != 1)
    return -1;
  *out = ntohl (a.s_addr);
  return 0;
}

uint32_t
cidr_mask (unsigned prefix)
{
  return prefix == 0 ? 0 : (uint32_t) (0xffffffffu << (32 - prefix));
}

int
cidr_parse (const char *s, struct roce_cidr *out)
{
  char buf[CIDR_STR_MAX];
  const char *slash;
  unsigned prefix = 0;
  uint32_t addr;
  size_t alen;

  if (s == NULL || strlen (s) >= CIDR_STR_MAX || (slash = strchr (s, '/')) == NULL)
    return -1;
  alen = (size_t) (slash - s);
  memcpy (buf, s, alen);
  buf[alen] = '\0';
  if (ipv4_parse (buf, &addr) < 0)
    return -1;
  slash++;
  if (*slash == '\0' || strlen (slash) > 2 || (slash[0] == '0' && slash[1] != '\0'))
    return -1;
  for (const char *p = slash; *p; p++)
    {
      if (*p < '0' || *p > '9')
        return -1;
      prefix = prefix * 10 + (unsigned) (*p - '0');
    }
  if (prefix > 32)
    return -1;
  if ((addr & ~cidr_mask (prefix)) != 0)
    return -2;
  out->addr = addr;
  out->prefix = prefix;
  return 0;
}

bool
cidr_contains (const struct roce_cidr *c, uint32_t addr)
{
  return (addr & cidr_mask (c->prefix)) == c->addr;
}

char *
ipv4_format (uint32_t addr, char *buf)
{
  snprintf (buf, IPV4_STR_MAX, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 0xff, (addr >> 8) & 0xff,
            addr & 0xff);
  return buf;
}

char *
cidr_format (const struct roce_cidr *c, char *buf)
{
  char a[IPV4_STR_MAX];
  snprintf (buf, CIDR_STR_MAX, "%s/%u", ipv4_format (c->addr, a), c->prefix);
  return buf;
}
