/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime, the program containerd, Docker and Podman run as their
 * runtime: the front (shim/front.c).  Linked against musl where the build
 * has it, it execs the real runtime for a call that needs nothing of the
 * engine, and the engine beside it (roce-runtime-engine, shim/main.c) for
 * every other, with the same argv.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "spec/policy.h"

int
main (int argc, char **argv)
{
  char *runtime = NULL;
  char *engine;

  if (shim_front_passes (argc, argv, policy_default_path (NULL), &runtime))
    {
      argv[0] = runtime;
      execv (runtime, argv);
      /* The engine finds it again, and says why it cannot run it.  */
    }
  engine = self_beside (ROCE_PROG_RUNTIME_ENGINE);
  if (engine)
    {
      argv[0] = engine;
      execv (engine, argv);
    }
  fprintf (stderr,
           "roce-runtime: the engine: an executable " ROCE_PROG_RUNTIME_ENGINE
           " beside roce-runtime vs %s "
           "(fix: install roce-hook's programs together, e.g. make install)\n",
           strerror (errno));
  return 127;
}
