/* SPDX-License-Identifier: Apache-2.0 */
/* `metrics`' families collected (the gate's verdicts, the leases and blocks)
 * and rendered in the Prometheus text format.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "ipam/blocks/blocks.h"
#include "lib/ipaddr.h"
#include "lib/utils.h"
#include "lldp/lldp.h"
#include "net/gid.h"
#include "qos/qos.h"
#include "report/metrics.h"
#include "sys/sysfs.h"

/* ---- samples ------------------------------------------------------------------ */

void
metrics_clear (struct metrics *m)
{
  for (size_t i = 0; i < m->n_fam; i++)
    {
      for (size_t k = 0; k < m->fam[i].n; k++)
        {
          free (m->fam[i].v[k].labels);
          free (m->fam[i].v[k].value);
        }
      free (m->fam[i].v);
    }
  free (m->fam);
  strv_free (m->comments);
  memset (m, 0, sizeof (*m));
}

char *
metrics_escape_label (const char *s)
{
  size_t n = 0;
  char *out, *o;

  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    n += (*p == '\\' || *p == '"' || *p == '\n') ? 2 : (*p < 0x20 || *p > 0x7e) ? 5 : 1;
  out = o = xmalloc0 (n + 1);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    {
      if (*p == '\\' || *p == '"')
        {
          *o++ = '\\';
          *o++ = (char) *p;
        }
      else if (*p == '\n')
        {
          *o++ = '\\';
          *o++ = 'n';
        }
      else if (*p < 0x20 || *p > 0x7e)
        {
          /* Not valid UTF-8 perhaps, and no terminal should see it: an
           * escaped backslash, so the value reads \xNN.  */
          snprintf (o, 6, "\\\\x%02x", *p);
          o += 5;
        }
      else
        *o++ = (char) *p;
    }
  *o = '\0';
  return out;
}

const struct metric_family *
metrics_find (const struct metrics *m, const char *name)
{
  for (size_t i = 0; i < m->n_fam; i++)
    if (strcmp (m->fam[i].name, name) == 0)
      return &m->fam[i];
  return NULL;
}

static struct metric_family *
family (struct metrics *m, const char *name, enum metric_type type, const char *help)
{
  struct metric_family *f = (struct metric_family *) metrics_find (m, name);
  if (f)
    return f;
  m->fam = xrealloc (m->fam, (m->n_fam + 1) * sizeof (*m->fam));
  f = &m->fam[m->n_fam++];
  *f = (struct metric_family){ .name = name, .help = help, .type = type };
  return f;
}

struct buf
{
  char *s;
  size_t len, cap;
};

static void
buf_add (struct buf *b, const char *s, size_t n)
{
  if (b->len + n + 1 > b->cap)
    {
      b->cap = (b->len + n + 1) * 2;
      b->s = xrealloc (b->s, b->cap);
    }
  memcpy (b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void
buf_str (struct buf *b, const char *s)
{
  buf_add (b, s, strlen (s));
}

static void
add_va (struct metrics *m, const char *name, enum metric_type type, const char *help, char *value,
        va_list ap)
{
  struct metric_family *f = family (m, name, type, help);
  struct buf labels = { 0 };
  const char *k;

  buf_str (&labels, "");
  while ((k = va_arg (ap, const char *)) != NULL)
    {
      const char *v = va_arg (ap, const char *);
      cleanup_free char *esc = metrics_escape_label (v ? v : "");
      if (labels.len)
        buf_str (&labels, ",");
      buf_str (&labels, k);
      buf_str (&labels, "=\"");
      buf_str (&labels, esc);
      buf_str (&labels, "\"");
    }
  f->v = xrealloc (f->v, (f->n + 1) * sizeof (*f->v));
  f->v[f->n++] = (struct metric_sample){ .labels = labels.s, .value = value };
}

void
metrics_add (struct metrics *m, const char *name, enum metric_type type, const char *help,
             const char *value, ...)
{
  va_list ap;
  va_start (ap, value);
  add_va (m, name, type, help, xstrdup (value), ap);
  va_end (ap);
}

void
metrics_add_u64 (struct metrics *m, const char *name, enum metric_type type, const char *help,
                 uint64_t value, ...)
{
  va_list ap;
  va_start (ap, value);
  add_va (m, name, type, help, xasprintf ("%" PRIu64, value), ap);
  va_end (ap);
}

void
metrics_comment (struct metrics *m, const char *fmt, ...)
{
  cleanup_free char *esc = NULL;
  va_list ap;

  va_start (ap, fmt);
  esc = xvasprintf_escaped (fmt, ap);
  va_end (ap);
  strv_push (&m->comments, esc);
}

/* ---- rendering --------------------------------------------------------------- */

char *
metrics_render (const struct metrics *m)
{
  struct buf b = { 0 };

  buf_str (&b, "");
  for (char **c = m->comments; c && *c; c++)
    {
      buf_str (&b, "# roce-hook: ");
      buf_str (&b, *c);
      buf_str (&b, "\n");
    }
  for (size_t i = 0; i < m->n_fam; i++)
    {
      const struct metric_family *f = &m->fam[i];
      if (f->n == 0)
        continue;
      buf_str (&b, "# HELP ");
      buf_str (&b, f->name);
      buf_str (&b, " ");
      buf_str (&b, f->help); /* fixed text: no backslash, no newline */
      buf_str (&b, "\n# TYPE ");
      buf_str (&b, f->name);
      buf_str (&b, f->type == METRIC_COUNTER ? " counter\n" : " gauge\n");
      for (size_t k = 0; k < f->n; k++)
        {
          buf_str (&b, f->name);
          if (*f->v[k].labels)
            {
              buf_str (&b, "{");
              buf_str (&b, f->v[k].labels);
              buf_str (&b, "}");
            }
          buf_str (&b, " ");
          buf_str (&b, f->v[k].value);
          buf_str (&b, "\n");
        }
    }
  return b.s;
}

/* ---- sysfs counters -------------------------------------------------------------- */

int
metrics_read_counter (const char *path, uint64_t *out, roce_error_t *err)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  char buf[64];
  ssize_t n;

  if (fd < 0)
    return roce_error_sys (err, errno, "%s", path);
  do
    n = read (fd, buf, sizeof (buf) - 1);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return roce_error_sys (err, errno, "%s", path);
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
    buf[--n] = '\0';
  if (parse_u64 (buf, out) < 0)
    return roce_error_make (err, EINVAL,
                            "%s: not a counter (%zd bytes that are not a decimal "
                            "number)",
                            path, n);
  return 0;
}

struct counter_def
{
  const char *file;
  const char *name;
  const char *help;
  unsigned scale; /* the file counts in units of this many of the metric's */
};

/* ports/<p>/hw_counters/: what the RoCE congestion control and the
 * transport did (mlx5 names; other drivers have some of them).  */
static const struct counter_def hw_counters[] = {
  { "np_ecn_marked_roce_packets", "roce_np_ecn_marked_roce_packets_total",
    "RoCE packets received with ECN congestion marks (notification point, "
    "hw_counters/np_ecn_marked_roce_packets).",
    1 },
  { "np_cnp_sent", "roce_np_cnp_sent_total",
    "Congestion notification packets sent by the notification point (hw_counters/np_cnp_sent).",
    1 },
  { "rp_cnp_handled", "roce_rp_cnp_handled_total",
    "CNPs the reaction point handled by slowing down (hw_counters/rp_cnp_handled).", 1 },
  { "rp_cnp_ignored", "roce_rp_cnp_ignored_total",
    "CNPs the reaction point ignored (hw_counters/rp_cnp_ignored).", 1 },
  { "out_of_sequence", "roce_out_of_sequence_total",
    "Out-of-sequence packets received: a packet was lost and go-back-N followed "
    "(hw_counters/out_of_sequence).",
    1 },
  { "packet_seq_err", "roce_packet_seq_err_total",
    "NAK sequence errors received (hw_counters/packet_seq_err).", 1 },
  { "local_ack_timeout_err", "roce_local_ack_timeout_err_total",
    "Local ACK timeouts: the sender got no ACK in time (hw_counters/local_ack_timeout_err).", 1 },
  { "roce_adp_retrans", "roce_adp_retrans_total",
    "Adaptive retransmissions of RoCE traffic (hw_counters/roce_adp_retrans).", 1 },
};

/* ports/<p>/counters/: the IB port counters (data in units of 4 octets).  */
static const struct counter_def port_counters[] = {
  { "port_xmit_data", "roce_port_transmit_bytes_total",
    "Bytes transmitted on the port (counters/port_xmit_data times 4).", 4 },
  { "port_rcv_data", "roce_port_receive_bytes_total",
    "Bytes received on the port (counters/port_rcv_data times 4).", 4 },
  { "port_xmit_packets", "roce_port_transmit_packets_total",
    "Packets transmitted on the port (counters/port_xmit_packets).", 1 },
  { "port_rcv_packets", "roce_port_receive_packets_total",
    "Packets received on the port (counters/port_rcv_packets).", 1 },
  { "port_rcv_errors", "roce_port_receive_errors_total",
    "Packets received with errors (counters/port_rcv_errors).", 1 },
  { "port_xmit_discards", "roce_port_transmit_discards_total",
    "Outbound packets discarded (counters/port_xmit_discards).", 1 },
  { "port_xmit_wait", "roce_port_transmit_wait_total",
    "Ticks the port had data to send and could not (counters/port_xmit_wait).", 1 },
  { "link_downed", "roce_port_link_downed_total",
    "Times the link went down (counters/link_downed).", 1 },
  { "symbol_error", "roce_port_symbol_errors_total", "Minor link errors (counters/symbol_error).",
    1 },
};

static int
cmp_unsigned (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  return x < y ? -1 : x > y;
}

/* The numeric entries of dir, sorted; NULL (errno set) when dir cannot be
 * opened.  */
static unsigned *
numeric_entries (const char *dir, size_t *n)
{
  cleanup_dir DIR *d = opendir (dir);
  unsigned *v = NULL;
  size_t cap = 0;
  struct dirent *de;

  *n = 0;
  if (d == NULL)
    return NULL;
  v = xmalloc0 (sizeof (*v));
  while ((de = readdir (d)) != NULL)
    {
      unsigned idx;
      if (! gid_parse_index (de->d_name, &idx))
        continue;
      if (*n + 1 > cap)
        {
          cap = cap ? cap * 2 : 64;
          v = xrealloc (v, cap * sizeof (*v));
        }
      v[(*n)++] = idx;
    }
  if (*n > 1)
    qsort (v, *n, sizeof (*v), cmp_unsigned);
  return v;
}

static void
port_counter_set (struct metrics *m, const char *portdir, const char *sub, const char *hca,
                  const char *port, const struct counter_def *defs, size_t ndefs,
                  const char *absent_why)
{
  cleanup_free char *dir = xasprintf ("%s/%s", portdir, sub);
  cleanup_dir DIR *d = opendir (dir);
  size_t found = 0;

  if (d == NULL)
    {
      metrics_comment (m, "%s port %s: no %s (%s: %s): %s", hca, port, sub, dir, strerror (errno),
                       absent_why);
      return;
    }
  for (size_t i = 0; i < ndefs; i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_free char *path = xasprintf ("%s/%s", dir, defs[i].file);
      uint64_t v;

      if (metrics_read_counter (path, &v, &err) < 0)
        {
          if (err->status != ENOENT)
            metrics_comment (m, "%s port %s: %s left out: %s", hca, port, defs[i].file, err->msg);
          continue;
        }
      found++;
      v = v > UINT64_MAX / defs[i].scale ? UINT64_MAX : v * defs[i].scale;
      metrics_add_u64 (m, defs[i].name, METRIC_COUNTER, defs[i].help, v, "hca", hca, "port", port,
                       NULL);
    }
  if (found == 0)
    metrics_comment (m, "%s port %s: none of the counters this exports is in %s: %s", hca, port,
                     dir, absent_why);
}

static void
port_gids (struct metrics *m, const char *portdir, const char *hca, const char *port)
{
  cleanup_error roce_error_t err = NULL;
  unsigned n, used;

  if (gid_port_count (portdir, &n, &used, &err) < 0)
    {
      metrics_comment (m, "%s port %s: no GID table (%s)", hca, port, err->msg);
      return;
    }
  metrics_add_u64 (m, "roce_gid_table_entries", METRIC_GAUGE,
                   "Entries of the port's GID table (ports/<p>/gids/*).", n, "hca", hca, "port",
                   port, NULL);
  metrics_add_u64 (m, "roce_gid_table_entries_used", METRIC_GAUGE,
                   "GID table entries in use (a non-zero GID; every address on the port or a "
                   "macvlan on it takes one per RoCE version).",
                   used, "hca", hca, "port", port, NULL);
}

void
metrics_collect_ports (struct metrics *m, const char *sysfs_root, const char *hca)
{
  cleanup_free char *pdir = xasprintf ("%s/class/infiniband/%s/ports", sysfs_root, hca);
  cleanup_free unsigned *ports = NULL;
  size_t n = 0;

  ports = numeric_entries (pdir, &n);
  if (ports == NULL)
    {
      metrics_comment (m, "%s: no ports (%s: %s): its counters and GID table are absent", hca, pdir,
                       strerror (errno));
      return;
    }
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *portdir = xasprintf ("%s/%u", pdir, ports[i]);
      char port[16];
      snprintf (port, sizeof (port), "%u", ports[i]);
      port_counter_set (m, portdir, "hw_counters", hca, port, hw_counters, ARRAY_SIZE (hw_counters),
                        "the RoCE congestion counters are absent (the driver exposes none here)");
      port_counter_set (m, portdir, "counters", hca, port, port_counters,
                        ARRAY_SIZE (port_counters), "the port counters are absent");
      port_gids (m, portdir, hca, port);
    }
}

/* ---- ethtool statistics --------------------------------------------------------- */

static const char *
skip_word (const char *s, const char *w)
{
  size_t n = strlen (w);
  return strncmp (s, w, n) == 0 ? s + n : NULL;
}

bool
metrics_ethtool_classify (const char *name, struct ethtool_class *out)
{
  static const struct
  {
    const char *rest;
    enum ethtool_kind kind;
  } prio_kinds[] = {
    { "pause", ETHTOOL_STAT_PRIO_PAUSE },
    { "pause_duration", ETHTOOL_STAT_PRIO_PAUSE_DURATION },
    { "pause_transition", ETHTOOL_STAT_PRIO_PAUSE_TRANSITION },
    { "bytes", ETHTOOL_STAT_PRIO_BYTES },
    { "packets", ETHTOOL_STAT_PRIO_PACKETS },
  };
  const char *p;

  *out = (struct ethtool_class){ .kind = ETHTOOL_STAT_NONE, .prio = -1 };
  if ((p = skip_word (name, "rx_")) != NULL)
    out->direction = "rx";
  else if ((p = skip_word (name, "tx_")) != NULL)
    out->direction = "tx";
  else
    return false;
  if (strcmp (p, "pause_ctrl_phy") == 0)
    out->kind = ETHTOOL_STAT_PAUSE;
  else if (strcmp (p, "discards_phy") == 0)
    out->kind = ETHTOOL_STAT_DISCARDS;
  else if ((p = skip_word (p, "prio")) != NULL && p[0] >= '0' && p[0] <= '7' && p[1] == '_')
    {
      for (size_t i = 0; i < ARRAY_SIZE (prio_kinds); i++)
        if (strcmp (p + 2, prio_kinds[i].rest) == 0)
          {
            out->kind = prio_kinds[i].kind;
            out->prio = p[0] - '0';
          }
    }
  return out->kind != ETHTOOL_STAT_NONE;
}

void
metrics_ethtool_clear (struct ethtool_values *s)
{
  strv_free (s->names);
  free (s->values);
  memset (s, 0, sizeof (*s));
}

static int
ethtool_ioctl (int fd, const char *netdev, void *data, const char *what, roce_error_t *err)
{
  struct ifreq ifr = { 0 };
  snprintf (ifr.ifr_name, sizeof (ifr.ifr_name), "%s", netdev);
  ifr.ifr_data = data;
  if (ioctl (fd, SIOCETHTOOL, &ifr) < 0)
    return roce_error_sys (err, errno, "ethtool ioctl %s on %s", what, netdev);
  return 0;
}

/* The number of statistics: ETHTOOL_GSSET_INFO, else ETHTOOL_GDRVINFO.  */
static int
ethtool_count (int fd, const char *netdev, size_t *n, roce_error_t *err)
{
  union
  {
    struct ethtool_sset_info info;
    unsigned char raw[sizeof (struct ethtool_sset_info) + sizeof (uint32_t)];
  } s;
  struct ethtool_drvinfo drv = { .cmd = ETHTOOL_GDRVINFO };
  cleanup_error roce_error_t first = NULL;

  memset (&s, 0, sizeof (s));
  s.info.cmd = ETHTOOL_GSSET_INFO;
  s.info.sset_mask = 1ULL << ETH_SS_STATS;
  if (ethtool_ioctl (fd, netdev, &s, "ETHTOOL_GSSET_INFO", &first) == 0)
    {
      uint32_t v;
      memcpy (&v, s.raw + sizeof (struct ethtool_sset_info), sizeof (v));
      *n = (s.info.sset_mask & (1ULL << ETH_SS_STATS)) ? v : 0;
      return 0;
    }
  if (first->status != EOPNOTSUPP)
    return roce_error_make (err, first->status, "%s", first->msg);
  if (ethtool_ioctl (fd, netdev, &drv, "ETHTOOL_GDRVINFO", err) < 0)
    return -1;
  *n = drv.n_stats;
  return 0;
}

#define ETHTOOL_STATS_MAX 65536
/* The kernel writes as many entries as it has now, whatever the request
 * says: room for a few more than counted, and a check.  */
#define ETHTOOL_SLACK 64

static int
ethtool_read_once (int fd, const char *netdev, struct ethtool_values *out, bool *changed,
                   roce_error_t *err)
{
  cleanup_free struct ethtool_gstrings *gs = NULL;
  cleanup_free struct ethtool_stats *st = NULL;
  size_t n = 0;

  *changed = false;
  if (ethtool_count (fd, netdev, &n, err) < 0)
    return -1;
  if (n > ETHTOOL_STATS_MAX)
    return roce_error_make (err, E2BIG, "ethtool: %s reports %zu statistics", netdev, n);
  if (n == 0)
    {
      out->names = xmalloc0 (sizeof (char *));
      return 0;
    }
  gs = xmalloc0 (sizeof (*gs) + (n + ETHTOOL_SLACK) * ETH_GSTRING_LEN);
  gs->cmd = ETHTOOL_GSTRINGS;
  gs->string_set = ETH_SS_STATS;
  gs->len = (uint32_t) n;
  if (ethtool_ioctl (fd, netdev, gs, "ETHTOOL_GSTRINGS", err) < 0)
    return -1;
  st = xmalloc0 (sizeof (*st) + (n + ETHTOOL_SLACK) * sizeof (uint64_t));
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = (uint32_t) n;
  if (ethtool_ioctl (fd, netdev, st, "ETHTOOL_GSTATS", err) < 0)
    return -1;
  if (gs->len != n || st->n_stats != n)
    {
      *changed = true;
      return 0;
    }
  out->names = xmalloc0 ((n + 1) * sizeof (char *));
  out->values = xmalloc0 (n * sizeof (uint64_t));
  for (size_t i = 0; i < n; i++)
    {
      out->names[i] = xstrndup ((const char *) gs->data + i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
      out->values[i] = st->data[i];
    }
  out->n = n;
  return 0;
}

int
metrics_ethtool_read (const char *netdev, struct ethtool_values *out, roce_error_t *err)
{
  cleanup_close int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

  memset (out, 0, sizeof (*out));
  if (fd < 0)
    return roce_error_sys (err, errno, "socket");
  if (strlen (netdev) >= IFNAMSIZ)
    return roce_error_make (err, EINVAL, "netdev '%s' is not an interface name", netdev);
  for (int attempt = 0; attempt < 3; attempt++)
    {
      bool changed = false;
      if (ethtool_read_once (fd, netdev, out, &changed, err) < 0)
        return -1;
      if (! changed)
        return 0;
    }
  return roce_error_make (err, EAGAIN, "ethtool: the statistics of %s kept changing while read",
                          netdev);
}

/* Microseconds as seconds, exactly.  */
static char *
us_to_seconds (uint64_t us)
{
  return xasprintf ("%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

/* The family of each ethtool statistic this exports (metrics_ethtool_classify's kinds).  */
static const struct
{
  const char *name;
  const char *help;
  bool per_prio;   /* labelled with its priority */
  bool in_seconds; /* the driver counts microseconds */
} ethtool_families[] = {
  [ETHTOOL_STAT_PRIO_PAUSE] = { "roce_pfc_pause_frames_total",
                                "PFC pause frames per priority and direction (ethtool "
                                "rx_prio<N>_pause, tx_prio<N>_pause).",
                                true, false },
  [ETHTOOL_STAT_PRIO_PAUSE_DURATION] = { "roce_pfc_pause_duration_seconds_total",
                                         "Time spent paused by PFC per priority and direction "
                                         "(ethtool *_prio<N>_pause_duration, microseconds).",
                                         true, true },
  [ETHTOOL_STAT_PRIO_PAUSE_TRANSITION] = { "roce_pfc_pause_transitions_total",
                                           "Transitions between paused and not paused per "
                                           "priority (ethtool *_prio<N>_pause_transition).",
                                           true, false },
  [ETHTOOL_STAT_PRIO_BYTES]
  = { "roce_priority_bytes_total", "Bytes per priority and direction (ethtool *_prio<N>_bytes).",
      true, false },
  [ETHTOOL_STAT_PRIO_PACKETS]
  = { "roce_priority_packets_total",
      "Packets per priority and direction (ethtool *_prio<N>_packets).", true, false },
  [ETHTOOL_STAT_PAUSE]
  = { "roce_pause_frames_total",
      "Global (802.3x) pause frames per direction (ethtool *_pause_ctrl_phy).", false, false },
  [ETHTOOL_STAT_DISCARDS]
  = { "roce_netdev_discards_total",
      "Packets the port discarded per direction (ethtool *_discards_phy).", false, false },
};

void
metrics_add_ethtool (struct metrics *m, const char *hca, const char *netdev,
                     const struct ethtool_values *st)
{
  size_t pfc = 0;

  metrics_add_u64 (m, "roce_ethtool_statistics", METRIC_GAUGE,
                   "Statistics the netdev's driver exposes through ethtool (ETHTOOL_GSTATS).",
                   (uint64_t) st->n, "hca", hca, "netdev", netdev, NULL);
  for (size_t i = 0; i < st->n; i++)
    {
      struct ethtool_class c;
      cleanup_free char *value = NULL;
      char prio[4];

      if (! metrics_ethtool_classify (st->names[i], &c) || c.kind == ETHTOOL_STAT_NONE
          || (size_t) c.kind >= sizeof (ethtool_families) / sizeof (ethtool_families[0]))
        continue;
      if (c.kind == ETHTOOL_STAT_PRIO_PAUSE)
        pfc++;
      value = ethtool_families[c.kind].in_seconds ? us_to_seconds (st->values[i])
                                                  : xasprintf ("%" PRIu64, st->values[i]);
      if (ethtool_families[c.kind].per_prio)
        {
          snprintf (prio, sizeof (prio), "%d", c.prio);
          metrics_add (m, ethtool_families[c.kind].name, METRIC_COUNTER,
                       ethtool_families[c.kind].help, value, "hca", hca, "netdev", netdev,
                       "direction", c.direction, "priority", prio, NULL);
        }
      else
        metrics_add (m, ethtool_families[c.kind].name, METRIC_COUNTER,
                     ethtool_families[c.kind].help, value, "hca", hca, "netdev", netdev,
                     "direction", c.direction, NULL);
    }
  if (pfc == 0)
    metrics_comment (m,
                     "%s: %s: no PFC pause counters (rx_prio<N>_pause) among its %zu ethtool "
                     "statistics: the PFC metrics of this netdev are absent",
                     hca, netdev, st->n);
}

/* ---- pools and leases ------------------------------------------------------------ */

#define LEASE_HELP                                                                                 \
  "A lease: 1 per container using the address, 0 when no container uses it now (container: the "   \
  "one that took it; it is released once its network namespace and interfaces are gone, by the "   \
  "hook after the last container's stop, else by gc)."

/* With `cluster`: the blocks the pool divides into (the same on every
 * node: the cluster's room) and those this node holds; their sum over the
 * nodes against the former is the cluster's use (an alert in
 * contrib/prometheus/roce-alerts.yml), which no node sees alone.  */
/* A count past what a u64 holds (a /64 pool's addresses) is said as its
 * most.  */
static uint64_t
u64_of (roce_u128 v)
{
  return v > UINT64_MAX ? UINT64_MAX : (uint64_t) v;
}

/* The label a rail's second net (a dual-stack rail's IPv6, hcas.<hca>.pool6)
 * adds to its pool's samples; NULL for the first, whose samples are the
 * HCA's alone as they always were.  As the last label pair of a call, a
 * NULL name ends the list there.  */
static const char *
family_label (const struct policy_hca *h, const struct policy_net *net)
{
  return net != &h->net[0] ? "family" : NULL;
}

static void
metrics_add_blocks (struct metrics *m, const struct roce_policy *p, const struct policy_hca *h,
                    const struct policy_net *net, const struct lease_store *s)
{
  const struct policy_cluster *c = p->cluster;
  struct roce_addr f0 = blocks_align (c, &net->pool_first), fl = blocks_align (c, &net->pool_last);
  uint64_t total = u64_of (addr_diff (&fl, &f0) / c->block + 1);
  uint64_t held = 0;
  for (size_t b = 0; b < s->n_blocks; b++)
    {
      struct roce_addr lo, hi;
      if (cidr_eq (&s->blocks[b].subnet, &net->subnet)
          && blocks_usable (c, net, &s->blocks[b].first, &lo, &hi))
        held++;
    }
  metrics_add_u64 (
      m, "roce_cluster_pool_blocks", METRIC_GAUGE,
      "Blocks of cluster.block addresses the HCA's pool divides into: the cluster's room "
      "for nodes on this rail (the same on every node).",
      total, "hca", h->name, family_label (h, net), "ipv6", NULL);
  metrics_add_u64 (
      m, "roce_cluster_blocks_held", METRIC_GAUGE,
      "Blocks of the HCA's pool this node holds in etcd (summed over nodes: the cluster's "
      "use).",
      held, "hca", h->name, family_label (h, net), "ipv6", NULL);
}

/* A pool's size and the addresses held in it; an IPv6 pool past 2^64
 * addresses says 2^64 - 1.  */
static void
metrics_add_pool (struct metrics *m, const struct roce_policy *p, const struct policy_hca *h,
                  const struct policy_net *net, const struct lease_store *s)
{
  uint64_t held = lease_store_held (s, h->name, &net->pool_first, &net->pool_last);
  metrics_add_u64 (m, "roce_pool_addresses", METRIC_GAUGE,
                   "Addresses in the HCA's pool (policy hcas.<hca>.pool; a dual-stack rail's "
                   "pool6 with family=\"ipv6\").",
                   u64_of (addr_diff (&net->pool_last, &net->pool_first) + 1), "hca", h->name,
                   family_label (h, net), "ipv6", NULL);
  metrics_add_u64 (m, "roce_pool_addresses_held", METRIC_GAUGE,
                   "Addresses of the HCA's pool held by a lease.", held, "hca", h->name,
                   family_label (h, net), "ipv6", NULL);
  if (p->cluster)
    metrics_add_blocks (m, p, h, net, s);
}

void
metrics_add_leases (struct metrics *m, const struct roce_policy *p, const char *only,
                    const struct lease_store *s)
{
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      const struct policy_hca *h = &p->hcas[i];
      if (only && strcmp (only, h->name) != 0)
        continue;
      for (size_t k = 0; k < h->n_nets; k++)
        metrics_add_pool (m, p, h, &h->net[k], s);
    }
  for (size_t k = 0; k < s->n; k++)
    {
      const struct lease_holder *h = s->h[k];
      for (size_t a = 0; a < h->n_addrs; a++)
        {
          const struct lease_addr *la = &h->addrs[a];
          char addr[ADDR_STR_MAX];

          if (only && strcmp (only, la->hca) != 0)
            continue;
          addr_format (&la->addr, addr);
          if (strv_len (h->containers) == 0)
            metrics_add (m, "roce_lease", METRIC_GAUGE, LEASE_HELP, "0", "hca", la->hca, "address",
                         addr, "ifname", la->ifname, "container", h->owner, NULL);
          for (char **c = h->containers; c && *c; c++)
            metrics_add (m, "roce_lease", METRIC_GAUGE, LEASE_HELP, "1", "hca", la->hca, "address",
                         addr, "ifname", la->ifname, "container", *c, NULL);
        }
    }
}

/* ---- the gate ----------------------------------------------------------------------- */

static const char *
verdict_value (enum finding_status s)
{
  switch (s)
    {
      case FINDING_OK:
        return "1";
      case FINDING_WARN:
      case FINDING_FAIL:
        return "0";
      case FINDING_UNKNOWN:
        break;
    }
  return "-1";
}

#define GATE_CHECK_HELP                                                                            \
  "Each check of the QoS gate: 1 pass, 0 fail, -1 unknown (could not be read; roce-hook "          \
  "check says why)."
#define GATE_BLOCKING_HELP                                                                         \
  "Findings that refuse annotated containers on this HCA under qos.mode enforce."

/* The age of the switch port's last LLDP frame (its verdicts are
 * roce_gate_check's switch-* checks).  */
static void
switch_age (struct metrics *m, const struct policy_hca *h, const char *netdev,
            const struct qos_probe *pr)
{
  char id[2 * LLDP_TEXT_MAX + 2];
  if (! pr->sw_loaded)
    return;
  if (pr->sw.state != LLDP_SEEN_OK && pr->sw.state != LLDP_SEEN_EXPIRED)
    {
      metrics_comment (m, "%s: %s: no switch LLDP frame: %s", h->name, netdev,
                       pr->sw.detail ? pr->sw.detail : "not heard");
      return;
    }
  lldp_identity (&pr->sw.info, id, sizeof (id));
  metrics_add_u64 (m, "roce_switch_lldp_age_seconds", METRIC_GAUGE,
                   "Seconds since the switch port's last LLDP frame was heard on the netdev "
                   "(roce-hook lldp --watch); past roce_switch_lldp_ttl_seconds the switch "
                   "checks are unknown.",
                   (uint64_t) pr->sw.age, "hca", h->name, "netdev", netdev, "switch", id, NULL);
  metrics_add_u64 (m, "roce_switch_lldp_ttl_seconds", METRIC_GAUGE,
                   "The TTL of the switch port's last LLDP frame (0: withdrawn).", pr->sw.info.ttl,
                   "hca", h->name, "netdev", netdev, "switch", id, NULL);
}

static void
gate (struct metrics *m, const struct roce_policy *p, const struct policy_hca *h)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *netdev = NULL;
  struct qos_probe pr = { 0 };
  struct findings f = { 0 };
  const struct finding *first;
  uint64_t blocking = 0;

  if (sysfs_hca_netdev (p, h, &netdev, &err) < 0 || qos_probe_run (p, netdev, &pr, &err) < 0)
    {
      metrics_comment (m, "%s: not probed: %s", h->name, err->msg);
      metrics_add (m, "roce_gate_check", METRIC_GAUGE, GATE_CHECK_HELP, "0", "hca", h->name,
                   "netdev", netdev ? netdev : "", "check", "netdev", NULL);
      metrics_add (m, "roce_gate_blocking_findings", METRIC_GAUGE, GATE_BLOCKING_HELP, "1", "hca",
                   h->name, "netdev", netdev ? netdev : "", NULL);
      return;
    }

  {
    struct qos_subject s = { .hca = h->name, .probe = &pr };
    qos_verdict (p, &s, 1, NULL, &f);
  }
  for (size_t i = 0; i < f.n; i++)
    {
      metrics_add (m, "roce_gate_check", METRIC_GAUGE, GATE_CHECK_HELP,
                   verdict_value (f.v[i].status), "hca", h->name, "netdev", netdev, "check",
                   f.v[i].check, NULL);
      if (f.v[i].blocking)
        blocking++;
    }
  metrics_add_u64 (m, "roce_gate_blocking_findings", METRIC_GAUGE, GATE_BLOCKING_HELP, blocking,
                   "hca", h->name, "netdev", netdev, NULL);
  switch_age (m, h, netdev, &pr);
  if ((first = findings_first_blocking (&f)) != NULL)
    metrics_comment (m,
                     "%s: the gate refuses containers under qos.mode enforce (roce-hook check "
                     "--hca %s lists every finding); the first: %s: %s vs %s",
                     h->name, h->name, first->what, first->expected, first->found);

  if (pr.stall.state == PROBE_OK)
    {
      cleanup_free char *v = xasprintf ("%u.%03u", pr.stall_ms / 1000, pr.stall_ms % 1000);
      metrics_add (m, "roce_pfc_stall_prevention_seconds", METRIC_GAUGE,
                   "PFC storm (stall) prevention timeout of the netdev (ethtool tunable "
                   "pfc-prevention-tout); 0: disabled.",
                   v, "hca", h->name, "netdev", netdev, NULL);
    }
  else
    metrics_comment (m, "%s: %s: no PFC stall prevention value (%s: %s)", h->name, netdev,
                     pr.stall.source ? pr.stall.source : "ethtool",
                     pr.stall.state == PROBE_UNSUPPORTED ? "not supported by this netdev"
                     : pr.stall.detail                   ? pr.stall.detail
                                                         : "unreadable");

  {
    cleanup_error roce_error_t eerr = NULL;
    struct ethtool_values st = { 0 };
    if (metrics_ethtool_read (netdev, &st, &eerr) < 0)
      metrics_comment (m,
                       "%s: %s: no ethtool statistics (%s): the PFC metrics of this netdev "
                       "are absent",
                       h->name, netdev, eerr->msg);
    else
      metrics_add_ethtool (m, h->name, netdev, &st);
    metrics_ethtool_clear (&st);
  }
  findings_clear (&f);
  qos_probe_clear (&pr);
}

/* ---- the command ------------------------------------------------------------------ */

int
metrics_collect (const struct roce_policy *p, const char *hca, struct metrics *out,
                 roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t lerr = NULL;
  char prio[8], dscp[8];

  memset (out, 0, sizeof (*out));
  if (hca && policy_find_hca (p, hca) == NULL)
    {
      cleanup_free char *names = policy_hca_names (p);
      cleanup_free char *found = xasprintf ("'%s'", hca);
      cleanup_free char *fix = xasprintf ("pick one of %s", names);
      return roce_error_refuse (err, "--hca", "an HCA of the policy", found, fix);
    }
  snprintf (prio, sizeof (prio), "%u", p->qos.pfc_priority);
  snprintf (dscp, sizeof (dscp), "%u", p->qos.dscp);
  metrics_add (out, "roce_policy_info", METRIC_GAUGE, "The node policy's QoS settings (always 1).",
               "1", "qos_mode", qos_mode_name (p->qos.mode), "pfc_priority", prio, "dscp", dscp,
               "ecn", qos_ecn_name (p->qos.ecn), NULL);
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      if (hca && strcmp (hca, p->hcas[i].name) != 0)
        continue;
      gate (out, p, &p->hcas[i]);
      metrics_collect_ports (out, p->sysfs_root, p->hcas[i].name);
    }
  if (lease_store_snapshot (p->state_dir, &s, &lerr) < 0)
    {
      metrics_comment (out, "lease store unreadable: %s", lerr->msg);
      metrics_add (out, "roce_lease_store_readable", METRIC_GAUGE,
                   "Whether the lease store under state_dir could be read.", "0", NULL);
      return 0;
    }
  metrics_add (out, "roce_lease_store_readable", METRIC_GAUGE,
               "Whether the lease store under state_dir could be read.", "1", NULL);
  metrics_add_leases (out, p, hca, s);
  return 0;
}
