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

#include "engine.h"
#include "error.h"
#include "rdma.h"

struct devices_state;

/* Sets it all up for ctx (stage_start, after container_open).  On failure
 * nothing is left: no mount, no cgroup rule, the old memlock limit.  On
 * success ctx->devices records what was done.  */
int devices_setup (struct roce_ctx *ctx, roce_error_t *err);

/* Undoes a successful devices_setup() (a later step failed).  */
void devices_undo (struct roce_ctx *ctx);

void devices_state_free (struct devices_state *s);

#endif
