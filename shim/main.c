/* roce-runtime: a drop-in for runc.  Today it passes every call through to
 * the real runtime unchanged; the spec editing for annotated bundles lives
 * in the engine and is added with the runtime integrations.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "utils.h"

int
main (int argc, char **argv)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *runtime = NULL;

  (void) argc;
  if (shim_find_runtime (NULL, &runtime, &err) < 0)
    {
      fprintf (stderr, "roce-runtime: %s\n", err->msg);
      return 1;
    }
  argv[0] = runtime;
  execv (runtime, argv);
  fprintf (stderr, "roce-runtime: exec `%s`: %s\n", runtime, strerror (errno));
  return 127;
}
