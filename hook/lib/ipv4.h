/* SPDX-License-Identifier: Apache-2.0 */
/* IPv4 addresses and CIDRs, kept in host byte order.  Parsing is strict:
 * dotted quad only, no leading zeros, no trailing bytes.  */
#ifndef ROCE_IPV4_H
#define ROCE_IPV4_H

#include <stdbool.h>
#include <stdint.h>

#define IPV4_STR_MAX 16 /* "255.255.255.255" + NUL */
#define CIDR_STR_MAX 19 /* "255.255.255.255/32" + NUL */

struct roce_cidr
{
  uint32_t addr;
  unsigned prefix;
};

int ipv4_parse (const char *s, uint32_t *out);
/* "a.b.c.d/n"; host bits must be zero.  Returns -1 on syntax, -2 when host
 * bits are set.  */
int cidr_parse (const char *s, struct roce_cidr *out);
uint32_t cidr_mask (unsigned prefix);
bool cidr_contains (const struct roce_cidr *c, uint32_t addr);
/* Formats into buf (IPV4_STR_MAX); returns buf.  */
char *ipv4_format (uint32_t addr, char *buf);
char *cidr_format (const struct roce_cidr *c, char *buf);

#endif
