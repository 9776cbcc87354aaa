/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook cdi`: a CDI spec (kind roce.io/hca) for the policy's HCAs.  */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "devices/cdi.h"
#include "lib/utils.h"
#include "spec/policy.h"

int
cmd_cdi (const char *config_path, int argc, char **argv)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  const char *output = NULL;

  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--output") == 0 && i + 1 < argc)
      output = argv[++i];
    else
      {
        fprintf (stderr, "usage: roce-hook [--config F] cdi [--output FILE]\n");
        return 2;
      }
  if (cmd_confine_query ("cdi", false) < 0)
    return 2;
  if (policy_load (config_path, &p, &err) < 0 || (text = cdi_spec_text (p, &err)) == NULL
      || cmd_emit (output, text, &err) < 0)
    return cmd_fail ("cdi", err);
  return 0;
}
