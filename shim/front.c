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

int
shim_read_config (const char *bundle, char **buf, size_t *len, roce_error_t *err)
{
  cleanup_close int dirfd = open (bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cleanup_close int fd = -1;
  cleanup_error roce_error_t rerr = NULL;

  *buf = NULL;
  if (dirfd < 0)
    return roce_error_sys (err, errno, "open bundle `%s`", bundle);
  fd = openat (dirfd, "config.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s/config.json`", bundle);
  /* Unreadable or huge: not a request (the runtime judges the file).  */
  if (read_all_fd (fd, OCI_SCAN_MAX, buf, len, &rerr) < 0)
    return 0;
  return 1;
}

/* Whether shim_prepare_bundle could do anything but return 0 for a
 * create/run: a config.json that asks, or one it cannot open (it refuses
 * that).  */
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
