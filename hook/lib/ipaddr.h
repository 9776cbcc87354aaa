/* SPDX-License-Identifier: Apache-2.0 */
/* IP addresses and CIDRs of either family, one type for both: the address
 * as a 128-bit number in host order (an IPv4 address in its low 32 bits)
 * and its family, so that a pool, a block or an offset is arithmetic on
 * one integer whatever the family.  Text goes through inet_pton and
 * inet_ntop: strict (dotted quads only, no leading zeros, no zone, nothing
 * trailing), printed as RFC 5952 has it.  */
#ifndef ROCE_IPADDR_H
#define ROCE_IPADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef unsigned __int128 roce_u128;

#define ADDR_STR_MAX 46 /* INET6_ADDRSTRLEN: "ffff:...:255.255.255.255" + NUL */
#define CIDR_STR_MAX 50 /* an address, "/128", NUL */
#define U128_STR_MAX 40 /* 2^128 - 1 in decimal, NUL */

struct roce_addr
{
  roce_u128 v;
  int family; /* AF_INET, AF_INET6; 0: no address */
};

struct roce_cidr
{
  struct roce_addr addr;
  unsigned prefix;
};

/* Either family; -1 when s is neither.  */
int addr_parse (const char *s, struct roce_addr *out);
/* 32 or 128 (0 for no family).  */
unsigned addr_bits (int family);
/* "IPv4", "IPv6".  */
const char *addr_family_name (int family);
struct roce_addr addr_v4 (uint32_t host_order);
bool addr_eq (const struct roce_addr *a, const struct roce_addr *b);
/* By family, then by value.  */
int addr_cmp (const struct roce_addr *a, const struct roce_addr *b);
/* a + n and hi - lo, in a's family (the caller keeps them inside it).  */
struct roce_addr addr_add (const struct roce_addr *a, roce_u128 n);
roce_u128 addr_diff (const struct roce_addr *hi, const struct roce_addr *lo);
/* The address in network order: 4 or 16 bytes into out; its length.  */
size_t addr_bytes (const struct roce_addr *a, uint8_t out[16]);
void addr_from_bytes (int family, const void *bytes, struct roce_addr *out);
/* Formats into buf (ADDR_STR_MAX); returns buf.  */
char *addr_format (const struct roce_addr *a, char *buf);

/* "<address>/<n>"; host bits must be zero.  Returns -1 on syntax, -2 when
 * host bits are set.  */
int cidr_parse (const char *s, struct roce_cidr *out);
roce_u128 cidr_mask (int family, unsigned prefix);
/* Whether a (of c's family) lies in c.  */
bool cidr_contains (const struct roce_cidr *c, const struct roce_addr *a);
bool cidr_eq (const struct roce_cidr *a, const struct roce_cidr *b);
/* The last address of c (IPv4's broadcast).  */
struct roce_addr cidr_last (const struct roce_cidr *c);
char *cidr_format (const struct roce_cidr *c, char *buf);

/* v in decimal into buf (U128_STR_MAX); returns buf.  */
char *u128_format (roce_u128 v, char *buf);

#endif
