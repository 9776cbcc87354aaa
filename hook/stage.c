/* SPDX-License-Identifier: Apache-2.0 */
/* The hook's stages: the runtime's state read, the lenient look, then the
 * strict read, the plan and the steps of a start or a poststop.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "devices/devices.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "net/net.h"
#include "net/rails.h"
#include "probe/seed.h"
#include "qos/qos.h"
#include "spec/annot.h"
#include "spec/authz.h"
#include "stage.h"
#include "sys/confine.h"
#include "sys/netns.h"
#include "topo/topo.h"

static const char *const stage_names[] = {
  [ROCE_STAGE_PRESTART] = "prestart",
  [ROCE_STAGE_CREATE_RUNTIME] = "createRuntime",
  [ROCE_STAGE_POSTSTOP] = "poststop",
};

int
roce_stage_parse (const char *name, enum roce_stage *out)
{
  for (size_t i = 0; i < ARRAY_SIZE (stage_names); i++)
    if (strcmp (stage_names[i], name) == 0)
      {
        *out = (enum roce_stage) i;
        return 0;
      }
  return -1;
}

const char *
roce_stage_name (enum roce_stage s)
{
  return stage_names[s];
}

const char *
roce_ctx_id (const struct roce_ctx *ctx)
{
  return ctx->state ? ctx->state->id : ctx->seen_id ? ctx->seen_id : "-";
}

/* The runtime's view (the state) when it sent one, else config.json's.  */
static const struct roce_kv *
ctx_annotations (const struct roce_ctx *ctx, size_t *n)
{
  *n = 0;
  if (ctx->state && ctx->state->has_annotations)
    {
      *n = ctx->state->n_annotations;
      return ctx->state->annotations;
    }
  if (ctx->config)
    {
      *n = ctx->config->n_annotations;
      return ctx->config->annotations;
    }
  return NULL;
}

const char *
roce_ctx_annotation (const struct roce_ctx *ctx, const char *key)
{
  size_t n;
  const struct roce_kv *kv = ctx_annotations (ctx, &n);
  return kv ? roce_kv_get (kv, n, key) : NULL;
}

void
roce_ctx_clear (struct roce_ctx *ctx)
{
  annot_request_clear (&ctx->req);
  devices_state_free (ctx->devices);
  ctx->devices = NULL;
  cleanup_closep (&ctx->c.pidfd);
  cleanup_closep (&ctx->c.netns_fd);
  cleanup_closep (&ctx->c.mntns_fd);
  rootfs_host_clear (&ctx->rootfs_host);
  ctx->c.rootfs_host = NULL;
  uplinks_clear (&ctx->uplinks);
  ctx->c.uplinks = NULL;
  net_state_free (ctx->net);
  ctx->net = NULL;
  oci_state_free (ctx->state);
  free (ctx->seen_id);
  ctx->seen_id = NULL;
  oci_config_free (ctx->config);
  oci_seen_config_clear (&ctx->seen);
  free (ctx->state_raw);
  ctx->state_raw = NULL;
  ctx->state_raw_len = 0;
  policy_free (ctx->policy);
  ctx->state = NULL;
  ctx->config = NULL;
  ctx->policy = NULL;
}

/* Reads the state and finds out whether the container asked for RoCE at all,
 * leniently (oci_asks_for): for a container that did not, this is the whole
 * cost, and nothing about its spec, however odd, can refuse or delay it.
 * Only a container that asked is parsed strictly.  */
static int
load_state (struct roce_ctx *ctx, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  size_t len = 0;

  {
    cleanup_error roce_error_t rerr = NULL;
    if (read_all_fd (ctx->state_fd, OCI_SCAN_MAX, &buf, &len, &rerr) < 0)
      return 0; /* not readable: not a request */
  }
  /* The hooks of a CDI spec run only for containers that requested one of
   * its devices: their config.json is read whole.  */
  if (! ctx->cdi && ! oci_asks_for (buf, len, ANNOT_HCA, &ctx->seen))
    return 0;
  if ((len > OCI_STATE_MAX
       && roce_error_make (err, E2BIG, "OCI state: larger than %d bytes", OCI_STATE_MAX) < 0)
      || oci_state_parse (buf, &ctx->state, err) < 0)
    {
      /* The refusal still names the container, as the lenient read saw it
       * (escaped when printed).  */
      struct json_scan scan = { .key = ANNOT_HCA, .capture = "id" };
      json_scan (buf, len, &scan);
      if (scan.captured && scan.captured[0] && strlen (scan.captured) <= OCI_ID_MAX)
        ctx->seen_id = steal_pointer (&scan.captured);
      json_scan_clear (&scan);
      return -1;
    }
  roce_log_set_container (ctx->state->id);
  ctx->c.id = ctx->state->id;
  ctx->c.pid = ctx->state->pid;
  ctx->c.bundle = ctx->state->bundle;
  if ((! ctx->state->has_annotations || ctx->cdi)
      && oci_config_load_seen (ctx->state->bundle, &ctx->seen, &ctx->config, err) < 0)
    return roce_error_wrap (err, "reading the bundle");
  ctx->c.config = ctx->config;
  ctx->c.annotations = ctx_annotations (ctx, &ctx->c.n_annotations);
  ctx->active = roce_ctx_annotation (ctx, ANNOT_HCA) != NULL
                || (ctx->cdi && annot_cdi_asked (ctx->config->env));
  ctx->state_raw = steal_pointer (&buf);
  ctx->state_raw_len = len;
  return 0;
}

/* Policy, config.json and annotations: everything is parsed and validated
 * before anything on the host is touched.  */
static int
load_policy (struct roce_ctx *ctx, roce_error_t *err)
{
  if (ctx->policy)
    return 0;
  if (policy_load (ctx->config_path, &ctx->policy, err) < 0)
    return -1;
  policy_open_log (ctx->policy);
  return 0;
}

/* Inputs read: from here on the process can never run a program, and holds
 * only the capabilities its phases need, none of them effective yet.  TCP
 * only for the etcd of a policy with `cluster`.  */
static int
confine_stage (const struct roce_policy *p, struct roce_container *c, roce_error_t *err)
{
  /* confine_caps leaves none effective (PHASE_NONE) already.  */
  if (confine_caps (CONFINE_STAGE, err) < 0)
    return -1;
  /* A start that may still go on in roce-hook-engine (linkage.h): its
   * filter goes on in net_setup, once the leases are taken.  */
  if (c && linkage_defers_seccomp (c->linkage, p->cluster != NULL))
    return 0;
  return confine_seccomp_net (CONFINE_STAGE, p->cluster != NULL, err);
}

bool
roce_stage_needs_engine (const struct roce_ctx *ctx, const roce_error_t *err)
{
  return (ctx->stage == ROCE_STAGE_PRESTART || ctx->stage == ROCE_STAGE_CREATE_RUNTIME)
         && ctx->state_raw != NULL && roce_error_kind (err) == ROCE_ERROR_NEEDS_ENGINE;
}

/* Poststop's step: the container leaves what it held.  */
static int
release (const struct roce_policy *p, const struct roce_container *c, const char *who,
         roce_error_t *err)
{
  if (confine_phase (PHASE_NETWORK, err) < 0)
    return -1;
  roce_log (ROCE_LOG_INFO, "%s", who);
  return net_release (p, c, err);
}

static int
load_request (struct roce_ctx *ctx, roce_error_t *err)
{
  struct stat st;

  if (load_policy (ctx, err) < 0)
    return -1;
  /* The runtime hands us the bundle's own path; a symlink there would let
   * whoever controls it swap the config under us.  */
  if (lstat (ctx->state->bundle, &st) == 0 && S_ISLNK (st.st_mode))
    return roce_error_refuse (err, "OCI state bundle", "a directory", "a symlink",
                              "start the container with the bundle's real path");
  if (ctx->config == NULL
      && oci_config_load_seen (ctx->state->bundle, &ctx->seen, &ctx->config, err) < 0)
    return roce_error_wrap (err, "reading the bundle");
  ctx->c.config = ctx->config;
  ctx->c.annotations = ctx_annotations (ctx, &ctx->c.n_annotations);
  {
    size_t n;
    const struct roce_kv *kv = ctx_annotations (ctx, &n);
    const char *hca = roce_ctx_annotation (ctx, ANNOT_HCA);
    const struct annot_source *src = &annot_from_annotations;
    cleanup_free char *cdi = ctx->cdi ? annot_cdi_hcas (ctx->policy, ctx->config->env) : NULL;
    /* A CDI request: an annotation or ROCE_HCA beside it says the same. */
    if (cdi)
      {
        if (annot_cdi_agree (cdi, hca, oci_env_get (ctx->config->env, ANNOT_ENV_HCA), err) < 0)
          return -1;
        if (hca == NULL)
          hca = cdi, src = &annot_from_cdi;
      }
    if (topo_request_resolve (ctx->policy, src, hca, roce_ctx_annotation (ctx, ANNOT_IP),
                              ctx->config, kv, n, &ctx->req, err)
        < 0)
      return -1;
    return authz_check (ctx->policy, &ctx->req, kv, n, err);
  }
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* The state's pid must be the container's, not some host process: for each
 * namespace the spec asks the runtime to create, the process must be in a
 * namespace other than ours; for each it joins by path, in exactly that one. */
static int
verify_container_pid (const struct roce_ctx *ctx, roce_error_t *err)
{
  static const struct
  {
    const char *spec, *proc;
  } types[] = {
    { "network", "net" }, { "mount", "mnt" }, { "pid", "pid" }, { "ipc", "ipc" }, { "uts", "uts" }
  };
  pid_t pid = ctx->state->pid;

  for (size_t i = 0; i < ARRAY_SIZE (types); i++)
    {
      const struct oci_namespace *ns = oci_config_namespace (ctx->config, types[i].spec);
      char theirs[64];
      int same;
      if (ns == NULL)
        continue;
      snprintf (theirs, sizeof (theirs), "/proc/%d/ns/%s", (int) pid, types[i].proc);
      if (ns->path)
        same = ns_same_path (theirs, ns->path, err);
      else
        {
          /* Inode numbers: the fds opened already, the links read (nsfs). */
          int fd = strcmp (types[i].proc, "net") == 0   ? ctx->c.netns_fd
                   : strcmp (types[i].proc, "mnt") == 0 ? ctx->c.mntns_fd
                                                        : -1;
          struct stat st;
          uint64_t a = 0, b = 0;
          if (fd >= 0 && fstat (fd, &st) < 0)
            return roce_error_sys (err, errno, "`%s`", theirs);
          if (fd >= 0)
            a = (uint64_t) st.st_ino;
          if ((fd < 0 && ns_link_ino (theirs, &a, err) < 0)
              || ns_self_ino (types[i].proc, &b, err) < 0)
            return -1;
          same = a == b;
        }
      if (same < 0)
        return -1;
      if (ns->path ? ! same : same)
        {
          cleanup_free char *exp
              = ns->path ? xasprintf ("a process in the %s namespace %s", types[i].spec, ns->path)
                         : xasprintf ("a process in a new %s namespace", types[i].spec);
          cleanup_free char *got
              = xasprintf ("pid %d, in %s", (int) pid, ns->path ? "another one" : "the host's");
          return roce_error_refuse (
              err, "OCI state pid", exp, got,
              "run roce-hook only as the runtime's hook; the pid must be the container's");
        }
    }
  return 0;
}

/* Opens the container's namespaces once.  The pidfd taken first and checked
 * after the opens proves the namespace fds belong to the process the state
 * named, not to a process that reused its pid.  */
static int
container_open (struct roce_ctx *ctx, roce_error_t *err)
{
  pid_t pid = ctx->state->pid;
  char path[64];

  ctx->c.pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
  /* ENOSYS: a kernel before 5.3 (or valgrind); fall back to kill(pid, 0). */
  if (ctx->c.pidfd < 0 && (errno != ENOSYS || kill (pid, 0) < 0))
    return roce_error_sys (err, errno, "container process %d", (int) pid);
  snprintf (path, sizeof (path), "/proc/%d/ns/net", (int) pid);
  ctx->c.netns_fd = open (path, O_RDONLY | O_CLOEXEC);
  if (ctx->c.netns_fd < 0)
    return roce_error_sys (err, errno, "open `%s`", path);
  snprintf (path, sizeof (path), "/proc/%d/ns/mnt", (int) pid);
  ctx->c.mntns_fd = open (path, O_RDONLY | O_CLOEXEC);
  if (ctx->c.mntns_fd < 0)
    return roce_error_sys (err, errno, "open `%s`", path);
  if (ctx->c.pidfd >= 0 ? syscall (SYS_pidfd_send_signal, ctx->c.pidfd, 0, NULL, 0) < 0
                        : kill (pid, 0) < 0)
    return roce_error_sys (err, errno, "container process %d went away", (int) pid);
  return verify_container_pid (ctx, err);
}

static int
stage_start (struct roce_ctx *ctx, roce_error_t *err)
{
  cleanup_free char *names = NULL;

  if (ctx->state->pid <= 0)
    return roce_error_refuse (err, "OCI state", "the container's pid", "none",
                              "register roce-hook as a prestart or createRuntime hook");
  if (load_request (ctx, err) < 0)
    return -1;
  if (ctx->req.n == 0)
    return 0; /* roce.io/hca=auto in a pod sandbox: its containers choose */
  /* One socket in the host's namespace and one look-up of each HCA's
   * netdev, for the gate and the network step alike (uplink.h).  */
  if (uplinks_open (ctx->policy, &ctx->req, &ctx->uplinks, err) < 0)
    return -1;
  ctx->c.uplinks = &ctx->uplinks;
  if (qos_gate (ctx->policy, &ctx->req, &ctx->c, err)
      < 0) /* read-only: refuses before anything is made */
    return -1;
  seed_verify (ctx->policy, &ctx->req, &ctx->c); /* logs, never refuses */
  if (confine_phase (PHASE_INSPECT, err) < 0 || container_open (ctx, err) < 0)
    return -1;
  if (confine_phase (PHASE_NETWORK, err) < 0
      || net_setup (ctx->policy, &ctx->req, &ctx->c, NULL, &ctx->net, err) < 0)
    return -1;
  roce_pause_point ("network-made");
  {
    /* The devices and the rails file (rails.h): one entry into the
     * container's mount namespace for both, in the devices' phase.  */
    size_t n_rails;
    const struct net_rail *rails = net_state_rails (ctx->net, &n_rails);
    struct rails_pub pub;
    const struct devices_also also = { rails_publish_here, rails_unpublish_here, &pub };
    int rc;

    rails_pub_init (&pub, rails, n_rails);
    rc = confine_phase (PHASE_DEVICES, err) < 0
         || devices_setup (ctx->policy, &ctx->req, &ctx->c, n_rails ? &also : NULL, &ctx->devices,
                           err)
                < 0;
    rails_pub_clear (&pub);
    if (rc)
      {
        confine_phase (PHASE_NETWORK, NULL);
        net_undo (ctx->policy, &ctx->c, ctx->net);
        return -1;
      }
  }
  confine_phase (PHASE_NONE, NULL);
  names = annot_request_names (&ctx->req);
  roce_log (ROCE_LOG_INFO, "%s: pid %d, HCAs %s", roce_stage_name (ctx->stage),
            (int) ctx->state->pid, names);
  return 0;
}

static int
stage_poststop (struct roce_ctx *ctx, roce_error_t *err)
{
  if (load_policy (ctx, err) < 0)
    return -1;
  return release (ctx->policy, &ctx->c, "poststop", err);
}

int
roce_release_container (const struct roce_policy *p, const char *id, roce_error_t *err)
{
  struct roce_container c = ROCE_CONTAINER_INIT;

  c.id = id;
  c.ends_after_release = true;
  roce_log_set_container (id);
  policy_open_log (p);
  if (confine_stage (p, NULL, err) < 0)
    return roce_error_wrap (err, "confining the release");
  return release (p, &c, "poststop (roce-runtime, after its run)", err);
}

int
roce_release_netns (const struct roce_policy *p, const char *id, const struct netns_id *ns,
                    int mark, roce_error_t *err)
{
  struct roce_container c = ROCE_CONTAINER_INIT;

  c.id = id;
  roce_log_set_container (id);
  policy_open_log (p);
  /* gc's confinement: the release needs nothing of a stage's (no mount,
   * unshare, bpf or new process), only the network and the scan.  */
  if (confine_caps (CONFINE_GC, err) < 0 || confine_phase (PHASE_NETWORK, err) < 0
      || confine_seccomp_net (CONFINE_GC, p->cluster != NULL, err) < 0)
    {
      if (mark >= 0)
        close (mark); /* its file: swept by gc */
      return roce_error_wrap (err, "confining the release");
    }
  roce_log (ROCE_LOG_INFO, "poststop (roce-runtime, after its run, in pid %d)", (int) getpid ());
  roce_pause_point ("release-confined");
  return net_release_netns (p, &c, ns, mark, err);
}

int
roce_stage_run (struct roce_ctx *ctx, roce_error_t *err)
{
  if (load_state (ctx, err) < 0)
    return -1;
  if (! ctx->active)
    return 0;
  if (load_policy (ctx, err) < 0)
    return -1;
  ctx->c.linkage = ctx->linkage;
  if (confine_stage (ctx->policy, ctx->stage == ROCE_STAGE_POSTSTOP ? NULL : &ctx->c, err) < 0)
    return roce_error_wrap (err, "confining the hook");
  switch (ctx->stage)
    {
      case ROCE_STAGE_PRESTART:
      case ROCE_STAGE_CREATE_RUNTIME:
        return stage_start (ctx, err);
      case ROCE_STAGE_POSTSTOP:
        return stage_poststop (ctx, err);
    }
  return roce_error_make (err, EINVAL, "internal error: unknown stage");
}
