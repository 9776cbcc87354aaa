/* SPDX-License-Identifier: Apache-2.0 */
/* reaping/: the marks of the holders a process is releasing (a poststop's
 * reaper, the shim's release after a foreground run).  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
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

/* ---- reaping/: the holders a process is releasing ------------------------------- */

/* <key>_<cookie>: a namespace that died and one that got its inode (its
 * holder moved aside, lease_holder_move_aside) have the same key, and each
 * may have a reaper of its own.  */
#define MARK_MAX (KEY_MAX + 24)

/* A mark's lock is the kernel's lock of its open file (fcntl F_OFD_SETLK, a
 * write lock on the whole file): it goes with the last fd of that open file,
 * so a fork's child keeps it.  Whether a mark is held is asked with
 * F_OFD_GETLK, which takes no lock: a `leases` or a waiting start that asks
 * never makes a release that marks at that moment find the mark taken (a
 * momentary shared flock did, and that release left its holder to gc).
 *
 * Versions before this one locked marks with flock, which OFD locks do not
 * see.  While an upgrade leaves their reapers alive (a minute at most), a
 * mark also takes the flock, when it can (the OFD lock decides: a momentary
 * flock of an older `leases` never fails a mark), and a mark not held by
 * an OFD lock is asked for its flock as well.  */
static int
mark_lock (int fd)
{
  struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
  if (fcntl (fd, F_OFD_SETLK, &l) < 0)
    return -1;
  (void) flock (fd, LOCK_EX | LOCK_NB); /* for older versions' eyes only */
  return 0;
}

/* 1: a live process holds the mark's lock; 0: nobody; -1: the kernel
 * cannot say (errno).  */
static int
mark_held (int fd)
{
  struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
  if (fcntl (fd, F_OFD_GETLK, &l) < 0)
    return -1;
  if (l.l_type != F_UNLCK)
    return 1;
  /* An older version's mark: its flock, let go at once.  */
  if (flock (fd, LOCK_SH | LOCK_NB) == 0)
    {
      flock (fd, LOCK_UN);
      return 0;
    }
  return errno == EWOULDBLOCK ? 1 : -1;
}

static void
mark_name (const struct netns_id *ns, char buf[MARK_MAX])
{
  char key[KEY_MAX];
  lease_holder_key (ns, key, sizeof (key));
  snprintf (buf, MARK_MAX, "%.*s_%llu", KEY_MAX - 1, key, (unsigned long long) ns->cookie);
}

int
lease_reap_mark (struct lease_store *s, const struct netns_id *ns, const char *container, int *out,
                 roce_error_t *err)
{
  cleanup_close int dfd = lease_subdir (s, LEASE_REAPING, true, err);
  char key[MARK_MAX];
  int fd;

  *out = -1;
  if (dfd < 0)
    return -1;
  mark_name (ns, key);
  fd = openat (dfd, key, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s/%s`", s->dir, LEASE_REAPING, key);
  {
    cleanup_free char *path = xasprintf ("%s/%s/%s", s->dir, LEASE_REAPING, key);
    if (check_private (fd, path, "the lease store's mark", S_IFREG, err) < 0)
      {
        close (fd);
        return -1;
      }
  }
  if (mark_lock (fd) < 0)
    {
      int e = errno;
      close (fd);
      if (e == EAGAIN || e == EACCES)
        return 0;
      return roce_error_sys (err, e, "lock `%s/%s/%s`", s->dir, LEASE_REAPING, key);
    }
  /* A stale mark may name another container: what it names now is ours.  */
  if (ftruncate (fd, 0) < 0
      || (container && write_all_fd (fd, container, strlen (container), NULL) < 0))
    {
      int e = errno ? errno : EIO;
      unlinkat (dfd, key, 0);
      close (fd);
      return roce_error_sys (err, e, "write `%s/%s/%s`", s->dir, LEASE_REAPING, key);
    }
  *out = fd;
  return 1;
}

void
lease_reap_unmark (struct lease_store *s, const struct netns_id *ns, int fd)
{
  cleanup_close int dfd = lease_subdir (s, LEASE_REAPING, false, NULL);
  char key[MARK_MAX];

  mark_name (ns, key);
  if (dfd >= 0)
    unlinkat (dfd, key, 0);
  if (fd >= 0)
    close (fd);
}

/* lease_reaping, as the mark says now: 1 or 0.  */
static int
mark_says (const struct lease_store *s, const struct lease_holder *h)
{
  cleanup_close int dfd = s->dir_fd < 0 ? -1 : lease_subdir (s, LEASE_REAPING, false, NULL);
  cleanup_close int fd = -1;
  char key[MARK_MAX], named[OCI_ID_MAX + 1];
  size_t n = strv_len (h->containers);
  ssize_t len;

  if (dfd < 0)
    return 0;
  mark_name (&h->ns, key);
  fd = openat (dfd, key, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  /* A lock held is a live process's.  */
  if (fd < 0 || mark_held (fd) != 1)
    return 0;
  if (n == 0)
    return 1;
  if (n > 1)
    return 0;
  len = pread (fd, named, sizeof (named) - 1, 0);
  if (len <= 0)
    return 0;
  named[len] = '\0';
  return strcmp (named, h->containers[0]) == 0;
}

int
lease_reaping (const struct lease_store *s, const struct lease_holder *h)
{
  int r = mark_says (s, h);

  /* Read without the store's lock, h may be older than the mark: a
   * release that marked, committed and unmarked since h was read, or one
   * that marked after it.  Its file says so (a holder's file is replaced,
   * never written in place).  */
  if (r == 0 && s->lock_fd < 0 && ! lease_holder_unchanged (s, h))
    return -1;
  return r;
}

bool
lease_reap_wait (struct lease_store *s, const struct netns_id *ns, long ms)
{
  cleanup_close int dfd = s->dir_fd < 0 ? -1 : lease_subdir (s, LEASE_REAPING, false, NULL);
  cleanup_close int fd = -1;
  char key[MARK_MAX];
  int64_t end = mono_ns () + (int64_t) ms * 1000000;
  long pause_us = 1000;

  if (dfd < 0)
    return true;
  mark_name (ns, key);
  fd = openat (dfd, key, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return true;
  for (;;)
    {
      if (mark_held (fd) != 1)
        return true;
      if (mono_ns () >= end)
        return false;
      usleep ((useconds_t) pause_us);
      if (pause_us < 20000)
        pause_us *= 2;
    }
}

void
lease_reap_sweep (struct lease_store *s)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  int dfd = lease_subdir (s, LEASE_REAPING, false, NULL);

  if (dfd >= 0 && (d = fdopendir (dfd)) == NULL)
    close (dfd);
  while (d && (e = readdir (d)) != NULL)
    {
      cleanup_close int fd = -1;
      if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
        continue;
      fd = openat (dirfd (d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      /* Not a regular file (a hand-made store), or nobody's lock: stale.  */
      if (fd < 0 || mark_held (fd) == 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
}
