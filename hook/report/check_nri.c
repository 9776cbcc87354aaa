/* SPDX-License-Identifier: Apache-2.0 */
/* `check`'s rows of the NRI plugin, from the status it keeps
 * (<state_dir>/nri/status.json, hook/nri/nri_status.c): whether it is
 * connected to the runtime, and each RoCE container it saw running without
 * CAP_IPC_LOCK (NRI cannot add a capability: memory registration then
 * rests on RLIMIT_MEMLOCK alone).  No status file, no rows: the node runs
 * no plugin (the shim's path).  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "report/check.h"
#include "lib/json.h"
#include "lib/utils.h"

#define STATUS_MAX (1024 * 1024)

static const char *
str_at (const struct json *o, const char *key)
{
  const char *s = json_string (json_object_get (o, key));
  return s ? s : "";
}

void
check_nri_rows (const struct roce_policy *p, struct findings *out)
{
  cleanup_free char *path = xasprintf ("%s/nri/status.json", p->state_dir);
  cleanup_free char *buf = NULL;
  cleanup_json struct json *st = NULL;
  cleanup_error roce_error_t err = NULL;
  struct finding *x;
  size_t xi;
  int64_t pid = 0;
  size_t len = 0;
  bool up;

  if (read_file_at (AT_FDCWD, path, STATUS_MAX, &buf, &len, &err) < 0)
    {
      if (roce_error_status (&err) == ENOENT)
        return;
      x = findings_push (out, FINDING_UNKNOWN, false, "nri-plugin", NULL, NULL);
      xi = out->n - 1;
      x->found = xasprintf ("unreadable: %s", err->msg);
      goto plugin_row;
    }
  if (json_parse_n (buf, len, &st, &err) < 0 || json_type (st) != JSON_OBJECT)
    {
      x = findings_push (out, FINDING_UNKNOWN, false, "nri-plugin", NULL, NULL);
      xi = out->n - 1;
      x->found = xasprintf ("unreadable: %s", err ? err->msg : "not an object");
      goto plugin_row;
    }
  json_integer (json_object_get (st, "pid"), &pid);
  up = json_type (json_object_get (st, "connected")) == JSON_TRUE && pid > 0 && pid < (1 << 22)
       && kill ((pid_t) pid, 0) == 0;
  x = findings_push (out, up ? FINDING_OK : FINDING_WARN, false, "nri-plugin", NULL, NULL);
  xi = out->n - 1;
  if (up)
    x->found = xasprintf ("pid %lld, connected to %s", (long long) pid, str_at (st, "runtime"));
  else
    {
      x->found = xasprintf ("not connected (its status of %s)", str_at (st, "updated"));
      x->fix = xstrdup ("see the DaemonSet's nri container (roce-hook nri); meanwhile the guard "
                        "refuses RoCE pods' containers");
    }
  {
    const struct json *v = json_object_get (st, "without_ipc_lock");
    for (size_t i = 0; up && i < json_array_len (v); i++)
      {
        const struct json *c = json_array_at (v, i);
        struct finding *y = findings_push (out, FINDING_WARN, false, "nri-ipc-lock", NULL, NULL);
        y->what
            = xasprintf ("CAP_IPC_LOCK of container %s (%s)", str_at (c, "name"), str_at (c, "id"));
        y->expected = xstrdup ("in its capabilities (securityContext)");
        y->found = xasprintf ("missing in container %s (%s): memory registration rests on "
                              "RLIMIT_MEMLOCK alone",
                              str_at (c, "name"), str_at (c, "id"));
        y->fix = xstrdup ("add IPC_LOCK to the container's securityContext.capabilities.add "
                          "(NRI cannot add a capability)");
        y->source = xstrdup (path);
      }
  }
plugin_row:
  /* The rows pushed since may have moved the array.  */
  x = &out->v[xi];
  x->what = xstrdup ("NRI plugin roce-hook");
  x->expected = xstrdup ("connected to the runtime");
  x->source = xstrdup (path);
}
