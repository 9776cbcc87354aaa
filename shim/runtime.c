#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "utils.h"

static bool
is_self (const char *path)
{
  struct stat a, b;
  if (stat (path, &a) < 0 || stat ("/proc/self/exe", &b) < 0)
    return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static bool
executable (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISREG (st.st_mode) && access (path, X_OK) == 0;
}

int
shim_find_runtime (const char *configured, char **out, roce_error_t *err)
{
  static const char *const candidates[] = { "runc", "crun" };
  const char *path = getenv ("PATH");

  if (configured)
    {
      if (configured[0] != '/')
        return roce_error_make (err, EINVAL, "runtime `%s`: not an absolute path", configured);
      if (! executable (configured) || is_self (configured))
        return roce_error_make (err, ENOENT, "runtime `%s`: not an executable runtime", configured);
      *out = xstrdup (configured);
      return 0;
    }
  if (path == NULL || *path == '\0')
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (size_t c = 0; c < ARRAY_SIZE (candidates); c++)
    {
      cleanup_free char *dirs = xstrdup (path);
      char *save = dirs, *dir;
      while ((dir = strsep (&save, ":")) != NULL)
        {
          cleanup_free char *full = NULL;
          if (*dir != '/')
            continue;
          full = xasprintf ("%s/%s", dir, candidates[c]);
          if (executable (full) && ! is_self (full))
            {
              *out = steal_pointer (&full);
              return 0;
            }
        }
    }
  return roce_error_make (err, ENOENT, "no runc or crun on PATH (set `runtime` in the policy)");
}
