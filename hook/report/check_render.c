/* SPDX-License-Identifier: Apache-2.0 */
/* `check`'s report rendered: a table for people, JSON for tools.  */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ipam/blocks/blocks.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "lldp/lldp.h"
#include "report/check.h"
#include "topo/topo.h"

/* ---- text ---------------------------------------------------------------------- */

#define NCOLS 8

static const char *
dash (const char *s)
{
  return s && *s ? s : "-";
}

static void
row_cells (const struct finding *x, const char *cells[NCOLS])
{
  cells[0] = dash (x->hca);
  cells[1] = dash (x->netdev);
  cells[2] = x->check;
  cells[3] = finding_status_name (x->status);
  cells[4] = x->blocking ? "yes" : "no";
  cells[5] = dash (x->expected);
  cells[6] = dash (x->found);
  cells[7] = dash (x->fix);
}

static void
for_each_row (const struct check_report *r, void (*fn) (const struct finding *, void *), void *data)
{
  fn (&r->netns_row, data);
  for (size_t k = 0; k < r->nri.n; k++)
    fn (&r->nri.v[k], data);
  for (size_t i = 0; i < r->n; i++)
    for (size_t k = 0; k < r->hcas[i].f.n; k++)
      fn (&r->hcas[i].f.v[k], data);
}

/* Both tables' lines: the first n columns' widths grown to their cells, a
 * line of n cells (each but the last padded to its width).  */
static void
widen_to (size_t *w, const char *const *cells, int n)
{
  for (int c = 0; c < n; c++)
    if (strlen (cells[c]) > w[c])
      w[c] = strlen (cells[c]);
}

static void
print_line (FILE *out, const size_t *w, const char *const *cells, int n)
{
  cleanup_free char *line = xstrdup ("");
  for (int c = 0; c < n; c++)
    {
      char *next = c == n - 1 ? xasprintf ("%s%s", line, cells[c])
                              : xasprintf ("%s%-*s  ", line, (int) w[c], cells[c]);
      free (line);
      line = next;
    }
  roce_print (out, "%s", line); /* made whole, escaped once (utils.h) */
}

static void
widen (const struct finding *x, void *data)
{
  const char *cells[NCOLS];
  row_cells (x, cells);
  widen_to (data, cells, NCOLS);
}

struct print_ctx
{
  FILE *out;
  const size_t *w;
};

static void
print_row (const struct finding *x, void *data)
{
  struct print_ctx *pc = data;
  const char *cells[NCOLS];
  row_cells (x, cells);
  print_line (pc->out, pc->w, cells, NCOLS);
}

/* "Rail of mlx5_0 (dual-stack): IPv4 198.18.10.0/24, pool ...: 100
 * addresses, 1 held; IPv6 ...": what a container on it gets.  */
static void
print_rail (FILE *out, const struct check_hca *hr)
{
  cleanup_free char *nets = xstrdup ("");
  for (size_t k = 0; k < hr->h->n_nets; k++)
    {
      const struct policy_net *n = &hr->h->net[k];
      char sub[CIDR_STR_MAX], size[U128_STR_MAX];
      cleanup_free char *pool = policy_net_pool_text (n);
      cleanup_free char *held
          = hr->held_error ? xstrdup ("held unknown") : xasprintf ("%" PRIu64 " held", hr->held[k]);
      str_list_add (&nets, "; ", "%s %s, pool %s: %s addresses, %s",
                    addr_family_name (n->subnet.addr.family), cidr_format (&n->subnet, sub), pool,
                    u128_format (addr_diff (&n->pool_last, &n->pool_first) + 1, size), held);
    }
  roce_print (out, "Rail of %s (%s): %s", hr->h->name, check_rail_families (hr), nets);
}

static void
print_dcb (FILE *out, const struct check_hca *hr)
{
  const struct qos_probe *pr = &hr->probe;
  const struct dcb_ieee *d = &pr->ieee;
  cleanup_free char *pfc = NULL, *dcbx = NULL;
  char tc[32] = "-";

  if (pr->dcb.state != PROBE_OK)
    {
      roce_print (out, "DCB of %s (%s): %s", hr->h->name, pr->netdev,
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
  roce_print (out, "DCB of %s (%s): DCBX %s; PFC on %s; prio->tc %s; %s (%zu DSCP entries)",
              hr->h->name, pr->netdev, dcbx, pfc, tc, d->n_dscp ? "trust dscp" : "trust pcp",
              d->n_dscp);
}

/* The runtime roce-runtime chains to, and how it was chosen.  */
static void
runtime_text (FILE *out, const struct check_report *r)
{
  const struct roce_policy *p = r->p;
  size_t n = p->runtimes ? strv_len (p->runtimes) : 0;
  if (r->runtime_error)
    roce_print (out,
                "runtime (roce-runtime): none: create and run are refused: %s; state, kill, "
                "delete go to %s",
                r->runtime_error,
                r->runtime_other ? r->runtime_other : "nothing (no runc or crun either)");
  else if (r->runtime_how.candidate >= 0)
    roce_print (out, "runtime (roce-runtime): %s (policy runtime, candidate %d of %zu)", r->runtime,
                r->runtime_how.candidate + 1, n);
  else
    roce_print (out,
                "runtime (roce-runtime): %s (no policy runtime: the first of runc, crun on PATH)",
                r->runtime);
}

/* ---- the default table: 100 columns ---------------------------------------------------
 *
 * HCA NETDEV CHECK STATUS BLOCKS FOUND FIX, FOUND shortened to what fits
 * (the words before its first explanation, cut with "..."), FIX a number
 * into the list below the table (rows with the same fix share it).  */

#define NARROW 100
#define NNARROW 7
#define FOUND_MIN 16

struct fix_list
{
  char **fix;            /* distinct fixes, in order of first use */
  char **rows;           /* "mlx5_0 pfc, dscp; mlx5_1 pfc": who needs it */
  const char **last_hca; /* the HCA rows[i] names last */
  bool *blocks;          /* one of the rows blocks */
  size_t n;
};

static size_t
fix_number (struct fix_list *fl, const struct finding *x)
{
  size_t i;
  for (i = 0; i < fl->n; i++)
    if (strcmp (fl->fix[i], x->fix) == 0)
      break;
  if (i == fl->n)
    {
      fl->fix = xrealloc (fl->fix, (fl->n + 1) * sizeof (*fl->fix));
      fl->rows = xrealloc (fl->rows, (fl->n + 1) * sizeof (*fl->rows));
      fl->blocks = xrealloc (fl->blocks, (fl->n + 1) * sizeof (*fl->blocks));
      fl->last_hca = xrealloc (fl->last_hca, (fl->n + 1) * sizeof (*fl->last_hca));
      fl->fix[i] = xstrdup (x->fix);
      fl->rows[i] = xstrdup ("");
      fl->blocks[i] = false;
      fl->last_hca[i] = NULL;
      fl->n++;
    }
  if (fl->rows[i][0] && x->hca && fl->last_hca[i] && strcmp (x->hca, fl->last_hca[i]) == 0)
    str_list_add (&fl->rows[i], ", ", "%s", x->check);
  else
    str_list_add (&fl->rows[i], "; ", "%s%s%s", x->hca ? x->hca : "", x->hca ? " " : "", x->check);
  fl->last_hca[i] = x->hca;
  fl->blocks[i] = fl->blocks[i] || x->blocking;
  return i + 1;
}

static void
fix_list_clear (struct fix_list *fl)
{
  for (size_t i = 0; i < fl->n; i++)
    {
      free (fl->fix[i]);
      free (fl->rows[i]);
    }
  free (fl->fix);
  free (fl->rows);
  free (fl->blocks);
  free (fl->last_hca);
}

/* The found text up to its first explanation (": " or " (" after the first
 * dozen bytes), cut to width with "...".  */
static void
short_found (const char *found, size_t width, char *buf, size_t size)
{
  size_t n = strlen (found);
  for (size_t i = 12; i + 1 < n; i++)
    if ((found[i] == ':' && found[i + 1] == ' ') || (found[i] == ' ' && found[i + 1] == '('))
      {
        n = i;
        break;
      }
  if (n > width)
    snprintf (buf, size, "%.*s...", (int) (width > 3 ? width - 3 : 0), found);
  else
    snprintf (buf, size, "%.*s", (int) n, found);
}

struct narrow_ctx
{
  FILE *out;
  size_t w[NNARROW];
  struct fix_list fl;
};

/* The wide table's cells without EXPECTED, and FIX a number ("-": none).  */
static void
narrow_cells (const struct finding *x, const char *cells[NNARROW])
{
  const char *wide[NCOLS];
  row_cells (x, wide);
  memcpy (cells, wide, 5 * sizeof (*cells));
  cells[5] = wide[6];
  cells[6] = "-";
}

static void
narrow_widen (const struct finding *x, void *data)
{
  const char *cells[NNARROW];
  narrow_cells (x, cells);
  widen_to (data, cells, 5); /* FOUND and FIX have widths of their own */
}

static void
narrow_row (const struct finding *x, void *data)
{
  struct narrow_ctx *nc = data;
  const char *cells[NNARROW];
  char found[NARROW + 8], fix[16];

  narrow_cells (x, cells);
  short_found (cells[5], nc->w[5], found, sizeof (found));
  cells[5] = found;
  if (x->fix && *x->fix)
    {
      snprintf (fix, sizeof (fix), "[%zu]", fix_number (&nc->fl, x));
      cells[6] = fix;
    }
  print_line (nc->out, nc->w, cells, NNARROW);
}

/* "<lead><text>" cut at spaces into lines of at most width columns, each
 * line after the first indented under the text, so that each reads on its
 * own; a word longer than a line stands alone on one.  The suites join them
 * back (tests/helpers/lib.sh: join_wrapped).  */
static void
print_wrapped (FILE *out, const char *lead, const char *text, size_t width)
{
  size_t indent = strlen (lead);
  size_t room = width > indent + FOUND_MIN ? width - indent : FOUND_MIN;
  /* Escaped whole, once, as every printed line is; then cut.  */
  cleanup_free char *shown = str_escape (text);
  const char *p = shown;
  bool first = true;

  do
    {
      size_t n = strlen (p);
      if (n > room)
        {
          size_t cut = room;
          while (cut > 0 && p[cut] != ' ')
            cut--;
          if (cut == 0)
            while (p[cut] && p[cut] != ' ')
              cut++;
          n = cut;
        }
      fprintf (out, "%-*s%.*s\n", (int) indent, first ? lead : "", (int) n, p);
      first = false;
      p += n;
      while (*p == ' ')
        p++;
    }
  while (*p);
}

static void
narrow_table (FILE *out, const struct check_report *r)
{
  static const char *const head[NNARROW]
      = { "HCA", "NETDEV", "CHECK", "STATUS", "BLOCKS", "FOUND", "FIX" };
  struct narrow_ctx nc = { .out = out };
  size_t used = 0;

  for (int c = 0; c < NNARROW; c++)
    nc.w[c] = strlen (head[c]);
  for_each_row (r, narrow_widen, nc.w);
  nc.w[6] = 4; /* "[NN]" */
  for (int c = 0; c < NNARROW; c++)
    if (c != 5)
      used += nc.w[c] + 2;
  nc.w[5] = used + FOUND_MIN < NARROW ? NARROW - used : FOUND_MIN;
  print_line (out, nc.w, head, NNARROW);
  for_each_row (r, narrow_row, &nc);
  if (nc.fl.n)
    {
      fputs ("\nfixes:\n", out);
      for (size_t i = 0; i < nc.fl.n; i++)
        {
          cleanup_free char *lead = xasprintf ("[%zu] ", i + 1);
          cleanup_free char *text = xasprintf ("%s%s: %s", nc.fl.rows[i],
                                               nc.fl.blocks[i] ? " (blocks)" : "", nc.fl.fix[i]);
          print_wrapped (out, lead, text, NARROW);
        }
    }
  fix_list_clear (&nc.fl);
}

/* What each HCA's switch port said, in one line.  */
static void
print_switch (FILE *out, const struct check_hca *hr)
{
  const struct lldp_seen *sw = &hr->probe.sw;
  char id[2 * LLDP_TEXT_MAX + 2], sum[256];

  if (! hr->probe.sw_loaded)
    return;
  if (sw->state != LLDP_SEEN_OK && sw->state != LLDP_SEEN_EXPIRED)
    {
      roce_print (out, "Switch port of %s (%s): %s", hr->h->name, hr->probe.netdev,
                  sw->detail ? sw->detail : "not heard");
      return;
    }
  lldp_identity (&sw->info, id, sizeof (id));
  lldp_summary (&sw->info, sum, sizeof (sum));
  roce_print (out, "Switch port of %s (%s): %s, heard %lld s ago%s: %s", hr->h->name,
              hr->probe.netdev, id, (long long) sw->age,
              sw->state == LLDP_SEEN_EXPIRED ? " (expired)" : "", sum);
}

void
check_render_text (FILE *out, const struct check_report *r, bool wide)
{
  static const char *const head[NCOLS]
      = { "HCA", "NETDEV", "CHECK", "STATUS", "BLOCKS", "EXPECTED", "FOUND", "FIX" };
  const struct roce_policy *p = r->p;
  size_t w[NCOLS];
  struct print_ctx pc = { .out = out, .w = w };

  for (int c = 0; c < NCOLS; c++)
    w[c] = strlen (head[c]);
  for_each_row (r, widen, w);

  roce_print (out, "roce-hook check: policy %s", p->path);
  roce_print (out, "qos: mode %s, pfc_priority %u, dscp %u, ecn %s, min_mtu %u",
              qos_mode_name (p->qos.mode), p->qos.pfc_priority, p->qos.dscp,
              qos_ecn_name (p->qos.ecn), p->qos.min_mtu);
  blocks_check_text (p, out);
  roce_print (out, "RDMA netns mode: %s (%s)", rdma_netns_mode_name (r->netns.mode),
              r->netns.source ? r->netns.source : dash (r->netns.detail));
  runtime_text (out, r);
  fputc ('\n', out);
  if (wide)
    {
      print_line (out, w, head, NCOLS);
      for_each_row (r, print_row, &pc);
    }
  else
    narrow_table (out, r);
  fputc ('\n', out);

  for (size_t i = 0; i < r->n; i++)
    if (r->hcas[i].probed)
      {
        print_dcb (out, &r->hcas[i]);
        print_switch (out, &r->hcas[i]);
      }
  for (size_t i = 0; i < r->n; i++)
    {
      const struct check_hca *hr = &r->hcas[i];
      if (hr->gid_error)
        roce_print (out, "RoCE v2 GIDs of %s: unreadable (%s)", hr->h->name, hr->gid_error);
      else if (hr->n_gids == 0)
        roce_print (out, "RoCE v2 GIDs of %s: none", hr->h->name);
      else
        for (size_t k = 0; k < hr->n_gids; k++)
          roce_print (out, "RoCE v2 GID of %s: port %u index %u %s on %s", hr->h->name,
                      hr->gids[k].port, hr->gids[k].index, hr->gids[k].gid,
                      dash (hr->gids[k].ndev));
      for (size_t k = 0; k < hr->n_gid_use; k++)
        {
          const struct gid_port_use *u = &hr->gid_use[k];
          unsigned left = u->size > u->used ? u->size - u->used : 0;
          if (hr->h->n_nets > 1 || hr->link_local)
            roce_print (out,
                        "GID table of %s port %u: %u of %u used (room for %u more container "
                        "addresses: %u containers of this %s rail, %s each)",
                        hr->h->name, u->port, u->used, u->size, left / 2, check_gid_room (hr, u),
                        check_rail_families (hr),
                        hr->h->n_nets < 2 ? "an address and its IPv6 link-local one"
                        : hr->link_local  ? "an IPv4, an IPv6 and an IPv6 link-local address"
                                          : "an IPv4 and an IPv6 address");
          else
            roce_print (out,
                        "GID table of %s port %u: %u of %u used (room for %u more container "
                        "addresses)",
                        hr->h->name, u->port, u->used, u->size, left / 2);
        }
      print_rail (out, hr);
    }
  fputc ('\n', out);
  if (r->topo && topo_view_gpus (r->topo) > 0)
    {
      fputs ("GPU-NIC topology (what roce.io/hca=auto chooses by; roce-hook topo):\n", out);
      topo_view_text (r->topo, out);
      fputc ('\n', out);
    }

  if (r->blocking)
    roce_print (out, "result: FAIL: %zu blocking, %zu warning(s), %zu unknown: %s", r->blocking,
                r->warnings, r->unknown,
                p->qos.mode == QOS_MODE_ENFORCE
                    ? "qos.mode 'enforce' refuses annotated containers on this host"
                : p->qos.mode == QOS_MODE_WARN
                    ? "qos.mode 'warn' starts annotated containers on a fabric not proven lossless"
                    : "qos.mode 'off' starts annotated containers without looking");
  else
    roce_print (out, "result: OK: %zu warning(s), %zu unknown: the host is ready", r->warnings,
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
json_finding (const struct finding *x, void *data)
{
  struct json_gen *g = data;
  json_gen_map_open (g);
  json_gen_kv_string (g, "check", x->check);
  json_gen_kv_string (g, "status", finding_status_name (x->status));
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
json_rail (struct json_gen *g, const struct check_hca *hr)
{
  json_gen_kv_string (g, "families", check_rail_families (hr));
  json_gen_string (g, "nets");
  json_gen_array_open (g);
  for (size_t k = 0; k < hr->h->n_nets; k++)
    {
      const struct policy_net *n = &hr->h->net[k];
      char sub[CIDR_STR_MAX], size[U128_STR_MAX];
      cleanup_free char *pool = policy_net_pool_text (n);
      json_gen_map_open (g);
      json_gen_kv_string (g, "family", n->subnet.addr.family == AF_INET6 ? "ipv6" : "ipv4");
      json_gen_kv_string (g, "subnet", cidr_format (&n->subnet, sub));
      json_gen_kv_string (g, "pool", pool);
      /* A string: a /64 pool's count is past what a JSON number holds
       * exactly.  */
      json_gen_kv_string (g, "addresses",
                          u128_format (addr_diff (&n->pool_last, &n->pool_first) + 1, size));
      json_gen_string (g, "held");
      if (hr->held_error)
        json_gen_null (g);
      else
        json_gen_integer (g, (int64_t) hr->held[k]);
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
}

static void
json_item (struct json_gen *g, const char *key, const struct probe_item *it, bool ok, int64_t value)
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
json_hca (struct json_gen *g, const struct check_hca *hr)
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
  json_rail (g, hr);
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
  json_gen_string (g, "gid_tables");
  json_gen_array_open (g);
  for (size_t k = 0; k < hr->n_gid_use; k++)
    {
      json_gen_map_open (g);
      json_gen_kv_integer (g, "port", hr->gid_use[k].port);
      json_gen_kv_integer (g, "size", hr->gid_use[k].size);
      json_gen_kv_integer (g, "used", hr->gid_use[k].used);
      json_gen_kv_integer (g, "room_containers", check_gid_room (hr, &hr->gid_use[k]));
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  json_gen_string (g, "checks");
  json_gen_array_open (g);
  for (size_t k = 0; k < hr->f.n; k++)
    json_finding (&hr->f.v[k], g);
  json_gen_array_close (g);
  json_gen_map_close (g);
}

static void
runtime_json (struct json_gen *g, const struct check_report *r)
{
  json_gen_string (g, "runtime");
  json_gen_map_open (g);
  kv_str_or_null (g, "path", r->runtime);
  json_gen_kv_string (g, "source",
                      r->runtime_error                ? "none"
                      : r->runtime_how.candidate >= 0 ? "policy"
                                                      : "default");
  json_gen_kv_integer (g, "candidate",
                       r->runtime_how.candidate >= 0 ? r->runtime_how.candidate : -1);
  kv_str_or_null (g, "error", r->runtime_error);
  kv_str_or_null (g, "other_calls", r->runtime_error ? r->runtime_other : r->runtime);
  json_gen_map_close (g);
}

int
check_render_json (FILE *out, const struct check_report *r, int exit_code, roce_error_t *err)
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
  runtime_json (g, r);
  if (r->nri.n)
    {
      json_gen_string (g, "nri");
      json_gen_array_open (g);
      for (size_t k = 0; k < r->nri.n; k++)
        json_finding (&r->nri.v[k], g);
      json_gen_array_close (g);
    }
  json_gen_string (g, "hcas");
  json_gen_array_open (g);
  for (size_t i = 0; i < r->n; i++)
    json_hca (g, &r->hcas[i]);
  json_gen_array_close (g);
  if (r->topo && topo_view_gpus (r->topo) > 0)
    {
      json_gen_string (g, "topology");
      json_gen_map_open (g);
      topo_view_json (r->topo, g);
      json_gen_map_close (g);
    }
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
