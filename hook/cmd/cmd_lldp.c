/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook lldp --watch | --listen SECONDS [--hca H]`: hears what the
 * switch port at the far end of each policy netdev says over LLDP and keeps
 * the last frame per netdev under state_dir/lldp (lldp.h); check, metrics
 * and the gate read it from there.  Receive only: confined with CAP_NET_RAW
 * alone and a filter under which no send call succeeds.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "lldp/lldp.h"
#include "spec/policy.h"
#include "sys/confine.h"
#include "sys/sysfs.h"

static void
lldp_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] lldp --watch | --listen SECONDS [--hca H]\n"
         "  listens (never sends) for the switch's LLDP on each policy HCA's netdev (or H's)\n"
         "  and keeps the last frame per netdev in <state_dir>/lldp/<netdev>.json, which\n"
         "  check, metrics and the start gate read (qos.switch).  --watch: until SIGTERM\n"
         "  (the DaemonSet's); --listen: SECONDS, then a line per netdev.  Exit 0: done\n"
         "  (--listen: every netdev heard its switch); 1: a netdev heard nothing;\n"
         "  2: cannot run.\n",
         out);
}

/* The policy's netdevs (or H's), each once.  */
static int
netdevs_of (const struct roce_policy *p, const char *only, char ***out, roce_error_t *err)
{
  cleanup_strv char **v = xmalloc0 (sizeof (char *));
  if (only && policy_find_hca (p, only) == NULL)
    {
      cleanup_free char *names = policy_hca_names (p);
      cleanup_free char *found = xasprintf ("'%s'", only);
      cleanup_free char *fix = xasprintf ("pick one of %s", names);
      return roce_error_refuse (err, "--hca", "an HCA of the policy", found, fix);
    }
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      cleanup_free char *nd = NULL;
      bool dup = false;
      if (only && strcmp (only, p->hcas[i].name) != 0)
        continue;
      if (sysfs_hca_netdev (p, &p->hcas[i], &nd, err) < 0)
        return -1;
      for (size_t k = 0; v[k]; k++)
        dup = dup || strcmp (v[k], nd) == 0;
      if (! dup)
        strv_push (&v, nd);
    }
  *out = steal_pointer (&v);
  return 0;
}

static int
report (const struct roce_policy *p, const struct lldp_port *ports, size_t n, unsigned seconds)
{
  int code = 0;
  for (size_t i = 0; i < n; i++)
    {
      const struct lldp_port *pt = &ports[i];
      cleanup_free char *path = lldp_record_path (p->state_dir, pt->netdev);
      struct lldp_info in;
      cleanup_error roce_error_t err = NULL;

      if (pt->frames > 0 && lldp_decode (pt->frame, pt->len, &in, &err) == 0)
        {
          char id[2 * LLDP_TEXT_MAX + 2], sum[256];
          lldp_identity (&in, id, sizeof (id));
          lldp_summary (&in, sum, sizeof (sum));
          roce_print (stdout, "%s: %s: %s (%llu frame(s), %llu refused; record %s)", pt->netdev, id,
                      sum, (unsigned long long) pt->frames, (unsigned long long) pt->invalid, path);
          continue;
        }
      code = 1;
      roce_print (
          stdout,
          "roce-hook: lldp: %s: an LLDP frame from the switch within %u s vs %s (fix: "
          "enable LLDP on the switch port; a NIC firmware LLDP agent can swallow the frames: "
          "mlx5 mlxconfig LLDP_NB_RX_MODE_P1=0 LLDP_NB_DCBX_P1=0, i40e ethtool "
          "--set-priv-flags %s disable-fw-lldp on, ice ethtool --set-priv-flags %s "
          "fw-lldp-agent off)",
          pt->netdev, seconds,
          pt->fd < 0 && pt->error[0] && pt->invalid == 0 ? pt->error
          : pt->invalid                                  ? "only frames that do not decode"
                                                         : "none",
          pt->netdev, pt->netdev);
    }
  fflush (stdout);
  return code;
}

int
cmd_lldp (const char *config_path, int argc, char **argv, roce_error_t *err)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_strv char **nds = NULL;
  cleanup_free struct lldp_port *ports = NULL;
  const char *only = NULL, *listen = NULL;
  bool watch = false;
  uint64_t secs = 0;
  const struct cmd_opt opts[] = {
    { "watch", 'w', &watch, NULL },
    { "listen", 'l', NULL, &listen },
    { "hca", 'H', NULL, &only },
    { NULL, 0, NULL, NULL },
  };
  int go = cmd_options (argc, argv, opts, lldp_usage);
  size_t n;

  if (go != CMD_GO)
    return go;
  if (listen && (parse_u64 (listen, &secs) < 0 || secs == 0 || secs > 86400))
    {
      roce_error_make (err, EINVAL, "--listen '%s': expected seconds, 1..86400", listen);
      return 2;
    }
  if (optind < argc)
    return cmd_bad_argument (argv[optind], err);
  if (watch == (listen != NULL))
    {
      lldp_usage (stderr);
      return 2;
    }
  /* CAP_NET_RAW for the AF_PACKET sockets, and no send call at all.  */
  if (confine_caps (CONFINE_LISTEN, err) < 0 || confine_phase (PHASE_RAW, err) < 0
      || confine_seccomp (CONFINE_LISTEN, err) < 0 || confine_seccomp_nosend (err) < 0
      || policy_load (config_path, &p, err) < 0 || netdevs_of (p, only, &nds, err) < 0)
    return 2;
  n = strv_len (nds);
  ports = xmalloc0 ((n + 1) * sizeof (*ports));
  if (lldp_listen (p->state_dir, nds, n, (unsigned) secs, watch ? stdout : NULL, ports, err) < 0)
    return 2;
  return watch ? 0 : report (p, ports, n, (unsigned) secs);
}
