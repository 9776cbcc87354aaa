/* SPDX-License-Identifier: Apache-2.0 */
/* What every operator command shares: the error printed once, a document
 * written out, the query profile's confinement.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/confine.h"

/* The operator commands: argv here, the work in the library, the error
 * printed once.  Exit 0 done, 2 cannot run (check: 1 when a finding blocks).  */

int
cmd_fail (const char *cmd, roce_error_t err)
{
  roce_log (ROCE_LOG_ERR, "%s: %s", cmd, err->msg);
  roce_log_refusal (stderr, "roce-hook", cmd, err->msg);
  return 2;
}

/* An operator command's document: to stdout, or replacing FILE atomically.  */
int
cmd_emit (const char *output, const char *text, roce_error_t *err)
{
  if (output)
    return file_replace (output, text, strlen (text), err);
  if (fputs (text, stdout) == EOF || fflush (stdout) != 0)
    return roce_error_sys (err, errno, "write to stdout");
  return 0;
}

int
cmd_confine_query (const char *cmd, bool network)
{
  cleanup_error roce_error_t err = NULL;

  /* The queries only read: a tighter filter and no capability (check may
   * ask the policy's etcd whether it answers: TCP).  */
  if (confine_caps (CONFINE_QUERY, &err) < 0 || confine_phase (PHASE_NONE, &err) < 0
      || confine_seccomp_net (CONFINE_QUERY, network, &err) < 0)
    {
      fprintf (stderr, "roce-hook: %s: confining the hook: %s\n", cmd, err->msg);
      return -1;
    }
  return 0;
}

int
cmd_bad_argument (const char *cmd, const char *arg)
{
  cleanup_free char *shown = str_escape (arg);
  fprintf (stderr, "roce-hook: %s: unknown argument `%s`\n", cmd, shown);
  return 2;
}
