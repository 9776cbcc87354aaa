/* SPDX-License-Identifier: Apache-2.0 */
/* A start's request, as the hook and the shim both read it: the HCAs the
 * tenant named, or (roce.io/hca=auto, ROCE_HCA=auto) the ones nearest the
 * container's GPUs, so that the network, the devices, the rails file and
 * NCCL_IB_HCA all come from one choice.  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/utils.h"
#include "spec/annot.h"
#include "spec/authz.h"
#include "topo/topo.h"

int
topo_request_resolve (const struct roce_policy *p, const struct annot_source *src, const char *hca,
                      const char *ip, const struct oci_config *config, const struct roce_kv *kv,
                      size_t n_kv, struct roce_request *out, roce_error_t *err)
{
  cleanup_free bool *allowed = NULL;
  struct topo_choice ch = { 0 };
  struct roce_request r = { 0 };
  struct topo_container c;

  /* Named HCAs: nothing of the topology is read.  */
  if (hca == NULL || strcmp (hca, POLICY_HCA_AUTO) != 0)
    return annot_parse_from (p, src, hca, ip, out, err);

  /* A Kubernetes pod's sandbox has no GPUs of its own and cannot know its
   * containers', and a pod's container without GPUs or a cpuset (a
   * sidecar) has none to align: each gets nothing, and the first of the
   * pod's GPU containers makes the pod's network (a later one joins it). */
  if (oci_pod_container_type (kv, n_kv)
      && (oci_is_pod_sandbox (kv, n_kv) || ! topo_spec_asks (config)))
    {
      roce_log (ROCE_LOG_INFO, "%s=auto: a pod's %s without GPUs or a cpuset: nothing for it",
                src->hca, oci_is_pod_sandbox (kv, n_kv) ? "sandbox" : "container");
      *out = r;
      return 0;
    }
  allowed = xmalloc0 (p->n_hcas + 1);
  if (authz_permitted (p, kv, n_kv, allowed, err) < 0)
    return -1;
  c = (struct topo_container){
    .what = src->what_hca, .key = src->hca, .config = config, .allowed = allowed
  };
  if (topo_choose (p, &c, &ch, err) < 0)
    return -1;
  r.sel = xmalloc0 ((ch.n + 1) * sizeof (*r.sel));
  for (size_t i = 0; i < ch.n; i++)
    r.sel[r.n++] = (struct roce_selection){ .hca = ch.rails[i].hca,
                                            .gpus = steal_pointer (&ch.rails[i].gpus) };
  topo_choice_clear (&ch);
  if (ip && annot_parse_ip_auto (src, ip, &r, err) < 0)
    {
      annot_request_clear (&r);
      return -1;
    }
  *out = r;
  return 0;
}
