#define _GNU_SOURCE
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/rdma_netlink.h>

#include "netlink.h"
#include "rdma.h"
#include "sysfs.h"
#include "utils.h"

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
  void *h = dlopen ("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    {
      const char *why = dlerror ();
      cleanup_free char *found = str_escape (why ? why : "not found");
      return roce_error_refuse (err, "libibverbs", "libibverbs.so.1 loadable", found,
                                "install libibverbs1 and ibverbs-providers on the host");
    }
  api->get_device_list = (struct ibv_device * *(*) (int *)) dlsym (h, "ibv_get_device_list");
  api->free_device_list = (void (*) (struct ibv_device **)) dlsym (h, "ibv_free_device_list");
  api->get_device_name = (const char *(*) (struct ibv_device *)) dlsym (h, "ibv_get_device_name");
  if (api->get_device_list == NULL || api->free_device_list == NULL || api->get_device_name == NULL)
    return roce_error_refuse (err, "libibverbs", "ibv_get_device_list and its kin", "missing symbols",
                              "install a libibverbs1 of rdma-core 17 or later");
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

int
rdma_parse_devno (const char *s, unsigned *major, unsigned *minor)
{
  const char *colon = strchr (s, ':');
  cleanup_free char *maj = NULL;
  uint64_t a, b;

  if (colon == NULL)
    return -1;
  maj = xstrndup (s, (size_t) (colon - s));
  if (parse_u64 (maj, &a) < 0 || parse_u64 (colon + 1, &b) < 0)
    return -1;
  /* The kernel's limits: 12-bit major, 20-bit minor.  */
  if (a > 0xfff || b > 0xfffff)
    return -1;
  *major = (unsigned) a;
  *minor = (unsigned) b;
  return 0;
}

const char *
rdma_node_name (const struct rdma_node *n)
{
  const char *s = strrchr (n->path, '/');
  return s ? s + 1 : n->path;
}

/* "uverbs" and a number: the only names that go into a path.  */
static bool
valid_uverbs_name (const char *s)
{
  size_t len = strlen (s);
  if (strncmp (s, "uverbs", 6) != 0 || len < 7 || len > 12)
    return false;
  for (const char *p = s + 6; *p; p++)
    if (*p < '0' || *p > '9')
      return false;
  return true;
}

static int
node_from_sysfs (const struct roce_policy *p, const char *rel, const char *name,
                 struct rdma_node *out, roce_error_t *err)
{
  cleanup_free char *dev = NULL;

  if (sysfs_read_line (p->sysfs_root, rel, &dev, err) < 0)
    return roce_error_wrap (err, "device numbers of %s", name);
  if (rdma_parse_devno (dev, &out->major, &out->minor) < 0)
    {
      cleanup_free char *what = xasprintf ("%s/%s", p->sysfs_root, rel);
      cleanup_free char *found = xasprintf ("'%s'", dev);
      return roce_error_refuse (err, what, "major:minor", found, "check the host's sysfs_root");
    }
  return check_snprintf (out->path, sizeof (out->path), err, RDMA_CDEV_DIR "/%s", name) < 0 ? -1 : 0;
}

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

/* The kernel's uverbs devices, read the way libibverbs's own sysfs
 * enumeration reads them (rdma-core libibverbs/sysfs.c and init.c):
 * class/infiniband_verbs/abi_version in 3..6, and per uverbsN its ibdev, an
 * existing class/infiniband/<ibdev>, its dev numbers, and a node at
 * /dev/infiniband/uverbsN.  libibverbs itself is not asked on the start path:
 * its device list loads every provider library the host has (about 2.4 ms
 * of a start here, `make bench`), and the providers that matter are the
 * container image's own, not the host's.  `check` still asks it.  */
struct uverbs_dev
{
  char name[16]; /* uverbsN */
  char *ibdev;
};

static void
uverbs_devs_free (struct uverbs_dev *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (v[i].ibdev);
  free (v);
}

static int
uverbs_list (const char *sysfs_root, struct uverbs_dev **out, size_t *n_out, roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/class/infiniband_verbs", sysfs_root);
  cleanup_free char *abi = NULL;
  cleanup_error roce_error_t aerr = NULL;
  struct uverbs_dev *v = NULL;
  size_t n = 0;
  uint64_t abi_v = 0;
  DIR *d;
  struct dirent *e;

  d = opendir (dir);
  if (d == NULL || sysfs_read_line (sysfs_root, "class/infiniband_verbs/abi_version", &abi, &aerr) < 0
      || parse_u64 (abi, &abi_v) < 0 || abi_v < 3 || abi_v > 6)
    {
      cleanup_free char *found = d == NULL ? xasprintf ("none (%s: %s)", dir, strerror (errno))
                                           : xasprintf ("uverbs ABI %s", abi ? abi : "unreadable");
      if (d)
        closedir (d);
      return roce_error_refuse (err, "RDMA devices", "the kernel's uverbs devices (ABI 3..6)", found,
                                "load the HCA's driver and ib_uverbs on the host");
    }
  while ((e = readdir (d)) != NULL)
    {
      cleanup_free char *rel = NULL, *ibdev = NULL, *ibpath = NULL, *node = NULL;
      cleanup_error roce_error_t lerr = NULL;
      struct stat st;
      if (e->d_name[0] == '.' || ! valid_uverbs_name (e->d_name))
        continue;
      rel = xasprintf ("class/infiniband_verbs/%s/ibdev", e->d_name);
      if (sysfs_read_line (sysfs_root, rel, &ibdev, &lerr) < 0 || ! policy_valid_hca_name (ibdev))
        continue;
      ibpath = xasprintf ("%s/class/infiniband/%s", sysfs_root, ibdev);
      node = xasprintf (RDMA_CDEV_DIR "/%s", e->d_name);
      /* libibverbs drops a device whose ibdev or node is missing.  */
      if (stat (ibpath, &st) < 0 || stat (node, &st) < 0)
        continue;
      v = xrealloc (v, (n + 1) * sizeof (*v));
      /* valid_uverbs_name: at most 12 characters.  */
      memcpy (v[n].name, e->d_name, strlen (e->d_name) + 1);
      v[n].ibdev = steal_pointer (&ibdev);
      n++;
    }
  closedir (d);
  *out = v;
  *n_out = n;
  return 0;
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

int
rdma_nodes_for_request (const struct roce_policy *p, const struct roce_request *r,
                        struct rdma_node **out, size_t *n_out, roce_error_t *err)
{
  struct uverbs_dev *devs = NULL;
  size_t n_dev = 0, n = 0;
  cleanup_free struct rdma_node *nodes = NULL;
  cleanup_free char *cm = NULL;
  cleanup_error roce_error_t cm_err = NULL;
  int ret = -1;

  if (uverbs_list (p->sysfs_root, &devs, &n_dev, err) < 0)
    return -1;
  nodes = xmalloc0 ((r->n + 1) * sizeof (*nodes));
  for (size_t i = 0; i < r->n; i++)
    {
      const char *hca = r->sel[i].hca->name;
      const struct uverbs_dev *dev = NULL;
      cleanup_free char *rel = NULL;

      for (size_t j = 0; j < n_dev && dev == NULL; j++)
        if (strcmp (devs[j].ibdev, hca) == 0)
          dev = &devs[j];
      if (dev == NULL)
        {
          cleanup_free char *what = xasprintf ("HCA %s", hca);
          cleanup_free char *names = xstrdup ("");
          cleanup_free char *expected = NULL;
          cleanup_free char *fix = xasprintf ("check the HCA's driver, `ibv_devices` and " RDMA_CDEV_DIR
                                              "/uverbs* on the host, or remove %s from %s",
                                              hca, p->path);
          for (size_t j = 0; j < n_dev; j++)
            str_list_add (&names, ", ", "%s", devs[j].ibdev);
          expected = xasprintf ("an RDMA device with a uverbs node (the host has %s)",
                                *names ? names : "none");
          roce_error_refuse (err, what, expected, "not listed", fix);
          goto out;
        }
      rel = xasprintf ("class/infiniband_verbs/%s/dev", dev->name);
      if (node_from_sysfs (p, rel, dev->name, &nodes[n], err) < 0)
        {
          roce_error_wrap (err, "HCA %s", hca);
          goto out;
        }
      n++;
    }
  ret = 0;
out:
  uverbs_devs_free (devs, n_dev);
  if (ret < 0)
    return -1;

  /* rdma_cm: where the host has it (the rdma_ucm module), with its own,
   * dynamic, misc minor.  */
  if (sysfs_read_line (p->sysfs_root, "class/misc/rdma_cm/dev", &cm, &cm_err) == 0)
    {
      if (node_from_sysfs (p, "class/misc/rdma_cm/dev", "rdma_cm", &nodes[n], err) < 0)
        return -1;
      n++;
    }
  else if (cm_err->status != ENOENT)
    return roce_error_make (err, cm_err->status, "rdma_cm: %s", cm_err->msg);

  *out = steal_pointer (&nodes);
  *n_out = n;
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
