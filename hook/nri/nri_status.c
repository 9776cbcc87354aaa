/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's status for `roce-hook check`: <state_dir>/nri/status.json,
 * replaced whenever what it says changes (the connection, the RoCE
 * containers running without CAP_IPC_LOCK), never on a plain start.  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/json_gen.h"
#include "lib/log.h"
#include "nri/nri_int.h"
#include "lib/utils.h"

void
nri_status_write (struct nri_plugin *pl, bool connected)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (true);
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *dir = NULL, *path = NULL;
  char ts[UTC_TIME_MAX + 1];
  cleanup_close int fd = -1;
  const char *buf;
  size_t len;

  pl->status_dirty = false;
  if (pl->policy == NULL)
    return;
  utc_time_format (time (NULL), ts);
  strcat (ts, "Z");
  json_gen_map_open (g);
  json_gen_kv_integer (g, "pid", (int64_t) getpid ());
  json_gen_string (g, "connected");
  json_gen_bool (g, connected && pl->configured);
  json_gen_kv_string (g, "runtime", pl->runtime ? pl->runtime : "");
  json_gen_kv_string (g, "updated", ts);
  json_gen_string (g, "without_ipc_lock");
  json_gen_array_open (g);
  for (size_t i = 0; i < pl->n_ctrs; i++)
    if (pl->ctrs[i].no_ipc_lock)
      {
        json_gen_map_open (g);
        json_gen_kv_string (g, "id", pl->ctrs[i].id);
        json_gen_kv_string (g, "pod_id", pl->ctrs[i].pod_id);
        json_gen_kv_string (g, "name", pl->ctrs[i].name);
        json_gen_map_close (g);
      }
  json_gen_array_close (g);
  json_gen_map_close (g);
  dir = xasprintf ("%s/nri", pl->policy->state_dir);
  path = xasprintf ("%s/status.json", dir);
  if (json_gen_result (g, &buf, &len, &err) < 0 || (fd = nri_dir_open (pl->policy, true, &err)) < 0
      || file_replace (path, buf, len, &err) < 0)
    roce_log (ROCE_LOG_WARN, "the NRI status for check: %s", err->msg);
}
