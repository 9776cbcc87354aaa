/* SPDX-License-Identifier: Apache-2.0 */
/* Findings: what a check found (status, expected, found, the fix), the one
 * shape the gate, the probes and `check` share (findings.h).  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lib/findings.h"
#include "lib/utils.h"

static const char *const status_names[] = {
  [FINDING_OK] = "OK",
  [FINDING_WARN] = "WARN",
  [FINDING_UNKNOWN] = "UNKNOWN",
  [FINDING_FAIL] = "FAIL",
};

const char *
finding_status_name (enum finding_status s)
{
  return status_names[s];
}

void
findings_clear (struct findings *f)
{
  for (size_t i = 0; i < f->n; i++)
    {
      struct finding *x = &f->v[i];
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

struct finding *
findings_push (struct findings *f, enum finding_status st, bool blocking, const char *check,
               const char *hca, const char *netdev)
{
  struct finding *x;
  f->v = xrealloc (f->v, (f->n + 1) * sizeof (*f->v));
  x = &f->v[f->n++];
  memset (x, 0, sizeof (*x));
  x->status = st;
  x->blocking = st == FINDING_FAIL || (st == FINDING_UNKNOWN && blocking);
  x->check = check;
  x->hca = hca ? xstrdup (hca) : NULL;
  x->netdev = netdev ? xstrdup (netdev) : NULL;
  return x;
}

const struct finding *
findings_first_blocking (const struct findings *f)
{
  for (size_t i = 0; i < f->n; i++)
    if (f->v[i].blocking)
      return &f->v[i];
  return NULL;
}

int
finding_refuse (const struct finding *f, roce_error_t *err)
{
  return roce_error_refuse (err, f->what, f->expected, f->found, f->fix);
}
