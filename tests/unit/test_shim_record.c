/* SPDX-License-Identifier: Apache-2.0 */
/* The shim's record of an annotated container and what `exec` and
 * `delete` do with it (shim/record.c), and their command lines.  */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "shim.h"
#include "unit.h"

Test (shim_args, containerd_exec_and_delete)
{
  const char *argv[] = { "r",
                         "--root",
                         "/run/containerd/runc/k8s.io",
                         "--log",
                         "/b/log.json",
                         "--log-format",
                         "json",
                         "exec",
                         "--process",
                         "/tmp/runc-process1",
                         "--detach",
                         "--pid-file",
                         "/b/x.pid",
                         "ctr-1",
                         NULL };
  struct shim_args a = shim_parse_ok (argv);
  cr_assert_str_eq (a.cmd, "exec");
  cr_assert_not (a.edits_bundle);
  cr_assert_str_eq (a.root, "/run/containerd/runc/k8s.io");
  cr_assert_str_eq (a.process, "/tmp/runc-process1");
  cr_assert_str_eq (a.id, "ctr-1");
  /* Short forms, valued options before the id, the command after it.  */
  const char *argv2[] = { "r",  "exec",    "-e",  "A=B", "--cwd=/",       "-u", "0",
                          "-p", "/p.json", "id2", "-p",  "not-an-option", NULL };
  a = shim_parse_ok (argv2);
  cr_assert_str_eq (a.process, "/p.json");
  cr_assert_str_eq (a.id, "id2");
  const char *argv3[] = { "r", "exec", "-t", "id3", "sh", "-c", "id", NULL };
  a = shim_parse_ok (argv3);
  cr_assert_null (a.process);
  cr_assert_str_eq (a.id, "id3");
  const char *argv4[] = { "r", "--root=/x", "delete", "-f", "id4", NULL };
  a = shim_parse_ok (argv4);
  cr_assert_str_eq (a.cmd, "delete");
  cr_assert_str_eq (a.root, "/x");
  cr_assert_str_eq (a.id, "id4");
}

Test (shim_record, ids)
{
  cr_assert (runtime_record_id_valid ("8aca9458f3e2"));
  cr_assert (runtime_record_id_valid ("rt-1_a+b.c"));
  cr_assert_not (runtime_record_id_valid (NULL));
  cr_assert_not (runtime_record_id_valid (""));
  cr_assert_not (runtime_record_id_valid ("."));
  cr_assert_not (runtime_record_id_valid (".."));
  cr_assert_not (runtime_record_id_valid (".hidden"));
  cr_assert_not (runtime_record_id_valid ("a/b"));
  cr_assert_not (runtime_record_id_valid ("a b"));
  cr_assert_not (runtime_record_id_valid ("a\n"));
  char longid[202];
  memset (longid, 'a', 201);
  longid[201] = '\0';
  cr_assert_not (runtime_record_id_valid (longid));
  longid[200] = '\0';
  cr_assert (runtime_record_id_valid (longid));
}

/* A state dir, a bundle whose config.json is annotated, a process file.  */
struct fixture
{
  char dir[64];
  char *state, *bundle, *process;
};

static void
fixture_make (struct fixture *f, const char *process_json)
{
  strcpy (f->dir, "/tmp/roce-unit-record.XXXXXX");
  tree_make (f->dir);
  f->state = xasprintf ("%s/state", f->dir);
  f->bundle = xasprintf ("%s/bundle", f->dir);
  f->process = xasprintf ("%s/process.json", f->dir);
  tree_write (f->dir, "bundle/config.json", "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}");
  tree_write (f->dir, "process.json", process_json);
}

static void
fixture_clear (struct fixture *f)
{
  tree_remove (f->dir);
  free (f->state);
  free (f->bundle);
  free (f->process);
}

static void
record (const struct fixture *f, const char *root, const char *id)
{
  cleanup_error roce_error_t err = NULL;
  struct shim_record r = { .root = root,
                           .bundle = f->bundle,
                           .memlock = 4194304,
                           .nccl_ib_hca = "mlx5_0",
                           .nccl_ib_tc = "106",
                           .nccl_ib_addr_range = "198.18.10.0/24",
                           .nccl_ib_sl = "3",
                           .stack = 67108864 };
  cr_assert_eq (shim_record_write (f->state, id, &r, NULL, &err), 0, "%s", err ? err->msg : "");
}

static char *
slurp (const char *path)
{
  cleanup_error roce_error_t err = NULL;
  char *buf = NULL;
  size_t len;
  cr_assert_eq (read_file_at (AT_FDCWD, path, 1 << 20, &buf, &len, &err), 0, "%s",
                err ? err->msg : "");
  return buf;
}

static int
prepare (const struct fixture *f, const char *cmd, const char *root, const char *id,
         roce_error_t *err)
{
  struct shim_args a = { .cmd = cmd, .root = root, .id = id, .process = f->process };
  return shim_prepare_process (&a, f->state, err);
}

static const char process_json[]
    = "{\"args\":[\"sh\"],\"env\":[\"PATH=/bin\",\"NCCL_IB_HCA=mlx5_1\"],\"user\":{\"uid\":0},"
      "\"capabilities\":{\"effective\":[\"CAP_KILL\"]},\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\","
      "\"hard\":1024,\"soft\":1024}]}";

Test (shim_record, exec_gets_what_the_container_got)
{
  cleanup_error roce_error_t err = NULL;
  struct fixture f;
  struct stat st;
  fixture_make (&f, process_json);
  record (&f, "/run/r", "c1");
  cleanup_free char *rec = xasprintf ("%s/shim/c1.json", f.state);
  cr_assert_eq (stat (rec, &st), 0);
  cr_assert_eq (st.st_mode & 07777, 0600);
  cr_assert_eq (prepare (&f, "exec", "/run/r", "c1", &err), 0, "%s", err ? err->msg : "");
  cleanup_free char *out = slurp (f.process);
  cr_assert_not_null (strstr (out, "\"effective\":[\"CAP_KILL\",\"CAP_IPC_LOCK\"]"), "%s", out);
  cr_assert_not_null (strstr (out, "\"bounding\":[\"CAP_IPC_LOCK\"]"), "%s", out);
  cr_assert_not_null (
      strstr (out, "{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":4194304,\"soft\":4194304}"), "%s", out);
  /* The user's own value stays; the others are added.  */
  cr_assert_not_null (strstr (out, "\"NCCL_IB_HCA=mlx5_1\""), "%s", out);
  cr_assert_null (strstr (out, "NCCL_IB_HCA=mlx5_0"), "%s", out);
  cr_assert_not_null (strstr (out, "\"NCCL_IB_TC=106\",\"NCCL_IB_ADDR_RANGE=198.18.10.0/24\""),
                      "%s", out);
  cr_assert_not_null (strstr (out, "\"args\":[\"sh\"]"), "%s", out);
  /* The rest of the seed's recipe, as the container's own process got it.  */
  cr_assert_not_null (strstr (out, "\"NCCL_IB_SL=3\""), "%s", out);
  cr_assert_not_null (
      strstr (out, "{\"type\":\"RLIMIT_STACK\",\"hard\":67108864,\"soft\":67108864}"), "%s", out);
  /* delete removes the record; a later exec of that id is left alone.  */
  cr_assert_eq (prepare (&f, "delete", "/run/r", "c1", &err), 0);
  cr_assert_neq (stat (rec, &st), 0);
  tree_write (f.dir, "process.json", process_json);
  cr_assert_eq (prepare (&f, "exec", "/run/r", "c1", &err), 0);
  cleanup_free char *after = slurp (f.process);
  cr_assert_str_eq (after, process_json);
  fixture_clear (&f);
}

Test (shim_record, other_roots_stale_records_and_plain_containers_are_left_alone)
{
  cleanup_error roce_error_t err = NULL;
  struct fixture f;
  struct stat st;
  fixture_make (&f, process_json);
  /* No record at all (the state dir does not even exist).  */
  cr_assert_eq (prepare (&f, "exec", "/run/r", "plain", &err), 0);
  cr_assert_neq (stat (f.state, &st), 0, "exec of a plain container made the state dir");
  /* Another runtime root's container with the same id.  */
  record (&f, "/run/other", "c2");
  cr_assert_eq (prepare (&f, "exec", "/run/r", "c2", &err), 0);
  cr_assert_eq (prepare (&f, "delete", "/run/r", "c2", &err), 0);
  cleanup_free char *rec = xasprintf ("%s/shim/c2.json", f.state);
  cr_assert_eq (stat (rec, &st), 0, "delete under another root removed the record");
  /* A record whose bundle no longer asks for RoCE (the id was reused by a
   * plain container after a delete that never came): dropped, not used. */
  tree_write (f.dir, "bundle/config.json", "{\"annotations\":{}}");
  cr_assert_eq (prepare (&f, "exec", "/run/other", "c2", &err), 0);
  cr_assert_neq (stat (rec, &st), 0, "the stale record stayed");
  cleanup_free char *out = slurp (f.process);
  cr_assert_str_eq (out, process_json);
  fixture_clear (&f);
}

/* `runc run` deletes its container itself (no delete through the shim):
 * the id's next create, of another bundle or a plain one, drops the record;
 * the create that wrote it keeps it.  */
Test (shim_record, a_create_for_another_bundle_drops_a_left_record)
{
  cleanup_error roce_error_t err = NULL;
  struct fixture f;
  struct stat st;
  fixture_make (&f, process_json);
  record (&f, "", "c6");
  cleanup_free char *rec = xasprintf ("%s/shim/c6.json", f.state);
  struct shim_args same = { .cmd = "create", .edits_bundle = true, .id = "c6", .bundle = f.bundle };
  cr_assert_eq (shim_prepare_process (&same, f.state, &err), 0);
  cr_assert_eq (stat (rec, &st), 0, "the create that wrote the record dropped it");
  tree_write (f.dir, "other/config.json", "{}");
  cleanup_free char *other = xasprintf ("%s/other", f.dir);
  struct shim_args plain = { .cmd = "run", .edits_bundle = true, .id = "c6", .bundle = other };
  cr_assert_eq (shim_prepare_process (&plain, f.state, &err), 0);
  cr_assert_neq (stat (rec, &st), 0, "a create for another bundle kept the record");
  /* The plain container's exec is left as it is.  */
  cr_assert_eq (prepare (&f, "exec", "", "c6", &err), 0);
  cleanup_free char *out = slurp (f.process);
  cr_assert_str_eq (out, process_json);
  /* A broken record is dropped by a create, refused by an exec.  */
  tree_write (f.state, "shim/c7.json", "{");
  assert_err_contains (prepare (&f, "exec", "", "c7", &err), err, "c7.json");
  roce_error_release (&err);
  struct shim_args c7 = { .cmd = "create", .edits_bundle = true, .id = "c7", .bundle = other };
  cr_assert_eq (shim_prepare_process (&c7, f.state, &err), 0);
  cleanup_free char *rec7 = xasprintf ("%s/shim/c7.json", f.state);
  cr_assert_neq (stat (rec7, &st), 0);
  fixture_clear (&f);
}

Test (shim_record, unlimited_memlock)
{
  cleanup_error roce_error_t err = NULL;
  struct fixture f;
  fixture_make (&f, process_json);
  struct shim_record r = { .root = "",
                           .bundle = f.bundle,
                           .memlock_unlimited = true,
                           .nccl_ib_hca = "mlx5_0",
                           .nccl_ib_tc = "106",
                           .nccl_ib_addr_range = "r" };
  cr_assert_eq (shim_record_write (f.state, "c8", &r, NULL, &err), 0);
  cr_assert_eq (prepare (&f, "exec", "", "c8", &err), 0, "%s", err ? err->msg : "");
  cleanup_free char *out = slurp (f.process);
  cr_assert_not_null (strstr (out, "{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,"
                                   "\"soft\":18446744073709551615}"),
                      "%s", out);
  fixture_clear (&f);
}

Test (shim_record, links_and_bad_files_are_refused)
{
  cleanup_error roce_error_t err = NULL;
  struct fixture f;
  fixture_make (&f, process_json);
  record (&f, "", "c3");
  /* A process file that is a symlink is not followed.  */
  cleanup_free char *target = xasprintf ("%s/elsewhere.json", f.dir);
  tree_write (f.dir, "elsewhere.json", process_json);
  cr_assert_eq (unlink (f.process), 0);
  cr_assert_eq (symlink (target, f.process), 0);
  assert_err_contains (prepare (&f, "exec", "", "c3", &err), err, "exec --process");
  roce_error_release (&err);
  cleanup_free char *kept = slurp (target);
  cr_assert_str_eq (kept, process_json);
  /* Nor is a record that is a symlink.  */
  cleanup_free char *rec = xasprintf ("%s/shim/c4.json", f.state);
  cr_assert_eq (symlink (target, rec), 0);
  cr_assert_lt (prepare (&f, "exec", "", "c4", &err), 0);
  roce_error_release (&err);
  /* A process file that is not a JSON object.  */
  cr_assert_eq (unlink (f.process), 0);
  tree_write (f.dir, "process.json", "[1]");
  assert_err_contains (prepare (&f, "exec", "", "c3", &err), err, "process: expected an object");
  roce_error_release (&err);
  /* A record whose memlock is neither a count nor "unlimited".  */
  cleanup_free char *bad
      = xasprintf ("{\"version\":1,\"id\":\"c5\",\"root\":\"\",\"bundle\":\"%s\","
                   "\"memlock\":-1,\"NCCL_IB_HCA\":\"a\",\"NCCL_IB_TC\":\"1\","
                   "\"NCCL_IB_ADDR_RANGE\":\"r\"}",
                   f.bundle);
  tree_write (f.state, "shim/c5.json", bad);
  assert_err_contains (prepare (&f, "exec", "", "c5", &err), err, "memlock");
  roce_error_release (&err);
  /* A state dir others can write: no record is trusted, and the exec of
   * whatever container passes untouched (annotated starts are refused).  */
  cr_assert_eq (chmod (f.state, 0777), 0);
  cr_assert_eq (prepare (&f, "exec", "", "c3", &err), 0);
  cleanup_free char *same = slurp (f.process);
  cr_assert_str_eq (same, "[1]");
  cr_assert_eq (chmod (f.state, 0755), 0);
  /* An id that cannot name a record is refused at create.  */
  struct shim_record r = {
    .root = "", .bundle = f.bundle, .nccl_ib_hca = "a", .nccl_ib_tc = "1", .nccl_ib_addr_range = "r"
  };
  assert_err_contains (shim_record_write (f.state, "../x", &r, NULL, &err), err, "container id");
  fixture_clear (&f);
}
