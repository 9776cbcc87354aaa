/* SPDX-License-Identifier: Apache-2.0 */
/* The one netlink transport: every socket it opens has the receive timeout
 * (a hook never waits on the kernel without bound), extended acks on, and
 * keeps the kernel's errno.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/netlink.h>

#include "lib/utils.h"
#include "sys/dcb.h"
#include "sys/netlink.h"
#include "unit.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

static void
assert_socket_is_bounded (struct nl_sock *sk)
{
  struct timeval tv = { 0 };
  socklen_t len = sizeof (tv);
  int on = 0;
  socklen_t olen = sizeof (on);

  cr_assert_eq (getsockopt (netlink_fd (sk), SOL_SOCKET, SO_RCVTIMEO, &tv, &len), 0);
  cr_assert_eq (tv.tv_sec, NETLINK_TIMEOUT_S, "receive timeout %ld s", (long) tv.tv_sec);
  cr_assert_eq (getsockopt (netlink_fd (sk), SOL_NETLINK, NETLINK_EXT_ACK, &on, &olen), 0);
  cr_assert_eq (on, 1, "extended acks off");
}

Test (netlink, the_rtnetlink_socket_has_a_receive_timeout)
{
  cleanup_nl_sock struct nl_sock *sk = NULL;
  cleanup_error roce_error_t err = NULL;
  cr_assert_eq (netlink_open (-1, &sk, &err), 0, "%s", err ? err->msg : "");
  assert_socket_is_bounded (sk);
}

Test (netlink, every_protocol_gets_the_same_socket)
{
  cleanup_nl_sock struct nl_sock *sk = NULL;
  cleanup_error roce_error_t err = NULL;
  cr_assert_eq (netlink_open_proto (NETLINK_ROUTE, -1, &sk, &err), 0, "%s", err ? err->msg : "");
  assert_socket_is_bounded (sk);
}

Test (netlink, a_protocol_the_kernel_lacks_keeps_its_errno)
{
  cleanup_nl_sock struct nl_sock *sk = NULL;
  cleanup_error roce_error_t err = NULL;
  /* 31 is past every protocol the kernel defines (MAX_LINKS is 32).  */
  cr_assert_lt (netlink_open_proto (31, -1, &sk, &err), 0);
  cr_assert_eq (roce_error_status (&err), EPROTONOSUPPORT, "%s", err->msg);
}

Test (netlink, an_unanswered_receive_times_out)
{
  cleanup_nl_sock struct nl_sock *sk = NULL;
  cleanup_error roce_error_t err = NULL;
  unsigned char *buf = NULL;
  size_t len = 0;
  struct timeval tv = { .tv_usec = 50000 };

  cr_assert_eq (netlink_open (-1, &sk, &err), 0);
  /* Nothing was asked, so nothing comes: shorten the wait for the test.  */
  cr_assert_eq (setsockopt (netlink_fd (sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof (tv)), 0);
  cr_assert_lt (netlink_recv (sk, &buf, &len, &err), 0);
  cr_assert_eq (roce_error_status (&err), ETIMEDOUT, "%s", err->msg);
}

/* Poststop hears of a namespace's end instead of searching every process
 * for what might still hold it: the kernel forgets the host's id for a
 * namespace when the namespace dies, and says so.  */
Test (netlink, the_end_of_a_namespace_is_heard_through_its_id)
{
  cleanup_nl_sock struct nl_sock *w = NULL;
  cleanup_error roce_error_t err = NULL;
  int up[2], go[2], nsfd, status;
  int32_t nsid = -1;
  char path[64], c;
  pid_t child;

  /* The test's own namespace is the host here, so the ids are its own.  */
  if (unshare (CLONE_NEWNET) < 0)
    cr_skip ("a network namespace of its own: %s", strerror (errno));
  cr_assert_eq (pipe (up), 0);
  cr_assert_eq (pipe (go), 0);
  child = fork ();
  cr_assert_geq (child, 0);
  if (child == 0)
    {
      if (unshare (CLONE_NEWNET) < 0 || write (up[1], "x", 1) != 1 || read (go[0], &c, 1) < 0)
        _exit (1);
      _exit (0);
    }
  cr_assert_eq (read (up[0], &c, 1), 1, "the child's namespace");
  snprintf (path, sizeof (path), "/proc/%d/ns/net", (int) child);
  nsfd = open (path, O_RDONLY | O_CLOEXEC);
  cr_assert_geq (nsfd, 0);
  cr_assert_eq (netlink_nsid_of (nsfd, &nsid, &err), 0, "%s", err ? err->msg : "");
  close (nsfd);
  cr_assert_eq (netlink_nsid_watch (&w, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (netlink_nsid_forgotten (w, nsid, 0), 0, "forgotten while its process lives");
  cr_assert_eq (netlink_nsid_forgotten (w, nsid, 20), 0, "forgotten while its process lives");
  cr_assert_eq (write (go[1], "x", 1), 1);
  cr_assert_eq (waitpid (child, &status, 0), child);
  cr_assert_eq (netlink_nsid_forgotten (w, nsid, 5000), 1, "the end of namespace id %d not heard",
                nsid);
  /* An id nobody ends is not heard of: the wait ends with its bound.  */
  cr_assert_eq (netlink_nsid_forgotten (w, nsid + 1, 30), 0);
}

/* A stopped container's address is held while its macvlan can still answer
 * for it: the macvlan's MAC is on its parent's unicast list while it is up,
 * whichever namespace it is in, and off it once it is down or gone.  */
Test (netlink, a_macvlan_is_on_its_parents_list_while_it_is_up)
{
  cleanup_nl_sock struct nl_sock *s = NULL, *host = NULL;
  cleanup_error roce_error_t err = NULL;
  const uint8_t mac[6] = { 0x02, 0xce, 0xc6, 0x12, 0x0a, 0x64 };
  const uint8_t other[6] = { 0x02, 0xce, 0xc6, 0x12, 0x0a, 0x65 };
  struct netlink_link parent, mv;
  int self;

  if (unshare (CLONE_NEWNET) < 0)
    cr_skip ("a network namespace of its own: %s", strerror (errno));
  if (system ("ip link add rt-nic type veth peer name rt-peer && ip link set rt-nic up") != 0)
    cr_skip ("no veth here");
  self = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  cr_assert_geq (self, 0);
  cr_assert_eq (netlink_open (-1, &s, &err), 0);
  cr_assert_eq (netlink_open (-1, &host, &err), 0);
  cr_assert_eq (netlink_link_get (s, "rt-nic", &parent, &err), 0, "%s", err ? err->msg : "");
  {
    struct netlink_macvlan m = { .parent_ifindex = parent.ifindex,
                                 .name = "rt-mv",
                                 .mtu = 1500,
                                 .netns_fd = self,
                                 .has_mac = true,
                                 .up = false };
    memcpy (m.mac, mac, 6);
    cr_assert_eq (netlink_macvlan_create (s, &m, &err), 0, "%s", err ? err->msg : "");
  }
  cr_assert_eq (netlink_link_get (s, "rt-mv", &mv, &err), 0);
  cr_assert_eq (netlink_mac_on_link (host, parent.ifindex, mac, &err), 0, "listed while down");
  cr_assert_eq (netlink_link_set_up (s, mv.ifindex, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (netlink_mac_on_link (host, parent.ifindex, mac, &err), 1, "%s",
                err ? err->msg : "not listed while up");
  cr_assert_eq (netlink_mac_on_link (host, parent.ifindex, other, &err), 0, "another MAC listed");
  cr_assert_eq (netlink_link_del (s, mv.ifindex, &err), 0);
  cr_assert_eq (netlink_mac_on_link (host, parent.ifindex, mac, &err), 0, "listed once deleted");
  /* A parent that is gone took its macvlans with it.  */
  cr_assert_eq (netlink_link_del (s, parent.ifindex, &err), 0);
  cr_assert_eq (netlink_mac_on_link (host, parent.ifindex, mac, &err), 0, "%s",
                err ? err->msg : "");
  close (self);
}

/* One socket of the host's for the whole start (uplink.h): raw requests
 * (the namespace's id, a DCB query) and libnl-route calls take turns on it,
 * each answered in full and none answered with another's reply.  */
Test (netlink, raw_requests_and_libnl_calls_share_a_socket)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_nl_sock struct nl_sock *sk = NULL;
  struct netlink_link lo = { 0 };
  struct dcb_ieee d;
  int32_t a = -1, b = -1;
  int nsfd;

  if (unshare (CLONE_NEWNET) < 0)
    cr_skip ("a network namespace of its own: %s", strerror (errno));
  nsfd = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  cr_assert_geq (nsfd, 0);
  cr_assert_eq (netlink_open (-1, &sk, &err), 0, "%s", err ? err->msg : "");
  for (int round = 0; round < 3; round++)
    {
      cr_assert_eq (netlink_link_get (sk, "lo", &lo, &err), 0, "round %d: %s", round,
                    err ? err->msg : "");
      cr_assert_eq (lo.ifindex, 1);
      cr_assert_eq (netlink_nsid_on (sk, nsfd, &a, &err), 0, "round %d: %s", round,
                    err ? err->msg : "");
      assert_err_contains (dcb_query_ieee_on (sk, "lo", &d, &err), err, "EOPNOTSUPP");
      roce_error_release (&err);
      cr_assert_eq (netlink_nsid_on (sk, nsfd, &b, &err), 0, "round %d: %s", round,
                    err ? err->msg : "");
      cr_assert_eq (a, b, "the same namespace, the same id");
      cr_assert_geq (a, 0);
      assert_err_contains (netlink_link_get (sk, "rhnonexist9", &lo, &err), err,
                           "no such interface");
      roce_error_release (&err);
      assert_err_contains (netlink_link_get (sk, "a-name-past-ifnamsiz", &lo, &err), err,
                           "no such interface");
      roce_error_release (&err);
    }
  close (nsfd);
}
