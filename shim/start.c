/* SPDX-License-Identifier: Apache-2.0 */
/* The start's network made by roce-runtime itself, before the runtime runs,
 * the way a CNI runtime does it: a network namespace of the shim's, the QoS
 * gate, the macvlans and leases (net_setup, as the hook's createRuntime
 * would), and the rails file for a bind mount.  config.json then names the
 * namespace by path and carries no createRuntime hook: the runtime spawns
 * no hook to start the container.
 *
 * The path is /proc/<shim>/fd/<n>: the namespace lives while the shim holds
 * it, and the shim waits for the runtime (shim/run.c), so it lives until the
 * container's init has joined it, and then as long as the container does.
 * Nothing is pinned on the host: a shim or runtime that dies half-way
 * leaves a namespace nobody holds, which the kernel ends with its macvlans
 * (their leases are then a dead holder's, which every start, gc and the
 * reaper recover).  */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/utils.h"
#include "net/net.h"
#include "net/rails.h"
#include "probe/seed.h"
#include "qos/qos.h"
#include "shim.h"
#include "spec/annot.h"
#include "stage.h"
#include "sys/netlink.h"

bool
shim_start_applies (const struct oci_config *config)
{
  const struct oci_namespace *net = oci_config_namespace (config, "network");
  /* A namespace given by path (a pod's, CNI's) is the runtime's to join
   * and the hook's to set up; a user namespace would own the new one
   * (a namespace of the host's user namespace cannot be joined from it).
   * A path of the shim's own form is a killed shim's: replaced.  */
  return net && (net->path == NULL || shim_netns_path_is_shims (net->path))
         && oci_config_namespace (config, "user") == NULL;
}

/* runc and crun bring up lo only in a namespace they create.  In a new
 * namespace lo is the one link, and its index is 1 (the kernel registers it
 * first, and its routing takes index 1 for lo: LOOPBACK_IFINDEX).  */
#define LOOPBACK_IFINDEX 1

static int
loopback_up (struct nl_sock *s, roce_error_t *err)
{
  if (netlink_link_set_up (s, LOOPBACK_IFINDEX, err) < 0)
    return roce_error_wrap (err, "lo in the container's network namespace");
  return 0;
}

int
shim_start_network (const struct roce_policy *p, const struct roce_request *req, const char *id,
                    const char *bundle, const struct oci_config *config, struct shim_start *s,
                    roce_error_t *err)
{
  struct roce_container c = ROCE_CONTAINER_INIT;
  struct nl_sock *sock = NULL;
  size_t n_rails;
  const struct net_rail *rails;

  c.id = id;
  c.bundle = bundle;
  c.config = config;
  c.annotations = config->annotations;
  c.n_annotations = config->n_annotations;
  roce_log_open ("roce-runtime");
  roce_log_set_container (id);
  policy_open_log (p);
  /* Read-only, before anything is made.  */
  if (qos_gate (p, req, &c, err) < 0)
    return -1;
  if (netlink_netns_new (&s->netns_fd, &sock, err) < 0)
    return -1;
  if (loopback_up (sock, err) < 0)
    {
      netlink_close (sock);
      goto fail;
    }
  c.netns_fd = s->netns_fd;
  /* net_setup takes the socket over, whatever its outcome.  */
  if (net_setup (p, req, &c, sock, &s->net, err) < 0)
    goto fail;
  rails = net_state_rails (s->net, &n_rails);
  if (n_rails > 0)
    {
      cleanup_free char *text = rails_render (rails, n_rails);
      if (shim_rails_write (p->state_dir, id, text, &s->rails_path, &s->rails_id, err) < 0)
        {
          shim_start_undo (p, id, s);
          return -1;
        }
    }
  s->netns_path = xasprintf ("/proc/%d/fd/%d", (int) getpid (), s->netns_fd);
  {
    cleanup_free char *names = annot_request_names (req);
    roce_log (ROCE_LOG_INFO, "start (roce-runtime): HCAs %s, the network made before the runtime",
              names);
  }
  return 0;
fail:
  cleanup_closep (&s->netns_fd);
  return -1;
}

void
shim_start_undo (const struct roce_policy *p, const char *id, struct shim_start *s)
{
  struct roce_container c = ROCE_CONTAINER_INIT;
  cleanup_error roce_error_t err = NULL;

  if (s->net == NULL)
    return;
  c.id = id;
  c.netns_fd = s->netns_fd;
  net_undo (p, &c, s->net);
  net_state_free (s->net);
  s->net = NULL;
  shim_start_after_runtime (s);
}

static void
config_forget (struct shim_start *s)
{
  free (s->bundle);
  free (s->config_written);
  free (s->config_aside);
  free (s->config_original);
  s->bundle = s->config_written = s->config_aside = s->config_original = NULL;
}

void
shim_start_clear (struct shim_start *s)
{
  net_state_free (s->net);
  s->net = NULL;
  cleanup_closep (&s->netns_fd);
  free (s->netns_path);
  free (s->rails_path);
  s->netns_path = s->rails_path = NULL;
  config_forget (s);
  oci_config_free (s->seed_config);
  s->seed_config = NULL;
  annot_request_clear (&s->seed_req);
}

void
shim_start_seed_check (const struct roce_policy *p, const char *id, struct shim_start *s)
{
  struct roce_container c = ROCE_CONTAINER_INIT;

  if (s->seed_config == NULL)
    return;
  c.id = id;
  c.config = s->seed_config;
  seed_verify (p, &s->seed_req, &c);
  oci_config_free (s->seed_config);
  s->seed_config = NULL;
  annot_request_clear (&s->seed_req);
}

/* The caller's config.json back, when the bundle's is still the one the
 * shim wrote (else it is somebody else's since: theirs to keep, and the
 * caller's old one, when beside it, goes).  */
static void
config_put_back (struct shim_start *s)
{
  cleanup_free char *now = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_close int dirfd = -1;
  size_t len = 0;
  bool ours, absent;

  if (s->bundle == NULL)
    return;
  dirfd = open (s->bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return; /* the bundle is gone: nothing to put back */
  {
    cleanup_close int fd
        = openat (dirfd, "config.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    absent = fd < 0 && errno == ENOENT;
    ours = fd >= 0 && read_all_fd (fd, s->written_len + 1, &now, &len, &err) == 0
           && len == s->written_len && memcmp (now, s->config_written, len) == 0;
  }
  if (s->config_aside)
    {
      /* Exchanged back (or, the bundle's gone, renamed back): the shim's
       * is then the one beside, removed.  */
      int r = absent ? renameat (dirfd, s->config_aside, dirfd, "config.json")
              : ours ? renameat2 (dirfd, s->config_aside, dirfd, "config.json", RENAME_EXCHANGE)
                     : 0;
      if (r < 0)
        roce_log (ROCE_LOG_WARN,
                  "config.json after the runtime: the caller's back vs %s: it is "
                  "`%s/%s` (fix: move it back to config.json)",
                  strerror (errno), s->bundle, s->config_aside);
      else if (! absent && unlinkat (dirfd, s->config_aside, 0) < 0 && errno != ENOENT)
        roce_log (ROCE_LOG_WARN, "remove `%s/%s`: %s", s->bundle, s->config_aside,
                  strerror (errno));
    }
  else if (ours
           && shim_write_config (s->bundle, s->config_original, s->original_len, NULL, &err) < 0)
    roce_log (ROCE_LOG_WARN, "config.json after the runtime: %s", err->msg);
}

void
shim_start_after_runtime (struct shim_start *s)
{
  const char *slash = s->rails_path ? strrchr (s->rails_path, '/') : NULL;
  if (slash)
    {
      /* This start's file only: a same-id container created since the
       * runtime returned has its own there.  */
      cleanup_free char *dir = xstrndup (s->rails_path, (size_t) (slash - s->rails_path));
      cleanup_close int dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      cleanup_error roce_error_t err = NULL;
      if (dirfd >= 0 && unlink_if_same (dirfd, slash + 1, &s->rails_id, &err) < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
    }
  free (s->rails_path);
  s->rails_path = NULL;
  config_put_back (s);
  config_forget (s);
}
