/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime: its command lines, its edits of the spec, its seed defaults,
 * and config.json written for the runtime and put back.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "probe/seed.h"
#include "shim.h"
#include "unit.h"

Test (shim_args, containerd_create)
{
  const char *argv[] = { "roce-runtime",
                         "--root",
                         "/run/containerd/runc/k8s.io",
                         "--log",
                         "/run/x/log.json",
                         "--log-format",
                         "json",
                         "--systemd-cgroup",
                         "create",
                         "--bundle",
                         "/run/b",
                         "--pid-file",
                         "/run/b/init.pid",
                         "ctr-1",
                         NULL };
  struct shim_args a = shim_parse_ok (argv);
  cr_assert_str_eq (a.cmd, "create");
  cr_assert (a.edits_bundle);
  cr_assert_str_eq (a.bundle, "/run/b");
  cr_assert_str_eq (a.id, "ctr-1");
  cr_assert_str_eq (a.log_path, "/run/x/log.json");
  cr_assert (a.log_json);
}

Test (shim_args, equals_forms_and_short_bundle)
{
  const char *argv[]
      = { "r",   "--root=/x", "--log-format=text", "run", "-d", "-b=/b2", "--console-socket", "/s",
          "id2", NULL };
  struct shim_args a = shim_parse_ok (argv);
  cr_assert_str_eq (a.cmd, "run");
  cr_assert_str_eq (a.bundle, "/b2");
  cr_assert_str_eq (a.id, "id2");
  cr_assert_not (a.log_json);
  cr_assert (a.detach);
  cr_assert_not (shim_runs_foreground (&a));
  const char *argv2[] = { "r", "create", "-b", "/b3", "id3", NULL };
  a = shim_parse_ok (argv2);
  cr_assert_str_eq (a.bundle, "/b3");
  cr_assert_str_eq (a.id, "id3");
  cr_assert_not (shim_runs_foreground (&a));
  /* A foreground run, with --detach=false as urfave/cli takes it; an id that
   * cannot name a record is the runtime's to refuse (the shim execs it).  */
  const char *argv3[] = { "r", "run", "--detach=false", "id5", NULL };
  a = shim_parse_ok (argv3);
  cr_assert_not (a.detach);
  cr_assert (shim_runs_foreground (&a));
  const char *argv4[] = { "r", "run", "../x", NULL };
  a = shim_parse_ok (argv4);
  cr_assert_not (shim_runs_foreground (&a));
}

Test (shim_args, bundle_defaults_to_cwd_and_other_commands_pass)
{
  const char *argv[] = { "r", "run", "id4", NULL };
  struct shim_args a = shim_parse_ok (argv);
  cr_assert_null (a.bundle);
  cr_assert_str_eq (a.id, "id4");
  const char *argv2[] = { "r", "--root", "/x", "delete", "--force", "id5", NULL };
  a = shim_parse_ok (argv2);
  cr_assert_str_eq (a.cmd, "delete");
  cr_assert_not (a.edits_bundle);
  const char *argv3[] = { "r", "--version", NULL };
  a = shim_parse_ok (argv3);
  cr_assert_null (a.cmd);
}

Test (shim_args, missing_value)
{
  cleanup_error roce_error_t err = NULL;
  struct shim_args a;
  char *argv[] = { "r", "create", "--bundle", NULL };
  assert_err_contains (shim_parse_argv (3, argv, &a, &err), err, "`--bundle` needs a value");
}

static const struct shim_device devs[]
    = { { "/dev/infiniband/uverbs0", 231, 192 }, { "/dev/infiniband/rdma_cm", 10, 58 } };
static const struct shim_edit edit = {
  .hook_path = "/usr/local/bin/roce-hook",
  .policy_path = "/etc/roce-hook/config.json",
  .hook_stage = "createRuntime",
  .memlock_unlimited = true,
  .devices = devs,
  .n_devices = 2,
  .nccl_ib_hca = "mlx5_0",
  .nccl_ib_tc = "106",
  .nccl_ib_addr_range = "198.18.10.0/24",
};

static char *
edited (const char *in, const struct shim_edit *e)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_json struct json *j = NULL;
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const char *b;
  size_t l;
  cr_assert_eq (json_parse (in, &j, &err), 0);
  cr_assert_eq (shim_edit_config (j, e, &err), 0, "%s", err ? err->msg : "");
  json_gen_tree (g, j);
  cr_assert_eq (json_gen_result (g, &b, &l, &err), 0);
  return xstrndup (b, l);
}

static int
count (const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = hay; (p = strstr (p, needle)) != NULL; p++)
    n++;
  return n;
}

Test (shim_edit, adds_everything_and_keeps_unknown_members)
{
  const char *in
      = "{\"ociVersion\":\"1.0.2\",\"x-vendor\":{\"keep\":[1,2.5,\"s\"]},"
        "\"process\":{\"env\":[\"NCCL_IB_TC=96\"],\"capabilities\":{\"bounding\":[\"CAP_KILL\"]},"
        "\"rlimits\":[{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":65536,\"soft\":65536}]},"
        "\"root\":{\"path\":\"rootfs\"},\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,"
        "\"access\":\"rwm\"}]}}}";
  cleanup_free char *out = edited (in, &edit);
  cr_assert_not_null (strstr (out, "\"x-vendor\":{\"keep\":[1,2.5,\"s\"]}"), "%s", out);
  cr_assert_not_null (strstr (out, "\"createRuntime\":[{\"path\":\"/usr/local/bin/"
                                   "roce-hook\",\"args\":[\"roce-hook\",\"--config\",\"/etc/"
                                   "roce-hook/config.json\",\"createRuntime\"],\"env\":["),
                      "%s", out);
  cr_assert_not_null (strstr (out, "\"poststop\":[{\"path\":\"/usr/local/bin/roce-hook\""), "%s",
                      out);
  cr_assert_not_null (strstr (out, "\"bounding\":[\"CAP_KILL\",\"CAP_IPC_LOCK\"]"), "%s", out);
  cr_assert_not_null (strstr (out, "\"effective\":[\"CAP_IPC_LOCK\"]"), "%s", out);
  cr_assert_not_null (strstr (out, "\"permitted\":[\"CAP_IPC_LOCK\"]"), "%s", out);
  cr_assert_not_null (strstr (out, "{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,"
                                   "\"soft\":18446744073709551615}"),
                      "%s", out);
  cr_assert_eq (count (out, "RLIMIT_MEMLOCK"), 1);
  cr_assert_not_null (
      strstr (out, "\"devices\":[{\"path\":\"/dev/infiniband/"
                   "uverbs0\",\"type\":\"c\",\"major\":231,\"minor\":192,\"fileMode\":438,\"uid\":"
                   "0,\"gid\":0},{\"path\":\"/dev/infiniband/rdma_cm\""),
      "%s", out);
  cr_assert_not_null (
      strstr (out, "[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":"
                   "231,\"minor\":192,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":"
                   "10,\"minor\":58,\"access\":\"rwm\"}]"),
      "%s", out);
  /* The user's NCCL_IB_TC is kept; the others are added.  */
  cr_assert_not_null (strstr (out, "\"env\":[\"NCCL_IB_TC=96\",\"NCCL_IB_HCA=mlx5_0\",\"NCCL_IB_"
                                   "ADDR_RANGE=198.18.10.0/24\"]"),
                      "%s", out);
}

Test (shim_edit, is_idempotent)
{
  const char *in = "{\"root\":{\"path\":\"r\"}}";
  cleanup_free char *once = edited (in, &edit);
  cleanup_free char *twice = edited (once, &edit);
  cr_assert_str_eq (once, twice);
}

/* The network the shim made: the namespace named by path, the rails file
 * bound read-only (one entry, however often), no start hook; a foreground
 * run has no poststop hook either.  */
Test (shim_edit, the_shims_own_network)
{
  const char *in
      = "{\"mounts\":[{\"destination\":\"/dev/roce/rails\",\"type\":\"bind\",\"source\":\"/old\"}],"
        "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"}]}}";
  struct shim_edit e = edit;
  e.no_start_hook = true;
  e.no_poststop = true;
  e.netns_path = "/proc/42/fd/5";
  e.rails_source = "/var/lib/roce-hook/shim/c1.rails";
  cleanup_free char *out = edited (in, &e);
  cleanup_free char *twice = edited (out, &e);
  cr_assert_not_null (
      strstr (
          out,
          "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/42/fd/5\"}]"),
      "%s", out);
  cr_assert_not_null (
      strstr (
          out,
          "{\"destination\":\"/dev/roce/rails\",\"type\":\"bind\",\"source\":\"/var/lib/roce-hook/"
          "shim/c1.rails\",\"options\":[\"bind\",\"ro\",\"nosuid\",\"nodev\",\"noexec\"]}"),
      "%s", out);
  cr_assert_eq (count (out, "/dev/roce/rails"), 1, "%s", out);
  cr_assert_null (strstr (out, "roce-hook\""), "%s", out);
  cr_assert_null (strstr (out, "createRuntime"), "%s", out);
  cr_assert_null (strstr (out, "poststop"), "%s", out);
  cr_assert_str_eq (out, twice);
  /* A killed shim's path: gone when the shim makes the network again (the
   * pass for after the runtime has none), replaced by the new one.  */
  {
    struct shim_edit after = e;
    after.netns_path = NULL;
    after.rails_source = NULL;
    cleanup_free char *clean = edited (out, &after);
    cr_assert_not_null (strstr (clean, "{\"type\":\"network\"}"), "%s", clean);
    e.netns_path = "/proc/43/fd/6";
    cleanup_free char *again = edited (out, &e);
    cr_assert_not_null (strstr (again, "{\"type\":\"network\",\"path\":\"/proc/43/fd/6\"}"), "%s",
                        again);
    e.netns_path = "/proc/42/fd/5";
  }
  cr_assert (shim_netns_path_is_shims ("/proc/1/fd/3"));
  cr_assert_not (shim_netns_path_is_shims ("/proc/1/ns/net"));
  cr_assert_not (shim_netns_path_is_shims ("/proc/self/fd/3"));
  cr_assert_not (shim_netns_path_is_shims ("/proc/1/fd/3/x"));
  cr_assert_not (shim_netns_path_is_shims ("/var/run/netns/cni-1"));
  cr_assert_not (shim_netns_path_is_shims (NULL));
  /* A spec without a network namespace to name: an error, not a guess.  */
  {
    cleanup_error roce_error_t err = NULL;
    cleanup_json struct json *j = NULL;
    cr_assert_eq (json_parse ("{\"linux\":{\"namespaces\":[{\"type\":\"pid\"}]}}", &j, &err), 0);
    assert_err_contains (shim_edit_config (j, &e, &err), err, "no network namespace");
  }
}

Test (shim_edit, byte_count_memlock)
{
  struct shim_edit e = edit;
  e.memlock_unlimited = false;
  e.memlock = 1048576;
  cleanup_free char *out = edited ("{}", &e);
  cr_assert_not_null (
      strstr (out, "{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":1048576,\"soft\":1048576}"), "%s", out);
}

Test (shim_edit, refuses_wrong_types_and_foreign_node_numbers)
{
  struct
  {
    const char *in, *msg;
  } cases[] = {
    { "[]", "expected an object" },
    { "{\"process\":[]}", "config.json: process: expected an object, found an array" },
    { "{\"process\":{\"env\":\"A=1\"}}", "config.json: process.env: expected an array" },
    { "{\"hooks\":{\"poststop\":{}}}", "config.json: hooks.poststop: expected an array" },
    { "{\"linux\":{\"devices\":[{\"path\":\"/dev/infiniband/uverbs0\",\"major\":1,\"minor\":3}]}}",
      "config.json linux.devices: the host's 231:192 vs /dev/infiniband/uverbs0" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_json struct json *j = NULL;
      cr_assert_eq (json_parse (cases[i].in, &j, &err), 0);
      assert_err_contains (shim_edit_config (j, &edit, &err), err, cases[i].msg);
    }
}

/* A bare name in the policy is found on a fixed PATH, never the caller's;
 * every refusal is the one-line contract.  */
Test (shim, runtime_names_resolve_on_a_safe_path)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *rt = NULL;
  char *sh[] = { "sh", NULL };
  char *missing[] = { "no-such-runtime-x", NULL };
  char *relative[] = { "bin/runc", NULL };
  setenv ("PATH", "/nonexistent", 1);
  cr_assert_eq (runtime_find (sh, false, &rt, NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert (strcmp (rt, "/usr/bin/sh") == 0 || strcmp (rt, "/bin/sh") == 0, "%s", rt);
  free (steal_pointer (&rt));
  assert_err_contains (runtime_find (missing, false, &rt, NULL, &err), err,
                       "policy runtime `no-such-runtime-x`: an executable in /usr/local/sbin");
  cr_assert_not_null (strstr (err->msg, "(fix: "));
  roce_error_release (&err);
  assert_err_contains (runtime_find (relative, false, &rt, NULL, &err), err,
                       "an absolute path or a bare name vs a relative path (fix: ");
}

/* The policy's candidates in order: the first installed is used (the GPU
 * operator's path first, a package's after); none installed refuses a
 * create, while every other call (state, kill, delete) falls back to runc
 * or crun: a missing chained runtime never wedges a container's stop.  */
Test (shim, runtime_candidates_first_installed_and_the_fallback)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *rt = NULL;
  cleanup_free char *dir = xstrdup ("/tmp/roce-rt-XXXXXX");
  cleanup_free char *fake = NULL;
  cleanup_free char *gone = NULL;
  cleanup_free char *runc = NULL;
  struct runtime_how how;
  FILE *f;

  cr_assert_not_null (mkdtemp (dir));
  fake = xasprintf ("%s/nvidia-container-runtime", dir);
  gone = xasprintf ("%s/toolkit/nvidia-container-runtime", dir);
  runc = xasprintf ("%s/runc", dir);
  f = fopen (fake, "w");
  cr_assert_not_null (f);
  fputs ("#!/bin/sh\n", f);
  fclose (f);
  cr_assert_eq (chmod (fake, 0755), 0);
  f = fopen (runc, "w");
  fputs ("#!/bin/sh\n", f);
  fclose (f);
  cr_assert_eq (chmod (runc, 0755), 0);
  setenv ("PATH", dir, 1);

  {
    char *c[] = { gone, fake, NULL };
    cr_assert_eq (runtime_find (c, false, &rt, &how, &err), 0, "%s", err ? err->msg : "");
    cr_assert_str_eq (rt, fake);
    cr_assert_eq (how.candidate, 1);
    cr_assert (! how.fallback);
    free (steal_pointer (&rt));
  }
  {
    char *c[] = { gone, "no-such-runtime-x", NULL };
    assert_err_contains (runtime_find (c, false, &rt, &how, &err), err, "policy runtime: one of `");
    cr_assert_not_null (
        strstr (err->msg, "`, `no-such-runtime-x` installed vs none of them (fix: "), "%s",
        err->msg);
    roce_error_release (&err);
    /* state/kill/delete: runc on PATH answers.  */
    cr_assert_eq (runtime_find (c, true, &rt, &how, &err), 0, "%s", err ? err->msg : "");
    cr_assert_str_eq (rt, runc);
    cr_assert (how.fallback);
    cr_assert_eq (how.candidate, -1);
    free (steal_pointer (&rt));
  }
  /* No runtime in the policy: runc from PATH, as before (not a fallback). */
  cr_assert_eq (runtime_find (NULL, false, &rt, &how, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (rt, runc);
  cr_assert (! how.fallback);
  unlink (fake);
  unlink (runc);
  rmdir (dir);
}

/* ---- the rest of the seed's `docker run` --------------------------------------- */

static struct shim_edit
seed_edit (void)
{
  struct shim_edit e = edit;
  e.nccl_ib_sl = "3";
  e.stack = 67108864;
  e.shm_size = 1073741824;
  return e;
}

static const char *const runtime_shm
    = "{\"destination\":\"/dev/shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":"
      "[\"nosuid\",\"noexec\",\"nodev\",\"mode=1777\",\"size=65536k\"]}";

Test (shim_seed, stack_shm_and_sl_where_the_spec_sets_nothing)
{
  struct shim_edit e = seed_edit ();
  cleanup_free char *in = xasprintf ("{\"root\":{\"path\":\"r\"},\"mounts\":[{\"destination\":"
                                     "\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},%s]}",
                                     runtime_shm);
  cleanup_free char *out = edited (in, &e);
  cleanup_free char *bare = edited ("{}", &e);
  cleanup_free char *twice = edited (out, &e);
  cr_assert_not_null (
      strstr (out, "{\"type\":\"RLIMIT_STACK\",\"hard\":67108864,\"soft\":67108864}"), "%s", out);
  /* The runtimes' default 64 MiB counts as unset: NCCL's shm transport
   * fails in it.  */
  cr_assert_not_null (
      strstr (out,
              "\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"mode=1777\",\"size=1073741824\"]"),
      "%s", out);
  cr_assert_eq (count (out, "/dev/shm"), 1, "%s", out);
  cr_assert_not_null (strstr (out, "\"NCCL_IB_SL=3\""), "%s", out);
  /* A spec without /dev/shm gets one.  */
  cr_assert_not_null (strstr (bare,
                              "\"mounts\":[{\"destination\":\"/dev/"
                              "shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"nosuid\","
                              "\"noexec\",\"nodev\",\"mode=1777\",\"size=1073741824\"]}]"),
                      "%s", bare);
  cr_assert_str_eq (out, twice);
  e.stack_unlimited = true;
  free (bare);
  bare = edited ("{}", &e);
  cr_assert_not_null (strstr (bare, "{\"type\":\"RLIMIT_STACK\",\"hard\":18446744073709551615,"
                                    "\"soft\":18446744073709551615}"),
                      "%s", bare);
}

Test (shim_seed, the_users_own_values_are_kept)
{
  struct shim_edit e = seed_edit ();
  const char *in
      = "{\"process\":{\"env\":[\"NCCL_IB_SL=5\"],\"rlimits\":[{\"type\":\"RLIMIT_STACK\","
        "\"hard\":8388608,\"soft\":8388608}]},\"mounts\":[{\"destination\":\"/dev/shm\","
        "\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"size=256m\"]}]}";
  const char *bind = "{\"mounts\":[{\"destination\":\"/dev/shm\",\"type\":\"bind\",\"source\":"
                     "\"/run/pod/shm\",\"options\":[\"rbind\"]}]}";
  const char *nosize = "{\"mounts\":[{\"destination\":\"/dev/shm\",\"type\":\"tmpfs\","
                       "\"source\":\"shm\",\"options\":[\"nosuid\"]}]}";
  cleanup_free char *out = edited (in, &e);
  cleanup_free char *b = edited (bind, &e);
  cleanup_free char *n = edited (nosize, &e);
  cr_assert_not_null (strstr (out, "\"rlimits\":[{\"type\":\"RLIMIT_STACK\",\"hard\":8388608,"
                                   "\"soft\":8388608},{\"type\":\"RLIMIT_MEMLOCK\""),
                      "%s", out);
  cr_assert_eq (count (out, "RLIMIT_STACK"), 1);
  cr_assert_not_null (strstr (out, "\"options\":[\"size=256m\"]"), "%s", out);
  cr_assert_not_null (strstr (out, "\"NCCL_IB_SL=5\""), "%s", out);
  cr_assert_eq (count (out, "NCCL_IB_SL"), 1);
  cr_assert_not_null (
      strstr (b, "\"type\":\"bind\",\"source\":\"/run/pod/shm\",\"options\":[\"rbind\"]}]"), "%s",
      b);
  cr_assert_eq (count (b, "/dev/shm"), 1);
  cr_assert_not_null (strstr (n, "\"options\":[\"nosuid\"]}]"), "%s", n);
}

Test (shim_seed, tmpfs_sizes)
{
  uint64_t v = 0;
  cr_assert_eq (tmpfs_size_parse ("65536k", &v), 0);
  cr_assert_eq (v, 64ull << 20);
  cr_assert_eq (tmpfs_size_parse ("64m", &v), 0);
  cr_assert_eq (v, 64ull << 20);
  cr_assert_eq (tmpfs_size_parse ("67108864", &v), 0);
  cr_assert_eq (v, 64ull << 20);
  cr_assert_eq (tmpfs_size_parse ("2G", &v), 0);
  cr_assert_eq (v, 2ull << 30);
  cr_assert_lt (tmpfs_size_parse ("50%", &v), 0);
  cr_assert_lt (tmpfs_size_parse ("k", &v), 0);
  cr_assert_lt (tmpfs_size_parse ("1kk", &v), 0);
  cr_assert_lt (tmpfs_size_parse ("99999999999999999999999", &v), 0);
}

/* The quick "not ours" of a config.json: the key spelled with escapes still
 * counts, the bytes of the key elsewhere do not.  */
Test (shim, config_asks_only_for_its_annotation_however_spelled)
{
  static const struct
  {
    const char *json;
    bool asks;
  } cases[] = {
    { "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}", true },
    { "{\"annotations\":{\"roce.io\\/hca\":\"mlx5_0\"}}", true },
    { "{\"annotations\":{\"\\u0072oce.io/hca\":\"mlx5_0\"}}", true },
    { "{\"process\":{\"env\":[\"A=\\\"b\\\"\"]},\"annotations\":{\"roce.io/hca\":\"x\"}}", true },
    { "{\"annotations\":{\"io.kubernetes.pod\":\"p\"}}", false },
    { "{\"annotations\":{},\"process\":{\"env\":[\"K=roce.io/hca\"]}}", false },
    { "{\"annotations\":{},\"process\":{\"env\":[\"K=\\u0026\"]}}", false },
    { "{\"annotations\":{\"roce.io/ip\":\"198.18.10.5\"}}", false },
    { "", false },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    cr_assert_eq (shim_config_asks (cases[i].json, strlen (cases[i].json)), cases[i].asks, "%s",
                  cases[i].json);
}

/* ---- config.json written for the runtime and put back (shim/edit.c, shim/start.c) ---- */

TestSuite (shim_config, .init = tree_setup, .fini = tree_teardown);

static char *
config_now (void)
{
  cleanup_error roce_error_t err = NULL;
  char *buf = NULL;
  size_t len = 0;
  cleanup_free char *path = xasprintf ("%s/config.json", tree_root);
  cr_assert_eq (read_file_at (AT_FDCWD, path, 65536, &buf, &len, &err), 0, "%s",
                err ? err->msg : "");
  return buf;
}

static void
assert_config_is (const char *want)
{
  cleanup_free char *now = config_now ();
  cr_assert_str_eq (now, want);
}

static ino_t
config_ino (void)
{
  struct stat st;
  cleanup_free char *path = xasprintf ("%s/config.json", tree_root);
  cr_assert_eq (stat (path, &st), 0);
  return st.st_ino;
}

/* Entries of the bundle: only config.json is left.  */
static void
assert_only_config (void)
{
  cleanup_free char *out = NULL;
  DIR *d = opendir (tree_root);
  struct dirent *e;
  int n = 0;
  cr_assert_not_null (d);
  while ((e = readdir (d)))
    if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
      {
        cr_expect_str_eq (e->d_name, "config.json", "left in the bundle: %s", e->d_name);
        n++;
      }
  closedir (d);
  cr_assert_eq (n, 1);
}

/* The shim's start state after shim_write_config, as shim_prepare_bundle
 * keeps it.  */
static void
start_after_write (struct shim_start *s, const char *written, const char *original, char *aside)
{
  s->bundle = xstrdup (tree_root);
  s->config_written = xstrdup (written);
  s->written_len = strlen (written);
  s->config_aside = aside;
  if (original)
    {
      s->config_original = xstrdup (original);
      s->original_len = strlen (original);
    }
}

/* The caller's {"caller":1} (mode 0640), then the shim's {"shim":2}
 * exchanged with it; the caller's file's inode.  */
static ino_t
shim_wrote (struct shim_start *s)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *path = xasprintf ("%s/config.json", tree_root);
  char *aside = NULL;
  ino_t ino;
  tree_mk ("config.json", "{\"caller\":1}");
  cr_assert_eq (chmod (path, 0640), 0);
  ino = config_ino ();
  cr_assert_eq (shim_write_config (tree_root, "{\"shim\":2}", 10, &aside, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_not_null (aside, "this file system exchanges names");
  assert_config_is ("{\"shim\":2}");
  start_after_write (s, "{\"shim\":2}", NULL, aside);
  return ino;
}

Test (shim_config, exchanged_then_the_callers_file_back_as_it_was)
{
  struct shim_start s = SHIM_START_INIT;
  cleanup_free char *path = xasprintf ("%s/config.json", tree_root);
  ino_t ino = shim_wrote (&s);
  struct stat st;

  shim_start_after_runtime (&s);
  assert_config_is ("{\"caller\":1}");
  cr_assert_eq (config_ino (), ino, "the caller's own file, not a copy");
  cr_assert_eq (stat (path, &st), 0);
  cr_assert_eq (st.st_mode & 07777, 0640);
  assert_only_config ();
  cr_assert_null (s.bundle);
  shim_start_clear (&s);
}

Test (shim_config, a_file_somebody_else_wrote_since_is_kept)
{
  struct shim_start s = SHIM_START_INIT;

  shim_wrote (&s);
  tree_mk ("config.json", "{\"theirs\":3}");
  shim_start_after_runtime (&s);
  assert_config_is ("{\"theirs\":3}");
  assert_only_config ();
  shim_start_clear (&s);
}

Test (shim_config, a_config_removed_since_is_the_callers_again)
{
  struct shim_start s = SHIM_START_INIT;
  cleanup_free char *path = xasprintf ("%s/config.json", tree_root);

  shim_wrote (&s);
  cr_assert_eq (unlink (path), 0);
  shim_start_after_runtime (&s);
  assert_config_is ("{\"caller\":1}");
  assert_only_config ();
  shim_start_clear (&s);
}

/* A file system that cannot exchange two names (the kernel answers EINVAL,
 * as vfat or an older FUSE does): replaced, and the caller's bytes written
 * back.  */
Test (shim_config, without_exchange_the_callers_bytes_go_back)
{
  cleanup_error roce_error_t err = NULL;
  struct shim_start s = SHIM_START_INIT;
  char *aside = (char *) "unset";
  scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);

  cr_assert_not_null (ctx);
  cr_assert_eq (seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EINVAL), SCMP_SYS (renameat2), 0), 0);
  cr_assert_eq (seccomp_load (ctx), 0);
  seccomp_release (ctx);
  tree_mk ("config.json", "{\"caller\":1}");
  cr_assert_eq (shim_write_config (tree_root, "{\"shim\":2}", 10, &aside, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_null (aside);
  assert_config_is ("{\"shim\":2}");
  assert_only_config ();
  start_after_write (&s, "{\"shim\":2}", "{\"caller\":1}", NULL);
  shim_start_after_runtime (&s);
  assert_config_is ("{\"caller\":1}");
  assert_only_config ();
  shim_start_clear (&s);
}
