/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime-engine: the shim proper, run by the front (roce-runtime,
 * shim/front.c) for every call the front does not pass straight to the
 * runtime; it decides everything again as if the front were not there.
 * main() parses nothing of its own: it reads runc's command line, prepares
 * the bundle for annotated create/run (the network too, where it can), and
 * runs the real runtime with the same argv: as its child when it must
 * outlive it (shim/run.c), else by exec.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/utils.h"
#include "shim.h"
#include "spec/policy.h"

static int
exec_runtime (const char *runtime, char **argv)
{
  argv[0] = (char *) runtime;
  execv (runtime, argv);
  roce_print (stderr, "roce-runtime: exec `%s`: %s", runtime, strerror (errno));
  return 127;
}

int
main (int argc, char **argv)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *policy = NULL;
  cleanup_free char *runtime = NULL;
  struct shim_start start = SHIM_START_INIT;
  struct runtime_how how;
  const char *policy_path = policy_default_path (NULL);
  struct shim_args args;
  int ret;

  roce_log_open_on_use ("roce-runtime");
  if (shim_parse_argv (argc, argv, &args, &err) < 0)
    {
      /* Not ours to judge: the real runtime reports its own usage errors.  */
      roce_error_release (&err);
      memset (&args, 0, sizeof (args));
    }
  roce_log_set_container (args.id);

  ret = args.edits_bundle ? shim_prepare_bundle (&args, policy_path, &policy, &start, &err) : 0;
  if (ret < 0)
    {
      shim_start_clear (&start);
      shim_report (&args, err->msg);
      return 1;
    }

  /* The policy names the real runtime; for calls that need no edit, a
   * policy that cannot be read must not stop `delete` or `state`.  */
  if (policy == NULL)
    {
      cleanup_error roce_error_t perr = NULL;
      if (policy_load (policy_path, &policy, &perr) < 0)
        roce_log (ROCE_LOG_WARN, "%s; using runc or crun from PATH", perr->msg);
    }
  /* exec: the process file gets what the container's process got; delete:
   * the record goes (a failure there never blocks the delete); a plain
   * create: a stale record of the id goes.  An annotated create has just
   * written its own (ret 1): nothing to look at again.  */
  if (policy && ret == 0 && shim_prepare_process (&args, policy->state_dir, &err) < 0)
    {
      if (args.cmd && strcmp (args.cmd, "exec") == 0)
        {
          shim_report (&args, err->msg);
          return 1;
        }
      roce_log (ROCE_LOG_WARN, "%s", err->msg);
      roce_error_release (&err);
    }
  if (runtime_find (policy ? policy->runtimes : NULL, ! args.edits_bundle, &runtime, &how, &err)
      < 0)
    {
      if (ret == 1)
        shim_start_undo (policy, args.id, &start);
      shim_start_clear (&start);
      shim_report (&args, err->msg);
      return 1;
    }
  if (how.fallback)
    roce_log (ROCE_LOG_WARN, "none of the policy's runtimes is installed: `%s` goes to %s",
              args.cmd ? args.cmd : "?", runtime);
  /* An annotated foreground run: the shim waits for it, and releases.  A
   * create whose network the shim made: it waits for it (the namespace is
   * the shim's until the container holds it), and takes the network back
   * if it fails.  */
  if (ret == 1 && shim_runs_foreground (&args))
    shim_run_foreground (runtime, argv, policy, &args, &start);
  if (ret == 1 && start.net)
    shim_run_create (runtime, argv, policy, &args, &start);
  return exec_runtime (runtime, argv);
}
