/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook leases [--json]`: the addresses held, by whom, and in what state.  */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "ipam/ipam.h"
#include "lib/utils.h"
#include "spec/policy.h"

int
cmd_leases (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  bool json = false;

  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--json") == 0)
      json = true;
    else
      return cmd_bad_argument (argv[i], err);
  if (cmd_confine_query (false, err) < 0 || policy_load (config_path, &p, err) < 0
      || ipam_list (p, json, stdout, err) < 0)
    return 2;
  return 0;
}
