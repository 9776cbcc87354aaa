/* SPDX-License-Identifier: Apache-2.0 */
/* The spec edited for an annotated container: the RDMA devices and their
 * cgroup rules, CAP_IPC_LOCK, memlock, the NCCL variables, the hooks.  */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/json_gen.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "net/rails.h"
#include "probe/seed.h"
#include "shim.h"

#define HOOK_ENV_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define HOOK_TIMEOUT 30

/* The member `key` of obj, created empty when absent; a member of another
 * type is an error (we never overwrite what the user wrote).  */
static struct json *
member (struct json *obj, const char *key, enum json_type type, const char *where,
        roce_error_t *err)
{
  struct json *v = json_object_get_mut (obj, key);
  if (v == NULL || json_type (v) == JSON_NULL)
    {
      v = type == JSON_OBJECT ? json_new_object () : json_new_array ();
      json_object_set (obj, key, v);
      return v;
    }
  if (json_type (v) != type)
    {
      roce_error_make (err, EINVAL, "config.json: %s%s: expected %s, found %s", where, key,
                       type == JSON_OBJECT ? "an object" : "an array", json_type_name (v));
      return NULL;
    }
  return v;
}

static bool
array_has_string (const struct json *arr, const char *s)
{
  for (size_t i = 0; i < json_array_len (arr); i++)
    {
      const char *v = json_string (json_array_at (arr, i));
      if (v && strcmp (v, s) == 0)
        return true;
    }
  return false;
}

static bool
hook_present (const struct json *list, const char *path, const char *stage)
{
  for (size_t i = 0; i < json_array_len (list); i++)
    {
      const struct json *h = json_array_at (list, i);
      const char *p = json_string (json_object_get (h, "path"));
      if (p && strcmp (p, path) == 0 && array_has_string (json_object_get (h, "args"), stage))
        return true;
    }
  return false;
}

static int
add_hook (struct json *hooks, const struct shim_edit *e, const char *stage, roce_error_t *err)
{
  struct json *list = member (hooks, stage, JSON_ARRAY, "hooks.", err);
  struct json *h, *args, *env;
  if (list == NULL)
    return -1;
  if (hook_present (list, e->hook_path, stage))
    return 0;
  h = json_new_object ();
  json_object_set (h, "path", json_new_string (e->hook_path));
  args = json_new_array ();
  json_array_append (args, json_new_string ("roce-hook"));
  json_array_append (args, json_new_string ("--config"));
  json_array_append (args, json_new_string (e->policy_path));
  json_array_append (args, json_new_string (stage));
  json_object_set (h, "args", args);
  env = json_new_array ();
  json_array_append (env, json_new_string (HOOK_ENV_PATH));
  json_object_set (h, "env", env);
  json_object_set (h, "timeout", json_new_integer (HOOK_TIMEOUT));
  json_array_append (list, h);
  return 0;
}

static int
add_caps (struct json *process, roce_error_t *err)
{
  static const char *const sets[] = { "bounding", "effective", "permitted" };
  struct json *caps = member (process, "capabilities", JSON_OBJECT, "process.", err);
  if (caps == NULL)
    return -1;
  for (size_t i = 0; i < ARRAY_SIZE (sets); i++)
    {
      struct json *set = member (caps, sets[i], JSON_ARRAY, "process.capabilities.", err);
      if (set == NULL)
        return -1;
      if (! array_has_string (set, "CAP_IPC_LOCK"))
        json_array_append (set, json_new_string ("CAP_IPC_LOCK"));
    }
  return 0;
}

static int
set_memlock (struct json *process, const struct shim_edit *e, roce_error_t *err)
{
  struct json *rl = member (process, "rlimits", JSON_ARRAY, "process.", err);
  uint64_t v = e->memlock_unlimited ? UINT64_MAX : e->memlock;
  struct json *entry = NULL;
  if (rl == NULL)
    return -1;
  for (size_t i = 0; i < json_array_len (rl); i++)
    {
      struct json *r = json_array_at_mut (rl, i);
      const char *t = json_string (json_object_get (r, "type"));
      if (json_type (r) == JSON_OBJECT && t && strcmp (t, "RLIMIT_MEMLOCK") == 0)
        entry = r;
    }
  if (entry == NULL)
    {
      entry = json_new_object ();
      json_object_set (entry, "type", json_new_string ("RLIMIT_MEMLOCK"));
      json_array_append (rl, entry);
    }
  json_object_set (entry, "hard", json_new_uint64 (v));
  json_object_set (entry, "soft", json_new_uint64 (v));
  return 0;
}

static bool
number_is (const struct json *j, unsigned want)
{
  int64_t v;
  return json_integer (j, &v) == 0 && v == (int64_t) want;
}

static int
add_devices (struct json *root, const struct shim_edit *e, roce_error_t *err)
{
  struct json *linux_ = member (root, "linux", JSON_OBJECT, "", err);
  struct json *devs, *res, *rules;
  if (linux_ == NULL || (devs = member (linux_, "devices", JSON_ARRAY, "linux.", err)) == NULL
      || (res = member (linux_, "resources", JSON_OBJECT, "linux.", err)) == NULL
      || (rules = member (res, "devices", JSON_ARRAY, "linux.resources.", err)) == NULL)
    return -1;

  for (size_t d = 0; d < e->n_devices; d++)
    {
      const struct shim_device *dev = &e->devices[d];
      bool have_node = false, have_rule = false;

      for (size_t i = 0; i < json_array_len (devs); i++)
        {
          const struct json *n = json_array_at (devs, i);
          const char *p = json_string (json_object_get (n, "path"));
          if (p == NULL || strcmp (p, dev->path) != 0)
            continue;
          if (! number_is (json_object_get (n, "major"), dev->major)
              || ! number_is (json_object_get (n, "minor"), dev->minor))
            {
              cleanup_free char *exp = xasprintf ("the host's %u:%u", dev->major, dev->minor);
              return roce_error_refuse (
                  err, "config.json linux.devices", exp, dev->path,
                  "remove that entry; roce-runtime adds the RDMA nodes itself");
            }
          have_node = true;
        }
      if (! have_node)
        {
          struct json *n = json_new_object ();
          json_object_set (n, "path", json_new_string (dev->path));
          json_object_set (n, "type", json_new_string ("c"));
          json_object_set (n, "major", json_new_integer (dev->major));
          json_object_set (n, "minor", json_new_integer (dev->minor));
          json_object_set (n, "fileMode", json_new_integer (0666));
          json_object_set (n, "uid", json_new_integer (0));
          json_object_set (n, "gid", json_new_integer (0));
          json_array_append (devs, n);
        }

      for (size_t i = 0; i < json_array_len (rules); i++)
        {
          const struct json *r = json_array_at (rules, i);
          const char *t = json_string (json_object_get (r, "type"));
          const char *acc = json_string (json_object_get (r, "access"));
          if (json_type (json_object_get (r, "allow")) == JSON_TRUE && t && strcmp (t, "c") == 0
              && number_is (json_object_get (r, "major"), dev->major)
              && number_is (json_object_get (r, "minor"), dev->minor) && acc
              && strcmp (acc, "rwm") == 0)
            have_rule = true;
        }
      /* A rule is only sure to win when it is the last one matching: a
       * later deny would override an earlier allow.  */
      if (have_rule)
        {
          const struct json *last = json_array_at (rules, json_array_len (rules) - 1);
          if (json_type (json_object_get (last, "allow")) != JSON_TRUE)
            have_rule = false;
        }
      if (! have_rule)
        {
          struct json *r = json_new_object ();
          json_object_set (r, "allow", json_new_bool (true));
          json_object_set (r, "type", json_new_string ("c"));
          json_object_set (r, "major", json_new_integer (dev->major));
          json_object_set (r, "minor", json_new_integer (dev->minor));
          json_object_set (r, "access", json_new_string ("rwm"));
          json_array_append (rules, r);
        }
    }
  return 0;
}

static void
env_default (struct json *env, const char *name, const char *value)
{
  size_t len = strlen (name);
  if (value == NULL)
    return;
  for (size_t i = 0; i < json_array_len (env); i++)
    {
      const char *v = json_string (json_array_at (env, i));
      if (v && strncmp (v, name, len) == 0 && v[len] == '=')
        return; /* the user's value is kept (the hook checks it) */
    }
  {
    cleanup_free char *kv = xasprintf ("%s=%s", name, value);
    json_array_append (env, json_new_string (kv));
  }
}

/* RLIMIT_STACK: the user's entry, when there is one, is kept.  */
static int
set_stack (struct json *process, const struct shim_edit *e, roce_error_t *err)
{
  struct json *rl, *entry;
  uint64_t v = e->stack_unlimited ? UINT64_MAX : e->stack;
  if (! e->stack_unlimited && e->stack == 0)
    return 0;
  if ((rl = member (process, "rlimits", JSON_ARRAY, "process.", err)) == NULL)
    return -1;
  for (size_t i = 0; i < json_array_len (rl); i++)
    {
      const char *t = json_string (json_object_get (json_array_at (rl, i), "type"));
      if (t && strcmp (t, "RLIMIT_STACK") == 0)
        return 0;
    }
  entry = json_new_object ();
  json_object_set (entry, "type", json_new_string ("RLIMIT_STACK"));
  json_object_set (entry, "hard", json_new_uint64 (v));
  json_object_set (entry, "soft", json_new_uint64 (v));
  json_array_append (rl, entry);
  return 0;
}

/* The size=... option of a mount's options, its index, or -1.  */
static long
size_option (const struct json *opts, uint64_t *bytes, bool *valid)
{
  for (size_t i = 0; i < json_array_len (opts); i++)
    {
      const char *o = json_string (json_array_at (opts, i));
      if (o && strncmp (o, "size=", 5) == 0)
        {
          *valid = tmpfs_size_parse (o + 5, bytes) == 0;
          return (long) i;
        }
    }
  return -1;
}

/* /dev/shm of shm_size, where nobody chose one: no such mount, or a tmpfs
 * with the runtimes' default 64 MiB (NCCL's shared-memory transport fails
 * in it).  A user's own size, a bind mount (a pod's shared /dev/shm, an
 * --ipc=host) or a tmpfs without a size are kept.  */
static int
set_shm (struct json *root, const struct shim_edit *e, roce_error_t *err)
{
  struct json *mounts, *m, *opts;
  cleanup_free char *size = NULL;

  if (e->shm_size == 0)
    return 0;
  if ((mounts = member (root, "mounts", JSON_ARRAY, "", err)) == NULL)
    return -1;
  size = xasprintf ("size=%llu", (unsigned long long) e->shm_size);
  for (size_t i = 0; i < json_array_len (mounts); i++)
    {
      const char *dst, *type;
      uint64_t bytes = 0;
      bool valid = false;
      long at;
      m = json_array_at_mut (mounts, i);
      dst = json_string (json_object_get (m, "destination"));
      if (dst == NULL || (strcmp (dst, "/dev/shm") != 0 && strcmp (dst, "/dev/shm/") != 0))
        continue;
      type = json_string (json_object_get (m, "type"));
      opts = json_object_get_mut (m, "options");
      if (type == NULL || strcmp (type, "tmpfs") != 0 || json_type (opts) != JSON_ARRAY)
        return 0;
      at = size_option (opts, &bytes, &valid);
      if (at < 0 || ! valid || bytes != SEED_SHM_RUNTIME_DEFAULT)
        return 0;
      {
        /* The options again, the size replaced (json.h has no setter for
         * an array item).  */
        struct json *nopts = json_new_array ();
        for (size_t k = 0; k < json_array_len (opts); k++)
          {
            const char *o = json_string (json_array_at (opts, k));
            json_array_append (nopts, json_new_string ((long) k == at ? size : o ? o : ""));
          }
        json_object_set (m, "options", nopts);
      }
      return 0;
    }
  m = json_new_object ();
  json_object_set (m, "destination", json_new_string ("/dev/shm"));
  json_object_set (m, "type", json_new_string ("tmpfs"));
  json_object_set (m, "source", json_new_string ("shm"));
  opts = json_new_array ();
  json_array_append (opts, json_new_string ("nosuid"));
  json_array_append (opts, json_new_string ("noexec"));
  json_array_append (opts, json_new_string ("nodev"));
  json_array_append (opts, json_new_string ("mode=1777"));
  json_array_append (opts, json_new_string (size));
  json_object_set (m, "options", opts);
  json_array_append (mounts, m);
  return 0;
}

/* linux.namespaces' (first) network entry, NULL when there is none.  */
static struct json *
network_entry (struct json *root)
{
  struct json *nss = json_object_get_mut (json_object_get_mut (root, "linux"), "namespaces");
  for (size_t i = 0; i < json_array_len (nss); i++)
    {
      struct json *ns = json_array_at_mut (nss, i);
      const char *t = json_string (json_object_get (ns, "type"));
      if (json_type (ns) == JSON_OBJECT && t && strcmp (t, "network") == 0)
        return ns;
    }
  return NULL;
}

/* The index in mounts of the rails file's entry (the destination is ours
 * by contract), or -1.  */
static long
rails_entry (const struct json *mounts)
{
  for (size_t i = 0; i < json_array_len (mounts); i++)
    {
      const struct json *m = json_array_at (mounts, i);
      const char *d = json_string (json_object_get (m, "destination"));
      if (json_type (m) == JSON_OBJECT && d && strcmp (d, "/" RAILS_DIR "/" RAILS_NAME) == 0)
        return (long) i;
    }
  return -1;
}

bool
shim_drop_leftovers (struct json *root)
{
  struct json *mounts = json_object_get_mut (root, "mounts");
  struct json *ns = network_entry (root);
  bool any = false;
  long at;
  while ((at = rails_entry (mounts)) >= 0)
    {
      json_array_del (mounts, (size_t) at);
      any = true;
    }
  if (ns && shim_netns_path_is_shims (json_string (json_object_get (ns, "path"))))
    {
      json_object_del (ns, "path");
      any = true;
    }
  return any;
}

/* p past `prefix` and one or more digits, or NULL.  */
static const char *
past_number (const char *p, const char *prefix)
{
  size_t n = strlen (prefix);
  if (p == NULL || strncmp (p, prefix, n) != 0 || ! isdigit ((unsigned char) p[n]))
    return NULL;
  for (p += n; isdigit ((unsigned char) *p); p++)
    ;
  return p;
}

bool
shim_netns_path_is_shims (const char *path)
{
  const char *p = past_number (past_number (path, "/proc/"), "/fd/");
  return p && *p == '\0';
}

/* The network entry (one without a path: shim_start_applies) names the
 * namespace the shim made.  */
static int
set_netns_path (struct json *root, const char *path, roce_error_t *err)
{
  struct json *ns = network_entry (root);
  if (ns == NULL)
    return roce_error_make (err, EINVAL, "config.json: linux.namespaces: no network namespace");
  json_object_set (ns, "path", json_new_string (path));
  return 0;
}

/* The rails file, read-only at /dev/roce/rails (rails.h).  */
static int
add_rails_mount (struct json *root, const char *source, roce_error_t *err)
{
  struct json *mounts = member (root, "mounts", JSON_ARRAY, "", err), *m, *opts;
  long at;
  if (mounts == NULL)
    return -1;
  /* An entry for it (a shim killed before it put config.json back) is
   * replaced, not doubled.  */
  at = rails_entry (mounts);
  m = at >= 0 ? json_array_at_mut (mounts, (size_t) at) : NULL;
  if (m == NULL)
    {
      m = json_new_object ();
      json_array_append (mounts, m);
    }
  json_object_set (m, "destination", json_new_string ("/" RAILS_DIR "/" RAILS_NAME));
  json_object_set (m, "type", json_new_string ("bind"));
  json_object_set (m, "source", json_new_string (source));
  opts = json_new_array ();
  json_array_append (opts, json_new_string ("bind"));
  json_array_append (opts, json_new_string ("ro"));
  json_array_append (opts, json_new_string ("nosuid"));
  json_array_append (opts, json_new_string ("nodev"));
  json_array_append (opts, json_new_string ("noexec"));
  json_object_set (m, "options", opts);
  return 0;
}

int
shim_edit_config (struct json *root, const struct shim_edit *e, roce_error_t *err)
{
  struct json *hooks, *process;

  if (json_type (root) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "config.json: expected an object, found %s",
                            json_type_name (root));
  hooks = member (root, "hooks", JSON_OBJECT, "", err);
  if (hooks == NULL || (! e->no_start_hook && add_hook (hooks, e, e->hook_stage, err) < 0)
      || (! e->no_poststop && add_hook (hooks, e, "poststop", err) < 0))
    return -1;
  if (e->no_start_hook)
    shim_drop_leftovers (root);
  if (e->netns_path && set_netns_path (root, e->netns_path, err) < 0)
    return -1;
  if (e->rails_source && add_rails_mount (root, e->rails_source, err) < 0)
    return -1;
  process = member (root, "process", JSON_OBJECT, "", err);
  if (process == NULL || shim_edit_process (process, e, err) < 0)
    return -1;
  if (set_shm (root, e, err) < 0)
    return -1;
  return add_devices (root, e, err);
}

int
shim_edit_process (struct json *process, const struct shim_edit *e, roce_error_t *err)
{
  struct json *env;

  if (json_type (process) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "process: expected an object, found %s",
                            json_type_name (process));
  if (add_caps (process, err) < 0 || set_memlock (process, e, err) < 0
      || set_stack (process, e, err) < 0)
    return -1;
  env = member (process, "env", JSON_ARRAY, "process.", err);
  if (env == NULL)
    return -1;
  env_default (env, "NCCL_IB_HCA", e->nccl_ib_hca);
  env_default (env, "NCCL_IB_TC", e->nccl_ib_tc);
  if (e->nccl_ib_addr_range && e->nccl_ib_addr_range[0])
    env_default (env, "NCCL_IB_ADDR_RANGE", e->nccl_ib_addr_range);
  env_default (env, "NCCL_IB_ADDR_FAMILY", e->nccl_ib_addr_family);
  env_default (env, "NCCL_IB_SL", e->nccl_ib_sl);
  return 0;
}

/* tmp to config.json: exchanged when aside is given and the file system
 * can, else renamed over it.  */
static int
put_in_place (int dirfd, const char *tmp, char **aside)
{
  if (aside && renameat2 (dirfd, tmp, dirfd, "config.json", RENAME_EXCHANGE) == 0)
    {
      *aside = xstrdup (tmp);
      return 0;
    }
  if (aside && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    return -1;
  return renameat (dirfd, tmp, dirfd, "config.json");
}

int
shim_write_config (const char *bundle, const char *buf, size_t len, char **aside, roce_error_t *err)
{
  cleanup_close int dirfd = open (bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cleanup_close int fd = -1;
  char tmp[64];
  struct stat st;

  if (dirfd < 0)
    return roce_error_sys (err, errno, "open bundle `%s`", bundle);
  if (fstatat (dirfd, "config.json", &st, AT_SYMLINK_NOFOLLOW) < 0)
    return roce_error_sys (err, errno, "`%s/config.json`", bundle);
  if (! S_ISREG (st.st_mode))
    return roce_error_make (err, EINVAL, "`%s/config.json`: not a regular file", bundle);
  for (int attempt = 0; fd < 0; attempt++)
    {
      struct timespec ts;
      clock_gettime (CLOCK_MONOTONIC, &ts);
      snprintf (tmp, sizeof (tmp), ".config.json.roce-%d-%lx", (int) getpid (),
                (unsigned long) ts.tv_nsec ^ (unsigned long) attempt);
      fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   st.st_mode & 07777);
      if (fd < 0 && (errno != EEXIST || attempt > 16))
        return roce_error_sys (err, errno, "create `%s/%s`", bundle, tmp);
    }
  /* Written beside and renamed: the runtime, or a shim killed half-way,
   * never sees a torn config.json, only the old one or the new one.  Not
   * fsynced (the file, nor the directory): durability buys nothing here.
   * A bundle lives only as long as its container, and none survives a power
   * loss or a crash of the node; after one, containerd and CRI-O write
   * bundles afresh from the spec they stored (under /run, a tmpfs, as a
   * rule), and a bundle left on disk from before is deleted, never started
   * again.  The two fsyncs cost about a millisecond of every annotated
   * create on this VM's disk (`contrib/bench/shim.sh`).
   * Exchanged, when the old file is to come back: neither file's blocks are
   * written or freed on the way (a rename over a file makes ext4 write the
   * new one's at once, auto_da_alloc, and free the old one's: 0.15-0.35 ms
   * each on this VM's disk, mounted with discard).  */
  if (aside)
    *aside = NULL;
  if (fchmod (fd, st.st_mode & 07777) < 0 || write_all_fd (fd, buf, len, err) < 0
      || put_in_place (dirfd, tmp, aside) < 0)
    {
      int saved = errno;
      unlinkat (dirfd, tmp, 0);
      if (err && *err)
        return roce_error_wrap (err, "`%s/%s`", bundle, tmp);
      return roce_error_sys (err, saved, "write `%s/config.json`", bundle);
    }
  return 0;
}

void
shim_report (const struct shim_args *a, const char *msg)
{
  /* The id and the message may carry bytes a tenant chose: the line is
   * escaped whole, once (utils.h: str_escape).  */
  cleanup_free char *line = roce_line ("roce-runtime", a->id, msg);
  fprintf (stderr, "%s\n", line);
  roce_log (ROCE_LOG_ERR, "%s", msg); /* tagged with the id (shim/main.c) */
  if (a->log_path)
    {
      cleanup_close int fd
          = open (a->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
      if (fd >= 0)
        {
          cleanup_free char *out = NULL;
          if (a->log_json)
            {
              char ts[UTC_TIME_MAX + 1];
              cleanup_json_gen struct json_gen *g = json_gen_new (false);
              const char *b;
              size_t l;
              utc_time_format (time (NULL), ts);
              strcat (ts, "Z");
              json_gen_map_open (g);
              json_gen_kv_string (g, "level", "error");
              json_gen_kv_string (g, "msg", line);
              json_gen_kv_string (g, "time", ts);
              json_gen_map_close (g);
              if (json_gen_result (g, &b, &l, NULL) == 0)
                out = xasprintf ("%.*s\n", (int) l, b);
            }
          else
            out = xasprintf ("%s\n", line);
          if (out)
            write_all_fd (fd, out, strlen (out), NULL);
        }
    }
}
