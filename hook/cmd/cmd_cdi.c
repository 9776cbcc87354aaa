/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook cdi`: a CDI spec (kind roce.io/hca) for the policy's HCAs.  */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "devices/cdi.h"
#include "lib/utils.h"
#include "spec/policy.h"

/* The roce-hook the spec's hooks run: --hook, else the one beside this
 * program (roce-hook itself, or roce-hook-engine beside it), by its real
 * path.  */
static char *
hook_path (const char *cli)
{
  char self[PATH_MAX];
  if (cli)
    return xstrdup (cli);
  if (realpath ("/proc/self/exe", self) == NULL)
    return xstrdup ("/usr/local/bin/roce-hook");
  return xasprintf ("%s/roce-hook", dirname (self));
}

int
cmd_cdi (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *text = NULL;
  cleanup_free char *hook = NULL;
  cleanup_free char *config = NULL;
  const char *output = NULL, *hook_cli = NULL;
  struct cdi_hooks hooks;

  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--output") == 0 && i + 1 < argc)
      output = argv[++i];
    else if (strcmp (argv[i], "--hook") == 0 && i + 1 < argc && argv[i + 1][0] == '/')
      hook_cli = argv[++i];
    else
      {
        fprintf (stderr, "usage: roce-hook [--config F] cdi [--output FILE] [--hook /PATH]\n");
        return 2;
      }
  hook = hook_path (hook_cli);
  /* The hooks read the policy this spec was made from.  */
  config = realpath (config_path, NULL);
  hooks = (struct cdi_hooks){ .hook = hook, .config = config ? config : config_path };
  if (cmd_confine_query (false, err) < 0 || policy_load (config_path, &p, err) < 0
      || (text = cdi_spec_text (p, &hooks, err)) == NULL || cmd_emit (output, text, err) < 0)
    return 2;
  return 0;
}
