/* SPDX-License-Identifier: Apache-2.0 */
/* What every operator command shares (cmd.h): an unknown argument, a
 * document written out, the query profile's confinement.  */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
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
cmd_options (int argc, char **argv, const struct cmd_opt *opts, void (*usage) (FILE *out))
{
  struct option lopts[16];
  char shorts[2 * ARRAY_SIZE (lopts) + 3] = "+";
  size_t n = 0, k = 1;
  int c;

  for (; opts[n].name; n++)
    {
      if (n + 2 >= ARRAY_SIZE (lopts))
        abort (); /* a command with more options than this: make lopts larger */
      lopts[n] = (struct option){ opts[n].name, opts[n].value ? required_argument : no_argument,
                                  NULL, opts[n].letter };
      shorts[k++] = (char) opts[n].letter;
      if (opts[n].value)
        shorts[k++] = ':';
    }
  lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
  lopts[n] = (struct option){ NULL, 0, NULL, 0 };
  shorts[k++] = 'h';
  shorts[k] = '\0';
  optind = 0; /* a fresh getopt over the command's own argv */
  while ((c = getopt_long (argc, argv, shorts, lopts, NULL)) != -1)
    {
      const struct cmd_opt *o = opts;
      while (o->name && o->letter != c)
        o++;
      if (o->name && o->value)
        *o->value = optarg;
      else if (o->name)
        *o->flag = true;
      else
        {
          usage (c == 'h' ? stdout : stderr);
          return c == 'h' ? 0 : 2;
        }
    }
  return CMD_GO;
}

int
cmd_bad_argument (const char *arg, roce_error_t *err)
{
  roce_error_make (err, EINVAL, "unknown argument `%s`", arg);
  return 2;
}
