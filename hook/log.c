#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "utils.h"

static struct
{
  char ident[32];
  char container[257];
  int fd;
  int opened;
} sink = { .ident = "roce-hook", .container = "-", .fd = -1 };

void
roce_log_open (const char *ident)
{
  snprintf (sink.ident, sizeof (sink.ident), "%s", ident);
  openlog (sink.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
  sink.opened = 1;
}

void
roce_log_set_container (const char *id)
{
  snprintf (sink.container, sizeof (sink.container), "%s", id ? id : "-");
}

int
roce_log_set_file (const char *path, roce_error_t *err)
{
  int fd = open (path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640);
  if (fd < 0)
    return roce_error_sys (err, errno, "open log_file `%s`", path);
  if (sink.fd >= 0)
    close (sink.fd);
  sink.fd = fd;
  return 0;
}

static void
sanitize (char *s)
{
  for (; *s; s++)
    if ((unsigned char) *s < 0x20 || *s == 0x7f)
      *s = ' ';
}

void
roce_log (enum roce_log_level level, const char *fmt, ...)
{
  static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
  static const char *const names[] = { "error", "warning", "info", "debug" };
  cleanup_free char *msg = NULL;
  va_list ap;

  va_start (ap, fmt);
  if (vasprintf (&msg, fmt, ap) < 0)
    abort ();
  va_end (ap);
  sanitize (msg);

  if (sink.opened)
    syslog (prio[level], "%s: %s", sink.container, msg);
  if (sink.fd >= 0)
    {
      char ts[32] = "";
      struct timespec now;
      struct tm tm;
      cleanup_free char *line = NULL;
      clock_gettime (CLOCK_REALTIME, &now);
      gmtime_r (&now.tv_sec, &tm);
      strftime (ts, sizeof (ts), "%Y-%m-%dT%H:%M:%S", &tm);
      line = xasprintf ("%s.%03ldZ %s[%d] %s %s: %s\n", ts, now.tv_nsec / 1000000, sink.ident,
                        (int) getpid (), names[level], sink.container, msg);
      /* One write per line: O_APPEND keeps concurrent hooks' lines whole.  */
      if (write (sink.fd, line, strlen (line)) < 0)
        {
          /* Nowhere left to report it.  */
        }
    }
}

void
roce_log_close (void)
{
  if (sink.fd >= 0)
    close (sink.fd);
  sink.fd = -1;
  if (sink.opened)
    closelog ();
  sink.opened = 0;
}

void
roce_log_refusal (FILE *out, const char *prog, const char *id, const char *msg)
{
  cleanup_free char *m = xstrdup (msg);
  cleanup_free char *i = xstrdup (id ? id : "-");
  sanitize (m);
  sanitize (i);
  fprintf (out, "%s: %s: %s\n", prog, i, m);
  fflush (out);
}
