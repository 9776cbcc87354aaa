/* SPDX-License-Identifier: Apache-2.0 */
/* MAC addresses as text.  */
#ifndef ROCE_MAC_H
#define ROCE_MAC_H

#include <stdint.h>

#define MAC_STR_MAX 18 /* "02:ce:c6:12:0a:64" + NUL */

/* "02:ce:c6:12:0a:64".  buf: at least MAC_STR_MAX bytes.  */
const char *mac_format (const uint8_t mac[6], char *buf);
/* Its inverse: exactly six two-digit hex octets separated by ':'.  */
int mac_parse (const char *s, uint8_t mac[6]);

#endif
