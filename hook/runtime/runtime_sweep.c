/* SPDX-License-Identifier: Apache-2.0 */
/* gc's sweep of the shim's records: a container whose `delete` never came
 * (its shim killed, the node's runtime state lost) leaves <id>.json and
 * <id>.rails under <state_dir>/shim; once its bundle is gone no runtime can
 * act on that container again, and the record only waits to mislead a new
 * container of the id.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "runtime/runtime.h"
#include "utils.h"

#define RECORD_READ_MAX (64 * 1024)

/* The record's bundle, or NULL when the record cannot be read (left alone:
 * the shim says why when it next reads it).  */
static char *
record_bundle (int dirfd, const char *name)
{
  cleanup_close int fd
      = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_error roce_error_t err = NULL;
  struct stat st;
  size_t len;
  const char *b;

  if (fd < 0 || fstat (fd, &st) < 0 || ! S_ISREG (st.st_mode)
      || check_trusted (fd, name, "the shim's record", &err) < 0
      || read_all_fd (fd, RECORD_READ_MAX, &buf, &len, &err) < 0
      || json_parse_n (buf, len, &root, &err) < 0)
    return NULL;
  b = json_string (json_object_get (root, "bundle"));
  return b && b[0] == '/' ? xstrdup (b) : NULL;
}

int
runtime_records_sweep (const char *state_dir, FILE *out, roce_error_t *err)
{
  cleanup_close int dirfd = -1;
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  size_t removed = 0;

  {
    cleanup_error roce_error_t derr = NULL;
    dirfd = runtime_record_dir (state_dir, false, &derr);
    if (dirfd < 0)
      {
        if (derr == NULL)
          return 0; /* no records: the shim never ran here */
        *err = steal_pointer (&derr);
        return -1;
      }
  }
  d = fdopendir (dup (dirfd));
  if (d == NULL)
    return roce_error_sys (err, errno, "`%s/" RUNTIME_RECORD_DIR "`", state_dir);
  while ((e = readdir (d)) != NULL)
    {
      size_t n = strlen (e->d_name);
      cleanup_free char *bundle = NULL;
      cleanup_free char *id = NULL;
      cleanup_free char *rails = NULL;
      cleanup_free char *shown = NULL;
      struct stat st;

      if (e->d_name[0] == '.' || n <= 5 || strcmp (e->d_name + n - 5, ".json") != 0)
        continue;
      id = xstrndup (e->d_name, n - 5);
      if (! runtime_record_id_valid (id) || (bundle = record_bundle (dirfd, e->d_name)) == NULL)
        continue;
      if (stat (bundle, &st) == 0 || errno != ENOENT)
        continue; /* its bundle is there (or unsure): the container may live */
      rails = xasprintf ("%s" RUNTIME_RAILS_SUFFIX, id);
      if (unlinkat (dirfd, e->d_name, 0) < 0 && errno != ENOENT)
        return roce_error_sys (err, errno, "remove `%s/" RUNTIME_RECORD_DIR "/%s`", state_dir,
                               e->d_name);
      if (unlinkat (dirfd, rails, 0) < 0 && errno != ENOENT)
        return roce_error_sys (err, errno, "remove `%s/" RUNTIME_RECORD_DIR "/%s`", state_dir,
                               rails);
      shown = str_escape (bundle);
      fprintf (out, "gc: removed the shim's record of %s: its bundle %s is gone\n", id, shown);
      roce_log (ROCE_LOG_INFO, "gc: removed the shim's record of %s (bundle %s gone)", id, shown);
      removed++;
    }
  if (removed)
    fprintf (out, "gc: removed %zu shim record(s)\n", removed);
  return 0;
}
