/* SPDX-License-Identifier: Apache-2.0 */
/* The OCI state on a hook's stdin and the bundle's config.json: the lenient
 * look for our annotation, then the strict, typed and bounded read.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/utils.h"
#include "spec/annot.h"
#include "spec/oci.h"

const char *const oci_cap_set_names[OCI_CAP_N_SETS] = {
  [OCI_CAP_BOUNDING] = "bounding",   [OCI_CAP_EFFECTIVE] = "effective",
  [OCI_CAP_PERMITTED] = "permitted", [OCI_CAP_INHERITABLE] = "inheritable",
  [OCI_CAP_AMBIENT] = "ambient",
};

static void
kv_free (struct roce_kv *kv, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (kv[i].key);
      free (kv[i].value);
    }
  free (kv);
}

/* A string member ("OCI state: " + key in messages).  */
static int
get_string (const struct json *obj, const char *key, const char *where, bool required, char **out,
            roce_error_t *err)
{
  return json_member_string (obj, where, key, required, 0, false, out, err) < 0 ? -1 : 0;
}

static int
parse_annotations (const struct json *obj, const char *where, struct roce_kv **out, size_t *n_out,
                   roce_error_t *err)
{
  size_t n = json_object_len (obj);
  struct roce_kv *kv;

  if (json_type (obj) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "%sannotations: expected an object, found %s", where,
                            json_type_name (obj));
  kv = xmalloc0 ((n + 1) * sizeof (*kv));
  for (size_t i = 0; i < n; i++)
    {
      const struct json *v = json_object_value (obj, i);
      if (json_type (v) != JSON_STRING)
        {
          int ret = roce_error_make (err, EINVAL, "%sannotations.%s: expected a string, found %s",
                                     where, json_object_key (obj, i), json_type_name (v));
          kv_free (kv, i);
          return ret;
        }
      kv[i].key = xstrdup (json_object_key (obj, i));
      kv[i].value = xstrdup (json_string (v));
    }
  *out = kv;
  *n_out = n;
  return 0;
}

static bool
valid_container_id (const char *id)
{
  size_t len = strlen (id);
  if (len == 0 || len > OCI_ID_MAX)
    return false;
  /* Ids become parts of log lines and of lease records: printable, no
   * whitespace, no slash.  runc itself allows [\w+-.] only.  */
  for (const char *p = id; *p; p++)
    if (*p <= 0x20 || *p > 0x7e || *p == '/' || *p == '\\' || *p == '"')
      return false;
  return strcmp (id, ".") != 0 && strcmp (id, "..") != 0;
}

int
oci_state_parse (const char *buf, struct oci_state **out, roce_error_t *err)
{
  cleanup_json struct json *root = NULL;
  struct oci_state *s;
  const struct json *v;
  int ret;

  ret = json_parse (buf, &root, err);
  if (ret < 0)
    return roce_error_wrap (err, "OCI state");
  if (json_type (root) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "OCI state: expected an object, found %s",
                            json_type_name (root));

  s = xmalloc0 (sizeof (*s));
  if (get_string (root, "ociVersion", "OCI state: ", false, &s->oci_version, err) < 0
      || get_string (root, "id", "OCI state: ", true, &s->id, err) < 0
      || get_string (root, "status", "OCI state: ", false, &s->status, err) < 0
      || get_string (root, "bundle", "OCI state: ", true, &s->bundle, err) < 0)
    goto fail;

  if (! valid_container_id (s->id))
    {
      roce_error_make (err, EINVAL, "OCI state: id: not a valid container id");
      goto fail;
    }
  if (s->bundle[0] != '/' || strlen (s->bundle) >= PATH_MAX)
    {
      roce_error_make (err, EINVAL, "OCI state: bundle: expected an absolute path");
      goto fail;
    }

  v = json_object_get (root, "pid");
  if (v != NULL)
    {
      int64_t pid;
      if (json_integer (v, &pid) < 0 || pid < 0 || pid > INT_MAX)
        {
          roce_error_make (err, EINVAL, "OCI state: pid: expected a process id, found %s",
                           json_type_name (v));
          goto fail;
        }
      s->pid = (pid_t) pid;
    }

  v = json_object_get (root, "annotations");
  if (v != NULL && json_type (v) != JSON_NULL)
    {
      if (parse_annotations (v, "OCI state: ", &s->annotations, &s->n_annotations, err) < 0)
        goto fail;
      s->has_annotations = true;
    }

  *out = s;
  return 0;

fail:
  oci_state_free (s);
  return -1;
}

int
oci_state_read (int fd, struct oci_state **out, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  int ret = read_all_fd (fd, OCI_STATE_MAX, &buf, NULL, err);
  if (ret < 0)
    return roce_error_wrap (err, "reading the OCI state from stdin");
  return oci_state_parse (buf, out, err);
}

/* Reads <bundle>/config.json for the lenient look only: not following a
 * symlink at config.json, at most OCI_SCAN_MAX bytes.  1: its annotations
 * carry key (or, with env, its process.env has a string starting with env),
 * 0: they do not, -1: it cannot be read or is not JSON (the strict read that
 * follows says why).  */
static int
bundle_asks_for (const char *bundle, const char *key, const char *env, struct oci_seen_config *seen)
{
  cleanup_close int dirfd = -1;
  cleanup_close int fd = -1;
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t err = NULL;
  struct json_scan scan = { .key = key, .env = env };
  size_t len = 0;

  if (bundle[0] != '/')
    return -1;
  dirfd = open (bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return -1;
  fd = openat (dirfd, "config.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0 || read_all_fd (fd, OCI_SCAN_MAX, &buf, &len, &err) < 0)
    return -1;
  if (json_scan (buf, len, &scan) < 0)
    return -1;
  if (scan.found && seen && len <= OCI_CONFIG_MAX)
    {
      seen->bundle = xstrdup (bundle);
      seen->buf = steal_pointer (&buf);
      seen->len = len;
    }
  return scan.found || scan.env_found ? 1 : 0;
}

bool
oci_asks_for (const char *state, size_t len, const char *key, struct oci_seen_config *seen)
{
  struct json_scan scan = { .key = key, .capture = "bundle" };
  bool found;

  json_scan (state, len, &scan);
  found = scan.found;
  if (scan.captured)
    {
      /* Runtimes leave an empty annotations map out of the state; config.json
       * then has the container's annotations.  And where the state has ours,
       * config.json must spell it exactly too: a runtime written in C reports
       * `roce.io/hca\u0000x` as `roce.io/hca`, a key the spec (and every Go
       * component) does not have.  */
      if (! found && ! scan.has_annotations)
        found = bundle_asks_for (scan.captured, key, NULL, seen) == 1;
      else if (found)
        /* roce-runtime writes the annotations of a container that asked by
         * ROCE_HCA (Docker < 24) into the spec the runtime keeps, and puts
         * the caller's config.json back: that one has the variable.  */
        found = bundle_asks_for (scan.captured, key,
                                 strcmp (key, ANNOT_HCA) == 0 ? ANNOT_ENV_HCA "=" : NULL, seen)
                != 0;
    }
  json_scan_clear (&scan);
  return found;
}

void
oci_seen_config_clear (struct oci_seen_config *seen)
{
  free (seen->bundle);
  free (seen->buf);
  memset (seen, 0, sizeof (*seen));
}

void
oci_state_free (struct oci_state *s)
{
  if (s == NULL)
    return;
  free (s->oci_version);
  free (s->id);
  free (s->status);
  free (s->bundle);
  kv_free (s->annotations, s->n_annotations);
  free (s);
}

void
cleanup_oci_statep (struct oci_state **s)
{
  oci_state_free (*s);
  *s = NULL;
}

static int
parse_strv (const struct json *arr, const char *where, char ***out, roce_error_t *err)
{
  cleanup_strv char **v = NULL;
  size_t n = json_array_len (arr);

  if (json_type (arr) != JSON_ARRAY)
    return roce_error_make (err, EINVAL, "config.json: %s: expected an array, found %s", where,
                            json_type_name (arr));
  v = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < n; i++)
    {
      const char *s = json_string (json_array_at (arr, i));
      if (s == NULL)
        return roce_error_make (err, EINVAL, "config.json: %s[%zu]: expected a string, found %s",
                                where, i, json_type_name (json_array_at (arr, i)));
      strv_push (&v, s);
    }
  *out = steal_pointer (&v);
  return 0;
}

static int
parse_u64_member (const struct json *obj, const char *key, const char *where, uint64_t *out,
                  roce_error_t *err)
{
  const struct json *v = json_object_get (obj, key);
  int64_t i;

  if (v == NULL)
    return roce_error_make (err, EINVAL, "config.json: %s.%s: missing", where, key);
  if (json_integer (v, &i) == 0)
    {
      if (i < 0)
        return roce_error_make (err, EINVAL, "config.json: %s.%s: negative", where, key);
      *out = (uint64_t) i;
      return 0;
    }
  /* RLIM_INFINITY (2^64-1) does not fit int64: read the number's own text.  */
  if (json_type (v) == JSON_NUMBER && parse_u64 (json_number_text (v), out) == 0)
    return 0;
  return roce_error_make (err, EINVAL, "config.json: %s.%s: expected an unsigned integer, found %s",
                          where, key, json_type_name (v));
}

static int
parse_process (const struct json *proc, struct oci_config *c, roce_error_t *err)
{
  const struct json *v;

  if (json_type (proc) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "config.json: process: expected an object, found %s",
                            json_type_name (proc));
  v = json_object_get (proc, "env");
  if (v && parse_strv (v, "process.env", &c->env, err) < 0)
    return -1;

  v = json_object_get (proc, "capabilities");
  if (v)
    {
      if (json_type (v) != JSON_OBJECT)
        return roce_error_make (err, EINVAL,
                                "config.json: process.capabilities: expected an object, found %s",
                                json_type_name (v));
      c->has_capabilities = true;
      for (int s = 0; s < OCI_CAP_N_SETS; s++)
        {
          const struct json *set = json_object_get (v, oci_cap_set_names[s]);
          cleanup_free char *where = xasprintf ("process.capabilities.%s", oci_cap_set_names[s]);
          if (set && parse_strv (set, where, &c->caps[s], err) < 0)
            return -1;
        }
    }

  v = json_object_get (proc, "user");
  if (v)
    {
      const struct json *uid = json_type (v) == JSON_OBJECT ? json_object_get (v, "uid") : NULL;
      int64_t i;
      if (json_type (v) != JSON_OBJECT)
        return roce_error_make (err, EINVAL,
                                "config.json: process.user: expected an object, found %s",
                                json_type_name (v));
      if (uid && (json_integer (uid, &i) < 0 || i < 0 || i > UINT32_MAX))
        return roce_error_make (err, EINVAL,
                                "config.json: process.user.uid: expected a uid, found %s",
                                json_type_name (uid));
      if (uid)
        c->uid = (uint32_t) i;
    }

  v = json_object_get (proc, "rlimits");
  if (v)
    {
      size_t n = json_array_len (v);
      if (json_type (v) != JSON_ARRAY)
        return roce_error_make (err, EINVAL,
                                "config.json: process.rlimits: expected an array, found %s",
                                json_type_name (v));
      c->rlimits = xmalloc0 ((n + 1) * sizeof (*c->rlimits));
      for (size_t i = 0; i < n; i++)
        {
          const struct json *r = json_array_at (v, i);
          cleanup_free char *where = xasprintf ("process.rlimits[%zu]", i);
          struct oci_rlimit *rl = &c->rlimits[c->n_rlimits];
          if (json_type (r) != JSON_OBJECT)
            return roce_error_make (err, EINVAL, "config.json: %s: expected an object, found %s",
                                    where, json_type_name (r));
          if (get_string (r, "type", "config.json: process.rlimits[].", true, &rl->type, err) < 0)
            return -1;
          c->n_rlimits++;
          if (parse_u64_member (r, "hard", where, &rl->hard, err) < 0
              || parse_u64_member (r, "soft", where, &rl->soft, err) < 0)
            return -1;
        }
    }
  return 0;
}

static int
parse_device_rule (const struct json *r, size_t i, struct oci_device_rule *out, roce_error_t *err)
{
  static const char *const num_keys[] = { "major", "minor" };
  const struct json *v;

  if (json_type (r) != JSON_OBJECT)
    return roce_error_make (
        err, EINVAL, "config.json: linux.resources.devices[%zu]: expected an object, found %s", i,
        json_type_name (r));
  v = json_object_get (r, "allow");
  if (v == NULL || (json_type (v) != JSON_TRUE && json_type (v) != JSON_FALSE))
    return roce_error_make (
        err, EINVAL, "config.json: linux.resources.devices[%zu].allow: expected a boolean", i);
  out->allow = json_type (v) == JSON_TRUE;
  out->type = 'a';
  v = json_object_get (r, "type");
  if (v && json_type (v) != JSON_NULL)
    {
      const char *t = json_string (v);
      if (t == NULL || strlen (t) != 1 || strchr ("acb", t[0]) == NULL)
        return roce_error_make (
            err, EINVAL, "config.json: linux.resources.devices[%zu].type: expected a, c or b", i);
      out->type = t[0];
    }
  for (int k = 0; k < 2; k++)
    {
      int64_t *dst = k == 0 ? &out->major : &out->minor;
      *dst = -1;
      v = json_object_get (r, num_keys[k]);
      if (v && json_type (v) != JSON_NULL
          && (json_integer (v, dst) < 0 || *dst < -1 || *dst > UINT32_MAX))
        return roce_error_make (err, EINVAL,
                                "config.json: linux.resources.devices[%zu].%s: expected a number",
                                i, num_keys[k]);
    }
  strcpy (out->access, "rwm");
  v = json_object_get (r, "access");
  if (v && json_type (v) != JSON_NULL)
    {
      const char *a = json_string (v);
      if (a == NULL || strlen (a) > 3 || strspn (a, "rwm") != strlen (a))
        return roce_error_make (
            err, EINVAL,
            "config.json: linux.resources.devices[%zu].access: expected a subset of rwm", i);
      strcpy (out->access, a);
    }
  return 0;
}

static int
parse_device_rules (const struct json *lin, struct oci_config *c, roce_error_t *err)
{
  const struct json *res = json_object_get (lin, "resources");
  const struct json *arr;
  size_t n;

  if (res == NULL || json_type (res) == JSON_NULL)
    return 0;
  if (json_type (res) != JSON_OBJECT)
    return roce_error_make (err, EINVAL,
                            "config.json: linux.resources: expected an object, found %s",
                            json_type_name (res));
  arr = json_object_get (res, "devices");
  if (arr == NULL || json_type (arr) == JSON_NULL)
    return 0;
  if (json_type (arr) != JSON_ARRAY)
    return roce_error_make (err, EINVAL,
                            "config.json: linux.resources.devices: expected an array, found %s",
                            json_type_name (arr));
  n = json_array_len (arr);
  c->device_rules = xmalloc0 ((n + 1) * sizeof (*c->device_rules));
  for (size_t i = 0; i < n; i++)
    {
      if (parse_device_rule (json_array_at (arr, i), i, &c->device_rules[i], err) < 0)
        return -1;
      c->n_device_rules++;
    }
  return 0;
}

/* linux.sysctl: whether it turns IPv6 off (oci.h).  A key may use '/'
 * for '.', as runc reads it; a value that is no integer is the runtime's
 * to refuse.  */
static void
scan_sysctl (const struct json *v, struct oci_config *c)
{
  static const char *const keys[]
      = { "net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6" };
  if (v == NULL || json_type (v) != JSON_OBJECT)
    return;
  for (size_t i = 0; i < json_object_len (v) && c->ipv6_off == NULL; i++)
    {
      cleanup_free char *key = xstrdup (json_object_key (v, i));
      const char *val = json_string (json_object_value (v, i));
      char *end = NULL;
      long long n;
      for (char *k = key; *k; k++)
        if (*k == '/')
          *k = '.';
      if (val == NULL)
        continue;
      errno = 0;
      n = strtoll (val, &end, 10);
      if (errno || end == val || *end != '\0' || n == 0)
        continue;
      for (size_t k = 0; k < ARRAY_SIZE (keys); k++)
        if (strcmp (key, keys[k]) == 0)
          {
            c->ipv6_off = keys[k];
            c->ipv6_off_value = n;
          }
    }
}

static int
parse_namespaces (const struct json *arr, struct oci_config *c, roce_error_t *err)
{
  size_t n = json_array_len (arr);

  if (json_type (arr) != JSON_ARRAY)
    return roce_error_make (err, EINVAL,
                            "config.json: linux.namespaces: expected an array, found %s",
                            json_type_name (arr));
  c->namespaces = xmalloc0 ((n + 1) * sizeof (*c->namespaces));
  for (size_t i = 0; i < n; i++)
    {
      const struct json *ns = json_array_at (arr, i);
      struct oci_namespace *o = &c->namespaces[c->n_namespaces];
      if (json_type (ns) != JSON_OBJECT)
        return roce_error_make (err, EINVAL,
                                "config.json: linux.namespaces[%zu]: expected an object, found %s",
                                i, json_type_name (ns));
      if (get_string (ns, "type", "config.json: linux.namespaces[].", true, &o->type, err) < 0)
        return -1;
      c->n_namespaces++;
      if (get_string (ns, "path", "config.json: linux.namespaces[].", false, &o->path, err) < 0)
        return -1;
      if (o->path && o->path[0] == '\0')
        {
          free (o->path);
          o->path = NULL;
        }
    }
  return 0;
}

/* linux.devices' types and numbers and linux.resources.cpu.cpus,
 * leniently: what roce.io/hca=auto reads of them (the runtime judges the
 * rest, and an entry it cannot read is not a GPU).  */
static void
scan_devices (const struct json *lin, struct oci_config *c)
{
  const struct json *arr = json_object_get (lin, "devices");
  const char *cpus = json_string (
      json_object_get (json_object_get (json_object_get (lin, "resources"), "cpu"), "cpus"));
  size_t n = json_array_len (arr);

  c->devices = xmalloc0 ((n + 1) * sizeof (*c->devices));
  for (size_t i = 0; i < n; i++)
    {
      const struct json *d = json_array_at (arr, i);
      const char *type = json_string (json_object_get (d, "type"));
      struct oci_device *o = &c->devices[c->n_devices];
      if (type == NULL || strlen (type) != 1
          || json_integer (json_object_get (d, "major"), &o->major) < 0
          || json_integer (json_object_get (d, "minor"), &o->minor) < 0)
        continue;
      o->type = type[0];
      c->n_devices++;
    }
  if (cpus && strlen (cpus) <= 4096)
    c->cpus = xstrdup (cpus);
}

/* The bind mounts' sources, leniently (the runtime judges the mounts).  */
static void
scan_binds (const struct json *mounts, const char *bundle, struct oci_config *c)
{
  for (size_t i = 0; i < json_array_len (mounts); i++)
    {
      const struct json *m = json_array_at (mounts, i);
      const char *src = json_string (json_object_get (m, "source"));
      const char *type = json_string (json_object_get (m, "type"));
      const struct json *opts = json_object_get (m, "options");
      bool bind = type && strcmp (type, "bind") == 0;
      for (size_t k = 0; ! bind && k < json_array_len (opts); k++)
        {
          const char *o = json_string (json_array_at (opts, k));
          bind = o && (strcmp (o, "bind") == 0 || strcmp (o, "rbind") == 0);
        }
      if (! bind || src == NULL || src[0] == '\0' || strlen (src) >= PATH_MAX)
        continue;
      {
        cleanup_free char *abs = src[0] == '/' ? xstrdup (src) : xasprintf ("%s/%s", bundle, src);
        strv_push (&c->bind_sources, abs);
      }
    }
}

/* The last mounts entry for /dev/shm, leniently: anything else in mounts
 * is the runtime's to judge.  */
static void
scan_shm (const struct json *mounts, struct oci_config *c)
{
  for (size_t i = 0; i < json_array_len (mounts); i++)
    {
      const struct json *m = json_array_at (mounts, i);
      const char *dst = json_string (json_object_get (m, "destination"));
      const char *type = json_string (json_object_get (m, "type"));
      const struct json *opts = json_object_get (m, "options");
      if (dst == NULL || (strcmp (dst, "/dev/shm") != 0 && strcmp (dst, "/dev/shm/") != 0))
        continue;
      c->has_shm = true;
      free (c->shm_type);
      free (c->shm_size);
      c->shm_type = type && strlen (type) <= 64 && str_is_printable (type) ? xstrdup (type) : NULL;
      c->shm_size = NULL;
      for (size_t k = 0; k < json_array_len (opts); k++)
        {
          const char *o = json_string (json_array_at (opts, k));
          if (o && strncmp (o, "size=", 5) == 0 && strlen (o) <= 64 && str_is_printable (o))
            {
              free (c->shm_size);
              c->shm_size = xstrdup (o + 5);
            }
        }
    }
}

int
oci_config_parse (const char *buf, const char *bundle, struct oci_config **out, roce_error_t *err)
{
  cleanup_json struct json *root = NULL;

  if (json_parse (buf, &root, err) < 0)
    return roce_error_wrap (err, "config.json");
  return oci_config_from_tree (root, bundle, out, err);
}

int
oci_config_from_tree (const struct json *root, const char *bundle, struct oci_config **out,
                      roce_error_t *err)
{
  struct oci_config *c;
  const struct json *v;
  cleanup_free char *root_path = NULL;

  if (json_type (root) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "config.json: expected an object, found %s",
                            json_type_name (root));

  c = xmalloc0 (sizeof (*c));

  v = json_object_get (root, "root");
  if (v == NULL || json_type (v) != JSON_OBJECT)
    {
      roce_error_make (err, EINVAL, "config.json: root: expected an object, found %s",
                       v ? json_type_name (v) : "nothing");
      goto fail;
    }
  if (get_string (v, "path", "config.json: root.", true, &root_path, err) < 0)
    goto fail;
  if (root_path[0] == '\0')
    {
      roce_error_make (err, EINVAL, "config.json: root.path: empty");
      goto fail;
    }
  if (root_path[0] == '/')
    c->root_path = steal_pointer (&root_path);
  else
    c->root_path = xasprintf ("%s/%s", bundle, root_path);
  if (strlen (c->root_path) >= PATH_MAX)
    {
      roce_error_make (err, ENAMETOOLONG, "config.json: root.path: too long");
      goto fail;
    }
  {
    const struct json *ro = json_object_get (v, "readonly");
    if (ro && json_type (ro) != JSON_TRUE && json_type (ro) != JSON_FALSE)
      {
        roce_error_make (err, EINVAL, "config.json: root.readonly: expected a boolean, found %s",
                         json_type_name (ro));
        goto fail;
      }
    c->root_readonly = ro && json_type (ro) == JSON_TRUE;
  }

  v = json_object_get (root, "annotations");
  if (v && json_type (v) != JSON_NULL
      && parse_annotations (v, "config.json: ", &c->annotations, &c->n_annotations, err) < 0)
    goto fail;

  v = json_object_get (root, "process");
  if (v && parse_process (v, c, err) < 0)
    goto fail;

  scan_shm (json_object_get (root, "mounts"), c);
  scan_binds (json_object_get (root, "mounts"), bundle, c);

  v = json_object_get (root, "linux");
  if (v)
    {
      const struct json *ns;
      if (json_type (v) != JSON_OBJECT)
        {
          roce_error_make (err, EINVAL, "config.json: linux: expected an object, found %s",
                           json_type_name (v));
          goto fail;
        }
      ns = json_object_get (v, "namespaces");
      if (ns && parse_namespaces (ns, c, err) < 0)
        goto fail;
      if (parse_device_rules (v, c, err) < 0)
        goto fail;
      scan_devices (v, c);
      scan_sysctl (json_object_get (v, "sysctl"), c);
    }

  *out = c;
  return 0;

fail:
  oci_config_free (c);
  return -1;
}

int
oci_config_load (const char *bundle, struct oci_config **out, roce_error_t *err)
{
  cleanup_close int dirfd = -1;
  cleanup_close int fd = -1;
  cleanup_free char *buf = NULL;

  dirfd = open (bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return roce_error_sys (err, errno, "open bundle `%s`", bundle);
  fd = openat (dirfd, "config.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s/config.json`", bundle);
  if (read_all_fd (fd, OCI_CONFIG_MAX, &buf, NULL, err) < 0)
    return roce_error_wrap (err, "`%s/config.json`", bundle);
  return oci_config_parse (buf, bundle, out, err);
}

int
oci_config_load_seen (const char *bundle, const struct oci_seen_config *seen,
                      struct oci_config **out, roce_error_t *err)
{
  if (seen && seen->buf && strcmp (seen->bundle, bundle) == 0)
    return oci_config_parse (seen->buf, bundle, out, err);
  return oci_config_load (bundle, out, err);
}

void
oci_config_free (struct oci_config *c)
{
  if (c == NULL)
    return;
  free (c->root_path);
  kv_free (c->annotations, c->n_annotations);
  strv_free (c->env);
  for (int s = 0; s < OCI_CAP_N_SETS; s++)
    strv_free (c->caps[s]);
  for (size_t i = 0; i < c->n_rlimits; i++)
    free (c->rlimits[i].type);
  free (c->rlimits);
  for (size_t i = 0; i < c->n_namespaces; i++)
    {
      free (c->namespaces[i].type);
      free (c->namespaces[i].path);
    }
  free (c->namespaces);
  free (c->device_rules);
  free (c->devices);
  free (c->cpus);
  free (c->shm_type);
  free (c->shm_size);
  strv_free (c->bind_sources);
  free (c);
}

void
cleanup_oci_configp (struct oci_config **c)
{
  oci_config_free (*c);
  *c = NULL;
}

const char *
roce_kv_get (const struct roce_kv *kv, size_t n, const char *key)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (kv[i].key, key) == 0)
      return kv[i].value;
  return NULL;
}

const char *
oci_pod_container_type (const struct roce_kv *kv, size_t n)
{
  const char *t = roce_kv_get (kv, n, "io.kubernetes.cri.container-type");
  return t ? t : roce_kv_get (kv, n, "io.kubernetes.cri-o.ContainerType");
}

bool
oci_is_pod_sandbox (const struct roce_kv *kv, size_t n)
{
  const char *t = oci_pod_container_type (kv, n);
  return t && strcmp (t, "sandbox") == 0;
}

const char *
oci_env_get (char *const *env, const char *name)
{
  size_t len = strlen (name);
  const char *found = NULL;
  /* The last definition wins, as in execve's consumers.  */
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp (env[i], name, len) == 0 && env[i][len] == '=')
      found = env[i] + len + 1;
  return found;
}

const struct oci_namespace *
oci_config_namespace (const struct oci_config *c, const char *type)
{
  for (size_t i = 0; i < c->n_namespaces; i++)
    if (strcmp (c->namespaces[i].type, type) == 0)
      return &c->namespaces[i];
  return NULL;
}

const struct oci_rlimit *
oci_config_rlimit (const struct oci_config *c, const char *type)
{
  for (size_t i = 0; i < c->n_rlimits; i++)
    if (strcmp (c->rlimits[i].type, type) == 0)
      return &c->rlimits[i];
  return NULL;
}

bool
oci_config_has_cap (const struct oci_config *c, enum oci_cap_set set, const char *cap)
{
  for (size_t i = 0; c->caps[set] && c->caps[set][i]; i++)
    if (strcasecmp (c->caps[set][i], cap) == 0)
      return true;
  return false;
}
