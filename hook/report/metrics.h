/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook metrics`: the lossless fabric and the leases in the Prometheus
 * text exposition format, for node_exporter's textfile collector.
 *
 * 1. Collect: per policy HCA the gate's verdicts (the QoS probe and verdict
 *    of qos.h), the RoCE congestion counters (ports/<p>/hw_counters/) and
 *    port counters (ports/<p>/counters/) under sysfs_root, the PFC pause
 *    counters of the netdev's ethtool statistics (SIOCETHTOOL, host netns),
 *    the PFC stall-prevention timeout, the GID table per port, the address
 *    pool and, per lease, who holds it (lease store snapshot).  What a host
 *    does not have (no counter file on upstream kernels or a fake host) is
 *    not an error: the metric is absent and a comment line says why.
 * 2. Render: HELP and TYPE per family, samples grouped by family, label
 *    values escaped as the format wants (backslash, quote, newline; any
 *    other byte that is not printable ASCII as a literal \xNN).
 * 3. Write: to stdout, or atomically to a file (a temporary file in the same
 *    directory, fsync, rename): a reader never sees half a file.  */
#ifndef ROCE_METRICS_H
#define ROCE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipam/lease.h"
#include "lib/error.h"
#include "spec/policy.h"

enum metric_type
{
  METRIC_GAUGE,
  METRIC_COUNTER,
};

struct metric_sample
{
  char *labels; /* rendered and escaped: hca="mlx5_0",port="1"; "" for none */
  char *value;  /* rendered: "1234", "-1", "0.100" */
};

struct metric_family
{
  const char *name; /* static strings: the families are a fixed table */
  const char *help;
  enum metric_type type;
  struct metric_sample *v;
  size_t n;
};

struct metrics
{
  struct metric_family *fam;
  size_t n_fam;
  char **comments; /* NULL-terminated, may be NULL; already one line each */
};

void metrics_clear (struct metrics *m);

/* Adds a sample to the family `name` (created on first use, in that order).
 * The labels are (key, value) string pairs ending with NULL; values are
 * escaped here.  */
void metrics_add (struct metrics *m, const char *name, enum metric_type type, const char *help,
                  const char *value, ...) __attribute__ ((sentinel));
void metrics_add_u64 (struct metrics *m, const char *name, enum metric_type type, const char *help,
                      uint64_t value, ...) __attribute__ ((sentinel));
/* A comment line "# roce-hook: <text>" (text made one printable line).  */
void metrics_comment (struct metrics *m, const char *fmt, ...) ROCE_PRINTF (2, 3);
const struct metric_family *metrics_find (const struct metrics *m, const char *name);

/* A label value in the exposition format's escaping.  Caller frees.  */
char *metrics_escape_label (const char *s);

/* ---- the sources (exposed for the unit tests) ----------------------------------- */

/* One counter file: a decimal u64 with an optional newline.  ENOENT when
 * absent, EINVAL (message) for anything else.  */
int metrics_read_counter (const char *path, uint64_t *out, roce_error_t *err);

/* The RoCE congestion and port counters of every port of hca, the GID table
 * size and entries used per port.  */
void metrics_collect_ports (struct metrics *m, const char *sysfs_root, const char *hca);

/* What one ethtool statistic name means for PFC (mlx5 names).  */
enum ethtool_kind
{
  ETHTOOL_STAT_NONE,
  ETHTOOL_STAT_PRIO_PAUSE,            /* (rx|tx)_prio<N>_pause */
  ETHTOOL_STAT_PRIO_PAUSE_DURATION,   /* (rx|tx)_prio<N>_pause_duration (microseconds) */
  ETHTOOL_STAT_PRIO_PAUSE_TRANSITION, /* (rx|tx)_prio<N>_pause_transition */
  ETHTOOL_STAT_PRIO_BYTES,            /* (rx|tx)_prio<N>_bytes */
  ETHTOOL_STAT_PRIO_PACKETS,          /* (rx|tx)_prio<N>_packets */
  ETHTOOL_STAT_PAUSE,                 /* (rx|tx)_pause_ctrl_phy: global 802.3x pause */
  ETHTOOL_STAT_DISCARDS,              /* (rx|tx)_discards_phy */
};

struct ethtool_class
{
  enum ethtool_kind kind;
  const char *direction; /* "rx", "tx" */
  int prio;              /* 0..7, -1 when the statistic has none */
};

bool metrics_ethtool_classify (const char *name, struct ethtool_class *out);

struct ethtool_values
{
  char **names; /* NULL-terminated */
  uint64_t *values;
  size_t n;
};

/* ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS, ETHTOOL_GSTATS on netdev, from the
 * calling process's network namespace.  */
int metrics_ethtool_read (const char *netdev, struct ethtool_values *out, roce_error_t *err);
void metrics_ethtool_clear (struct ethtool_values *s);
/* The PFC samples of st (a comment when there are none).  */
void metrics_add_ethtool (struct metrics *m, const char *hca, const char *netdev,
                          const struct ethtool_values *st);

/* Pool size and addresses held per HCA, and one gauge per lease and
 * container (1: a container uses it; 0: the holder has no container now,
 * with container = the one that took it).  only: one HCA, or NULL.  */
void metrics_add_leases (struct metrics *m, const struct roce_policy *p, const char *only,
                         const struct lease_store *s);

/* ---- the command ------------------------------------------------------------ */

/* Everything above for the policy's HCAs (or only `hca`).  Fails only for an
 * HCA the policy does not list.  */
int metrics_collect (const struct roce_policy *p, const char *hca, struct metrics *out,
                     roce_error_t *err);
/* The exposition text.  Caller frees.  */
char *metrics_render (const struct metrics *m);

#endif
