/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespaces: who one is (nsfs device, inode, cookie), entering one
 * for a moment, and whether one is still held by anything.  */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/mountinfo.h"
#include "sys/netns.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif
#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

int
netns_boot_id (char out[NETNS_BOOT_ID_MAX], roce_error_t *err)
{
  /* Read once: no process outlives its boot (the NRI plugin and gc's
   * reapers ask for it in every request).  */
  static char boot[NETNS_BOOT_ID_MAX];
  cleanup_free char *line = NULL;

  if (boot[0] == '\0')
    {
      if (read_line_at (AT_FDCWD, "/proc/sys/kernel/random/boot_id", &line, err) < 0
          || check_snprintf (boot, sizeof (boot), err, "%s", line) < 0)
        {
          boot[0] = '\0';
          return -1;
        }
    }
  memcpy (out, boot, NETNS_BOOT_ID_MAX);
  return 0;
}

static bool
same_file (const struct stat *a, const struct stat *b)
{
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int
netns_open_nsfs (const char *path, bool nofollow, const struct stat *want, roce_error_t *err)
{
  cleanup_close int pathfd = -1;
  char self[32];
  struct statfs fs;
  struct stat st;
  int fd;

  /* O_PATH opens nothing: a FIFO, a socket or a device put there is not
   * waited on, nor opened at all.  */
  pathfd = open (path, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (pathfd < 0)
    return roce_error_sys (err, errno, "open `%s`", path);
  if (fstat (pathfd, &st) < 0 || fstatfs (pathfd, &fs) < 0)
    return roce_error_sys (err, errno, "stat `%s`", path);
  if (fs.f_type != NSFS_MAGIC || ! S_ISREG (st.st_mode))
    return roce_error_make (err, ENOTTY, "`%s`: a namespace file vs another kind of file", path);
  if (want && ! same_file (want, &st))
    return roce_error_make (err, ESTALE, "`%s`: namespace %llu vs %llu", path,
                            (unsigned long long) want->st_ino, (unsigned long long) st.st_ino);
  /* The nsfs inode itself, opened again through our own fd of it (setns
   * takes no O_PATH fd): it cannot be anything else now.  */
  snprintf (self, sizeof (self), "/proc/self/fd/%d", pathfd);
  fd = open (self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s`", path);
  /* A network namespace, not another kind (a mount or a user one): said
   * here, not by whatever first enters it.  Asked of the namespace itself:
   * a bind mount of it (a runtime's netns file) has its own path.  */
  {
    int type = ioctl (fd, NS_GET_NSTYPE);
    if (type != CLONE_NEWNET)
      {
        int e = type < 0 ? errno : EINVAL;
        close (fd);
        if (type < 0)
          return roce_error_sys (err, e, "`%s`: the kind of its namespace", path);
        return roce_error_make (err, e, "`%s`: a network namespace vs another kind", path);
      }
  }
  return fd;
}

int
ns_link_ino (const char *path, uint64_t *ino, roce_error_t *err)
{
  char link[64], *end;
  ssize_t n = readlink (path, link, sizeof (link) - 1);
  const char *open_;

  if (n < 0)
    return roce_error_sys (err, errno, "`%s`", path);
  link[n] = '\0';
  open_ = strstr (link, ":[");
  if (open_ == NULL || ! isdigit ((unsigned char) open_[2]))
    return roce_error_make (err, EINVAL, "`%s`: not a namespace link", path);
  errno = 0;
  *ino = strtoull (open_ + 2, &end, 10);
  if (errno != 0 || strcmp (end, "]") != 0)
    return roce_error_make (err, EINVAL, "`%s`: not a namespace link", path);
  return 0;
}

int
ns_self_ino (const char *type, uint64_t *ino, roce_error_t *err)
{
  /* The process's own namespaces as first read, before it enters any: the
   * host's, the runtime's.  A /proc/self lookup builds the process's proc
   * dentries afresh (12 us here), and a start asks of net and mnt twice.  */
  static const char *const types[] = { "net", "mnt", "pid", "ipc", "uts" };
  static uint64_t known[ARRAY_SIZE (types)];
  char self[64];

  for (size_t i = 0; i < ARRAY_SIZE (types); i++)
    if (strcmp (types[i], type) == 0)
      {
        if (known[i] == 0)
          {
            snprintf (self, sizeof (self), "/proc/self/ns/%s", type);
            if (ns_link_ino (self, &known[i], err) < 0)
              return -1;
          }
        *ino = known[i];
        return 0;
      }
  snprintf (self, sizeof (self), "/proc/self/ns/%s", type);
  return ns_link_ino (self, ino, err);
}

int
ns_is_self (int nsfd, const char *type, roce_error_t *err)
{
  struct stat a;
  uint64_t b;

  if (fstat (nsfd, &a) < 0)
    return roce_error_sys (err, errno, "stat the container's %s namespace", type);
  if (ns_self_ino (type, &b, err) < 0)
    return -1;
  return (uint64_t) a.st_ino == b ? 1 : 0;
}

int
ns_same_path (const char *a, const char *b, roce_error_t *err)
{
  struct stat sa, sb;
  if (stat (a, &sa) < 0)
    return roce_error_sys (err, errno, "`%s`", a);
  if (stat (b, &sb) < 0)
    return roce_error_sys (err, errno, "`%s`", b);
  return same_file (&sa, &sb) ? 1 : 0;
}

int
netns_enter (int nsfd, int *saved, roce_error_t *err)
{
  cleanup_close int self = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0)
    return roce_error_sys (err, errno, "open `/proc/thread-self/ns/net`");
  if (setns (nsfd, CLONE_NEWNET) < 0)
    return roce_error_sys (err, errno, "enter the network namespace");
  *saved = steal_fd (&self);
  return 0;
}

int
netns_ipv6_off (int nsfd, const char **which, int64_t *value, roce_error_t *err)
{
  static const char *const keys[]
      = { "net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6" };
  int saved = -1, ret = 0;

  if (netns_enter (nsfd, &saved, err) < 0)
    return -1;
  /* /proc/sys/net answers for the namespace of the thread that opens it. */
  for (size_t i = 0; i < ARRAY_SIZE (keys) && ret == 0; i++)
    {
      cleanup_free char *path = xasprintf ("/proc/sys/%s", keys[i]);
      cleanup_free char *line = NULL;
      cleanup_error roce_error_t rerr = NULL;
      uint64_t n;
      for (char *k = path + strlen ("/proc/sys/"); *k; k++)
        if (*k == '.')
          *k = '/';
      if (read_line_at (AT_FDCWD, path, &line, &rerr) < 0)
        {
          if (roce_error_status (&rerr) == ENOENT)
            {
              *which = NETNS_NO_IPV6;
              *value = 0;
              ret = 1;
            }
          else
            {
              *err = steal_pointer (&rerr);
              ret = -1;
            }
        }
      else if (parse_u64 (line, &n) < 0)
        ret = roce_error_make (err, EINVAL, "%s: '%s' is not a number", path, line);
      else if (n != 0)
        {
          *which = keys[i];
          *value = (int64_t) n;
          ret = 1;
        }
    }
  netns_leave (&saved);
  return ret;
}

void
netns_leave (int *saved)
{
  if (*saved < 0)
    return;
  if (setns (*saved, CLONE_NEWNET) < 0)
    {
      /* Every later step would act on the wrong namespace.  */
      roce_log (ROCE_LOG_ERR, "cannot return to the runtime's network namespace: %s",
                strerror (errno));
      abort ();
    }
  cleanup_closep (saved);
}

int
mntns_enter (int nsfd, struct mntns_saved *saved, roce_error_t *err)
{
  cleanup_close int self = open ("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  cleanup_close int cwd = open (".", O_PATH | O_DIRECTORY | O_CLOEXEC);

  if (self < 0)
    return roce_error_sys (err, errno, "open `/proc/self/ns/mnt`");
  roce_log_hold (true);
  if (setns (nsfd, CLONE_NEWNS) < 0)
    {
      int e = errno;
      roce_log_hold (false);
      return roce_error_sys (err, e, "enter the container's mount namespace");
    }
  saved->ns = steal_fd (&self);
  saved->cwd = steal_fd (&cwd); /* -1 when the cwd could not be opened: "/" after */
  return 0;
}

void
mntns_leave (struct mntns_saved *saved)
{
  if (saved->ns < 0)
    return;
  if (setns (saved->ns, CLONE_NEWNS) < 0)
    {
      roce_log_hold (false);
      roce_log (ROCE_LOG_ERR, "cannot return to the runtime's mount namespace: %s",
                strerror (errno));
      abort ();
    }
  /* setns() moved the root and cwd to the namespace's root: the root was
   * it (the runtime runs its hooks in its own); the cwd comes back.  */
  if (saved->cwd >= 0 && fchdir (saved->cwd) < 0)
    roce_log (ROCE_LOG_DEBUG, "back to the working directory: %s", strerror (errno));
  cleanup_closep (&saved->ns);
  cleanup_closep (&saved->cwd);
  roce_log_hold (false);
}

uint64_t
netns_socket_cookie (int sockfd)
{
  uint64_t cookie = 0;
  socklen_t len = sizeof (cookie);
  if (getsockopt (sockfd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) < 0 || len != sizeof (cookie))
    return 0;
  return cookie;
}

/* The cookie of nsfd's namespace, made from a throwaway socket inside it.  */
static int
cookie_of_nsfd (int nsfd, uint64_t *out, roce_error_t *err)
{
  cleanup_close int sock = -1;
  int saved = -1;

  if (netns_enter (nsfd, &saved, err) < 0)
    return -1;
  sock = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  netns_leave (&saved);
  if (sock < 0)
    return roce_error_sys (err, errno, "socket in the network namespace");
  *out = netns_socket_cookie (sock);
  return 0;
}

int
netns_id_of (int nsfd, int sockfd, struct netns_id *out, roce_error_t *err)
{
  struct stat st;

  memset (out, 0, sizeof (*out));
  if (fstat (nsfd, &st) < 0)
    return roce_error_sys (err, errno, "stat the network namespace");
  out->dev = (uint64_t) st.st_dev;
  out->ino = (uint64_t) st.st_ino;
  if (netns_boot_id (out->boot_id, err) < 0)
    return -1;
  if (sockfd >= 0)
    out->cookie = netns_socket_cookie (sockfd);
  else if (cookie_of_nsfd (nsfd, &out->cookie, err) < 0)
    return -1;
  return 0;
}

int
netns_open_pinned (const char *path, struct netns_id *id, roce_error_t *err)
{
  cleanup_close int fd = netns_open_nsfs (path, true, NULL, err);
  if (fd < 0)
    return -1;
  if (netns_id_of (fd, -1, id, err) < 0)
    return roce_error_wrap (err, "`%s`", path);
  return steal_fd (&fd);
}

bool
netns_id_same_inode (const struct netns_id *a, const struct netns_id *b)
{
  return a->dev == b->dev && a->ino == b->ino && strcmp (a->boot_id, b->boot_id) == 0;
}

bool
netns_id_equal (const struct netns_id *a, const struct netns_id *b)
{
  return netns_id_same_inode (a, b) && (a->cookie == 0 || b->cookie == 0 || a->cookie == b->cookie);
}

const char *
netns_id_format (const struct netns_id *id, char *buf, size_t size)
{
  snprintf (buf, size, "net:[%llu]%s", (unsigned long long) (id->ino & ~NETNS_INO_GONE),
            id->ino & NETNS_INO_GONE ? " (gone)" : "");
  return buf;
}

/* ---- liveness ------------------------------------------------------------ */

struct live_entry
{
  uint64_t dev;
  uint64_t ino;
  char *path; /* /proc/<pid>/ns/net or a bind mount */
  bool cookie_known;
  uint64_t cookie;
};

struct ns_ino
{
  uint64_t dev, ino;
};

struct netns_live
{
  char boot_id[NETNS_BOOT_ID_MAX];
  struct live_entry *e;
  size_t n, cap;
  struct ns_ino *mntns; /* the mount namespaces whose pins were read */
  size_t n_mntns;
  bool unsure;              /* some mount namespace could not be read, or the time ran out */
  struct timespec deadline; /* when the scan stops, unsure */
  unsigned polls;
  /* A scan for one namespace: only its holders are kept, and gone() is
   * asked between processes whether it has ended meanwhile.  */
  const struct netns_id *want;
  bool (*gone) (void *arg);
  void *gone_arg;
};

/* Whether the scan's time is up (asked every 64 calls: a clock read costs
 * little, but an fd-heavy process has tens of thousands of fds).  Once it
 * is, the scan is unsure: every namespace counts as held.  */
static bool
live_expired (struct netns_live *l)
{
  struct timespec now;
  if (l->unsure)
    return true;
  if (l->polls++ % 64 != 0)
    return false;
  clock_gettime (CLOCK_MONOTONIC, &now);
  if (now.tv_sec > l->deadline.tv_sec
      || (now.tv_sec == l->deadline.tv_sec && now.tv_nsec >= l->deadline.tv_nsec))
    {
      roce_log (ROCE_LOG_DEBUG, "network namespace scan: out of time, unsure (held)");
      l->unsure = true;
    }
  return l->unsure;
}

static struct netns_live *
live_new (unsigned ms)
{
  struct netns_live *l = xmalloc0 (sizeof (*l));
  clock_gettime (CLOCK_MONOTONIC, &l->deadline);
  l->deadline.tv_sec += ms / 1000;
  l->deadline.tv_nsec += (long) (ms % 1000) * 1000000L;
  if (l->deadline.tv_nsec >= 1000000000L)
    {
      l->deadline.tv_sec++;
      l->deadline.tv_nsec -= 1000000000L;
    }
  return l;
}

/* Whether st is an inode the scan keeps.  */
static bool
live_wanted (const struct netns_live *l, const struct stat *st)
{
  return l->want == NULL
         || ((uint64_t) st->st_dev == l->want->dev && (uint64_t) st->st_ino == l->want->ino);
}

static void
live_add (struct netns_live *l, const struct stat *st, char *path)
{
  if (l->n == l->cap)
    {
      l->cap = l->cap ? l->cap * 2 : 64;
      l->e = xrealloc (l->e, l->cap * sizeof (*l->e));
    }
  l->e[l->n++] = (struct live_entry){ .dev = (uint64_t) st->st_dev,
                                      .ino = (uint64_t) st->st_ino,
                                      .path = path };
}

/* A namespace can also be kept by nothing but an open fd (a network
 * manager holding /proc/<pid>/ns/net): those count as in use too.  */
static void
scan_fds (struct netns_live *l, int procfd, const char *pid)
{
  char rel[64];
  cleanup_close int fd = -1;
  cleanup_dir DIR *d = NULL;
  struct dirent *de;

  snprintf (rel, sizeof (rel), "%.20s/fd", pid);
  fd = openat (procfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || (d = fdopendir (fd)) == NULL)
    return;
  fd = -1; /* owned by d */
  while (! live_expired (l) && (de = readdir (d)) != NULL)
    {
      char target[32];
      struct stat st;
      ssize_t n;
      if (de->d_name[0] == '.')
        continue;
      n = readlinkat (dirfd (d), de->d_name, target, sizeof (target) - 1);
      if (n < 5 || strncmp (target, "net:[", 5) != 0)
        continue;
      if (fstatat (dirfd (d), de->d_name, &st, 0) < 0 || ! live_wanted (l, &st))
        continue;
      live_add (l, &st, xasprintf ("/proc/%s/%s", rel, de->d_name));
    }
}

static void scan_pins (struct netns_live *l, int procfd, const char *pid);

static int
pid_cmp (const void *a, const void *b)
{
  pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
  return (x > y) - (x < y);
}

/* The children of kthreadd (pid 2), sorted: on a node with many cores most
 * of /proc is kernel threads (62 of 69 processes on this 2-core VM; a
 * thousand and more on a large one), and each cost the scan four
 * syscalls.  Only a hint: a pid in it is still asked whether it is a
 * kernel thread (below), since kthreadd also parents the kernel's
 * user-mode helpers.  Their pins are those of the initial mount namespace,
 * read through pid 1's (kernel threads are seen only from the initial pid
 * namespace, where pid 1 is init).  */
static size_t
kthreadd_children (int procfd, pid_t **out)
{
  cleanup_free char *text = NULL;
  cleanup_error roce_error_t err = NULL;
  pid_t *v = NULL;
  size_t n = 0, cap = 0;
  char *p, *end;

  *out = NULL;
  if (read_file_at (procfd, "2/task/2/children", 1024 * 1024, &text, NULL, &err) < 0)
    return 0;
  for (p = text;; p = end)
    {
      long pid = strtol (p, &end, 10);
      if (end == p || pid <= 0)
        break;
      if (n == cap)
        {
          cap = cap ? cap * 2 : 256;
          v = xrealloc (v, cap * sizeof (*v));
        }
      v[n++] = (pid_t) pid;
    }
  if (n > 1)
    qsort (v, n, sizeof (*v), pid_cmp); /* in the order made: pids wrap */
  *out = v;
  return n;
}

/* A kernel thread has no executable (nor does a zombie): it holds no fd and
 * lives in the initial namespaces, never in a container's.  */
static bool
kernel_thread (int procfd, const char *pid, const pid_t *kids, size_t n_kids)
{
  pid_t key = (pid_t) atol (pid);
  char rel[48], target[8];

  if (n_kids == 0 || bsearch (&key, kids, n_kids, sizeof (*kids), pid_cmp) == NULL)
    return false;
  snprintf (rel, sizeof (rel), "%.20s/exe", pid);
  return readlinkat (procfd, rel, target, sizeof (target)) < 0 && errno == ENOENT;
}

/* 1: gone() ended the scan early; 2: (a scan for one namespace) a holder
 * of it that is not dying was found, which later processes cannot change;
 * 0: every process was read.  */
static int
scan_proc (struct netns_live *l, roce_error_t *err)
{
  cleanup_dir DIR *d = opendir ("/proc");
  cleanup_free pid_t *kids = NULL;
  size_t n_kids, n_pids = 0;
  struct dirent *de;

  if (d == NULL)
    return roce_error_sys (err, errno, "open `/proc`");
  n_kids = kthreadd_children (dirfd (d), &kids);
  while ((de = readdir (d)) != NULL)
    {
      char rel[64];
      struct stat st;
      if (! isdigit ((unsigned char) de->d_name[0]))
        continue;
      size_t seen = l->n;
      l->polls = 0; /* the clock once a process at least */
      if (live_expired (l))
        return 0;
      /* Asked every 8 processes: a poll costs a tenth of a process read.  */
      if (l->gone && n_pids++ % 8 == 0 && l->gone (l->gone_arg))
        return 1;
      if (kernel_thread (dirfd (d), de->d_name, kids, n_kids))
        continue;
      snprintf (rel, sizeof (rel), "%.20s/ns/net", de->d_name);
      /* Follows the magic link to the nsfs inode; a process that exited
       * meanwhile, or a kernel thread, is simply not there.  */
      if (fstatat (dirfd (d), rel, &st, 0) < 0)
        continue;
      if (live_wanted (l, &st))
        live_add (l, &st, xasprintf ("/proc/%s", rel));
      scan_fds (l, dirfd (d), de->d_name);
      scan_pins (l, dirfd (d), de->d_name);
      if (l->want && l->n > seen && netns_live_has (l, l->want) && ! netns_live_dying (l, l->want))
        return 2;
    }
  return 0;
}

/* ---- namespaces pinned by a bind mount, in any mount namespace -------------- */

struct pin_scan
{
  struct netns_live *l;
  const char *pid;
};

static bool
pin_cb (const struct mountinfo_entry *e, void *arg)
{
  struct pin_scan *p = arg;
  unsigned long long ino;
  struct stat st = { 0 };

  /* An nsfs mount's root names the namespace: "net:[4026532177]".  */
  if (strcmp (e->fstype, "nsfs") != 0 || sscanf (e->root, "net:[%llu]", &ino) != 1)
    return true;
  st.st_dev = makedev (e->major, e->minor);
  st.st_ino = (ino_t) ino;
  if (! live_wanted (p->l, &st))
    return true;
  /* The path reaches the mount through that process's root, in its mount
   * namespace, for the cookie check.  */
  live_add (p->l, &st, xasprintf ("/proc/%s/root%s", p->pid, e->point));
  return true;
}

/* The nsfs bind mounts (`ip netns add`, a pod sandbox's pinned namespace)
 * of pid's mount namespace, read once per mount namespace: a pin that only
 * a runtime's private mount namespace, or a systemd unit's PrivateMounts,
 * can see keeps its namespace alive as surely as one in ours.  */
/* Whether /proc/<pid> has gone (or is a zombie's: no mounts, no fds), asked
 * after a read of it failed.  */
static bool
proc_gone (int procfd, const char *pid)
{
  char rel[64];
  cleanup_free char *stat = NULL;
  cleanup_error roce_error_t err = NULL;
  const char *close_paren;

  snprintf (rel, sizeof (rel), "%.20s/stat", pid);
  if (read_line_at (procfd, rel, &stat, &err) < 0)
    return true;
  close_paren = strrchr (stat, ')');
  return close_paren && (close_paren[1] == ' ') && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

static void
scan_pins (struct netns_live *l, int procfd, const char *pid)
{
  char rel[64];
  struct stat st;
  cleanup_close int fd = -1;
  cleanup_free char *text = NULL;
  cleanup_error roce_error_t err = NULL;
  struct pin_scan p = { l, pid };

  snprintf (rel, sizeof (rel), "%.20s/ns/mnt", pid);
  if (fstatat (procfd, rel, &st, 0) < 0)
    {
      if (errno != ENOENT && errno != ESRCH && ! proc_gone (procfd, pid))
        l->unsure = true; /* a mount namespace we cannot see */
      return;
    }
  for (size_t i = 0; i < l->n_mntns; i++)
    if (l->mntns[i].dev == (uint64_t) st.st_dev && l->mntns[i].ino == (uint64_t) st.st_ino)
      return;
  snprintf (rel, sizeof (rel), "%.20s/mountinfo", pid);
  fd = openat (procfd, rel, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read_all_fd (fd, 64 * 1024 * 1024, &text, NULL, &err) < 0)
    {
      /* A process that exited meanwhile held nothing: only one still there
       * whose mounts cannot be read makes the scan unsure.  */
      if ((fd >= 0 || (errno != ENOENT && errno != ESRCH)) && ! proc_gone (procfd, pid))
        l->unsure = true;
      return;
    }
  l->mntns = xrealloc (l->mntns, (l->n_mntns + 1) * sizeof (*l->mntns));
  l->mntns[l->n_mntns++] = (struct ns_ino){ (uint64_t) st.st_dev, (uint64_t) st.st_ino };
  mountinfo_parse (text, pin_cb, &p);
}

int
netns_live_scan (struct netns_live **out, roce_error_t *err)
{
  return netns_live_scan_within (NETNS_SCAN_MS, out, err);
}

int
netns_live_scan_within (unsigned ms, struct netns_live **out, roce_error_t *err)
{
  struct netns_live *l = live_new (ms);

  if (netns_boot_id (l->boot_id, err) < 0 || scan_proc (l, err) < 0)
    {
      netns_live_free (l);
      return roce_error_wrap (err, "listing the network namespaces in use");
    }
  *out = l;
  return 0;
}

int
netns_live_scan_one (const struct netns_id *id, bool (*gone) (void *arg), void *arg,
                     struct netns_live **out, roce_error_t *err)
{
  struct netns_live *l = live_new (NETNS_SCAN_MS);
  int r;

  l->want = id;
  l->gone = gone;
  l->gone_arg = arg;
  if (netns_boot_id (l->boot_id, err) < 0 || (r = scan_proc (l, err)) < 0)
    {
      netns_live_free (l);
      return roce_error_wrap (err, "looking for the holders of a network namespace");
    }
  l->want = NULL; /* a pointer into the caller's holder: not kept */
  l->gone = NULL;
  *out = l;
  return r;
}

/* Opens the entry's path and checks it is still that inode (a pid can be
 * reused between the scan and now, and a tenant's process can swap the fd
 * for a FIFO meanwhile: never waited on, netns_open_nsfs), then reads the
 * cookie.  A pin's path is followed to its mount, not through a link
 * (/proc/<pid>/root is a magic link; a fd entry is one and is followed).  */
static bool
entry_cookie (struct live_entry *e)
{
  cleanup_close int fd = -1;
  cleanup_error roce_error_t err = NULL;
  struct stat want = { 0 };
  bool pin;
  char pid[24];
  int len = 0;

  if (e->cookie_known)
    return true;
  pin = sscanf (e->path, "/proc/%20[0-9]/%n", pid, &len) == 1 && len > 0
        && strncmp (e->path + len, "root/", 5) == 0;
  want.st_dev = (dev_t) e->dev;
  want.st_ino = (ino_t) e->ino;
  fd = netns_open_nsfs (e->path, pin, &want, &err);
  if (fd < 0)
    {
      roce_log (ROCE_LOG_DEBUG, "%s", err->msg);
      return false;
    }
  if (cookie_of_nsfd (fd, &e->cookie, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "%s: %s", e->path, err->msg);
      return false;
    }
  e->cookie_known = true;
  return true;
}

bool
netns_live_has (struct netns_live *l, const struct netns_id *id)
{
  if (strcmp (l->boot_id, id->boot_id) != 0)
    return false;
  /* A mount namespace we could not read may pin it: a stale lease beats a
   * stolen address.  */
  if (l->unsure)
    return true;
  for (size_t i = 0; i < l->n; i++)
    {
      struct live_entry *e = &l->e[i];
      if (e->dev != id->dev || e->ino != id->ino)
        continue;
      if (id->cookie == 0)
        return true;
      /* A cookie we cannot read proves nothing: the same inode is held, so
       * count the namespace as alive (a stale lease beats a stolen one). */
      if (! entry_cookie (e))
        return true;
      /* The inode may now name a younger namespace: then the one we look
       * for is gone (inodes are unique among live namespaces).  */
      return e->cookie == 0 || e->cookie == id->cookie;
    }
  return false;
}

/* /proc/<pid>/status says SIGKILL is pending (SigPnd or ShdPnd bit 8), or
 * the process is a zombie.  */
static bool
pid_dying (const char *pid)
{
  cleanup_free char *path = xasprintf ("/proc/%s/status", pid);
  cleanup_file FILE *f = fopen (path, "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;
  bool dying = false;

  if (f == NULL)
    return true; /* gone already */
  while (! dying && getline (&line, &cap, f) > 0)
    {
      unsigned long long mask;
      char state;
      if (sscanf (line, "State: %c", &state) == 1)
        dying = state == 'Z' || state == 'X';
      else if (sscanf (line, "SigPnd: %llx", &mask) == 1
               || sscanf (line, "ShdPnd: %llx", &mask) == 1)
        dying = (mask & (1ULL << (SIGKILL - 1))) != 0;
    }
  return dying;
}

bool
netns_live_dying (struct netns_live *l, const struct netns_id *id)
{
  size_t held = 0;
  if (l->unsure || strcmp (l->boot_id, id->boot_id) != 0)
    return false;
  for (size_t i = 0; i < l->n; i++)
    {
      const struct live_entry *e = &l->e[i];
      char pid[24];
      int len = 0;
      if (e->dev != id->dev || e->ino != id->ino)
        continue;
      held++;
      /* "/proc/<pid>/ns/net" or "/proc/<pid>/fd/<n>"; a mount is a pin.  */
      if (sscanf (e->path, "/proc/%20[0-9]/%n", pid, &len) != 1 || len == 0
          || (strcmp (e->path + len, "ns/net") != 0 && strncmp (e->path + len, "fd/", 3) != 0)
          || ! pid_dying (pid))
        return false;
    }
  return held > 0;
}

void
netns_live_free (struct netns_live *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->n; i++)
    free (l->e[i].path);
  free (l->e);
  free (l->mntns);
  free (l);
}

void
cleanup_netns_livep (struct netns_live **l)
{
  netns_live_free (*l);
  *l = NULL;
}
