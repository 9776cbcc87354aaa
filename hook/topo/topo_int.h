/* SPDX-License-Identifier: Apache-2.0 */
/* hook/topo/: the parts behind topo.h, a section per file.  */
#ifndef ROCE_TOPO_INT_H
#define ROCE_TOPO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo/topo.h"

/* ---- topo_pci.c: a PCI function's place, and the class between two ------ */

/* Where a PCI function sits: from its path under <sysfs>/devices
 * ("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0").  */
struct topo_pos
{
  char *pci;       /* its own address, the path's last part */
  char *root;      /* "pci0000:17": its host bridge (DRA's pcieRoot) */
  int numa;        /* numa_node; -1: unknown */
  char **switches; /* the PCIe switches above it, top first, NULL-terminated */
  size_t n_switches;
};

void topo_pos_clear (struct topo_pos *pos);
/* The path below <sysfs>/devices: a host bridge, then PCI addresses.  A
 * switch is its upstream port, as NCCL counts it: going up from the
 * function, every second address (the first above it is the switch's
 * downstream port, the next its upstream port, ...) until the root port,
 * which belongs to the host bridge.  */
int topo_pos_parse (const char *path, struct topo_pos *out, roce_error_t *err);
enum topo_class topo_distance (const struct topo_pos *a, const struct topo_pos *b);

/* "0000:18:00.0" (a domain of 4 to 8 hex digits, lower case, as sysfs and
 * procfs write them).  */
bool topo_pci_addr_valid (const char *s);
/* Numeric order of two valid addresses (NVML's, for GPU indexes).  */
int topo_pci_cmp (const char *a, const char *b);

/* ---- topo_gpus.c: the container's GPUs as its spec names them ---------- */

enum topo_ref_kind
{
  TOPO_REF_INDEX, /* "3", and "3:1" (MIG instance 1 of GPU 3) */
  TOPO_REF_UUID,  /* "GPU-..." */
  TOPO_REF_MINOR, /* /dev/nvidia3 in linux.devices */
};

struct topo_ref
{
  enum topo_ref_kind kind;
  unsigned n;   /* the index or the minor */
  char *uuid;   /* TOPO_REF_UUID, as written */
  char *source; /* "NVIDIA_VISIBLE_DEVICES=3", "linux.devices 195:3": for messages */
};

struct topo_refs
{
  bool all;
  struct topo_ref *v;
  size_t n;
};

#define TOPO_REFS_MAX 256
#define TOPO_UUID_MAX 80

/* An NVIDIA_VISIBLE_DEVICES value: "all", "none", "void" or "" (none), or
 * a comma list of indexes, GPU- UUIDs and <index>:<mig> items, appended to
 * out (duplicates kept: the caller drops them once resolved).  Anything
 * else is refused in one line naming what (escaped, at most 64 bytes).  */
int topo_parse_visible (const char *what, const char *value, struct topo_refs *out,
                        roce_error_t *err);
/* The GPUs among linux.devices: character devices 195:N, N <= 253.  */
void topo_refs_from_devices (const struct oci_device *d, size_t n, struct topo_refs *out);
void topo_refs_clear (struct topo_refs *r);

/* <procfs>/driver/nvidia/gpus/<pci>/information: "GPU UUID:" and "Device
 * Minor:" (NULL and -1 when absent or malformed).  */
void topo_parse_information (const char *text, char **uuid, int *minor);

/* ---- topo_cpus.c: CPU lists (cpusets, NUMA nodes' cpulist) ------------- */

#define TOPO_CPUS_MAX 16384
struct topo_cpuset
{
  uint64_t bits[TOPO_CPUS_MAX / 64];
};

/* "0-23,96-119" (newline and blanks around items allowed); -1 when it is
 * not one or names a CPU past TOPO_CPUS_MAX - 1.  */
int topo_parse_cpulist (const char *s, struct topo_cpuset *out);
bool topo_cpuset_meets (const struct topo_cpuset *a, const struct topo_cpuset *b);
bool topo_cpuset_empty (const struct topo_cpuset *a);

/* ---- topo_table.c: the table of one start ----------------------------- */

struct topo_gpu
{
  unsigned index; /* NVML's: its rank in PCI address order */
  char *pci;
  char *uuid; /* NULL: not read, or none */
  int minor;  /* -1: not read, or none */
  bool identified;
  bool located;
  struct topo_pos pos;
};

struct topo_hca
{
  const struct policy_hca *h;
  bool vf; /* its position is its PF's */
  struct topo_pos pos;
};

struct topo_table
{
  const struct roce_policy *p;
  char *sys; /* realpath of the policy's sysfs_root */
  /* The host's GPUs: the driver's list (<procfs>/driver/nvidia/gpus), in
   * PCI address order; each located and identified only when needed.  */
  struct topo_gpu *gpus;
  size_t n_gpus;
  bool listed;
  bool driver;           /* the list exists (the nvidia driver is loaded) */
  struct topo_hca *hcas; /* p->hcas' order; located by topo_table_hcas */
  size_t n_hcas;
};

int topo_table_init (struct topo_table *t, const struct roce_policy *p, roce_error_t *err);
void topo_table_clear (struct topo_table *t);
/* The driver's list of GPUs (none when the driver is not loaded).  */
int topo_table_list (struct topo_table *t, roce_error_t *err);
/* The position of t->hcas[i]; absent from sysfs, refused.  */
int topo_table_hca (struct topo_table *t, size_t i, roce_error_t *err);
/* Positions of every policy HCA; one absent from sysfs is refused.  */
int topo_table_hcas (struct topo_table *t, roce_error_t *err);
/* The position of t->gpus[i]; source names what asked for it.  */
int topo_table_locate (struct topo_table *t, size_t i, const char *source, roce_error_t *err);
/* UUID and minor of every GPU (their information files).  */
int topo_table_identify (struct topo_table *t, roce_error_t *err);
/* The container's GPUs, resolved against the table, in its order without
 * repeats: indexes into t->gpus (caller frees *out).  what names the
 * requester in refusals.  */
int topo_table_resolve (struct topo_table *t, const char *what, const struct topo_refs *refs,
                        size_t **out, size_t *n, roce_error_t *err);

/* ---- topo.c: the rule --------------------------------------------------- */

/* The choice for the container's GPUs refs: the driver's list, each GPU
 * resolved and located, every policy HCA located, then topo_select.  */
int topo_choose_gpus (struct topo_table *t, const struct topo_container *c,
                      const struct topo_refs *refs, struct topo_choice *out, roce_error_t *err);
/* The choice for GPUs gpus[0..n) of t (located), among t's HCAs (located)
 * that allowed permits (NULL: all).  */
int topo_select (const struct topo_table *t, const size_t *gpus, size_t n, const bool *allowed,
                 const char *what, struct topo_choice *out, roce_error_t *err);

#endif
