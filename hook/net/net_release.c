/* SPDX-License-Identifier: Apache-2.0 */
/* Poststop: a stopped container's leases released (ipam_release), and its
 * pod's links removed when the pod sandbox stops.  */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "ipam/ipam.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "net/net.h"
#include "spec/oci.h"
#include "sys/netlink.h"
#include "sys/netns.h"

#include "net_int.h"

/* ---- poststop ------------------------------------------------------------------------ */

/* A Kubernetes pod sandbox names its namespace by the path the CRI runtime
 * pinned it at; at the sandbox's poststop the pod is going (CNI DEL and the
 * pin's removal come next), so our interfaces and leases go now, as CNI's
 * do.  An fd of that namespace, or -1 (not a sandbox, no path, unreadable). */
static int
pod_sandbox_pin (const struct roce_container *c, const char *pin, struct netns_id *id)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_config struct oci_config *own = NULL;
  const struct oci_config *cfg = c->config;
  const struct oci_namespace *ns;
  int fd;

  /* The pin named by the caller: the NRI plugin's pod (no spec).  */
  if (pin)
    {
      if ((fd = netns_open_pinned (pin, id, &err)) >= 0)
        return fd;
      goto fail;
    }
  if (! oci_is_pod_sandbox (c->annotations, c->n_annotations))
    return -1;
  if (cfg == NULL)
    {
      if (oci_config_load (c->bundle, &own, &err) < 0)
        goto fail;
      cfg = own;
    }
  ns = oci_config_namespace (cfg, "network");
  if (ns == NULL || ns->path == NULL)
    return -1;
  if ((fd = netns_open_pinned (ns->path, id, &err)) >= 0)
    return fd;
fail:
  roce_log (ROCE_LOG_WARN, "pod sandbox: %s; its leases wait for gc", err->msg);
  return -1;
}

/* Removes the holder's links from the pod's namespace (fd, pinned).  */
static void
pod_links_remove (const struct roce_policy *p, int fd, const struct lease_holder *h)
{
  cleanup_nl_sock struct nl_sock *sock = NULL;
  cleanup_error roce_error_t err = NULL;
  if (netlink_open (fd, &sock, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "pod sandbox stopped: %s", err->msg);
      return;
    }
  /* A rail's addresses (two on a dual-stack rail) are consecutive, on one
   * link; rail i's table is route_table + i.  */
  for (size_t k = 0, rail = 0; k < h->n_addrs; k++)
    {
      struct netlink_link l;
      bool same_link = k > 0 && strcmp (h->addrs[k].ifname, h->addrs[k - 1].ifname) == 0;
      if (k > 0 && ! same_link)
        rail++;
      if (! same_link)
        {
          if (netlink_link_get (sock, h->addrs[k].ifname, &l, &err) < 0
              || netlink_link_del (sock, l.ifindex, &err) < 0)
            {
              roce_log (ROCE_LOG_WARN, "pod sandbox stopped: %s: %s", h->addrs[k].ifname, err->msg);
              roce_error_release (&err);
              continue;
            }
          roce_log (ROCE_LOG_INFO, "network: pod sandbox stopped: %s removed", h->addrs[k].ifname);
        }
      /* The rail's source rule lives in the namespace, not on the link:
       * the next pod in this pin would find it in its way.  */
      if (p->fabric.route_table)
        {
          unsigned table = p->fabric.route_table + (unsigned) rail;
          if (netlink_rule_del_from (sock, &h->addrs[k].addr, table, table, &err) < 0)
            {
              roce_log (ROCE_LOG_WARN, "pod sandbox stopped: rule from %s: %s", h->addrs[k].ifname,
                        err->msg);
              roce_error_release (&err);
            }
        }
    }
}

/* The pod sandbox's stop, asked by ipam_release for each holder the
 * container left: its pinned namespace read once, when the first holder
 * is left.  */
struct pod
{
  const struct roce_policy *p;
  const struct roce_container *c;
  const char *pin_path; /* the pod's namespace by path, NULL: the sandbox's spec */
  bool read;
  int pin;
  struct netns_id pin_id;
};

/* The sandbox's poststop takes the pod's network down only when no other
 * container of ours is left in it: the container-type annotation is the
 * tenant's to write.  */
static bool
pod_down (const struct lease_holder *h, void *arg)
{
  struct pod *pod = arg;
  if (! pod->read)
    {
      pod->pin = pod_sandbox_pin (pod->c, pod->pin_path, &pod->pin_id);
      pod->read = true;
    }
  if (pod->pin < 0 || ! netns_id_equal (&pod->pin_id, &h->ns) || strv_len (h->containers) != 0)
    return false;
  pod_links_remove (pod->p, pod->pin, h);
  return true;
}

static int
release (const struct roce_policy *p, const struct roce_container *c, const struct netns_id *ns,
         int mark, bool reap_inline, roce_error_t *err)
{
  struct pod pod = { .p = p, .c = c, .pin = -1 };
  const struct ipam_release_how how = { .reap_inline = reap_inline,
                                        .caller_ends = c->ends_after_release,
                                        .pod_down = pod_down,
                                        .arg = &pod };
  int ret = ipam_release (p, c->id, ns, mark, &how, err);
  cleanup_closep (&pod.pin);
  return ret;
}

int
net_release (const struct roce_policy *p, const struct roce_container *c, roce_error_t *err)
{
  return release (p, c, NULL, -1, false, err);
}

int
net_release_pod (const struct roce_policy *p, const char *id, const char *pin,
                 void (*in_reaper) (void *arg), void *arg, roce_error_t *err)
{
  struct roce_container c = ROCE_CONTAINER_INIT;
  struct pod pod = { .p = p, .c = &c, .pin_path = pin, .pin = -1 };
  const struct ipam_release_how how
      = { .pod_down = pod_down, .arg = &pod, .in_reaper = in_reaper, .reaper_arg = arg };
  int ret;

  c.id = id;
  ret = ipam_release (p, id, NULL, -1, &how, err);
  cleanup_closep (&pod.pin);
  return ret;
}

int
net_release_netns (const struct roce_policy *p, const struct roce_container *c,
                   const struct netns_id *ns, int mark, roce_error_t *err)
{
  return release (p, c, ns, mark, true, err);
}
