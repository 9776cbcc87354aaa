/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook qos apply`: brings the host's QoS to the policy (plan, print,
 * apply).  */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "qos/qos_apply.h"
#include "spec/policy.h"
#include "sys/confine.h"

static void
qos_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] qos apply [--dry-run] [--hca H] [--only LIST]\n"
         "  brings each policy HCA's netdev (or H's) to the policy: PFC on pfc_priority,\n"
         "  DSCP dscp -> pfc_priority (trust dscp), RoCE ECN NP/RP, PFC stall prevention\n"
         "  (qos.pfc_stall_prevention), rdma_cm default ToS and RoCE v2 mode.  LIST: a comma\n"
         "  list of pfc, dscp, ecn, pfc-stall, rdma-cm.  Changes only what differs.\n"
         "  Exit 0: done (or nothing to do); 1: refused or failed, nothing left half-applied;\n"
         "  2: cannot run.\n",
         out);
}

/* `qos apply [--dry-run] [--hca H] [--only LIST]`: plan, print, apply.  */
int
cmd_qos (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  const char *hca = NULL, *only = NULL;
  unsigned groups = QA_ALL;
  bool dry_run = false;
  const struct cmd_opt opts[] = {
    { "dry-run", 'n', &dry_run, NULL },
    { "hca", 'H', NULL, &hca },
    { "only", 'o', NULL, &only },
    { NULL, 0, NULL, NULL },
  };
  int go;

  if (argc < 2 || strcmp (argv[1], "apply") != 0)
    {
      qos_usage (argc >= 2 && strcmp (argv[1], "--help") == 0 ? stdout : stderr);
      return argc >= 2 && strcmp (argv[1], "--help") == 0 ? 0 : 2;
    }
  argc--, argv++;
  if ((go = cmd_options (argc, argv, opts, qos_usage)) != CMD_GO)
    return go;
  if (only && qos_apply_parse_only (only, &groups, err) < 0)
    return 2;
  if (optind < argc)
    return cmd_bad_argument (argv[optind], err);
  /* A dry run only reads (a query); the apply has its own profile:
   * CAP_NET_ADMIN alone (RTM_SETDCB, ETHTOOL_STUNABLE).  Neither mounts,
   * enters namespaces, loads BPF or runs anything.  */
  if (confine_caps (dry_run ? CONFINE_QUERY : CONFINE_QOS, err) < 0
      || confine_phase (dry_run ? PHASE_NONE : PHASE_QOS, err) < 0
      || confine_seccomp (dry_run ? CONFINE_QUERY : CONFINE_QOS, err) < 0
      || policy_load (config_path, &p, err) < 0)
    return 2;
  if (p->log_file)
    {
      /* What the host was changed to goes to the policy's log as well (a
       * log_file that cannot be opened is said, and the apply goes on).  */
      cleanup_error roce_error_t lerr = NULL;
      if (roce_log_set_file (p->log_file, &lerr) < 0)
        roce_log_refusal (stderr, "roce-hook", "qos apply", lerr->msg);
    }
  if (qos_apply_command (p, hca, groups, dry_run, stdout, err) < 0)
    /* An --hca the policy lacks is a usage error; the rest are refusals. */
    return hca && policy_find_hca (p, hca) == NULL ? 2 : 1;
  return 0;
}
