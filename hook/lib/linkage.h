/* SPDX-License-Identifier: Apache-2.0 */
/* roce-hook's four programs, and what differs by how they are linked: the
 * one contract.
 *
 * The installed programs' names are a contract (hooks.d, containerd's and
 * Docker's runtime entries, the DaemonSet's image), never renamed:
 *
 *   roce-hook            the OCI hook and the operator's command, linked
 *                        statically (hook/main.c);
 *   roce-hook-engine     the same program linked dynamically, for what
 *                        loads a library (below);
 *   roce-runtime         the drop-in for runc: a front, linked against musl
 *                        where the build has it, that passes the calls
 *                        needing nothing of it straight to the real runtime
 *                        (shim/front.c);
 *   roce-runtime-engine  the shim proper, which the front runs for every
 *                        other call (shim/main.c).
 *
 * "engine" names nothing else: an engine is the program beside a front
 * that does what the front leaves to it.
 *
 * roce-hook is linked -static-pie: no ld.so work at exec, which was a
 * third of a start's own time.  A static program cannot load a library
 * soundly (dlopen brings a second libc), so what needs one is done by
 * roce-hook-engine, the same program linked dynamically, installed beside
 * it.  A program is one of two linkages:
 *
 *   ROCE_LINKAGE_LOADS       it loads what it needs itself (dlopen of
 *                            libibverbs, etcd's libcurl): roce-hook-engine,
 *                            roce-hook in a sanitizer or valgrind build, the
 *                            unit tests; roce-runtime-engine too, which makes
 *                            no start that needs etcd (shim/bundle.c).
 *   ROCE_LINKAGE_HANDS_OVER  a static roce-hook: it hands over to
 *                            roce-hook-engine, with the same argv,
 *                            - every command that may load a library (check,
 *                              gc, blocks: hook/main.c's table), at once;
 *                            - a start that needs etcd (a new address block):
 *                              the IPAM step refuses it before anything is
 *                              made, with an error of kind
 *                              ROCE_ERROR_NEEDS_ENGINE (error.h), and the
 *                              start goes on in roce-hook-engine from the
 *                              state the runtime sent (linkage_handover);
 *                            and so its start's seccomp filter, which denies
 *                            execve, goes on once the leases are taken
 *                            (linkage_defers_seccomp), not before.
 *
 * The linkage is main's to say (ROCE_LINKAGE_OF_MAIN) and is handed down in
 * the stage's context (stage.h) and the container (container.h): no
 * global.  */
#ifndef ROCE_LINKAGE_H
#define ROCE_LINKAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

#define ROCE_PROG_HOOK "roce-hook"
#define ROCE_PROG_HOOK_ENGINE "roce-hook-engine"
#define ROCE_PROG_RUNTIME "roce-runtime"
#define ROCE_PROG_RUNTIME_ENGINE "roce-runtime-engine"

enum roce_linkage
{
  ROCE_LINKAGE_LOADS = 0,
  ROCE_LINKAGE_HANDS_OVER,
};

/* main()'s linkage: the Makefile compiles the static roce-hook's main with
 * -DROCE_HOOK_STATIC.  */
#ifdef ROCE_HOOK_STATIC
#define ROCE_LINKAGE_OF_MAIN ROCE_LINKAGE_HANDS_OVER
#else
#define ROCE_LINKAGE_OF_MAIN ROCE_LINKAGE_LOADS
#endif

/* Whether a program of this linkage may load a library (dlopen).  */
bool linkage_can_load (enum roce_linkage l);
/* Whether a start's seccomp filter waits until its leases are taken: a
 * program that hands over, with a policy that has `cluster` (its start may
 * still need etcd, and go on in roce-hook-engine by execve).  Nothing
 * before that reads what a tenant wrote but the annotations, parsed before
 * any confinement.  */
bool linkage_defers_seccomp (enum roce_linkage l, bool cluster);

/* The refusal of what needs a library this program cannot load:
 * ROCE_ERROR_NEEDS_ENGINE, "<what> is loaded by roce-hook-engine only".  */
int linkage_needs_engine (roce_error_t *err, const char *what);

/* Runs roce-hook-engine, beside this program, in this process with the
 * same argv; returns only on failure, with *err set.  */
int linkage_exec_engine (char **argv, roce_error_t *err);
/* A start refused with ROCE_ERROR_NEEDS_ENGINE goes on in roce-hook-engine,
 * from `state` (the runtime's, as it was sent: the engine's stdin).  Returns
 * only when it could not: *err (the refusal) is then replaced by why, in
 * the context the refusal had (what needed the engine).  */
int linkage_handover (const char *state, size_t len, char **argv, roce_error_t *err);

#endif
