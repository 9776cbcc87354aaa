/* SPDX-License-Identifier: Apache-2.0 */
/* What every operator command shares (cmd.h): an unknown argument, a
 * document written out, the query profile's confinement.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/confine.h"

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
cmd_confine_query (bool network, roce_error_t *err)
{
  /* The queries only read: a tighter filter and no capability (check may
   * ask the policy's etcd whether it answers: TCP).  */
  if (confine_caps (CONFINE_QUERY, err) < 0 || confine_phase (PHASE_NONE, err) < 0
      || confine_seccomp_net (CONFINE_QUERY, network, err) < 0)
    return roce_error_wrap (err, "confining the hook");
  return 0;
}

int
cmd_bad_argument (const char *arg, roce_error_t *err)
{
  cleanup_free char *shown = str_escape (arg);
  roce_error_make (err, EINVAL, "unknown argument `%s`", shown);
  return 2;
}
