/* A libnl-3 socket set up the way every kernel query of the QoS probe wants
 * it: connected in the caller's network namespace (the host's, for the hook),
 * extended acks on, capped acks, a receive timeout so that a hook never
 * hangs, and the kernel's errno kept when the protocol does not exist
 * (NETLINK_RDMA answers EPROTONOSUPPORT on a kernel without RDMA).  */
#ifndef ROCE_NLSOCK_H
#define ROCE_NLSOCK_H

#include <stdint.h>
#include <stddef.h>

#include "error.h"

struct nl_sock;
struct nl_msg;
struct nlmsghdr;

/* On failure err->status is the errno of socket()/bind().  */
int nlsock_open (int protocol, struct nl_sock **out, roce_error_t *err);
void nlsock_freep (struct nl_sock **sk);
void nlmsg_freep (struct nl_msg **m);
#define cleanup_nlsock __attribute__ ((cleanup (nlsock_freep)))
#define cleanup_nlmsg __attribute__ ((cleanup (nlmsg_freep)))

/* Sends msg (sequence number and port filled in) and returns its sequence
 * number in *seq.  */
int nlsock_send (struct nl_sock *sk, struct nl_msg *msg, uint32_t *seq, roce_error_t *err);

/* Receives one datagram from the kernel (malloc'ed, caller frees).  */
int nlsock_recv (struct nl_sock *sk, unsigned char **buf, size_t *len, roce_error_t *err);

/* The text of an NLMSG_ERROR's extended ack (NLMSGERR_ATTR_MSG), or NULL.
 * Works whether or not the kernel echoed the request (NLM_F_CAPPED).  The
 * caller has checked that nlh is a whole NLMSG_ERROR message.  */
const char *nlsock_ext_ack_msg (const struct nlmsghdr *nlh);

/* "Operation not supported (EOPNOTSUPP)".  Caller frees.  */
char *nlsock_errno_text (int errnum);

#endif
