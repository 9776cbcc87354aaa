/* SPDX-License-Identifier: Apache-2.0 */
/* The RoCE GID table of an HCA's ports, read from sysfs
 * (<sysfs_root>/class/infiniband/<hca>/ports/<p>/gids/<i>, gid_attrs/types/<i>,
 * gid_attrs/ndevs/<i>): what `check` shows and what RDMA resolves a peer
 * through.  */
#ifndef ROCE_GID_H
#define ROCE_GID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/ipaddr.h"

struct gid_entry
{
  unsigned port;
  unsigned index;
  char *gid;  /* as sysfs prints it: 0000:0000:...:ffff:c612:0a05 */
  char *type; /* "RoCE v2" */
  char *ndev; /* the netdev's name in its own netns, "" when none */
};

/* The RoCE v2 entries of <sysfs_root>/class/infiniband/<hca>/ports/N/gids/I
 * (with gid_attrs/types/I and gid_attrs/ndevs/I), sorted by port and index.
 * Empty entries (ENOENT, EINVAL as the kernel answers for them, the zero GID)
 * are skipped.  Fails only when the HCA has no ports directory.  */
int gid_list_roce_v2 (const char *sysfs_root, const char *hca, struct gid_entry **out, size_t *n,
                      roce_error_t *err);
void gid_entries_free (struct gid_entry *v, size_t n);

/* ---- the fabric's use: table room, the container's GID ---------- */

/* A port's GID table: `size` slots (the gids/ files), `used` non-empty
 * (neither missing, EINVAL nor the zero GID: the default GIDs count).  */
struct gid_port_use
{
  unsigned port;
  unsigned size;
  unsigned used;
  char *ndev0; /* gid_attrs/ndevs/0: the port's netdev, "" when none */
};

/* Every port of the HCA, sorted by port.  Fails when the HCA has no ports
 * directory.  */
int gid_table_use (const char *sysfs_root, const char *hca, struct gid_port_use **out, size_t *n,
                   roce_error_t *err);
/* A port or table index as sysfs names its entries (ports/<p>, gids/<i>):
 * decimal, 0..65535.  */
bool gid_parse_index (const char *s, unsigned *out);
/* The GID entries one container with n_addrs addresses on a rail takes:
 * the kernel's RoCE v1 and v2 entry of each, and of the interface's IPv6
 * link-local address when fabric.ipv6_link_local keeps it.  */
unsigned gid_entries_per_container (size_t n_addrs, bool ipv6_link_local);
/* One port's table (portdir: <...>/ports/<p>): *size slots and *used in use,
 * counted as in struct gid_port_use.  Fails (with the errno) when the port
 * has no gids directory.  */
int gid_port_count (const char *portdir, unsigned *size, unsigned *used, roce_error_t *err);
void gid_port_use_free (struct gid_port_use *v, size_t n);
/* The port RoCE traffic of `netdev` uses: the one whose ndevs/0 is netdev,
 * else the lowest; NULL when there is none.  */
const struct gid_port_use *gid_port_of (const struct gid_port_use *v, size_t n, const char *netdev);

/* The GID of addr as sysfs prints it: an IPv4 address mapped
 * ("0000:0000:0000:0000:0000:ffff:c612:0a64"), an IPv6 address itself (the
 * kernel adds it as its own GID: "fd00:0010:0000:0000:0000:0000:0000:0100");
 * buf: GID_STR_MAX bytes.  */
#define GID_STR_MAX 40
const char *gid_of_addr (const struct roce_addr *addr, char *buf);

/* The RoCE v2 entry of addr on `ndev` (the interface's name in its own
 * namespace): 1 found (*port, *index), 0 not (yet), < 0 error.  */
int gid_find (const char *sysfs_root, const char *hca, const struct roce_addr *addr,
              const char *ndev, unsigned *port, unsigned *index, roce_error_t *err);

#endif
