/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime's front: which calls go straight to the real runtime.
 *
 * containerd calls the runtime five times a container, and every call of
 * a container that did not ask for RoCE must cost it (almost) nothing.  The
 * engine (roce-runtime-engine, shim/main.c) is a glibc program whose
 * start-up alone costs ~1 ms on a VM where `cpuid` traps (glibc probes the
 * CPU's caches with a hundred of them); the front, linked against musl
 * (`make`, FRONT_CC), starts in a few tens of microseconds.  It decides
 * only what is certain: a call that needs nothing of the engine (no
 * annotated spec, no record of the id, a policy that loads, a runtime that
 * is found) is the runtime's at once; every other call, and any doubt, is
 * the engine's, which decides everything again as it always has.  The
 * files here are linked into both.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "shim.h"
#include "spec/annot.h"
#include "spec/oci.h"
#include "spec/policy.h"

bool
shim_config_asks (const char *buf, size_t len)
{
  struct json_scan scan = { .key = ANNOT_HCA, .env = ANNOT_ENV_HCA "=" };
  /* A spec that did not ask, the common case, is a few tens of kB that
   * json_scan would lex whole: a key or an env string JSON spells without
   * a backslash is in the bytes as it is, so none of them and no
   * backslash there means no.  */
  if (memmem (buf, len, ANNOT_HCA, strlen (ANNOT_HCA)) == NULL
      && memmem (buf, len, ANNOT_ENV_HCA "=", strlen (ANNOT_ENV_HCA "=")) == NULL
      && memchr (buf, '\\', len) == NULL)
    return false;
  json_scan (buf, len, &scan);
  return scan.found || scan.env_found;
}

bool
shim_call_uses_record (const struct shim_args *a)
{
  bool exec = a->cmd && strcmp (a->cmd, "exec") == 0;
  bool del = a->cmd && strcmp (a->cmd, "delete") == 0;
  /* Without --process the runtime builds the process from config.json,
   * which already has everything.  */
  return (exec && a->process) || del || a->edits_bundle;
}

/* Whether an open of what the runtime reads as config.json failing with e
 * fails the same way for the runtime (it runs with the shim's
 * credentials): nothing there, a dangling link or a loop, no permission.
 * Then the runtime says so itself.  */
static bool
runtime_fails_too (int e)
{
  return e == ENOENT || e == ENOTDIR || e == ELOOP || e == EACCES || e == EPERM
         || e == ENAMETOOLONG;
}

/* Over OCI_SCAN_MAX, too large to hold: whether any of its bytes could spell
 * a request (shim_config_asks' first look, chunk by chunk, each chunk with
 * the tail of the one before).  */
static int
huge_config_may_ask (int fd, const char *where, bool *may, roce_error_t *err)
{
  static const char *const keys[] = { ANNOT_HCA, ANNOT_ENV_HCA "=" };
  enum
  {
    CHUNK = 1 << 20,
    KEEP = 16
  };
  cleanup_free char *buf = xmalloc0 (CHUNK + KEEP);
  size_t kept = 0;

  *may = false;
  if (lseek (fd, 0, SEEK_SET) < 0)
    return roce_error_sys (err, errno, "%s", where);
  for (;;)
    {
      ssize_t r = read (fd, buf + kept, CHUNK);
      size_t n;
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return roce_error_sys (err, errno, "read %s", where);
      if (r == 0)
        return 0;
      n = kept + (size_t) r;
      for (size_t k = 0; k < ARRAY_SIZE (keys); k++)
        if (memmem (buf, n, keys[k], strlen (keys[k])) != NULL)
          *may = true;
      if (*may || memchr (buf + kept, '\\', (size_t) r) != NULL)
        {
          *may = true;
          return 0;
        }
      kept = n < KEEP ? n : KEEP;
      memmove (buf, buf + n - kept, kept);
    }
}

int
shim_read_config (const char *bundle, char **buf, size_t *len, roce_error_t *err)
{
  cleanup_close int dirfd = open (bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
  cleanup_close int pathfd = -1;
  cleanup_close int fd = -1;
  cleanup_free char *where = xasprintf ("`%s/config.json`", bundle);
  cleanup_error roce_error_t rerr = NULL;
  char self[32];
  int kind = SHIM_CONFIG_FILE;
  struct stat st;
  bool may;

  *buf = NULL;
  *len = 0;
  if (dirfd < 0)
    return runtime_fails_too (errno) ? 0 : roce_error_sys (err, errno, "open bundle `%s`", bundle);
  /* Looked at by an O_PATH fd first: a FIFO or a device is never opened.  */
  pathfd = openat (dirfd, "config.json", O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (pathfd >= 0 && fstat (pathfd, &st) == 0 && S_ISLNK (st.st_mode))
    {
      /* The runtime follows the link: so does the look (never the edit).  */
      kind = SHIM_CONFIG_LINKED;
      close (pathfd);
      pathfd = openat (dirfd, "config.json", O_PATH | O_CLOEXEC);
    }
  if (pathfd < 0 || fstat (pathfd, &st) < 0)
    return runtime_fails_too (errno) ? 0 : roce_error_sys (err, errno, "open %s", where);
  if (S_ISDIR (st.st_mode))
    return 0; /* the runtime cannot read it either */
  if (! S_ISREG (st.st_mode))
    {
      /* The runtime would read it (a FIFO once a writer comes), and its
       * bytes cannot be looked at without taking them from the runtime.  */
      cleanup_free char *found = xasprintf ("a %s", file_type_name (st.st_mode));
      return roce_error_refuse (err, where, "a regular file", found,
                                "write the spec into the bundle as a regular file");
    }
  snprintf (self, sizeof (self), "/proc/self/fd/%d", pathfd);
  fd = open (self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return runtime_fails_too (errno) ? 0 : roce_error_sys (err, errno, "open %s", where);
  if (read_all_fd (fd, OCI_SCAN_MAX, buf, len, &rerr) == 0)
    return kind;
  if (roce_error_status (&rerr) != E2BIG)
    return roce_error_sys (err, roce_error_status (&rerr), "read %s", where);
  /* Too large to hold: handed on untouched when no byte of it could ask
   * (the strict read refuses anything over OCI_CONFIG_MAX that does).  */
  if (huge_config_may_ask (fd, where, &may, err) < 0)
    return -1;
  if (may)
    return roce_error_make (err, E2BIG, "%s: larger than %d bytes", where, OCI_CONFIG_MAX);
  return 0;
}

/* Whether shim_prepare_bundle could do anything but return 0 for a
 * create/run: a config.json that asks (through a link too: it refuses
 * that), or one it refuses to look at.  */
static bool
bundle_needs_engine (const struct shim_args *a)
{
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t err = NULL;
  size_t len = 0;
  /* No --bundle: the working directory, as for the runtime.  */
  int r = shim_read_config (a->bundle ? a->bundle : ".", &buf, &len, &err);
  return r < 0 || (r > 0 && shim_config_asks (buf, len));
}

/* Whether shim_prepare_process could do anything: a record (or a rails
 * file, at delete) of the id, or a record directory it would warn of.  */
static bool
record_needs_engine (const struct shim_args *a, const char *state_dir)
{
  bool del = a->cmd && strcmp (a->cmd, "delete") == 0;
  cleanup_error roce_error_t err = NULL;
  cleanup_close int dirfd = -1;
  cleanup_free char *name = NULL;
  cleanup_free char *rails = NULL;

  if (! shim_call_uses_record (a))
    return false;
  if (! runtime_record_id_valid (a->id))
    return false;
  dirfd = runtime_record_dir (state_dir, false, &err);
  if (dirfd < 0)
    return err != NULL; /* none: no record; one it distrusts: the engine warns */
  name = xasprintf ("%s.json", a->id);
  if (faccessat (dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
    return true;
  if (! del)
    return false;
  rails = xasprintf ("%s" RUNTIME_RAILS_SUFFIX, a->id);
  return faccessat (dirfd, rails, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

bool
shim_front_passes (int argc, char **argv, const char *policy_path, char **runtime)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *policy = NULL;
  struct shim_args a;

  *runtime = NULL;
  if (shim_parse_argv (argc, argv, &a, &err) < 0)
    return false;
  if (a.edits_bundle && bundle_needs_engine (&a))
    return false;
  if (policy_load (policy_path, &policy, &err) < 0)
    return false; /* the engine warns, and finds runc or crun itself */
  if (record_needs_engine (&a, policy->state_dir))
    return false;
  return runtime_find (policy->runtimes, false, runtime, NULL, &err) == 0;
}
