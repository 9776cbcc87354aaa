#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "nlsock.h"
#include "utils.h"

#define NLSOCK_TIMEOUT_S 5

void
nlsock_freep (struct nl_sock **sk)
{
  if (*sk)
    nl_socket_free (*sk);
  *sk = NULL;
}

void
nlmsg_freep (struct nl_msg **m)
{
  if (*m)
    nlmsg_free (*m);
  *m = NULL;
}

char *
nlsock_errno_text (int errnum)
{
  const char *name = strerrorname_np (errnum);
  if (name)
    return xasprintf ("%s (%s)", strerror (errnum), name);
  return xasprintf ("%s (errno %d)", strerror (errnum), errnum);
}

int
nlsock_open (int protocol, struct nl_sock **out, roce_error_t *err)
{
  struct sockaddr_nl local = { .nl_family = AF_NETLINK };
  struct timeval tv = { .tv_sec = NLSOCK_TIMEOUT_S };
  cleanup_close int fd = -1;
  cleanup_nlsock struct nl_sock *sk = NULL;
  int one = 1, ret;

  /* The socket is made here, not by nl_connect(), so that the kernel's errno
   * survives: libnl folds it into its own codes.  */
  fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (fd < 0)
    return roce_error_sys (err, errno, "netlink socket (protocol %d)", protocol);
  /* Port 0: the kernel picks a unique one.  */
  if (bind (fd, (struct sockaddr *) &local, sizeof (local)) < 0)
    return roce_error_sys (err, errno, "bind netlink socket");
  /* Best effort: older kernels lack them; the replies are parsed either way.  */
  (void) setsockopt (fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof (one));
  (void) setsockopt (fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof (one));
  if (setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv)) < 0)
    return roce_error_sys (err, errno, "netlink socket timeout");

  sk = nl_socket_alloc ();
  if (sk == NULL)
    return roce_error_make (err, ENOMEM, "nl_socket_alloc");
  ret = nl_socket_set_fd (sk, protocol, fd);
  if (ret < 0)
    return roce_error_make (err, EINVAL, "netlink socket: %s", nl_geterror (ret));
  steal_fd (&fd); /* the nl_sock owns it now */
  nl_socket_enable_msg_peek (sk);
  *out = steal_pointer (&sk);
  return 0;
}

int
nlsock_send (struct nl_sock *sk, struct nl_msg *msg, uint32_t *seq, roce_error_t *err)
{
  int ret = nl_send_auto (sk, msg);
  if (ret < 0)
    return roce_error_make (err, EIO, "netlink send: %s", nl_geterror (ret));
  *seq = nlmsg_hdr (msg)->nlmsg_seq;
  return 0;
}

int
nlsock_recv (struct nl_sock *sk, unsigned char **buf, size_t *len, roce_error_t *err)
{
  for (;;)
    {
      struct sockaddr_nl peer = { 0 };
      unsigned char *b = NULL;
      int n = nl_recv (sk, &peer, &b, NULL);
      if (n == -NLE_INTR)
        continue;
      if (n == -NLE_AGAIN)
        return roce_error_make (err, ETIMEDOUT, "no answer from the kernel in %d s",
                                NLSOCK_TIMEOUT_S);
      if (n < 0)
        return roce_error_make (err, EIO, "netlink receive: %s", nl_geterror (n));
      if (n == 0)
        {
          free (b);
          return roce_error_make (err, EIO, "netlink receive: end of stream");
        }
      if (peer.nl_pid != 0)
        {
          /* Not from the kernel: ignore.  */
          free (b);
          continue;
        }
      *buf = b;
      *len = (size_t) n;
      return 0;
    }
}

const char *
nlsock_ext_ack_msg (const struct nlmsghdr *nlh)
{
  static const struct nla_policy policy[NLMSGERR_ATTR_MAX + 1] = {
    [NLMSGERR_ATTR_MSG] = { .type = NLA_STRING },
  };
  struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
  const struct nlmsgerr *e;
  size_t payload, off;

  if (! (nlh->nlmsg_flags & NLM_F_ACK_TLVS))
    return NULL;
  payload = nlh->nlmsg_len - NLMSG_HDRLEN;
  if (payload < sizeof (struct nlmsgerr))
    return NULL;
  e = NLMSG_DATA (nlh);
  off = sizeof (struct nlmsgerr);
  if (! (nlh->nlmsg_flags & NLM_F_CAPPED))
    {
      /* The whole request is echoed; the TLVs follow it.  */
      if (e->msg.nlmsg_len < sizeof (struct nlmsghdr))
        return NULL;
      off = sizeof (int) + NLMSG_ALIGN (e->msg.nlmsg_len);
    }
  off = NLMSG_ALIGN (off);
  if (off >= payload)
    return NULL;
  if (nla_parse (tb, NLMSGERR_ATTR_MAX, (struct nlattr *) ((char *) NLMSG_DATA (nlh) + off),
                 (int) (payload - off), policy)
      < 0)
    return NULL;
  if (tb[NLMSGERR_ATTR_MSG] == NULL)
    return NULL;
  return nla_get_string (tb[NLMSGERR_ATTR_MSG]);
}
