/* SPDX-License-Identifier: Apache-2.0 */
/* A PCI function's place on the PCIe tree, read from its path under
 * <sysfs>/devices, and the class of the path between two functions.
 *
 * The classes are nvidia-smi's (NVML's topology levels) and NCCL's: NCCL
 * (src/graph/xml.cc, topo.cc, paths.cc) climbs a device's sysfs path two
 * components at a time, so that a PCIe switch, its upstream port and the
 * downstream port below it, is one node, keyed by the upstream port; a
 * path through one such node is PIX, through several PXB, through the
 * host's root complex PHB.  nvidia-smi tells apart two host bridges of one
 * NUMA node (NODE) from two NUMA nodes (SYS); so do we, by the host bridge
 * each path starts at (pci<domain>:<bus>, which Kubernetes' DRA publishes
 * as resource.kubernetes.io/pcieRoot) and the functions' numa_node.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "topo/topo_int.h"

static const char *const class_names[TOPO_N_CLASSES] = { "PIX", "PXB", "PHB", "NODE", "SYS" };

const char *
topo_class_name (enum topo_class c)
{
  return (unsigned) c < TOPO_N_CLASSES ? class_names[c] : "?";
}

static bool
is_hex (char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* n hex digits at s, n in [min, max]; returns the count or 0.  */
static size_t
hex_run (const char *s, size_t min, size_t max)
{
  size_t n = 0;
  while (n < max && is_hex (s[n]))
    n++;
  return n >= min && ! is_hex (s[n]) ? n : 0;
}

bool
topo_pci_addr_valid (const char *s)
{
  size_t d = hex_run (s, 4, 8);
  if (d == 0 || s[d] != ':')
    return false;
  s += d + 1;
  return hex_run (s, 2, 2) && s[2] == ':' && hex_run (s + 3, 2, 2) && s[5] == '.' && s[6] >= '0'
         && s[6] <= '7' && s[7] == '\0';
}

/* "pci0000:17", "pci10000:e0".  */
static bool
root_valid (const char *s)
{
  size_t d;
  if (strncmp (s, "pci", 3) != 0)
    return false;
  s += 3;
  d = hex_run (s, 4, 8);
  return d && s[d] == ':' && hex_run (s + d + 1, 2, 2) && s[d + 3] == '\0';
}

int
topo_pci_cmp (const char *a, const char *b)
{
  /* Domain, bus, device, function: hex fields, so the number of domain
   * digits decides first, then the text (lower case, fixed widths).  */
  size_t la = strcspn (a, ":"), lb = strcspn (b, ":");
  if (la != lb)
    return la < lb ? -1 : 1;
  return strcmp (a, b);
}

void
topo_pos_clear (struct topo_pos *pos)
{
  free (pos->pci);
  free (pos->root);
  strv_free (pos->switches);
  *pos = (struct topo_pos){ .numa = -1 };
}

int
topo_pos_parse (const char *path, struct topo_pos *out, roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (path);
  cleanup_free char **parts = NULL;
  struct topo_pos pos = { .numa = -1 };
  char *save = copy, *item;
  size_t n = 0, cap = 0;

  while ((item = strsep (&save, "/")) != NULL)
    {
      if (n == cap)
        {
          cap = cap ? cap * 2 : 8;
          parts = xrealloc (parts, cap * sizeof (*parts));
        }
      parts[n++] = item;
    }
  if (n < 2 || ! root_valid (parts[0]))
    return roce_error_make (err, EINVAL, "`%s`: not below a PCI host bridge (pci<domain>:<bus>)",
                            path);
  for (size_t i = 1; i < n; i++)
    if (! topo_pci_addr_valid (parts[i]))
      return roce_error_make (err, EINVAL, "`%s`: `%s` is not a PCI address", path, parts[i]);

  /* parts[1] is the root port, parts[n - 1] the function.  Going up: skip
   * one (a downstream port), take one (its switch's upstream port).  */
  for (size_t i = n - 1; i >= 3; i -= 2)
    pos.n_switches++;
  pos.switches = xmalloc0 ((pos.n_switches + 1) * sizeof (char *));
  for (size_t i = n - 1, k = pos.n_switches; i >= 3; i -= 2)
    pos.switches[--k] = xstrdup (parts[i - 2]);
  pos.root = xstrdup (parts[0]);
  pos.pci = xstrdup (parts[n - 1]);
  *out = pos;
  return 0;
}

enum topo_class
topo_distance (const struct topo_pos *a, const struct topo_pos *b)
{
  size_t common = 0, hops;

  if (strcmp (a->root, b->root) != 0)
    return a->numa >= 0 && a->numa == b->numa ? TOPO_NODE : TOPO_SYS;
  while (common < a->n_switches && common < b->n_switches
         && strcmp (a->switches[common], b->switches[common]) == 0)
    common++;
  if (common == 0)
    return TOPO_PHB;
  /* The switches on the path: each side's below the lowest shared one,
   * and that one.  */
  hops = (a->n_switches - common) + (b->n_switches - common) + 1;
  return hops == 1 ? TOPO_PIX : TOPO_PXB;
}
