/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook check`: the host readiness report, as a table or JSON.  */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "lib/utils.h"
#include "report/check.h"
#include "spec/policy.h"
#include "sys/confine.h"

/* How long --probe waits for the full-size echo of each HCA.  */
#define PROBE_MS 1500

static void
check_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] check [--json | --wide] [--hca H] [--nfd FILE] [--probe]\n"
         "  a host readiness report for every HCA of the policy (or H only):\n"
         "  QoS (PFC, DSCP trust, ECN, MTU), the switch port's LLDP (qos.switch), PFC stall\n"
         "  prevention, GPUDirect RDMA, the rdma_cm default ToS and RoCE mode, RoCE v2\n"
         "  GIDs, RDMA netns mode.  The table fits 100 columns (fixes numbered below\n"
         "  it); --wide: every column in full.  --nfd FILE: node-feature-discovery labels\n"
         "  (roce.io/ready, lossless, switch-pfc, ipv4, ipv6, hca.<name>, hca.<name>.family,\n"
         "  gid-room), replaced atomically.\n"
         "  --probe: DF echoes of the full MTU from each rail to hcas.<h>.probe or its\n"
         "  gateway (a path-mtu row), sent as a container on the rail would: from a\n"
         "  macvlan with a pool address leased for the probe's few seconds.\n"
         "  Exit 0: nothing blocks; 1: a finding\n"
         "  refuses containers (qos.mode / qos.switch enforce); 2: the check cannot run.\n",
         out);
}

int
cmd_check (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  struct check_report r = { 0 };
  const char *only = NULL, *nfd = NULL;
  bool json = false, wide = false, probe = false;
  const struct cmd_opt opts[] = {
    { "json", 'j', &json, NULL },   { "wide", 'w', &wide, NULL }, { "nfd", 'n', NULL, &nfd },
    { "probe", 'p', &probe, NULL }, { "hca", 'H', NULL, &only },  { NULL, 0, NULL, NULL },
  };
  int code = cmd_options (argc, argv, opts, check_usage);

  if (code != CMD_GO)
    return code;
  if (optind < argc)
    return cmd_bad_argument (argv[optind], err);
  if (probe)
    {
      /* The probe makes a rail as a start's network step does (a lease, a
       * macvlan in a namespace of its own: net_probe_rail), then sends on
       * a raw ICMP socket from there: PHASE_NETWORK, no other namespace.  */
      if (confine_caps (CONFINE_PROBE, err) < 0 || confine_phase (PHASE_NETWORK, err) < 0
          || confine_seccomp_net (CONFINE_PROBE, true, err) < 0)
        {
          roce_error_wrap (err, "confining the hook");
          return 2;
        }
    }
  else if (cmd_confine_query (true, err) < 0)
    return 2;
  if (policy_load (config_path, &p, err) < 0 || check_report_build (p, only, &r, err) < 0)
    return 2;
  if (probe)
    check_report_probe (&r, PROBE_MS);
  code = check_report_status (&r);
  if (nfd)
    {
      cleanup_free char *labels = check_render_nfd (&r);
      if (cmd_emit (nfd, labels, err) < 0)
        {
          check_report_clear (&r);
          roce_error_wrap (err, "--nfd");
          return 2;
        }
    }
  if (json)
    {
      if (check_render_json (stdout, &r, code, err) < 0)
        code = 2;
    }
  else
    check_render_text (stdout, &r, wide);
  fflush (stdout);
  check_report_clear (&r);
  return code;
}
