/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook nri [--socket PATH]`: the NRI plugin (hook/nri/nri.h), until
 * stopped.  `--guard`: the guard plugin instead; `--guard-hook`: the
 * guard as an OCI hook (prestart or createRuntime, the state on stdin:
 * CRI-O's hooks.d).  A plugin the runtime starts itself (its plugin_path)
 * gets its socket, name and index from the environment
 * (NRI_PLUGIN_SOCKET, NRI_PLUGIN_NAME, NRI_PLUGIN_IDX).  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "nri/nri.h"
#include "lib/utils.h"

/* The fd NRI hands a plugin it starts: a small number, open.  */
static int
handed_socket (int *fd, roce_error_t *err)
{
  const char *v = getenv ("NRI_PLUGIN_SOCKET");
  uint64_t n;
  *fd = -1;
  if (v == NULL)
    return 0;
  if (parse_u64 (v, &n) < 0 || n < 3 || n > 1024 || fcntl (n, F_GETFD) < 0)
    {
      cleanup_free char *s = str_escape (v);
      return roce_error_make (err, EINVAL,
                              "NRI_PLUGIN_SOCKET: the number of an open socket vs `%s`", s);
    }
  *fd = (int) n;
  return 0;
}

static void
nri_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] nri [--socket PATH] [--guard]\n"
         "       roce-hook nri --guard-hook   (the OCI state on stdin)\n"
         "  the NRI plugin on the runtime's NRI socket (default " NRI_SOCKET_DEFAULT "), until\n"
         "  SIGTERM: RoCE pods without a shim or a RuntimeClass (docs/nri.md).  --guard: the\n"
         "  guard plugin, refusing a RoCE pod's container the plugin did not prepare;\n"
         "  --guard-hook: the guard as an OCI hook (CRI-O's hooks.d).  Exit 0: stopped (the\n"
         "  hook: the container may run); 1: the hook refused; 2: cannot run.\n",
         out);
}

int
cmd_nri (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  /* main runs `nri` in a program that loads libraries (roce-hook-engine,
   * or a dynamic roce-hook): etcd's client is there for `cluster`.  */
  struct nri_opts o = { .config_path = config_path, .fd = -1, .linkage = ROCE_LINKAGE_LOADS };
  bool guard = false, hook = false;
  const struct cmd_opt opts[] = {
    { "socket", 's', NULL, &o.socket_path },
    { "guard", 'g', &guard, NULL },
    { "guard-hook", 'G', &hook, NULL },
    { NULL, 0, NULL, NULL },
  };
  int go = cmd_options (argc, argv, opts, nri_usage);

  if (go != CMD_GO)
    return go;
  if (optind < argc)
    return cmd_bad_argument (argv[optind], err);
  if (guard)
    o.role = NRI_ROLE_GUARD;
  if (hook)
    {
      /* A hook's refusal is the container's line, not the command's.  */
      cleanup_error roce_error_t refusal = NULL;
      cleanup_free char *id = NULL;
      if (nri_guard_hook (STDIN_FILENO, &id, &refusal) < 0)
        {
          roce_log (ROCE_LOG_ERR, "nri guard refused: %s", refusal->msg);
          roce_log_refusal (stderr, "roce-hook", id ? id : "-", refusal->msg);
          return 1;
        }
      return 0;
    }
  if (handed_socket (&o.fd, err) < 0)
    return 2;
  if (o.fd >= 0)
    {
      o.once = true;
      o.name = getenv ("NRI_PLUGIN_NAME");
      o.index = getenv ("NRI_PLUGIN_IDX");
    }
  /* Its lines are the node's log (kubectl logs of the DaemonSet).  */
  roce_log_stderr (ROCE_LOG_INFO);
  return nri_run (&o, err) < 0 ? 2 : 0;
}
