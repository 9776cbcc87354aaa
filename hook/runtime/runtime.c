/* SPDX-License-Identifier: Apache-2.0 */
/* The real runtime roce-runtime chains to, found from the policy's
 * candidates (roce-runtime execs it with the caller's argv; `check` says
 * which it is).  */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "runtime/runtime.h"

static bool
same_file (const struct stat *a, const char *path)
{
  struct stat b;
  return path && stat (path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* Whether the file whose stat is *a is roce-runtime: this program, or the
 * front or the engine beside it (either would come back here).  */
static bool
is_self (const struct stat *a)
{
  cleanup_free char *front = NULL;
  cleanup_free char *engine = NULL;
  char self[PATH_MAX];
  const char *dir;
  ssize_t n = readlink ("/proc/self/exe", self, sizeof (self) - 1);
  if (n < 0)
    return same_file (a, "/proc/self/exe");
  self[n] = '\0';
  if (same_file (a, self))
    return true;
  dir = dirname (self); /* self is the directory from here on */
  front = xasprintf ("%s/" ROCE_PROG_RUNTIME, dir);
  engine = xasprintf ("%s/" ROCE_PROG_RUNTIME_ENGINE, dir);
  return same_file (a, front) || same_file (a, engine);
}

/* Whether path is an executable regular file; *self: whether it is this
 * program (one stat for both).  */
static bool
executable (const char *path, bool *self)
{
  struct stat st;
  if (stat (path, &st) < 0 || ! S_ISREG (st.st_mode) || access (path, X_OK) < 0)
    return false;
  *self = is_self (&st);
  return true;
}

/* Where a bare runtime name in the policy is looked up: a fixed list, not
 * the caller's $PATH (as nvidia-container-runtime does), so that whoever
 * starts a container cannot choose the binary run as root.  */
#define SAFE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The first executable `name` (not this shim) in the directories of path. */
static char *
search (const char *path, const char *name)
{
  cleanup_free char *dirs = xstrdup (path);
  char *save = dirs, *dir;
  while ((dir = strsep (&save, ":")) != NULL)
    {
      cleanup_free char *full = NULL;
      bool self = false;
      if (*dir != '/')
        continue;
      full = xasprintf ("%s/%s", dir, name);
      if (executable (full, &self) && ! self)
        return steal_pointer (&full);
    }
  return NULL;
}

/* One candidate of the policy: *out when it is there; 0 with *out NULL
 * when it is not (*why: what was found instead); -1 for a name that can
 * never be one.  */
static int
candidate (const char *name, char **out, const char **why, roce_error_t *err)
{
  bool self = false;
  *out = NULL;
  if (strchr (name, '/') == NULL)
    {
      *out = search (SAFE_PATH, name);
      *why = "none there";
      return 0;
    }
  if (name[0] != '/')
    {
      cleanup_free char *what = xasprintf ("policy runtime `%s`", name);
      return roce_error_refuse (err, what, "an absolute path or a bare name", "a relative path",
                                "give the runtime's absolute path, e.g. /usr/bin/runc");
    }
  if (! executable (name, &self))
    *why = "none there";
  else if (self)
    *why = "roce-runtime itself";
  else
    *out = xstrdup (name);
  return 0;
}

/* The first of runc, crun on path, then on SAFE_PATH.  */
static char *
default_runtime (void)
{
  static const char *const names[] = { "runc", "crun" };
  const char *path = getenv ("PATH");
  if (path == NULL || *path == '\0')
    path = SAFE_PATH;
  for (size_t c = 0; c < ARRAY_SIZE (names); c++)
    {
      char *found = search (path, names[c]);
      if (found == NULL)
        found = search (SAFE_PATH, names[c]);
      if (found)
        return found;
    }
  return NULL;
}

int
runtime_find (char *const *candidates, bool fallback, char **out, struct runtime_how *how,
              roce_error_t *err)
{
  size_t n = candidates ? strv_len (candidates) : 0;
  const char *why = "none there";
  struct runtime_how h = { .candidate = -1 };

  for (size_t i = 0; i < n; i++)
    {
      if (candidate (candidates[i], out, &why, err) < 0)
        return -1;
      if (*out)
        {
          h.candidate = (int) i;
          if (how)
            *how = h;
          return 0;
        }
    }
  /* None of the policy's: create and run are refused (the container would
   * start without what the named runtime adds, GPUs say); every other call
   * is about a container that exists, and runc (which the runtimes the
   * policy names chain to) answers state, kill and delete of it.  */
  if (n == 0 || fallback)
    {
      *out = default_runtime ();
      h.fallback = n > 0;
      if (*out)
        {
          if (how)
            *how = h;
          return 0;
        }
    }
  if (n == 1 && strchr (candidates[0], '/') == NULL)
    {
      cleanup_free char *what = xasprintf ("policy runtime `%s`", candidates[0]);
      return roce_error_refuse (err, what, "an executable in " SAFE_PATH, "none there",
                                "install it there, or give its absolute path in the policy");
    }
  if (n == 1)
    {
      cleanup_free char *what = xasprintf ("policy runtime `%s`", candidates[0]);
      if (strcmp (why, "roce-runtime itself") == 0)
        return roce_error_refuse (
            err, what, "the real runtime", why,
            "name runc, crun or NVIDIA's runtime in the policy, not roce-runtime");
      return roce_error_refuse (err, what, "an executable file", why,
                                "install the runtime, or name another one in the policy");
    }
  if (n > 1)
    {
      cleanup_free char *list = strv_join (candidates, "`, `");
      cleanup_free char *expected = xasprintf ("one of `%s` installed", list);
      return roce_error_refuse (
          err, "policy runtime", expected, "none of them",
          "install one, or add the path where it is to the policy's runtime list");
    }
  return roce_error_refuse (err, "the real runtime", "runc or crun on PATH or in " SAFE_PATH,
                            "neither", "install runc or crun, or set `runtime` in the policy");
}
