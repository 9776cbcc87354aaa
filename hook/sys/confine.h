/* SPDX-License-Identifier: Apache-2.0 */
/* Self-confinement: a seccomp filter the hook installs on itself once its
 * inputs are read, and capability sets cut to what each phase needs.  */
#ifndef ROCE_CONFINE_H
#define ROCE_CONFINE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

enum confine_profile
{
  /* prestart/createRuntime and poststop: netlink, setns (the container's
   * mount namespace too), bind mounts, cgroup files, prlimit, bpf (cgroup
   * v2 device programs).  */
  CONFINE_STAGE,
  /* check, leases and the other read-only commands: reading and netlink
   * queries; no mount, no setns, no bpf, no new processes.  */
  CONFINE_QUERY,
  /* gc: the query profile, but setns into network namespaces is allowed
   * (a namespace's cookie is read from a socket made inside it).  */
  CONFINE_GC,
  /* qos apply: the query rules (no mount, setns, unshare, bpf, mknod, new
   * processes, exec, TCP) and PHASE_QOS's capability alone.  Its dry run
   * is a query (CONFINE_QUERY).  */
  CONFINE_QOS,
  /* lldp --listen/--watch: the query rules and PHASE_RAW's capability
   * (AF_PACKET).  The LLDP listener also
   * cannot send: confine_seccomp_nosend.  */
  CONFINE_LISTEN,
  /* check --probe: gc's rules, and unshare of a network namespace (the
   * probe's own, net.h: net_probe_rail); PHASE_NETWORK's capabilities, as
   * the start's network step that it runs.  */
  CONFINE_PROBE,
  /* nri --guard: the query rules and no capability at all (it reads and
   * answers the runtime's NRI socket, nothing else).  */
  CONFINE_GUARD,
};

/* Installs the filter: the listed syscalls fail with EPERM, everything else
 * is allowed.  No new privileges from here on.  */
int confine_seccomp (enum confine_profile profile, roce_error_t *err);
/* Same; TCP sockets (etcd, policy `cluster`) only when tcp is set: without
 * it socket(AF_INET/AF_INET6, SOCK_STREAM) fails with EPERM.  confine_seccomp
 * is this with tcp false.  */
int confine_seccomp_net (enum confine_profile profile, bool tcp, roce_error_t *err);
/* A second filter, on top: sendto, sendmsg and sendmmsg fail with EPERM (the
 * LLDP listener transmits nothing, by construction).  Built at run time.  */
int confine_seccomp_nosend (roce_error_t *err);

/* A filter exported at build time (tools/seccomp-gen): classic BPF, 8-byte
 * instructions, for this build's architecture.  */
struct confine_bpf
{
  enum confine_profile profile;
  bool tcp;
  size_t len; /* instructions */
  const void *insns;
};
/* The build's filter of a profile, or NULL (then it is built at run time).  */
const struct confine_bpf *confine_bpf_prebuilt (enum confine_profile profile, bool tcp);
/* Writes the filter of a profile, as libseccomp builds it, to fd (the
 * generator's, and the test that the prebuilt ones are the same).  */
int confine_seccomp_export (enum confine_profile profile, bool tcp, int fd, roce_error_t *err);

/* The capabilities effective in each phase (the README has the table).  */
enum confine_phase
{
  PHASE_NONE,    /* reading: the state, policy, config.json, sysfs, DCB GET */
  PHASE_INSPECT, /* other processes' /proc entries (non-dumpable runtime init,
                    the netns liveness scan): SYS_PTRACE */
  PHASE_NETWORK, /* macvlan, addresses, routes, the lease store's liveness
                    scan: NET_ADMIN, SYS_ADMIN (setns), SYS_PTRACE */
  PHASE_DEVICES, /* bind mounts in the container's mount namespace, the device
                    cgroup (v1 file, v2 BPF program), RLIMIT_MEMLOCK */
  PHASE_QOS,     /* qos apply: DCB netlink SET, ETHTOOL_STUNABLE: NET_ADMIN (the
                    ECN sysfs and rdma_cm configfs files are root's, 0644: no
                    DAC_OVERRIDE) */
  PHASE_RAW,     /* lldp: AF_PACKET sockets: NET_RAW */
};

/* Cuts the permitted and bounding sets to the union of the phases the
 * profile needs and clears the effective set.  A process without those
 * capabilities to begin with (a non-root `check`) is left as it is.  */
int confine_caps (enum confine_profile profile, roce_error_t *err);
/* Makes exactly the phase's capabilities effective.  */
int confine_phase (enum confine_phase phase, roce_error_t *err);
/* For messages and the README: "CAP_NET_ADMIN,CAP_SYS_ADMIN".  */
const char *confine_phase_caps (enum confine_phase phase);

#endif
