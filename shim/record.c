/* SPDX-License-Identifier: Apache-2.0 */
/* The record of an annotated container, for the processes exec'd in it.
 *
 * containerd (and CRI-O) build an exec'd process from the spec they stored,
 * not from the config.json roce-runtime rewrote, and hand it to the runtime
 * as `exec --process F`: without this, `kubectl exec` would start processes
 * without CAP_IPC_LOCK, the policy's memlock and the NCCL defaults.  The shim
 * cannot ask the runtime (it runs no program), so at create it writes down
 * what it gave the container's process, and at exec gives the same.  */
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
#include "shim.h"
#include "spec/annot.h"
#include "spec/oci.h"
#include "sys/netns.h"

#define RECORD_DIR RUNTIME_RECORD_DIR
#define RAILS_SUFFIX RUNTIME_RAILS_SUFFIX
#define RECORD_VERSION 1
#define RECORD_MAX (64 * 1024)

int
shim_record_write (const char *state_dir, const char *id, const struct shim_record *r,
                   struct file_ident *written, roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  cleanup_close int dirfd = -1;
  cleanup_close int fd = -1;
  cleanup_free char *name = NULL;
  cleanup_free char *tmp = NULL;
  const char *buf;
  size_t len;

  if (! runtime_record_id_valid (id))
    {
      cleanup_free char *found = id ? str_quote (id) : xstrdup ("none");
      return roce_error_refuse (err, "container id",
                                "1-200 of A-Z a-z 0-9 _ + - . (not starting with .)", found,
                                "start the container with such an id");
    }
  json_gen_map_open (g);
  json_gen_kv_integer (g, "version", RECORD_VERSION);
  json_gen_kv_string (g, "id", id);
  json_gen_kv_string (g, "root", r->root ? r->root : "");
  json_gen_kv_string (g, "bundle", r->bundle);
  json_gen_string (g, "memlock");
  if (r->memlock_unlimited)
    json_gen_string (g, "unlimited");
  else
    json_gen_uint64 (g, r->memlock);
  json_gen_kv_string (g, "NCCL_IB_HCA", r->nccl_ib_hca);
  json_gen_kv_string (g, "NCCL_IB_TC", r->nccl_ib_tc);
  json_gen_kv_string (g, "NCCL_IB_ADDR_RANGE", r->nccl_ib_addr_range);
  if (r->nccl_ib_addr_family)
    json_gen_kv_string (g, "NCCL_IB_ADDR_FAMILY", r->nccl_ib_addr_family);
  if (r->nccl_ib_sl)
    json_gen_kv_string (g, "NCCL_IB_SL", r->nccl_ib_sl);
  if (r->stack_unlimited || r->stack)
    {
      json_gen_string (g, "stack");
      if (r->stack_unlimited)
        json_gen_string (g, "unlimited");
      else
        json_gen_uint64 (g, r->stack);
    }
  /* Where gc may judge the container gone (runtime_sweep.c): the boot, and
   * the identity of the bundle's directory as this runtime sees it.  */
  {
    char boot[NETNS_BOOT_ID_MAX];
    cleanup_free char *dir = xstrdup (r->bundle);
    char *slash = strrchr (dir, '/');
    struct stat st;
    if (slash)
      slash[slash == dir ? 1 : 0] = '\0';
    if (netns_boot_id (boot, err) < 0)
      return -1;
    json_gen_kv_string (g, "boot", boot);
    if (slash && stat (dir, &st) == 0)
      {
        json_gen_string (g, "bundle_dir");
        json_gen_map_open (g);
        json_gen_string (g, "dev");
        json_gen_uint64 (g, (uint64_t) st.st_dev);
        json_gen_string (g, "ino");
        json_gen_uint64 (g, (uint64_t) st.st_ino);
        json_gen_map_close (g);
      }
  }
  json_gen_map_close (g);
  if (json_gen_result (g, &buf, &len, err) < 0)
    return -1;

  dirfd = runtime_record_dir (state_dir, true, err);
  if (dirfd < 0)
    return -1;
  name = xasprintf ("%s.json", id);
  tmp = xasprintf (".%s.json.%d", id, (int) getpid ());
  unlinkat (dirfd, tmp, 0); /* left by a killed shim with our pid */
  fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return roce_error_sys (err, errno, "create `%s/" RECORD_DIR "/%s`", state_dir, tmp);
  /* Written beside and renamed: never torn for a reader.  Not fsynced, as
   * the lease store is not: a record matters only while its container
   * lives, and none outlives a power loss.  */
  if (written)
    file_ident_of (fd, written);
  if (write_all_fd (fd, buf, len, err) < 0 || renameat (dirfd, tmp, dirfd, name) < 0)
    {
      int saved = errno;
      unlinkat (dirfd, tmp, 0);
      if (err && *err)
        return roce_error_wrap (err, "`%s/" RECORD_DIR "/%s`", state_dir, tmp);
      return roce_error_sys (err, saved, "write `%s/" RECORD_DIR "/%s`", state_dir, name);
    }
  return 0;
}

struct record
{
  char *root, *bundle, *memlock, *hca, *tc, *range, *family, *sl;
  bool stack_unlimited;
  uint64_t stack;
};

static void
record_clear (struct record *r)
{
  free (r->root);
  free (r->bundle);
  free (r->memlock);
  free (r->hca);
  free (r->tc);
  free (r->range);
  free (r->family);
  free (r->sl);
}

/* 1 and *r filled when the record exists, 0 when it does not.  */
static int
record_read (int dirfd, const char *state_dir, const char *name, struct record *r,
             roce_error_t *err)
{
  cleanup_close int fd = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_free char *where = xasprintf ("`%s/" RECORD_DIR "/%s`", state_dir, name);
  const struct json *m;
  uint64_t version, v;
  struct stat st;
  size_t len;

  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "open %s", where);
  if (fstat (fd, &st) < 0 || ! S_ISREG (st.st_mode))
    return roce_error_make (err, EINVAL, "%s: not a regular file", where);
  if (check_trusted (fd, where, "the shim's record", err) < 0)
    return -1;
  if (read_all_fd (fd, RECORD_MAX, &buf, &len, err) < 0 || json_parse_n (buf, len, &root, err) < 0)
    return roce_error_wrap (err, "%s", where);
  if (json_member_u64 (root, "", "version", true, 0, UINT64_MAX, &version, err) < 0)
    return roce_error_wrap (err, "%s", where);
  if (version != RECORD_VERSION)
    return roce_error_make (err, EINVAL, "%s: version %llu (this roce-runtime reads %d)", where,
                            (unsigned long long) version, RECORD_VERSION);
  if (json_member_string (root, "", "root", true, 4096, false, &r->root, err) < 0
      || json_member_string (root, "", "bundle", true, 4096, false, &r->bundle, err) < 0
      || json_member_string (root, "", "NCCL_IB_HCA", true, 1024, true, &r->hca, err) < 0
      || json_member_string (root, "", "NCCL_IB_TC", true, 16, true, &r->tc, err) < 0
      || json_member_string (root, "", "NCCL_IB_ADDR_RANGE", true, CIDR_STR_MAX, true, &r->range,
                             err)
             < 0)
    return roce_error_wrap (err, "%s", where);
  /* Optional (records of an older roce-runtime lack them).  */
  if (json_member_string (root, "", "NCCL_IB_SL", false, 16, true, &r->sl, err) < 0
      || json_member_string (root, "", "NCCL_IB_ADDR_FAMILY", false, 16, true, &r->family, err) < 0)
    return roce_error_wrap (err, "%s", where);
  m = json_object_get (root, "stack");
  if (json_string (m) && strcmp (json_string (m), "unlimited") == 0)
    r->stack_unlimited = true;
  else if (m && json_uint64 (m, &r->stack) < 0)
    return roce_error_make (err, EINVAL, "%s: stack: expected \"unlimited\" or a byte count",
                            where);
  m = json_object_get (root, "memlock");
  if (json_string (m) && strcmp (json_string (m), "unlimited") == 0)
    r->memlock = xstrdup ("unlimited");
  else if (json_uint64 (m, &v) == 0)
    r->memlock = xasprintf ("%llu", (unsigned long long) v);
  else
    return roce_error_make (err, EINVAL, "%s: memlock: expected \"unlimited\" or a byte count",
                            where);
  return 1;
}

/* Whether the bundle still holds an annotated config.json: a record left by
 * a container whose `delete` never came must not reach a new container that
 * reuses the id.  */
static bool
bundle_annotated (const char *bundle)
{
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t err = NULL;
  size_t len = 0;
  return shim_read_config (bundle, &buf, &len, &err) > 0 && shim_config_asks (buf, len);
}

/* Rewrites the process file in place: runc reads it only after we exec it. */
static int
edit_process_file (const char *path, const struct record *r, roce_error_t *err)
{
  cleanup_close int fd = open (path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_json_gen struct json_gen *g = NULL;
  struct shim_edit e = { .nccl_ib_hca = r->hca,
                         .nccl_ib_tc = r->tc,
                         .nccl_ib_addr_range = r->range,
                         .nccl_ib_addr_family = r->family,
                         .nccl_ib_sl = r->sl,
                         .stack_unlimited = r->stack_unlimited,
                         .stack = r->stack };
  const char *out;
  struct stat st;
  size_t len;

  if (fd < 0)
    return roce_error_sys (err, errno, "exec --process `%s`", path);
  if (fstat (fd, &st) < 0 || ! S_ISREG (st.st_mode))
    return roce_error_make (err, EINVAL, "exec --process `%s`: not a regular file", path);
  if (strcmp (r->memlock, "unlimited") == 0)
    e.memlock_unlimited = true;
  else if (parse_u64 (r->memlock, &e.memlock) < 0)
    return roce_error_make (err, EINVAL, "internal error: memlock `%s`", r->memlock);
  if (read_all_fd (fd, OCI_CONFIG_MAX, &buf, &len, err) < 0
      || json_parse_n (buf, len, &root, err) < 0 || shim_edit_process (root, &e, err) < 0)
    return roce_error_wrap (err, "exec --process `%s`", path);
  g = json_gen_new (false);
  json_gen_tree (g, root);
  if (json_gen_result (g, &out, &len, err) < 0)
    return -1;
  if (ftruncate (fd, 0) < 0 || lseek (fd, 0, SEEK_SET) < 0)
    return roce_error_sys (err, errno, "rewrite `%s`", path);
  if (write_all_fd (fd, out, len, err) < 0)
    return roce_error_wrap (err, "rewrite `%s`", path);
  return 0;
}

/* Whether the record's bundle is the one this create/run names.  */
static bool
same_bundle (const struct shim_args *a, const char *recorded)
{
  cleanup_free char *abs = realpath (a->bundle ? a->bundle : ".", NULL);
  return abs && strcmp (abs, recorded) == 0;
}

/* The rails file of id, when there is one.  */
static int
rails_remove (int dirfd, const char *state_dir, const char *id, roce_error_t *err)
{
  cleanup_free char *name = xasprintf ("%s" RAILS_SUFFIX, id);
  if (unlinkat (dirfd, name, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/" RECORD_DIR "/%s`", state_dir, name);
  return 0;
}

int
shim_prepare_process (const struct shim_args *a, const char *state_dir, roce_error_t *err)
{
  bool exec = a->cmd && strcmp (a->cmd, "exec") == 0;
  bool del = a->cmd && strcmp (a->cmd, "delete") == 0;
  bool create = a->edits_bundle;
  cleanup_close int dirfd = -1;
  cleanup_free char *name = NULL;
  struct record r = { 0 };
  bool drop;
  int ret = -1, found;

  if (! shim_call_uses_record (a))
    return 0;
  if (! runtime_record_id_valid (a->id))
    return 0; /* no record can exist for it: the runtime judges the id */
  {
    /* An untrusted state_dir refuses every annotated start (the hook's
     * lease store checks it too): here it must not also stop the execs and
     * deletes of every other container.  */
    cleanup_error roce_error_t derr = NULL;
    dirfd = runtime_record_dir (state_dir, false, &derr);
    if (dirfd < 0)
      {
        if (derr)
          roce_log (ROCE_LOG_WARN, "%s: %s", a->cmd, derr->msg);
        return 0;
      }
  }
  name = xasprintf ("%s.json", a->id);
  /* The container is gone at its delete: so is the file it mounted.  */
  if (del && rails_remove (dirfd, state_dir, a->id, err) < 0)
    return -1;
  found = record_read (dirfd, state_dir, name, &r, err);
  if (found < 0 && ! exec)
    {
      /* Only an exec needs a record whole; a broken one goes.  */
      roce_log (ROCE_LOG_WARN, "%s: %s; removed", a->cmd, (*err)->msg);
      roce_error_release (err);
      drop = true;
    }
  else if (found <= 0)
    goto out;
  else if (strcmp (r.root, a->root ? a->root : "") != 0)
    {
      ret = 0; /* another runtime root's container with the same id */
      goto out;
    }
  /* A record outlives a container that `runc run` deleted itself, or whose
   * delete never came: it serves only the bundle it was written for, while
   * that still asks for RoCE.  A create of the id for another bundle, or of
   * a plain one, drops it.  */
  else if (create)
    drop = ! same_bundle (a, r.bundle) || ! bundle_annotated (r.bundle);
  else
    drop = del || ! bundle_annotated (r.bundle);
  if (drop)
    {
      if (unlinkat (dirfd, name, 0) < 0 && errno != ENOENT)
        {
          roce_error_sys (err, errno, "remove `%s/" RECORD_DIR "/%s`", state_dir, name);
          goto out;
        }
      ret = 0;
    }
  else
    ret = exec ? edit_process_file (a->process, &r, err) : 0;
out:
  if (found == 0)
    ret = 0;
  record_clear (&r);
  return ret;
}

int
shim_record_remove (const char *state_dir, const char *id, const struct file_ident *record,
                    const struct file_ident *rails, roce_error_t *err)
{
  cleanup_close int dirfd = -1;
  cleanup_free char *name = NULL;
  cleanup_free char *rname = NULL;

  if (! runtime_record_id_valid (id))
    return 0;
  {
    cleanup_error roce_error_t derr = NULL;
    dirfd = runtime_record_dir (state_dir, false, &derr);
    if (dirfd < 0)
      return 0; /* no directory, no record (or one prepare refused) */
  }
  name = xasprintf ("%s.json", id);
  rname = xasprintf ("%s" RAILS_SUFFIX, id);
  if (unlink_if_same (dirfd, name, record, err) < 0
      || unlink_if_same (dirfd, rname, rails, err) < 0)
    return roce_error_wrap (err, "remove from `%s/" RECORD_DIR "`", state_dir);
  return 0;
}

int
shim_rails_write (const char *state_dir, const char *id, const char *text, char **path,
                  struct file_ident *written, roce_error_t *err)
{
  cleanup_close int dirfd = -1;
  cleanup_close int fd = -1;
  cleanup_free char *name = NULL;

  if (! runtime_record_id_valid (id))
    return roce_error_make (err, EINVAL, "rails file: an id that cannot name a record");
  dirfd = runtime_record_dir (state_dir, true, err);
  if (dirfd < 0)
    return -1;
  name = xasprintf ("%s" RAILS_SUFFIX, id);
  /* A file of an earlier container of the id (a run that was killed): ours
   * from here on.  */
  if (unlinkat (dirfd, name, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/" RECORD_DIR "/%s`", state_dir, name);
  fd = openat (dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0)
    return roce_error_sys (err, errno, "create `%s/" RECORD_DIR "/%s`", state_dir, name);
  if (write_all_fd (fd, text, strlen (text), err) < 0)
    {
      unlinkat (dirfd, name, 0);
      return roce_error_wrap (err, "`%s/" RECORD_DIR "/%s`", state_dir, name);
    }
  if (written)
    file_ident_of (fd, written);
  *path = xasprintf ("%s/" RECORD_DIR "/%s", state_dir, name);
  return 0;
}
