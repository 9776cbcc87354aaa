/* SPDX-License-Identifier: Apache-2.0 */
/* The lease store opened (lease.h has the layout): the lock taken within a
 * timeout, a snapshot without it, the move from the leases.json of earlier
 * versions, a holder moved aside.  Reading the layout is lease_index.c's,
 * writing it lease_commit.c's.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "spec/oci.h"
/* ---- the boot, the lock, the file of earlier versions ----------------------------- */

/* Whether the store was last written in an earlier boot: only a power loss
 * (the store is not fsynced) can have torn it then.  LEASE_BOOT says which
 * boot wrote it (the wall clock may jump: it is not asked); a store older
 * than that file falls back to its mtime against the boot time.  */
static bool
written_before_this_boot (const struct lease_store *s, int fd)
{
  char now[NETNS_BOOT_ID_MAX] = "", was[64] = "";
  cleanup_close int bfd = openat (s->dir_fd, LEASE_BOOT, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct timespec t, up;
  struct stat st;
  ssize_t n;

  if (bfd >= 0)
    {
      n = read (bfd, was, sizeof (was) - 1);
      if (n <= 0 || netns_boot_id (now, NULL) < 0)
        return false; /* cannot tell: not stale */
      was[n] = '\0';
      was[strcspn (was, "\n")] = '\0'; /* written with the file's newline */
      return strcmp (was, now) != 0;
    }
  if (fstat (fd, &st) < 0 || clock_gettime (CLOCK_REALTIME, &t) < 0
      || clock_gettime (CLOCK_BOOTTIME, &up) < 0)
    return false;
  return st.st_mtim.tv_sec < t.tv_sec - up.tv_sec;
}

static struct lease_store *
store_new (const char *dir)
{
  struct lease_store *s = xmalloc0 (sizeof (*s));
  s->dir = xstrdup (dir);
  s->dir_fd = -1;
  s->lock_fd = -1;
  return s;
}

static void
holders_clear (struct lease_store *s)
{
  for (size_t i = 0; i < s->n; i++)
    lease_holder_free (s->h[i]);
  s->n = 0;
  for (size_t i = 0; i < s->n_blocks; i++)
    free (s->blocks[i].value);
  s->n_blocks = 0;
}

/* The pid holding the flock on fd, from /proc/locks ("1: FLOCK  ADVISORY
 * WRITE <pid> <maj>:<min>:<ino> 0 EOF"; waiters' lines carry "->"), or 0.  */
static pid_t
lock_holder (int fd)
{
  cleanup_file FILE *f = fopen ("/proc/locks", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;
  struct stat st;

  if (f == NULL || fstat (fd, &st) < 0)
    return 0;
  while (getline (&line, &cap, f) > 0)
    {
      char kind[16], mode[16];
      unsigned maj, min;
      unsigned long long ino;
      int pid;
      if (strstr (line, "->") != NULL
          || sscanf (line, "%*d: %15s %*s %15s %d %x:%x:%llu", kind, mode, &pid, &maj, &min, &ino)
                 != 6)
        continue;
      if (strcmp (kind, "FLOCK") == 0 && ino == (unsigned long long) st.st_ino
          && maj == major (st.st_dev) && min == minor (st.st_dev) && pid > 0)
        return (pid_t) pid;
    }
  return 0;
}

/* Takes the store's lock, waiting at most timeout_ms: a holder that is
 * stopped or hung must not keep every start waiting until the runtime kills
 * the hook.  The refusal names the holder.  */
static int
lock_within (struct lease_store *s, unsigned timeout_ms, roce_error_t *err)
{
  struct timespec start, now;
  long pause_us = 200;

  clock_gettime (CLOCK_MONOTONIC, &start);
  for (;;)
    {
      long waited_ms;
      if (flock (s->lock_fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
      if (errno != EWOULDBLOCK && errno != EINTR)
        return roce_error_sys (err, errno, "lock `%s/%s`", s->dir, LEASE_LOCK);
      clock_gettime (CLOCK_MONOTONIC, &now);
      waited_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
      if (waited_ms >= (long) timeout_ms)
        {
          pid_t pid = lock_holder (s->lock_fd);
          cleanup_free char *what = xasprintf ("the lease store lock `%s/%s`", s->dir, LEASE_LOCK);
          cleanup_free char *exp = xasprintf ("free within %u ms", timeout_ms);
          cleanup_free char *comm = NULL;
          cleanup_free char *found = NULL;
          cleanup_free char *fix = NULL;
          cleanup_free char *commpath = xasprintf ("/proc/%d/comm", (int) pid);
          cleanup_error roce_error_t cerr = NULL;
          if (pid <= 0)
            return roce_error_refuse (err, what, exp, "still held (holder unknown)",
                                      "find the process holding it with `lslocks`; it is "
                                      "released when that process exits");
          if (read_line_at (AT_FDCWD, commpath, &comm, &cerr) < 0 || ! str_is_printable (comm))
            {
              free (comm);
              comm = xstrdup ("?");
            }
          found = xasprintf ("held by pid %d (%s)", (int) pid, comm);
          fix = xasprintf ("find out why pid %d is stopped or hung (`cat /proc/%d/status`); the "
                           "lock is released when it exits",
                           (int) pid, (int) pid);
          return roce_error_refuse (err, what, exp, found, fix);
        }
      usleep ((useconds_t) pause_us);
      if (pause_us < 10000)
        pause_us *= 2;
    }
}

static int
legacy_load (struct lease_store *s, roce_error_t *err)
{
  cleanup_close int fd = openat (s->dir_fd, LEASE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *buf = NULL;

  s->all = true;
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_FILE);
  if (read_all_fd (fd, LEASE_FILE_MAX, &buf, NULL, err) < 0 || lease_store_parse (s, buf, err) < 0)
    {
      cleanup_free char *what = NULL, *found = NULL, *fix = NULL;
      if (written_before_this_boot (s, fd))
        {
          /* Every lease in it died with the last boot.  */
          roce_log (ROCE_LOG_WARN,
                    "lease store `%s/%s` from an earlier boot is unreadable (%s): "
                    "starting from an empty store",
                    s->dir, LEASE_FILE, (*err)->msg);
          roce_error_release (err);
          holders_clear (s);
          return 0;
        }
      /* The store is the node's truth on who holds which address: nothing
       * is assigned from one that cannot be read.  The one-line contract,
       * with what the operator can do.  */
      what = xasprintf ("lease store `%s/%s`", s->dir, LEASE_FILE);
      found = xstrdup ((*err)->msg);
      fix = xasprintf ("inspect it; when no RoCE container runs on this node, move it aside (mv "
                       "%s/%s %s/%s.bad): leases start afresh",
                       s->dir, LEASE_FILE, s->dir, LEASE_FILE);
      roce_error_release (err);
      return roce_error_refuse (err, what, "a store this version reads", found, fix);
    }
  return 0;
}

/* ---- opening ------------------------------------------------------------------------- */
/* <state_dir>/format: the store's format when after 2 (LEASE_FORMAT_FILE).
 * One of a later roce-hook than this is refused in one line: nothing is
 * read from, or written over, a store this version cannot read.  */
static int
format_read (struct lease_store *s, roce_error_t *err)
{
  cleanup_close int fd = openat (s->dir_fd, LEASE_FORMAT_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  char buf[16] = "";
  ssize_t n;
  long v = 0;

  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_FORMAT_FILE);
  n = read (fd, buf, sizeof (buf) - 1);
  if (n > 0)
    {
      char *end;
      buf[n] = '\0';
      buf[strcspn (buf, "\n")] = '\0';
      v = strtol (buf, &end, 10);
      if (end == buf || *end != '\0' || v < 1)
        v = -1;
    }
  if (n <= 0 || v < 0 || v > LEASE_STORE_FORMAT)
    {
      cleanup_free char *what = xasprintf ("lease store `%s`", s->dir);
      cleanup_free char *exp = xasprintf ("a store this version reads (format %d-%d)",
                                          LEASE_STORE_FORMAT_OLDEST, LEASE_STORE_FORMAT);
      cleanup_free char *q = str_quote (n > 0 ? buf : "");
      cleanup_free char *found
          = v > LEASE_STORE_FORMAT ? xasprintf ("format %ld (%s/%s)", v, s->dir, LEASE_FORMAT_FILE)
                                   : xasprintf ("%s in %s/%s", q, s->dir, LEASE_FORMAT_FILE);
      cleanup_free char *fix = xasprintf ("install a roce-hook that reads format %s, or drain the "
                                          "node and move %s aside",
                                          v > 0 ? buf : "it", s->dir);
      return roce_error_refuse (err, what, exp, found, fix);
    }
  s->format = (int) v;
  return 0;
}

static int
load_blocks (struct lease_store *s, roce_error_t *err)
{
  cleanup_close int fd = openat (s->dir_fd, LEASE_BLOCKS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;

  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_BLOCKS);
  if (read_all_fd (fd, LEASE_FILE_MAX, &buf, NULL, err) < 0 || json_parse (buf, &root, err) < 0
      || lease_blocks_parse (root, s, err) < 0)
    {
      cleanup_free char *what = xasprintf ("lease store `%s/%s`", s->dir, LEASE_BLOCKS);
      cleanup_free char *found = xstrdup ((*err)->msg);
      cleanup_free char *fix
          = xasprintf ("inspect it; the blocks are etcd's to say: move it aside "
                       "(mv %s/%s %s/%s.bad) and the node adopts its blocks back",
                       s->dir, LEASE_BLOCKS, s->dir, LEASE_BLOCKS);
      roce_error_release (err);
      return roce_error_refuse (err, what, "a store this version reads", found, fix);
    }
  /* A commit compares its text with this one (the same format).  */
  s->blocks_stored = lease_blocks_format (s);
  return 0;
}

/* An earlier version's leases.json: read, written out as the layout, then
 * removed (the layout is complete before it goes: a writer killed half-way
 * migrates again).  */
static int
migrate (struct lease_store *s, roce_error_t *err)
{
  if (faccessat (s->dir_fd, LEASE_FILE, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
    return 0;
  holders_clear (s);
  if (legacy_load (s, err) < 0)
    return -1;
  s->all = true;
  if (lease_store_commit (s, err) < 0)
    return roce_error_wrap (err, "moving `%s/%s` to the store's directories", s->dir, LEASE_FILE);
  if (unlinkat (s->dir_fd, LEASE_FILE, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/%s`", s->dir, LEASE_FILE);
  unlinkat (s->dir_fd, LEASE_FILE_NEW, 0);
  roce_log (ROCE_LOG_INFO, "lease store `%s`: %zu holder(s) moved from %s", s->dir, s->n,
            LEASE_FILE);
  return 0;
}

int
lease_store_open (const char *dir, struct lease_store **out, roce_error_t *err)
{
  return lease_store_open_wait (dir, LEASE_LOCK_WAIT_MS, out, err);
}

#define STATE_GONE "state_dir `%s`: gone, and with it what it held"

static int
store_open (const char *dir, unsigned timeout_ms, bool make, struct lease_store **out,
            roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = store_new (dir);

  /* Made on first use only: every start opens it.  */
  s->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dir_fd < 0 && errno == ENOENT && ! make)
    return roce_error_make (err, ENOENT, STATE_GONE, dir);
  if (s->dir_fd < 0 && errno == ENOENT)
    {
      if (mkdir_p (dir, "state_dir", err) < 0)
        return -1;
      s->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
  if (s->dir_fd < 0)
    return roce_error_sys (err, errno, "open state_dir `%s`", dir);
  if (check_private (s->dir_fd, dir, "state_dir", S_IFDIR, err) < 0)
    return -1;
  s->lock_fd = openat (s->dir_fd, LEASE_LOCK,
                       O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (s->lock_fd < 0)
    return roce_error_sys (err, errno, "open `%s/%s`", dir, LEASE_LOCK);
  {
    cleanup_free char *path = xasprintf ("%s/%s", dir, LEASE_LOCK);
    if (check_private (s->lock_fd, path, "the lease store's lock", S_IFREG, err) < 0)
      return -1;
  }
  if (lock_within (s, timeout_ms, err) < 0)
    return -1;
  s->locked_ns = mono_ns ();
  {
    /* Removed while this waited for the lock: gone all the same.  */
    struct stat st;
    if (! make && fstat (s->dir_fd, &st) == 0 && st.st_nlink == 0)
      return roce_error_make (err, ENOENT, STATE_GONE, dir);
  }
  if (format_read (s, err) < 0 || migrate (s, err) < 0)
    return -1;
  if (s->blocks_stored == NULL && s->n_blocks == 0 && load_blocks (s, err) < 0)
    return -1;
  *out = steal_pointer (&s);
  return 0;
}

int
lease_store_open_wait (const char *dir, unsigned timeout_ms, struct lease_store **out,
                       roce_error_t *err)
{
  return store_open (dir, timeout_ms, true, out, err);
}

int
lease_store_open_held (const char *dir, unsigned timeout_ms, struct lease_store **out,
                       roce_error_t *err)
{
  return store_open (dir, timeout_ms, false, out, err);
}

int
lease_store_snapshot (const char *dir, struct lease_store **out, roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = store_new (dir);

  s->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dir_fd < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "open state_dir `%s`", dir);
  if (s->dir_fd >= 0 && check_private (s->dir_fd, dir, "state_dir", S_IFDIR, err) < 0)
    return -1;
  if (s->dir_fd >= 0 && format_read (s, err) < 0)
    return -1;
  if (s->dir_fd >= 0)
    {
      /* Not migrated yet (no writer since the upgrade): the old file is the
       * whole truth.  */
      if (faccessat (s->dir_fd, LEASE_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        {
          if (legacy_load (s, err) < 0)
            return -1;
        }
      else if (load_blocks (s, err) < 0 || lease_store_load_all (s, err) < 0)
        return -1;
    }
  s->all = true;
  *out = steal_pointer (&s);
  return 0;
}

void
lease_store_free (struct lease_store *s)
{
  if (s == NULL)
    return;
  holders_clear (s);
  free (s->h);
  free (s->blocks);
  for (size_t i = 0; i < s->n_gone; i++)
    lease_holder_free (s->gone[i]);
  free (s->gone);
  for (size_t i = 0; i < s->n_bits; i++)
    cleanup_closep (&s->bits[i].fd);
  free (s->bits);
  free (s->blocks_stored);
  lease_store_unlock (s);
  cleanup_closep (&s->dir_fd);
  free (s->dir);
  free (s);
}

void
lease_store_unlock (struct lease_store *s)
{
  double ms;

  if (s->lock_fd < 0)
    return;
  ms = (double) (mono_ns () - s->locked_ns) / 1e6;
  cleanup_closep (&s->lock_fd); /* releases the flock */
  if (ms > LEASE_HOLD_WARN_MS)
    roce_log (ROCE_LOG_WARN, "lease store `%s`: lock held %.3f ms (more than %d)", s->dir, ms,
              LEASE_HOLD_WARN_MS);
  else
    roce_log_file ("lease store `%s`: lock held %.3f ms", s->dir, ms);
}

void
cleanup_lease_storep (struct lease_store **s)
{
  lease_store_free (*s);
  *s = NULL;
}

struct lease_holder *
lease_holder_move_aside (struct lease_store *s, struct lease_holder *h)
{
  struct lease_holder *g = lease_holder_copy (h);
  g->ns.ino |= NETNS_INO_GONE;
  lease_holder_drop (s, h);
  lease_holder_append (s, g);
  return g;
}
