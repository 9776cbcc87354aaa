/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of oci (Criterion).  */
#include <fcntl.h>
#include <unistd.h>

#include "lib/utils.h"
#include "spec/oci.h"
#include "unit.h"

Test (oci_state, parses_runc_state)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_state struct oci_state *s = NULL;
  const char *in
      = "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"c1\",\"status\":\"created\",\"pid\":4242,"
        "\"bundle\":\"/run/b\",\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}";
  cr_assert_eq (oci_state_parse (in, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (s->id, "c1");
  cr_assert_eq (s->pid, 4242);
  cr_assert_str_eq (s->bundle, "/run/b");
  cr_assert (s->has_annotations);
  cr_assert_str_eq (roce_kv_get (s->annotations, s->n_annotations, "roce.io/hca"), "mlx5_0");
}

Test (oci_state, poststop_without_pid)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_state struct oci_state *s = NULL;
  cr_assert_eq (
      oci_state_parse ("{\"id\":\"c1\",\"bundle\":\"/b\",\"status\":\"stopped\"}", &s, &err), 0);
  cr_assert_eq (s->pid, 0);
  cr_assert_not (s->has_annotations);
}

Test (oci_state, refuses_wrong_types)
{
  struct
  {
    const char *in, *msg;
  } cases[] = {
    { "[]", "expected an object" },
    { "{\"bundle\":\"/b\"}", "id: missing" },
    { "{\"id\":5,\"bundle\":\"/b\"}", "id: expected a string, found a number" },
    { "{\"id\":\"a b\",\"bundle\":\"/b\"}", "not a valid container id" },
    { "{\"id\":\"../x\",\"bundle\":\"/b\"}", "not a valid container id" },
    { "{\"id\":\"c\",\"bundle\":\"rel\"}", "bundle: expected an absolute path" },
    { "{\"id\":\"c\",\"bundle\":\"/b\",\"pid\":\"12\"}", "pid: expected a process id" },
    { "{\"id\":\"c\",\"bundle\":\"/b\",\"pid\":-1}", "pid: expected a process id" },
    { "{\"id\":\"c\",\"bundle\":\"/b\",\"pid\":1.5}", "pid: expected a process id" },
    { "{\"id\":\"c\",\"bundle\":\"/b\",\"pid\":99999999999}", "pid: expected a process id" },
    { "{\"id\":\"c\",\"bundle\":\"/b\",\"annotations\":[]}", "annotations: expected an object" },
    { "{\"id\":\"c\",\"bundle\":\"/b\",\"annotations\":{\"k\":1}}",
      "annotations.k: expected a string" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct oci_state *s = NULL;
      assert_err_contains (oci_state_parse (cases[i].in, &s, &err), err, cases[i].msg);
      cr_assert_null (s);
    }
}

Test (oci_state, read_is_size_capped)
{
  cleanup_error roce_error_t err = NULL;
  struct oci_state *s = NULL;
  int p[2];
  char *big = xmalloc0 (OCI_STATE_MAX + 2);
  cr_assert_eq (pipe (p), 0);
  memset (big, ' ', OCI_STATE_MAX + 1);
  if (fork () == 0)
    {
      close (p[0]);
      write_all_fd (p[1], big, OCI_STATE_MAX + 1, NULL);
      free (big);
      _exit (0);
    }
  close (p[1]);
  assert_err_contains (oci_state_read (p[0], &s, &err), err, "larger than");
  close (p[0]);
  free (big);
}

static const char *config_json
    = "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
      "\"process\":{\"env\":[\"PATH=/bin\",\"NCCL_IB_TC=96\"],"
      "\"capabilities\":{\"bounding\":[\"CAP_IPC_LOCK\"],\"effective\":[\"CAP_KILL\"]},"
      "\"rlimits\":[{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,\"soft\":65536}]},"
      "\"annotations\":{\"roce.io/hca\":\"mlx5_0\"},"
      "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/7/ns/"
      "net\"}]}}";

Test (oci_config, parses_the_fields_the_engine_uses)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_config struct oci_config *c = NULL;
  const struct oci_rlimit *rl;
  cr_assert_eq (oci_config_parse (config_json, "/run/bundle", &c, &err), 0, "%s",
                err ? err->msg : "");
  cr_assert_str_eq (c->root_path, "/run/bundle/rootfs");
  cr_assert (c->root_readonly);
  cr_assert_str_eq (oci_env_get (c->env, "NCCL_IB_TC"), "96");
  cr_assert_null (oci_env_get (c->env, "NCCL_IB"));
  cr_assert (oci_config_has_cap (c, OCI_CAP_BOUNDING, "CAP_IPC_LOCK"));
  cr_assert_not (oci_config_has_cap (c, OCI_CAP_EFFECTIVE, "CAP_IPC_LOCK"));
  rl = oci_config_rlimit (c, "RLIMIT_MEMLOCK");
  cr_assert_not_null (rl);
  cr_assert_eq (rl->hard, UINT64_MAX);
  cr_assert_eq (rl->soft, 65536);
  cr_assert_str_eq (oci_config_namespace (c, "network")->path, "/proc/7/ns/net");
  cr_assert_null (oci_config_namespace (c, "pid")->path);
  cr_assert_str_eq (roce_kv_get (c->annotations, c->n_annotations, "roce.io/hca"), "mlx5_0");
}

Test (oci_config, absolute_root_path_is_kept)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_config struct oci_config *c = NULL;
  cr_assert_eq (oci_config_parse ("{\"root\":{\"path\":\"/srv/r\"}}", "/b", &c, &err), 0);
  cr_assert_str_eq (c->root_path, "/srv/r");
}

/* Where a filesystem of the host's comes into the container (rootfs.h): the
 * sources of bind mounts, by type or by option, a relative one against the
 * bundle; a tmpfs or a source-less entry is none.  */
Test (oci_config, lists_the_bind_mount_sources)
{
  cleanup_error roce_error_t err = NULL;
  struct oci_config *c = NULL;
  const char *in = "{\"root\":{\"path\":\"rootfs\"},\"mounts\":["
                   "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"},"
                   "{\"destination\":\"/a\",\"type\":\"bind\",\"source\":\"/srv/a\"},"
                   "{\"destination\":\"/b\",\"type\":\"none\",\"source\":\"rel/"
                   "b\",\"options\":[\"ro\",\"rbind\"]},"
                   "{\"destination\":\"/c\",\"source\":\"/srv/c\",\"options\":[\"bind\"]},"
                   "{\"destination\":\"/d\",\"type\":\"bind\"},"
                   "{\"destination\":\"/e\",\"type\":\"tmpfs\",\"source\":\"/srv/"
                   "e\",\"options\":[\"nosuid\"]}]}";

  cr_assert_eq (oci_config_parse (in, "/b", &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (strv_len (c->bind_sources), 3);
  cr_assert_str_eq (c->bind_sources[0], "/srv/a");
  cr_assert_str_eq (c->bind_sources[1], "/b/rel/b");
  cr_assert_str_eq (c->bind_sources[2], "/srv/c");
  oci_config_free (c);
  cr_assert_eq (oci_config_parse ("{\"root\":{\"path\":\"/r\"}}", "/b", &c, &err), 0);
  cr_assert_null (c->bind_sources);
  oci_config_free (c);
}

Test (oci_config, refuses_wrong_types)
{
  struct
  {
    const char *in, *msg;
  } cases[] = {
    { "not json", "config.json: not valid JSON" },
    { "{}", "root: expected an object" },
    { "{\"root\":{\"path\":\"\"}}", "root.path: empty" },
    { "{\"root\":{\"path\":7}}", "root.path: expected a string" },
    { "{\"root\":{\"path\":\"r\",\"readonly\":\"yes\"}}", "root.readonly: expected a boolean" },
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"env\":\"A=1\"}}",
      "process.env: expected an array" },
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"env\":[1]}}",
      "process.env[0]: expected a string" },
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"capabilities\":{\"effective\":\"CAP_X\"}}}",
      "process.capabilities.effective: expected an array" },
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":-"
      "1,\"soft\":1}]}}",
      "hard: negative" },
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":1}"
      "]}}",
      "hard: missing" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"namespaces\":{}}}",
      "linux.namespaces: expected an array" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"namespaces\":[{\"path\":\"/x\"}]}}",
      "type: missing" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct oci_config *c = NULL;
      assert_err_contains (oci_config_parse (cases[i].in, "/b", &c, &err), err, cases[i].msg);
      cr_assert_null (c);
    }
}

Test (oci_config, load_refuses_a_symlinked_config)
{
  cleanup_error roce_error_t err = NULL;
  struct oci_config *c = NULL;
  char dir[] = "/tmp/roce-unit-XXXXXX";
  char link[64], target[64];
  cr_assert_not_null (mkdtemp (dir));
  snprintf (target, sizeof (target), "%s/real.json", dir);
  snprintf (link, sizeof (link), "%s/config.json", dir);
  int fd = open (target, O_WRONLY | O_CREAT, 0600);
  write_all_fd (fd, "{\"root\":{\"path\":\"r\"}}", 21, NULL);
  close (fd);
  cr_assert_eq (symlink ("real.json", link), 0);
  assert_err_contains (oci_config_load (dir, &c, &err), err, "config.json");
  unlink (link);
  unlink (target);
  rmdir (dir);
}

Test (oci_config, parses_user_and_device_rules)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_config struct oci_config *c = NULL;
  const char *in = "{\"root\":{\"path\":\"r\"},\"process\":{\"user\":{\"uid\":1000,\"gid\":1000}},"
                   "\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"},"
                   "{\"allow\":true,\"type\":\"c\",\"major\":231,\"minor\":192,\"access\":\"rw\"},"
                   "{\"allow\":true,\"type\":\"c\",\"major\":10}]}}}";
  cr_assert_eq (oci_config_parse (in, "/b", &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (c->uid, 1000);
  cr_assert_eq (c->n_device_rules, 3);
  cr_assert_not (c->device_rules[0].allow);
  cr_assert_eq (c->device_rules[0].type, 'a');
  cr_assert_eq (c->device_rules[0].major, -1);
  cr_assert_eq (c->device_rules[1].type, 'c');
  cr_assert_eq (c->device_rules[1].minor, 192);
  cr_assert_str_eq (c->device_rules[1].access, "rw");
  cr_assert_eq (c->device_rules[2].minor, -1);
  cr_assert_str_eq (c->device_rules[2].access, "rwm");
}

Test (oci_config, refuses_bad_device_rules_and_users)
{
  struct
  {
    const char *in, *msg;
  } cases[] = {
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"user\":{\"uid\":-1}}}",
      "process.user.uid: expected a uid" },
    { "{\"root\":{\"path\":\"r\"},\"process\":{\"user\":7}}", "process.user: expected an object" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"resources\":{\"devices\":{}}}}",
      "linux.resources.devices: expected an array" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"resources\":{\"devices\":[{\"type\":\"c\"}]}}}",
      "devices[0].allow: expected a boolean" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"resources\":{\"devices\":[{\"allow\":true,\"type\":"
      "\"x\"}]}}}",
      "devices[0].type: expected a, c or b" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"resources\":{\"devices\":[{\"allow\":true,"
      "\"access\":\"rwx\"}]}}}",
      "devices[0].access: expected a subset of rwm" },
    { "{\"root\":{\"path\":\"r\"},\"linux\":{\"resources\":{\"devices\":[{\"allow\":true,\"major\":"
      "\"1\"}]}}}",
      "devices[0].major: expected a number" },
  };
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_oci_config struct oci_config *c = NULL;
      assert_err_contains (oci_config_parse (cases[i].in, "/b", &c, &err), err, cases[i].msg);
    }
}
