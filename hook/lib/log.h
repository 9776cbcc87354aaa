/* SPDX-License-Identifier: Apache-2.0 */
/* The log sink: the one global of roce-hook's code.  Details go to syslog and to the
 * policy's log_file, tagged with the container id; the single refusal line
 * goes to stderr from main().  */
#ifndef ROCE_LOG_H
#define ROCE_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "lib/error.h"

enum roce_log_level
{
  ROCE_LOG_ERR,
  ROCE_LOG_WARN,
  ROCE_LOG_INFO,
  ROCE_LOG_DEBUG,
};

void roce_log_open (const char *ident);
/* The same, connecting to syslog only at the first line (roce-runtime's
 * engine: most of its calls log nothing; the hook connects at once, before
 * it enters a container's mount namespace).  */
void roce_log_open_on_use (const char *ident);
void roce_log_set_container (const char *id);
/* Appends to path (created 0640, never through a symlink).  */
int roce_log_set_file (const char *path, roce_error_t *err);
void roce_log (enum roce_log_level level, const char *fmt, ...) ROCE_PRINTF (2, 3);
/* A debug line to log_file only (nothing when none is set): figures that
 * cost a syslog message each (the lease store lock's hold time).  */
void roce_log_file (const char *fmt, ...) ROCE_PRINTF (1, 2);
void roce_log_close (void);
/* While held, syslog lines wait (the log_file, an fd, is written at once):
 * the hook is in a container's mount namespace, where a syslog socket
 * would reach the container's /dev/log.  Released, they go in order.  */
void roce_log_hold (bool hold);
/* While batching, the log_file's lines wait in memory and go in one write
 * when the batch ends (or fills): a burst of lines computed at once.  */
void roce_log_batch (bool on);

/* Lines of `level` and above also to stderr, "roce-hook: <id>: <msg>":
 * a long-running command's (the NRI plugin's), whose stderr is the node's
 * log.  */
void roce_log_stderr (enum roce_log_level level);
/* The printers: each line escaped whole, once, where it is printed
 * (utils.h: str_escape; no value in msg or fmt's arguments is escaped
 * before).  syslog and the log_file's lines go through roce_log.  */
/* "<prog>: <id>: <msg>" (id NULL: "<prog>: <msg>"), escaped, no newline.
 * Caller frees.  */
char *roce_line (const char *prog, const char *id, const char *msg);
/* "roce-hook: <id>: <msg>" and a newline, to out (and to the runtime's
 * stderr when out is /dev/null).  */
void roce_log_refusal (FILE *out, const char *prog, const char *id, const char *msg);
/* One line of fmt's making and a newline, to out (a command's output line
 * that carries values: gc's, lldp's).  */
void roce_print (FILE *out, const char *fmt, ...) ROCE_PRINTF (2, 3);

#endif
