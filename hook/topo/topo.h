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

#include "error.h"
#include "policy.h"

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

/* A linux.devices entry of the spec, as far as auto reads it.  */
struct topo_spec_device
{
  char type; /* 'c', 'b', 'u', 'p' */
  int64_t major;
  int64_t minor;
};

/* The container, as auto reads it (untrusted: parsed and bounded here).  */
struct topo_container
{
  const char *what; /* "annotation roce.io/hca": who asked, for refusals */
  const char *key;  /* "roce.io/hca" */
  char *const *env; /* process.env, "K=V", NULL-terminated (may be NULL) */
  const struct topo_spec_device *devices;
  size_t n_devices;
  const char *cpus; /* linux.resources.cpu.cpus, NULL when absent */
  /* Whether the tenant may use p->hcas[i] (authz); NULL: every HCA.  */
  const bool *allowed;
};

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

#endif
