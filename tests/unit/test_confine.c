/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of confine (Criterion).  */
#define _GNU_SOURCE
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/utils.h"
#include "sys/confine.h"
#include "unit.h"

/* Runs fn in a child (the filter cannot be removed) and returns its exit
 * status.  */
static int
in_child (int (*fn) (void))
{
  int st;
  pid_t pid = fork ();
  cr_assert_geq (pid, 0);
  if (pid == 0)
    _exit (fn ());
  cr_assert_eq (waitpid (pid, &st, 0), pid);
  cr_assert (WIFEXITED (st), "child died: status %d", st);
  return WEXITSTATUS (st);
}

static int
exec_after_filter (void)
{
  char *argv[] = { "true", NULL };
  if (confine_seccomp (CONFINE_STAGE, NULL) < 0)
    return 10;
  execv ("/bin/true", argv);
  return errno == EPERM ? 0 : 11;
}

Test (confine, exec_fails_after_the_stage_filter)
{
  /* valgrind cannot survive a failed execve (it aborts the process).  */
  if (getenv ("ROCE_UNDER_VALGRIND"))
    cr_skip_test ("under valgrind");
  cr_assert_eq (in_child (exec_after_filter), 0);
}

static int
query_filter_denies_mount_and_setns (void)
{
  if (confine_seccomp (CONFINE_QUERY, NULL) < 0)
    return 10;
  if (mount ("none", "/tmp", "tmpfs", 0, NULL) == 0 || errno != EPERM)
    return 11;
  if (unshare (0) == 0 || errno != EPERM)
    return 12;
#ifndef __SANITIZE_ADDRESS__
  if (fork () >= 0 || errno != EPERM)
    return 13;
#endif
  return 0;
}

Test (confine, query_filter_is_tighter)
{
  cr_assert_eq (in_child (query_filter_denies_mount_and_setns), 0);
}

static int
gc_filter_lets_only_network_namespaces_through (void)
{
  int net = open ("/proc/self/ns/net", O_RDONLY);
  int mnt = open ("/proc/self/ns/mnt", O_RDONLY);
  if (net < 0 || mnt < 0 || confine_seccomp (CONFINE_GC, NULL) < 0)
    return 10;
  if (setns (mnt, CLONE_NEWNS) == 0 || errno != EPERM)
    return 11;
  if (setns (mnt, 0) == 0 || errno != EPERM)
    return 12;
  /* Joining our own network namespace again: allowed (EPERM only from a
   * missing capability, never from the filter when run as root).  */
  if (geteuid () == 0 && setns (net, CLONE_NEWNET) < 0)
    return 13;
  if (mount ("none", "/tmp", "tmpfs", 0, NULL) == 0 || errno != EPERM)
    return 14;
  return 0;
}

Test (confine, gc_filter_allows_only_network_setns)
{
  cr_assert_eq (in_child (gc_filter_lets_only_network_namespaces_through), 0);
}

/* check --probe makes a network namespace of its own and enters it:
 * unshare(CLONE_NEWNET) and setns into a network namespace pass, any other
 * namespace (or several at once) does not.  */
static int
probe_filter_lets_only_a_network_namespace_be_made (void)
{
  int mnt = open ("/proc/self/ns/mnt", O_RDONLY);
  if (mnt < 0 || confine_seccomp (CONFINE_PROBE, NULL) < 0)
    return 10;
  if (unshare (CLONE_NEWNS) == 0 || errno != EPERM)
    return 11;
  if (unshare (CLONE_NEWNET | CLONE_NEWNS) == 0 || errno != EPERM)
    return 12;
  if (unshare (0) == 0 || errno != EPERM)
    return 13;
  if (setns (mnt, CLONE_NEWNS) == 0 || errno != EPERM)
    return 14;
  if (geteuid () == 0 && unshare (CLONE_NEWNET) < 0)
    return 15;
  if (mount ("none", "/tmp", "tmpfs", 0, NULL) == 0 || errno != EPERM)
    return 16;
  return 0;
}

Test (confine, probe_filter_allows_only_a_network_namespace)
{
  cr_assert_eq (in_child (probe_filter_lets_only_a_network_namespace_be_made), 0);
}

static int
stage_filter_still_allows_the_work (void)
{
  int fd;
  if (confine_seccomp (CONFINE_STAGE, NULL) < 0)
    return 10;
  fd = open ("/proc/self/ns/net", O_RDONLY);
  if (fd < 0)
    return 11;
  close (fd);
  return fork () >= 0 ? 0 : 12;
}

Test (confine, stage_filter_allows_what_the_hook_does)
{
  cr_assert_eq (in_child (stage_filter_still_allows_the_work), 0);
}

static int
caps_are_cut_and_raised_per_phase (void)
{
  cap_t c;
  cap_flag_value_t v;
  if (confine_caps (CONFINE_STAGE, NULL) < 0 || confine_phase (PHASE_NONE, NULL) < 0)
    return 10;
  c = cap_get_proc ();
  if (cap_get_flag (c, CAP_NET_ADMIN, CAP_EFFECTIVE, &v) < 0 || v != CAP_CLEAR)
    return 11;
  if (cap_get_flag (c, CAP_SYS_MODULE, CAP_PERMITTED, &v) < 0 || v != CAP_CLEAR)
    return 12;
  /* The bounding set is left as it is: it only limits what an exec'd
   * program gains, and the confined hook cannot exec (confine/exec_*).  */
  cap_free (c);
  if (confine_phase (PHASE_NETWORK, NULL) < 0)
    return 14;
  c = cap_get_proc ();
  if (cap_get_flag (c, CAP_NET_ADMIN, CAP_EFFECTIVE, &v) < 0 || v != CAP_SET)
    return 15;
  if (cap_get_flag (c, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &v) < 0 || v != CAP_CLEAR)
    return 16;
  cap_free (c);
  return 0;
}

Test (confine, capabilities_per_phase)
{
  if (geteuid () != 0)
    cr_skip_test ("needs root");
  cr_assert_eq (in_child (caps_are_cut_and_raised_per_phase), 0);
}

/* qos apply's filter: what it never needs fails with EPERM (run as root,
 * so EPERM comes from the filter and not from a missing capability); the
 * sockets it speaks through and the rdma_cm group's mkdir/rmdir work.  */
static int
qos_filter_denies_all_but_its_work (void)
{
  char dir[] = "/tmp/roce-confine-XXXXXX";
  cleanup_free char *group = NULL;
  int net = open ("/proc/self/ns/net", O_RDONLY);
  int fd;
  pid_t pid;

  if (net < 0 || mkdtemp (dir) == NULL)
    return 10;
  group = xasprintf ("%s/mlx5_0", dir);
  if (confine_seccomp (CONFINE_QOS, NULL) < 0)
    return 11;
  if (umount2 ("/nonexistent-roce", 0) == 0 || errno != EPERM)
    return 12;
  if (setns (net, CLONE_NEWNET) == 0 || errno != EPERM)
    return 13;
  if (unshare (CLONE_NEWNS) == 0 || errno != EPERM)
    return 14;
  if (syscall (__NR_bpf, 0xffff, NULL, 0) == 0 || errno != EPERM)
    return 15;
  if (mknod (group, S_IFIFO | 0600, 0) == 0 || errno != EPERM)
    return 16;
#ifndef __SANITIZE_ADDRESS__
  pid = fork ();
  if (pid == 0)
    _exit (0);
  if (pid > 0)
    {
      waitpid (pid, NULL, 0);
      return 17;
    }
  if (errno != EPERM)
    return 18;
#else
  (void) pid;
#endif
  if (! getenv ("ROCE_UNDER_VALGRIND"))
    {
      char *argv[] = { "true", NULL };
      execv ("/bin/true", argv);
      if (errno != EPERM)
        return 19;
    }
  fd = socket (AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 || errno != EPERM)
    return 20;
  fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0); /* DCB netlink */
  if (fd < 0)
    return 21;
  close (fd);
  fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); /* the ethtool ioctl */
  if (fd < 0)
    return 22;
  close (fd);
  if (mkdir (group, 0755) < 0 || rmdir (group) < 0 || rmdir (dir) < 0)
    return 23;
  return 0;
}

Test (confine, qos_filter_denies_what_qos_apply_never_does)
{
  if (geteuid () != 0)
    cr_skip_test ("needs root: EPERM must come from the filter");
  cr_assert_eq (in_child (qos_filter_denies_all_but_its_work), 0);
}

/* qos apply keeps CAP_NET_ADMIN alone: not the network phase's SYS_ADMIN,
 * SYS_PTRACE and NET_RAW (what it ran with before its own profile), nor
 * DAC_OVERRIDE.  */
static int
qos_caps_are_net_admin_alone (void)
{
  static const cap_value_t never[]
      = { CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_RAW, CAP_DAC_OVERRIDE, CAP_SYS_MODULE, CAP_BPF };
  cap_t c;
  cap_flag_value_t v;
  int ret = 0;

  if (confine_caps (CONFINE_QOS, NULL) < 0 || confine_phase (PHASE_QOS, NULL) < 0)
    return 10;
  c = cap_get_proc ();
  if (cap_get_flag (c, CAP_NET_ADMIN, CAP_EFFECTIVE, &v) < 0 || v != CAP_SET)
    ret = 11;
  for (size_t i = 0; i < ARRAY_SIZE (never) && ret == 0; i++)
    if (cap_get_flag (c, never[i], CAP_PERMITTED, &v) < 0 || v != CAP_CLEAR)
      ret = 12 + (int) i;
  cap_free (c);
  if (ret == 0 && strcmp (confine_phase_caps (PHASE_QOS), "CAP_NET_ADMIN") != 0)
    ret = 30;
  return ret;
}

Test (confine, qos_capabilities_are_net_admin_alone)
{
  cap_t c = cap_get_proc ();
  cap_flag_value_t v = CAP_CLEAR;
  cap_get_flag (c, CAP_NET_ADMIN, CAP_PERMITTED, &v);
  cap_free (c);
  if (geteuid () != 0 || v != CAP_SET)
    cr_skip_test ("needs root with CAP_NET_ADMIN");
  cr_assert_eq (in_child (qos_caps_are_net_admin_alone), 0);
}

/* TCP is etcd's: refused without `cluster`, allowed with it; an AF_INET
 * datagram socket (ethtool ioctls) and netlink stay allowed either way.  */
static int
tcp_after_filter (bool tcp, enum confine_profile profile)
{
  int fd;
  if (confine_seccomp_net (profile, tcp, NULL) < 0)
    return 10;
  fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (tcp ? fd < 0 : (fd >= 0 || errno != EPERM))
    return 11;
  if (fd >= 0)
    close (fd);
  fd = socket (AF_INET6, SOCK_STREAM, 0);
  if (! tcp && (fd >= 0 || errno != EPERM))
    return 12;
  if (fd >= 0)
    close (fd);
  fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 13;
  close (fd);
  fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 14;
  close (fd);
  return 0;
}

static int
stage_no_tcp (void)
{
  return tcp_after_filter (false, CONFINE_STAGE);
}
static int
stage_tcp (void)
{
  return tcp_after_filter (true, CONFINE_STAGE);
}
static int
gc_no_tcp (void)
{
  return tcp_after_filter (false, CONFINE_GC);
}
static int
query_tcp (void)
{
  return tcp_after_filter (true, CONFINE_QUERY);
}

Test (confine, tcp_only_with_cluster)
{
  cr_assert_eq (in_child (stage_no_tcp), 0);
  cr_assert_eq (in_child (stage_tcp), 0);
  cr_assert_eq (in_child (gc_no_tcp), 0);
  cr_assert_eq (in_child (query_tcp), 0);
}

/* The filters the build exported (build/gen/seccomp.c) are, byte for byte,
 * the ones libseccomp builds from hook/sys/confine.c now: the prebuilt table
 * cannot drift from the rules.  */
Test (confine, prebuilt_filters_are_the_rules)
{
  static const enum confine_profile profiles[]
      = { CONFINE_STAGE,  CONFINE_QUERY, CONFINE_GC,   CONFINE_QOS,
          CONFINE_LISTEN, CONFINE_PROBE, CONFINE_GUARD };
  for (size_t p = 0; p < ARRAY_SIZE (profiles); p++)
    for (int tcp = 0; tcp <= 1; tcp++)
      {
        cleanup_error roce_error_t err = NULL;
        const struct confine_bpf *pre = confine_bpf_prebuilt (profiles[p], tcp);
        cleanup_close int fd = memfd_create ("seccomp", MFD_CLOEXEC);
        cleanup_free char *built = NULL;
        size_t len = 0;
        cr_assert_not_null (pre, "no prebuilt filter for profile %d, tcp %d", (int) profiles[p],
                            tcp);
        cr_assert_eq (confine_seccomp_export (profiles[p], tcp, fd, &err), 0, "%s",
                      err ? err->msg : "");
        cr_assert_eq (lseek (fd, 0, SEEK_SET), 0);
        cr_assert_eq (read_all_fd (fd, 1 << 20, &built, &len, &err), 0);
        cr_assert_eq (len, pre->len * 8, "profile %d, tcp %d: %zu bytes vs %zu", (int) profiles[p],
                      tcp, len, pre->len * 8);
        cr_assert_eq (memcmp (built, pre->insns, len), 0, "profile %d, tcp %d differs",
                      (int) profiles[p], tcp);
      }
}
