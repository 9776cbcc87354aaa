/* SPDX-License-Identifier: Apache-2.0 */
/* The directory of roce-runtime's records and the ids that can name one:
 * what its front (shim/front.c), its engine (shim/record.c) and gc
 * (runtime_sweep.c) all open.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "runtime/runtime.h"

#define RECORD_ID_MAX 200

bool
runtime_record_id_valid (const char *id)
{
  size_t n = id ? strlen (id) : 0;
  if (n == 0 || n > RECORD_ID_MAX || id[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    {
      char c = id[i];
      if (! ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
             || c == '+' || c == '-' || c == '.'))
        return false;
    }
  return true;
}

int
runtime_record_dir (const char *state_dir, bool create, roce_error_t *err)
{
  cleanup_close int top = -1;
  cleanup_close int fd = -1;
  cleanup_free char *path = xasprintf ("%s/" RUNTIME_RECORD_DIR, state_dir);

  /* Made only when absent: after the first container both exist, and an
   * open is all it takes.  */
  top = open (state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0 && errno == ENOENT && create)
    {
      if (mkdir_p (state_dir, "state_dir", err) < 0)
        return -1;
      top = open (state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
  if (top < 0 && errno == ENOENT && ! create)
    return -1;
  if (top < 0)
    return roce_error_sys (err, errno, "open state_dir `%s`", state_dir);
  if (check_private (top, state_dir, "state_dir", S_IFDIR, err) < 0)
    return -1;
  fd = openat (top, RUNTIME_RECORD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create)
    {
      if (mkdirat (top, RUNTIME_RECORD_DIR, 0700) < 0 && errno != EEXIST)
        return roce_error_sys (err, errno, "create `%s`", path);
      fd = openat (top, RUNTIME_RECORD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  if (fd < 0 && errno == ENOENT && ! create)
    return -1;
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s`", path);
  if (check_trusted (fd, path, "the shim's record directory", err) < 0)
    return -1;
  return steal_fd (&fd);
}
