/* SPDX-License-Identifier: Apache-2.0 */
/* A finding: what one check of the host or of a container found, with what
 * was expected and the fix.  The gate (hook/qos), the probes (hook/probe,
 * rdma_cm, the switch) and `check` and `metrics` (hook/report) all speak it;
 * it lives in the base (hook/lib/findings.c) so that no probe reaches into
 * the gate.  */
#ifndef ROCE_FINDINGS_H
#define ROCE_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

/* What one probe read: a value, or why not.  */
enum probe_state
{
  PROBE_OK,
  PROBE_UNSUPPORTED, /* the driver/kernel has no such thing (EOPNOTSUPP, no file) */
  PROBE_ERROR,       /* it should answer and did not (ENODEV, empty read, garbage) */
};

struct probe_item
{
  enum probe_state state;
  int errnum;   /* the errno behind UNSUPPORTED/ERROR, when there is one */
  char *detail; /* UNSUPPORTED/ERROR: what the source said */
  char *source; /* where the value comes from */
};

enum finding_status
{
  FINDING_OK,
  FINDING_WARN,    /* not lossless-critical: never refuses */
  FINDING_UNKNOWN, /* could not be read; refuses when `blocking` */
  FINDING_FAIL,    /* read and wrong: always blocking */
};

struct finding
{
  enum finding_status status;
  bool blocking;     /* qos.mode=enforce refuses on it */
  const char *check; /* "mtu", "pfc", "pfc-other", "dscp", "ecn-np", "ecn-rp",
                        "macvlan-mtu", "nccl-tc", "nccl-sl", "nccl-hca" */
  char *hca;         /* NULL: the container as a whole */
  char *netdev;      /* NULL: idem */
  char *what;        /* "PFC on priority 3 of ens1f0np0 (mlx5_0)" */
  char *expected;
  char *found;
  char *fix; /* the command to type; NULL when there is nothing to do */
  char *source;
};

struct findings
{
  struct finding *v;
  size_t n;
};

void findings_clear (struct findings *f);

/* Appends a zeroed finding (blocking: FAIL always, UNKNOWN when `blocking`);
 * hca/netdev are copied (NULL: the host or the container as a whole).  */
struct finding *findings_push (struct findings *f, enum finding_status st, bool blocking,
                               const char *check, const char *hca, const char *netdev);

const char *finding_status_name (enum finding_status s);

/* The first finding that qos.mode=enforce refuses on, or NULL.  */
const struct finding *findings_first_blocking (const struct findings *f);

/* The finding as the one refusal line: "<what>: <expected> vs <found> (fix: ...)".  */
int finding_refuse (const struct finding *f, roce_error_t *err);

#endif
