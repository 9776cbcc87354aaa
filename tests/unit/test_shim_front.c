/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime's front (shim/front.c): which calls it hands straight to
 * the runtime, and that every call the engine has anything to do for, or
 * any doubt, goes to the engine.  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "shim.h"
#include "unit.h"

TestSuite (shim_front, .init = tree_setup, .fini = tree_teardown);

static char *policy_path;

/* A policy whose runtime is /bin/true and whose state is in the tree, a
 * plain bundle and an annotated one.  */
static void
host (const char *runtime)
{
  cleanup_free char *text = xasprintf ("{\"state_dir\":\"%s/state\",%s%s%s"
                                       "\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.10.0/"
                                       "24\",\"pool\":\"198.18.10.10-198.18.10.20\"}}}",
                                       tree_root, runtime ? "\"runtime\":\"" : "",
                                       runtime ? runtime : "", runtime ? "\"," : "");
  tree_mk ("policy.json", text);
  free (policy_path);
  policy_path = xasprintf ("%s/policy.json", tree_root);
  tree_mk ("plain/config.json",
           "{\"ociVersion\":\"1.0.2\",\"annotations\":{\"io.x\":\"roce.io/hc\"}}");
  tree_mk ("ann/config.json", "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}");
  /* The key spelled with an escape: json_scan's to judge, so the engine's. */
  tree_mk ("escaped/config.json", "{\"annotations\":{\"roce.io\\/hca\":\"mlx5_0\"}}");
}

/* Whether argv (NULL-terminated, {bundle} replaced by the tree's dir of
 * that name) goes straight to the runtime; *runtime then says which.  */
static bool
passes (const char *const *args, char **runtime)
{
  char *argv[16];
  size_t n = 0;
  cleanup_strv char **own = xmalloc0 (16 * sizeof (char *));
  for (; args[n]; n++)
    {
      const char *t = strstr (args[n], "T/");
      own[n] = t && (t == args[n] || t[-1] == '=')
                   ? xasprintf ("%.*s%s/%s", (int) (t - args[n]), args[n], tree_root, t + 2)
                   : xstrdup (args[n]);
      argv[n] = own[n];
    }
  argv[n] = NULL;
  return shim_front_passes ((int) n, argv, policy_path, runtime);
}

static void
assert_passes (const char *const *args, const char *want)
{
  cleanup_free char *runtime = NULL;
  cr_assert (passes (args, &runtime), "%s %s: expected straight to the runtime", args[1], args[2]);
  cr_assert_str_eq (runtime, want);
}

static void
assert_engine (const char *const *args)
{
  cleanup_free char *runtime = NULL;
  cr_assert_not (passes (args, &runtime), "%s %s: expected the engine", args[1], args[2]);
  cr_assert_null (runtime);
}

static void
record (const char *id)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *state = xasprintf ("%s/state", tree_root);
  cleanup_free char *bundle = xasprintf ("%s/ann", tree_root);
  struct shim_record r = { .root = "",
                           .bundle = bundle,
                           .memlock = 4194304,
                           .nccl_ib_hca = "mlx5_0",
                           .nccl_ib_tc = "106",
                           .nccl_ib_addr_range = "198.18.10.0/24" };
  cr_assert_eq (shim_record_write (state, id, &r, NULL, &err), 0, "%s", err ? err->msg : "");
}

Test (shim_front, plain_calls_go_straight_to_the_policy_runtime)
{
  host ("/bin/true");
  assert_passes (
      (const char *[]){ "r", "--root", "/run/r", "create", "--bundle", "T/plain", "c1", NULL },
      "/bin/true");
  assert_passes ((const char *[]){ "r", "run", "-b", "T/plain", "-d", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "start", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "state", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "kill", "c1", "9", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "delete", "--force", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "exec", "-p", "/nonexistent", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "--version", NULL }, "/bin/true");
  /* A state dir that exists, with other containers' records.  */
  record ("other");
  assert_passes ((const char *[]){ "r", "delete", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "create", "-b", "T/plain", "c1", NULL }, "/bin/true");
}

/* A config.json the runtime cannot read either (no bundle, a dangling link,
 * a directory) is the runtime's to refuse; one behind a link is looked at
 * as the runtime reads it: plain, the runtime's; asking, the engine's,
 * which refuses it.  */
Test (shim_front, links_are_looked_through_and_the_unreadable_is_the_runtimes)
{
  cleanup_free char *dangling = xasprintf ("%s/dangling/config.json", tree_root);
  cleanup_free char *plain = xasprintf ("%s/plainlink/config.json", tree_root);
  cleanup_free char *ann = xasprintf ("%s/annlink/config.json", tree_root);
  cleanup_free char *ann_target = xasprintf ("%s/ann/config.json", tree_root);
  host ("/bin/true");
  tree_mk ("dangling/x", NULL);
  tree_mk ("plainlink/x", NULL);
  tree_mk ("annlink/x", NULL);
  tree_mk ("dir/config.json/x", "");
  cr_assert_eq (symlink ("nowhere.json", dangling), 0);
  cr_assert_eq (symlink ("../plain/config.json", plain), 0);
  cr_assert_eq (symlink (ann_target, ann), 0);
  assert_passes ((const char *[]){ "r", "create", "--bundle", "T/none", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "create", "--bundle", "T/dangling", "c1", NULL },
                 "/bin/true");
  assert_passes ((const char *[]){ "r", "create", "--bundle", "T/dir", "c1", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "run", "--bundle", "T/plainlink", "c1", NULL },
                 "/bin/true");
  assert_engine ((const char *[]){ "r", "create", "--bundle", "T/annlink", "c1", NULL });
}

Test (shim_front, a_bare_runtime_name_is_found_where_the_engine_finds_it)
{
  cleanup_free char *want = NULL;
  char *c[] = { "true", NULL };
  host ("true");
  cr_assert_eq (runtime_find (c, false, &want, NULL, &(roce_error_t){ NULL }), 0);
  assert_passes ((const char *[]){ "r", "state", "c1", NULL }, want);
}

Test (shim_front, everything_the_engine_has_work_for_goes_to_it)
{
  host ("/bin/true");
  /* A spec that asks, or might (an escape json_scan must judge).  */
  assert_engine ((const char *[]){ "r", "create", "--bundle", "T/ann", "c1", NULL });
  assert_engine ((const char *[]){ "r", "run", "--bundle=T/escaped", "c1", NULL });
  /* A record of the id: exec with a process file, delete, a create that
   * may have to drop it.  */
  record ("c2");
  assert_engine ((const char *[]){ "r", "exec", "--process", "/p.json", "c2", NULL });
  assert_engine ((const char *[]){ "r", "delete", "c2", NULL });
  assert_engine ((const char *[]){ "r", "create", "-b", "T/plain", "c2", NULL });
  /* exec without a process file, start, kill: nothing to give.  */
  assert_passes ((const char *[]){ "r", "exec", "c2", "sh", NULL }, "/bin/true");
  assert_passes ((const char *[]){ "r", "start", "c2", NULL }, "/bin/true");
  /* Only a rails file left (a delete removes it).  */
  tree_mk ("state/shim/c3.rails", "mlx5_0 198.18.10.10/24\n");
  assert_engine ((const char *[]){ "r", "delete", "c3", NULL });
  assert_passes ((const char *[]){ "r", "exec", "-p", "/p.json", "c3", NULL }, "/bin/true");
}

Test (shim_front, any_doubt_goes_to_the_engine)
{
  host ("/bin/true");
  /* A config.json the shim refuses to look at (a FIFO; never opened).  */
  tree_mk ("fifo/x", NULL);
  cleanup_free char *fifo = xasprintf ("%s/fifo/config.json", tree_root);
  cr_assert_eq (mkfifo (fifo, 0644), 0);
  assert_engine ((const char *[]){ "r", "create", "--bundle", "T/fifo", "c1", NULL });
  /* A command line it cannot read.  */
  assert_engine ((const char *[]){ "r", "--root", NULL });
  assert_engine ((const char *[]){ "r", "create", "--bundle", NULL });
  /* A record directory the engine distrusts (it warns of it).  */
  tree_mk ("state/shim/x", "");
  cleanup_free char *shimdir = xasprintf ("%s/state/shim", tree_root);
  cr_assert_eq (chmod (shimdir, 0777), 0);
  assert_engine ((const char *[]){ "r", "delete", "c1", NULL });
  cr_assert_eq (chmod (shimdir, 0700), 0);
  assert_passes ((const char *[]){ "r", "delete", "c1", NULL }, "/bin/true");
  /* A record name that is not a plain file still counts.  */
  tree_mk ("state/shim/c4.json/x", "");
  assert_engine ((const char *[]){ "r", "delete", "c4", NULL });
  /* A runtime it cannot use (the engine says why).  */
  host ("/nonexistent/runc");
  assert_engine ((const char *[]){ "r", "state", "c1", NULL });
  host ("runc-that-is-nowhere");
  assert_engine ((const char *[]){ "r", "state", "c1", NULL });
  /* A policy that does not load (the engine warns, and finds runc).  */
  tree_mk ("policy.json", "{\"hcas\":");
  assert_engine ((const char *[]){ "r", "state", "c1", NULL });
  free (policy_path);
  policy_path = xasprintf ("%s/nonexistent.json", tree_root);
  assert_engine ((const char *[]){ "r", "state", "c1", NULL });
}

Test (shim_front, roce_runtime_is_never_its_own_runtime)
{
  /* The front and the engine beside this program both count as itself.  */
  cleanup_free char *engine = self_beside (ROCE_PROG_RUNTIME_ENGINE);
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *out = NULL;
  if (access (engine, X_OK) < 0)
    cr_skip_test ("no %s beside the unit tests", engine);
  char *c[] = { engine, NULL };
  assert_err_contains (runtime_find (c, false, &out, NULL, &err), err, "roce-runtime itself");
  host (engine);
  assert_engine ((const char *[]){ "r", "state", "c1", NULL });
}
