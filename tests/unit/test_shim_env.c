/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime's activation by environment (Docker < 24): ROCE_HCA and
 * ROCE_IP in process.env stand for roce.io/hca and roce.io/ip when the spec
 * carries no roce.io/ annotation (shim/ask.c, shim/front.c, and the hook's
 * lenient look at a bundle the shim put back, hook/spec/oci.c).  */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "shim.h"
#include "spec/annot.h"
#include "spec/oci.h"
#include "spec/policy.h"
#include "unit.h"

/* The front's and the engine's first look: ROCE_HCA= in the top-level
 * process.env counts, however spelled; the same bytes anywhere else, or
 * ROCE_IP alone, do not.  */
Test (shim_env, config_asks_for_roce_hca_in_process_env_only)
{
  static const struct
  {
    const char *json;
    bool asks;
  } cases[] = {
    { "{\"process\":{\"env\":[\"PATH=/bin\",\"ROCE_HCA=mlx5_0\"]}}", true },
    { "{\"process\":{\"env\":[\"ROCE_HCA=\"]}}", false },
    { "{\"process\":{\"env\":[\"ROCE_HCA=\",\"ROCE_HCA=mlx5_0\"]}}", true },
    { "{\"process\":{\"env\":[\"\\u0052OCE_HCA=mlx5_0\"]}}", true },
    { "{\"process\":{\"args\":[\"sh\"],\"env\":[\"ROCE_HCA=mlx5_0\"]},\"annotations\":{}}", true },
    { "{\"process\":{\"env\":[\"ROCE_IP=198.18.10.5\"]}}", false },
    { "{\"process\":{\"env\":[\"ROCE_HCAX=mlx5_0\",\"XROCE_HCA=mlx5_0\"]}}", false },
    { "{\"process\":{\"env\":[\"ROCE_HCA\"]}}", false },
    { "{\"process\":{\"args\":[\"ROCE_HCA=mlx5_0\"]}}", false },
    { "{\"process\":{\"env\":\"ROCE_HCA=mlx5_0\"}}", false },
    { "{\"process\":{\"env\":[[\"ROCE_HCA=mlx5_0\"]]}}", false },
    { "{\"hooks\":{\"prestart\":[{\"path\":\"/x\",\"env\":[\"ROCE_HCA=mlx5_0\"]}]}}", false },
    { "{\"env\":[\"ROCE_HCA=mlx5_0\"]}", false },
    { "{\"annotations\":{\"k\":\"ROCE_HCA=mlx5_0\"}}", false },
    { "{\"process\":{\"user\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}}", false },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    cr_assert_eq (shim_config_asks (cases[i].json, strlen (cases[i].json)), cases[i].asks, "%s",
                  cases[i].json);
}

/* process.env of a tree, as oci_config gives it (NULL-terminated).  */
static char **
env_of (const struct json *root)
{
  const struct json *env = json_object_get (json_object_get (root, "process"), "env");
  size_t n = json_array_len (env);
  char **out = xmalloc0 ((n + 1) * sizeof (*out));
  for (size_t i = 0; i < n; i++)
    out[i] = xstrdup (json_string (json_array_at (env, i)));
  return out;
}

static int
ask (const char *text, struct json **root, char ***env, struct shim_ask *out, roce_error_t *err)
{
  cleanup_error roce_error_t perr = NULL;
  cr_assert_eq (json_parse (text, root, &perr), 0, "%s", text);
  *env = env_of (*root);
  return shim_ask_of (*root, *env, out, err);
}

Test (shim_env, the_request_comes_from_annotations_else_env)
{
  static const struct
  {
    const char *json;
    int ret;
    const char *hca, *ip;
    bool from_env;
  } cases[] = {
    { "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}", 1, "mlx5_0", NULL, true },
    { "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_IP=198.18.10.5\"]}}", 1, "mlx5_0",
      "198.18.10.5", true },
    { "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_HCA=mlx5_0\"]}}", 1, "mlx5_0", NULL,
      true },
    { "{\"annotations\":null,\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}", 1, "mlx5_0", NULL,
      true },
    { "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}", 1, "mlx5_0", NULL, false },
    /* Both, saying the same: the annotations'.  */
    { "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\",\"roce.io/ip\":\"198.18.10.5\"},"
      "\"process\":{\"env\":[\"ROCE_IP=198.18.10.5\",\"ROCE_HCA=mlx5_0\"]}}",
      1, "mlx5_0", "198.18.10.5", false },
    /* ROCE_HCA= (empty) asks nothing, as if unset, and says nothing beside
     * the annotations.  */
    { "{\"process\":{\"env\":[\"ROCE_HCA=\"]}}", 0, NULL, NULL, false },
    { "{\"process\":{\"env\":[\"ROCE_HCA=\",\"ROCE_IP=198.18.10.5\"]}}", 0, NULL, NULL, false },
    { "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_HCA=\"]}}", 1,
      "mlx5_0", NULL, false },
    /* Nothing asked: ROCE_IP alone, as roce.io/ip alone.  */
    { "{\"process\":{\"env\":[\"ROCE_IP=198.18.10.5\"]}}", 0, NULL, NULL, false },
    { "{\"process\":{\"env\":[\"PATH=/bin\"]}}", 0, NULL, NULL, false },
    { "{}", 0, NULL, NULL, false },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_json struct json *root = NULL;
      cleanup_strv char **env = NULL;
      struct shim_ask a;
      int r = ask (cases[i].json, &root, &env, &a, &err);
      cr_assert_eq (r, cases[i].ret, "%s: %d (%s)", cases[i].json, r, err ? err->msg : "");
      cr_assert_str_eq (a.hca ? a.hca : "(none)", cases[i].hca ? cases[i].hca : "(none)", "%s",
                        cases[i].json);
      cr_assert_str_eq (a.ip ? a.ip : "(none)", cases[i].ip ? cases[i].ip : "(none)", "%s",
                        cases[i].json);
      cr_assert_eq (a.from_env, cases[i].from_env, "%s", cases[i].json);
      cr_assert_eq (a.src, a.from_env ? &annot_from_env : &annot_from_annotations);
    }
}

/* Two sources that disagree, or one defined twice, are refused in one line
 * that names the variables and never shows the tenant's bytes.  */
Test (shim_env, disagreement_is_refused_without_echoing_values)
{
  static const struct
  {
    const char *json, *msg;
  } cases[] = {
    { "{\"annotations\":{\"roce.io/"
      "hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_1\\u001b[2J\"]}}",
      "environment variable ROCE_HCA beside annotation roce.io/hca: the same value, or only one of "
      "the two "
      "vs two different values (fix: drop the environment variables or make them equal to the "
      "annotations)" },
    { "{\"annotations\":{\"roce.io/"
      "hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_IP=198.18.10.5\"]}}",
      "environment variable ROCE_HCA beside annotation roce.io/hca: the same value, or only one of "
      "the two vs no ROCE_HCA" },
    { "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\",\"roce.io/ip\":\"198.18.10.5\"},"
      "\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_IP=198.18.10.6\"]}}",
      "environment variable ROCE_IP beside annotation roce.io/ip: the same value, or only one of "
      "the two vs two different values" },
    { "{\"annotations\":{\"roce.io/"
      "ip\":\"198.18.10.5\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}",
      "vs no roce.io/hca" },
    { "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_HCA=mlx5_1\\n\"]}}",
      "environment variable ROCE_HCA: one value vs two different definitions (fix: set it once in "
      "the "
      "container's environment)" },
    { "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_IP=1\",\"ROCE_IP=2\"]}}",
      "environment variable ROCE_IP: one value vs two different definitions" },
    /* Empty beside a value: two definitions, one of which asks.  */
    { "{\"process\":{\"env\":[\"ROCE_HCA=\",\"ROCE_HCA=mlx5_0\"]}}",
      "environment variable ROCE_HCA: one value vs two different definitions" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_json struct json *root = NULL;
      cleanup_strv char **env = NULL;
      struct shim_ask a;
      assert_err_contains (ask (cases[i].json, &root, &env, &a, &err), err, cases[i].msg);
      cr_assert_null (strchr (err->msg, '\n'), "%s", err->msg);
      cr_assert_null (strchr (err->msg, '\x1b'), "%s", err->msg);
      cr_assert_null (strstr (err->msg, "mlx5_1"), "a tenant's value shown: %s", err->msg);
      cr_assert_null (strstr (err->msg, "198.18"), "a tenant's value shown: %s", err->msg);
    }
}

/* The values themselves go through annot_parse's checks, named as the
 * variables they came from; control bytes are escaped, never echoed.  */
Test (shim_env, env_values_are_validated_as_the_annotations_are)
{
  cleanup_policy struct roce_policy *pol = NULL;
  cleanup_error roce_error_t perr = NULL;
  const char *in
      = "{\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"198.18.10.0/24\",\"pool\":\"198.18.10.100-198.18.10.199\"}}}";
  static const struct
  {
    const char *hca, *ip, *msg;
  } cases[] = {
    { "mlx5_0\x1b[31m", NULL,
      "environment variable ROCE_HCA: printable text vs 'mlx5_0\\x1b[31m' (fix: remove control "
      "characters)" },
    { "mlx5_9", NULL,
      "environment variable ROCE_HCA: an HCA the node policy lists (mlx5_0) vs 'mlx5_9'" },
    { "", NULL, "environment variable ROCE_HCA: a comma list of HCA names (mlx5_0) vs ''" },
    { "mlx5_0,mlx5_0", NULL, "environment variable ROCE_HCA: each HCA once" },
    { "mlx5_0", "198.18.11.5",
      "environment variable ROCE_IP: an address in mlx5_0's pool 198.18.10.100-198.18.10.199 "
      "vs '198.18.11.5' (fix: pick an address inside the pool, or omit ROCE_IP to get one)" },
    { "mlx5_0", "x\r\n", "environment variable ROCE_IP: printable text vs 'x\\x0d\\x0a'" },
    { "mlx5_0", "mlx5_1=198.18.10.5",
      "an HCA selected in ROCE_HCA (mlx5_0) vs 'mlx5_1' (fix: give addresses only "
      "for the HCAs in ROCE_HCA)" },
    { "mlx5_0", "mlx5_0=",
      "(fix: give a plain address such as ROCE_IP=mlx5_0=192.168.100.105 or "
      "ROCE_IP=mlx5_0=fd00:10::105)" },
  };
  cr_assert_eq (policy_parse (in, "/etc/roce-hook/config.json", &pol, &perr), 0);
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct roce_request r = { 0 };
      assert_err_contains (
          annot_parse_from (pol, &annot_from_env, cases[i].hca, cases[i].ip, &r, &err), err,
          cases[i].msg);
      {
        cleanup_free char *shown = str_escape (err->msg);
        cr_assert_null (strpbrk (shown, "\x1b\r\n"), "%s", shown);
      }
      cr_assert_eq (r.n, 0);
    }
  {
    cleanup_error roce_error_t err = NULL;
    struct roce_request r = { 0 };
    cr_assert_eq (annot_parse_from (pol, &annot_from_env, "mlx5_0", "198.18.10.150", &r, &err), 0);
    cr_assert_eq (r.n, 1);
    cr_assert_eq (r.sel[0].ip[0].family, AF_INET);
    annot_request_clear (&r);
  }
}

static char *
gen (const struct json *root)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  const char *buf;
  size_t len;
  json_gen_tree (g, root);
  cr_assert_eq (json_gen_result (g, &buf, &len, &err), 0);
  return xstrndup (buf, len);
}

/* Asked by env: the spec the runtime gets carries the annotations it
 * stands for (the hook and runc's state read those); asked by annotation:
 * nothing is added.  */
Test (shim_env, env_is_written_into_the_annotations)
{
  static const struct
  {
    const char *json, *out;
  } cases[] = {
    { "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_IP=198.18.10.5\"]}}",
      "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\",\"ROCE_IP=198.18.10.5\"]},"
      "\"annotations\":{\"roce.io/hca\":\"mlx5_0\",\"roce.io/ip\":\"198.18.10.5\"}}" },
    { "{\"annotations\":null,\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}",
      "{\"annotations\":{\"roce.io/"
      "hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}" },
    { "{\"annotations\":{\"a\":\"b\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}",
      "{\"annotations\":{\"a\":\"b\",\"roce.io/"
      "hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}" },
    { "{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}",
      "{\"annotations\":{\"roce.io/"
      "hca\":\"mlx5_0\"},\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      cleanup_json struct json *root = NULL;
      cleanup_strv char **env = NULL;
      cleanup_free char *out = NULL;
      struct shim_ask a;
      cr_assert_eq (ask (cases[i].json, &root, &env, &a, &err), 1);
      shim_ask_annotate (root, &a);
      out = gen (root);
      cr_assert_str_eq (out, cases[i].out);
    }
}

TestSuite (shim_env_hook, .init = tree_setup, .fini = tree_teardown);

static bool
asks (const char *config)
{
  cleanup_free char *state = NULL;
  tree_mk ("b/config.json", config);
  state = xasprintf (
      "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"stopped\",\"bundle\":\"%s/b\","
      "\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}",
      tree_root);
  return oci_asks_for (state, strlen (state), ANNOT_HCA, NULL);
}

/* The hook at poststop: runc's state has the annotations the shim wrote,
 * and the bundle's config.json is the caller's again, with the variable
 * only.  A bundle with neither still does not ask.  */
Test (shim_env_hook, a_bundle_put_back_by_the_shim_still_asks)
{
  cr_assert (asks ("{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}"));
  cr_assert (asks ("{\"annotations\":{\"roce.io/hca\":\"mlx5_0\"}}"));
  cr_assert_not (asks ("{\"process\":{\"env\":[\"ROCE_IP=198.18.10.5\"]}}"));
  cr_assert_not (asks ("{\"annotations\":{},\"process\":{\"env\":[\"PATH=/bin\"]}}"));
}

/* Without annotations in the state, only config.json's annotations count:
 * the hook itself never activates on env (hooks.d and direct hooks are
 * annotation-only).  */
Test (shim_env_hook, the_hook_alone_never_activates_on_env)
{
  cleanup_free char *state = NULL;
  tree_mk ("b/config.json", "{\"process\":{\"env\":[\"ROCE_HCA=mlx5_0\"]}}");
  state = xasprintf (
      "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"bundle\":\"%s/b\"}",
      tree_root);
  cr_assert_not (oci_asks_for (state, strlen (state), ANNOT_HCA, NULL));
}
