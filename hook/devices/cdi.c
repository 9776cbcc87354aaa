/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook cdi`'s document: a CDI spec (kind roce.io/hca), one device per
 * policy HCA, with the lowest cdiVersion its fields need.  A device
 * activates the whole container, as roce.io/hca does: its edits add its
 * uverbs node, its NCCL variables and the variable that names it
 * (ANNOT_CDI_PREFIX<i>=<hca>, annot.h), and the spec's own edits, applied
 * once for any of its devices, add rdma_cm, NCCL_IB_TC and the hooks that
 * run roce-hook --cdi at createRuntime and poststop: the network, the
 * address, the QoS gate, the device cgroup and the memlock, as for an
 * annotated container.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/cdi.h"
#include "devices/rdma_nodes.h"
#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "spec/annot.h"

#define CDI_KIND "roce.io/hca"

/* The lowest cdiVersion the spec's fields need, by the CDI library's own
 * rule (specs-go MinimumRequiredVersion): 0.3.0 is the earliest it takes,
 * with device nodes, env and hooks (createRuntime, poststop among their
 * names); 0.5.0 once a device name starts with other than a letter (or a
 * device node had a hostPath, which ours never has); 0.6.0 only for
 * annotations or a dot in the kind's class, 0.7.0 for intelRdt or
 * additionalGids, which ours has none of.  Consumers reject versions newer
 * than they know (Debian 12's Podman 4.3 takes no 0.6.0).  */
const char *
cdi_min_version (const struct roce_policy *p)
{
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      char c = p->hcas[i].name[0];
      if (! ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        return "0.5.0";
    }
  return "0.3.0";
}

static void
gen_node (struct json_gen *g, const struct rdma_node *n)
{
  json_gen_map_open (g);
  json_gen_kv_string (g, "path", n->path);
  json_gen_kv_string (g, "type", "c");
  json_gen_kv_integer (g, "major", n->major);
  json_gen_kv_integer (g, "minor", n->minor);
  json_gen_kv_string (g, "permissions", "rw");
  json_gen_map_close (g);
}

/* A hook of the spec's: roce-hook --config CONFIG --cdi STAGE.  */
static void
gen_hook (struct json_gen *g, const struct cdi_hooks *h, const char *stage)
{
  json_gen_map_open (g);
  json_gen_kv_string (g, "hookName", stage);
  json_gen_kv_string (g, "path", h->hook);
  json_gen_string (g, "args");
  json_gen_array_open (g);
  json_gen_string (g, "roce-hook");
  json_gen_string (g, "--config");
  json_gen_string (g, h->config);
  json_gen_string (g, "--cdi");
  json_gen_string (g, stage);
  json_gen_array_close (g);
  json_gen_map_close (g);
}

char *
cdi_spec_text (const struct roce_policy *p, const struct cdi_hooks *hooks, roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (true);
  cleanup_free struct rdma_node *cm = NULL;
  char tc[16];
  const char *buf;
  size_t len;

  snprintf (tc, sizeof (tc), "%u", p->qos.dscp << 2 | 2);
  json_gen_map_open (g);
  json_gen_kv_string (g, "cdiVersion", cdi_min_version (p));
  json_gen_kv_string (g, "kind", CDI_KIND);
  json_gen_string (g, "devices");
  json_gen_array_open (g);
  for (size_t i = 0; i < p->n_hcas; i++)
    {
      struct roce_selection sel = { .hca = &p->hcas[i] };
      struct roce_request r = { .n = 1, .sel = &sel };
      cleanup_free struct rdma_node *nodes = NULL;
      size_t n = 0;
      char range[CIDR_STR_MAX];
      cleanup_free char *hca_env = xasprintf ("NCCL_IB_HCA=%s", p->hcas[i].name);
      cleanup_free char *mark_env = xasprintf (ANNOT_CDI_PREFIX "%zu=%s", i, p->hcas[i].name);
      cleanup_free char *range_env = NULL;

      if (rdma_nodes_for_request (p, &r, &nodes, &n, err) < 0)
        {
          roce_error_wrap (err, "cdi");
          return NULL;
        }
      cidr_format (&p->hcas[i].net[0].subnet, range);
      range_env = xasprintf ("NCCL_IB_ADDR_RANGE=%s", range);
      json_gen_map_open (g);
      json_gen_kv_string (g, "name", p->hcas[i].name);
      json_gen_string (g, "containerEdits");
      json_gen_map_open (g);
      json_gen_string (g, "deviceNodes");
      json_gen_array_open (g);
      /* The uverbs node; rdma_cm (shared by all HCAs) goes in the spec's
       * common edits below.  */
      for (size_t k = 0; k < n; k++)
        if (strcmp (rdma_node_name (&nodes[k]), "rdma_cm") != 0)
          gen_node (g, &nodes[k]);
        else if (cm == NULL)
          {
            cm = xmalloc0 (sizeof (*cm));
            *cm = nodes[k];
          }
      json_gen_array_close (g);
      json_gen_string (g, "env");
      json_gen_array_open (g);
      json_gen_string (g, mark_env);
      json_gen_string (g, hca_env);
      json_gen_string (g, range_env);
      /* An IPv6 rail: NCCL picks its GID by the family too.  */
      if (p->hcas[i].net[0].subnet.addr.family == AF_INET6)
        json_gen_string (g, "NCCL_IB_ADDR_FAMILY=AF_INET6");
      json_gen_array_close (g);
      json_gen_map_close (g);
      json_gen_map_close (g);
    }
  json_gen_array_close (g);

  json_gen_string (g, "containerEdits");
  json_gen_map_open (g);
  if (cm)
    {
      json_gen_string (g, "deviceNodes");
      json_gen_array_open (g);
      gen_node (g, cm);
      json_gen_array_close (g);
    }
  json_gen_string (g, "env");
  json_gen_array_open (g);
  {
    cleanup_free char *e = xasprintf ("NCCL_IB_TC=%s", tc);
    json_gen_string (g, e);
  }
  json_gen_array_close (g);
  json_gen_string (g, "hooks");
  json_gen_array_open (g);
  gen_hook (g, hooks, "createRuntime");
  gen_hook (g, hooks, "poststop");
  json_gen_array_close (g);
  json_gen_map_close (g);
  json_gen_map_close (g);

  if (json_gen_result (g, &buf, &len, err) < 0)
    return NULL;
  return xasprintf ("%.*s\n", (int) len, buf);
}
