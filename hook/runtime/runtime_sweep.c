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
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "runtime/runtime.h"
#include "sys/netns.h"
#include "sys/rootfs.h"

#define RECORD_READ_MAX (64 * 1024)

/* What a record says of where its container's bundle was.  */
struct where
{
  char *bundle;
  char boot[64]; /* "" in a record of an older roce-runtime */
  bool has_dir;  /* the bundle's directory as the runtime saw it */
  uint64_t dev, ino;
};

static void
where_clear (struct where *w)
{
  free (w->bundle);
}

/* 0 with *w filled, -1 when the record cannot be read (left alone: the
 * shim says why when it next reads it).  */
static int
record_where (int dirfd, const char *name, struct where *w)
{
  cleanup_close int fd
      = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_error roce_error_t err = NULL;
  const struct json *dir;
  const char *b, *boot;
  struct stat st;
  size_t len;

  if (fd < 0 || fstat (fd, &st) < 0 || ! S_ISREG (st.st_mode)
      || check_trusted (fd, name, "the shim's record", &err) < 0
      || read_all_fd (fd, RECORD_READ_MAX, &buf, &len, &err) < 0
      || json_parse_n (buf, len, &root, &err) < 0)
    return -1;
  b = json_string (json_object_get (root, "bundle"));
  if (! b || b[0] != '/')
    return -1;
  boot = json_string (json_object_get (root, "boot"));
  if (boot && strlen (boot) < sizeof (w->boot))
    strcpy (w->boot, boot);
  dir = json_object_get (root, "bundle_dir");
  w->has_dir
      = dir && json_member_u64 (dir, "bundle_dir", "dev", true, 0, UINT64_MAX, &w->dev, &err) > 0
        && json_member_u64 (dir, "bundle_dir", "ino", true, 0, UINT64_MAX, &w->ino, &err) > 0;
  w->bundle = xstrdup (b);
  return 0;
}

enum fate
{
  FATE_LIVE,   /* its bundle is there (or it cannot be told): kept */
  FATE_GONE,   /* its bundle is gone from the directory the runtime put it in */
  FATE_UNSEEN, /* that directory is not visible here: kept, and said */
};

/* Whether the bundle is gone, seen from the root `root` (an O_PATH fd):
 * only when the directory there is the one the runtime recorded (same
 * device and inode) and holds no entry of the bundle's name.  */
static enum fate
fate_in (int root, const struct where *w)
{
  cleanup_free char *dir = xstrdup (w->bundle);
  char *slash = strrchr (dir, '/');
  const char *base = slash + 1;
  cleanup_close int dfd = -1;
  struct stat st;

  *slash = '\0';
  dfd = rootfs_openat (root, dir[0] ? dir : "/", O_PATH | O_DIRECTORY, ROOTFS_AUTO);
  if (dfd < 0 || fstat (dfd, &st) < 0 || (uint64_t) st.st_dev != w->dev
      || (uint64_t) st.st_ino != w->ino)
    return FATE_UNSEEN;
  if (fstatat (dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
    return FATE_LIVE;
  return FATE_GONE;
}

/* A container lives until its bundle is gone, and ENOENT says so only
 * where the directory that held it is visible: gc in a container of its
 * own (the DaemonSet's) sees its own /run, not containerd's or CRI-O's.  So
 * the bundle's directory must be the one the runtime recorded at create,
 * seen from this process's root or, failing that, from the host's init
 * (/proc/1/root: gc with the host's pids); a record of an earlier boot is
 * gone whatever is visible (no container outlives its boot).  A record of
 * an older roce-runtime, with neither, goes only when the directory this
 * process sees is the host's init's too, and the bundle is not in it.  */
static enum fate
record_fate (struct where *w, const char *boot)
{
  cleanup_close int self = -1;
  cleanup_close int host = -1;
  enum fate f;

  if (w->boot[0] && strcmp (w->boot, boot) != 0)
    return FATE_GONE;
  if (! w->has_dir)
    {
      cleanup_free char *dir = xstrdup (w->bundle);
      struct stat st;
      if (stat (w->bundle, &st) == 0 || errno != ENOENT)
        return FATE_LIVE;
      *strrchr (dir, '/') = '\0';
      if (stat (dir[0] ? dir : "/", &st) < 0)
        return FATE_UNSEEN;
      w->dev = (uint64_t) st.st_dev;
      w->ino = (uint64_t) st.st_ino;
      host = open ("/proc/1/root", O_PATH | O_DIRECTORY | O_CLOEXEC);
      return host >= 0 ? fate_in (host, w) : FATE_UNSEEN;
    }
  self = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (self >= 0 && (f = fate_in (self, w)) != FATE_UNSEEN)
    return f;
  host = open ("/proc/1/root", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (host >= 0 && (f = fate_in (host, w)) != FATE_UNSEEN)
    return f;
  return FATE_UNSEEN;
}

int
runtime_records_sweep (const char *state_dir, FILE *out, roce_error_t *err)
{
  cleanup_close int dirfd = -1;
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  size_t removed = 0, unseen = 0;
  cleanup_free char *first_unseen = NULL;
  char boot[NETNS_BOOT_ID_MAX];

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
  if (netns_boot_id (boot, err) < 0)
    return -1;
  d = fdopendir (dup (dirfd));
  if (d == NULL)
    return roce_error_sys (err, errno, "`%s/" RUNTIME_RECORD_DIR "`", state_dir);
  while ((e = readdir (d)) != NULL)
    {
      size_t n = strlen (e->d_name);
      struct where w = { 0 };
      cleanup_free char *id = NULL;
      cleanup_free char *rails = NULL;
      cleanup_free char *shown = NULL;
      enum fate f;

      if (e->d_name[0] == '.' || n <= 5 || strcmp (e->d_name + n - 5, ".json") != 0)
        continue;
      id = xstrndup (e->d_name, n - 5);
      if (! runtime_record_id_valid (id) || record_where (dirfd, e->d_name, &w) < 0)
        continue;
      f = record_fate (&w, boot);
      if (f == FATE_UNSEEN)
        {
          unseen++;
          if (! first_unseen)
            first_unseen = xstrdup (w.bundle);
        }
      if (f != FATE_GONE)
        {
          where_clear (&w);
          continue;
        }
      rails = xasprintf ("%s" RUNTIME_RAILS_SUFFIX, id);
      shown = xstrdup (w.bundle);
      where_clear (&w);
      if (unlinkat (dirfd, e->d_name, 0) < 0 && errno != ENOENT)
        return roce_error_sys (err, errno, "remove `%s/" RUNTIME_RECORD_DIR "/%s`", state_dir,
                               e->d_name);
      if (unlinkat (dirfd, rails, 0) < 0 && errno != ENOENT)
        return roce_error_sys (err, errno, "remove `%s/" RUNTIME_RECORD_DIR "/%s`", state_dir,
                               rails);
      roce_print (out, "gc: removed the shim's record of %s: its bundle %s is gone", id, shown);
      roce_log (ROCE_LOG_INFO, "gc: removed the shim's record of %s (bundle %s gone)", id, shown);
      removed++;
    }
  if (removed)
    roce_print (out, "gc: removed %zu shim record(s)", removed);
  if (unseen)
    {
      roce_print (out,
                  "gc: kept %zu shim record(s) whose bundle directory is not visible here nor "
                  "through the host's init (the first: %s): their containers may live (fix: run "
                  "gc with the host's pids, as the DaemonSet does, or in the runtime's mount "
                  "namespace)",
                  unseen, first_unseen);
      roce_log (ROCE_LOG_WARN, "gc: kept %zu shim record(s): bundle directory not visible (%s)",
                unseen, first_unseen);
    }
  return 0;
}
