/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's work for RoCE pods: the hook's stages without an OCI state.
 *
 * RunPodSandbox: the request read (the pod's roce.io/ annotations, its
 * tenant from the runtime's own record of its namespace), the QoS gate,
 * the network made in the pod's network namespace (the runtime's path of
 * it) with the leases, the pod the holder's one member.  CreateContainer:
 * the gate again, the pod's network joined (or made, for roce.io/hca=auto
 * whose HCAs a container's GPUs choose, or a pod the plugin did not see
 * start), then the adjustment of the container's spec: the marker, the
 * RDMA nodes, RLIMIT_MEMLOCK (and RLIMIT_STACK), the NCCL variables it set
 * none of, the rails file.  StopPodSandbox: the pod's network taken down
 * and its leases released while the runtime's pin still holds the
 * namespace.  Every answer ends by the request's deadline: the lease
 * store's lock and etcd get what is left of it.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/authz.h"
#include "sys/confine.h"
#include "ipam/ipam.h"
#include "lib/log.h"
#include "net/net.h"
#include "sys/netns.h"
#include "nri/nri_int.h"
#include "qos/qos.h"
#include "net/rails.h"
#include "devices/grant.h"
#include "topo/topo.h"
#include "spec/container.h"
#include "net/uplink.h"
#include "lib/utils.h"

/* The least time a RoCE start is begun with: less is refused at once.  */
#define NRI_WORK_MIN_MS 100
#define NRI_DIR "nri"
/* A container created within this of its pod's RunPodSandbox, under the
 * same policy, takes the network and the gate's verdict that the sandbox's
 * event made a moment before (sandbox_reuse); a later one (a restart, a
 * second container after a long image pull) passes the gate and joins the
 * network again.  */
#define NRI_SANDBOX_REUSE_MS 10000

/* ---- the policy ---------------------------------------------------------------- */

static void
stamp_of (const struct stat *st, struct nri_file_stamp *out)
{
  out->dev = (unsigned long long) st->st_dev;
  out->ino = (unsigned long long) st->st_ino;
  out->size = (unsigned long long) st->st_size;
  out->mtime_ns = (long long) st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

int
nri_policy_load (struct nri_plugin *pl, roce_error_t *err)
{
  struct roce_policy *p = NULL;
  struct stat st;

  if (stat (pl->o->config_path, &st) < 0)
    return roce_error_sys (err, errno, "policy `%s`", pl->o->config_path);
  if (policy_load (pl->o->config_path, &p, err) < 0)
    return -1;
  nri_policy_free (pl);
  pl->policy = p;
  stamp_of (&st, &pl->policy_stamp);
  pl->lock_timeout_ms = p->lock_timeout_ms;
  pl->etcd_timeout_ms = p->cluster ? p->cluster->etcd.timeout_ms : 0;
  policy_open_log (p);
  return 0;
}

void
nri_policy_free (struct nri_plugin *pl)
{
  policy_free (pl->policy);
  pl->policy = NULL;
}

/* The policy as the node has it now (the DaemonSet's sync may have
 * replaced it), with the request's time: the store's lock and etcd's
 * exchanges get what is left of it.  */
static int
policy_for_request (struct nri_plugin *pl, roce_error_t *err)
{
  struct nri_file_stamp now;
  struct stat st;
  long left;

  if (stat (pl->o->config_path, &st) < 0)
    return roce_error_sys (err, errno, "policy `%s`", pl->o->config_path);
  stamp_of (&st, &now);
  if (pl->policy == NULL || memcmp (&now, &pl->policy_stamp, sizeof (now)) != 0)
    {
      if (nri_policy_load (pl, err) < 0)
        return -1;
      roce_log (ROCE_LOG_INFO, "policy `%s` read again: it changed", pl->o->config_path);
    }
  left = nri_ms_left (pl);
  if (left < NRI_WORK_MIN_MS)
    {
      cleanup_free char *exp = xasprintf ("at least %d ms", NRI_WORK_MIN_MS);
      cleanup_free char *got = xasprintf ("%ld ms", left < 0 ? 0 : left);
      return roce_error_refuse (err, "time left to answer the runtime", exp, got,
                                "raise the runtime's NRI plugin_request_timeout");
    }
  pl->budget_cut = (unsigned) left < pl->lock_timeout_ms
                   || (pl->policy->cluster && (unsigned) left < pl->etcd_timeout_ms);
  pl->policy->lock_timeout_ms
      = (unsigned) left < pl->lock_timeout_ms ? (unsigned) left : pl->lock_timeout_ms;
  if (pl->policy->cluster)
    pl->policy->cluster->etcd.timeout_ms
        = (unsigned) left < pl->etcd_timeout_ms ? (unsigned) left : pl->etcd_timeout_ms;
  return 0;
}

/* A refusal that came when the answer's time ran out, under a wait the
 * policy allows longer (the store's lock, etcd): said so.  */
static int
budget_note (struct nri_plugin *pl, roce_error_t *err)
{
  if (pl->budget_cut && nri_ms_left (pl) < NRI_WORK_MIN_MS)
    return roce_error_wrap (err,
                            "the answer's time (%lld ms of the runtime's NRI request "
                            "timeout %lld ms) ran out",
                            (long long) pl->request_timeout_ms - NRI_ANSWER_MARGIN_MS,
                            (long long) pl->request_timeout_ms);
  return -1;
}

/* ---- what the plugin knows ---------------------------------------------------- */

static struct nri_pod_rec *
pod_find (struct nri_plugin *pl, const char *id)
{
  for (size_t i = 0; i < pl->n_pods; i++)
    if (strcmp (pl->pods[i].id, id) == 0)
      return &pl->pods[i];
  return NULL;
}

static struct nri_pod_rec *
pod_remember (struct nri_plugin *pl, const struct nri_pod *pod)
{
  struct nri_pod_rec *r = pod_find (pl, pod->id);
  if (r == NULL)
    {
      pl->pods = xrealloc (pl->pods, (pl->n_pods + 1) * sizeof (*pl->pods));
      r = &pl->pods[pl->n_pods++];
      memset (r, 0, sizeof (*r));
      r->id = xstrdup (pod->id);
    }
  free (r->ns);
  free (r->name);
  r->ns = xstrdup (pod->ns ? pod->ns : "");
  r->name = xstrdup (pod->name ? pod->name : "");
  if (pod->netns)
    {
      free (r->netns);
      r->netns = xstrdup (pod->netns);
    }
  return r;
}

void
nri_pod_rec_unmake (struct nri_pod_rec *r)
{
  free (r->made_hcas);
  free (r->made_rails);
  r->made_hcas = r->made_rails = NULL;
}

static struct nri_ctr_rec *
ctr_find (struct nri_plugin *pl, const char *id)
{
  for (size_t i = 0; i < pl->n_ctrs; i++)
    if (strcmp (pl->ctrs[i].id, id) == 0)
      return &pl->ctrs[i];
  return NULL;
}

static struct nri_ctr_rec *
ctr_remember (struct nri_plugin *pl, const struct nri_ctr *c)
{
  struct nri_ctr_rec *r = ctr_find (pl, c->id);
  if (r == NULL)
    {
      pl->ctrs = xrealloc (pl->ctrs, (pl->n_ctrs + 1) * sizeof (*pl->ctrs));
      r = &pl->ctrs[pl->n_ctrs++];
      memset (r, 0, sizeof (*r));
      r->id = xstrdup (c->id);
      r->pod_id = xstrdup (c->pod_id ? c->pod_id : "");
      r->name = xstrdup (c->name ? c->name : "");
    }
  return r;
}

int
nri_dir_open (const struct roce_policy *p, bool create, roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/" NRI_DIR, p->state_dir);
  int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  /* Made once: every container's rails file is written here.  */
  if (fd < 0 && errno == ENOENT && create)
    {
      if (mkdir_p (p->state_dir, "state_dir", err) < 0)
        return -1;
      if (mkdir (path, 0700) < 0 && errno != EEXIST)
        return roce_error_sys (err, errno, "mkdir `%s`", path);
      fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  if (fd < 0)
    return roce_error_sys (err, errno, "`%s`", path);
  return fd;
}

static void
rails_remove (const struct roce_policy *p, const char *id)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_close int dir = p ? nri_dir_open (p, false, &err) : -1;
  cleanup_free char *name = xasprintf ("%s.rails", id);
  if (dir >= 0 && unlinkat (dir, name, 0) < 0 && errno != ENOENT)
    roce_log (ROCE_LOG_WARN, "remove the rails file %s: %s", name, strerror (errno));
}

static void
ctr_forget (struct nri_plugin *pl, const char *id)
{
  struct nri_ctr_rec *r = ctr_find (pl, id);
  if (r == NULL)
    return;
  if (r->rails)
    rails_remove (pl->policy, r->id);
  if (r->no_ipc_lock)
    pl->status_dirty = true;
  free (r->id);
  free (r->pod_id);
  free (r->name);
  *r = pl->ctrs[--pl->n_ctrs];
}

/* Whether a pod asked for RoCE at all: its annotations looked at, nothing
 * else read, so that no other pod can be refused or delayed by anything
 * in its message.  */
static bool
pod_asks (const RoceNri__PodSandbox *m)
{
  if (m == NULL)
    return false;
  for (size_t i = 0; i < m->n_annotations; i++)
    if (m->annotations[i] && m->annotations[i]->key
        && strcmp (m->annotations[i]->key, ANNOT_HCA) == 0)
      return true;
  return false;
}

/* ---- the hook's stages, in the pod's namespace ------------------------------------ */

/* The gate, then the pod's network made in its namespace (or joined): the
 * pod id is the holder's member.  *net on success.  */
static int
pod_network (struct nri_plugin *pl, const struct nri_pod *pod, const struct roce_request *req,
             const struct oci_config *config, bool gate, struct net_state **net, roce_error_t *err)
{
  struct roce_container c = ROCE_CONTAINER_INIT;
  struct roce_uplinks up = { 0 };
  int ret = -1;

  if (pod->netns == NULL)
    return roce_error_refuse (err, "the pod's network namespace", "a path from the runtime", "none",
                              "run the pod with a network namespace of its own");
  c.id = pod->id;
  c.config = config;
  c.annotations = pod->kv;
  c.n_annotations = pod->n_kv;
  c.linkage = pl->o->linkage;
  if (confine_phase (PHASE_NETWORK, err) < 0)
    return -1;
  /* The namespace held by its fd; its identity is read once, by net_setup,
   * from the netlink socket it makes there.  */
  c.netns_fd = netns_open_nsfs (pod->netns, true, NULL, err);
  if (c.netns_fd < 0)
    {
      roce_error_wrap (err, "the pod's network namespace");
      goto out;
    }
  if (uplinks_open (pl->policy, req, &up, err) < 0)
    goto out;
  c.uplinks = &up;
  if (gate && qos_gate (pl->policy, req, &c, err) < 0)
    goto out;
  ret = net_setup (pl->policy, req, &c, NULL, net, err);
out:
  confine_phase (PHASE_NONE, NULL);
  uplinks_clear (&up);
  cleanup_closep (&c.netns_fd);
  return ret;
}

/* What a net_setup made taken back (a later step failed); a network that
 * was joined stays the pod's.  */
static void
pod_network_undo (struct nri_plugin *pl, const struct nri_pod *pod, struct net_state *net)
{
  struct roce_container c = ROCE_CONTAINER_INIT;
  if (! net_state_made (net))
    return;
  c.id = pod->id;
  confine_phase (PHASE_NETWORK, NULL);
  net_undo (pl->policy, &c, net);
  confine_phase (PHASE_NONE, NULL);
}

static int
request_of (struct nri_plugin *pl, const struct nri_pod *pod, const struct oci_config *config,
            struct roce_request *req, roce_error_t *err)
{
  if (policy_for_request (pl, err) < 0
      || topo_request_resolve (pl->policy, &annot_from_annotations, pod->hca, pod->ip, config,
                               pod->kv, pod->n_kv, req, err)
             < 0)
    return -1;
  return authz_check (pl->policy, req, pod->kv, pod->n_kv, err);
}

/* What a RunPodSandbox made, remembered for its containers (the network
 * and the gate's verdict; sandbox_reuse).  */
static void
sandbox_made (struct nri_plugin *pl, struct nri_pod_rec *r, const char *names,
              const struct net_state *net)
{
  struct netns_id id;
  size_t n;
  const struct net_rail *rails = net_state_rails (net, &n);

  if (! net_state_netns (net, &id))
    return;
  netns_id_format (&id, r->made_ns, sizeof (r->made_ns));
  r->made_hcas = xstrdup (names);
  r->made_rails = n ? rails_render (rails, n) : NULL;
  r->made_policy = pl->policy_stamp;
  r->made_ms = mono_ms ();
}

/* Whether a container of the pod takes what its RunPodSandbox made, as
 * it is: the same HCAs, the same policy, soon after, the network not
 * released since (the plugin alone releases a live pod's leases), and no
 * variable in its env that the gate checks (the sandbox's verdict was made
 * without an env: such a container passes the whole gate).  Then the
 * gate's verdict and the join are the sandbox's: the line a join says is
 * said.  */
static bool
sandbox_reuse (struct nri_plugin *pl, const struct nri_pod *pod, const struct roce_request *req,
               const struct oci_config *config)
{
  struct nri_pod_rec *r = pod_find (pl, pod->id);
  cleanup_free char *names = NULL;

  if (r == NULL || r->made_hcas == NULL || r->released || pod->netns == NULL
      || (config && qos_env_checked (config->env))
      || memcmp (&r->made_policy, &pl->policy_stamp, sizeof (r->made_policy)) != 0
      || mono_ms () - r->made_ms > NRI_SANDBOX_REUSE_MS)
    return false;
  names = annot_request_names (req);
  if (strcmp (names, r->made_hcas) != 0)
    return false;
  roce_log (ROCE_LOG_INFO, "network: joined %s, set up by %s", r->made_ns, r->id);
  return true;
}

/* The pod's network, made when its sandbox runs.  Never refused here: a
 * sandbox refused at NRI's RunPodSandbox keeps running in containerd 2.1
 * and before (the sandbox is started before the plugins are asked, and
 * nothing stops it again: containerd#13355), once for every retry of the
 * kubelet's.  What would refuse it is logged, and refuses each of its
 * containers at their create (the same checks, again).  */
void
nri_on_run_pod (struct nri_plugin *pl, const RoceNri__PodSandbox *m)
{
  cleanup_error roce_error_t err = NULL;
  struct nri_pod pod;
  struct roce_request req = { 0 };
  struct oci_config none = { 0 };
  struct net_state *net = NULL;
  struct nri_pod_rec *r;

  if (! pod_asks (m))
    return;
  if (nri_pod_read (m, true, &pod, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "RunPodSandbox: %s; its containers are refused", err->msg);
      return;
    }
  roce_log_set_container (pod.id);
  r = pod_remember (pl, &pod);
  nri_pod_rec_unmake (r);
  if (request_of (pl, &pod, &none, &req, &err) == 0 && req.n > 0
      && pod_network (pl, &pod, &req, &none, true, &net, &err) == 0)
    {
      cleanup_free char *names = annot_request_names (&req);
      roce_log (ROCE_LOG_INFO, "RunPodSandbox %s/%s: HCAs %s", pod.ns, pod.name, names);
      sandbox_made (pl, r, names, net);
    }
  if (err)
    {
      budget_note (pl, &err);
      roce_log (ROCE_LOG_WARN, "RunPodSandbox %s/%s: %s; its containers are refused", pod.ns,
                pod.name, err->msg);
    }
  net_state_free (net);
  annot_request_clear (&req);
  nri_pod_clear (&pod);
}

/* The rails file of a container, <state_dir>/nri/<id>.rails (0444): what
 * its bind mount at /dev/roce/rails shows.  *path when written.  */
static int
rails_write (struct nri_plugin *pl, const char *id, const char *text, char **path,
             roce_error_t *err)
{
  cleanup_free char *name = NULL, *tmp = NULL;
  cleanup_close int dir = -1, fd = -1;

  *path = NULL;
  if (text == NULL)
    return 0;
  dir = nri_dir_open (pl->policy, true, err);
  if (dir < 0)
    return -1;
  name = xasprintf ("%s.rails", id);
  tmp = xasprintf (".%s.rails.tmp", id);
  unlinkat (dir, tmp, 0);
  fd = openat (dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0)
    return roce_error_sys (err, errno, "create the rails file %s", tmp);
  if (write_all_fd (fd, text, strlen (text), err) < 0 || renameat (dir, tmp, dir, name) < 0)
    {
      int e = errno;
      unlinkat (dir, tmp, 0);
      if (err && *err)
        return roce_error_wrap (err, "the rails file %s", name);
      return roce_error_sys (err, e, "the rails file %s", name);
    }
  *path = xasprintf ("%s/" NRI_DIR "/%s", pl->policy->state_dir, name);
  return 0;
}

int
nri_on_create (struct nri_plugin *pl, const RoceNri__PodSandbox *pm, const RoceNri__Container *cm,
               RoceNri__ContainerAdjustment **adjust, char **refused_id, roce_error_t *err)
{
  struct nri_pod pod = { 0 };
  struct nri_ctr ctr = { 0 };
  struct roce_request req = { 0 };
  struct spec_grant grant = { 0 };
  struct net_state *net = NULL;
  cleanup_free char *rails = NULL;
  RoceNri__ContainerAdjustment *a = NULL;
  int ret = -1;

  *adjust = NULL;
  if (! pod_asks (pm))
    return 0; /* not ours: no adjustment at all */
  *refused_id = xstrdup (cm && cm->id && cm->id[0] ? cm->id : pm->id ? pm->id : "-");
  if (nri_pod_read (pm, false, &pod, err) < 0 || nri_ctr_read (cm, &ctr, err) < 0)
    goto out;
  roce_log_set_container (ctr.id);
  if (pl->o->role == NRI_ROLE_GUARD)
    {
      ret = nri_guard_check (&pod, ctr.id, ctr.marker, err);
      goto out;
    }
  pod_remember (pl, &pod);
  if (request_of (pl, &pod, ctr.config, &req, err) < 0)
    goto out;
  a = nri_adjust_new (ctr.id);
  if (req.n > 0)
    {
      cleanup_free char *text = NULL;
      const char *rails_text;
      if (sandbox_reuse (pl, &pod, &req, ctr.config))
        rails_text = pod_find (pl, pod.id)->made_rails;
      else if (pod_network (pl, &pod, &req, ctr.config, true, &net, err) < 0)
        {
          budget_note (pl, err);
          goto out;
        }
      else
        {
          size_t n;
          const struct net_rail *r = net_state_rails (net, &n);
          rails_text = text = n ? rails_render (r, n) : NULL;
        }
      if (spec_grant_make (pl->policy, &req, &grant, err) < 0
          || rails_write (pl, ctr.id, rails_text, &rails, err) < 0)
        {
          pod_network_undo (pl, &pod, net);
          goto out;
        }
      nri_adjust_grant (a, pl->policy, &grant, ctr.config, rails);
    }
  {
    struct nri_ctr_rec *r = ctr_remember (pl, &ctr);
    cleanup_free char *names = req.n ? annot_request_names (&req) : xstrdup ("none (no GPU)");
    r->rails = rails != NULL;
    roce_log (ROCE_LOG_INFO, "CreateContainer %s/%s %s: HCAs %s", pod.ns, pod.name,
              ctr.name ? ctr.name : "", names);
  }
  *adjust = steal_pointer (&a);
  ret = 0;
out:
  if (a)
    roce_nri__container_adjustment__free_unpacked (a, NULL);
  net_state_free (net);
  spec_grant_clear (&grant);
  annot_request_clear (&req);
  nri_ctr_clear (&ctr);
  nri_pod_clear (&pod);
  return ret;
}

/* ---- running, stopping, going ----------------------------------------------------- */

/* CAP_IPC_LOCK is the container's (securityContext), which NRI cannot
 * add: a RoCE container without it registers memory on RLIMIT_MEMLOCK
 * alone.  Said once, in the log and the status file (`check`).  */
static void
ipc_lock_check (struct nri_plugin *pl, struct nri_ctr_rec *r, uint32_t pid, const char *pod)
{
  cleanup_free char *path = xasprintf ("/proc/%u/status", pid);
  cleanup_free char *text = NULL;
  cleanup_error roce_error_t err = NULL;
  const char *eff;
  unsigned long long caps;
  size_t len;

  if (pid == 0 || read_file_at (AT_FDCWD, path, 65536, &text, &len, &err) < 0)
    return;
  eff = strstr (text, "\nCapEff:");
  if (eff == NULL || sscanf (eff + 8, "%llx", &caps) != 1)
    return;
  if (caps & (1ULL << 14))
    return;
  if (! r->no_ipc_lock)
    {
      roce_log_set_container (r->id);
      roce_log (ROCE_LOG_WARN,
                "CAP_IPC_LOCK of container %s of pod %s: in its capabilities vs missing (fix: "
                "add IPC_LOCK to its securityContext.capabilities.add; memory registration "
                "rests on RLIMIT_MEMLOCK alone)",
                r->name, pod);
      pl->status_dirty = true;
    }
  r->no_ipc_lock = true;
}

void
nri_on_started (struct nri_plugin *pl, const RoceNri__PodSandbox *pm, const RoceNri__Container *cm)
{
  struct nri_ctr_rec *r;
  if (! pod_asks (pm) || cm == NULL || cm->id == NULL || (r = ctr_find (pl, cm->id)) == NULL)
    return;
  {
    cleanup_free char *pod
        = xasprintf ("%s/%s", pm->namespace_ ? pm->namespace_ : "", pm->name ? pm->name : "");
    ipc_lock_check (pl, r, cm->pid, pod);
  }
}

void
nri_on_remove_ctr (struct nri_plugin *pl, const RoceNri__Container *cm)
{
  if (cm && cm->id)
    ctr_forget (pl, cm->id);
}

/* The pod's network taken down and its leases released (idempotent).  */
static void
pod_release (struct nri_plugin *pl, const struct nri_pod *pod, const char *why)
{
  cleanup_error roce_error_t err = NULL;
  struct nri_pod_rec *r = pod_find (pl, pod->id);
  const char *pin = pod->netns ? pod->netns : r ? r->netns : NULL;

  if (r && r->released)
    return;
  if (policy_for_request (pl, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "%s: %s; roce-hook gc releases the pod's leases", why, err->msg);
      return;
    }
  confine_phase (PHASE_NETWORK, NULL);
  if (net_release_pod (pl->policy, pod->id, pin, nri_reaper_drops, pl, &err) < 0)
    roce_log (ROCE_LOG_WARN, "%s: %s; roce-hook gc releases the pod's leases", why, err->msg);
  confine_phase (PHASE_NONE, NULL);
  if (r)
    {
      r->released = true;
      nri_pod_rec_unmake (r);
    }
}

void
nri_on_stop_pod (struct nri_plugin *pl, const RoceNri__PodSandbox *m)
{
  struct nri_pod pod;
  cleanup_error roce_error_t err = NULL;
  if (! pod_asks (m) || nri_pod_read (m, true, &pod, &err) < 0)
    return;
  roce_log_set_container (pod.id);
  pod_release (pl, &pod, "StopPodSandbox");
  nri_pod_clear (&pod);
}

void
nri_on_remove_pod (struct nri_plugin *pl, const RoceNri__PodSandbox *m)
{
  struct nri_pod pod;
  cleanup_error roce_error_t err = NULL;
  struct nri_pod_rec *r;

  if (! pod_asks (m) || nri_pod_read (m, true, &pod, &err) < 0)
    return;
  roce_log_set_container (pod.id);
  pod_release (pl, &pod, "RemovePodSandbox");
  for (size_t i = pl->n_ctrs; i > 0; i--)
    if (strcmp (pl->ctrs[i - 1].pod_id, pod.id) == 0)
      ctr_forget (pl, pl->ctrs[i - 1].id);
  if ((r = pod_find (pl, pod.id)) != NULL)
    {
      free (r->id);
      free (r->ns);
      free (r->name);
      free (r->netns);
      nri_pod_rec_unmake (r);
      *r = pl->pods[--pl->n_pods];
    }
  nri_pod_clear (&pod);
}

/* ---- Synchronize ------------------------------------------------------------------- */

/* The rails files of containers the runtime no longer has.  */
static void
rails_sweep (struct nri_plugin *pl)
{
  cleanup_error roce_error_t err = NULL;
  int fd = pl->policy ? nri_dir_open (pl->policy, false, &err) : -1;
  cleanup_dir DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
  struct dirent *e;

  if (d == NULL)
    {
      if (fd >= 0)
        close (fd);
      return;
    }
  while ((e = readdir (d)) != NULL)
    {
      size_t len = strlen (e->d_name);
      cleanup_free char *id = NULL;
      if (len <= 6 || strcmp (e->d_name + len - 6, ".rails") != 0)
        continue;
      id = xstrndup (e->d_name, len - 6);
      if (ctr_find (pl, id) == NULL && unlinkat (dirfd (d), e->d_name, 0) == 0)
        roce_log (ROCE_LOG_INFO, "Synchronize: the rails file of %s removed: the container is gone",
                  id);
    }
}

/* A RoCE pod found running: what its namespace holds in the store, taken
 * up; a pod of named HCAs whose network is not there (it started while no
 * plugin ran: the guard refused its containers) gets it, gate first, while
 * the answer's time lasts; else at its next container's create.  */
static void
sync_pod (struct nri_plugin *pl, const struct nri_pod *pod, const char *held)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_request req = { 0 };
  struct oci_config none = { 0 };
  struct net_state *net = NULL;

  roce_log_set_container (pod->id);
  if (held)
    {
      roce_log (ROCE_LOG_INFO, "Synchronize: pod %s/%s taken up: %s", pod->ns, pod->name,
                held[0] ? held : "no address");
      return;
    }
  if (pod->netns == NULL)
    return;
  if (request_of (pl, pod, &none, &req, &err) == 0 && req.n > 0
      && pod_network (pl, pod, &req, &none, true, &net, &err) == 0)
    roce_log (ROCE_LOG_INFO, "Synchronize: pod %s/%s had no network: made", pod->ns, pod->name);
  else if (err)
    roce_log (ROCE_LOG_WARN, "Synchronize: pod %s/%s: %s; its next container's create tries again",
              pod->ns, pod->name, err->msg);
  net_state_free (net);
  annot_request_clear (&req);
}

void
nri_on_sync (struct nri_plugin *pl, RoceNri__PodSandbox *const *pods, size_t n_pods,
             RoceNri__Container *const *ctrs, size_t n_ctrs)
{
  cleanup_error roce_error_t err = NULL;
  struct nri_pod *ours = xmalloc0 ((n_pods + 1) * sizeof (*ours));
  struct netns_id *ids = xmalloc0 ((n_pods + 1) * sizeof (*ids));
  char **held = xmalloc0 ((n_pods + 1) * sizeof (*held));
  bool *open = xmalloc0 ((n_pods + 1) * sizeof (*open));
  size_t n = 0, prepared = 0, unprepared = 0;

  /* The runtime's word replaces what the plugin knew.  */
  nri_plugin_forget (pl);
  if (policy_for_request (pl, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "Synchronize: %s", err->msg);
      goto out;
    }
  confine_phase (PHASE_NETWORK, NULL);
  for (size_t i = 0; i < n_pods; i++)
    {
      cleanup_error roce_error_t perr = NULL;
      int fd;
      if (! pod_asks (pods[i]) || nri_pod_read (pods[i], true, &ours[n], &perr) < 0)
        continue;
      pod_remember (pl, &ours[n]);
      if (ours[n].netns && (fd = netns_open_pinned (ours[n].netns, &ids[n], &perr)) >= 0)
        {
          open[n] = true;
          close (fd);
        }
      n++;
    }
  {
    /* One look at the store for every pod; ids of pods not open are
     * zeroed and hold nothing.  */
    cleanup_error roce_error_t herr = NULL;
    if (ipam_held (pl->policy, ids, n, held, &herr) < 0)
      roce_log (ROCE_LOG_WARN, "Synchronize: the lease store: %s", herr->msg);
  }
  confine_phase (PHASE_NONE, NULL);
  for (size_t i = 0; i < n; i++)
    if (open[i])
      sync_pod (pl, &ours[i], held[i]);
  for (size_t i = 0; i < n_ctrs; i++)
    {
      const RoceNri__Container *cm = ctrs[i];
      struct nri_ctr ctr;
      cleanup_error roce_error_t cerr = NULL;
      if (cm == NULL || cm->pod_sandbox_id == NULL || pod_find (pl, cm->pod_sandbox_id) == NULL
          || nri_ctr_read (cm, &ctr, &cerr) < 0)
        continue;
      if (ctr.marker && strcmp (ctr.marker, ctr.id) == 0)
        {
          struct nri_ctr_rec *r = ctr_remember (pl, &ctr);
          struct nri_pod_rec *pr = pod_find (pl, ctr.pod_id);
          cleanup_free char *pod = xasprintf ("%s/%s", pr->ns, pr->name);
          cleanup_free char *rails
              = xasprintf ("%s/" NRI_DIR "/%s.rails", pl->policy->state_dir, ctr.id);
          r->rails = access (rails, F_OK) == 0;
          if (cm->state == 3 /* CONTAINER_RUNNING */)
            ipc_lock_check (pl, r, ctr.pid, pod);
          prepared++;
        }
      else if (cm->state == 1 /* CREATED */ || cm->state == 3 /* RUNNING */)
        {
          roce_log_set_container (ctr.id);
          roce_log (ROCE_LOG_ERR,
                    "Synchronize: container %s of a RoCE pod: prepared by the plugin vs not "
                    "(it started while neither the plugin nor its guard ran) (fix: delete the "
                    "pod; its next start gets RoCE)",
                    ctr.name ? ctr.name : ctr.id);
          unprepared++;
        }
      nri_ctr_clear (&ctr);
    }
  rails_sweep (pl);
  roce_log_set_container (NULL);
  roce_log (ROCE_LOG_INFO, "Synchronize: %zu RoCE pod(s), %zu container(s) prepared, %zu not", n,
            prepared, unprepared);
  pl->status_dirty = true;
out:
  for (size_t i = 0; i < n; i++)
    {
      free (held[i]);
      nri_pod_clear (&ours[i]);
    }
  free (ours);
  free (ids);
  free (held);
  free (open);
}
