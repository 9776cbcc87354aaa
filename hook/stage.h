/* SPDX-License-Identifier: Apache-2.0 */
/* The hook's stages: read the runtime's state, decide, act.  main() parses
 * argv and makes one call here.  */
#ifndef ROCE_STAGE_H
#define ROCE_STAGE_H

#include <stdbool.h>

#include "lib/error.h"
#include "lib/linkage.h"
#include "net/uplink.h"
#include "spec/annot.h"
#include "spec/container.h"
#include "spec/oci.h"
#include "spec/policy.h"
#include "sys/rootfs.h"

struct devices_state;
struct net_state;

enum roce_stage
{
  ROCE_STAGE_PRESTART,
  ROCE_STAGE_CREATE_RUNTIME,
  ROCE_STAGE_POSTSTOP,
};

struct roce_ctx
{
  const char *config_path;
  int state_fd;
  enum roce_stage stage;
  enum roce_linkage linkage; /* the program's (linkage.h) */
  struct oci_state *state;
  char *seen_id; /* the id the lenient read saw, for a state that failed the strict one */
  struct oci_config *config;  /* loaded only for annotated containers */
  struct roce_policy *policy; /* idem */
  struct roce_request req;
  bool active; /* carries roce.io/hca, or (cdi) a CDI device's variable */
  /* Run by the hooks of `roce-hook cdi`'s spec (--cdi): the request may be
   * the CDI devices' (annot.h ANNOT_CDI_PREFIX), which only a container that
   * requested one has, with these hooks.  */
  bool cdi;
  /* What every step is handed: the container, its namespaces opened once,
   * early (start stages only); initialise with ROCE_CTX_INIT.  */
  struct roce_container c;
  struct rootfs_host rootfs_host; /* c.rootfs_host */
  struct roce_uplinks uplinks;    /* c.uplinks */
  struct net_state *net;          /* what net_setup made (net.h) */
  struct devices_state *devices;  /* what devices_setup() did, for devices_undo() */
  /* The state as the runtime sent it (an annotated container's): what a
   * start handed over to roce-hook-engine reads again.  */
  char *state_raw;
  size_t state_raw_len;
  struct oci_seen_config seen; /* config.json as the lenient look read it */
};

#define ROCE_CTX_INIT .c = ROCE_CONTAINER_INIT

int roce_stage_parse (const char *name, enum roce_stage *out);
const char *roce_stage_name (enum roce_stage s);

/* Runs one stage.  On failure *err holds the one-line refusal (without the
 * "roce-hook: <id>: " prefix) and the host is as it was.  */
int roce_stage_run (struct roce_ctx *ctx, roce_error_t *err);
void roce_ctx_clear (struct roce_ctx *ctx);

/* Poststop's work for container `id` (validated by the caller) without a
 * runtime's state: what roce-runtime does itself once the foreground `run`
 * it ran has returned.  Confines the calling process as a stage does, for
 * good: call it last (a namespace the kernel still has goes to a reaper
 * that is the caller's child: the caller is to exit next).  */
int roce_release_container (const struct roce_policy *p, const char *id, roce_error_t *err);
/* The same, in the process roce-runtime leaves after a foreground run:
 * from the holder of ns only, with the mark its parent took
 * (ipam_release_mark, closed here whatever the outcome).  */
struct netns_id;
int roce_release_netns (const struct roce_policy *p, const char *id, const struct netns_id *ns,
                        int mark, roce_error_t *err);
/* True when a start failed only because this program cannot do it as it
 * is linked (ROCE_ERROR_NEEDS_ENGINE: linkage.h): roce-hook-engine can do
 * it whole, from the same state (ctx->state_raw); nothing was made.  */
bool roce_stage_needs_engine (const struct roce_ctx *ctx, const roce_error_t *err);
/* The container id, once known, else "-".  */
const char *roce_ctx_id (const struct roce_ctx *ctx);

/* The annotation value from the state (what the runtime reports), else from
 * config.json; NULL when absent.  */
const char *roce_ctx_annotation (const struct roce_ctx *ctx, const char *key);

#endif
