/* SPDX-License-Identifier: Apache-2.0 */
/* The operator commands, one file each (hook/cmd/cmd_<verb>.c): each owns its
 * options, usage and confinement, and returns the exit status (0 done, 1 a
 * finding or refusal where the command has one, 2 cannot run).  argv[0] is
 * the command's name.  hook/main.c keeps the table.  */
#ifndef ROCE_CMD_H
#define ROCE_CMD_H

#include <stdbool.h>

#include "lib/error.h"

int cmd_check (const char *config, int argc, char **argv);
int cmd_cdi (const char *config, int argc, char **argv);
int cmd_metrics (const char *config, int argc, char **argv);
int cmd_leases (const char *config, int argc, char **argv);
int cmd_gc (const char *config, int argc, char **argv);
int cmd_blocks (const char *config, int argc, char **argv);
int cmd_qos (const char *config, int argc, char **argv);
int cmd_lldp (const char *config, int argc, char **argv);
int cmd_topo (const char *config, int argc, char **argv);

/* Logs and prints the command's error once (one line); returns 2.  */
int cmd_fail (const char *cmd, roce_error_t err);
/* An unknown argument, shown escaped; returns 2.  */
int cmd_bad_argument (const char *cmd, const char *arg);
/* A command's document: to stdout, or replacing OUTPUT atomically.  */
int cmd_emit (const char *output, const char *text, roce_error_t *err);
/* The query profile (no capability, a read-only filter; NETWORK: TCP too);
 * prints why on failure.  */
int cmd_confine_query (const char *cmd, bool network);

#endif
