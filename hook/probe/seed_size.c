/* seed_parse_tmpfs_size alone: roce-runtime needs it, and none of the
 * probes the rest of seed.c links (see uverbs.c).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "seed.h"

int
seed_parse_tmpfs_size (const char *s, uint64_t *out)
{
  char *end = NULL;
  unsigned long long v;
  unsigned shift = 0;

  if (s[0] < '0' || s[0] > '9')
    return -1;
  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno != 0)
    return -1;
  switch (*end)
    {
    case '\0':
      break;
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    default:
      return -1;
    }
  if (*end && end[1] != '\0')
    return -1;
  if (shift && v > (UINT64_MAX >> shift))
    return -1;
  *out = (uint64_t) v << shift;
  return 0;
}
