/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of hook/nri share: the wire (nri_wire.c), the messages
 * read from it checked (nri_msg.c), the plugin's state (nri_plugin.c), the
 * pods' and containers' work (nri_pod.c), the guard (nri_guard.c).  Not a
 * public header: hook/nri/nri.h is.  */
#ifndef ROCE_NRI_INT_H
#define ROCE_NRI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec/annot.h"
#include "lib/error.h"
#include "nri/nri.h"
#include "nri/nri.pb-c.h"
#include "spec/oci.h"
#include "spec/policy.h"

/* ---- the wire (nri_wire.c) ------------------------------------------------- */

/* NRI's multiplexed connections (containerd/nri pkg/net/multiplex): the
 * plugin serves on 1 (the runtime calls the plugin), the runtime on 2 (the
 * plugin registers).  */
enum
{
  NRI_CONN_PLUGIN = 1,
  NRI_CONN_RUNTIME = 2,
};
#define NRI_MUX_HEADER 8
#define TTRPC_HEADER 10
/* ttRPC's largest message data (containerd/ttrpc PROTOCOL.md), and NRI's
 * largest connection frame: one such message with its header.  */
#define TTRPC_DATA_MAX (4u << 20)
#define NRI_MUX_MAX (TTRPC_HEADER + TTRPC_DATA_MAX)
/* What one connection's stream may hold that is not a whole message yet. */
#define NRI_STREAM_MAX (2 * NRI_MUX_MAX)

enum ttrpc_type
{
  TTRPC_REQUEST = 1,
  TTRPC_RESPONSE = 2,
  TTRPC_DATA = 3,
};

/* gRPC's status codes, as ttRPC's responses carry them.  */
enum
{
  RPC_OK = 0,
  RPC_UNKNOWN = 2,
  RPC_INVALID_ARGUMENT = 3,
  RPC_FAILED_PRECONDITION = 9,
  RPC_UNIMPLEMENTED = 12,
};

#define NRI_SERVICE_PLUGIN "nri.pkg.api.v1alpha1.Plugin"
#define NRI_SERVICE_RUNTIME "nri.pkg.api.v1alpha1.Runtime"

/* NRI's events (api.proto's Event); a plugin subscribes with the mask of
 * 1 << (event - 1).  */
enum nri_event
{
  NRI_EV_RUN_POD_SANDBOX = 1,
  NRI_EV_STOP_POD_SANDBOX = 2,
  NRI_EV_REMOVE_POD_SANDBOX = 3,
  NRI_EV_CREATE_CONTAINER = 4,
  NRI_EV_POST_CREATE_CONTAINER = 5,
  NRI_EV_START_CONTAINER = 6,
  NRI_EV_POST_START_CONTAINER = 7,
  NRI_EV_UPDATE_CONTAINER = 8,
  NRI_EV_POST_UPDATE_CONTAINER = 9,
  NRI_EV_STOP_CONTAINER = 10,
  NRI_EV_REMOVE_CONTAINER = 11,
};
#define NRI_EVENT_BIT(e) (1 << ((e) -1))

struct nri_buf
{
  uint8_t *p;
  size_t len, cap;
};
void nri_buf_append (struct nri_buf *b, const void *data, size_t n);
void nri_buf_clear (struct nri_buf *b);

/* One ttRPC message off a connection; data is its own (NUL after it).  */
struct ttrpc_msg
{
  uint32_t conn;
  uint32_t stream;
  uint8_t type, flags;
  uint8_t *data;
  size_t len;
};
void ttrpc_msg_clear (struct ttrpc_msg *m);

/* The trunk's bytes as read, each connection's stream of ttRPC bytes, and
 * the messages whole, in the order they were completed.  */
struct nri_rx
{
  struct nri_buf trunk;
  struct nri_buf conn[3]; /* [NRI_CONN_PLUGIN], [NRI_CONN_RUNTIME] */
  struct ttrpc_msg *ready;
  size_t n_ready, head;
};
void nri_rx_clear (struct nri_rx *rx);

/* Appends n bytes read from the trunk; refuses a frame longer than
 * NRI_MUX_MAX, a ttRPC message over TTRPC_DATA_MAX, or a stream holding
 * more than NRI_STREAM_MAX unparsed (the connection is then to be
 * closed).  */
int nri_rx_feed (struct nri_rx *rx, const void *data, size_t n, roce_error_t *err);
/* The next whole ttRPC message of either connection, in the order they
 * were completed: 1 (out set, its data the caller's), 0 none yet.  */
int nri_rx_next (struct nri_rx *rx, struct ttrpc_msg *out, roce_error_t *err);
/* A ttRPC message in one connection frame, appended to out.  */
int nri_tx_frame (struct nri_buf *out, uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags,
                  const void *data, size_t len, roce_error_t *err);

/* The envelope: a unary request (type 1, no flags, an odd stream), a
 * response (type 2).  */
int ttrpc_request_decode (const struct ttrpc_msg *m, RoceNri__TtrpcRequest **out,
                          roce_error_t *err);
int ttrpc_response_decode (const struct ttrpc_msg *m, RoceNri__TtrpcResponse **out,
                           roce_error_t *err);
uint8_t *nri_pack (const ProtobufCMessage *msg, size_t *len);
/* The response on the plugin's connection: reply when code is 0, else the
 * status (code, message).  */
int ttrpc_respond (struct nri_buf *out, uint32_t stream, const ProtobufCMessage *reply, int code,
                   const char *message, roce_error_t *err);
/* A request of the plugin's on the runtime's connection.  */
int ttrpc_call (struct nri_buf *out, uint32_t stream, const char *service, const char *method,
                const ProtobufCMessage *req, int64_t timeout_ns, roce_error_t *err);

/* ---- what is read of the messages (nri_msg.c) ------------------------------ */

#define NRI_NAME_MAX 253 /* a Kubernetes name or namespace */
#define NRI_PATH_MAX 4096

/* A pod as the plugin reads it: its identity, its network namespace's
 * path, and the annotations a start reads: its roce.io/ ones (a tenant's)
 * and those the runtime vouches for (the Kubernetes namespace from the
 * runtime's own record of the pod, the container type), in kv.  */
struct nri_pod
{
  const char *id, *name, *ns, *uid;
  const char *netns;    /* NULL: none named */
  const char *hca, *ip; /* roce.io/hca, roce.io/ip; NULL when absent */
  bool asks;            /* roce.io/hca is there */
  bool has_marker;      /* NRI_MARKER among them: a tenant wrote it */
  struct roce_kv *kv;   /* the request's annotations (strings are the message's) */
  size_t n_kv;
};
/* A container as the plugin reads it: what a start's request and its gate
 * read of a spec (env, devices, cpuset, rlimits), in an oci_config.  */
struct nri_ctr
{
  const char *id, *pod_id, *name;
  const char *marker; /* the NRI_MARKER annotation, NULL when absent */
  uint32_t pid;
  struct oci_config *config; /* its env, linux.devices, cpuset, rlimits, annotations */
};

/* Reads and checks a pod of the wire (the ids, names and paths bounded and
 * printable; the namespace path absolute); as_sandbox: the request is the
 * sandbox's (no GPU: roce.io/hca=auto chooses nothing), else a container's. */
int nri_pod_read (const RoceNri__PodSandbox *m, bool as_sandbox, struct nri_pod *out,
                  roce_error_t *err);
void nri_pod_clear (struct nri_pod *p);
int nri_ctr_read (const RoceNri__Container *m, struct nri_ctr *out, roce_error_t *err);
void nri_ctr_clear (struct nri_ctr *c);
/* "roce-hook: <id>: <msg>", the id and the message escaped, one line.  */
char *nri_refusal_line (const char *id, const char *msg);

/* ---- the plugin (nri_plugin.c, nri_pod.c) ---------------------------------- */

/* A file as stat(2) saw it: the policy's, to tell when it changed.  */
struct nri_file_stamp
{
  unsigned long long dev, ino, size;
  long long mtime_ns;
};

/* A RoCE pod the plugin knows (from RunPodSandbox, a container's create or
 * Synchronize).  */
struct nri_pod_rec
{
  char *id, *ns, *name;
  char *netns; /* its network namespace's path, NULL when none */
  bool released;
  /* What its RunPodSandbox made, the gate passed: its containers created
   * soon after under the same policy take it as it is (nri_pod.c,
   * sandbox_reuse).  made_hcas NULL: nothing.  */
  char *made_hcas;  /* annot_request_names of the request */
  char *made_rails; /* the rails file's text, NULL when no rail */
  char made_ns[48]; /* netns_id_format of its namespace */
  struct nri_file_stamp made_policy;
  int64_t made_ms;
};
/* Forgets what the pod's RunPodSandbox made.  */
void nri_pod_rec_unmake (struct nri_pod_rec *r);

/* A container of a RoCE pod the plugin prepared.  */
struct nri_ctr_rec
{
  char *id, *pod_id, *name;
  bool rails;       /* its rails file is under <state_dir>/nri */
  bool no_ipc_lock; /* seen running without CAP_IPC_LOCK */
};

struct nri_plugin
{
  const struct nri_opts *o;
  struct roce_policy *policy; /* NULL until a RoCE pod needs it */
  struct nri_file_stamp policy_stamp;
  unsigned lock_timeout_ms, etcd_timeout_ms; /* the policy's own */
  /* The connection.  */
  int fd;
  struct nri_rx rx;
  struct nri_buf tx;
  uint32_t next_stream; /* ours, on the runtime's connection: odd */
  uint32_t register_stream;
  bool registered, configured, shutdown;
  int64_t request_timeout_ms; /* Configure's, else NRI's default 2 s */
  char *runtime;              /* "containerd 2.1.9" */
  /* The request being answered: its end (mono_ms), less a margin for the
   * answer.  */
  int64_t deadline_ms;
  /* Synchronize's parts, while the runtime says there are more.  */
  RoceNri__SynchronizeRequest **sync_parts;
  size_t n_sync_parts;
  struct nri_pod_rec *pods;
  size_t n_pods;
  struct nri_ctr_rec *ctrs;
  size_t n_ctrs;
  bool status_dirty; /* the status file (nri_status.c) is to be written */
  bool budget_cut;   /* this request's waits were cut to its time */
};

/* The policy, read (again); freed.  */
int nri_policy_load (struct nri_plugin *pl, roce_error_t *err);
void nri_policy_free (struct nri_plugin *pl);
/* What the runtime sent, answered into pl->tx; -1 when the wire is broken
 * (the connection is to end).  */
int nri_serve_bytes (struct nri_plugin *pl, const void *data, size_t n, roce_error_t *err);
/* In a reaper the plugin's release leaves behind: the runtime's
 * connection is not the reaper's to keep.  */
void nri_reaper_drops (void *pl);

/* The adjustment of a RoCE pod's container (nri_adjust.c): the mark
 * alone, then what the grant gives (have: the container as it is).  */
struct spec_grant;
RoceNri__ContainerAdjustment *nri_adjust_new (const char *ctr_id);
void nri_adjust_grant (RoceNri__ContainerAdjustment *a, const struct roce_policy *p,
                       const struct spec_grant *g, const struct oci_config *have,
                       const char *rails);

/* The events each role subscribes to.  */
int32_t nri_events (enum nri_role role);
/* The handlers of the Plugin service (nri_pod.c), for the plugin and the
 * guard; a refusal in *err (its message one line, without the id).  */
void nri_on_run_pod (struct nri_plugin *pl, const RoceNri__PodSandbox *pod);
void nri_on_stop_pod (struct nri_plugin *pl, const RoceNri__PodSandbox *pod);
void nri_on_remove_pod (struct nri_plugin *pl, const RoceNri__PodSandbox *pod);
int nri_on_create (struct nri_plugin *pl, const RoceNri__PodSandbox *pod,
                   const RoceNri__Container *ctr, RoceNri__ContainerAdjustment **adjust,
                   char **refused_id, roce_error_t *err);
void nri_on_started (struct nri_plugin *pl, const RoceNri__PodSandbox *pod,
                     const RoceNri__Container *ctr);
void nri_on_remove_ctr (struct nri_plugin *pl, const RoceNri__Container *ctr);
/* Synchronize: the runtime's pods and containers, whole.  */
void nri_on_sync (struct nri_plugin *pl, RoceNri__PodSandbox *const *pods, size_t n_pods,
                  RoceNri__Container *const *ctrs, size_t n_ctrs);
/* What an answer keeps of its request's time for itself: writing it, and
 * the runtime's own reading, on a loaded node.  */
#define NRI_ANSWER_MARGIN_MS 250
/* Milliseconds left of the request being answered.  */
long nri_ms_left (const struct nri_plugin *pl);
/* What the plugin knows of pods and containers, forgotten.  */
void nri_plugin_forget (struct nri_plugin *pl);
/* All the plugin holds: its connection, its state, its policy.  */
void nri_plugin_clear (struct nri_plugin *pl);

/* <state_dir>/nri (made, 0700, when create and absent): the rails files
 * and the status.  */
int nri_dir_open (const struct roce_policy *p, bool create, roce_error_t *err);

/* The status file <state_dir>/nri/status.json that `check` reads: the
 * plugin's pid, its runtime, whether it is connected, and the RoCE
 * containers running without CAP_IPC_LOCK.  Logs, never fails.  */
void nri_status_write (struct nri_plugin *pl, bool connected);

/* ---- the guard (nri_guard.c) ------------------------------------------------ */

/* Whether a container of a pod that asked for RoCE was prepared by the
 * plugin: its NRI_MARKER annotation names it, and the pod's own
 * annotations do not carry one (a tenant may not write it).  0 yes (or
 * the pod did not ask), -1 refused.  */
int nri_guard_check (const struct nri_pod *pod, const char *ctr_id, const char *marker,
                     roce_error_t *err);

#endif
