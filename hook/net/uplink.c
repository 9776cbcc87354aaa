/* SPDX-License-Identifier: Apache-2.0 */
/* A start's HCAs on the host, resolved once (uplink.h).  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "net/uplink.h"
#include "sys/sysfs.h"

int
uplinks_open (const struct roce_policy *p, const struct roce_request *req, struct roce_uplinks *out,
              roce_error_t *err)
{
  memset (out, 0, sizeof (*out));
  if (netlink_open (-1, &out->host, err) < 0)
    return roce_error_wrap (err, "the host's netlink socket");
  out->v = xmalloc0 ((req->n + 1) * sizeof (*out->v));
  for (size_t i = 0; i < req->n; i++)
    {
      struct roce_uplink *u = &out->v[out->n++];
      if (sysfs_hca_netdev (p, req->sel[i].hca, &u->netdev, &u->netdev_err) < 0)
        {
          free (u->netdev);
          u->netdev = NULL;
          continue;
        }
      netlink_link_get (out->host, u->netdev, &u->link, &u->link_err);
    }
  return 0;
}

void
uplinks_clear (struct roce_uplinks *u)
{
  for (size_t i = 0; i < u->n; i++)
    {
      free (u->v[i].netdev);
      roce_error_release (&u->v[i].netdev_err);
      roce_error_release (&u->v[i].link_err);
    }
  free (u->v);
  if (u->host)
    netlink_close (u->host);
  memset (u, 0, sizeof (*u));
}

int
uplink_error (const struct roce_uplink *u, roce_error_t *err)
{
  const struct roce_error *e = u->netdev ? u->link_err : u->netdev_err;
  if (e == NULL)
    return 0;
  roce_error_make (err, e->status, "%s", e->msg);
  return -1;
}
