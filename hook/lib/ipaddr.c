/* SPDX-License-Identifier: Apache-2.0 */
/* IP addresses and CIDRs of either family as text and as numbers
 * (ipaddr.h).  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ipaddr.h"

unsigned
addr_bits (int family)
{
  return family == AF_INET ? 32 : family == AF_INET6 ? 128 : 0;
}

const char *
addr_family_name (int family)
{
  return family == AF_INET ? "IPv4" : family == AF_INET6 ? "IPv6" : "no family";
}

struct roce_addr
addr_v4 (uint32_t host_order)
{
  return (struct roce_addr){ .v = host_order, .family = AF_INET };
}

void
addr_from_bytes (int family, const void *bytes, struct roce_addr *out)
{
  const uint8_t *p = bytes;
  size_t n = family == AF_INET ? 4 : 16;
  out->v = 0;
  out->family = family;
  for (size_t i = 0; i < n; i++)
    out->v = out->v << 8 | p[i];
}

size_t
addr_bytes (const struct roce_addr *a, uint8_t out[16])
{
  size_t n = a->family == AF_INET ? 4 : 16;
  roce_u128 v = a->v;
  for (size_t i = n; i > 0; i--)
    {
      out[i - 1] = (uint8_t) v;
      v >>= 8;
    }
  return n;
}

int
addr_parse (const char *s, struct roce_addr *out)
{
  uint8_t b[16];
  /* inet_pton takes exactly a dotted quad for AF_INET (no "1e9", no octal,
   * no hex, no shortened forms) and RFC 4291's text for AF_INET6 (no zone,
   * no prefix).  */
  if (s == NULL || strlen (s) >= ADDR_STR_MAX)
    return -1;
  if (inet_pton (AF_INET, s, b) == 1)
    addr_from_bytes (AF_INET, b, out);
  else if (inet_pton (AF_INET6, s, b) == 1)
    addr_from_bytes (AF_INET6, b, out);
  else
    return -1;
  return 0;
}

bool
addr_eq (const struct roce_addr *a, const struct roce_addr *b)
{
  return a->family == b->family && a->v == b->v;
}

int
addr_cmp (const struct roce_addr *a, const struct roce_addr *b)
{
  if (a->family != b->family)
    return a->family < b->family ? -1 : 1;
  return a->v < b->v ? -1 : a->v > b->v;
}

struct roce_addr
addr_add (const struct roce_addr *a, roce_u128 n)
{
  return (struct roce_addr){ .v = a->v + n, .family = a->family };
}

roce_u128
addr_diff (const struct roce_addr *hi, const struct roce_addr *lo)
{
  return hi->v - lo->v;
}

char *
addr_format (const struct roce_addr *a, char *buf)
{
  uint8_t b[16];
  addr_bytes (a, b);
  if (a->family == 0 || inet_ntop (a->family, b, buf, ADDR_STR_MAX) == NULL)
    snprintf (buf, ADDR_STR_MAX, "-");
  return buf;
}

roce_u128
cidr_mask (int family, unsigned prefix)
{
  unsigned bits = addr_bits (family);
  roce_u128 all = bits == 128 ? ~(roce_u128) 0 : (((roce_u128) 1 << bits) - 1);
  if (prefix == 0)
    return 0;
  return (all << (bits - prefix)) & all;
}

int
cidr_parse (const char *s, struct roce_cidr *out)
{
  char buf[CIDR_STR_MAX];
  const char *slash;
  unsigned prefix = 0;
  struct roce_addr addr;
  size_t alen;

  if (s == NULL || strlen (s) >= CIDR_STR_MAX || (slash = strchr (s, '/')) == NULL)
    return -1;
  alen = (size_t) (slash - s);
  memcpy (buf, s, alen);
  buf[alen] = '\0';
  if (addr_parse (buf, &addr) < 0)
    return -1;
  slash++;
  if (*slash == '\0' || strlen (slash) > 3 || (slash[0] == '0' && slash[1] != '\0'))
    return -1;
  for (const char *p = slash; *p; p++)
    {
      if (*p < '0' || *p > '9')
        return -1;
      prefix = prefix * 10 + (unsigned) (*p - '0');
    }
  if (prefix > addr_bits (addr.family))
    return -1;
  if ((addr.v & ~cidr_mask (addr.family, prefix)) != 0)
    return -2;
  out->addr = addr;
  out->prefix = prefix;
  return 0;
}

bool
cidr_contains (const struct roce_cidr *c, const struct roce_addr *a)
{
  return a->family == c->addr.family && (a->v & cidr_mask (c->addr.family, c->prefix)) == c->addr.v;
}

bool
cidr_eq (const struct roce_cidr *a, const struct roce_cidr *b)
{
  return addr_eq (&a->addr, &b->addr) && a->prefix == b->prefix;
}

struct roce_addr
cidr_last (const struct roce_cidr *c)
{
  unsigned bits = addr_bits (c->addr.family);
  roce_u128 all = bits == 128 ? ~(roce_u128) 0 : (((roce_u128) 1 << bits) - 1);
  return (struct roce_addr){ .v = c->addr.v | (all & ~cidr_mask (c->addr.family, c->prefix)),
                             .family = c->addr.family };
}

char *
cidr_format (const struct roce_cidr *c, char *buf)
{
  char a[ADDR_STR_MAX];
  snprintf (buf, CIDR_STR_MAX, "%s/%u", addr_format (&c->addr, a), c->prefix);
  return buf;
}

char *
u128_format (roce_u128 v, char *buf)
{
  char tmp[U128_STR_MAX];
  size_t n = 0;
  do
    {
      tmp[n++] = (char) ('0' + (int) (v % 10));
      v /= 10;
    }
  while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
  return buf;
}
