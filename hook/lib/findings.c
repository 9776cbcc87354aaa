/* SPDX-License-Identifier: Apache-2.0 */
/* Findings: what a check found (status, expected, found, the fix), the one
 * shape the gate, the probes and `check` share (findings.h).  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "utils.h"

static const char *const status_names[] = {
  [QOS_OK] = "OK",
  [QOS_WARN] = "WARN",
  [QOS_UNKNOWN] = "UNKNOWN",
  [QOS_FAIL] = "FAIL",
};

const char *
qos_status_name (enum qos_status s)
{
  return status_names[s];
}

void
qos_findings_clear (struct qos_findings *f)
{
  for (size_t i = 0; i < f->n; i++)
    {
      struct qos_finding *x = &f->v[i];
      free (x->hca);
      free (x->netdev);
      free (x->what);
      free (x->expected);
      free (x->found);
      free (x->fix);
      free (x->source);
    }
  free (f->v);
  f->v = NULL;
  f->n = 0;
}

struct qos_finding *
qos_findings_push (struct qos_findings *f, enum qos_status st, bool blocking, const char *check,
                   const char *hca, const char *netdev)
{
  struct qos_finding *x;
  f->v = xrealloc (f->v, (f->n + 1) * sizeof (*f->v));
  x = &f->v[f->n++];
  memset (x, 0, sizeof (*x));
  x->status = st;
  x->blocking = st == QOS_FAIL || (st == QOS_UNKNOWN && blocking);
  x->check = check;
  x->hca = hca ? xstrdup (hca) : NULL;
  x->netdev = netdev ? xstrdup (netdev) : NULL;
  return x;
}

const struct qos_finding *
qos_first_blocking (const struct qos_findings *f)
{
  for (size_t i = 0; i < f->n; i++)
    if (f->v[i].blocking)
      return &f->v[i];
  return NULL;
}

int
qos_finding_refuse (const struct qos_finding *f, roce_error_t *err)
{
  return roce_error_refuse (err, f->what, f->expected, f->found, f->fix);
}
