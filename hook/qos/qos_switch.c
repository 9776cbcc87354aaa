/* SPDX-License-Identifier: Apache-2.0 */
/* The gate's switch checks: what the switch port at the far end of an HCA's
 * netdev advertised in its last LLDP frame (lldp.h's record), against the
 * policy.  switch-lldp (heard within its TTL, and from whom), switch-pfc (PFC on qos.pfc_priority; CEE DCBX as a fallback),
 * switch-dscp (the APP TLV's DSCP entry for qos.dscp), switch-mfs (maximum
 * frame size >= MTU + 18, + 4 tagged), switch-tc (the priority shares its
 * traffic class with no lossy priority).  Each is OK, FAIL (advertised and
 * wrong: blocking under qos.switch enforce) or UNKNOWN (not heard, expired,
 * not advertised: never blocking).  Pure: the record is read by the probe.  */
#define _GNU_SOURCE
#include <string.h>

#include "lib/utils.h"
#include "lldp/lldp.h"
#include "qos/qos.h"

#define ID_MAX (2 * LLDP_TEXT_MAX + 2)

struct sctx
{
  const struct roce_policy *p;
  const struct qos_subject *s;
  const struct lldp_seen *sw;
  struct findings *out;
  unsigned prio;
  char id[ID_MAX]; /* "leaf-07 Ethernet1/3", "" when nothing was heard */
};

/* Where a NIC's firmware keeps LLDP from the host, and how to stop it.  */
#define FW_AGENTS                                                                                  \
  "a NIC firmware LLDP agent can swallow the frames: mlx5 'mlxconfig -d <pci> set "                \
  "LLDP_NB_RX_MODE_P1=0 LLDP_NB_TX_MODE_P1=0 LLDP_NB_DCBX_P1=0' (and a reset), i40e "              \
  "'ethtool --set-priv-flags %s disable-fw-lldp on', ice 'ethtool --set-priv-flags %s "            \
  "fw-lldp-agent off'"

static struct finding *
add (struct sctx *c, enum finding_status st, const char *check)
{
  struct finding *f = findings_push (c->out, st, false, check, c->s->hca, c->s->probe->netdev);
  /* An advertised mismatch blocks under qos.switch enforce only; what was
   * not heard or not advertised never does.  */
  f->blocking = st == FINDING_FAIL && c->p->qos.sw == QOS_MODE_ENFORCE;
  return f;
}

static char *
where (const struct sctx *c)
{
  if (c->id[0])
    return xasprintf ("switch port %s (%s, %s)", c->id, c->s->probe->netdev, c->s->hca);
  return xasprintf ("the switch port of %s (%s)", c->s->probe->netdev, c->s->hca);
}

static char *
source (const struct sctx *c)
{
  if (c->sw->state == LLDP_SEEN_NONE)
    return xasprintf ("LLDP record %s", c->sw->path ? c->sw->path : "-");
  return xasprintf ("LLDP from %s, heard %lld s ago (TTL %u), %s", c->id[0] ? c->id : "?",
                    (long long) c->sw->age, c->sw->info.ttl, c->sw->path ? c->sw->path : "-");
}

/* Nothing usable was heard: every switch check is UNKNOWN for this reason.  */
static void
not_heard (struct sctx *c)
{
  static const char *const checks[] = { "switch-pfc", "switch-dscp", "switch-mfs", "switch-tc" };
  const char *nd = c->s->probe->netdev;
  for (size_t i = 0; i < ARRAY_SIZE (checks); i++)
    {
      struct finding *f = add (c, FINDING_UNKNOWN, checks[i]);
      cleanup_free char *w = where (c);
      switch (i)
        {
          case 0:
            f->what = xasprintf ("PFC on priority %u at %s", c->prio, w);
            break;
          case 1:
            f->what = xasprintf ("DSCP %u at %s", c->p->qos.dscp, w);
            break;
          case 2:
            f->what = xasprintf ("maximum frame size at %s", w);
            break;
          default:
            f->what = xasprintf ("traffic class of priority %u at %s", c->prio, w);
            break;
        }
      f->expected = xstrdup ("advertised by the switch over LLDP");
      f->found = xasprintf ("not heard: %s", c->sw->detail ? c->sw->detail : "no record");
      f->fix = xasprintf ("run 'roce-hook lldp --watch' (the DaemonSet does) and enable LLDP "
                          "on the switch port; " FW_AGENTS,
                          nd, nd);
      f->source = source (c);
    }
}

static void
check_pfc (struct sctx *c)
{
  const struct lldp_info *in = &c->sw->info;
  uint8_t bit = (uint8_t) (1u << c->prio);
  cleanup_free char *w = where (c);
  char list[32];
  struct finding *f;

  if (in->has_pfc)
    {
      lldp_prio_list (in->pfc_en, list, sizeof (list));
      f = add (c, (in->pfc_en & bit) ? FINDING_OK : FINDING_FAIL, "switch-pfc");
      f->found = xasprintf (
          "PFC on %s (IEEE 802.1Qaz, willing %d, %u classes)%s", list, in->pfc_willing, in->pfc_cap,
          in->pfc_willing ? ": the switch is willing, it may follow the host" : "");
    }
  else if (in->has_cee_pfc)
    {
      bool on = in->cee_pfc_enabled && (in->cee_pfc_en & bit);
      lldp_prio_list (in->cee_pfc_en, list, sizeof (list));
      f = add (c, on ? FINDING_OK : FINDING_FAIL, "switch-pfc");
      f->found = xasprintf ("PFC on %s (CEE DCBX, feature %s)", list,
                            in->cee_pfc_enabled ? "enabled" : "disabled");
    }
  else
    {
      f = add (c, FINDING_UNKNOWN, "switch-pfc");
      f->found = xstrdup ("not advertised (no IEEE or CEE PFC TLV in the switch's LLDP)");
      f->fix = xstrdup ("make the switch send its PFC TLV: NX-OS 'priority-flow-control mode on "
                        "send-tlv' (DCBX on), Cumulus 'nv set interface <swp> lldp dcbx-pfc-tlv "
                        "on' (or RoCE mode)");
    }
  if (f->status == FINDING_FAIL)
    f->fix = xasprintf ("enable PFC on priority %u on the switch port, forced on (NX-OS "
                        "'priority-flow-control mode on', not auto)",
                        c->prio);
  f->what = xasprintf ("PFC on priority %u at %s", c->prio, w);
  f->expected = xasprintf ("enabled on priority %u", c->prio);
  f->source = source (c);
}

static void
check_dscp (struct sctx *c)
{
  const struct lldp_info *in = &c->sw->info;
  unsigned dscp = c->p->qos.dscp;
  uint8_t want = (uint8_t) (1u << c->prio);
  uint8_t udp = in->udp_roce_prio | in->cee_udp_roce_prio;
  cleanup_free char *w = where (c);
  char list[32];
  struct finding *f;

  if (in->has_app && in->n_dscp > 0)
    {
      uint8_t m = in->dscp_prio[dscp];
      lldp_prio_list (m, list, sizeof (list));
      f = add (c, m == want ? FINDING_OK : FINDING_FAIL, "switch-dscp");
      f->found = m == 0 ? xasprintf ("no entry for DSCP %u (%u DSCP entries)", dscp, in->n_dscp)
                        : xasprintf ("DSCP %u -> priority %s", dscp, list);
      if (m != want)
        f->fix = xasprintf ("map DSCP %u to priority %u on the switch (its QoS map for RoCE)", dscp,
                            c->prio);
    }
  else if (udp && ! (udp & want))
    {
      lldp_prio_list (udp, list, sizeof (list));
      f = add (c, FINDING_FAIL, "switch-dscp");
      f->found = xasprintf ("no DSCP entries; RoCE v2 (UDP 4791) -> priority %s", list);
      f->fix
          = xasprintf ("map RoCE (DSCP %u, UDP 4791) to priority %u on the switch", dscp, c->prio);
    }
  else
    {
      f = add (c, FINDING_UNKNOWN, "switch-dscp");
      f->found
          = udp ? xasprintf ("not advertised (no DSCP entries; UDP 4791 -> priority %u)", c->prio)
                : xstrdup (in->has_app ? "not advertised (an APP TLV without DSCP entries)"
                                       : "not advertised (no APP TLV)");
      f->fix = xasprintf ("few switches send DSCP APP entries: check the switch's DSCP %u -> "
                          "priority %u map by hand (Cumulus RoCE mode sends APP TLVs)",
                          dscp, c->prio);
    }
  f->what = xasprintf ("DSCP %u at %s", dscp, w);
  f->expected = xasprintf ("DSCP %u -> priority %u", dscp, c->prio);
  f->source = source (c);
}

static void
check_mfs (struct sctx *c)
{
  const struct lldp_info *in = &c->sw->info;
  const struct qos_probe *pr = c->s->probe;
  bool tagged = c->sw->host_tagged || in->tagged;
  unsigned need = pr->mtu_value + 18 + (tagged ? 4 : 0);
  cleanup_free char *w = where (c);
  struct finding *f;

  if (! in->has_mfs)
    {
      f = add (c, FINDING_UNKNOWN, "switch-mfs");
      f->found = xstrdup ("not advertised (no 802.3 maximum frame size TLV)");
      f->fix = xstrdup ("many switch OSes never send it: prove the path with 'roce-hook check "
                        "--probe'");
    }
  else if (pr->mtu.state != PROBE_OK)
    {
      f = add (c, FINDING_UNKNOWN, "switch-mfs");
      f->found = xasprintf ("%u, but the host MTU is unreadable", in->mfs);
    }
  else if (in->mfs >= need)
    {
      f = add (c, FINDING_OK, "switch-mfs");
      f->found = xasprintf ("%u", in->mfs);
    }
  else
    {
      f = add (c, FINDING_FAIL, "switch-mfs");
      f->found
          = xasprintf ("%u: frames of MTU %u are dropped at the switch", in->mfs, pr->mtu_value);
      f->fix = xasprintf ("set the switch port's MTU to at least %u", need);
    }
  f->what = xasprintf ("maximum frame size at %s", w);
  if (pr->mtu.state == PROBE_OK)
    f->expected
        = xasprintf ("at least %u (MTU %u + 18%s)", need, pr->mtu_value, tagged ? " + 4 VLAN" : "");
  else
    f->expected = xstrdup ("at least the host MTU + 18");
  f->source = source (c);
}

static void
check_tc (struct sctx *c)
{
  const struct lldp_info *in = &c->sw->info;
  const uint8_t *map = in->has_ets ? in->prio_tc : in->has_ets_rec ? in->rec_prio_tc : NULL;
  cleanup_free char *w = where (c);
  struct finding *f;

  if (map == NULL)
    {
      f = add (c, FINDING_UNKNOWN, "switch-tc");
      f->found = xstrdup ("not advertised (no ETS TLV)");
      f->fix = xstrdup ("make the switch send its ETS TLV: Cumulus 'nv set interface <swp> lldp "
                        "dcbx-ets-config-tlv on' (or RoCE mode), NX-OS with DCBX on");
    }
  else
    {
      /* Lossless: what the switch runs PFC on; without a PFC TLV, nothing
       * but our priority is taken for lossless.  */
      uint8_t pfc = in->has_pfc ? in->pfc_en : in->has_cee_pfc ? in->cee_pfc_en : 0;
      unsigned tc = map[c->prio];
      uint8_t lossy = 0, peers = 0;
      char list[32];
      for (unsigned q = 0; q < LLDP_NPRIO; q++)
        if (q != c->prio && map[q] == tc)
          {
            peers |= (uint8_t) (1u << q);
            if (! (pfc & (1u << q)))
              lossy |= (uint8_t) (1u << q);
          }
      f = add (c, lossy ? FINDING_FAIL : FINDING_OK, "switch-tc");
      if (lossy)
        {
          lldp_prio_list (lossy, list, sizeof (list));
          f->found = xasprintf ("TC%u, shared with lossy priorities %s", tc, list);
          f->fix = xasprintf ("give priority %u a traffic class of its own on the switch (ETS "
                              "priority map)",
                              c->prio);
        }
      else if (peers)
        {
          lldp_prio_list (peers, list, sizeof (list));
          f->found = xasprintf ("TC%u, shared with lossless priorities %s", tc, list);
        }
      else
        f->found = xasprintf ("TC%u, alone", tc);
    }
  f->what = xasprintf ("traffic class of priority %u at %s", c->prio, w);
  f->expected = xstrdup ("shared with no lossy priority");
  f->source = source (c);
}

/* Whether the switch was heard, and who it is.  */
static void
check_heard (struct sctx *c)
{
  const struct lldp_seen *sw = c->sw;
  const char *nd = c->s->probe->netdev;
  struct finding *f
      = add (c, sw->state == LLDP_SEEN_OK ? FINDING_OK : FINDING_UNKNOWN, "switch-lldp");

  f->what = xasprintf ("LLDP from the switch port of %s (%s)", nd, c->s->hca);
  f->expected = xstrdup ("heard within its TTL (roce-hook lldp --watch keeps it)");
  if (sw->state == LLDP_SEEN_OK)
    f->found
        = xasprintf ("%s, heard %lld s ago (TTL %u)", c->id, (long long) sw->age, sw->info.ttl);
  else if (sw->state == LLDP_SEEN_EXPIRED)
    f->found = xasprintf ("%s: %s", c->id, sw->detail ? sw->detail : "expired");
  else
    f->found = xasprintf ("not heard: %s", sw->detail ? sw->detail : "no record");
  if (sw->state != LLDP_SEEN_OK)
    f->fix = xasprintf ("run 'roce-hook lldp --watch' (the DaemonSet does) and enable LLDP "
                        "on the switch port; " FW_AGENTS,
                        nd, nd);
  f->source = source (c);
}

void
qos_switch_verdict (const struct roce_policy *p, const struct qos_subject *s, struct findings *out)
{
  struct sctx c = { .p = p, .s = s, .sw = &s->probe->sw, .out = out, .prio = p->qos.pfc_priority };

  if (p->qos.sw == QOS_MODE_OFF || ! s->probe->sw_loaded)
    return;
  if (c.sw->state == LLDP_SEEN_OK || c.sw->state == LLDP_SEEN_EXPIRED)
    lldp_identity (&c.sw->info, c.id, sizeof (c.id));
  check_heard (&c);
  if (c.sw->state != LLDP_SEEN_OK)
    {
      not_heard (&c);
      return;
    }
  check_pfc (&c);
  check_dscp (&c);
  check_mfs (&c);
  check_tc (&c);
}
