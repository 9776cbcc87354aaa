/* SPDX-License-Identifier: Apache-2.0 */
/* The operator commands, one file each (hook/cmd/cmd_<verb>.c), all of one
 * signature:
 *
 *   int cmd_<verb> (const char *config, int argc, char **argv, roce_error_t *err);
 *
 * config: the policy's path; argv[0]: the command's name.  Each owns its
 * options, usage and confinement, and returns the exit status: 0 done; 1 a
 * finding or a refusal where the command has one (check: a finding that
 * blocks; qos apply: refused or failed; lldp --listen: a netdev heard
 * nothing); 2 it cannot run.  A command that fails sets *err and prints
 * nothing of it: main prints it once, as the one line "roce-hook:
 * <command>: <what>", and logs it.  Its usage text, and its report, are the
 * command's own to print.  hook/main.c keeps the table.  */
#ifndef ROCE_CMD_H
#define ROCE_CMD_H

#include <getopt.h> /* optind */
#include <stdbool.h>
#include <stdio.h>

#include "lib/error.h"

typedef int cmd_fn (const char *config, int argc, char **argv, roce_error_t *err);
cmd_fn cmd_check, cmd_cdi, cmd_metrics, cmd_leases, cmd_gc, cmd_blocks, cmd_qos, cmd_lldp, cmd_topo,
    cmd_nri;

/* A command's option: its long name and letter, and where it goes: flag
 * set, or value kept (the option then takes one).  */
struct cmd_opt
{
  const char *name;
  int letter;
  bool *flag;
  const char **value;
};
/* CMD_GO: the options are parsed, the command goes on.  */
#define CMD_GO (-1)
/* Parses the options of argv (getopt_long from argv[1], stopping at the
 * first operand: optind names it), each setting its flag or keeping its
 * value; -h/--help prints usage on stdout, an option it does not know (or
 * without its value: getopt says which) prints it on stderr.  Returns
 * CMD_GO, else the exit status (0 help, 2 usage).  opts ends with a NULL
 * name.  */
int cmd_options (int argc, char **argv, const struct cmd_opt *opts, void (*usage) (FILE *out));

/* An unknown argument (escaped) as the command's error; returns 2.  */
int cmd_bad_argument (const char *arg, roce_error_t *err);
/* A command's document: to stdout, or replacing OUTPUT atomically.  */
int cmd_emit (const char *output, const char *text, roce_error_t *err);
/* The query profile (no capability, a read-only filter; NETWORK: TCP too).  */
int cmd_confine_query (bool network, roce_error_t *err);

#endif
