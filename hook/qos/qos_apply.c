/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook qos apply`: the host's QoS brought to the policy: planned
 * (probed, nothing changed), applied item by item, put back on a failure.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/dcbnl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <netlink/msg.h>

#include "devices/rdmacm.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "qos/qos.h"
#include "qos/qos_apply.h"
#include "qos_int.h"
#include "sys/netlink.h"
#include "sys/sysfs.h"

/* ---- --only ------------------------------------------------------------------- */

static const struct
{
  const char *name;
  unsigned group;
} group_names[] = {
  { "pfc", QA_PFC },         { "dscp", QA_DSCP },      { "ecn", QA_ECN },
  { "pfc-stall", QA_STALL }, { "rdma-cm", QA_RDMACM },
};

int
qos_apply_parse_only (const char *list, unsigned *groups, roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (list);
  char *save = NULL;
  unsigned g = 0;

  for (char *tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save))
    {
      bool known = false;
      for (size_t i = 0; i < ARRAY_SIZE (group_names); i++)
        if (strcmp (tok, group_names[i].name) == 0)
          {
            g |= group_names[i].group;
            known = true;
          }
      if (! known)
        {
          return roce_error_make (
              err, EINVAL, "--only: '%s' is not an item (pfc, dscp, ecn, pfc-stall, rdma-cm)", tok);
        }
    }
  if (g == 0)
    return roce_error_make (err, EINVAL, "--only: no item (pfc, dscp, ecn, pfc-stall, rdma-cm)");
  *groups = g;
  return 0;
}

/* ---- plan --------------------------------------------------------------------- */

static struct qa_item *
push (struct qa_plan *pl, const char *item, const char *hca, const char *netdev)
{
  struct qa_item *it;
  pl->v = xrealloc (pl->v, (pl->n + 1) * sizeof (*pl->v));
  it = &pl->v[pl->n++];
  memset (it, 0, sizeof (*it));
  it->item = item;
  it->hca = xstrdup (hca);
  it->netdev = xstrdup (netdev);
  return it;
}

static void
decide (struct qa_plan *pl, struct qa_item *it, bool same)
{
  it->action = same ? QA_KEEP : QA_CHANGE;
  if (! same)
    pl->changes++;
}

/* An item that cannot be applied here.  A dry run (keep_going) marks it,
 * says why, keeps the first refusal for the end and plans on; otherwise
 * the refusal ends the plan, before anything changes.  */
static int
cannot (struct qa_plan *pl, struct qa_item *it, const char *why, roce_error_t *refusal,
        roce_error_t *err)
{
  if (! pl->keep_going)
    {
      *err = steal_pointer (refusal);
      return -1;
    }
  if (it->action == QA_CHANGE)
    pl->changes--;
  it->action = QA_CANNOT;
  it->op = QA_OP_NONE;
  free (it->why);
  it->why = xstrdup (why);
  if (it->now == NULL)
    it->now = xstrdup ("-");
  pl->cannot++;
  if (pl->blocked == NULL)
    pl->blocked = steal_pointer (refusal);
  else
    roce_error_release (refusal);
  return 0;
}

static char *
pfc_text (uint8_t en)
{
  cleanup_free char *list = dcb_prio_list (en);
  return en ? xasprintf ("on %s", list) : xstrdup ("off everywhere");
}

static int
refuse_dcb (const struct roce_policy *p, const char *hca, const char *netdev,
            const struct qos_probe *pr, unsigned groups, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("DCB of %s (%s)", netdev, hca);
  cleanup_free char *found = NULL;
  cleanup_free char *fix = NULL;
  cleanup_free char *rest = xstrdup ("");

  if (pr->dcb.state == PROBE_UNSUPPORTED)
    found = xasprintf ("%s has no DCB (EOPNOTSUPP); nothing was changed", netdev);
  else if (pr->dcb.state == PROBE_OK)
    found = xasprintf ("%s reports no IEEE PFC state; nothing was changed", netdev);
  else
    found
        = xasprintf ("%s: %s; nothing was changed", netdev, pr->dcb.detail ? pr->dcb.detail : "?");
  /* The other asked items, but pfc-stall where the policy asks for none (it
   * would only be skipped).  */
  for (size_t i = 0; i < ARRAY_SIZE (group_names); i++)
    if ((groups & group_names[i].group) && ! (group_names[i].group & (QA_PFC | QA_DSCP))
        && (group_names[i].group != QA_STALL || p->qos.has_stall))
      str_list_add (&rest, ",", "%s", group_names[i].name);
  fix = xasprintf ("set hcas.%s.netdev in %s to the HCA's DCB-capable PF netdev%s%s", hca, p->path,
                   *rest ? ", or apply the rest alone: --only " : "", rest);
  return roce_error_refuse (err, what, "a netdev whose driver speaks DCB netlink", found, fix);
}

/* The dry run's pfc and dscp items on a netdev without DCB: marked, the
 * refusal kept for the end.  */
static int
cannot_dcb (const struct roce_policy *p, const char *hca, const char *netdev,
            const struct qos_probe *pr, unsigned groups, struct qa_plan *pl)
{
  static const unsigned items[] = { QA_PFC, QA_DSCP };
  const char *why = pr->dcb.state == PROBE_UNSUPPORTED ? "no DCB (EOPNOTSUPP)"
                    : pr->dcb.state == PROBE_OK        ? "no IEEE PFC state"
                                                       : "DCB unreadable";

  for (size_t i = 0; i < ARRAY_SIZE (items); i++)
    if (groups & items[i])
      {
        struct qa_item *it = push (pl, items[i] == QA_PFC ? "pfc" : "dscp", hca, netdev);
        it->now = xstrdup ("-");
        it->target = items[i] == QA_PFC ? xasprintf ("on %u", p->qos.pfc_priority)
                                        : xasprintf ("trust dscp, DSCP %u -> priority %u",
                                                     p->qos.dscp, p->qos.pfc_priority);
        it->action = QA_CANNOT;
        it->why = xstrdup (why);
        pl->cannot++;
      }
  if (pl->blocked == NULL)
    refuse_dcb (p, hca, netdev, pr, groups, &pl->blocked);
  return 0;
}

int
qos_apply_plan_dcb (const struct roce_policy *p, const char *hca, const char *netdev,
                    unsigned groups, const struct qos_probe *pr, struct qa_plan *pl,
                    roce_error_t *err)
{
  unsigned prio = p->qos.pfc_priority, dscp = p->qos.dscp;

  if (pr->dcb.state != PROBE_OK || ((groups & QA_PFC) && ! pr->ieee.has_pfc))
    {
      if (! pl->keep_going)
        return refuse_dcb (p, hca, netdev, pr, groups, err);
      return cannot_dcb (p, hca, netdev, pr, groups, pl);
    }
  if (groups & QA_PFC)
    {
      struct qa_item *it = push (pl, "pfc", hca, netdev);
      bool others_off = p->qos.pfc_others_off;
      uint8_t bit = (uint8_t) (1u << prio);
      uint8_t want = others_off ? bit : (uint8_t) (pr->ieee.pfc_en | bit);
      cleanup_free char *t = pfc_text (want);
      it->now = pfc_text (pr->ieee.pfc_en);
      it->target = xasprintf ("%s (priority %u on, the others %s)", t, prio,
                              others_off ? "off: qos.pfc_other_priorities" : "as they are");
      it->op = QA_OP_PFC;
      it->ieee = pr->ieee;
      it->pfc_en = want;
      decide (pl, it, want == pr->ieee.pfc_en);
    }
  if (groups & QA_DSCP)
    {
      struct qa_item *it = push (pl, "dscp", hca, netdev);
      uint8_t m = dcb_dscp_prios (&pr->ieee, dscp);
      cleanup_free char *list = dcb_prio_list (m);
      if (pr->ieee.n_dscp == 0)
        it->now = xstrdup ("trust pcp (no DSCP entries)");
      else
        it->now = m ? xasprintf ("trust dscp, DSCP %u -> priority %s", dscp, list)
                    : xasprintf ("trust dscp, DSCP %u not mapped", dscp);
      it->target = xasprintf ("trust dscp, DSCP %u -> priority %u", dscp, prio);
      it->op = QA_OP_APP;
      it->ieee = pr->ieee;
      dcb_app_diff (&pr->ieee, dscp, prio, &it->diff);
      decide (pl, it, it->diff.n_add == 0 && it->diff.n_del == 0);
    }
  return 0;
}

static int
plan_dcb (const struct roce_policy *p, const char *hca, const char *netdev, unsigned groups,
          struct qa_plan *pl, roce_error_t *err)
{
  struct qos_probe pr = { 0 };
  int ret;

  qos_probe_dcb (netdev, &pr);
  ret = qos_apply_plan_dcb (p, hca, netdev, groups, &pr, pl, err);
  qos_probe_clear (&pr);
  return ret;
}

/* An attribute file to write: refused when it cannot be read back or
 * written (nothing is half-applied for want of a permission).  */
static int
writable (const char *path, roce_error_t *err)
{
  if (access (path, W_OK) < 0)
    return roce_error_sys (err, errno, "`%s` is not writable (qos apply runs as root)", path);
  return 0;
}

/* sysfs_root or configfs_root refused (root_check): why, in a dry run.  */
struct roots
{
  const char *sysfs; /* NULL: fine */
  const char *configfs;
};

static int
plan_ecn (const struct roce_policy *p, const char *hca, const char *netdev,
          const struct roots *broken, struct qa_plan *pl, roce_error_t *err)
{
  static const char *const names[QOS_ECN_N] = { "ecn-np", "ecn-rp" };
  for (int pt = 0; pt < QOS_ECN_N; pt++)
    {
      struct probe_item pi = { 0 };
      bool on = false;
      struct qa_item *it = push (pl, names[pt], hca, netdev);
      cleanup_error roce_error_t e = NULL;
      cleanup_free char *why = NULL;

      if (p->qos.ecn == QOS_ECN_OFF)
        {
          it->now = xstrdup ("-");
          it->target = xstrdup ("-");
          it->action = QA_SKIP;
          it->why = xstrdup ("the policy asks for none (qos.ecn 'off')");
          continue;
        }
      it->target = xstrdup ("enabled (1)");
      if (broken->sysfs)
        {
          cannot (pl, it, broken->sysfs, &e, err);
          continue;
        }
      qos_probe_ecn (p->sysfs_root, netdev, p->qos.pfc_priority, (enum qos_ecn_point) pt, &pi, &on);
      it->root = p->sysfs_root;
      it->path = xstrdup (pi.source);
      switch (pi.state)
        {
          case PROBE_OK:
            it->now = xstrdup (on ? "enabled (1)" : "disabled (0)");
            it->op = QA_OP_WRITE;
            it->value = xstrdup ("1");
            it->old = xstrdup (on ? "1" : "0");
            decide (pl, it, on);
            if (! on && writable (it->path, &e) < 0)
              why = xstrdup (e->msg);
            break;
          case PROBE_UNSUPPORTED:
            it->now = xstrdup ("-");
            it->action = QA_SKIP;
            it->why = xasprintf ("the driver exposes no %s", pi.source);
            break;
          case PROBE_ERROR:
          default:
            {
              cleanup_free char *what = xasprintf ("RoCE ECN of %s (%s)", netdev, hca);
              cleanup_free char *found = xasprintf ("%s: %s; nothing was changed", pi.source,
                                                    pi.detail ? pi.detail : "unreadable");
              why = xasprintf ("%s: %s", pi.source, pi.detail ? pi.detail : "unreadable");
              roce_error_refuse (&e, what, "a readable 0 or 1", found,
                                 "check the HCA's congestion control (mlxconfig "
                                 "ROCE_CC_PRIO_MASK), or leave ecn out of --only");
            }
            break;
        }
      free (pi.detail);
      free (pi.source);
      if (why && cannot (pl, it, why, &e, err) < 0)
        return -1;
    }
  return 0;
}

static char *
stall_text (unsigned ms)
{
  if (ms == PFC_STORM_PREVENTION_AUTO)
    return xstrdup ("auto");
  return ms ? xasprintf ("%u ms", ms) : xstrdup ("0 (off)");
}

static int
plan_stall (const struct roce_policy *p, const char *hca, const char *netdev, struct qa_plan *pl,
            roce_error_t *err)
{
  struct qa_item *it = push (pl, "pfc-stall", hca, netdev);
  struct probe_item pi = { 0 };
  unsigned ms = 0;
  int ret = 0;

  if (! p->qos.has_stall)
    {
      it->now = xstrdup ("-");
      it->target = xstrdup ("-");
      it->action = QA_SKIP;
      it->why = xstrdup ("the policy asks for none (qos.pfc_stall_prevention)");
      return 0;
    }
  qos_probe_stall (netdev, &pi, &ms);
  it->target = stall_text (p->qos.stall_ms);
  if (pi.state != PROBE_OK)
    {
      cleanup_error roce_error_t e = NULL;
      cleanup_free char *what = xasprintf ("PFC stall prevention of %s (%s)", netdev, hca);
      cleanup_free char *exp = xasprintf ("%s (qos.pfc_stall_prevention)", it->target);
      cleanup_free char *why = xasprintf ("%s: %s", netdev, pi.detail ? pi.detail : "unreadable");
      cleanup_free char *found = xasprintf ("%s; nothing was changed", why);
      cleanup_free char *fix = xasprintf ("remove qos.pfc_stall_prevention from %s, or leave "
                                          "pfc-stall out of --only",
                                          p->path);
      roce_error_refuse (&e, what, exp, found, fix);
      ret = cannot (pl, it, why, &e, err);
    }
  else
    {
      it->now = stall_text (ms);
      it->op = QA_OP_STALL;
      it->stall = p->qos.stall_ms;
      it->stall_old = ms;
      /* The driver reports the timeout "auto" chose, never "auto".  */
      decide (pl, it,
              p->qos.stall_ms == PFC_STORM_PREVENTION_AUTO ? ms != 0 : ms == p->qos.stall_ms);
    }
  free (pi.detail);
  free (pi.source);
  return ret;
}

/* The rows of an HCA's rdma_cm defaults, port by port, when none can be
 * applied: each marked, the refusal kept by the first.  */
static int
cannot_rdmacm (const struct roce_policy *p, const char *hca, const char *netdev,
               const struct rdmacm_probe *cm, const char *why, roce_error_t *refusal,
               struct qa_plan *pl, roce_error_t *err)
{
  unsigned tos = rdmacm_target_tos (p);
  size_t n = cm && cm->n ? cm->n : 1;

  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 2; k++)
      {
        struct qa_item *it = push (pl, k == 0 ? "rdma-cm-tos" : "rdma-cm-mode", hca, netdev);
        if (cm && cm->n)
          it->target
              = k == 0 ? xasprintf ("port %u: %u (DSCP %u)", cm->ports[i].port, tos, p->qos.dscp)
                       : xasprintf ("port %u: %s", cm->ports[i].port, RDMACM_MODE_V2);
        else
          it->target
              = k == 0 ? xasprintf ("%u (DSCP %u)", tos, p->qos.dscp) : xstrdup (RDMACM_MODE_V2);
        if (cannot (pl, it, why, refusal, err) < 0)
          return -1;
      }
  return 0;
}

static int
plan_rdmacm (const struct roce_policy *p, const char *hca, const char *netdev,
             const struct roots *broken, struct qa_plan *pl, roce_error_t *err)
{
  struct rdmacm_probe cm;
  unsigned tos = rdmacm_target_tos (p);
  cleanup_error roce_error_t e = NULL;
  int ret = 0;

  if (broken->configfs)
    return cannot_rdmacm (p, hca, netdev, NULL, broken->configfs, &e, pl, err);
  if (rdmacm_probe_run (p, hca, &cm, &e) < 0)
    {
      cleanup_free char *why = xstrdup (e->msg);
      return cannot_rdmacm (p, hca, netdev, NULL, why, &e, pl, err);
    }
  if (cm.state == RDMACM_ABSENT)
    {
      cleanup_free char *what = xasprintf ("rdma_cm defaults of %s", hca);
      cleanup_free char *found = xasprintf ("no %s; nothing was changed", cm.root);
      cleanup_free char *why = xasprintf ("no %s (modprobe rdma_cm)", cm.root);
      roce_error_refuse (&e, what, "rdma_cm in configfs", found,
                         "modprobe rdma_cm and mount configfs (mount -t configfs none "
                         "/sys/kernel/config); or leave rdma-cm out of --only");
      ret = cannot_rdmacm (p, hca, netdev, &cm, why, &e, pl, err);
      goto out;
    }
  if (cm.n == 0)
    {
      struct qa_item *it = push (pl, "rdma-cm-tos", hca, netdev);
      it->now = xstrdup ("-");
      it->target = xstrdup ("-");
      it->action = QA_SKIP;
      it->why = xstrdup ("the HCA lists no ports in sysfs");
    }
  for (size_t i = 0; i < cm.n && ret == 0; i++)
    {
      const struct rdmacm_port *pt = &cm.ports[i];
      for (int k = 0; k < 2 && ret == 0; k++)
        {
          bool is_tos = k == 0;
          const struct probe_item *pi = is_tos ? &pt->tos : &pt->mode;
          struct qa_item *it = push (pl, is_tos ? "rdma-cm-tos" : "rdma-cm-mode", hca, netdev);
          cleanup_free char *why = NULL;
          it->op = QA_OP_WRITE;
          it->root = p->configfs_root;
          it->path = xstrdup (is_tos ? pt->tos_path : pt->mode_path);
          it->value = is_tos ? xasprintf ("%u", tos) : xstrdup (RDMACM_MODE_V2);
          it->target = is_tos ? xasprintf ("port %u: %u (DSCP %u)", pt->port, tos, p->qos.dscp)
                              : xasprintf ("port %u: %s", pt->port, RDMACM_MODE_V2);
          if (cm.state == RDMACM_NO_GROUP)
            {
              it->now = xasprintf ("port %u: rdma_cm's default (no group)", pt->port);
              it->group = xstrdup (cm.group);
              decide (pl, it, false);
              if (access (cm.root, W_OK) < 0)
                {
                  roce_error_sys (&e, errno, "`%s` is not writable (qos apply runs as root)",
                                  cm.root);
                  why = xstrdup (e->msg);
                  ret = cannot (pl, it, why, &e, err);
                }
              continue;
            }
          if (pi->state != PROBE_OK)
            {
              cleanup_free char *what = xasprintf ("rdma_cm defaults of %s port %u", hca, pt->port);
              cleanup_free char *found = xasprintf ("%s: %s; nothing was changed", it->path,
                                                    pi->detail ? pi->detail : "unreadable");
              why = xasprintf ("%s: %s", it->path, pi->detail ? pi->detail : "unreadable");
              roce_error_refuse (&e, what, "readable configfs attributes", found,
                                 "check that rdma_cm made the group's ports, or leave "
                                 "rdma-cm out of --only");
              ret = cannot (pl, it, why, &e, err);
              continue;
            }
          if (is_tos)
            {
              it->now = xasprintf ("port %u: %u (DSCP %u)", pt->port, pt->tos_value,
                                   pt->tos_value >> 2);
              it->old = xasprintf ("%u", pt->tos_value);
              decide (pl, it, pt->tos_value == tos);
            }
          else
            {
              it->now = xasprintf ("port %u: %s", pt->port, pt->mode_value);
              it->old = xstrdup (pt->mode_value);
              decide (pl, it, strcmp (pt->mode_value, RDMACM_MODE_V2) == 0);
            }
          if (it->action == QA_CHANGE && writable (it->path, &e) < 0)
            {
              why = xstrdup (e->msg);
              ret = cannot (pl, it, why, &e, err);
            }
        }
    }
out:
  rdmacm_probe_clear (&cm);
  return ret;
}

/* Every asked item of an HCA whose netdev is not known: none can be
 * planned.  */
static int
cannot_hca (const struct roce_policy *p, const char *hca, unsigned groups, const char *why,
            roce_error_t *refusal, struct qa_plan *pl, roce_error_t *err)
{
  static const struct
  {
    unsigned group;
    const char *item;
  } rows[] = { { QA_PFC, "pfc" },
               { QA_DSCP, "dscp" },
               { QA_ECN, "ecn-np" },
               { QA_ECN, "ecn-rp" },
               { QA_STALL, "pfc-stall" },
               { QA_RDMACM, "rdma-cm-tos" },
               { QA_RDMACM, "rdma-cm-mode" } };

  for (size_t i = 0; i < ARRAY_SIZE (rows); i++)
    {
      struct qa_item *it;
      if (! (groups & rows[i].group) || (rows[i].group == QA_STALL && ! p->qos.has_stall))
        continue;
      it = push (pl, rows[i].item, hca, "-");
      it->target = xstrdup ("-");
      if (cannot (pl, it, why, refusal, err) < 0)
        return -1;
    }
  return 0;
}

static int
root_check (const char *root, const char *key, unsigned long magic, roce_error_t *err)
{
  cleanup_close int fd = sysfs_root_open (root, key, magic, err);
  if (fd < 0 && (*err)->status == ENOENT && magic == CONFIGFS_MAGIC)
    {
      /* No configfs: the rdma-cm plan says so, with its fix.  */
      roce_error_release (err);
      return 0;
    }
  return fd < 0 ? -1 : 0;
}

int
qos_apply_plan (const struct roce_policy *p, const char *only_hca, unsigned groups,
                struct qa_plan *out, roce_error_t *err)
{
  return qos_apply_plan_ex (p, only_hca, groups, false, out, err);
}

int
qos_apply_plan_ex (const struct roce_policy *p, const char *only_hca, unsigned groups,
                   bool keep_going, struct qa_plan *out, roce_error_t *err)
{
  cleanup_error roce_error_t sys_err = NULL;
  cleanup_error roce_error_t cfg_err = NULL;
  struct roots broken = { 0 };

  memset (out, 0, sizeof (*out));
  out->keep_going = keep_going;
  if (only_hca && policy_find_hca (p, only_hca) == NULL)
    {
      cleanup_free char *names = policy_hca_names (p);
      return roce_error_make (err, EINVAL, "--hca '%s': not an HCA of %s (it lists %s)", only_hca,
                              p->path, names);
    }
  /* What qos apply writes stays beneath these roots (sysfs.h), and each is
   * the filesystem it names or a tree of root's alone: a root that is not
   * refuses its items (a dry run marks them, and plans the rest).  */
  if ((groups & QA_ECN) && root_check (p->sysfs_root, "sysfs_root", SYSFS_MAGIC, &sys_err) < 0)
    {
      if (! keep_going)
        {
          *err = steal_pointer (&sys_err);
          return -1;
        }
      broken.sysfs = sys_err->msg;
    }
  if ((groups & QA_RDMACM)
      && root_check (p->configfs_root, "configfs_root", CONFIGFS_MAGIC, &cfg_err) < 0)
    {
      if (! keep_going)
        {
          *err = steal_pointer (&cfg_err);
          return -1;
        }
      broken.configfs = cfg_err->msg;
    }
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      const struct policy_hca *h = &p->hcas[i];
      cleanup_free char *nd = NULL;
      cleanup_error roce_error_t nerr = NULL;

      if (only_hca && strcmp (only_hca, h->name) != 0)
        continue;
      if (sysfs_hca_netdev (p, h, &nd, &nerr) < 0)
        {
          cleanup_free char *why = xstrdup (nerr->msg);
          if (cannot_hca (p, h->name, groups, why, &nerr, out, err) < 0)
            goto fail;
          continue;
        }
      if (((groups & (QA_PFC | QA_DSCP)) && plan_dcb (p, h->name, nd, groups, out, err) < 0)
          || ((groups & QA_ECN) && plan_ecn (p, h->name, nd, &broken, out, err) < 0)
          || ((groups & QA_STALL) && plan_stall (p, h->name, nd, out, err) < 0)
          || ((groups & QA_RDMACM) && plan_rdmacm (p, h->name, nd, &broken, out, err) < 0))
        goto fail;
    }
  /* A root that refused: its refusal, when no item came before it.  */
  if (out->blocked == NULL && (sys_err || cfg_err))
    out->blocked = sys_err ? steal_pointer (&sys_err) : steal_pointer (&cfg_err);
  return 0;

fail:
  qos_apply_clear (out);
  return -1;
}

/* ---- apply -------------------------------------------------------------------- */

static int
stall_set (const char *netdev, unsigned ms, roce_error_t *err)
{
  cleanup_close int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  unsigned short v = (unsigned short) ms;

  if (fd < 0)
    return roce_error_sys (err, errno, "socket");
  if (qos_stall_tunable (fd, netdev, ETHTOOL_STUNABLE, &v) < 0)
    return roce_error_sys (err, errno, "ETHTOOL_STUNABLE PFC_PREVENTION_TOUT on %s", netdev);
  return 0;
}

static int
app_send (const char *netdev, uint8_t cmd, const struct dcb_app_entry *v, size_t n,
          roce_error_t *err)
{
  cleanup_nlmsg struct nl_msg *m = NULL;
  if (n == 0)
    return 0;
  if (dcb_build_app (netdev, cmd, v, n, &m, err) < 0)
    return -1;
  return dcb_set_send (netdev, m, err);
}

static int
pfc_send (const char *netdev, const struct dcb_ieee *now, uint8_t en, roce_error_t *err)
{
  cleanup_nlmsg struct nl_msg *m = NULL;
  if (dcb_build_pfc_set (netdev, now, en, &m, err) < 0)
    return -1;
  return dcb_set_send (netdev, m, err);
}

/* rmdir of a configfs group this run made (never one that was there:
 * EEXIST), once its values are put back: the host is left as it was.  */
static void
group_undo (struct qa_item *it)
{
  cleanup_error roce_error_t err = NULL;

  if (sysfs_rmdir_beneath (it->root, it->group, &err) < 0)
    roce_log (ROCE_LOG_ERR, "qos apply: could not remove %s, made by this run: %s", it->group,
              err->msg);
  else
    {
      roce_log (ROCE_LOG_WARN, "qos apply: removed %s, made by this run", it->group);
      it->made_group = false;
    }
}

static int
item_apply (struct qa_item *it, roce_error_t *err)
{
  switch (it->op)
    {
      case QA_OP_PFC:
        return pfc_send (it->netdev, &it->ieee, it->pfc_en, err);
      case QA_OP_APP:
        /* Add first, then delete what the new entry replaces (as `dcb app
       * replace`): the table never goes empty on the way.  */
        if (app_send (it->netdev, DCB_CMD_IEEE_SET, it->diff.add, it->diff.n_add, err) < 0)
          return -1;
        if (app_send (it->netdev, DCB_CMD_IEEE_DEL, it->diff.del, it->diff.n_del, err) < 0)
          {
            cleanup_error roce_error_t uerr = NULL;
            app_send (it->netdev, DCB_CMD_IEEE_DEL, it->diff.add, it->diff.n_add, &uerr);
            return -1;
          }
        return 0;
      case QA_OP_WRITE:
        if (it->group && sysfs_mkdir_beneath (it->root, it->group, &it->made_group, err) < 0)
          return -1;
        if (sysfs_write_beneath (it->root, it->path, it->value, err) < 0)
          {
            /* The group this item made goes with its failure.  */
            if (it->made_group)
              group_undo (it);
            return -1;
          }
        return 0;
      case QA_OP_STALL:
        return stall_set (it->netdev, it->stall, err);
      case QA_OP_NONE:
      default:
        return 0;
    }
}

/* Best effort: what a later failure leaves is logged, not hidden.  */
static void
item_undo (struct qa_item *it)
{
  cleanup_error roce_error_t err = NULL;
  int ret = 0;

  switch (it->op)
    {
      case QA_OP_PFC:
        ret = pfc_send (it->netdev, &it->ieee, it->ieee.pfc_en, &err);
        break;
      case QA_OP_APP:
        ret = app_send (it->netdev, DCB_CMD_IEEE_SET, it->diff.del, it->diff.n_del, &err);
        if (ret == 0)
          ret = app_send (it->netdev, DCB_CMD_IEEE_DEL, it->diff.add, it->diff.n_add, &err);
        break;
      case QA_OP_WRITE:
        /* The values go back; then a group this item made goes (the group's
       * other items, later in the plan, were undone before this one).  */
        if (it->old)
          ret = sysfs_write_beneath (it->root, it->path, it->old, &err);
        if (it->made_group)
          group_undo (it);
        break;
      case QA_OP_STALL:
        ret = stall_set (it->netdev, it->stall_old, &err);
        break;
      case QA_OP_NONE:
      default:
        break;
    }
  if (ret < 0)
    roce_log (ROCE_LOG_ERR, "qos apply: could not put back %s of %s: %s", it->item, it->netdev,
              err->msg);
  else
    roce_log (ROCE_LOG_WARN, "qos apply: put back %s of %s", it->item, it->netdev);
}

int
qos_apply_run (struct qa_plan *plan, roce_error_t *err)
{
  for (size_t i = 0; i < plan->n; i++)
    {
      struct qa_item *it = &plan->v[i];
      if (it->action != QA_CHANGE)
        continue;
      if (item_apply (it, err) < 0)
        {
          for (size_t k = i; k-- > 0;)
            if (plan->v[k].done)
              {
                item_undo (&plan->v[k]);
                plan->v[k].done = false;
              }
          return roce_error_wrap (err, "%s of %s (%s), the earlier changes put back", it->item,
                                  it->netdev, it->hca);
        }
      it->done = true;
      roce_log (ROCE_LOG_INFO, "qos apply: %s of %s (%s): %s -> %s", it->item, it->netdev, it->hca,
                it->now, it->target);
    }
  return 0;
}

/* ---- render ------------------------------------------------------------------- */

#define NCOLS 6

static const char *
action_text (const struct qa_item *it, bool dry_run, char **buf)
{
  switch (it->action)
    {
      case QA_KEEP:
        return "none (already so)";
      case QA_CHANGE:
        return dry_run ? "would set" : it->done ? "set" : "not set";
      case QA_CANNOT:
        *buf = xasprintf ("cannot apply: %s", it->why ? it->why : "?");
        return *buf;
      case QA_SKIP:
      default:
        *buf = xasprintf ("skip: %s", it->why ? it->why : "?");
        return *buf;
    }
}

void
qos_apply_render (FILE *out, const struct qa_plan *plan, bool dry_run)
{
  static const char *const head[NCOLS] = { "HCA", "NETDEV", "ITEM", "NOW", "TARGET", "ACTION" };
  size_t w[NCOLS];
  size_t done = 0;

  for (int c = 0; c < NCOLS; c++)
    w[c] = strlen (head[c]);
  for (size_t i = 0; i < plan->n; i++)
    {
      const struct qa_item *it = &plan->v[i];
      const char *cells[NCOLS - 1] = { it->hca, it->netdev, it->item, it->now ? it->now : "-",
                                       it->target ? it->target : "-" };
      for (int c = 0; c < NCOLS - 1; c++)
        if (strlen (cells[c]) > w[c])
          w[c] = strlen (cells[c]);
    }
  for (int c = 0; c < NCOLS - 1; c++)
    fprintf (out, "%-*s  ", (int) w[c], head[c]);
  fprintf (out, "%s\n", head[NCOLS - 1]);
  for (size_t i = 0; i < plan->n; i++)
    {
      const struct qa_item *it = &plan->v[i];
      cleanup_free char *buf = NULL;
      fprintf (out, "%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", (int) w[0], it->hca, (int) w[1],
               it->netdev, (int) w[2], it->item, (int) w[3], it->now ? it->now : "-", (int) w[4],
               it->target ? it->target : "-", action_text (it, dry_run, &buf));
      if (it->done)
        done++;
    }
  if (plan->cannot > 0)
    fprintf (out,
             "qos apply --dry-run: %zu change(s) would be made, %zu item(s) cannot be applied "
             "here; nothing was changed\n",
             plan->changes, plan->cannot);
  else if (plan->changes == 0)
    fprintf (out, "qos apply: nothing to change: the host already matches the policy\n");
  else if (dry_run)
    fprintf (out, "qos apply --dry-run: %zu change(s) would be made; nothing was changed\n",
             plan->changes);
  else
    fprintf (out, "qos apply: %zu change(s) made\n", done);
}

void
qos_apply_clear (struct qa_plan *plan)
{
  for (size_t i = 0; i < plan->n; i++)
    {
      struct qa_item *it = &plan->v[i];
      free (it->hca);
      free (it->netdev);
      free (it->now);
      free (it->target);
      free (it->why);
      free (it->path);
      free (it->value);
      free (it->old);
      free (it->group);
    }
  free (plan->v);
  roce_error_release (&plan->blocked);
  memset (plan, 0, sizeof (*plan));
}

int
qos_apply_command (const struct roce_policy *p, const char *only_hca, unsigned groups, bool dry_run,
                   FILE *out, roce_error_t *err)
{
  struct qa_plan plan = { 0 };
  int ret;

  if (qos_apply_plan_ex (p, only_hca, groups, dry_run, &plan, err) < 0)
    return -1;
  ret = dry_run ? 0 : qos_apply_run (&plan, err);
  qos_apply_render (out, &plan, dry_run);
  if (plan.blocked)
    {
      /* The whole plan shown, then why it cannot be applied (one line).  */
      *err = steal_pointer (&plan.blocked);
      ret = -1;
    }
  fflush (out);
  qos_apply_clear (&plan);
  return ret;
}
