/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA access for a container, before its first instruction: the
 * /dev/infiniband nodes of its HCAs (bind mounts inside its mount namespace),
 * device cgroup access to them, RLIMIT_MEMLOCK, and the CAP_IPC_LOCK check.
 *
 * Where the mounts go: runc 1.1 runs prestart and createRuntime hooks from
 * its parent process while the container's init waits in its own mount
 * namespace with the rootfs bind-mounted at root.path and the spec's mounts
 * (the /dev tmpfs among them) already on it, before pivot_root.  So the nodes
 * are mounted inside that namespace, under <root.path>/dev/infiniband (on the
 * container's /dev tmpfs when the spec has one), never in the host's view of
 * the rootfs.  A runtime that has already pivoted (the rootfs is the
 * namespace's "/") is handled too: the rootfs is recognised by its inode.  */
#ifndef ROCE_DEVICES_H
#define ROCE_DEVICES_H

#include "devices/rdma.h"
#include "lib/error.h"
#include "spec/annot.h"
#include "spec/container.h"
#include "spec/policy.h"

struct devices_state;

/* More of a start's work in the container's mount namespace (the rails
 * file), done in the same entry as the nodes' mounts, after them: one
 * setns there and back a start.  here gets the rootfs (an fd there) and
 * what tells the container's own tmpfs from the host's (rootfs.h); undo
 * takes back what it made when a later step of devices_setup fails.  */
struct rootfs_host;
struct devices_also
{
  int (*here) (void *arg, int rootfd, const struct rootfs_host *host, roce_error_t *err);
  void (*undo) (void *arg, int rootfd);
  void *arg;
};

/* Sets it all up for the container (its namespaces open, its config
 * loaded), and `also` (may be NULL).  On failure nothing is left: no mount,
 * no cgroup rule, the old memlock limit.  On success *out records what was
 * done.  */
int devices_setup (const struct roce_policy *p, const struct roce_request *req,
                   const struct roce_container *c, const struct devices_also *also,
                   struct devices_state **out, roce_error_t *err);

/* Undoes a successful devices_setup() (a later step failed) and frees s.  */
void devices_undo (const struct roce_container *c, struct devices_state *s);

void devices_state_free (struct devices_state *s);

#endif
