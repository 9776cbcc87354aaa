/* SPDX-License-Identifier: Apache-2.0 */
/* Parses a policy file with the engine's own parser and prints the error, if
 * any: tests use it to prove that the policies we ship (config/, the
 * Kubernetes ConfigMap) are ones the hook accepts.  */
#include <stdio.h>

#include "lib/utils.h"
#include "spec/policy.h"

int
main (int argc, char **argv)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  if (argc != 2)
    {
      fprintf (stderr, "usage: policy-lint FILE\n");
      return 2;
    }
  if (policy_load (argv[1], &p, &err) < 0)
    {
      fprintf (stderr, "%s\n", err->msg);
      return 1;
    }
  printf ("ok: %zu HCAs, qos %s\n", p->n_hcas, qos_mode_name (p->qos.mode));
  return 0;
}
