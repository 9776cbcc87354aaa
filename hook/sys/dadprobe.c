/* SPDX-License-Identifier: Apache-2.0 */
/* A duplicate-address probe's schedule on a packet socket (dadprobe.h).  */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <linux/if_packet.h>

#include "lib/utils.h"
#include "sys/dadprobe.h"

int
dadprobe_run (int fd, unsigned ms, unsigned num, const struct dadprobe_ops *ops, void *ctx,
              roce_error_t *err)
{
  int64_t start = mono_ms (), end = start + ms;
  unsigned sent = 0;

  for (;;)
    {
      int64_t now = mono_ms (), next;
      struct pollfd pfd = { .fd = fd, .events = POLLIN };
      int r;

      if (sent < num && now >= start + (int64_t) ms * sent / num)
        {
          if (ops->send (ctx, err) < 0)
            return -1;
          sent++;
        }
      if (now >= end)
        return 0;
      next = sent < num ? start + (int64_t) ms * sent / num : end;
      if (next > end)
        next = end;
      r = poll (&pfd, 1, (int) (next > now ? next - now : 0));
      if (r < 0 && errno != EINTR)
        return roce_error_sys (err, errno, "poll the %s socket", ops->what);
      if (r <= 0)
        continue;
      for (;;)
        {
          uint8_t buf[1500];
          struct sockaddr_ll from;
          socklen_t flen = sizeof (from);
          ssize_t n = recvfrom (fd, buf, sizeof (buf), MSG_TRUNC, (struct sockaddr *) &from, &flen);
          if (n < 0)
            {
              if (errno == EAGAIN || errno == EINTR)
                break;
              return roce_error_sys (err, errno, "receive on the %s socket", ops->what);
            }
          /* Our own probes come back as outgoing; a frame longer than buf
           * is no answer to read.  */
          if (from.sll_pkttype == PACKET_OUTGOING || (size_t) n > sizeof (buf))
            continue;
          if (ops->conflict (ctx, buf, (size_t) n, &from))
            return 1;
        }
    }
}
