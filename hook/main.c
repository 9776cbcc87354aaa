/* SPDX-License-Identifier: Apache-2.0 */
/* roce-hook's main: the OCI stages (prestart, createRuntime, poststop) and
 * the table of operator commands (hook/cmd/).  */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "ipam/ipam.h"
#include "lib/linkage.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "stage.h"
#include "sys/confine.h"

#ifndef ROCE_VERSION
#define ROCE_VERSION "0.0.0"
#endif

static void
usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] [--cdi] prestart|createRuntime|poststop  (OCI state on "
         "stdin)\n"
         "       roce-hook [--config F] leases [--json]   the IP leases held\n"
         "       roce-hook [--config F] gc                release leases whose netns is gone\n"
         "       roce-hook [--config F] blocks [--json] [--all] | blocks release --node N\n"
         "       roce-hook [--config F] check [--json | --wide] [--hca H] [--nfd FILE] [--probe]\n"
         "       roce-hook [--config F] cdi [--output FILE]   a CDI spec (kind roce.io/hca)\n"
         "       roce-hook [--config F] metrics [--hca H] [--output FILE]   Prometheus text\n"
         "       roce-hook [--config F] qos apply [--dry-run] [--hca H] [--only LIST]\n"
         "       roce-hook [--config F] lldp --watch | --listen SECONDS [--hca H]   the switch's "
         "LLDP\n"
         "       roce-hook [--config F] topo [--json] [--gpus SPEC]   GPUs, HCAs, classes; "
         "auto's choice\n"
         "       roce-hook [--config F] nri [--socket PATH] [--guard]   the NRI plugin (or its "
         "guard)\n"
         "       roce-hook [--config F] nri --guard-hook   the guard as an OCI hook (state on "
         "stdin)\n"
         "       roce-hook version\n"
         "config: --config F, else $ROCE_HOOK_CONFIG, else " ROCE_DEFAULT_CONFIG "\n",
         out);
}

/* roce-hook's linkage (linkage.h): a static roce-hook hands what loads a
 * library to roce-hook-engine.  */
static const enum roce_linkage linkage = ROCE_LINKAGE_OF_MAIN;

static int
run_stage (enum roce_stage stage, const char *config_path, bool cdi, char **argv)
{
  struct roce_ctx ctx = { .config_path = config_path,
                          .state_fd = STDIN_FILENO,
                          .stage = stage,
                          .linkage = linkage,
                          .cdi = cdi,
                          ROCE_CTX_INIT };
  cleanup_error roce_error_t err = NULL;
  int ret = roce_stage_run (&ctx, &err);

  /* Nothing was made: the start goes on in roce-hook-engine.  */
  if (ret < 0 && roce_stage_needs_engine (&ctx, &err))
    linkage_handover (ctx.state_raw, ctx.state_raw_len, argv, &err);
  if (ret < 0 && stage == ROCE_STAGE_POSTSTOP)
    {
      /* Poststop never fails: the container is gone whatever we say, the
       * runtime would only print our line again after the start's refusal,
       * and gc recovers what could not be released.  Logged, not printed. */
      roce_log (ROCE_LOG_ERR, "poststop: %s (roce-hook gc releases what is left)", err->msg);
      ret = 0;
    }
  if (ret < 0)
    {
      /* Under crun the line goes to the runtime's stderr through pidfd_getfd,
       * which needs ptrace access to the (possibly non-dumpable) runtime.  */
      confine_phase (PHASE_INSPECT, NULL);
      roce_log (ROCE_LOG_ERR, "%s refused: %s", roce_stage_name (stage), err->msg);
      roce_log_refusal (stderr, "roce-hook", roce_ctx_id (&ctx), err->msg);
    }
  roce_ctx_clear (&ctx);
  return ret < 0 ? 1 : 0;
}

/* The operator commands (hook/cmd/, cmd.h), argv[0] their name.  */
static const struct subcommand
{
  const char *name;
  const char *shown; /* how its error line names it */
  cmd_fn *run;
  bool logs;  /* writes to syslog / log_file */
  bool loads; /* may load a library (libibverbs, etcd's libcurl): linkage.h */
} subcommands[] = {
  { "cdi", "cdi", cmd_cdi, false, false },
  { "check", "check", cmd_check, false, true },
  { "metrics", "metrics", cmd_metrics, false, false },
  { "leases", "leases", cmd_leases, true, false },
  { "gc", "gc", cmd_gc, true, true },
  { "blocks", "blocks", cmd_blocks, true, true },
  { "qos", "qos apply", cmd_qos, true, false },
  { "lldp", "lldp", cmd_lldp, false, false },
  { "topo", "topo", cmd_topo, false, false },
  { "nri", "nri", cmd_nri, true, true },
};

/* A command run, in roce-hook-engine when it loads a library and this
 * program cannot; its error, if any, printed once and logged.  */
static int
run_command (const struct subcommand *sc, const char *config, int argc, char **argv,
             char **whole_argv)
{
  cleanup_error roce_error_t err = NULL;
  int ret;

  if (sc->loads && ! linkage_can_load (linkage))
    ret = linkage_exec_engine (whole_argv, &err) < 0 ? 2 : 0; /* back only on failure */
  else
    {
      if (sc->logs)
        roce_log_open ("roce-hook");
      ret = sc->run (config, argc, argv, &err);
    }
  if (err)
    {
      roce_log (ROCE_LOG_ERR, "%s: %s", sc->shown, err->msg);
      roce_log_refusal (stderr, "roce-hook", sc->shown, err->msg);
    }
  if (sc->logs)
    roce_log_close ();
  return ret;
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "config", required_argument, NULL, 'c' },
    { "cdi", no_argument, NULL, 'C' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *config_cli = NULL;
  bool cdi = false;
  enum roce_stage stage;
  const char *cmd;
  int c, ret;

  /* Stop at the first non-option: the subcommand has options of its own.  */
  while ((c = getopt_long (argc, argv, "+c:h", opts, NULL)) != -1)
    switch (c)
      {
        case 'c':
          config_cli = optarg;
          break;
        case 'C':
          cdi = true;
          break;
        case 'h':
          usage (stdout);
          return 0;
        default:
          usage (stderr);
          return 2;
      }
  if (optind >= argc)
    {
      usage (stderr);
      return 2;
    }
  cmd = argv[optind];
  if (strcmp (cmd, "version") == 0 || strcmp (cmd, "--version") == 0)
    {
      printf ("roce-hook %s\nlease store format %d (reads %d-%d)\n", ROCE_VERSION,
              LEASE_STORE_FORMAT, LEASE_STORE_FORMAT_OLDEST, LEASE_STORE_FORMAT);
      return 0;
    }
  if (roce_stage_parse (cmd, &stage) == 0)
    {
      roce_log_open ("roce-hook");
      ret = run_stage (stage, policy_default_path (config_cli), cdi, argv);
      roce_log_close ();
      return ret;
    }
  for (size_t i = 0; i < ARRAY_SIZE (subcommands); i++)
    if (strcmp (cmd, subcommands[i].name) == 0)
      return run_command (&subcommands[i], policy_default_path (config_cli), argc - optind,
                          argv + optind, argv);
  roce_print (stderr, "roce-hook: unknown command `%s`", cmd);
  usage (stderr);
  return 2;
}
