/* SPDX-License-Identifier: Apache-2.0 */
/* CPU lists as the kernel writes them (node<N>/cpulist) and as a spec's
 * linux.resources.cpu.cpus carries them (untrusted): "0-23,96-119".  */
#define _GNU_SOURCE
#include <string.h>

#include "topo/topo_int.h"

static const char *
number (const char *s, unsigned *out)
{
  unsigned v = 0;
  const char *q = s;
  while (*q >= '0' && *q <= '9' && q - s < 6)
    v = v * 10 + (unsigned) (*q++ - '0');
  if (q == s || (*q >= '0' && *q <= '9'))
    return NULL;
  *out = v;
  return q;
}

static const char *
blanks (const char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\n')
    s++;
  return s;
}

int
topo_parse_cpulist (const char *s, struct topo_cpuset *out)
{
  memset (out, 0, sizeof (*out));
  s = blanks (s);
  if (*s == '\0')
    return 0;
  for (;;)
    {
      unsigned lo, hi;
      s = number (blanks (s), &lo);
      if (s == NULL)
        return -1;
      hi = lo;
      if (*s == '-' && (s = number (s + 1, &hi)) == NULL)
        return -1;
      if (hi < lo || hi >= TOPO_CPUS_MAX)
        return -1;
      for (unsigned c = lo; c <= hi; c++)
        out->bits[c / 64] |= 1ull << (c % 64);
      s = blanks (s);
      if (*s == '\0')
        return 0;
      if (*s++ != ',')
        return -1;
    }
}

bool
topo_cpuset_meets (const struct topo_cpuset *a, const struct topo_cpuset *b)
{
  for (size_t i = 0; i < TOPO_CPUS_MAX / 64; i++)
    if (a->bits[i] & b->bits[i])
      return true;
  return false;
}

bool
topo_cpuset_empty (const struct topo_cpuset *a)
{
  for (size_t i = 0; i < TOPO_CPUS_MAX / 64; i++)
    if (a->bits[i])
      return false;
  return true;
}
