/* SPDX-License-Identifier: Apache-2.0 */
/* GPUDirect RDMA readiness: whether the HCA can reach GPU memory directly,
 * read from sysfs (the policy's sysfs_root).  Without it NCCL does not fail:
 * it silently stages every transfer through host memory, at a fraction of
 * the bandwidth.  Two ways exist:
 *   - peer memory: the nvidia_peermem module (<sysfs_root>/module/nvidia_peermem),
 *     or MLNX_OFED's older nv_peer_mem (<sysfs_root>/module/nv_peer_mem);
 *   - dma-buf: a kernel of 5.12 or later (ib_umem_dmabuf) and NVIDIA's open
 *     kernel modules of R515 or later (the proprietary module exports no
 *     dma-buf; sysfs shows it by the 'P' in module/nvidia/taint).  */
#ifndef ROCE_GPUDIRECT_H
#define ROCE_GPUDIRECT_H

#include <stdbool.h>

#include "lib/findings.h"
#include "spec/policy.h"

enum gpudirect_via
{
  GPUDIRECT_NONE,
  GPUDIRECT_PEERMEM,     /* nvidia_peermem */
  GPUDIRECT_NV_PEER_MEM, /* MLNX_OFED's nv_peer_mem */
  GPUDIRECT_DMABUF,
};

struct gpudirect_probe
{
  enum gpudirect_via via;
  bool nvidia;  /* <sysfs_root>/module/nvidia exists */
  char *driver; /* module/nvidia/version, NULL when unreadable */
  unsigned driver_major;
  bool proprietary;   /* module/nvidia/taint holds 'P' */
  char *kernel;       /* the kernel release */
  bool kernel_dmabuf; /* 5.12 or later */
  char *source;       /* what was read */
};

/* kernel_release NULL: uname()'s.  */
void gpudirect_probe_run (const char *sysfs_root, const char *kernel_release,
                          struct gpudirect_probe *out);
void gpudirect_probe_clear (struct gpudirect_probe *g);

/* One finding, check "gpudirect": OK with either way, WARN (never blocking)
 * without, with the fix.  */
void gpudirect_finding (const struct gpudirect_probe *g, const char *hca, const char *netdev,
                        struct findings *out);

#endif
