/* SPDX-License-Identifier: Apache-2.0 */
/* `check --nfd FILE`: the report as node-feature-discovery feature labels
 * (a features.d file of "name=value" lines), so that a pod's node affinity
 * can ask for a node proven ready, lossless, with the switch's PFC seen.  */
#define _GNU_SOURCE
#include <string.h>
#include <sys/socket.h>

#include "lib/utils.h"
#include "report/check.h"
#include "topo/topo.h"

/* NFD's label names: <prefix>/<name>, name at most 63 bytes.  */
#define LABEL_NAME_MAX 63

static bool
host_lossless_check (const char *check)
{
  return strcmp (check, "mtu") == 0 || strcmp (check, "macvlan-mtu") == 0
         || strcmp (check, "pfc") == 0 || strcmp (check, "dscp") == 0;
}

/* The worst switch-pfc verdict of the HCAs: 2 fail, 1 unknown, 0 ok.  */
static int
switch_pfc_rank (const struct check_report *r)
{
  int worst = r->n ? 0 : 1;
  for (size_t i = 0; i < r->n; i++)
    {
      bool seen = false;
      for (size_t k = 0; k < r->hcas[i].f.n; k++)
        {
          const struct finding *x = &r->hcas[i].f.v[k];
          int rank;
          if (strcmp (x->check, "switch-pfc") != 0)
            continue;
          seen = true;
          rank = x->status == FINDING_OK ? 0 : x->status == FINDING_FAIL ? 2 : 1;
          if (rank > worst)
            worst = rank;
        }
      if (! seen && worst < 1)
        worst = 1; /* not looked at (qos.switch off, or no netdev) */
    }
  return worst;
}

static bool
lossless (const struct check_report *r)
{
  if (r->n == 0)
    return false;
  for (size_t i = 0; i < r->n; i++)
    {
      if (! r->hcas[i].probed)
        return false;
      for (size_t k = 0; k < r->hcas[i].f.n; k++)
        {
          const struct finding *x = &r->hcas[i].f.v[k];
          if (host_lossless_check (x->check) && x->status != FINDING_OK)
            return false;
          if (qos_finding_is_switch (x) && x->status == FINDING_FAIL)
            return false;
        }
    }
  return true;
}

char *
check_render_nfd (const struct check_report *r)
{
  static const char *const pfc_words[] = { "ok", "unknown", "fail" };
  cleanup_free char *hcas = xstrdup ("");
  cleanup_free char *topo = r->topo ? topo_view_nfd (r->topo) : xstrdup ("");
  bool have_room = false, probed = false;
  bool every[2] = { true, true }; /* IPv4, IPv6: on every probed HCA's rail */
  unsigned room = 0;
  char room_line[48] = "";

  for (size_t i = 0; i < r->n; i++)
    {
      const struct check_hca *hr = &r->hcas[i];
      if (! hr->probed || strlen ("hca.") + strlen (hr->h->name) > LABEL_NAME_MAX)
        continue;
      probed = true;
      str_list_add (&hcas, "", "roce.io/hca.%s=true\n", hr->h->name);
      if (strlen ("hca..family") + strlen (hr->h->name) <= LABEL_NAME_MAX)
        str_list_add (&hcas, "", "roce.io/hca.%s.family=%s\n", hr->h->name,
                      check_rail_families (hr));
      for (int f = 0; f < 2; f++)
        if (policy_hca_net (hr->h, f ? AF_INET6 : AF_INET) == NULL)
          every[f] = false;
      if (hr->no_ipv6)
        every[1] = false;
      for (size_t k = 0; k < hr->n_gid_use; k++)
        {
          unsigned left = check_gid_room (hr, &hr->gid_use[k]);
          if (! have_room || left < room)
            room = left;
          have_room = true;
        }
    }
  if (have_room)
    snprintf (room_line, sizeof (room_line), "roce.io/gid-room=%u\n", room);
  return xasprintf ("# roce-hook check --nfd: policy %s\n"
                    "roce.io/ready=%s\n"
                    "roce.io/lossless=%s\n"
                    "roce.io/switch-pfc=%s\n"
                    "roce.io/ipv4=%s\n"
                    "roce.io/ipv6=%s\n"
                    "%s%s%s",
                    r->p->path, check_report_status (r) == 0 ? "true" : "false",
                    lossless (r) ? "true" : "false", pfc_words[switch_pfc_rank (r)],
                    probed && every[0] ? "true" : "false", probed && every[1] ? "true" : "false",
                    hcas, room_line, topo);
}
