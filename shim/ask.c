/* SPDX-License-Identifier: Apache-2.0 */
/* What a config.json asks of the shim: roce.io/hca and roce.io/ip from its
 * annotations, else ROCE_HCA and ROCE_IP from its process.env (Docker
 * before 24 passes no annotation and copies no label into the spec; every
 * tool can set env).  Both at once must say the same thing.  */
#define _GNU_SOURCE
#include <string.h>

#include "lib/utils.h"
#include "shim.h"
#include "spec/annot.h"

/* The value of NAME in process.env; two definitions that differ are
 * refused (which one a consumer takes is its own choice).  */
static int
env_value (char *const *env, const char *name, const char **out, roce_error_t *err)
{
  size_t len = strlen (name);
  *out = NULL;
  for (size_t i = 0; env && env[i]; i++)
    {
      const char *v;
      if (strncmp (env[i], name, len) != 0 || env[i][len] != '=')
        continue;
      v = env[i] + len + 1;
      if (*out && strcmp (*out, v) != 0)
        {
          cleanup_free char *what = xasprintf ("environment variable %s", name);
          return roce_error_refuse (err, what, "one value", "two different definitions",
                                    "set it once in the container's environment");
        }
      *out = v;
    }
  return 0;
}

static bool
same (const char *a, const char *b)
{
  return a == b || (a && b && strcmp (a, b) == 0);
}

/* An environment variable and its annotation that do not agree.  The
 * values are the tenant's: named, never shown.  */
static int
disagree (const char *env, const char *annot, const char *a, const char *e, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("environment variable %s beside annotation %s", env, annot);
  cleanup_free char *found = a && e ? xstrdup ("two different values")
                             : a    ? xasprintf ("no %s", env)
                                    : xasprintf ("no %s", annot);
  return roce_error_refuse (err, what, "the same value, or only one of the two", found,
                            "drop the environment variables or make them equal to the annotations");
}

int
shim_ask_of (const struct json *root, char *const *env, struct shim_ask *out, roce_error_t *err)
{
  const struct json *ann = json_object_get (root, "annotations");
  const struct json *hca = json_object_get (ann, ANNOT_HCA);
  const char *env_hca, *env_ip;
  bool by_annotation;

  memset (out, 0, sizeof (*out));
  if (env_value (env, ANNOT_ENV_HCA, &env_hca, err) < 0
      || env_value (env, ANNOT_ENV_IP, &env_ip, err) < 0)
    return -1;
  /* ROCE_HCA= (empty) asks nothing, as if unset: a compose file's
   * ROCE_HCA=${ROCE_HCA} on a host without it, `docker run -e ROCE_HCA=`.
   * runc runs such a spec; so does the shim, untouched.  */
  if (env_hca && *env_hca == '\0')
    env_hca = NULL;
  if (hca && json_string (hca) == NULL)
    return roce_error_refuse (err, "annotation " ANNOT_HCA, "a string in the top-level annotations",
                              "another type", "give " ANNOT_HCA " a string value such as mlx5_0");
  out->hca = json_string (hca);
  out->ip = json_string (json_object_get (ann, ANNOT_IP));
  by_annotation = out->hca || json_object_get (ann, ANNOT_IP);
  if (by_annotation && (env_hca || env_ip))
    {
      if (! same (out->hca, env_hca))
        return disagree (ANNOT_ENV_HCA, ANNOT_HCA, out->hca, env_hca, err);
      if (! same (out->ip, env_ip))
        return disagree (ANNOT_ENV_IP, ANNOT_IP, out->ip, env_ip, err);
    }
  if (! by_annotation)
    {
      out->hca = env_hca;
      out->ip = env_ip;
      out->from_env = env_hca != NULL;
    }
  if (out->hca == NULL)
    out->ip = NULL; /* roce.io/ip or ROCE_IP alone asks nothing */
  out->src = out->from_env ? &annot_from_env : &annot_from_annotations;
  return out->hca ? 1 : 0;
}

void
shim_ask_annotate (struct json *root, const struct shim_ask *ask)
{
  struct json *ann;
  if (! ask->from_env)
    return;
  ann = json_object_get_mut (root, "annotations");
  if (ann == NULL || json_type (ann) != JSON_OBJECT) /* none, or null */
    {
      json_object_set (root, "annotations", json_new_object ());
      ann = json_object_get_mut (root, "annotations");
    }
  json_object_set (ann, ANNOT_HCA, json_new_string (ask->hca));
  if (ask->ip)
    json_object_set (ann, ANNOT_IP, json_new_string (ask->ip));
}
