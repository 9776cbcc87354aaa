/* SPDX-License-Identifier: Apache-2.0 */
/* What differs by how roce-hook is linked (linkage.h): the decisions, and
 * the hand-over to roce-hook-engine.  */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/linkage.h"
#include "lib/log.h"
#include "lib/utils.h"

bool
linkage_can_load (enum roce_linkage l)
{
  return l == ROCE_LINKAGE_LOADS;
}

bool
linkage_defers_seccomp (enum roce_linkage l, bool cluster)
{
  return l == ROCE_LINKAGE_HANDS_OVER && cluster;
}

int
linkage_needs_engine (roce_error_t *err, const char *what)
{
  return roce_error_make_kind (err, ROCE_ERROR_NEEDS_ENGINE, ELIBACC,
                               "%s is loaded by " ROCE_PROG_HOOK_ENGINE " only", what);
}

int
linkage_exec_engine (char **argv, roce_error_t *err)
{
  cleanup_free char *path = self_beside (ROCE_PROG_HOOK_ENGINE);

  if (path == NULL)
    return roce_error_sys (err, errno, "/proc/self/exe");
  execv (path, argv);
  {
    cleanup_free char *found = xasprintf ("%s: %s", path, strerror (errno));
    return roce_error_refuse (err,
                              ROCE_PROG_HOOK_ENGINE " (roce-hook linked dynamically: it loads "
                                                    "libibverbs and libcurl)",
                              "beside roce-hook, executable", found,
                              "install both programs (make install, or the DaemonSet's image)");
  }
}

/* The state for the engine: a memfd as its stdin.  */
static int
state_to_stdin (const char *state, size_t len, roce_error_t *err)
{
  cleanup_close int fd = memfd_create ("roce-hook-state", MFD_CLOEXEC);

  if (fd < 0)
    return roce_error_sys (err, errno, "memfd_create");
  if (write_all_fd (fd, state, len, err) < 0)
    return -1;
  if (lseek (fd, 0, SEEK_SET) < 0 || dup2 (fd, STDIN_FILENO) < 0)
    return roce_error_sys (err, errno, "the state for " ROCE_PROG_HOOK_ENGINE);
  return 0;
}

int
linkage_handover (const char *state, size_t len, char **argv, roce_error_t *err)
{
  /* Back only when the engine could not run: what needed it, then why.  */
  cleanup_free char *need = roce_error_context (err);
  roce_error_t herr = NULL;

  if (state_to_stdin (state, len, &herr) == 0)
    {
      roce_log (ROCE_LOG_INFO,
                "a new address block needs etcd: " ROCE_PROG_HOOK_ENGINE " goes on with the start");
      linkage_exec_engine (argv, &herr);
    }
  if (need)
    roce_error_wrap (&herr, "%s", need);
  roce_error_release (err);
  *err = herr;
  return -1;
}
