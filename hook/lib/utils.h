/* SPDX-License-Identifier: Apache-2.0 */
/* Cleanup attributes, ownership hand-over, checked strings and small I/O.  */
#ifndef ROCE_UTILS_H
#define ROCE_UTILS_H

#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "lib/error.h"

#define UNLIKELY(x) __builtin_expect (! ! (x), 0)
#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

void cleanup_freep (void *p);
void cleanup_closep (int *fd);
void cleanup_filep (FILE **f);
void cleanup_dirp (DIR **d);
void cleanup_strvp (char ***v);

#define cleanup_free __attribute__ ((cleanup (cleanup_freep)))
#define cleanup_close __attribute__ ((cleanup (cleanup_closep)))
#define cleanup_file __attribute__ ((cleanup (cleanup_filep)))
#define cleanup_dir __attribute__ ((cleanup (cleanup_dirp)))
#define cleanup_strv __attribute__ ((cleanup (cleanup_strvp)))

static inline void *
steal_ptr (void *pp)
{
  void **p = pp;
  void *r = *p;
  *p = NULL;
  return r;
}
#define steal_pointer(pp) ((__typeof__ (*(pp))) steal_ptr (pp))

static inline int
steal_fd (int *fd)
{
  int r = *fd;
  *fd = -1;
  return r;
}

/* Allocation failure aborts: a hook that cannot allocate a few bytes cannot
 * do anything useful, and this removes a class of error paths.  */
void *xmalloc0 (size_t size);
void *xrealloc (void *p, size_t size);
char *xstrdup (const char *s);
char *xstrndup (const char *s, size_t n);
char *xasprintf (const char *fmt, ...) ROCE_PRINTF (1, 2);
char *xvasprintf (const char *fmt, va_list ap) ROCE_PRINTF (1, 0);
/* "a, b, c": the strings of v joined by sep.  */
char *strv_join (char *const *v, const char *sep);
/* Replaces path with data atomically: written beside it (.<name>.roce-<pid>,
 * O_EXCL, never through a symlink), fsynced, renamed over it, the directory
 * synced.  A reader sees the old file or the new one, never a part.  */
int file_replace (const char *path, const char *data, size_t len, roce_error_t *err);
/* Appends one item to the list *acc (malloc'ed, "" to start): sep first
 * unless the list is empty.  The one way a list is joined in text.  */
void str_list_add (char **acc, const char *sep, const char *fmt, ...) ROCE_PRINTF (3, 4);

/* snprintf that reports truncation as an error (E2BIG).  */
int check_snprintf (char *buf, size_t size, roce_error_t *err, const char *fmt, ...)
    ROCE_PRINTF (4, 5);

void strv_free (char **v);
size_t strv_len (char *const *v);
/* Appends a copy of s; *v stays NULL-terminated.  */
void strv_push (char ***v, const char *s);

/* Reads all of fd (at most max bytes; more is E2BIG).  Returns a NUL-terminated
 * buffer and its length.  */
int read_all_fd (int fd, size_t max, char **out, size_t *len, roce_error_t *err);
/* "symlink", "fifo", "regular file"...: for messages.  */
const char *file_type_name (unsigned mode);
/* Reads a file relative to dirfd (AT_FDCWD for absolute paths), no symlink at
 * the last component when nofollow is set.  */
int read_file_at (int dirfd, const char *path, size_t max, char **out, size_t *len,
                  roce_error_t *err);
/* Reads a small sysfs-like file and strips the trailing newline.  */
int read_line_at (int dirfd, const char *path, char **out, roce_error_t *err);
int write_all_fd (int fd, const void *buf, size_t len, roce_error_t *err);

/* mkdir -p (mode 0755) of an admin's (trusted) path; `what` names it in
 * errors ("state_dir").  */
int mkdir_p (const char *path, const char *what, roce_error_t *err);

/* Trust in what fd is (the policy, its directory, the state dir), as sshd's
 * StrictModes: owned by root (or us) and writable by no one else; a sticky
 * directory may be world-writable.  Refuses naming path otherwise.  */
int check_trusted (int fd, const char *path, const char *what, roce_error_t *err);
/* A file as it was written (its device and inode), to remove it later only
 * while it is still that file.  */
struct file_ident
{
  uint64_t dev, ino;   /* 0, 0: none */
  int64_t btime_sec;   /* its birth (an inode number is reused at once): */
  uint32_t btime_nsec; /* 0, 0 where the file system keeps none */
};
void file_ident_of (int fd, struct file_ident *out);
/* Removes dirfd/name only when it is still the file id names: moved aside
 * to a name of this process's, checked there, then removed, or put back
 * when it is another (a newer file of the name, somebody else's, is never
 * removed).  0: removed, or not there, or not ours; < 0 an error.  */
int unlink_if_same (int dirfd, const char *name, const struct file_ident *id, roce_error_t *err);
/* Stricter, for the lease store's state_dir and every directory and lock
 * file in it: of that type (S_IFDIR, S_IFREG), owned by root (or us),
 * writable by no one else, sticky or not.  Checked on the fd that is used.  */
int check_private (int fd, const char *path, const char *what, mode_t type, roce_error_t *err);

/* Parses a decimal unsigned integer that must span the whole string.  */
int parse_u64 (const char *s, uint64_t *out);

/* The one rule for what roce-hook and roce-runtime print (a terminal, a
 * runtime's stderr, syslog, the log_file, a gc line, a metrics comment): a
 * message is made with every value in it raw (a path from config.json, an
 * annotation, a container id, a library's error, as they are: nothing is
 * escaped when a message is made, roce_error_* and roce_log alike), and
 * the line is escaped whole, exactly once, by the function that prints it,
 * with str_escape.  So a backslash in a printed line always begins an
 * escape (a tenant's own reads \x5c), and no byte a tenant chose (an
 * escape sequence, a newline, a C1 control) reaches a terminal or splits
 * a log line.  */
/* s with every byte that is not printable ASCII, and the backslash,
 * written as \xNN.  Caller frees.  */
char *str_escape (const char *s);
/* A tenant's value for a message: in single quotes, at most 64 bytes of it
 * ("..." after the quote when cut), its bytes as they are (the line is
 * escaped when printed).  Caller frees.  */
char *str_quote (const char *s);
/* Formatted, then escaped whole as str_escape: a printer's line (log.h:
 * roce_print; a comment of the metrics).  */
char *xvasprintf_escaped (const char *fmt, va_list ap) ROCE_PRINTF (1, 0);

/* True when s consists of printable ASCII only (no controls, no bytes > 126).  */
bool str_is_printable (const char *s);
/* True when s is 1..max bytes of [A-Za-z0-9_.-] (a host, node or HCA name).  */
bool str_is_name (const char *s, size_t max);

/* A process nobody waits for, about to outlive its caller: stdio on
 * /dev/null (a runtime reads a hook's output to its end) and a session of
 * its own (no terminal's signals).  */
void detach_from_caller (void);
/* Closes every fd above stderr but `keep`.  */
void close_fds_but (int keep);

/* Crash tests: in the test build only (-DROCE_TEST_HOOKS: the unit tests and
 * build/helpers/roce-hook-test), when $ROCE_TEST_CRASH names this point the
 * process kills itself with SIGKILL there (a hook killed mid-way,
 * deterministically).  In the product it is nothing at all.  */
#ifdef ROCE_TEST_HOOKS
void roce_crash_point (const char *where);
/* Race tests: when $ROCE_TEST_PAUSE names this point, the process creates
 * $ROCE_TEST_PAUSE_DIR/<where>.reached and waits (30 s at most) for
 * $ROCE_TEST_PAUSE_DIR/<where>.go: another container can act in between.  */
void roce_pause_point (const char *where);
#else
static inline void
roce_crash_point (const char *where)
{
  (void) where;
}
static inline void
roce_pause_point (const char *where)
{
  (void) where;
}
#endif

/* A tmpfs size option's value ("65536k", "64m", "67108864", "2G") in bytes;
 * -1 when it is not one (a percentage included).  */
int tmpfs_size_parse (const char *s, uint64_t *out);

/* T (seconds since the epoch) as "2026-12-03T21:03:38" in UTC, with no time
 * zone read: glibc's gmtime_r and strftime load /etc/localtime at their first
 * call, an open and two reads at every start.  BUF holds UTC_TIME_MAX.  */
#define UTC_TIME_MAX 40
const char *utc_time_format (int64_t t, char *buf);

/* CLOCK_MONOTONIC in ns and ms, and the ms until end (< 0: past it).  */
int64_t mono_ns (void);
int64_t mono_ms (void);
struct timespec;
long ms_until (const struct timespec *end);

/* <the directory of this program>/name: where the programs find each other
 * (linkage.h); NULL when /proc/self/exe cannot be read (errno).  */
char *self_beside (const char *name);

#endif
