#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cdi.h"
#include "confine.h"
#include "engine.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "utils.h"

#ifndef ROCE_VERSION
#define ROCE_VERSION "0.0.0"
#endif

static void
usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] prestart|createRuntime|poststop  (OCI state on stdin)\n"
         "       roce-hook [--config F] leases [--json]   the IP leases held\n"
         "       roce-hook [--config F] gc                release leases whose netns is gone\n"
         "       roce-hook [--config F] check [--json] [--hca H]\n"
         "       roce-hook [--config F] cdi [--output FILE]   a CDI spec (kind roce.io/hca)\n"
         "       roce-hook [--config F] metrics [--hca H] [--output FILE]   Prometheus text\n"
         "       roce-hook version\n"
         "config: --config F, else $ROCE_HOOK_CONFIG, else " ROCE_DEFAULT_CONFIG "\n",
         out);
}

static int
run_stage (enum roce_stage stage, const char *config_path)
{
  struct roce_ctx ctx = { .config_path = config_path, .state_fd = STDIN_FILENO, .stage = stage,
                          ROCE_CTX_INIT };
  cleanup_error roce_error_t err = NULL;
  int ret = roce_stage_run (&ctx, &err);

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

/* `leases [--json]` and `gc`: exit 0 done, 2 cannot run.  */
static int
run_command (const char *cmd, int argc, char **argv, const char *config_path)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  bool json = false;
  int ret;

  for (int i = 0; i < argc; i++)
    if (strcmp (cmd, "leases") == 0 && strcmp (argv[i], "--json") == 0)
      json = true;
    else
      {
        fprintf (stderr, "roce-hook: %s: unknown argument `%s`\n", cmd, argv[i]);
        return 2;
      }
  if (policy_load (config_path, &p, &err) < 0)
    ret = -1;
  else if (strcmp (cmd, "leases") == 0)
    ret = net_cmd_leases (p, json, stdout, &err);
  else
    ret = net_cmd_gc (p, stdout, &err);
  if (ret < 0)
    {
      roce_log (ROCE_LOG_ERR, "%s: %s", cmd, err->msg);
      roce_log_refusal (stderr, "roce-hook", cmd, err->msg);
      return 2;
    }
  return 0;
}

/* `metrics [--hca H] [--output FILE]`: exit 0 written, 2 cannot run.  */
static int
run_metrics (int argc, char **argv, const char *config_path)
{
  static const struct option opts[] = {
    { "hca", required_argument, NULL, 'H' },
    { "output", required_argument, NULL, 'o' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  const char *hca = NULL, *output = NULL;
  int c;

  optind = 0; /* a fresh getopt over the subcommand's own argv */
  while ((c = getopt_long (argc, argv, "+H:o:", opts, NULL)) != -1)
    switch (c)
      {
      case 'H':
        hca = optarg;
        break;
      case 'o':
        output = optarg;
        break;
      default:
        fputs ("usage: roce-hook [--config F] metrics [--hca H] [--output FILE]\n", stderr);
        return 2;
      }
  if (optind < argc)
    {
      fprintf (stderr, "roce-hook: metrics: unknown argument `%s`\n", argv[optind]);
      return 2;
    }
  if (policy_load (config_path, &p, &err) < 0 || metrics_run (p, hca, output, &err) < 0)
    {
      roce_log_refusal (stderr, "roce-hook", "metrics", err->msg);
      return 2;
    }
  return 0;
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "config", required_argument, NULL, 'c' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *config_cli = NULL;
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
      printf ("roce-hook %s\n", ROCE_VERSION);
      return 0;
    }
  /* The operator commands only read (gc also deletes leases): a tighter
   * filter, and no capability but what gc's liveness scan needs.  */
  if (strcmp (cmd, "cdi") == 0 || strcmp (cmd, "check") == 0 || strcmp (cmd, "leases") == 0
      || strcmp (cmd, "gc") == 0 || strcmp (cmd, "metrics") == 0)
    {
      cleanup_error roce_error_t err = NULL;
      bool gc = strcmp (cmd, "gc") == 0;
      if (confine_caps (gc ? CONFINE_GC : CONFINE_QUERY, &err) < 0
          || confine_phase (gc ? PHASE_NETWORK : PHASE_NONE, &err) < 0
          || confine_seccomp (gc ? CONFINE_GC : CONFINE_QUERY, &err) < 0)
        {
          fprintf (stderr, "roce-hook: confining the hook: %s\n", err->msg);
          return 2;
        }
    }
  if (strcmp (cmd, "cdi") == 0)
    return roce_cdi_main (policy_default_path (config_cli), argc - optind, argv + optind);
  if (strcmp (cmd, "check") == 0)
    return roce_check_main (policy_default_path (config_cli), argc - optind, argv + optind,
                            stdout, stderr);
  if (strcmp (cmd, "metrics") == 0)
    return run_metrics (argc - optind, argv + optind, policy_default_path (config_cli));
  if (roce_stage_parse (cmd, &stage) == 0)
    {
      roce_log_open ("roce-hook");
      ret = run_stage (stage, policy_default_path (config_cli));
      roce_log_close ();
      return ret;
    }
  if (strcmp (cmd, "leases") == 0 || strcmp (cmd, "gc") == 0)
    {
      roce_log_open ("roce-hook");
      ret = run_command (cmd, argc - optind - 1, argv + optind + 1, policy_default_path (config_cli));
      roce_log_close ();
      return ret;
    }
  fprintf (stderr, "roce-hook: unknown command `%s`\n", cmd);
  usage (stderr);
  return 2;
}
