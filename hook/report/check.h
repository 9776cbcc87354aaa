/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook check`: the host readiness report.  For every policy HCA: its
 * netdev, each QoS check (OK/WARN/FAIL/UNKNOWN, expected, found, the fix),
 * the PFC stall-prevention timeout, the DCB state and the RoCE v2 GID
 * entries, GPUDirect RDMA readiness and the rdma_cm defaults (ToS, RoCE
 * mode) of its ports; for the host: the RDMA netns mode.  Building the report (here,
 * check.c, on the probes of qos.h, gid.h and rdma.h) is apart from rendering
 * it (check_render.c); the command's options and exit status are
 * cmd/cmd_check.c's.  */
#ifndef ROCE_CHECK_H
#define ROCE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "devices/rdma.h"
#include "lib/error.h"
#include "net/gid.h"
#include "probe/gpudirect.h"
#include "qos/qos.h"
#include "runtime/runtime.h"
#include "spec/policy.h"

struct topo_view;

struct check_hca
{
  const struct policy_hca *h;
  bool link_local; /* fabric.ipv6_link_local: the container's link-local GIDs too */
  bool no_ipv6;    /* an IPv6 rail on a kernel without IPv6 (its "ipv6" row) */
  char *netdev;
  bool probed;
  struct qos_probe probe;
  struct findings f;
  struct gid_entry *gids;
  size_t n_gids;
  char *gid_error;
  /* GID table use per port (slots, used): check_gids_per_container a container. */
  struct gid_port_use *gid_use;
  size_t n_gid_use;
  /* The addresses of each net's pool (h->net[k]) leases hold now;
   * held_error: the store unreadable.  */
  uint64_t held[POLICY_NETS];
  char *held_error;
};

/* The GID entries one more container on hr's rail takes: RoCE v1 and v2
 * of each of its addresses (a dual-stack rail's IPv4 and IPv6 one) and of
 * its link-local address where the policy keeps it (the start's count).  */
unsigned check_gids_per_container (const struct check_hca *hr);
/* The containers one more port's free entries take.  */
unsigned check_gid_room (const struct check_hca *hr, const struct gid_port_use *u);
/* "ipv4", "ipv6" or "dual-stack": the families of hr's rail.  */
const char *check_rail_families (const struct check_hca *hr);

struct check_report
{
  const struct roce_policy *p;
  struct rdma_netns netns;
  struct finding netns_row;
  struct gpudirect_probe gdr; /* the host's, one row per HCA */
  /* The runtime roce-runtime chains to for a create (runtime; how), or why
   * none is there (runtime_error); and for other calls when they differ. */
  char *runtime;
  char *runtime_other;
  struct runtime_how runtime_how;
  char *runtime_error;
  struct check_hca *hcas;
  size_t n;
  size_t blocking, warnings, unknown;
  /* Where the GPUs and HCAs sit (topo.h): shown when the host has GPUs. */
  struct topo_view *topo;
  /* The NRI plugin's rows, when it keeps a status (check_nri.c).  */
  struct findings nri;
};

/* Probes the host for every HCA of p, or `only` (NULL: all; it must be an
 * HCA of p).  */
int check_report_build (const struct roce_policy *p, const char *only, struct check_report *r,
                        roce_error_t *err);
void check_report_clear (struct check_report *r);
/* The NRI plugin's rows: connected, and each RoCE container it saw
 * without CAP_IPC_LOCK; none when it keeps no status
 * (hook/report/check_nri.c).  */
void check_nri_rows (const struct roce_policy *p, struct findings *out);
/* check --probe: a path-mtu row per probed HCA: full-MTU DF echoes from
 * where a container's traffic on the rail starts (net_probe_rail: a
 * macvlan of the probe's own on the HCA's netdev, with a pool address
 * leased for the probe's few seconds, in a namespace of its own; whether
 * or not the netdev has an address of the host's) to hcas.<h>.probe, else
 * its gateway.  A FAIL there blocks nothing (it is not one of the gate's
 * checks); it counts as a warning.  Needs what a start's network step
 * needs (PHASE_NETWORK).  */
void check_report_probe (struct check_report *r, unsigned timeout_ms);
/* 0 when nothing blocks, 1 when a finding would refuse containers under
 * qos.mode=enforce.  */
int check_report_status (const struct check_report *r);

/* The report as a table, or as JSON (with the exit status it implies).  */
/* wide: every column in full (EXPECTED too); else 100 columns, FOUND
 * shortened, the fixes as a numbered list below the table.  */
void check_render_text (FILE *out, const struct check_report *r, bool wide);
int check_render_json (FILE *out, const struct check_report *r, int exit_code, roce_error_t *err);
/* node-feature-discovery labels (a features.d file: "name=value" lines):
 * roce.io/ready (nothing blocks), roce.io/lossless (the host's MTU, PFC and
 * DSCP checks OK on every HCA and no switch check FAIL), roce.io/hca.<name>
 * (its netdev probed), roce.io/switch-pfc=ok|fail|unknown (the worst of the
 * HCAs), roce.io/ipv4 and roce.io/ipv6 (every probed HCA's rail has the
 * family, and the kernel IPv6), roce.io/hca.<name>.family, roce.io/gid-room
 * (containers the fullest GID table still takes, check_gid_room); and per HCA its PCIe root, NUMA node and nearest GPUs
 * (topo_view_nfd).  Caller frees.  (hook/report/check_nfd.c)  */
char *check_render_nfd (const struct check_report *r);

#endif
