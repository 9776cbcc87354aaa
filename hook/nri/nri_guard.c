/* SPDX-License-Identifier: Apache-2.0 */
/* The guard: a RoCE pod's container the plugin did not prepare does not
 * run.  The plugin marks each container of a RoCE pod it prepared with
 * NRI_MARKER, whose value is the container's id; the guard refuses a
 * container of a pod that asked for RoCE without that mark.  The id is
 * the runtime's, unknown to a tenant before the container exists, and a
 * pod that writes the mark itself is refused.  Two forms: an NRI plugin of
 * its own (after the plugin in NRI's order, no state, no policy), and an
 * OCI hook on the spec (CRI-O's hooks.d).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/json.h"
#include "nri/nri_int.h"
#include "spec/oci.h"
#include "lib/utils.h"

static const char guard_fix[]
    = "the NRI plugin roce-hook is down, restarting or too slow for the runtime's timeout: see "
      "`roce-hook check` and its DaemonSet's log; the runtime retries the container";

int
nri_guard_check (const struct nri_pod *pod, const char *ctr_id, const char *marker,
                 roce_error_t *err)
{
  if (! pod->asks)
    return 0;
  if (pod->has_marker)
    return roce_error_refuse (err, "pod annotation " NRI_MARKER, "none (the plugin's alone)",
                              "one written in the pod",
                              "remove it from the pod; the plugin marks what it prepared");
  if (marker == NULL || strcmp (marker, ctr_id) != 0)
    return roce_error_refuse (err, "the RoCE pod's container", "prepared by roce-hook's NRI plugin",
                              marker ? "a mark naming another container" : "not prepared",
                              guard_fix);
  return 0;
}

/* The hook: the spec's annotations are the container's and, for the
 * runtimes that copy them (CRI-O), the pod's: the mark must name this
 * container, whose id only the runtime knew.  */
int
nri_guard_hook (int state_fd, char **id, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_oci_state struct oci_state *st = NULL;
  cleanup_oci_config struct oci_config *cfg = NULL;
  const struct roce_kv *kv;
  size_t len = 0, n;
  const char *marker;

  if (read_all_fd (state_fd, OCI_SCAN_MAX, &buf, &len, err) < 0)
    return -1;
  /* The lenient look first: a container that did not ask is never read
   * strictly, never refused.  */
  if (! oci_asks_for (buf, len, ANNOT_HCA, NULL))
    return 0;
  if (len > OCI_STATE_MAX)
    return roce_error_make (err, E2BIG, "OCI state: larger than %d bytes", OCI_STATE_MAX);
  if (oci_state_parse (buf, &st, err) < 0)
    return -1;
  *id = xstrdup (st->id);
  kv = st->annotations;
  n = st->n_annotations;
  if (! st->has_annotations)
    {
      if (oci_config_load (st->bundle, &cfg, err) < 0)
        return roce_error_wrap (err, "reading the bundle");
      kv = cfg->annotations;
      n = cfg->n_annotations;
    }
  if (roce_kv_get (kv, n, ANNOT_HCA) == NULL)
    return 0;
  marker = roce_kv_get (kv, n, NRI_MARKER);
  if (marker == NULL || strcmp (marker, st->id) != 0)
    return roce_error_refuse (err, "the RoCE pod's container", "prepared by roce-hook's NRI plugin",
                              marker ? "a mark naming another container" : "not prepared",
                              guard_fix);
  return 0;
}
