/* SPDX-License-Identifier: Apache-2.0 */
/* The schedule a duplicate-address probe keeps on a packet socket, by ARP
 * (arp.h, RFC 5227) or by Neighbor Solicitation (ndisc.h, RFC 4862): `num`
 * probes spread over `ms`, every frame read between them handed to the
 * family's check.  */
#ifndef ROCE_DADPROBE_H
#define ROCE_DADPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct sockaddr_ll;

struct dadprobe_ops
{
  /* Sends one probe.  */
  int (*send) (void *ctx, roce_error_t *err);
  /* Whether a frame read (its payload, and who sent it) says someone else
   * holds or probes for the address; its MAC into the family's ctx.  */
  bool (*conflict) (void *ctx, const uint8_t *pkt, size_t len, const struct sockaddr_ll *from);
  const char *what; /* "ARP", "IPv6 packet": for errors */
};

/* 1: a frame was a conflict, 0: ms passed without one, < 0: error.  */
int dadprobe_run (int fd, unsigned ms, unsigned num, const struct dadprobe_ops *ops, void *ctx,
                  roce_error_t *err);

#endif
