/* SPDX-License-Identifier: Apache-2.0 */
/* What roce-hook and roce-runtime both know of the OCI runtime below them:
 * which runtime roce-runtime
 * chains to (runtime.c: `check` reports it), and the records roce-runtime
 * keeps of the containers it created (runtime_record.c; `gc` sweeps them,
 * runtime_sweep.c).  Both programs link this folder; the shim's own header
 * (shim/shim.h) stays beside the shim.  */
#ifndef ROCE_RUNTIME_H
#define ROCE_RUNTIME_H

#include <stdbool.h>
#include <stdio.h>

#include "lib/error.h"
#include "lib/linkage.h"

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
