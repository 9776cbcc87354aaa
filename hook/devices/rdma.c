/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA device nodes of the selected HCAs, found with libibverbs (loaded
 * with dlopen when a start lists devices; sysfs_root as SYSFS_PATH).  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/rdma_netlink.h>

#include "devices/rdma.h"
#include "lib/dl.h"
#include "lib/utils.h"
#include "sys/netlink.h"
#include "sys/sysfs.h"

/* libibverbs, loaded on first use.  Linking it would make every run pay for
 * it (and for the libnl it links) at start-up, unannotated containers and
 * every pass-through call of the shim included; only a start that lists
 * devices needs it.  The library stays loaded for the life of the process
 * (dlopen hands back the same handle on a second call).  */
struct ibv_api
{
  struct ibv_device **(*get_device_list) (int *num_devices);
  void (*free_device_list) (struct ibv_device **list);
  const char *(*get_device_name) (struct ibv_device *device);
};

static int
ibv_api_load (struct ibv_api *api, roce_error_t *err)
{
  void *h = roce_dlopen ("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    {
      const char *why = roce_dlerror ();
      cleanup_free char *found = xstrdup (why ? why : "not found");
      return roce_error_refuse (err, "libibverbs", "libibverbs.so.1 loadable", found,
                                "install libibverbs1 and ibverbs-providers on the host");
    }
  api->get_device_list = (struct ibv_device * *(*) (int *) ) roce_dlsym (h, "ibv_get_device_list");
  api->free_device_list = (void (*) (struct ibv_device **)) roce_dlsym (h, "ibv_free_device_list");
  api->get_device_name
      = (const char *(*) (struct ibv_device *) ) roce_dlsym (h, "ibv_get_device_name");
  if (api->get_device_list == NULL || api->free_device_list == NULL || api->get_device_name == NULL)
    return roce_error_refuse (err, "libibverbs", "ibv_get_device_list and its kin",
                              "missing symbols", "install a libibverbs1 of rdma-core 17 or later");
  return 0;
}

struct ibv_list
{
  const struct ibv_api *api;
  struct ibv_device **v;
};

static void
cleanup_ibv_listp (struct ibv_list *l)
{
  if (l->v)
    l->api->free_device_list (l->v);
  l->v = NULL;
}
#define cleanup_ibv_list __attribute__ ((cleanup (cleanup_ibv_listp)))

static char *
listed_names (const struct ibv_api *api, struct ibv_device **list, int n)
{
  char *s = xstrdup ("");
  for (int i = 0; i < n; i++)
    str_list_add (&s, ", ", "%s", api->get_device_name (list[i]));
  if (! *s)
    {
      free (s);
      s = xstrdup ("none");
    }
  return s;
}

int
rdma_ibverbs_lists (const struct roce_policy *p, const char *hca, bool *listed, char **names,
                    roce_error_t *err)
{
  struct ibv_api api = { 0 };
  cleanup_ibv_list struct ibv_list devs = { .api = &api };
  int n_dev = 0;

  *listed = false;
  *names = NULL;
  if (strcmp (p->sysfs_root, "/sys") != 0 && getuid () != geteuid ())
    return roce_error_make (err, EPERM, "libibverbs ignores sysfs_root in a setuid process");
  if (setenv ("SYSFS_PATH", p->sysfs_root, 1) < 0)
    return roce_error_sys (err, errno, "setenv SYSFS_PATH");
  if (ibv_api_load (&api, err) < 0)
    return -1;
  errno = 0;
  devs.v = api.get_device_list (&n_dev);
  if (devs.v == NULL)
    return roce_error_make (err, errno ? errno : ENODEV, "libibverbs lists no device (%s)",
                            strerror (errno ? errno : ENODEV));
  *names = listed_names (&api, devs.v, n_dev);
  for (int j = 0; j < n_dev; j++)
    if (strcmp (api.get_device_name (devs.v[j]), hca) == 0)
      *listed = true;
  return 0;
}

/* ---- RDMA netns mode ------------------------------------------------------------ */

const char *
rdma_netns_mode_name (enum rdma_netns_mode m)
{
  switch (m)
    {
      case RDMA_NETNS_SHARED:
        return "shared";
      case RDMA_NETNS_EXCLUSIVE:
        return "exclusive";
      case RDMA_NETNS_UNKNOWN:
        break;
    }
  return "unknown";
}

void
rdma_netns_clear (struct rdma_netns *r)
{
  free (r->source);
  free (r->detail);
  memset (r, 0, sizeof (*r));
}

#define RDMA_SYS_GET_TYPE RDMA_NL_GET_TYPE (RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET)

int
rdma_sys_feed (const void *buf, size_t len, uint32_t seq, bool *have, uint8_t *mode,
               roce_error_t *err)
{
  static const struct nla_policy policy[RDMA_NLDEV_ATTR_MAX] = {
    [RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = { .type = NLA_U8 },
  };
  struct nlmsghdr *nlh = (struct nlmsghdr *) buf;
  int rem = (int) len;

  if (len == 0 || len > (size_t) INT32_MAX)
    return roce_error_make (err, EBADMSG, "RDMA netlink: empty datagram");
  for (; nlmsg_ok (nlh, rem); nlh = nlmsg_next (nlh, &rem))
    {
      if (nlh->nlmsg_seq != seq)
        continue;
      if (nlh->nlmsg_type == NLMSG_ERROR)
        {
          const struct nlmsgerr *e = nlmsg_data (nlh);
          if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof (*e) || e->error > 0)
            return roce_error_make (err, EBADMSG, "RDMA netlink: malformed NLMSG_ERROR");
          if (e->error < 0)
            {
              cleanup_free char *t = netlink_errno_text (-e->error);
              return roce_error_make (err, -e->error, "RDMA netlink: %s", t);
            }
          if (! *have)
            return roce_error_make (err, EBADMSG, "RDMA netlink: an ack but no reply");
          return 1;
        }
      if (nlh->nlmsg_type == NLMSG_DONE)
        return *have ? 1 : roce_error_make (err, EBADMSG, "RDMA netlink: no reply");
      if (nlh->nlmsg_type == RDMA_SYS_GET_TYPE)
        {
          struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
          int ret = nlmsg_parse (nlh, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, policy);
          if (ret < 0)
            return roce_error_make (err, EBADMSG, "RDMA netlink: %s", nl_geterror (ret));
          if (tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE] == NULL)
            return roce_error_make (err, EBADMSG, "RDMA netlink: no netns mode in the reply");
          *mode = nla_get_u8 (tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
          *have = true;
        }
    }
  if (rem > 0)
    return roce_error_make (err, EBADMSG, "RDMA netlink: truncated message");
  return 0;
}

static int
rdma_netns_netlink (uint8_t *mode, roce_error_t *err)
{
  cleanup_nl_sock struct nl_sock *sk = NULL;
  cleanup_nlmsg struct nl_msg *m = NULL;
  bool have = false;
  uint32_t seq;
  int ret = 0;

  if (netlink_open_proto (NETLINK_RDMA, -1, &sk, err) < 0)
    {
      if (roce_error_status (err) == EPROTONOSUPPORT)
        {
          roce_error_release (err);
          return roce_error_make (err, EPROTONOSUPPORT,
                                  "RDMA netlink: the kernel has none (EPROTONOSUPPORT)");
        }
      return roce_error_wrap (err, "RDMA netlink");
    }
  m = nlmsg_alloc_simple (RDMA_SYS_GET_TYPE, NLM_F_REQUEST | NLM_F_ACK);
  if (m == NULL)
    return roce_error_make (err, ENOMEM, "nlmsg_alloc");
  if (netlink_send (sk, m, &seq, err) < 0)
    return -1;
  while (ret == 0)
    {
      cleanup_free unsigned char *buf = NULL;
      size_t len = 0;
      if (netlink_recv (sk, &buf, &len, err) < 0)
        return -1;
      ret = rdma_sys_feed (buf, len, seq, &have, mode, err);
    }
  return ret < 0 ? -1 : 0;
}

void
rdma_netns_probe (const char *sysfs_root, struct rdma_netns *out)
{
  cleanup_error roce_error_t nerr = NULL;
  cleanup_error roce_error_t serr = NULL;
  cleanup_free char *path = xasprintf ("%s/module/ib_core/parameters/netns_mode", sysfs_root);
  cleanup_free char *val = NULL;
  uint8_t mode = 0;

  memset (out, 0, sizeof (*out));
  if (rdma_netns_netlink (&mode, &nerr) == 0)
    {
      out->mode = mode ? RDMA_NETNS_SHARED : RDMA_NETNS_EXCLUSIVE;
      out->source = xstrdup ("RDMA netlink (RDMA_NLDEV_CMD_SYS_GET)");
      return;
    }
  if (read_line_at (AT_FDCWD, path, &val, &serr) == 0)
    {
      if (strcmp (val, "Y") == 0 || strcmp (val, "1") == 0)
        out->mode = RDMA_NETNS_SHARED;
      else if (strcmp (val, "N") == 0 || strcmp (val, "0") == 0)
        out->mode = RDMA_NETNS_EXCLUSIVE;
      if (out->mode != RDMA_NETNS_UNKNOWN)
        {
          out->source = xstrdup (path);
          return;
        }
      out->detail = xasprintf ("%s; %s: unexpected value", nerr->msg, path);
      return;
    }
  out->detail = xasprintf ("%s; %s", nerr->msg, serr->msg);
}
