/* SPDX-License-Identifier: Apache-2.0 */
/* The log sink, the one global of roce-hook's code: syslog and the policy's log_file,
 * tagged with the container id; the one refusal line on stderr.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/utils.h"

static struct
{
  char ident[32];
  char *container; /* NULL: "-" */
  int fd;
  int opened;
  bool held;
  struct
  {
    int prio;
    char *line;
  } waiting[16];
  size_t n_waiting, n_lost;
  char *batch; /* the log_file's lines of a burst, written at once */
  size_t batch_len;
  bool batching;
  bool regular;  /* the log_file is a file: a FIFO's reader sees a write over
                   PIPE_BUF in pieces, between other writers' lines */
  int to_stderr; /* lines of levels up to this one also go to stderr; -1: none */
} sink = { .ident = "roce-hook", .fd = -1, .to_stderr = -1 };

void
roce_log_stderr (enum roce_log_level level)
{
  sink.to_stderr = (int) level;
}

static void
batch_flush (void)
{
  if (sink.batch_len && sink.fd >= 0 && write (sink.fd, sink.batch, sink.batch_len) < 0)
    {
      /* Nowhere left to report it.  */
    }
  sink.batch_len = 0;
}

void
roce_log_batch (bool on)
{
  if (! on)
    {
      batch_flush ();
      free (sink.batch);
      sink.batch = NULL;
    }
  sink.batching = on;
}

void
roce_log_hold (bool hold)
{
  sink.held = hold;
  if (hold)
    return;
  for (size_t i = 0; i < sink.n_waiting; i++)
    {
      if (sink.opened)
        syslog (sink.waiting[i].prio, "%s", sink.waiting[i].line);
      free (sink.waiting[i].line);
    }
  if (sink.n_lost && sink.opened)
    syslog (LOG_WARNING, "%s: %zu more line(s) were not sent to syslog",
            sink.container ? sink.container : "-", sink.n_lost);
  sink.n_waiting = sink.n_lost = 0;
}

void
roce_log_open (const char *ident)
{
  snprintf (sink.ident, sizeof (sink.ident), "%s", ident);
  /* No syslog socket on this host (a minimal node, a private /dev): the
   * log_file only.  glibc would try to connect again on every line.  */
  if (access (_PATH_LOG, W_OK) < 0)
    return;
  openlog (sink.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
  sink.opened = 1;
}

void
roce_log_open_on_use (const char *ident)
{
  snprintf (sink.ident, sizeof (sink.ident), "%s", ident);
  /* glibc connects at the first line.  */
  openlog (sink.ident, LOG_PID, LOG_DAEMON);
  sink.opened = 1;
}

void
roce_log_set_container (const char *id)
{
  /* Ids may be 1,024 bytes: kept whole, never cut; raw, as every value of
   * a line until it is printed (utils.h: str_escape).  */
  free (sink.container);
  sink.container = id ? xstrdup (id) : NULL;
}

int
roce_log_set_file (const char *path, roce_error_t *err)
{
  int fd = open (path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640);
  if (fd < 0)
    return roce_error_sys (err, errno, "open log_file `%s`", path);
  struct stat st;
  if (sink.fd >= 0)
    {
      batch_flush ();
      close (sink.fd);
    }
  sink.fd = fd;
  sink.regular = fstat (fd, &st) == 0 && S_ISREG (st.st_mode);
  return 0;
}

static void file_line (const char *level, const char *msg);

/* A burst's lines go to the log_file in one write up to this size.  */
#define LOG_BATCH_MAX 16384

void
roce_log (enum roce_log_level level, const char *fmt, ...)
{
  static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
  static const char *const names[] = { "error", "warning", "info", "debug" };
  cleanup_free char *msg = NULL;
  va_list ap;

  va_start (ap, fmt);
  msg = xvasprintf (fmt, ap);
  va_end (ap);

  if (sink.opened)
    {
      cleanup_free char *raw = xasprintf ("%s: %s", sink.container ? sink.container : "-", msg);
      char *line = str_escape (raw);
      if (! sink.held)
        syslog (prio[level], "%s", line);
      else if (sink.n_waiting < ARRAY_SIZE (sink.waiting))
        {
          sink.waiting[sink.n_waiting].prio = prio[level];
          sink.waiting[sink.n_waiting++].line = steal_pointer (&line);
        }
      else
        sink.n_lost++;
      free (line);
    }
  if ((int) level <= sink.to_stderr)
    {
      cleanup_free char *one = roce_line (sink.ident, sink.container ? sink.container : "-", msg);
      cleanup_free char *line = xasprintf ("%s\n", one);
      if (write (STDERR_FILENO, line, strlen (line)) < 0)
        {
          /* Nowhere left to report it.  */
        }
    }
  file_line (names[level], msg);
}

void
roce_log_file (const char *fmt, ...)
{
  cleanup_free char *msg = NULL;
  va_list ap;

  if (sink.fd < 0)
    return;
  va_start (ap, fmt);
  msg = xvasprintf (fmt, ap);
  va_end (ap);
  file_line ("debug", msg);
}

static void
file_line (const char *level, const char *msg)
{
  if (sink.fd >= 0)
    {
      char ts[UTC_TIME_MAX];
      struct timespec now;
      cleanup_free char *raw = NULL;
      cleanup_free char *esc = NULL;
      cleanup_free char *line = NULL;
      clock_gettime (CLOCK_REALTIME, &now);
      utc_time_format (now.tv_sec, ts);
      raw = xasprintf ("%s.%03ldZ %s[%d] %s %s: %s", ts, now.tv_nsec / 1000000, sink.ident,
                       (int) getpid (), level, sink.container ? sink.container : "-", msg);
      esc = str_escape (raw);
      line = xasprintf ("%s\n", esc);
      size_t len = strlen (line);
      if (sink.batching && sink.regular && len <= LOG_BATCH_MAX)
        {
          if (sink.batch_len + len > LOG_BATCH_MAX)
            batch_flush ();
          if (sink.batch == NULL)
            sink.batch = xmalloc0 (LOG_BATCH_MAX);
          memcpy (sink.batch + sink.batch_len, line, len);
          sink.batch_len += len;
          return;
        }
      batch_flush ();
      /* One write per line (or per burst): O_APPEND keeps concurrent hooks'
       * lines whole.  */
      if (write (sink.fd, line, len) < 0)
        {
          /* Nowhere left to report it.  */
        }
    }
}

void
roce_log_close (void)
{
  roce_log_hold (false);
  roce_log_batch (false);
  if (sink.fd >= 0)
    close (sink.fd);
  sink.fd = -1;
  if (sink.opened)
    closelog ();
  sink.opened = 0;
  free (sink.container);
  sink.container = NULL;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static bool
is_dev_null (int fd)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    return true; /* closed */
  return S_ISCHR (st.st_mode) && st.st_rdev == makedev (1, 3);
}

char *
roce_line (const char *prog, const char *id, const char *msg)
{
  cleanup_free char *raw
      = id ? xasprintf ("%s: %s: %s", prog, id, msg) : xasprintf ("%s: %s", prog, msg);
  return str_escape (raw);
}

void
roce_print (FILE *out, const char *fmt, ...)
{
  cleanup_free char *line = NULL;
  va_list ap;

  va_start (ap, fmt);
  line = xvasprintf_escaped (fmt, ap);
  va_end (ap);
  fprintf (out, "%s\n", line);
}

void
roce_log_refusal (FILE *out, const char *prog, const char *id, const char *msg)
{
  cleanup_free char *one = roce_line (prog, id ? id : "-", msg);
  cleanup_free char *line = xasprintf ("%s\n", one);
  fputs (line, out);
  fflush (out);

  /* crun runs hooks with stdout and stderr on /dev/null (unless the spec
   * sets run.oci.hooks.stderr): the user would see only "error executing
   * hook".  The runtime that ran us is our parent; its stderr is what the
   * user (or Podman, or containerd's log) reads, so the line goes there.  */
  if (is_dev_null (fileno (out)))
    {
      /* pidfd_getfd shares the runtime's own open file (and its offset), so
       * the runtime's next message lands after ours, not over it.  */
      cleanup_close int pidfd = (int) syscall (SYS_pidfd_open, getppid (), 0);
      cleanup_close int fd = pidfd < 0 ? -1 : (int) syscall (SYS_pidfd_getfd, pidfd, 2, 0);
      if (fd >= 0 && ! is_dev_null (fd))
        write_all_fd (fd, line, strlen (line), NULL);
    }
}
