/* SPDX-License-Identifier: Apache-2.0 */
/* Small shared pieces: checked allocation and strings, escaping of untrusted
 * bytes, whole reads and writes of fds, atomic file replacement.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/utils.h"

void
cleanup_freep (void *p)
{
  void **pp = p;
  free (*pp);
  *pp = NULL;
}

void
cleanup_closep (int *fd)
{
  if (*fd >= 0)
    {
      int saved = errno;
      close (*fd);
      errno = saved;
    }
  *fd = -1;
}

void
cleanup_filep (FILE **f)
{
  if (*f)
    fclose (*f);
  *f = NULL;
}

void
cleanup_dirp (DIR **d)
{
  if (*d)
    closedir (*d);
  *d = NULL;
}

void
cleanup_strvp (char ***v)
{
  strv_free (*v);
  *v = NULL;
}

void *
xmalloc0 (size_t size)
{
  void *p = calloc (1, size ? size : 1);
  if (p == NULL)
    abort ();
  return p;
}

void *
xrealloc (void *p, size_t size)
{
  void *r = realloc (p, size ? size : 1);
  if (r == NULL)
    abort ();
  return r;
}

char *
xstrdup (const char *s)
{
  char *r = strdup (s ? s : "");
  if (r == NULL)
    abort ();
  return r;
}

char *
xstrndup (const char *s, size_t n)
{
  char *r = strndup (s, n);
  if (r == NULL)
    abort ();
  return r;
}

char *
xasprintf (const char *fmt, ...)
{
  va_list ap;
  char *r = NULL;

  va_start (ap, fmt);
  if (vasprintf (&r, fmt, ap) < 0)
    abort ();
  va_end (ap);
  return r;
}

char *
xvasprintf (const char *fmt, va_list ap)
{
  char *r = NULL;
  if (vasprintf (&r, fmt, ap) < 0)
    abort ();
  return r;
}

void
str_list_add (char **acc, const char *sep, const char *fmt, ...)
{
  cleanup_free char *item = NULL;
  char *n;
  va_list ap;

  va_start (ap, fmt);
  item = xvasprintf (fmt, ap);
  va_end (ap);
  n = xasprintf ("%s%s%s", *acc, **acc ? sep : "", item);
  free (*acc);
  *acc = n;
}

char *
strv_join (char *const *v, const char *sep)
{
  size_t len = 1, seplen = strlen (sep);
  char *out, *o;
  for (size_t i = 0; v && v[i]; i++)
    len += strlen (v[i]) + (i ? seplen : 0);
  o = out = xmalloc0 (len);
  for (size_t i = 0; v && v[i]; i++)
    {
      if (i)
        o = stpcpy (o, sep);
      o = stpcpy (o, v[i]);
    }
  return out;
}

int
check_snprintf (char *buf, size_t size, roce_error_t *err, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start (ap, fmt);
  n = vsnprintf (buf, size, fmt, ap);
  va_end (ap);
  if (n < 0 || (size_t) n >= size)
    return roce_error_make (err, E2BIG, "internal error: string too long (%zu bytes max)", size);
  return n;
}

void
strv_free (char **v)
{
  if (v == NULL)
    return;
  for (char **p = v; *p; p++)
    free (*p);
  free (v);
}

size_t
strv_len (char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

void
strv_push (char ***v, const char *s)
{
  size_t n = strv_len (*v);
  *v = xrealloc (*v, (n + 2) * sizeof (char *));
  (*v)[n] = xstrdup (s);
  (*v)[n + 1] = NULL;
}

int
read_all_fd (int fd, size_t max, char **out, size_t *len, roce_error_t *err)
{
  size_t cap = 4096, used = 0;
  cleanup_free char *buf = xmalloc0 (cap + 1);

  for (;;)
    {
      ssize_t r;
      if (used == cap)
        {
          if (cap > max)
            return roce_error_make (err, E2BIG, "input larger than %zu bytes", max);
          cap *= 2;
          buf = xrealloc (buf, cap + 1);
        }
      r = read (fd, buf + used, cap - used);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return roce_error_sys (err, errno, "read");
      if (r == 0)
        break;
      used += (size_t) r;
      if (used > max)
        return roce_error_make (err, E2BIG, "input larger than %zu bytes", max);
    }
  buf[used] = '\0';
  if (len)
    *len = used;
  *out = steal_pointer (&buf);
  return 0;
}

int
read_file_at (int dirfd, const char *path, size_t max, char **out, size_t *len, roce_error_t *err)
{
  cleanup_close int fd = openat (dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  int ret;

  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s`", path);
  ret = read_all_fd (fd, max, out, len, err);
  if (ret < 0)
    return roce_error_wrap (err, "`%s`", path);
  return 0;
}

int
read_line_at (int dirfd, const char *path, char **out, roce_error_t *err)
{
  size_t len = 0;
  char *buf = NULL;
  int ret = read_file_at (dirfd, path, 65536, &buf, &len, err);
  if (ret < 0)
    return ret;
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
    buf[--len] = '\0';
  *out = buf;
  return 0;
}

int
write_all_fd (int fd, const void *buf, size_t len, roce_error_t *err)
{
  const char *p = buf;
  while (len > 0)
    {
      ssize_t w = write (fd, p, len);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return roce_error_sys (err, errno, "write");
      p += w;
      len -= (size_t) w;
    }
  return 0;
}

int
parse_u64 (const char *s, uint64_t *out)
{
  uint64_t v = 0;
  if (s == NULL || *s == '\0')
    return -1;
  for (const char *p = s; *p; p++)
    {
      if (*p < '0' || *p > '9')
        return -1;
      if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
        return -1;
      v = v * 10 + (uint64_t) (*p - '0');
    }
  *out = v;
  return 0;
}

bool
str_is_printable (const char *s)
{
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    if (*p < 0x20 || *p > 0x7e)
      return false;
  return true;
}

bool
str_is_name (const char *s, size_t max)
{
  size_t len = strlen (s);
  if (len == 0 || len > max)
    return false;
  for (const char *p = s; *p; p++)
    if (! ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
           || *p == '_' || *p == '-' || *p == '.'))
      return false;
  return true;
}

#ifdef ROCE_TEST_HOOKS
void
roce_crash_point (const char *where)
{
  const char *at = getenv ("ROCE_TEST_CRASH");
  if (at && strcmp (at, where) == 0)
    kill (getpid (), SIGKILL);
}

void
roce_pause_point (const char *where)
{
  const char *at = getenv ("ROCE_TEST_PAUSE"), *dir = getenv ("ROCE_TEST_PAUSE_DIR");
  size_t n = strlen (where);
  const char *p = at;

  /* ROCE_TEST_PAUSE names one point or several, comma-separated.  */
  while (p && ! (strncmp (p, where, n) == 0 && (p[n] == ',' || p[n] == '\0')))
    p = (p = strchr (p, ',')) ? p + 1 : NULL;
  if (p == NULL || dir == NULL)
    return;
  {
    cleanup_free char *reached = xasprintf ("%s/%s.reached", dir, where);
    cleanup_free char *go = xasprintf ("%s/%s.go", dir, where);
    int fd = open (reached, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
      close (fd);
    for (int i = 0; i < 3000 && access (go, F_OK) != 0; i++)
      usleep (10000);
  }
}
#endif

int
mkdir_p (const char *path, const char *what, roce_error_t *err)
{
  cleanup_free char *p = xstrdup (path);
  for (char *q = p + 1;; q++)
    {
      char c = *q;
      if (c != '/' && c != '\0')
        continue;
      *q = '\0';
      if (mkdir (p, 0755) < 0 && errno != EEXIST)
        return roce_error_sys (err, errno, "create %s `%s`", what, p);
      *q = c;
      if (c == '\0')
        return 0;
    }
}

int
check_trusted (int fd, const char *path, const char *what, roce_error_t *err)
{
  struct stat st;
  uid_t me = geteuid ();
  bool dir;

  if (fstat (fd, &st) < 0)
    return roce_error_sys (err, errno, "%s `%s`", what, path);
  dir = S_ISDIR (st.st_mode);
  /* A sticky directory (/tmp) lets nobody but a file's owner replace it.  */
  if ((st.st_uid == 0 || st.st_uid == me)
      && ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (dir && (st.st_mode & S_ISVTX))))
    return 0;
  {
    cleanup_free char *w = xasprintf ("%s `%s`", what, path);
    cleanup_free char *found = xasprintf ("owner uid %u, mode %04o", (unsigned) st.st_uid,
                                          (unsigned) (st.st_mode & 07777));
    cleanup_free char *fix = xasprintf ("chown root `%s` && chmod go-w `%s`", path, path);
    return roce_error_refuse (err, w, "owned by root and writable by its owner only", found, fix);
  }
}

/* struct statx as the kernel lays it out (include/uapi/linux/stat.h), the
 * part read here: the shim's front is built against a libc and headers
 * without it.  */
struct ident_statx
{
  uint32_t mask, blksize;
  uint64_t attributes;
  uint32_t nlink, uid, gid;
  uint16_t mode, pad0;
  uint64_t ino, size, blocks, attributes_mask;
  struct
  {
    int64_t tv_sec;
    uint32_t tv_nsec;
    int32_t pad;
  } atime, btime, ctime, mtime;
  uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
  uint64_t spare[14];
};
_Static_assert(sizeof (struct ident_statx) == 256, "struct statx is 256 bytes");
#define IDENT_STATX_INO 0x100U
#define IDENT_STATX_BTIME 0x800U
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

/* dirfd/name (AT_EMPTY_PATH: dirfd itself) as a file_ident; < 0 errno.  */
static int
ident_at (int dirfd, const char *name, int flags, struct file_ident *out)
{
  struct ident_statx sx;

  memset (out, 0, sizeof (*out));
  memset (&sx, 0, sizeof (sx));
  if (syscall (SYS_statx, dirfd, name, flags | AT_SYMLINK_NOFOLLOW,
               IDENT_STATX_INO | IDENT_STATX_BTIME, &sx)
      < 0)
    return -errno;
  out->dev = ((uint64_t) sx.dev_major << 32) | sx.dev_minor;
  out->ino = sx.ino;
  if (sx.mask & IDENT_STATX_BTIME)
    {
      out->btime_sec = sx.btime.tv_sec;
      out->btime_nsec = sx.btime.tv_nsec;
    }
  return 0;
}

static bool
ident_same (const struct file_ident *a, const struct file_ident *b)
{
  return a->dev == b->dev && a->ino == b->ino && a->btime_sec == b->btime_sec
         && a->btime_nsec == b->btime_nsec;
}

void
file_ident_of (int fd, struct file_ident *out)
{
  if (fd < 0 || ident_at (fd, "", AT_EMPTY_PATH, out) < 0)
    memset (out, 0, sizeof (*out));
}

int
unlink_if_same (int dirfd, const char *name, const struct file_ident *id, roce_error_t *err)
{
  cleanup_free char *aside = NULL;
  struct file_ident now;
  int r;

  if (id == NULL || (id->dev == 0 && id->ino == 0))
    return 0;
  /* Cheap first look: most often it is ours, or gone.  */
  r = ident_at (dirfd, name, 0, &now);
  if (r < 0)
    return r == -ENOENT ? 0 : roce_error_sys (err, -r, "`%s`", name);
  if (! ident_same (&now, id))
    return 0;
  /* Then for sure: a file of the name made meanwhile is never removed.  */
  aside = xasprintf (".%s.%d.gone", name, (int) getpid ());
  if (renameat (dirfd, name, dirfd, aside) < 0)
    return errno == ENOENT ? 0 : roce_error_sys (err, errno, "`%s`", name);
  if (ident_at (dirfd, aside, 0, &now) == 0 && ident_same (&now, id))
    {
      if (unlinkat (dirfd, aside, 0) < 0)
        return roce_error_sys (err, errno, "remove `%s`", name);
      return 0;
    }
  /* Another's: back under its name, unless a newer one is there already
   * (then the one moved is older than it and of nobody).  */
  if (syscall (SYS_renameat2, dirfd, aside, dirfd, name, 1 /* RENAME_NOREPLACE */) < 0)
    unlinkat (dirfd, aside, 0);
  return 0;
}

int
check_private (int fd, const char *path, const char *what, mode_t type, roce_error_t *err)
{
  struct stat st;

  if (fstat (fd, &st) < 0)
    return roce_error_sys (err, errno, "%s `%s`", what, path);
  /* No sticky bit excuses it: whoever can create names in it can take the
   * store's fixed names (its lock, its marks) first.  */
  if ((st.st_uid == 0 || st.st_uid == geteuid ()) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0
      && (st.st_mode & S_IFMT) == type)
    return 0;
  {
    cleanup_free char *w = xasprintf ("%s `%s`", what, path);
    cleanup_free char *found = xasprintf ("%s owned by uid %u, mode %04o",
                                          S_ISDIR (st.st_mode)   ? "a directory"
                                          : S_ISREG (st.st_mode) ? "a file"
                                                                 : "a special file",
                                          (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
    cleanup_free char *exp = xasprintf ("a %s owned by root, writable by root only",
                                        type == S_IFDIR ? "directory" : "file");
    cleanup_free char *fix = NULL;
    if ((st.st_mode & S_IFMT) != type)
      fix = xasprintf ("remove `%s`; the hook makes it again", path);
    else if (S_ISDIR (st.st_mode) && (st.st_mode & S_ISVTX))
      fix = xasprintf ("point state_dir at a directory of its own, not a shared one like /tmp "
                       "(mkdir -m 0755 /var/lib/roce-hook)");
    else
      fix = xasprintf ("chown root `%s` && chmod go-w `%s`", path, path);
    return roce_error_refuse (err, w, exp, found, fix);
  }
}

char *
str_escape (const char *s)
{
  size_t n = 0;
  char *out, *o;

#define ESCAPED(c) ((c) < 0x20 || (c) > 0x7e || (c) == '\\')
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    n += ESCAPED (*p) ? 4 : 1;
  out = o = xmalloc0 (n + 1);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    {
      if (ESCAPED (*p))
        {
          snprintf (o, 5, "\\x%02x", *p);
          o += 4;
        }
      else
        *o++ = (char) *p;
    }
#undef ESCAPED
  *o = '\0';
  return out;
}

char *
str_quote (const char *s)
{
  size_t len = strlen (s);
  return xasprintf ("'%.*s'%s", len > 64 ? 64 : (int) len, s, len > 64 ? "..." : "");
}

char *
xvasprintf_escaped (const char *fmt, va_list ap)
{
  cleanup_free char *raw = xvasprintf (fmt, ap);
  return str_escape (raw);
}

int
file_replace (const char *path, const char *data, size_t len, roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (path);
  cleanup_free char *copy2 = xstrdup (path);
  const char *dir = dirname (copy);
  cleanup_free char *tmp = xasprintf ("%s/.%s.roce-%d", dir, basename (copy2), (int) getpid ());
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  cleanup_close int fd = open (tmp, flags, 0644);
  cleanup_close int dfd = -1;

  /* Left by a run with our pid that was killed before its rename: no live
   * process owns it.  */
  if (fd < 0 && errno == EEXIST && unlink (tmp) == 0)
    fd = open (tmp, flags, 0644);
  if (fd < 0)
    return roce_error_sys (err, errno, "create `%s`", tmp);
  if (write_all_fd (fd, data, len, err) < 0 || fsync (fd) < 0 || rename (tmp, path) < 0)
    {
      int saved = errno;
      unlink (tmp);
      if (*err)
        return roce_error_wrap (err, "`%s`", tmp);
      return roce_error_sys (err, saved, "write `%s`", path);
    }
  /* The rename itself survives a crash once the directory is synced.  */
  dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0)
    (void) fsync (dfd);
  return 0;
}

void
detach_from_caller (void)
{
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0)
    {
      dup2 (null, STDIN_FILENO);
      dup2 (null, STDOUT_FILENO);
      dup2 (null, STDERR_FILENO);
      if (null > STDERR_FILENO)
        close (null);
    }
  setsid ();
}

void
close_fds_but (int keep)
{
  int max;
#ifdef SYS_close_range
  {
    /* The ranges around `keep` (Linux 5.9); else one close a number.  */
    const int lo = STDERR_FILENO + 1;
    bool ok = keep <= lo || syscall (SYS_close_range, lo, keep - 1, 0) == 0;
    if (ok && syscall (SYS_close_range, keep >= lo ? keep + 1 : lo, ~0U, 0) == 0)
      return;
  }
#endif
  max = (int) sysconf (_SC_OPEN_MAX);
  if (max < 0 || max > 65536)
    max = 65536;
  for (int fd = STDERR_FILENO + 1; fd < max; fd++)
    if (fd != keep)
      close (fd);
}

int
tmpfs_size_parse (const char *s, uint64_t *out)
{
  char *end = NULL;
  unsigned long long v;
  unsigned shift = 0;

  if (s[0] < '0' || s[0] > '9')
    return -1;
  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno != 0)
    return -1;
  switch (*end)
    {
      case '\0':
        break;
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return -1;
    }
  if (*end && end[1] != '\0')
    return -1;
  if (shift && v > (UINT64_MAX >> shift))
    return -1;
  *out = (uint64_t) v << shift;
  return 0;
}

const char *
utc_time_format (int64_t t, char *buf)
{
  /* Days to a civil date in the proleptic Gregorian calendar (H. Hinnant's
   * days_from_civil, inverted), in eras of 400 years.  */
  int64_t days = t / 86400, secs = t % 86400;
  if (secs < 0)
    {
      secs += 86400;
      days--;
    }
  days += 719468;
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  int64_t doe = days - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t day = doy - (153 * mp + 2) / 5 + 1;
  int64_t month = mp < 10 ? mp + 3 : mp - 9;
  int64_t year = yoe + era * 400 + (month <= 2);
  /* The year in full: a time validated only as 0..INT64_MAX (a lease's since) is
   * year 292277026596 at most, not an int.  */
  snprintf (buf, UTC_TIME_MAX, "%04lld-%02u-%02uT%02u:%02u:%02u", (long long) year,
            (unsigned char) month, (unsigned char) day, (unsigned char) (secs / 3600),
            (unsigned char) (secs / 60 % 60), (unsigned char) (secs % 60));
  return buf;
}

char *
self_beside (const char *name)
{
  char self[PATH_MAX];
  ssize_t n = readlink ("/proc/self/exe", self, sizeof (self) - 1);
  if (n < 0)
    return NULL;
  self[n] = '\0';
  return xasprintf ("%s/%s", dirname (self), name);
}

const char *
file_type_name (unsigned mode)
{
  switch (mode & S_IFMT)
    {
      case S_IFREG:
        return "regular file";
      case S_IFDIR:
        return "directory";
      case S_IFLNK:
        return "symlink";
      case S_IFIFO:
        return "fifo";
      case S_IFSOCK:
        return "socket";
      case S_IFCHR:
        return "char device";
      case S_IFBLK:
        return "block device";
    }
  return "file of unknown type";
}

int64_t
mono_ns (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t
mono_ms (void)
{
  return mono_ns () / 1000000;
}

long
ms_until (const struct timespec *end)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (end->tv_sec - now.tv_sec) * 1000L + (end->tv_nsec - now.tv_nsec) / 1000000L;
}
