/* SPDX-License-Identifier: Apache-2.0 */
/* The LLDP listener: an AF_PACKET socket per policy netdev (EtherType
 * 0x88CC, bound to the netdev, member of the nearest-bridge group
 * 01:80:c2:00:00:0e), read only.  Each good frame replaces the netdev's
 * record (lldp_record.c), at most once a second per netdev; memory is the
 * fixed struct lldp_port per netdev whatever arrives.  Never transmits: no
 * send call exists here, and `roce-hook lldp` forbids them (seccomp).  */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/utils.h"
#include "lldp/lldp.h"

#define WRITE_EVERY_MS 1000
#define RETRY_EVERY_MS 30000
/* The kernel's queue per socket: a flood is dropped there, not here.  */
#define RCVBUF 65536

static void
port_error (struct lldp_port *pt, const char *what, int e)
{
  snprintf (pt->error, sizeof (pt->error), "%s: %s", what, strerror (e));
}

/* EtherType 0x88CC to 01:80:c2:00:00:0e only, in the kernel (the decoder
 * checks again).  */
static int
attach_filter (int fd)
{
  static struct sock_filter code[] = {
    { 0x28, 0, 0, 12 },         /* ldh [12]: EtherType */
    { 0x15, 0, 5, 0x88cc },     /* jeq 0x88cc */
    { 0x20, 0, 0, 2 },          /* ld [2]: DA bytes 2..5 */
    { 0x15, 0, 3, 0xc200000e }, /* jeq c2:00:00:0e */
    { 0x28, 0, 0, 0 },          /* ldh [0]: DA bytes 0..1 */
    { 0x15, 0, 1, 0x0180 },     /* jeq 01:80 */
    { 0x06, 0, 0, 0x40000 },    /* accept */
    { 0x06, 0, 0, 0 },          /* drop */
  };
  struct sock_fprog prog = { .len = ARRAY_SIZE (code), .filter = code };
  return setsockopt (fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof (prog));
}

static void
port_open (struct lldp_port *pt)
{
  struct packet_mreq mr = { .mr_type = PACKET_MR_MULTICAST,
                            .mr_alen = 6,
                            .mr_address = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e } };
  struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons (LLDP_ETHERTYPE) };
  unsigned idx = if_nametoindex (pt->netdev);
  int rcvbuf = RCVBUF;
  cleanup_close int fd = -1;

  if (idx == 0)
    return port_error (pt, "no such netdev in the host's network namespace", errno);
  fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, htons (LLDP_ETHERTYPE));
  if (fd < 0)
    return port_error (pt, "socket(AF_PACKET) (needs CAP_NET_RAW)", errno);
  sll.sll_ifindex = (int) idx;
  mr.mr_ifindex = (int) idx;
  if (attach_filter (fd) < 0)
    return port_error (pt, "SO_ATTACH_FILTER", errno);
  if (bind (fd, (struct sockaddr *) &sll, sizeof (sll)) < 0)
    return port_error (pt, "bind", errno);
  if (setsockopt (fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof (mr)) < 0)
    return port_error (pt, "PACKET_ADD_MEMBERSHIP 01:80:c2:00:00:0e", errno);
  if (setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof (rcvbuf)) < 0)
    return port_error (pt, "SO_RCVBUF", errno);
  pt->error[0] = '\0';
  pt->fd = steal_fd (&fd);
}

static void
flush (const char *state_dir, struct lldp_port *pt, FILE *out)
{
  cleanup_error roce_error_t err = NULL;
  if (lldp_record_write (state_dir, pt->netdev, pt->heard, pt->frame, pt->len, &err) < 0)
    {
      if (out)
        roce_print (out, "roce-hook: lldp: %s: %s", pt->netdev, err->msg);
    }
  else
    pt->written++;
  pt->pending = false;
  pt->last_write_ms = mono_ms ();
}

/* One frame off the socket.  */
static void
port_read (const char *state_dir, struct lldp_port *pt, FILE *out)
{
  uint8_t buf[LLDP_FRAME_MAX];
  struct sockaddr_ll from;
  socklen_t flen = sizeof (from);
  cleanup_error roce_error_t err = NULL;
  struct lldp_info in;
  ssize_t n = recvfrom (pt->fd, buf, sizeof (buf), MSG_TRUNC, (struct sockaddr *) &from, &flen);
  bool changed;

  if (n < 0)
    {
      if (errno == EAGAIN || errno == EINTR)
        return;
      /* The netdev went away (ENETDOWN on unregister): opened again later. */
      port_error (pt, "recvfrom", errno);
      close (pt->fd);
      pt->fd = -1;
      return;
    }
  if (from.sll_pkttype == PACKET_OUTGOING)
    {
      pt->ignored++;
      return;
    }
  if ((size_t) n > sizeof (buf))
    {
      pt->invalid++;
      snprintf (pt->error, sizeof (pt->error), "a frame of %zd bytes (at most %d kept)", n,
                LLDP_FRAME_MAX);
      return;
    }
  if (lldp_decode (buf, (size_t) n, &in, &err) < 0)
    {
      pt->invalid++;
      snprintf (pt->error, sizeof (pt->error), "%s", err->msg);
      return;
    }
  if (in.dest != LLDP_DEST_NEAREST_BRIDGE)
    {
      pt->ignored++;
      return;
    }
  pt->frames++;
  changed = pt->len != (size_t) n || memcmp (pt->frame, buf, (size_t) n) != 0;
  memcpy (pt->frame, buf, (size_t) n);
  pt->len = (size_t) n;
  pt->heard = (int64_t) time (NULL);
  pt->pending = true;
  if (changed && out)
    {
      char id[2 * LLDP_TEXT_MAX + 2], sum[256];
      lldp_identity (&in, id, sizeof (id));
      lldp_summary (&in, sum, sizeof (sum));
      roce_print (out, "%s: %s: %s", pt->netdev, id, sum);
      fflush (out);
    }
  if (mono_ms () - pt->last_write_ms >= WRITE_EVERY_MS)
    flush (state_dir, pt, out);
}

static int
stop_signals (sigset_t *old)
{
  sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  if (sigprocmask (SIG_BLOCK, &set, old) < 0)
    return -1;
  return signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int
lldp_listen (const char *state_dir, char *const *netdevs, size_t n, unsigned seconds, FILE *out,
             struct lldp_port *ports, roce_error_t *err)
{
  int64_t start = mono_ms (), end = start + (int64_t) seconds * 1000, next_retry;
  cleanup_free struct pollfd *pfd = xmalloc0 ((n + 1) * sizeof (*pfd));
  cleanup_close int sfd = -1;
  size_t open_n = 0;
  sigset_t old;

  for (size_t i = 0; i < n; i++)
    {
      struct lldp_port *pt = &ports[i];
      memset (pt, 0, sizeof (*pt));
      pt->fd = -1;
      pt->last_write_ms = start - WRITE_EVERY_MS;
      if (strlen (netdevs[i]) >= sizeof (pt->netdev))
        {
          snprintf (pt->error, sizeof (pt->error), "not an interface name");
          continue;
        }
      memcpy (pt->netdev, netdevs[i], strlen (netdevs[i]) + 1);
      port_open (pt);
      if (pt->fd >= 0)
        open_n++;
      else if (out)
        roce_print (out, "roce-hook: lldp: %s: %s", pt->netdev, pt->error);
    }
  if (open_n == 0)
    {
      for (size_t i = 0; i < n; i++)
        if (ports[i].fd < 0)
          return roce_error_make (err, ENODEV, "no netdev to listen on: %s: %s",
                                  ports[i].netdev[0] ? ports[i].netdev : "?", ports[i].error);
      return roce_error_make (err, ENODEV, "no netdev to listen on");
    }
  sfd = stop_signals (&old);
  if (sfd < 0)
    return roce_error_sys (err, errno, "signalfd");
  next_retry = start + RETRY_EVERY_MS;

  for (;;)
    {
      int64_t now = mono_ms (), wait = 1000;
      int r;

      if (seconds && now >= end)
        break;
      if (seconds && end - now < wait)
        wait = end - now;
      for (size_t i = 0; i < n; i++)
        {
          pfd[i].fd = ports[i].fd; /* negative: poll skips it */
          pfd[i].events = POLLIN;
          pfd[i].revents = 0;
          if (ports[i].pending)
            {
              int64_t due = ports[i].last_write_ms + WRITE_EVERY_MS - now;
              if (due < wait)
                wait = due < 0 ? 0 : due;
            }
        }
      pfd[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
      r = poll (pfd, n + 1, (int) wait);
      if (r < 0 && errno != EINTR)
        return roce_error_sys (err, errno, "poll");
      if (r > 0 && pfd[n].revents)
        break;
      now = mono_ms ();
      for (size_t i = 0; i < n; i++)
        {
          struct lldp_port *pt = &ports[i];
          /* A burst is read in one go, at most 64 frames a netdev a turn.  */
          for (int k = 0; k < 64 && pt->fd >= 0 && r > 0 && (pfd[i].revents & (POLLIN | POLLERR));
               k++)
            {
              uint64_t before = pt->frames + pt->ignored + pt->invalid;
              port_read (state_dir, pt, out);
              if (pt->frames + pt->ignored + pt->invalid == before)
                break;
            }
          if (pt->pending && now - pt->last_write_ms >= WRITE_EVERY_MS)
            flush (state_dir, pt, out);
        }
      if (now >= next_retry)
        {
          next_retry = now + RETRY_EVERY_MS;
          for (size_t i = 0; i < n; i++)
            if (ports[i].fd < 0 && ports[i].netdev[0])
              port_open (&ports[i]);
        }
    }
  for (size_t i = 0; i < n; i++)
    {
      if (ports[i].pending)
        flush (state_dir, &ports[i], out);
      if (ports[i].fd >= 0)
        close (ports[i].fd);
      ports[i].fd = -1;
    }
  sigprocmask (SIG_SETMASK, &old, NULL);
  return 0;
}
