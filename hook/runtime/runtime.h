/* SPDX-License-Identifier: Apache-2.0 */
/* What roce-hook and roce-runtime both know of the OCI runtime below them:
 * where the programs are (beside each other), which runtime roce-runtime
 * chains to (runtime.c: `check` reports it), and the records roce-runtime
 * keeps of the containers it created (runtime_record.c; `gc` sweeps them,
 * runtime_sweep.c).  Both programs link this folder; the shim's own header
 * (shim/shim.h) stays beside the shim.  */
#ifndef ROCE_RUNTIME_H
#define ROCE_RUNTIME_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"

/* The installed programs' names: a contract (hooks.d, containerd's and
 * Docker's runtime entries, the DaemonSet's image), never renamed.
 * roce-hook is the OCI hook and the operator's command, linked statically;
 * roce-hook-engine is the same program linked dynamically, for what loads a
 * library (hook/main.c).  roce-runtime is the drop-in for runc, a front
 * that passes calls needing nothing of it straight to the real runtime;
 * roce-runtime-engine is the shim proper, which the front runs for every
 * other call (shim/front.c).  */
#define RUNTIME_PROG_HOOK "roce-hook"
#define RUNTIME_PROG_HOOK_ENGINE "roce-hook-engine"
#define RUNTIME_PROG_SHIM "roce-runtime"
#define RUNTIME_PROG_SHIM_ENGINE "roce-runtime-engine"

/* <the directory of this program>/name; NULL when /proc/self/exe cannot
 * be read (errno).  */
char *runtime_beside (const char *name);

/* How runtime_find chose: candidate, the index of the policy's candidate
 * used (-1: none); fallback, runc or crun taken because none of the
 * policy's candidates is installed.  */
struct runtime_how
{
  int candidate;
  bool fallback;
};

/* The real runtime: the first installed of `candidates` (the policy's
 * `runtime`: absolute paths, or bare names looked up on a fixed PATH),
 * else, when there are none or `fallback` is set (every call but create and
 * run: state, kill and delete must reach a runtime that can answer them),
 * the first of runc, crun on $PATH.  Never roce-runtime itself.  how may be
 * NULL.  */
int runtime_find (char *const *candidates, bool fallback, char **out, struct runtime_how *how,
                  roce_error_t *err);

/* The records roce-runtime keeps: <state_dir>/shim/<id>.json, and a rails
 * file's suffix beside it.  */
#define RUNTIME_RECORD_DIR "shim"
#define RUNTIME_RAILS_SUFFIX ".rails"
/* A container id that can name a record: 1-200 of [A-Za-z0-9_+.-], not
 * starting with a dot (runc's rule, without hidden names).  */
bool runtime_record_id_valid (const char *id);
/* <state_dir>/shim opened without following a link, created (0700) when
 * `create` is set; both directories must be root's (StrictModes).  Returns
 * -1 with no error set when it is absent and not created.  */
int runtime_record_dir (const char *state_dir, bool create, roce_error_t *err);
/* gc: removes the records (and rails files) whose bundle is gone, saying so
 * on out; a record it cannot read is left alone.  */
int runtime_records_sweep (const char *state_dir, FILE *out, roce_error_t *err);

#endif
