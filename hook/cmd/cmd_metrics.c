/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook metrics`: the node's Prometheus text (a textfile collector's file).  */
#define _GNU_SOURCE
#include <stdio.h>

#include "cmd/cmd.h"
#include "lib/utils.h"
#include "report/metrics.h"
#include "spec/policy.h"

static void
metrics_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] metrics [--hca H] [--output FILE]\n", out);
}

/* `metrics [--hca H] [--output FILE]`: exit 0 written, 2 cannot run.  */
int
cmd_metrics (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *text = NULL;
  struct metrics m = { 0 };
  const char *hca = NULL, *output = NULL;
  const struct cmd_opt opts[] = {
    { "hca", 'H', NULL, &hca },
    { "output", 'o', NULL, &output },
    { NULL, 0, NULL, NULL },
  };
  int go = cmd_options (argc, argv, opts, metrics_usage);

  if (go != CMD_GO)
    return go;
  if (optind < argc)
    return cmd_bad_argument (argv[optind], err);
  if (cmd_confine_query (false, err) < 0 || policy_load (config_path, &p, err) < 0
      || metrics_collect (p, hca, &m, err) < 0)
    return 2;
  text = metrics_render (&m);
  metrics_clear (&m);
  return cmd_emit (output, text, err) < 0 ? 2 : 0;
}
