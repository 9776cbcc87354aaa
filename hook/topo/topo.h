/* SPDX-License-Identifier: Apache-2.0 */
/* GPU-NIC topology: where the container's GPUs and the policy's HCAs sit on
 * the PCIe tree, the distance classes between them (as `nvidia-smi topo -m`
 * and NCCL name them), and the HCAs `roce.io/hca=auto` chooses.
 *
 * A start builds one table from the few paths its devices need (the
 * driver's GPU list in procfs, each device's sysfs link and numa_node):
 * never a walk of the PCI tree, and nothing at all for a container that
 * names its HCAs.  */
#ifndef ROCE_TOPO_H
#define ROCE_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"
#include "spec/annot.h"
#include "spec/oci.h"
#include "spec/policy.h"

/* The container environment variable the NVIDIA runtimes read.  */
#define TOPO_ENV_GPUS "NVIDIA_VISIBLE_DEVICES"
/* /dev/nvidiaN: character major 195, minor N; minors from 254 up are the
 * driver's other nodes (nvidia-modeset 254, nvidiactl 255).  */
#define TOPO_NVIDIA_MAJOR 195
#define TOPO_GPU_MINOR_MAX 253

/* Distance classes, nearest first (the order is the rule's).  */
enum topo_class
{
  TOPO_PIX,  /* one PCIe switch between them */
  TOPO_PXB,  /* several switches, no host bridge */
  TOPO_PHB,  /* through one host bridge (pci<domain>:<bus>) */
  TOPO_NODE, /* between host bridges of one NUMA node */
  TOPO_SYS,  /* across NUMA nodes (or a NUMA node unknown) */
};
#define TOPO_N_CLASSES 5

const char *topo_class_name (enum topo_class c);

/* The container, as auto reads it: its spec (untrusted: process.env's
 * NVIDIA_VISIBLE_DEVICES, linux.devices, linux.resources.cpu.cpus, each
 * parsed and bounded here) and who it is.  */
struct topo_container
{
  const char *what; /* "annotation roce.io/hca": who asked, for refusals */
  const char *key;  /* "roce.io/hca" */
  const struct oci_config *config;
  /* Whether the tenant may use p->hcas[i] (authz); NULL: every HCA.  */
  const bool *allowed;
};

/* Whether the spec names GPUs (NVIDIA_VISIBLE_DEVICES other than none,
 * void or empty; /dev/nvidiaN) or a cpuset: whether auto has anything to
 * go by.  Reads nothing but the spec.  */
bool topo_spec_asks (const struct oci_config *spec);

/* One chosen HCA.  */
struct topo_rail
{
  const struct policy_hca *hca; /* points into the policy */
  enum topo_class cls;          /* the farthest of its GPUs from it */
  /* The container's GPUs it serves, by PCI address, in the container's
   * order; NULL when it was chosen by the cpuset's NUMA nodes.  */
  char **gpus;
};

struct topo_choice
{
  struct topo_rail *rails; /* in the order first taken */
  size_t n;
  /* What it went by, for the log: "GPUs 0000:1b:00.0,0000:43:00.0" or
   * "NUMA node 0 of cpuset 0-3".  */
  char *basis;
};

/* The HCAs auto gives the container: each of its GPUs, in its order, takes
 * the policy HCA at the smallest class; among equals the one fewest of its
 * GPUs took so far, then the first in the policy.  An HCA it may not use is
 * never taken (the log names it when it was nearer).  A container without
 * GPUs gets the HCAs on the NUMA nodes of its cpuset.  Refusals are one line
 * each: neither GPUs nor a cpuset, a GPU or HCA absent from sysfs, a value
 * of NVIDIA_VISIBLE_DEVICES that is not one.  */
int topo_choose (const struct roce_policy *p, const struct topo_container *c,
                 struct topo_choice *out, roce_error_t *err);
void topo_choice_clear (struct topo_choice *c);
/* "mlx5_0,mlx5_3", caller frees.  */
char *topo_choice_names (const struct topo_choice *c);

/* `roce-hook topo`: the host's GPUs and the policy's HCAs (PCI address,
 * NUMA node, PCIe root), the GPU x HCA matrix of classes and, with
 * gpus_spec (an NVIDIA_VISIBLE_DEVICES value), the HCAs auto chooses; as
 * text or JSON.  A host without GPUs shows its HCAs and says so.  */
int topo_report (const struct roce_policy *p, const char *gpus_spec, bool json, FILE *out,
                 roce_error_t *err);

/* The host's topology for `check`: every GPU and policy HCA placed where
 * sysfs has it (absent ones shown so); never fails (a view that cannot be
 * read says why).  */
struct topo_view;
struct json_gen;
struct topo_view *topo_view_read (const struct roce_policy *p);
void topo_view_free (struct topo_view *v);
size_t topo_view_gpus (const struct topo_view *v);
/* The GPUs, the HCAs, the matrix and its legend, as `roce-hook topo`.  */
void topo_view_text (const struct topo_view *v, FILE *out);
/* The members "gpus", "hcas" and "matrix" (or "error") into an open map. */
void topo_view_json (const struct topo_view *v, struct json_gen *g);
/* node-feature-discovery labels, per HCA placed: roce.io/hca.<name>.pcie-root
 * (pci0000-17: a label value has no ':'), .numa, and with GPUs .gpus (the
 * indexes of the GPUs nearest it, '.' between) and .gpu-class (their
 * class).  Caller frees.  */
char *topo_view_nfd (const struct topo_view *v);

/* The one way a start's request is read, by the hook and the shim alike:
 * annot_parse_from for named HCAs; for `auto` (POLICY_HCA_AUTO) the policy
 * HCAs nearest the container's GPUs, among those its tenant may use
 * (config's NVIDIA_VISIBLE_DEVICES, /dev/nvidiaN, cpuset; kv its
 * annotations), with ip only a bare address and only when one was chosen;
 * for `auto` in a Kubernetes pod sandbox, no HCA (out->n == 0: nothing to
 * do, the pod's containers choose).  hook/topo/topo_request.c.  */
int topo_request_resolve (const struct roce_policy *p, const struct annot_source *src,
                          const char *hca, const char *ip, const struct oci_config *config,
                          const struct roce_kv *kv, size_t n_kv, struct roce_request *out,
                          roce_error_t *err);

#endif
