/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook blocks`: the address blocks held in etcd, and their release.  */
#define _GNU_SOURCE
#include <stdio.h>

#include "blocks.h"
#include "cmd.h"

int
cmd_blocks (const char *config_path, int argc, char **argv)
{
  return blocks_main (config_path, argc, argv, stdout, stderr);
}
