/* SPDX-License-Identifier: Apache-2.0 */
/* GPUDirect RDMA readiness, read from sysfs: a peer-memory module or
 * dma-buf, for `check` (NCCL silently stages through host memory without).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "lib/utils.h"
#include "probe/gpudirect.h"
#include "sys/sysfs.h"

static bool
module_loaded (const char *sysfs_root, const char *name)
{
  cleanup_free char *path = xasprintf ("%s/module/%s", sysfs_root, name);
  struct stat st;
  return stat (path, &st) == 0 && S_ISDIR (st.st_mode);
}

/* "5.12.0-rc1", "6.18.44" -> at least 5.12.  */
static bool
kernel_has_dmabuf (const char *release)
{
  unsigned major = 0, minor = 0;
  if (sscanf (release, "%u.%u", &major, &minor) != 2)
    return false;
  return major > 5 || (major == 5 && minor >= 12);
}

void
gpudirect_probe_run (const char *sysfs_root, const char *kernel_release,
                     struct gpudirect_probe *out)
{
  struct utsname u;

  memset (out, 0, sizeof (*out));
  if (kernel_release == NULL)
    kernel_release = uname (&u) == 0 ? u.release : "";
  out->kernel = xstrdup (kernel_release);
  out->kernel_dmabuf = kernel_has_dmabuf (kernel_release);
  out->nvidia = module_loaded (sysfs_root, "nvidia");
  if (out->nvidia)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_free char *taint = NULL;
      if (sysfs_read_line (sysfs_root, "module/nvidia/version", &out->driver, &err) == 0)
        {
          if (str_is_printable (out->driver) && strlen (out->driver) <= 32)
            out->driver_major = (unsigned) strtoul (out->driver, NULL, 10);
          else
            {
              free (out->driver);
              out->driver = NULL;
            }
        }
      roce_error_release (&err);
      /* The taint letters of a module: P proprietary, O out of tree, E
       * unsigned.  */
      if (sysfs_read_line (sysfs_root, "module/nvidia/taint", &taint, &err) == 0)
        out->proprietary = strchr (taint, 'P') != NULL;
    }
  if (module_loaded (sysfs_root, "nvidia_peermem"))
    {
      out->via = GPUDIRECT_PEERMEM;
      out->source = xasprintf ("%s/module/nvidia_peermem", sysfs_root);
    }
  else if (module_loaded (sysfs_root, "nv_peer_mem"))
    {
      out->via = GPUDIRECT_NV_PEER_MEM;
      out->source = xasprintf ("%s/module/nv_peer_mem", sysfs_root);
    }
  else
    {
      if (out->nvidia && ! out->proprietary && out->driver_major >= 515 && out->kernel_dmabuf)
        out->via = GPUDIRECT_DMABUF;
      out->source = xasprintf ("%s/module/{nvidia_peermem,nv_peer_mem,nvidia}, uname", sysfs_root);
    }
}

void
gpudirect_probe_clear (struct gpudirect_probe *g)
{
  free (g->driver);
  free (g->kernel);
  free (g->source);
  memset (g, 0, sizeof (*g));
}

void
gpudirect_finding (const struct gpudirect_probe *g, const char *hca, const char *netdev,
                   struct findings *out)
{
  struct finding *f;
  const char *fix = "modprobe nvidia_peermem and list it in /etc/modules-load.d/ so that it "
                    "loads at boot; or, for dma-buf, NVIDIA's open kernel modules R515 or later "
                    "on a kernel of 5.12 or later";

  switch (g->via)
    {
      case GPUDIRECT_PEERMEM:
      case GPUDIRECT_NV_PEER_MEM:
        f = findings_push (out, FINDING_OK, false, "gpudirect", hca, netdev);
        f->found = xasprintf ("peer memory: %s loaded",
                              g->via == GPUDIRECT_PEERMEM ? "nvidia_peermem" : "nv_peer_mem");
        break;
      case GPUDIRECT_DMABUF:
        f = findings_push (out, FINDING_OK, false, "gpudirect", hca, netdev);
        f->found = xasprintf ("dma-buf: kernel %s, NVIDIA open kernel module %s", g->kernel,
                              g->driver ? g->driver : "?");
        break;
      case GPUDIRECT_NONE:
      default:
        f = findings_push (out, FINDING_WARN, false, "gpudirect", hca, netdev);
        if (! g->nvidia)
          f->found = xstrdup ("no NVIDIA driver loaded (no module/nvidia): NCCL would stage every "
                              "transfer through host memory");
        else
          {
            cleanup_free char *why = xstrdup ("");
            if (g->proprietary)
              str_list_add (&why, ", ", "the proprietary NVIDIA module exports no dma-buf");
            else if (g->driver_major < 515)
              str_list_add (&why, ", ", "NVIDIA driver %s is older than R515",
                            g->driver ? g->driver : "of unknown version");
            if (! g->kernel_dmabuf)
              str_list_add (&why, ", ", "kernel %s is older than 5.12", g->kernel);
            f->found = xasprintf ("neither nvidia_peermem loaded nor dma-buf (%s): NCCL silently "
                                  "stages every transfer through host memory",
                                  *why ? why : "?");
          }
        f->fix = xstrdup (fix);
        break;
    }
  f->what = xasprintf ("GPUDirect RDMA for %s", hca ? hca : "the host");
  f->expected = xstrdup ("nvidia_peermem loaded, or dma-buf (kernel >= 5.12, NVIDIA open kernel "
                         "modules >= R515)");
  f->source = xstrdup (g->source ? g->source : "");
}
