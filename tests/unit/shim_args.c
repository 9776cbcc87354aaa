/* SPDX-License-Identifier: Apache-2.0 */
/* The shim's command line as the shim tests parse it (test_shim.c,
 * test_shim_record.c).  */
#define _GNU_SOURCE
#include "lib/utils.h"
#include "shim.h"
#include "unit.h"

struct shim_args
shim_parse_ok (const char *const *argv)
{
  cleanup_error roce_error_t err = NULL;
  struct shim_args a;
  int argc = 0;
  while (argv[argc])
    argc++;
  cr_assert_eq (shim_parse_argv (argc, (char *const *) argv, &a, &err), 0, "%s",
                err ? err->msg : "");
  return a;
}
