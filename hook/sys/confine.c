/* SPDX-License-Identifier: Apache-2.0 */
/* Self-confinement: the seccomp filter of each phase and command, and the
 * capability sets cut to what each needs.  */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <seccomp.h>
#include <sys/capability.h>

#include "lib/utils.h"
#include "sys/confine.h"

/* Never needed by any part of the hook: running programs (least of all from
 * a container image), debugging other processes, kernels and modules, keys,
 * other processes' memory, and the clock.  */
/* Sanitizer builds (make debug) keep ptrace and clone: LeakSanitizer's exit
 * check clones a tracer that ptraces the process's own threads.  */
#ifdef __SANITIZE_ADDRESS__
#define SANITIZER_BUILD 1
#else
#define SANITIZER_BUILD 0
#endif

static const char *const deny_always[] = {
  "execve",
  "execveat",
#if ! SANITIZER_BUILD
  "ptrace",
#endif
  "process_vm_readv",
  "process_vm_writev",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "keyctl",
  "add_key",
  "request_key",
  "userfaultfd",
  "perf_event_open",
  "iopl",
  "ioperm",
  "swapon",
  "swapoff",
  "reboot",
  "acct",
  "settimeofday",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "personality",
  "quotactl",
  "lookup_dcookie",
  "open_by_handle_at",
  "name_to_handle_at",
  "fanotify_init",
  "pivot_root",
  "chroot",
  "uselib",
  "vhangup",
  "syslog",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  NULL,
};

/* Also denied to the query commands.  */
static const char *const deny_query[] = {
  "mount",  "umount2", "mount_setattr", "setns",     "unshare",
  "bpf",    "mknod",   "mknodat",       "open_tree", "move_mount",
#if ! SANITIZER_BUILD
  "clone3", "fork",    "vfork",
#endif
  NULL,
};

/* Denies each of names but those in except (NULL-terminated, or NULL).  */
static int
deny (scmp_filter_ctx ctx, const char *const *names, const char *const *except, roce_error_t *err)
{
  for (const char *const *n = names; *n; n++)
    {
      int nr = seccomp_syscall_resolve_name (*n);
      int ret;
      bool kept = false;
      for (const char *const *e = except; e && *e && ! kept; e++)
        kept = strcmp (*n, *e) == 0;
      if (kept)
        continue;
      if (nr == __NR_SCMP_ERROR)
        continue; /* not on this architecture */
      ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EPERM), nr, 0);
      if (ret < 0)
        return roce_error_sys (err, -ret, "seccomp rule for %s", *n);
    }
  return 0;
}

static void
cleanup_seccompp (scmp_filter_ctx *ctx)
{
  if (*ctx)
    seccomp_release (*ctx);
}

/* TCP is etcd's (policy `cluster`, etcd.h) and nobody else's: without it a
 * TCP socket cannot even be made.  (The hook's other sockets are netlink,
 * AF_UNIX for syslog and an AF_INET datagram socket for ethtool ioctls.)  */
static int
deny_tcp (scmp_filter_ctx ctx, roce_error_t *err)
{
  static const int families[] = { AF_INET, AF_INET6 };
  for (size_t i = 0; i < ARRAY_SIZE (families); i++)
    {
      int ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (socket), 2,
                                  SCMP_A0 (SCMP_CMP_EQ, (scmp_datum_t) families[i]),
                                  SCMP_A1 (SCMP_CMP_MASKED_EQ, 0xf, SOCK_STREAM));
      if (ret < 0)
        return roce_error_sys (err, -ret, "seccomp rule for socket");
    }
  return 0;
}

int
confine_seccomp (enum confine_profile profile, roce_error_t *err)
{
  return confine_seccomp_net (profile, false, err);
}

/* The filter of a profile, as libseccomp builds it.  */
static int
filter_build (enum confine_profile profile, bool tcp, scmp_filter_ctx *out, roce_error_t *err)
{
  __attribute__ ((cleanup (cleanup_seccompp))) scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
  int ret;

  if (ctx == NULL)
    return roce_error_make (err, ENOMEM, "seccomp_init");
  if (deny (ctx, deny_always, NULL, err) < 0)
    return -1;
  if (profile != CONFINE_STAGE)
    {
      const char *except[4] = { NULL };
      size_t n = 0;
      if (profile == CONFINE_GC || profile == CONFINE_PROBE)
        except[n++] = "setns";
      if (profile == CONFINE_PROBE)
        except[n++] = "unshare";
      if (tcp)
        except[n++] = "clone3";
      if (deny (ctx, deny_query, except, err) < 0)
        return -1;
    }
  if (! tcp && deny_tcp (ctx, err) < 0)
    return -1;
  if (profile == CONFINE_GC || profile == CONFINE_PROBE)
    {
      /* setns into anything but a network namespace.  */
      ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (setns), 1,
                              SCMP_A1 (SCMP_CMP_NE, CLONE_NEWNET));
      if (ret < 0)
        return roce_error_sys (err, -ret, "seccomp rule for setns");
    }
  if (profile == CONFINE_PROBE)
    {
      /* unshare of a network namespace alone (the probe's own).  */
      ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (unshare), 1,
                              SCMP_A0 (SCMP_CMP_NE, CLONE_NEWNET));
      if (ret < 0)
        return roce_error_sys (err, -ret, "seccomp rule for unshare");
    }
  /* No new processes for the queries (clone with a namespace flag would
   * also be unshare by another name).  */
  if (profile != CONFINE_STAGE && ! SANITIZER_BUILD && ! tcp)
    {
      ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (clone), 0);
      if (ret < 0)
        return roce_error_sys (err, -ret, "seccomp rule for clone");
    }
  /* With etcd, libcurl's resolver may start a thread for an endpoint given
   * by name (an IP literal needs none): threads only, through clone, whose
   * flags a filter can read (clone3 answers ENOSYS, so glibc falls back).  */
  if (profile != CONFINE_STAGE && ! SANITIZER_BUILD && tcp)
    {
      ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (clone), 1,
                              SCMP_A0 (SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
      if (ret == 0)
        ret = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (ENOSYS), SCMP_SYS (clone3), 0);
      if (ret < 0)
        return roce_error_sys (err, -ret, "seccomp rule for clone");
    }
  ret = seccomp_attr_set (ctx, SCMP_FLTATR_CTL_NNP, 1);
  if (ret < 0)
    return roce_error_sys (err, -ret, "seccomp no_new_privs");
  /* A binary tree of the syscall numbers, not a chain: the kernel runs the
   * filter for every syscall number when it loads it (its cache of the
   * always-allowed ones), and for every call the hook makes.  */
  ret = seccomp_attr_set (ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (ret < 0)
    return roce_error_sys (err, -ret, "seccomp binary tree");
  *out = ctx;
  ctx = NULL;
  return 0;
}

int
confine_seccomp_nosend (roce_error_t *err)
{
  static const char *const sends[] = { "sendto", "sendmsg", "sendmmsg", NULL };
  __attribute__ ((cleanup (cleanup_seccompp))) scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
  int ret;

  if (ctx == NULL)
    return roce_error_make (err, ENOMEM, "seccomp_init");
  if (deny (ctx, sends, NULL, err) < 0)
    return -1;
  ret = seccomp_load (ctx);
  if (ret < 0)
    return roce_error_sys (err, -ret, "seccomp_load");
  return 0;
}

int
confine_seccomp_export (enum confine_profile profile, bool tcp, int fd, roce_error_t *err)
{
  __attribute__ ((cleanup (cleanup_seccompp))) scmp_filter_ctx ctx = NULL;
  int ret;

  if (filter_build (profile, tcp, &ctx, err) < 0)
    return -1;
  ret = seccomp_export_bpf (ctx, fd);
  if (ret < 0)
    return roce_error_sys (err, -ret, "seccomp_export_bpf");
  return 0;
}

/* The filters as the build exported them (build/gen/seccomp.c, made by
 * tools/seccomp-gen from filter_build above): loading one costs the kernel
 * alone; building it with libseccomp cost 0.13 ms of every start and stop.
 * Weak: the generator itself, and a build without it, build at run time.  */
extern const struct confine_bpf confine_bpf_table[] __attribute__ ((weak));
extern const size_t confine_bpf_count __attribute__ ((weak));

const struct confine_bpf *
confine_bpf_prebuilt (enum confine_profile profile, bool tcp)
{
  if (confine_bpf_table == NULL || &confine_bpf_count == NULL)
    return NULL;
  for (size_t i = 0; i < confine_bpf_count; i++)
    if (confine_bpf_table[i].profile == profile && confine_bpf_table[i].tcp == tcp)
      return &confine_bpf_table[i];
  return NULL;
}

int
confine_seccomp_net (enum confine_profile profile, bool tcp, roce_error_t *err)
{
  __attribute__ ((cleanup (cleanup_seccompp))) scmp_filter_ctx ctx = NULL;
  const struct confine_bpf *pre = confine_bpf_prebuilt (profile, tcp);
  int ret;

  if (pre)
    {
      struct sock_fprog prog
          = { .len = (unsigned short) pre->len, .filter = (struct sock_filter *) pre->insns };
      if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return roce_error_sys (err, errno, "no_new_privs");
      if (prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
        return roce_error_sys (err, errno, "seccomp filter");
      return 0;
    }
  if (filter_build (profile, tcp, &ctx, err) < 0)
    return -1;
  ret = seccomp_load (ctx);
  if (ret < 0)
    return roce_error_sys (err, -ret, "seccomp_load");
  return 0;
}

struct phase_caps
{
  const char *names;
  cap_value_t caps[8];
  int n;
};

static const struct phase_caps phases[] = {
  [PHASE_NONE] = { "none", { 0 }, 0 },
  [PHASE_INSPECT] = { "CAP_SYS_PTRACE", { CAP_SYS_PTRACE }, 1 },
  /* NET_RAW: the RFC 5227 probe's AF_PACKET socket (fabric.dad_probe_ms).  */
  [PHASE_NETWORK] = { "CAP_NET_ADMIN,CAP_SYS_ADMIN,CAP_SYS_PTRACE,CAP_NET_RAW",
                      { CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_RAW },
                      4 },
  /* setns(CLONE_NEWNS) takes SYS_ADMIN and SYS_CHROOT.  */
  [PHASE_DEVICES] = { "CAP_SYS_ADMIN,CAP_SYS_CHROOT,CAP_DAC_OVERRIDE,CAP_BPF,CAP_NET_ADMIN,"
                      "CAP_SYS_RESOURCE,CAP_SYS_PTRACE",
                      { CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_DAC_OVERRIDE, CAP_BPF, CAP_NET_ADMIN,
                        CAP_SYS_RESOURCE, CAP_SYS_PTRACE },
                      7 },
  /* RTM_SETDCB and ETHTOOL_STUNABLE.  The files qos apply writes (mlx5's
   * ecn/roce_{np,rp}/enable/<prio>, rdma_cm's default_roce_*) are root's and
   * 0644, and mkdir/rmdir of a group in rdma_cm (0755, root's) needs no
   * capability either: no DAC_OVERRIDE, so a file the kernel made read-only
   * (a VF's ECN) is refused by the plan instead of written over.  */
  [PHASE_QOS] = { "CAP_NET_ADMIN", { CAP_NET_ADMIN }, 1 },
  /* The LLDP listener's AF_PACKET socket.  */
  [PHASE_RAW] = { "CAP_NET_RAW", { CAP_NET_RAW }, 1 },
};

const char *
confine_phase_caps (enum confine_phase phase)
{
  return phases[phase].names;
}

static void
cleanup_capp (cap_t *c)
{
  if (*c)
    cap_free (*c);
}
#define cleanup_cap __attribute__ ((cleanup (cleanup_capp)))

/* The capabilities a profile may ever need (its phases' union).  */
static void
profile_caps (enum confine_profile profile, bool keep[CAP_LAST_CAP + 1])
{
  /* Each profile's phases, PHASE_NONE-terminated (PHASE_NONE has none).  */
  static const enum confine_phase lists[][4] = {
    [CONFINE_STAGE] = { PHASE_INSPECT, PHASE_NETWORK, PHASE_DEVICES, PHASE_NONE },
    [CONFINE_QUERY] = { PHASE_INSPECT, PHASE_NONE },
    [CONFINE_GC] = { PHASE_NETWORK, PHASE_NONE },
    [CONFINE_QOS] = { PHASE_QOS, PHASE_NONE },
    [CONFINE_LISTEN] = { PHASE_RAW, PHASE_NONE },
    [CONFINE_PROBE] = { PHASE_NETWORK, PHASE_NONE },
    [CONFINE_GUARD] = { PHASE_NONE },
  };
  const enum confine_phase *list = lists[profile];

  memset (keep, 0, (CAP_LAST_CAP + 1) * sizeof (bool));
  for (size_t i = 0; list[i] != PHASE_NONE; i++)
    for (int k = 0; k < phases[list[i]].n; k++)
      if (phases[list[i]].caps[k] <= CAP_LAST_CAP)
        keep[phases[list[i]].caps[k]] = true;
}

int
confine_caps (enum confine_profile profile, roce_error_t *err)
{
  bool keep[CAP_LAST_CAP + 1];
  cleanup_cap cap_t cur = cap_get_proc ();
  cleanup_cap cap_t next = cap_init ();
  cap_flag_value_t v;

  if (cur == NULL || next == NULL)
    return roce_error_sys (err, errno, "cap_get_proc");
  profile_caps (profile, keep);

  /* Only the permitted set is cut, in one capset(2).  The bounding set
   * limits what a program gains across execve, and the hook never execs:
   * seccomp denies execve and execveat with no_new_privs set, for every
   * profile.  Dropping it took two prctl(2) per capability on every run.  */
  for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
    if (keep[c] && cap_get_flag (cur, c, CAP_PERMITTED, &v) == 0 && v == CAP_SET)
      cap_set_flag (next, CAP_PERMITTED, 1, &c, CAP_SET);
  if (cap_set_proc (next) < 0)
    return roce_error_sys (err, errno, "cap_set_proc");
  return 0;
}

int
confine_phase (enum confine_phase phase, roce_error_t *err)
{
  cleanup_cap cap_t c = cap_get_proc ();
  const struct phase_caps *p = &phases[phase];

  if (c == NULL)
    return roce_error_sys (err, errno, "cap_get_proc");
  if (cap_clear_flag (c, CAP_EFFECTIVE) < 0)
    return roce_error_sys (err, errno, "cap_clear_flag");
  for (int i = 0; i < p->n; i++)
    {
      cap_flag_value_t v;
      /* Raise only what is permitted: an unprivileged `check` has nothing. */
      if (cap_get_flag (c, p->caps[i], CAP_PERMITTED, &v) == 0 && v == CAP_SET)
        cap_set_flag (c, CAP_EFFECTIVE, 1, &p->caps[i], CAP_SET);
    }
  if (cap_set_proc (c) < 0)
    return roce_error_sys (err, errno, "raising %s", p->names);
  return 0;
}
