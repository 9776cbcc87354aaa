/* SPDX-License-Identifier: Apache-2.0 */
/* The bundle's config.json for the shim: read without following a link,
 * replaced atomically, the caller's copy put back after the runtime.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "probe/seed.h"
#include "shim.h"
#include "spec/annot.h"
#include "spec/authz.h"
#include "devices/grant.h"
#include "spec/oci.h"
#include "topo/topo.h"

static int
hook_path (char **out, roce_error_t *err)
{
  cleanup_free char *path = self_beside ("roce-hook");
  if (path == NULL)
    return roce_error_sys (err, errno, "readlink /proc/self/exe");
  if (access (path, X_OK) < 0)
    return roce_error_sys (err, errno, "roce-hook beside roce-runtime (`%s`)", path);
  *out = steal_pointer (&path);
  return 0;
}

/* Whether the spec already runs roce-hook to start (or to stop) the
 * container: hooks.d with the shim as Podman's runtime, a bundle written
 * with the hook.  Then that hook makes the network, as it would without
 * the shim, and the shim adds no second one (which would find the rails
 * file the first one bound in place).  */
static bool
spec_runs_roce_hook (const struct json *root, bool start)
{
  static const char *const starts[] = { "prestart", "createRuntime", "createContainer" };
  static const char *const stops[] = { "poststop" };
  const char *const *stages = start ? starts : stops;
  size_t n = start ? ARRAY_SIZE (starts) : ARRAY_SIZE (stops);
  const struct json *hooks = json_object_get (root, "hooks");
  for (size_t k = 0; k < n; k++)
    {
      const struct json *list = json_object_get (hooks, stages[k]);
      for (size_t i = 0; i < json_array_len (list); i++)
        {
          const struct json *h = json_array_at (list, i);
          const char *path = json_string (json_object_get (h, "path"));
          const char *arg0 = json_string (json_array_at (json_object_get (h, "args"), 0));
          const char *base = path ? strrchr (path, '/') : NULL;
          base = base ? base + 1 : path;
          if ((base && strcmp (base, "roce-hook") == 0)
              || (arg0 && strcmp (arg0, "roce-hook") == 0))
            return true;
        }
    }
  return false;
}

/* runc 1.1 follows an image's /dev symlink while it sets up /dev (before
 * any hook runs), writing outside the rootfs; the hook comes too late to
 * stop it, so the shim refuses such an image first.  */
static int
check_image_dev (const char *root_path, roce_error_t *err)
{
  cleanup_close int rootfd = open (root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (rootfd < 0)
    return roce_error_sys (err, errno, "rootfs `%s`", root_path);
  if (fstatat (rootfd, "dev", &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : roce_error_sys (err, errno, "rootfs `%s/dev`", root_path);
  if (S_ISLNK (st.st_mode))
    return roce_error_refuse (err, "the image's /dev", "a directory", "a symlink",
                              "rebuild the image with a real /dev directory");
  return 0;
}

int
shim_prepare_bundle (const struct shim_args *a, const char *policy_path,
                     struct roce_policy **policy, struct shim_start *start, roce_error_t *err)
{
  cleanup_free char *cwd = NULL;
  cleanup_free char *buf = NULL;
  cleanup_free char *hook = NULL;
  cleanup_free struct shim_device *devs = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_oci_config struct oci_config *config = NULL;
  cleanup_json_gen struct json_gen *g = NULL;
  struct roce_request req = { 0 };
  const char *bundle = a->bundle;
  struct shim_ask ask;
  struct spec_grant grant = { 0 };
  size_t len = 0, gen_len;
  const char *gen;
  bool recorded = false;
  int ret = -1, kind, asked;

  if (bundle == NULL)
    {
      cwd = getcwd (NULL, 0);
      if (cwd == NULL)
        return roce_error_sys (err, errno, "getcwd");
      bundle = cwd;
    }
  kind = shim_read_config (bundle, &buf, &len, err);
  if (kind <= 0)
    return kind; /* refused, or nothing to look at: the runtime judges it */
  /* The lenient look first: a container that did not ask for RoCE is never
   * parsed strictly, so nothing in its spec can refuse or delay it.  */
  if (! shim_config_asks (buf, len))
    return 0; /* not ours: config.json stays as it is, byte for byte */
  if (kind == SHIM_CONFIG_LINKED)
    {
      /* The runtime would run it as it reads it, without what validation
       * and the edits give: refused.  */
      cleanup_free char *what = xasprintf ("`%s/config.json`", bundle);
      return roce_error_refuse (err, what, "a regular file in the bundle", "a symlink",
                                "write the spec into the bundle as a regular file");
    }
  if (len > OCI_CONFIG_MAX)
    return roce_error_make (err, E2BIG, "`%s/config.json`: larger than %d bytes", bundle,
                            OCI_CONFIG_MAX);
  if (json_parse_n (buf, len, &root, err) < 0)
    return roce_error_wrap (err, "`%s/config.json`", bundle);

  if (oci_config_from_tree (root, bundle, &config, err) < 0)
    return -1;
  asked = shim_ask_of (root, config->env, &ask, err);
  if (asked < 0)
    return asked;
  if (asked == 0)
    {
      /* The lenient look saw a request the strict one does not (a key
       * spelled twice, an env of another type): the annotation's own
       * refusal, as before; an env that is not a list is not a request.  */
      if (! json_object_get (json_object_get (root, "annotations"), ANNOT_HCA))
        return 0;
      return roce_error_refuse (err, "annotation " ANNOT_HCA,
                                "a string in the top-level annotations", "another type",
                                "give " ANNOT_HCA " a string value such as mlx5_0");
    }
  if (policy_load (policy_path, policy, err) < 0)
    return -1;
  if (topo_request_resolve (*policy, ask.src, ask.hca, ask.ip, config, config->annotations,
                            config->n_annotations, &req, err)
      < 0)
    return -1;
  if (req.n == 0)
    return 0; /* roce.io/hca=auto in a pod sandbox: its containers choose */
  if (authz_check (*policy, &req, config->annotations, config->n_annotations, err) < 0)
    goto out;
  if (check_image_dev (config->root_path, err) < 0)
    goto out;
  if (spec_grant_make (*policy, &req, &grant, err) < 0)
    goto out;
  if (hook_path (&hook, err) < 0)
    goto out;
  /* The network, where the shim can make it (README: "The network, made
   * by the shim"): validated and authorised, before config.json or the
   * record is written.  Not with `cluster`: its etcd client is libcurl,
   * loaded at run time, which a static program cannot do soundly; the hook
   * (dynamic) does it.  */
  if (shim_start_applies (config) && runtime_record_id_valid (a->id)
      && ! spec_runs_roce_hook (root, true) && (*policy)->cluster == NULL
      && shim_start_network (*policy, &req, a->id, bundle, config, start, err) < 0)
    goto out;

  devs = xmalloc0 ((grant.n_nodes + 1) * sizeof (*devs));
  for (size_t i = 0; i < grant.n_nodes; i++)
    devs[i]
        = (struct shim_device){ grant.nodes[i].path, grant.nodes[i].major, grant.nodes[i].minor };

  {
    struct shim_edit e = {
      .hook_path = hook,
      .policy_path = policy_path,
      .hook_stage = "createRuntime",
      .no_poststop = shim_runs_foreground (a) || spec_runs_roce_hook (root, false),
      .no_start_hook = start->net != NULL || spec_runs_roce_hook (root, true),
      .memlock_unlimited = (*policy)->memlock_unlimited,
      .memlock = (*policy)->memlock,
      .devices = devs,
      .n_devices = grant.n_nodes,
      .nccl_ib_hca = grant.nccl_ib_hca,
      .nccl_ib_tc = grant.nccl_ib_tc,
      .nccl_ib_addr_range = grant.nccl_ib_addr_range,
      .nccl_ib_addr_family = grant.nccl_ib_addr_family,
      .nccl_ib_sl = grant.nccl_ib_sl,
      .stack_unlimited = (*policy)->stack_unlimited,
      .stack = (*policy)->stack,
      .shm_size = (*policy)->shm_size,
    };
    if (start->net && shim_drop_leftovers (root))
      {
        /* The caller's config.json is one a killed shim left: what comes
         * back after the runtime is it without what the shim left.  */
        cleanup_json_gen struct json_gen *go = json_gen_new (false);
        const char *text;
        size_t tlen;
        json_gen_tree (go, root);
        if (json_gen_result (go, &text, &tlen, err) < 0)
          goto out;
        start->config_original = xstrndup (text, tlen);
        start->original_len = tlen;
      }
    /* Asked by env: the annotations it stands for, in the spec the
     * runtime (its state, the hook at poststop) and every later call see. */
    shim_ask_annotate (root, &ask);
    e.netns_path = start->netns_path;
    e.rails_source = start->rails_path;
    if (shim_edit_config (root, &e, err) < 0)
      goto out;
  }
  /* Written before config.json: a container that runs has its record.  */
  {
    cleanup_free char *abs = realpath (bundle, NULL);
    struct shim_record rec = {
      .root = a->root,
      .bundle = abs ? abs : bundle,
      .memlock_unlimited = (*policy)->memlock_unlimited,
      .memlock = (*policy)->memlock,
      .nccl_ib_hca = grant.nccl_ib_hca,
      .nccl_ib_tc = grant.nccl_ib_tc,
      .nccl_ib_addr_range = grant.nccl_ib_addr_range,
      .nccl_ib_addr_family = grant.nccl_ib_addr_family,
      .nccl_ib_sl = grant.nccl_ib_sl,
      .stack_unlimited = (*policy)->stack_unlimited,
      .stack = (*policy)->stack,
    };
    if (shim_record_write ((*policy)->state_dir, a->id, &rec, &start->record_id, err) < 0)
      goto out;
    recorded = true;
  }
  g = json_gen_new (false);
  json_gen_tree (g, root);
  if (json_gen_result (g, &gen, &gen_len, err) < 0)
    goto out;
  /* With the network the shim's, the caller's config.json comes back once
   * the runtime has returned (shim_start_after_runtime).  */
  if (shim_write_config (bundle, gen, gen_len,
                         start->net && ! start->config_original ? &start->config_aside : NULL, err)
      < 0)
    goto out;
  if (start->net)
    {
      /* The seed's checks, on the spec the runtime gets (the hook would
       * have read it), once the runtime runs.  */
      cleanup_error roce_error_t serr = NULL;
      if (oci_config_from_tree (root, bundle, &start->seed_config, &serr) == 0)
        {
          start->seed_req = req;
          memset (&req, 0, sizeof (req));
        }
      start->bundle = xstrdup (bundle);
      start->config_written = xstrndup (gen, gen_len);
      start->written_len = gen_len;
      if (start->config_aside == NULL && start->config_original == NULL)
        {
          start->config_original = steal_pointer (&buf);
          start->original_len = len;
        }
    }
  ret = 1;

out:
  if (ret < 0)
    shim_start_undo (*policy, a->id, start);
  if (ret < 0 && recorded)
    {
      /* config.json could not be written: nothing runs with this record.  */
      cleanup_error roce_error_t rmerr = NULL;
      if (shim_record_remove ((*policy)->state_dir, a->id, &start->record_id, &start->rails_id,
                              &rmerr)
          < 0)
        roce_log (ROCE_LOG_WARN, "%s", rmerr->msg);
    }
  annot_request_clear (&req);
  spec_grant_clear (&grant);
  return ret;
}
