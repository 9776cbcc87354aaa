/* SPDX-License-Identifier: Apache-2.0 */
/* The device cgroup: letting the container open its RDMA nodes, and nothing
 * else that it could not open before.
 *
 * cgroup v1: one devices.allow rule per node ("c M:m rw"), only for what
 * devices.list does not already grant; the undo denies exactly the bits
 * that were added.
 * cgroup v2: device access is a BPF program the runtime attached to the
 * container's cgroup, and programs are AND-ed, so adding a permissive one
 * does nothing.  Each attached program is replaced (BPF_F_REPLACE, atomic) by
 * a copy that first allows exactly these nodes (char, read/write, no mknod)
 * and otherwise runs the original instructions unchanged; the undo puts the
 * original back.  Nodes the spec's linux.resources.devices already allows
 * (the runtime shim's path) need nothing.
 *
 * Rules added here live outside the runtime's knowledge: a systemd
 * `daemon-reload` (systemd cgroup driver) or `runc update` rewrites the
 * cgroup from the spec and drops them.  Spec-level rules (the shim, CDI)
 * survive.  */
#ifndef ROCE_DEVCGROUP_H
#define ROCE_DEVCGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "devices/rdma.h"
#include "lib/error.h"
#include "spec/oci.h"

struct devcg_state;

/* pidfd (or, when it is -1, kill(pid, 0)) proves that /proc/<pid>/cgroup
 * was the container's.  On failure
 * nothing is left changed.  *out may be NULL on success (nothing to do).  */
/* host_mounts: the host's mountinfo as the stage read it (NULL: read it).  */
int devcg_allow (pid_t pid, int pidfd, const struct oci_config *c, const char *host_mounts,
                 const struct rdma_node *nodes, size_t n, struct devcg_state **out,
                 roce_error_t *err);
/* Undoes devcg_allow() and frees the state.  */
void devcg_undo (struct devcg_state *s);
void devcg_state_free (struct devcg_state *s);
/* What was done, for the log ("v1 devices.allow c 231:192 rw" ...); caller frees.  */
char *devcg_describe (const struct devcg_state *s);

#endif
