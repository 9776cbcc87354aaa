/* SPDX-License-Identifier: Apache-2.0 */
/* reaping/: the marks of the holders a process is releasing (a poststop's
 * reaper, the shim's release after a foreground run).  */
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

/* ---- reaping/: the holders a process is releasing ------------------------------- */

/* <key>_<cookie>: a namespace that died and one that got its inode (its
 * holder moved aside, lease_holder_move_aside) have the same key, and each
 * may have a reaper of its own.  */
#define MARK_MAX (KEY_MAX + 24)

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
  if (flock (fd, LOCK_EX | LOCK_NB) < 0)
    {
      int e = errno;
      close (fd);
      if (e == EWOULDBLOCK)
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

bool
lease_reaping (const struct lease_store *s, const struct lease_holder *h)
{
  cleanup_close int dfd = s->dir_fd < 0 ? -1 : lease_subdir (s, LEASE_REAPING, false, NULL);
  cleanup_close int fd = -1;
  char key[MARK_MAX], named[OCI_ID_MAX + 1];
  size_t n = strv_len (h->containers);
  ssize_t len;

  if (dfd < 0)
    return false;
  mark_name (&h->ns, key);
  fd = openat (dfd, key, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  /* A lock that cannot be had is a live process's.  */
  if (fd < 0 || flock (fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
    return false;
  if (n == 0)
    return true;
  if (n > 1)
    return false;
  len = pread (fd, named, sizeof (named) - 1, 0);
  if (len <= 0)
    return false;
  named[len] = '\0';
  return strcmp (named, h->containers[0]) == 0;
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
      if (flock (fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
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
      if (fd < 0 || flock (fd, LOCK_EX | LOCK_NB) == 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
}
