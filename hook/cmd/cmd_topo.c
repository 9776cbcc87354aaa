/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook topo [--json] [--gpus SPEC]`: the host's GPUs and the policy's
 * HCAs on the PCIe tree, the matrix of classes between them, and with
 * --gpus the HCAs roce.io/hca=auto would choose for those GPUs.  */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/utils.h"
#include "spec/policy.h"
#include "topo/topo.h"

int
cmd_topo (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  const char *gpus = NULL;
  bool json = false;

  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--json") == 0)
      json = true;
    else if (strcmp (argv[i], "--gpus") == 0 && i + 1 < argc)
      gpus = argv[++i];
    else if (strncmp (argv[i], "--gpus=", 7) == 0)
      gpus = argv[i] + 7;
    else
      return cmd_bad_argument (argv[i], err);
  if (cmd_confine_query (false, err) < 0 || policy_load (config_path, &p, err) < 0
      || topo_report (p, gpus, json, stdout, err) < 0)
    return 2;
  return 0;
}
