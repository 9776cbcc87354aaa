/* The lease store on disk (lease.h has the layout): locking, the holders'
 * files, the indexes, the bits, the commit, and the move from leases.json.  */
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

#include "lease_json.h"
#include "json.h"
#include "lease.h"
#include "lease_int.h"
#include "log.h"
#include "oci.h"
#include "utils.h"

/* ---- the boot, the lock, the file of earlier versions ----------------------------- */

static int
this_boot (char *buf, size_t size)
{
  cleanup_close int fd = open ("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read (fd, buf, size - 1);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* Whether the store was last written in an earlier boot: only a power loss
 * (the store is not fsynced) can have torn it then.  LEASE_BOOT says which
 * boot wrote it (the wall clock may jump: it is not asked); a store older
 * than that file falls back to its mtime against the boot time.  */
static bool
written_before_this_boot (const struct lease_store *s, int fd)
{
  char now[64] = "", was[64] = "";
  cleanup_close int bfd = openat (s->dir_fd, LEASE_BOOT, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct timespec t, up;
  struct stat st;
  ssize_t n;

  if (bfd >= 0)
    {
      n = read (bfd, was, sizeof (was) - 1);
      if (n <= 0 || this_boot (now, sizeof (now)) < 0)
        return false; /* cannot tell: not stale */
      was[n] = '\0';
      return strcmp (was, now) != 0;
    }
  if (fstat (fd, &st) < 0 || clock_gettime (CLOCK_REALTIME, &t) < 0
      || clock_gettime (CLOCK_BOOTTIME, &up) < 0)
    return false;
  return st.st_mtim.tv_sec < t.tv_sec - up.tv_sec;
}

static int64_t
mono_ns (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
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
          || sscanf (line, "%*d: %15s %*s %15s %d %x:%x:%llu", kind, mode, &pid, &maj, &min, &ino) != 6)
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
          roce_log (ROCE_LOG_WARN, "lease store `%s/%s` from an earlier boot is unreadable (%s): "
                    "starting from an empty store", s->dir, LEASE_FILE, (*err)->msg);
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

/* ---- the layout: holders/, addrs/, containers/ ------------------------------------ */

/* The fd of a directory of the store; -1 with errno ENOENT when it is not
 * there and create is false.  */
static int
subdir (const struct lease_store *s, const char *name, bool create, roce_error_t *err)
{
  int fd = openat (s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create)
    {
      if (mkdirat (s->dir_fd, name, 0755) < 0 && errno != EEXIST)
        return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, name);
      fd = openat (s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  if (fd < 0 && (errno != ENOENT || create))
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, name);
  if (fd >= 0)
    {
      cleanup_free char *path = xasprintf ("%s/%s", s->dir, name);
      if (check_private (fd, path, "lease store directory", S_IFDIR, err) < 0)
        {
          close (fd);
          errno = EACCES;
          return -1;
        }
    }
  return fd;
}

static bool
key_of_this_boot (const char *key)
{
  char now[64] = "";
  size_t n;
  if (this_boot (now, sizeof (now)) < 0)
    return true; /* cannot tell: take it for this boot's */
  n = strcspn (now, "\n");
  return strncmp (key, now, n) == 0 && key[n] == '_';
}

static struct lease_holder *
loaded_with_key (const struct lease_store *s, const char *key)
{
  char k[KEY_MAX];
  for (size_t i = 0; i < s->n; i++)
    {
      lease_holder_key (&s->h[i]->ns, k, sizeof (k));
      if (strcmp (k, key) == 0)
        return s->h[i];
    }
  return NULL;
}

static bool
gone_with_key (const struct lease_store *s, const char *key)
{
  char k[KEY_MAX];
  for (size_t i = 0; i < s->n_gone; i++)
    {
      lease_holder_key (&s->gone[i]->ns, k, sizeof (k));
      if (strcmp (k, key) == 0)
        return true;
    }
  return false;
}

static int
holder_unreadable (const struct lease_store *s, const char *key, const char *why, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("lease store `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
  cleanup_free char *fix = xasprintf ("inspect it; when its network namespace is gone (roce-hook "
                                      "leases), move it aside (mv %s/%s/%s %s/%s.bad)",
                                      s->dir, LEASE_HOLDERS, key, s->dir, key);
  return roce_error_refuse (err, what, "a holder this version reads", why, fix);
}

/* Reads holders/<key> into the store (*out; NULL when there is none).  A
 * file of an earlier boot that cannot be read held nothing alive: it is
 * passed over (`gc` removes it).  */
static int
load_key (struct lease_store *s, int hfd, const char *key, struct lease_holder **out, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t perr = NULL;
  cleanup_json struct json *root = NULL;
  struct lease_holder *h;
  char k[KEY_MAX];
  int fd;

  *out = loaded_with_key (s, key);
  if (*out || gone_with_key (s, key))
    return 0;
  fd = openat (hfd, key, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
  if (read_all_fd (fd, HOLDER_FILE_MAX, &buf, NULL, &perr) < 0)
    {
      close (fd);
      return holder_unreadable (s, key, perr->msg, err);
    }
  close (fd);
  h = xmalloc0 (sizeof (*h));
  if (json_parse (buf, &root, &perr) < 0 || lease_holder_parse (root, key, h, &perr) < 0)
    {
      lease_holder_free (h);
      if (! key_of_this_boot (key))
        {
          roce_log (ROCE_LOG_WARN, "lease store `%s/%s/%s` of an earlier boot is unreadable (%s): "
                    "passed over", s->dir, LEASE_HOLDERS, key, perr->msg);
          return 0;
        }
      return holder_unreadable (s, key, perr->msg, err);
    }
  lease_holder_key (&h->ns, k, sizeof (k));
  if (strcmp (k, key) != 0)
    {
      lease_holder_free (h);
      return holder_unreadable (s, key, "a holder of another namespace", err);
    }
  h->stored = steal_pointer (&buf);
  s->h = xrealloc (s->h, (s->n + 1) * sizeof (*s->h));
  s->h[s->n++] = h;
  *out = h;
  return 0;
}

static int
load_one (struct lease_store *s, const char *key, struct lease_holder **out, roce_error_t *err)
{
  cleanup_close int hfd = -1;
  *out = NULL;
  if (s->all)
    {
      *out = loaded_with_key (s, key);
      return 0;
    }
  hfd = subdir (s, LEASE_HOLDERS, false, err);
  if (hfd < 0)
    return errno == ENOENT ? 0 : -1;
  return load_key (s, hfd, key, out, err);
}

int
lease_store_load_all (struct lease_store *s, roce_error_t *err)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  int hfd;

  if (s->all || s->dir_fd < 0)
    {
      s->all = true;
      return 0;
    }
  hfd = subdir (s, LEASE_HOLDERS, false, err);
  if (hfd < 0 && errno == ENOENT)
    {
      s->all = true;
      return 0;
    }
  if (hfd < 0 || (d = fdopendir (hfd)) == NULL)
    {
      if (hfd >= 0)
        close (hfd);
      return hfd < 0 ? -1 : roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_HOLDERS);
    }
  while ((e = readdir (d)) != NULL)
    {
      struct lease_holder *h;
      if (e->d_name[0] == '.')
        continue; /* ".", "..", a file being written */
      if (load_key (s, dirfd (d), e->d_name, &h, err) < 0)
        return -1;
    }
  s->all = true;
  return 0;
}

int
lease_load_netns (struct lease_store *s, const struct netns_id *id, roce_error_t *err)
{
  struct lease_holder *h;
  char key[KEY_MAX];
  lease_holder_key (id, key, sizeof (key));
  return load_one (s, key, &h, err);
}

/* The key of the holder an index entry names, or "" when it has none.  An
 * entry is a hard link to a version of its holder's file (linking costs no
 * new inode, unlike a symlink): whichever version, its namespace is the
 * holder's.  */
static int
entry_read (int fd, const char *name, char *key, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_error roce_error_t perr = NULL;
  struct lease_holder *h;
  int efd = fd < 0 ? -1 : openat (fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

  key[0] = '\0';
  if (efd < 0 && (fd < 0 || errno == ENOENT))
    return 0;
  if (efd < 0)
    return roce_error_sys (err, errno, "lease store entry `%s`", name);
  if (read_all_fd (efd, HOLDER_FILE_MAX, &buf, NULL, &perr) < 0)
    {
      close (efd);
      return 0; /* names no holder */
    }
  close (efd);
  h = xmalloc0 (sizeof (*h));
  if (json_parse (buf, &root, &perr) == 0 && lease_holder_parse (root, name, h, &perr) == 0)
    lease_holder_key (&h->ns, key, KEY_MAX);
  lease_holder_free (h);
  return 0;
}

int
lease_load_container (struct lease_store *s, const char *container, roce_error_t *err)
{
  cleanup_close int cfd = -1;
  struct lease_holder *h;
  char key[KEY_MAX];

  if (s->all)
    return 0;
  for (size_t i = 0; i < s->n; i++)
    if (lease_holder_has (s->h[i], container))
      return 0;
  if (! lease_container_indexable (container))
    return lease_store_load_all (s, err);
  cfd = subdir (s, LEASE_CONTAINERS, false, err);
  if (cfd < 0 && errno != ENOENT)
    return -1;
  if (entry_read (cfd, container, key, err) < 0)
    return -1;
  return key[0] ? load_one (s, key, &h, err) : 0;
}

static void
bits_name (uint32_t hi, char *buf, size_t size)
{
  snprintf (buf, size, "%u.%u", (unsigned) (hi >> 8), (unsigned) (hi & 0xff));
}

static void
bits_header (uint32_t hi, uint8_t *hdr)
{
  memset (hdr, 0, BITS_HDR);
  memcpy (hdr, BITS_MAGIC, 8);
  hdr[8] = (uint8_t) (hi >> 8);
  hdr[9] = (uint8_t) hi;
}

/* Writes b whole: beside, then renamed over (a file made again).  */
static int
bits_write (struct lease_store *s, struct lease_bits *b, roce_error_t *err)
{
  cleanup_close int ufd = subdir (s, LEASE_USED, true, err);
  cleanup_free char *tmp = NULL;
  uint8_t hdr[BITS_HDR];
  char name[16];
  int fd;

  if (ufd < 0)
    return -1;
  bits_name (b->hi, name, sizeof (name));
  tmp = xasprintf (".%s.new", name);
  bits_header (b->hi, hdr);
  fd = openat (ufd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || write_all_fd (fd, hdr, sizeof (hdr), NULL) < 0 || write_all_fd (fd, b->map, BITS_MAP, NULL) < 0
      || renameat (ufd, tmp, ufd, name) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      return roce_error_sys (err, e ? e : EIO, "write `%s/%s/%s`", s->dir, LEASE_USED, name);
    }
  cleanup_closep (&b->fd);
  b->fd = fd;
  return 0;
}

/* Reads used/<hi>, or makes it again from addrs/ when it is missing or is
 * not one (a store of an earlier version, a file torn by a power loss).  */
static struct lease_bits *
bits_load (struct lease_store *s, uint32_t hi, roce_error_t *err)
{
  struct lease_bits *b;
  uint8_t hdr[BITS_HDR], want[BITS_HDR];
  char name[16];
  int fd = -1, ufd;
  bool ok = false;

  for (size_t i = 0; i < s->n_bits; i++)
    if (s->bits[i].hi == hi)
      return &s->bits[i];
  s->bits = xrealloc (s->bits, (s->n_bits + 1) * sizeof (*s->bits));
  b = &s->bits[s->n_bits];
  memset (b, 0, sizeof (*b));
  b->hi = hi;
  b->fd = -1;
  bits_name (hi, name, sizeof (name));
  bits_header (hi, want);
  ufd = subdir (s, LEASE_USED, false, err);
  if (ufd < 0 && errno != ENOENT)
    return NULL;
  if (ufd >= 0)
    {
      fd = openat (ufd, name, (s->lock_fd >= 0 ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
      close (ufd);
    }
  if (fd >= 0)
    ok = pread (fd, hdr, sizeof (hdr), 0) == (ssize_t) sizeof (hdr) && memcmp (hdr, want, sizeof (hdr)) == 0
         && pread (fd, b->map, BITS_MAP, BITS_HDR) == BITS_MAP;
  if (ok)
    {
      b->fd = fd;
      s->n_bits++;
      return b;
    }
  if (fd >= 0)
    close (fd);
  memset (b->map, 0, BITS_MAP);
  {
    /* Made again from the index: every address some entry names (a superset
     * of what the holders have, never less).  */
    cleanup_dir DIR *d = NULL;
    struct dirent *e;
    int afd = subdir (s, LEASE_ADDRS, false, err);
    if (afd < 0 && errno != ENOENT)
      return NULL;
    if (afd >= 0 && (d = fdopendir (afd)) == NULL)
      {
        close (afd);
        roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_ADDRS);
        return NULL;
      }
    while (d && (e = readdir (d)) != NULL)
      {
        uint32_t a;
        if (e->d_name[0] != '.' && ipv4_parse (e->d_name, &a) == 0 && (a >> 16) == hi)
          b->map[(a & 0xffff) >> 3] |= (uint8_t) (1u << (a & 7));
      }
  }
  s->n_bits++;
  if (s->lock_fd >= 0 && bits_write (s, &s->bits[s->n_bits - 1], err) < 0)
    {
      s->n_bits--;
      return NULL;
    }
  return &s->bits[s->n_bits - 1];
}

int
lease_store_index (struct lease_store *s, uint32_t first, uint32_t last, roce_error_t *err)
{
  if (s->all || first > last)
    return 0;
  for (uint32_t hi = first >> 16;; hi++)
    {
      if (bits_load (s, hi, err) == NULL)
        return -1;
      if (hi == last >> 16)
        return 0;
    }
}

/* Sets or clears the address's bit, in the file at once (one byte).  */
static int
bits_mark (struct lease_store *s, uint32_t addr, bool used, roce_error_t *err)
{
  struct lease_bits *b = bits_load (s, addr >> 16, err);
  uint32_t lo = addr & 0xffff;
  uint8_t old;

  if (b == NULL)
    return -1;
  old = b->map[lo >> 3];
  if (used)
    b->map[lo >> 3] |= (uint8_t) (1u << (lo & 7));
  else
    b->map[lo >> 3] &= (uint8_t) ~(1u << (lo & 7));
  if (b->map[lo >> 3] == old)
    return 0;
  if (b->fd < 0)
    return bits_write (s, b, err);
  if (pwrite (b->fd, &b->map[lo >> 3], 1, BITS_HDR + (off_t) (lo >> 3)) != 1)
    return roce_error_sys (err, errno ? errno : EIO, "lease store `%s/%s`", s->dir, LEASE_USED);
  return 0;
}

int
lease_find_addr (struct lease_store *s, uint32_t addr, struct lease_holder **out,
                 const struct lease_addr **addr_out, roce_error_t *err)
{
  cleanup_close int afd = -1;
  struct lease_holder *h;
  char name[IPV4_STR_MAX], key[KEY_MAX];

  *out = lease_loaded_with_addr (s, addr, addr_out);
  if (*out || s->all || lease_gone_with_addr (s, addr))
    return 0;
  afd = subdir (s, LEASE_ADDRS, false, err);
  if (afd < 0 && errno != ENOENT)
    return -1;
  if (entry_read (afd, ipv4_format (addr, name), key, err) < 0)
    return -1;
  if (key[0] == '\0')
    return 0;
  if (load_one (s, key, &h, err) < 0)
    return -1;
  /* An entry whose holder does not list the address is one a killed hook
   * left: the address is free.  */
  if (h && lease_holder_lists (h, addr, addr_out))
    *out = h;
  return 0;
}

/* ---- writing ------------------------------------------------------------------------- */

/* Writes name in dirfd: beside (".name.new"), then renamed over.  */
static int
write_beside (int dirfd, const char *dir, const char *name, const char *text, roce_error_t *err)
{
  cleanup_free char *tmp = xasprintf (".%s.new", name);
  cleanup_close int fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return roce_error_sys (err, errno, "write `%s/%s`", dir, tmp);
  if (write_all_fd (fd, text, strlen (text), err) < 0)
    return roce_error_wrap (err, "write `%s/%s`", dir, tmp);
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    return roce_error_sys (err, errno, "rename `%s/%s`", dir, tmp);
  return 0;
}

/* Points the index entry name at key: a hard link to hfd/src (the holder's
 * file being written), renamed over an entry of another holder.  */
static int
entry_point (int fd, const char *dir, const char *name, const char *key, int hfd, const char *src,
             roce_error_t *err)
{
  char was[KEY_MAX];
  cleanup_free char *tmp = NULL;

  if (entry_read (fd, name, was, err) < 0)
    return -1;
  if (strcmp (was, key) == 0)
    return 0;
  if (linkat (hfd, src, fd, name, 0) == 0)
    return 0;
  if (errno != EEXIST)
    return roce_error_sys (err, errno, "lease store entry `%s/%s`", dir, name);
  tmp = xasprintf (".%s.new", name);
  unlinkat (fd, tmp, 0);
  if (linkat (hfd, src, fd, tmp, 0) < 0 || renameat (fd, tmp, fd, name) < 0)
    return roce_error_sys (err, errno, "lease store entry `%s/%s`", dir, name);
  return 0;
}

/* Removes the entry name when it still names key.  */
static void
entry_drop (int fd, const char *name, const char *key)
{
  char was[KEY_MAX];
  if (entry_read (fd, name, was, NULL) == 0 && strcmp (was, key) == 0)
    unlinkat (fd, name, 0);
}

struct store_fds
{
  int h, a, c;
};

/* The entries of a holder as its file had it and no longer has.  */
static void
drop_old_entries (struct lease_store *s, const struct store_fds *f, const char *stored,
                  const struct lease_holder *now, const char *key)
{
  cleanup_json struct json *root = NULL;
  struct lease_holder *old = xmalloc0 (sizeof (*old));
  char a[IPV4_STR_MAX];

  if (json_parse (stored, &root, NULL) == 0 && lease_holder_parse (root, key, old, NULL) == 0)
    {
      for (size_t k = 0; k < old->n_addrs; k++)
        if (now == NULL || ! lease_holder_lists (now, old->addrs[k].addr, NULL))
          {
            cleanup_error roce_error_t berr = NULL;
            entry_drop (f->a, ipv4_format (old->addrs[k].addr, a), key);
            /* Taken over in this commit by another holder: still used.  */
            if (lease_loaded_with_addr (s, old->addrs[k].addr, NULL) == NULL
                && bits_mark (s, old->addrs[k].addr, false, &berr) < 0)
              roce_log (ROCE_LOG_WARN, "%s (gc makes it again)", berr->msg);
          }
      for (char **c = old->containers; c && *c; c++)
        if (lease_container_indexable (*c) && (now == NULL || ! lease_holder_has (now, *c)))
          entry_drop (f->c, *c, key);
    }
  lease_holder_free (old);
}

/* With every holder loaded: the entries no holder lists, and files left
 * half-written, are what killed hooks left.  */
static void
repair_bits (struct lease_store *s)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  uint32_t *his = NULL;
  size_t n = 0;
  int ufd = subdir (s, LEASE_USED, false, NULL);

  /* Every /16 a file or a holder has.  */
  if (ufd >= 0 && (d = fdopendir (ufd)) == NULL)
    close (ufd);
  while (d && (e = readdir (d)) != NULL)
    {
      unsigned x, y;
      char end;
      if (sscanf (e->d_name, "%3u.%3u%c", &x, &y, &end) == 2 && x < 256 && y < 256)
        {
          his = xrealloc (his, (n + 1) * sizeof (*his));
          his[n++] = (x << 8) | y;
        }
      else if (e->d_name[0] == '.' && strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      {
        his = xrealloc (his, (n + 1) * sizeof (*his));
        his[n++] = s->h[i]->addrs[k].addr >> 16;
      }
  for (size_t i = 0; i < n; i++)
    {
      struct lease_bits b = { .hi = his[i], .fd = -1 };
      cleanup_error roce_error_t err = NULL;
      bool seen = false;
      for (size_t k = 0; k < i; k++)
        seen = seen || his[k] == his[i];
      if (seen)
        continue;
      for (size_t h = 0; h < s->n; h++)
        for (size_t k = 0; k < s->h[h]->n_addrs; k++)
          {
            uint32_t a = s->h[h]->addrs[k].addr;
            if ((a >> 16) == b.hi)
              b.map[(a & 0xffff) >> 3] |= (uint8_t) (1u << (a & 7));
          }
      if (bits_write (s, &b, &err) < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
      cleanup_closep (&b.fd);
    }
  free (his);
}

static void
repair (struct lease_store *s, const struct store_fds *f)
{
  const int fds[] = { f->a, f->c, f->h };
  for (size_t i = 0; i < ARRAY_SIZE (fds); i++)
    {
      cleanup_dir DIR *d = NULL;
      struct dirent *e;
      int fd = fcntl (fds[i], F_DUPFD_CLOEXEC, 0);
      if (fd < 0 || (d = fdopendir (fd)) == NULL)
        {
          if (fd >= 0)
            close (fd);
          continue;
        }
      while ((e = readdir (d)) != NULL)
        {
          char key[KEY_MAX];
          struct lease_holder *h;
          uint32_t addr;
          bool keep;
          if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
            continue;
          if (fds[i] == f->h)
            {
              /* Half-written files; files of an earlier boot passed over.  */
              keep = e->d_name[0] != '.' && loaded_with_key (s, e->d_name) != NULL;
              if (! keep)
                unlinkat (fd, e->d_name, 0);
              continue;
            }
          if (entry_read (fd, e->d_name, key, NULL) < 0)
            continue;
          h = e->d_name[0] == '.' ? NULL : loaded_with_key (s, key);
          if (fds[i] == f->a)
            keep = h && ipv4_parse (e->d_name, &addr) == 0 && lease_holder_lists (h, addr, NULL);
          else
            keep = h && lease_holder_has (h, e->d_name);
          if (! keep)
            unlinkat (fd, e->d_name, 0);
        }
    }
}

static int
commit_blocks (struct lease_store *s, roce_error_t *err)
{
  cleanup_free char *text = lease_blocks_format (s);

  if ((text == NULL && s->blocks_stored == NULL)
      || (text && s->blocks_stored && strcmp (text, s->blocks_stored) == 0))
    return 0;
  if (text)
    {
      if (write_beside (s->dir_fd, s->dir, LEASE_BLOCKS, text, err) < 0)
        return -1;
    }
  else if (unlinkat (s->dir_fd, LEASE_BLOCKS, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/%s`", s->dir, LEASE_BLOCKS);
  free (s->blocks_stored);
  s->blocks_stored = steal_pointer (&text);
  return 0;
}

static void
close_fds (struct store_fds *f)
{
  cleanup_closep (&f->h);
  cleanup_closep (&f->a);
  cleanup_closep (&f->c);
}

int
lease_store_commit (struct lease_store *s, roce_error_t *err)
{
  struct store_fds f __attribute__ ((cleanup (close_fds))) = { -1, -1, -1 };
  cleanup_free char **texts = NULL;
  char key[KEY_MAX], a[IPV4_STR_MAX];
  int ret = -1;

  if (s->lock_fd < 0)
    return roce_error_make (err, EINVAL, "internal error: commit of an unlocked lease store");
  if (commit_blocks (s, err) < 0)
    return -1;
  if ((f.h = subdir (s, LEASE_HOLDERS, true, err)) < 0 || (f.a = subdir (s, LEASE_ADDRS, true, err)) < 0
      || (f.c = subdir (s, LEASE_CONTAINERS, true, err)) < 0)
    return -1;
  /* What changed: the holders whose text differs from their file's.  */
  texts = xmalloc0 ((s->n + 1) * sizeof (*texts));
  for (size_t i = 0; i < s->n; i++)
    {
      texts[i] = lease_holder_format (s->h[i]);
      if (s->h[i]->stored && strcmp (texts[i], s->h[i]->stored) == 0)
        {
          free (texts[i]);
          texts[i] = NULL;
        }
    }
  /* Written beside first; nothing of it is in place yet.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        cleanup_free char *tmp = NULL;
        cleanup_close int fd = -1;
        lease_holder_key (&s->h[i]->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        fd = openat (f.h, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write_all_fd (fd, texts[i], strlen (texts[i]), NULL) < 0)
          {
            roce_error_sys (err, errno ? errno : EIO, "write `%s/%s/%s`", s->dir, LEASE_HOLDERS, tmp);
            goto out;
          }
      }
  roce_crash_point ("store-write");
  /* The index entries before the holders that list them.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        const struct lease_holder *h = s->h[i];
        cleanup_free char *tmp = NULL;
        lease_holder_key (&h->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        for (size_t k = 0; k < h->n_addrs; k++)
          if (entry_point (f.a, LEASE_ADDRS, ipv4_format (h->addrs[k].addr, a), key, f.h, tmp, err) < 0)
            goto out;
        for (char **c = h->containers; c && *c; c++)
          if (lease_container_indexable (*c) && entry_point (f.c, LEASE_CONTAINERS, *c, key, f.h, tmp, err) < 0)
            goto out;
        for (size_t k = 0; k < h->n_addrs; k++)
          if (bits_mark (s, h->addrs[k].addr, true, err) < 0)
            goto out;
      }
  roce_crash_point ("store-index");
  /* Not fsynced (it cost 0.7-2.2 ms on every start and stop here): only a
   * power loss can tear a file, and after one no namespace of the store is
   * alive; the holders are named by boot, and a start never reads one of
   * an earlier boot but to take over its address.  The blocks a cluster
   * node holds are adopted back from etcd.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        cleanup_free char *tmp = NULL;
        lease_holder_key (&s->h[i]->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        if (renameat (f.h, tmp, f.h, key) < 0)
          {
            roce_error_sys (err, errno, "rename `%s/%s/%s`", s->dir, LEASE_HOLDERS, tmp);
            goto out;
          }
      }
  /* Then what went: the holders' files, and the entries after them.  */
  for (size_t i = 0; i < s->n_gone; i++)
    {
      lease_holder_key (&s->gone[i]->ns, key, sizeof (key));
      if (loaded_with_key (s, key) == NULL && unlinkat (f.h, key, 0) < 0 && errno != ENOENT)
        {
          roce_error_sys (err, errno, "remove `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
          goto out;
        }
      drop_old_entries (s, &f, s->gone[i]->stored, loaded_with_key (s, key), key);
    }
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        if (s->h[i]->stored)
          {
            lease_holder_key (&s->h[i]->ns, key, sizeof (key));
            drop_old_entries (s, &f, s->h[i]->stored, s->h[i], key);
          }
        free (s->h[i]->stored);
        s->h[i]->stored = steal_pointer (&texts[i]);
      }
  for (size_t i = 0; i < s->n_gone; i++)
    lease_holder_free (s->gone[i]);
  s->n_gone = 0;
  if (s->all)
    {
      repair (s, &f);
      repair_bits (s);
    }
  ret = 0;
out:
  for (size_t i = 0; i < s->n; i++)
    free (texts[i]);
  return ret;
}

/* ---- opening ------------------------------------------------------------------------- */

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
      cleanup_free char *fix = xasprintf ("inspect it; the blocks are etcd's to say: move it aside "
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
  roce_log (ROCE_LOG_INFO, "lease store `%s`: %zu holder(s) moved from %s", s->dir, s->n, LEASE_FILE);
  return 0;
}

int
lease_store_open (const char *dir, struct lease_store **out, roce_error_t *err)
{
  return lease_store_open_wait (dir, LEASE_LOCK_WAIT_MS, out, err);
}

int
lease_store_open_wait (const char *dir, unsigned timeout_ms, struct lease_store **out,
                       roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = store_new (dir);

  /* Made on first use only: every start opens it.  */
  s->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
  s->lock_fd = openat (s->dir_fd, LEASE_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
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
  if (migrate (s, err) < 0)
    return -1;
  if (s->blocks_stored == NULL && s->n_blocks == 0 && load_blocks (s, err) < 0)
    return -1;
  *out = steal_pointer (&s);
  return 0;
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
  if (s->lock_fd >= 0)
    {
      double ms = (double) (mono_ns () - s->locked_ns) / 1e6;
      cleanup_closep (&s->lock_fd); /* releases the flock */
      if (ms > LEASE_HOLD_WARN_MS)
        roce_log (ROCE_LOG_WARN, "lease store `%s`: lock held %.3f ms (more than %d)", s->dir, ms,
                  LEASE_HOLD_WARN_MS);
      else
        roce_log_file ("lease store `%s`: lock held %.3f ms", s->dir, ms);
    }
  cleanup_closep (&s->dir_fd);
  free (s->dir);
  free (s);
}

void
cleanup_lease_storep (struct lease_store **s)
{
  lease_store_free (*s);
  *s = NULL;
}

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
lease_reap_mark (struct lease_store *s, const struct netns_id *ns, const char *container,
                 roce_error_t *err)
{
  cleanup_close int dfd = subdir (s, LEASE_REAPING, true, err);
  char key[MARK_MAX];
  int fd;

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
        return -2;
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
  return fd;
}

void
lease_reap_unmark (struct lease_store *s, const struct netns_id *ns, int fd)
{
  cleanup_close int dfd = subdir (s, LEASE_REAPING, false, NULL);
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
  cleanup_close int dfd = s->dir_fd < 0 ? -1 : subdir (s, LEASE_REAPING, false, NULL);
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

void
lease_reap_sweep (struct lease_store *s)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  int dfd = subdir (s, LEASE_REAPING, false, NULL);

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
