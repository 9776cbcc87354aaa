#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/rdma_netlink.h>

#include "blocks.h"
#include "check.h"
#include "json.h"
#include "nlsock.h"
#include "policy.h"
#include "qos.h"
#include "sysfs.h"
#include "utils.h"

/* ---- RoCE v2 GIDs ------------------------------------------------------------ */

void
gid_entries_free (struct gid_entry *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (v[i].gid);
      free (v[i].type);
      free (v[i].ndev);
    }
  free (v);
}

static bool
parse_index (const char *s, unsigned *out)
{
  uint64_t v;
  if (parse_u64 (s, &v) < 0 || v > 65535)
    return false;
  *out = (unsigned) v;
  return true;
}

/* One sysfs attribute; NULL when the entry is empty: ENOENT (not there),
 * EINVAL (what the kernel answers for an empty GID slot), or no text.  */
static char *
read_attr (const char *path)
{
  cleanup_error roce_error_t err = NULL;
  char *s = NULL;
  if (read_line_at (AT_FDCWD, path, &s, &err) < 0)
    return NULL;
  if (*s == '\0' || ! str_is_printable (s))
    {
      free (s);
      return NULL;
    }
  return s;
}

static bool
gid_is_zero (const char *g)
{
  for (const char *p = g; *p; p++)
    if (*p != '0' && *p != ':')
      return false;
  return true;
}

static int
gid_cmp (const void *a, const void *b)
{
  const struct gid_entry *x = a, *y = b;
  if (x->port != y->port)
    return x->port < y->port ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static void
port_gids (const char *portdir, unsigned port, struct gid_entry **v, size_t *n)
{
  cleanup_free char *gdir = xasprintf ("%s/gids", portdir);
  cleanup_dir DIR *d = opendir (gdir);
  struct dirent *de;

  if (d == NULL)
    return;
  while ((de = readdir (d)) != NULL)
    {
      cleanup_free char *gp = NULL, *tp = NULL, *np = NULL;
      cleanup_free char *gid = NULL, *type = NULL;
      unsigned idx;
      if (! parse_index (de->d_name, &idx))
        continue;
      gp = xasprintf ("%s/%s", gdir, de->d_name);
      gid = read_attr (gp);
      if (gid == NULL || gid_is_zero (gid))
        continue;
      tp = xasprintf ("%s/gid_attrs/types/%u", portdir, idx);
      type = read_attr (tp);
      if (type == NULL || strcmp (type, "RoCE v2") != 0)
        continue;
      np = xasprintf ("%s/gid_attrs/ndevs/%u", portdir, idx);
      *v = xrealloc (*v, (*n + 1) * sizeof (**v));
      (*v)[*n] = (struct gid_entry){ .port = port, .index = idx, .gid = steal_pointer (&gid),
                                     .type = steal_pointer (&type), .ndev = read_attr (np) };
      if ((*v)[*n].ndev == NULL)
        (*v)[*n].ndev = xstrdup ("");
      (*n)++;
    }
}

int
check_roce_v2_gids (const char *sysfs_root, const char *hca, struct gid_entry **out, size_t *n,
                    roce_error_t *err)
{
  cleanup_free char *pdir = NULL;
  cleanup_dir DIR *d = NULL;
  struct gid_entry *v = NULL;
  size_t count = 0;
  struct dirent *de;

  *out = NULL;
  *n = 0;
  if (strchr (hca, '/') || strcmp (hca, "..") == 0 || strcmp (hca, ".") == 0)
    return roce_error_make (err, EINVAL, "bad HCA name '%s'", hca);
  pdir = xasprintf ("%s/class/infiniband/%s/ports", sysfs_root, hca);
  d = opendir (pdir);
  if (d == NULL)
    return roce_error_sys (err, errno, "%s", pdir);
  while ((de = readdir (d)) != NULL)
    {
      cleanup_free char *portdir = NULL;
      unsigned port;
      if (! parse_index (de->d_name, &port))
        continue;
      portdir = xasprintf ("%s/%s", pdir, de->d_name);
      port_gids (portdir, port, &v, &count);
    }
  if (count > 1)
    qsort (v, count, sizeof (*v), gid_cmp);
  *out = v;
  *n = count;
  return 0;
}

/* ---- RDMA netns mode ------------------------------------------------------------ */

const char *
rdma_netns_mode_name (enum rdma_netns_mode m)
{
  switch (m)
    {
    case RDMA_NETNS_SHARED:
      return "shared";
    case RDMA_NETNS_EXCLUSIVE:
      return "exclusive";
    case RDMA_NETNS_UNKNOWN:
      break;
    }
  return "unknown";
}

void
rdma_netns_clear (struct rdma_netns *r)
{
  free (r->source);
  free (r->detail);
  memset (r, 0, sizeof (*r));
}

#define RDMA_SYS_GET_TYPE RDMA_NL_GET_TYPE (RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET)

int
check_rdma_sys_feed (const void *buf, size_t len, uint32_t seq, bool *have, uint8_t *mode,
                     roce_error_t *err)
{
  static const struct nla_policy policy[RDMA_NLDEV_ATTR_MAX] = {
    [RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = { .type = NLA_U8 },
  };
  struct nlmsghdr *nlh = (struct nlmsghdr *) buf;
  int rem = (int) len;

  if (len == 0 || len > (size_t) INT32_MAX)
    return roce_error_make (err, EBADMSG, "RDMA netlink: empty datagram");
  for (; nlmsg_ok (nlh, rem); nlh = nlmsg_next (nlh, &rem))
    {
      if (nlh->nlmsg_seq != seq)
        continue;
      if (nlh->nlmsg_type == NLMSG_ERROR)
        {
          const struct nlmsgerr *e = nlmsg_data (nlh);
          if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof (*e) || e->error > 0)
            return roce_error_make (err, EBADMSG, "RDMA netlink: malformed NLMSG_ERROR");
          if (e->error < 0)
            {
              cleanup_free char *t = nlsock_errno_text (-e->error);
              return roce_error_make (err, -e->error, "RDMA netlink: %s", t);
            }
          if (! *have)
            return roce_error_make (err, EBADMSG, "RDMA netlink: an ack but no reply");
          return 1;
        }
      if (nlh->nlmsg_type == NLMSG_DONE)
        return *have ? 1 : roce_error_make (err, EBADMSG, "RDMA netlink: no reply");
      if (nlh->nlmsg_type == RDMA_SYS_GET_TYPE)
        {
          struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
          int ret = nlmsg_parse (nlh, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, policy);
          if (ret < 0)
            return roce_error_make (err, EBADMSG, "RDMA netlink: %s", nl_geterror (ret));
          if (tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE] == NULL)
            return roce_error_make (err, EBADMSG, "RDMA netlink: no netns mode in the reply");
          *mode = nla_get_u8 (tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
          *have = true;
        }
    }
  if (rem > 0)
    return roce_error_make (err, EBADMSG, "RDMA netlink: truncated message");
  return 0;
}

static int
rdma_netns_netlink (uint8_t *mode, roce_error_t *err)
{
  cleanup_nlsock struct nl_sock *sk = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  bool have = false;
  uint32_t seq;
  int ret = 0;

  if (nlsock_open (NETLINK_RDMA, &sk, err) < 0)
    {
      if (roce_error_status (err) == EPROTONOSUPPORT)
        {
          roce_error_release (err);
          return roce_error_make (err, EPROTONOSUPPORT,
                                  "RDMA netlink: the kernel has none (EPROTONOSUPPORT)");
        }
      return roce_error_wrap (err, "RDMA netlink");
    }
  m = nlmsg_alloc_simple (RDMA_SYS_GET_TYPE, NLM_F_REQUEST | NLM_F_ACK);
  if (m == NULL)
    return roce_error_make (err, ENOMEM, "nlmsg_alloc");
  if (nlsock_send (sk, m, &seq, err) < 0)
    return -1;
  while (ret == 0)
    {
      cleanup_free unsigned char *buf = NULL;
      size_t len = 0;
      if (nlsock_recv (sk, &buf, &len, err) < 0)
        return -1;
      ret = check_rdma_sys_feed (buf, len, seq, &have, mode, err);
    }
  return ret < 0 ? -1 : 0;
}

void
check_rdma_netns (const char *sysfs_root, struct rdma_netns *out)
{
  cleanup_error roce_error_t nerr = NULL;
  cleanup_error roce_error_t serr = NULL;
  cleanup_free char *path = xasprintf ("%s/module/ib_core/parameters/netns_mode", sysfs_root);
  cleanup_free char *val = NULL;
  uint8_t mode = 0;

  memset (out, 0, sizeof (*out));
  if (rdma_netns_netlink (&mode, &nerr) == 0)
    {
      out->mode = mode ? RDMA_NETNS_SHARED : RDMA_NETNS_EXCLUSIVE;
      out->source = xstrdup ("RDMA netlink (RDMA_NLDEV_CMD_SYS_GET)");
      return;
    }
  if (read_line_at (AT_FDCWD, path, &val, &serr) == 0)
    {
      if (strcmp (val, "Y") == 0 || strcmp (val, "1") == 0)
        out->mode = RDMA_NETNS_SHARED;
      else if (strcmp (val, "N") == 0 || strcmp (val, "0") == 0)
        out->mode = RDMA_NETNS_EXCLUSIVE;
      if (out->mode != RDMA_NETNS_UNKNOWN)
        {
          out->source = xstrdup (path);
          return;
        }
      out->detail = xasprintf ("%s; %s: unexpected value", nerr->msg, path);
      return;
    }
  out->detail = xasprintf ("%s; %s", nerr->msg, serr->msg);
}

/* ---- the report ---------------------------------------------------------------- */

struct hca_report
{
  const struct policy_hca *h;
  char *netdev;
  bool probed;
  struct qos_probe probe;
  struct qos_findings f;
  struct gid_entry *gids;
  size_t n_gids;
  char *gid_error;
};

struct report
{
  const struct roce_policy *p;
  struct rdma_netns netns;
  struct qos_finding netns_row;
  struct hca_report *hcas;
  size_t n;
  size_t blocking, warnings, unknown;
};

static struct qos_finding *
push (struct qos_findings *f, enum qos_status st, bool blocking, const char *check,
      const struct hca_report *hr)
{
  struct qos_finding *x;
  f->v = xrealloc (f->v, (f->n + 1) * sizeof (*f->v));
  x = &f->v[f->n++];
  memset (x, 0, sizeof (*x));
  x->status = st;
  x->blocking = st == QOS_FAIL || (st == QOS_UNKNOWN && blocking);
  x->check = check;
  if (hr)
    {
      x->hca = xstrdup (hr->h->name);
      x->netdev = xstrdup (hr->netdev ? hr->netdev : "-");
    }
  return x;
}

static void
stall_row (struct hca_report *hr)
{
  const struct qos_probe *pr = &hr->probe;
  struct qos_finding *x;

  switch (pr->stall.state)
    {
    case PROBE_OK:
      x = push (&hr->f, pr->stall_ms ? QOS_OK : QOS_WARN, false, "pfc-stall", hr);
      if (pr->stall_ms)
        x->found = xasprintf ("%u ms", pr->stall_ms);
      else
        {
          x->found = xstrdup ("0 (disabled): a PFC storm can freeze the fabric");
          x->fix = xasprintf ("ethtool --set-tunable %s pfc-prevention-tout auto", pr->netdev);
        }
      break;
    case PROBE_UNSUPPORTED:
      x = push (&hr->f, QOS_UNKNOWN, false, "pfc-stall", hr);
      x->found = xasprintf ("not supported by this netdev (%s)",
                            strerrorname_np (pr->stall.errnum) ?: "?");
      break;
    case PROBE_ERROR:
    default:
      x = push (&hr->f, QOS_UNKNOWN, false, "pfc-stall", hr);
      x->found = xasprintf ("unreadable: %s", pr->stall.detail ? pr->stall.detail : "?");
      break;
    }
  x->what = xasprintf ("PFC stall prevention of %s (%s)", pr->netdev, hr->h->name);
  x->expected = xstrdup ("on (a timeout stops a PFC storm)");
  x->source = xstrdup (pr->stall.source);
}

static void
probe_hca (const struct roce_policy *p, struct hca_report *hr)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_error roce_error_t gerr = NULL;

  if (sysfs_hca_netdev (p, hr->h, &hr->netdev, &err) < 0
      || qos_probe_run (p, hr->netdev, &hr->probe, &err) < 0)
    {
      struct qos_finding *x = push (&hr->f, QOS_FAIL, true, "netdev", hr);
      char *cut = strstr (err->msg, " (fix: ");
      if (cut)
        *cut = '\0'; /* the row has its own fix */
      x->what = xasprintf ("netdev of %s", hr->h->name);
      x->expected = xstrdup ("the HCA's netdev (policy netdev, or sysfs device/net)");
      x->found = xstrdup (err->msg);
      x->fix = xasprintf ("set hcas.%s.netdev in %s", hr->h->name, p->path);
      x->source = xasprintf ("%s/class/infiniband/%s", p->sysfs_root, hr->h->name);
    }
  else
    {
      struct qos_subject s = { .hca = hr->h->name, .probe = &hr->probe };
      hr->probed = true;
      qos_verdict (p, &s, 1, NULL, &hr->f);
      stall_row (hr);
    }
  if (check_roce_v2_gids (p->sysfs_root, hr->h->name, &hr->gids, &hr->n_gids, &gerr) < 0)
    hr->gid_error = xstrdup (gerr->msg);
}

static void
netns_row (struct report *r)
{
  struct qos_finding *x = &r->netns_row;
  memset (x, 0, sizeof (*x));
  x->check = "rdma-netns";
  x->what = xstrdup ("RDMA netns mode");
  x->expected = xstrdup ("shared (containers share each HCA through macvlans)");
  x->source = xstrdup (r->netns.source ? r->netns.source : "RDMA netlink, ib_core netns_mode");
  switch (r->netns.mode)
    {
    case RDMA_NETNS_SHARED:
      x->status = QOS_OK;
      x->found = xstrdup ("shared");
      break;
    case RDMA_NETNS_EXCLUSIVE:
      x->status = QOS_WARN;
      x->found = xstrdup ("exclusive: an HCA is visible in one network namespace only");
      x->fix = xstrdup ("rdma system set netns shared (with no other network namespace)");
      break;
    case RDMA_NETNS_UNKNOWN:
      x->status = QOS_UNKNOWN;
      x->found = xstrdup ("unknown: neither RDMA netlink nor ib_core's netns_mode answers");
      break;
    }
}

static void
finding_free (struct qos_finding *x)
{
  struct qos_findings one = { .v = xmalloc0 (sizeof (*x)), .n = 1 };
  one.v[0] = *x;
  qos_findings_clear (&one);
  memset (x, 0, sizeof (*x));
}

static void
report_clear (struct report *r)
{
  for (size_t i = 0; i < r->n; i++)
    {
      struct hca_report *hr = &r->hcas[i];
      free (hr->netdev);
      qos_probe_clear (&hr->probe);
      qos_findings_clear (&hr->f);
      gid_entries_free (hr->gids, hr->n_gids);
      free (hr->gid_error);
    }
  free (r->hcas);
  finding_free (&r->netns_row);
  rdma_netns_clear (&r->netns);
}

static void
tally (struct report *r, const struct qos_finding *x)
{
  if (x->blocking)
    r->blocking++;
  else if (x->status == QOS_WARN)
    r->warnings++;
  else if (x->status == QOS_UNKNOWN)
    r->unknown++;
}

/* ---- text ---------------------------------------------------------------------- */

#define NCOLS 8

static const char *
dash (const char *s)
{
  return s && *s ? s : "-";
}

static void
row_cells (const struct qos_finding *x, const char *cells[NCOLS])
{
  cells[0] = dash (x->hca);
  cells[1] = dash (x->netdev);
  cells[2] = x->check;
  cells[3] = qos_status_name (x->status);
  cells[4] = x->blocking ? "yes" : "no";
  cells[5] = dash (x->expected);
  cells[6] = dash (x->found);
  cells[7] = dash (x->fix);
}

static void
for_each_row (const struct report *r, void (*fn) (const struct qos_finding *, void *), void *data)
{
  fn (&r->netns_row, data);
  for (size_t i = 0; i < r->n; i++)
    for (size_t k = 0; k < r->hcas[i].f.n; k++)
      fn (&r->hcas[i].f.v[k], data);
}

static void
widen (const struct qos_finding *x, void *data)
{
  size_t *w = data;
  const char *cells[NCOLS];
  row_cells (x, cells);
  for (int c = 0; c < NCOLS; c++)
    if (strlen (cells[c]) > w[c])
      w[c] = strlen (cells[c]);
}

struct print_ctx
{
  FILE *out;
  const size_t *w;
};

static void
print_cells (FILE *out, const size_t *w, const char *const cells[NCOLS])
{
  for (int c = 0; c < NCOLS; c++)
    {
      if (c == NCOLS - 1)
        fprintf (out, "%s\n", cells[c]);
      else
        fprintf (out, "%-*s  ", (int) w[c], cells[c]);
    }
}

static void
print_row (const struct qos_finding *x, void *data)
{
  struct print_ctx *pc = data;
  const char *cells[NCOLS];
  row_cells (x, cells);
  print_cells (pc->out, pc->w, cells);
}

static void
print_dcb (FILE *out, const struct hca_report *hr)
{
  const struct qos_probe *pr = &hr->probe;
  const struct dcb_ieee *d = &pr->ieee;
  cleanup_free char *pfc = NULL, *dcbx = NULL;
  char tc[32] = "-";

  if (pr->dcb.state != PROBE_OK)
    {
      fprintf (out, "DCB of %s (%s): %s\n", hr->h->name, pr->netdev,
               pr->dcb.state == PROBE_UNSUPPORTED ? "not supported by this netdev (EOPNOTSUPP)"
                                                  : dash (pr->dcb.detail));
      return;
    }
  pfc = d->has_pfc ? dcb_prio_list (d->pfc_en) : xstrdup ("unknown");
  dcbx = d->has_dcbx ? dcb_dcbx_text (d->dcbx) : xstrdup ("unknown");
  if (d->has_ets)
    snprintf (tc, sizeof (tc), "%u,%u,%u,%u,%u,%u,%u,%u", d->prio_tc[0], d->prio_tc[1],
              d->prio_tc[2], d->prio_tc[3], d->prio_tc[4], d->prio_tc[5], d->prio_tc[6],
              d->prio_tc[7]);
  fprintf (out, "DCB of %s (%s): DCBX %s; PFC on %s; prio->tc %s; %s (%zu DSCP entries)\n",
           hr->h->name, pr->netdev, dcbx, pfc, tc, d->n_dscp ? "trust dscp" : "trust pcp",
           d->n_dscp);
}

static void
print_text (FILE *out, const struct report *r)
{
  static const char *const head[NCOLS] = { "HCA",   "NETDEV",   "CHECK", "STATUS",
                                           "BLOCKS", "EXPECTED", "FOUND", "FIX" };
  const struct roce_policy *p = r->p;
  size_t w[NCOLS];
  struct print_ctx pc = { .out = out, .w = w };

  for (int c = 0; c < NCOLS; c++)
    w[c] = strlen (head[c]);
  for_each_row (r, widen, w);

  fprintf (out, "roce-hook check: policy %s\n", p->path);
  fprintf (out, "qos: mode %s, pfc_priority %u, dscp %u, ecn %s, min_mtu %u\n",
           qos_mode_name (p->qos.mode), p->qos.pfc_priority, p->qos.dscp,
           qos_ecn_name (p->qos.ecn), p->qos.min_mtu);
  blocks_check_text (p, out);
  fprintf (out, "RDMA netns mode: %s (%s)\n\n", rdma_netns_mode_name (r->netns.mode),
           r->netns.source ? r->netns.source : dash (r->netns.detail));
  print_cells (out, w, head);
  for_each_row (r, print_row, &pc);
  fputc ('\n', out);

  for (size_t i = 0; i < r->n; i++)
    if (r->hcas[i].probed)
      print_dcb (out, &r->hcas[i]);
  for (size_t i = 0; i < r->n; i++)
    {
      const struct hca_report *hr = &r->hcas[i];
      if (hr->gid_error)
        fprintf (out, "RoCE v2 GIDs of %s: unreadable (%s)\n", hr->h->name, hr->gid_error);
      else if (hr->n_gids == 0)
        fprintf (out, "RoCE v2 GIDs of %s: none\n", hr->h->name);
      else
        for (size_t k = 0; k < hr->n_gids; k++)
          fprintf (out, "RoCE v2 GID of %s: port %u index %u %s on %s\n", hr->h->name,
                   hr->gids[k].port, hr->gids[k].index, hr->gids[k].gid, dash (hr->gids[k].ndev));
    }
  fputc ('\n', out);

  if (r->blocking)
    fprintf (out, "result: FAIL: %zu blocking, %zu warning(s), %zu unknown: %s\n", r->blocking,
             r->warnings, r->unknown,
             p->qos.mode == QOS_MODE_ENFORCE
                 ? "qos.mode 'enforce' refuses annotated containers on this host"
             : p->qos.mode == QOS_MODE_WARN
                 ? "qos.mode 'warn' starts annotated containers on a fabric not proven lossless"
                 : "qos.mode 'off' starts annotated containers without looking");
  else
    fprintf (out, "result: OK: %zu warning(s), %zu unknown: the host is ready\n", r->warnings,
             r->unknown);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void
kv_str_or_null (struct json_gen *g, const char *k, const char *v)
{
  json_gen_string (g, k);
  if (v)
    json_gen_string (g, v);
  else
    json_gen_null (g);
}

static void
json_finding (const struct qos_finding *x, void *data)
{
  struct json_gen *g = data;
  json_gen_map_open (g);
  json_gen_kv_string (g, "check", x->check);
  json_gen_kv_string (g, "status", qos_status_name (x->status));
  json_gen_string (g, "blocking");
  json_gen_bool (g, x->blocking);
  kv_str_or_null (g, "what", x->what);
  kv_str_or_null (g, "expected", x->expected);
  kv_str_or_null (g, "found", x->found);
  kv_str_or_null (g, "fix", x->fix);
  kv_str_or_null (g, "source", x->source);
  json_gen_map_close (g);
}

static const char *
probe_state_name (enum probe_state s)
{
  return s == PROBE_OK ? "ok" : s == PROBE_UNSUPPORTED ? "unsupported" : "error";
}

static void
json_prio_array (struct json_gen *g, uint8_t mask)
{
  json_gen_array_open (g);
  for (int p = 0; p < DCB_NPRIO; p++)
    if (mask & (1u << p))
      json_gen_integer (g, p);
  json_gen_array_close (g);
}

static void
json_dcb (struct json_gen *g, const struct qos_probe *pr)
{
  const struct dcb_ieee *d = &pr->ieee;
  json_gen_string (g, "dcb");
  json_gen_map_open (g);
  json_gen_kv_string (g, "state", probe_state_name (pr->dcb.state));
  kv_str_or_null (g, "error", pr->dcb.detail);
  kv_str_or_null (g, "source", pr->dcb.source);
  if (pr->dcb.state == PROBE_OK)
    {
      json_gen_string (g, "pfc_enabled");
      if (d->has_pfc)
        json_prio_array (g, d->pfc_en);
      else
        json_gen_null (g);
      json_gen_string (g, "prio_tc");
      if (d->has_ets)
        {
          json_gen_array_open (g);
          for (int p = 0; p < DCB_NPRIO; p++)
            json_gen_integer (g, d->prio_tc[p]);
          json_gen_array_close (g);
        }
      else
        json_gen_null (g);
      json_gen_string (g, "trust");
      json_gen_string (g, d->n_dscp ? "dscp" : "pcp");
      json_gen_string (g, "dscp_prio");
      json_gen_map_open (g);
      for (unsigned k = 0; k < DCB_NDSCP; k++)
        if (d->dscp_prio[k])
          {
            char key[8];
            snprintf (key, sizeof (key), "%u", k);
            json_gen_string (g, key);
            json_prio_array (g, d->dscp_prio[k]);
          }
      json_gen_map_close (g);
      json_gen_string (g, "dcbx");
      if (d->has_dcbx)
        json_gen_integer (g, d->dcbx);
      else
        json_gen_null (g);
    }
  json_gen_map_close (g);
}

static void
json_item (struct json_gen *g, const char *key, const struct probe_item *it, bool ok,
           int64_t value)
{
  json_gen_string (g, key);
  json_gen_map_open (g);
  json_gen_kv_string (g, "state", probe_state_name (it->state));
  json_gen_string (g, "value");
  if (ok && it->state == PROBE_OK)
    json_gen_integer (g, value);
  else
    json_gen_null (g);
  kv_str_or_null (g, "error", it->detail);
  kv_str_or_null (g, "source", it->source);
  json_gen_map_close (g);
}

static void
json_hca (struct json_gen *g, const struct hca_report *hr)
{
  const struct qos_probe *pr = &hr->probe;
  json_gen_map_open (g);
  json_gen_kv_string (g, "hca", hr->h->name);
  kv_str_or_null (g, "netdev", hr->netdev);
  if (hr->probed)
    {
      json_dcb (g, pr);
      json_item (g, "mtu", &pr->mtu, true, pr->mtu_value);
      json_item (g, "ecn_np", &pr->ecn[QOS_ECN_NP], true, pr->ecn_on[QOS_ECN_NP]);
      json_item (g, "ecn_rp", &pr->ecn[QOS_ECN_RP], true, pr->ecn_on[QOS_ECN_RP]);
      json_item (g, "pfc_stall_prevention_ms", &pr->stall, true, pr->stall_ms);
    }
  json_gen_string (g, "roce_v2_gids");
  if (hr->gid_error)
    json_gen_null (g);
  else
    {
      json_gen_array_open (g);
      for (size_t k = 0; k < hr->n_gids; k++)
        {
          json_gen_map_open (g);
          json_gen_kv_integer (g, "port", hr->gids[k].port);
          json_gen_kv_integer (g, "index", hr->gids[k].index);
          json_gen_kv_string (g, "gid", hr->gids[k].gid);
          json_gen_kv_string (g, "type", hr->gids[k].type);
          json_gen_kv_string (g, "netdev", hr->gids[k].ndev);
          json_gen_map_close (g);
        }
      json_gen_array_close (g);
    }
  json_gen_string (g, "checks");
  json_gen_array_open (g);
  for (size_t k = 0; k < hr->f.n; k++)
    json_finding (&hr->f.v[k], g);
  json_gen_array_close (g);
  json_gen_map_close (g);
}

static int
print_json (FILE *out, const struct report *r, int exit_code, roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (true);
  const struct roce_policy *p = r->p;
  const char *buf;
  size_t len;

  json_gen_map_open (g);
  json_gen_kv_string (g, "policy", p->path);
  json_gen_string (g, "qos");
  json_gen_map_open (g);
  json_gen_kv_string (g, "mode", qos_mode_name (p->qos.mode));
  json_gen_kv_integer (g, "pfc_priority", p->qos.pfc_priority);
  json_gen_kv_integer (g, "dscp", p->qos.dscp);
  json_gen_kv_string (g, "ecn", qos_ecn_name (p->qos.ecn));
  json_gen_kv_integer (g, "min_mtu", p->qos.min_mtu);
  json_gen_map_close (g);
  blocks_check_json (p, g);
  json_gen_string (g, "rdma_netns");
  json_gen_map_open (g);
  json_gen_kv_string (g, "mode", rdma_netns_mode_name (r->netns.mode));
  kv_str_or_null (g, "source", r->netns.source);
  kv_str_or_null (g, "detail", r->netns.detail);
  json_gen_string (g, "check");
  json_finding (&r->netns_row, g);
  json_gen_map_close (g);
  json_gen_string (g, "hcas");
  json_gen_array_open (g);
  for (size_t i = 0; i < r->n; i++)
    json_hca (g, &r->hcas[i]);
  json_gen_array_close (g);
  json_gen_string (g, "result");
  json_gen_map_open (g);
  json_gen_kv_string (g, "status", r->blocking ? "FAIL" : "OK");
  json_gen_kv_integer (g, "blocking", (int64_t) r->blocking);
  json_gen_kv_integer (g, "warnings", (int64_t) r->warnings);
  json_gen_kv_integer (g, "unknown", (int64_t) r->unknown);
  json_gen_kv_integer (g, "exit", exit_code);
  json_gen_map_close (g);
  json_gen_map_close (g);
  if (json_gen_result (g, &buf, &len, err) < 0)
    return -1;
  fwrite (buf, 1, len, out);
  if (len == 0 || buf[len - 1] != '\n')
    fputc ('\n', out);
  return 0;
}

/* ---- the subcommand ------------------------------------------------------------ */

static void
check_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] check [--json] [--hca H]\n"
         "  a host readiness report for every HCA of the policy (or H only):\n"
         "  QoS (PFC, DSCP trust, ECN, MTU), PFC stall prevention, RoCE v2 GIDs,\n"
         "  RDMA netns mode.  Exit 0: nothing blocks; 1: a finding refuses containers\n"
         "  under qos.mode=enforce; 2: the check cannot run.\n",
         out);
}

int
roce_check_main (const char *config_path, int argc, char **argv, FILE *out, FILE *err_out)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'j' },
    { "hca", required_argument, NULL, 'H' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  struct report r = { 0 };
  const char *only = NULL;
  bool json = false;
  int c, code;

  optind = 0; /* a fresh getopt over the subcommand's own argv */
  while ((c = getopt_long (argc, argv, "+jH:h", opts, NULL)) != -1)
    switch (c)
      {
      case 'j':
        json = true;
        break;
      case 'H':
        only = optarg;
        break;
      case 'h':
        check_usage (out);
        return 0;
      default:
        check_usage (err_out);
        return 2;
      }
  if (optind < argc)
    {
      fprintf (err_out, "roce-hook check: unexpected argument '%s'\n", argv[optind]);
      check_usage (err_out);
      return 2;
    }
  if (policy_load (config_path, &p, &err) < 0)
    {
      fprintf (err_out, "roce-hook check: %s\n", err->msg);
      return 2;
    }
  if (only && policy_find_hca (p, only) == NULL)
    {
      cleanup_free char *names = policy_hca_names (p);
      fprintf (err_out, "roce-hook check: --hca '%s': not an HCA of %s (it lists %s)\n", only,
               p->path, names);
      return 2;
    }

  r.p = p;
  r.hcas = xmalloc0 ((p->n_hcas + 1) * sizeof (*r.hcas));
  check_rdma_netns (p->sysfs_root, &r.netns);
  netns_row (&r);
  tally (&r, &r.netns_row);
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      if (only && strcmp (only, p->hcas[i].name) != 0)
        continue;
      r.hcas[r.n].h = &p->hcas[i];
      probe_hca (p, &r.hcas[r.n]);
      for (size_t k = 0; k < r.hcas[r.n].f.n; k++)
        tally (&r, &r.hcas[r.n].f.v[k]);
      r.n++;
    }
  code = r.blocking ? 1 : 0;
  if (json)
    {
      if (print_json (out, &r, code, &err) < 0)
        {
          fprintf (err_out, "roce-hook check: %s\n", err->msg);
          code = 2;
        }
    }
  else
    print_text (out, &r);
  fflush (out);
  report_clear (&r);
  return code;
}
