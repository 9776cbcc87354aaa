/* SPDX-License-Identifier: Apache-2.0 */
/* MAC addresses as text (mac.h).  */
#define _GNU_SOURCE
#include <stdio.h>

#include "lib/mac.h"

const char *
mac_format (const uint8_t m[6], char *buf)
{
  snprintf (buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

int
mac_parse (const char *s, uint8_t mac[6])
{
  for (int i = 0; i < 6; i++)
    {
      const char *o = s + 3 * i;
      unsigned v = 0;
      for (int k = 0; k < 2; k++)
        {
          char c = o[k];
          unsigned d = c >= '0' && c <= '9'   ? (unsigned) (c - '0')
                       : c >= 'a' && c <= 'f' ? (unsigned) (c - 'a' + 10)
                       : c >= 'A' && c <= 'F' ? (unsigned) (c - 'A' + 10)
                                              : 16u;
          if (d > 15)
            return -1;
          v = v * 16 + d;
        }
      if (o[2] != (i == 5 ? '\0' : ':'))
        return -1;
      mac[i] = (uint8_t) v;
    }
  return 0;
}
