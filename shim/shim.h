/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime: a drop-in for runc.  For `create`/`run` of a bundle whose
 * config.json carries roce.io/hca it makes the network where it can, edits
 * config.json, then runs the real runtime with the same argv (as its child
 * when it made the network or runs it in the foreground, else by exec);
 * every other call goes straight through.  */
#ifndef ROCE_SHIM_H
#define ROCE_SHIM_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/json.h"
#include "lib/utils.h"
#include "runtime/runtime.h"
#include "spec/annot.h"

/* roce-runtime's front: whether this call needs nothing of the engine (a
 * create/run of a spec that does not ask, no record of the id to give or
 * take, the policy loaded, the runtime found: *runtime, to exec with the
 * same argv).  False whenever the engine could do anything, or anything
 * is in doubt.  */
bool shim_front_passes (int argc, char **argv, const char *policy_path, char **runtime);

struct shim_args
{
  const char *cmd;      /* the subcommand, NULL when there is none */
  bool edits_bundle;    /* create or run */
  const char *bundle;   /* --bundle/-b; NULL: the working directory */
  bool detach;          /* run --detach/-d */
  const char *id;       /* the container id (first positional after cmd) */
  const char *log_path; /* global --log */
  bool log_json;        /* global --log-format json */
  const char *root;     /* global --root; NULL when not given */
  const char *process;  /* exec --process/-p F; NULL when not given */
};

/* Parses runc's (and crun's) command line without changing it.  */
int shim_parse_argv (int argc, char *const *argv, struct shim_args *out, roce_error_t *err);

struct shim_device
{
  const char *path; /* "/dev/infiniband/uverbs0" */
  unsigned major;
  unsigned minor;
};

struct shim_edit
{
  const char *hook_path;   /* absolute path of roce-hook */
  const char *policy_path; /* passed to the hook as --config */
  const char *hook_stage;  /* "createRuntime" or "prestart" */
  /* No poststop hook: the shim itself runs the runtime and releases what
   * the container held when it returns (a foreground `run`).  */
  bool no_poststop;
  /* The shim made the network (shim/start.c): no createRuntime hook.  */
  bool no_start_hook;
  /* Its namespace: linux.namespaces' network entry gets this path.  */
  const char *netns_path;
  /* The rails file to bind-mount read-only at /dev/roce/rails; NULL: none. */
  const char *rails_source;
  bool memlock_unlimited;
  uint64_t memlock;
  const struct shim_device *devices;
  size_t n_devices;
  const char *nccl_ib_hca;        /* "mlx5_0,mlx5_1" */
  const char *nccl_ib_tc;         /* "106" */
  const char *nccl_ib_addr_range; /* "198.18.10.0/24"; NULL or "": none */
  /* "AF_INET6" when the range is IPv6 (NCCL's default is AF_INET); NULL. */
  const char *nccl_ib_addr_family;
  const char *nccl_ib_sl; /* "3": the PFC priority */
  /* The rest of the seed's `docker run`, each only where the spec sets
   * nothing: RLIMIT_STACK (soft = hard; 0 with !stack_unlimited: none) and
   * a /dev/shm of shm_size bytes (0: none).  */
  bool stack_unlimited;
  uint64_t stack;
  uint64_t shm_size;
};

/* Edits a parsed config.json in place: the hook (createRuntime/prestart and,
 * unless no_poststop, poststop, once), CAP_IPC_LOCK, RLIMIT_MEMLOCK, linux.devices and the
 * matching linux.resources.devices rules, NCCL defaults when absent,
 * RLIMIT_STACK when the spec has none, /dev/shm of shm_size when the spec
 * has none or the runtimes' 64 MiB default.  Every member it does not know
 * is kept.  Idempotent.  */
int shim_edit_config (struct json *root, const struct shim_edit *e, roce_error_t *err);
/* The process part of it (a config.json's `process`, or the process file of
 * `runc exec --process F`): CAP_IPC_LOCK, RLIMIT_MEMLOCK, NCCL defaults.  */
int shim_edit_process (struct json *process, const struct shim_edit *e, roce_error_t *err);

/* Drops what a killed shim left in a config.json: a network path of the
 * shim's form (shim_netns_path_is_shims), the rails file's mount (its file
 * is gone).  Whether there was any.  */
bool shim_drop_leftovers (struct json *root);

/* Writes buf to <bundle>/config.json atomically (temp file in the bundle,
 * renamed; not fsynced: a bundle never outlives the node's uptime), keeping
 * the old file's mode.  With aside: the two names exchanged instead, and
 * *aside the name the old file then has in the bundle (to be put back,
 * shim_start_after_runtime); NULL when the file system cannot exchange
 * names (then the old file is replaced).  */
int shim_write_config (const char *bundle, const char *buf, size_t len, char **aside,
                       roce_error_t *err);

/* What the runtime will read as <bundle>/config.json, for the lenient look,
 * without opening a FIFO or a device and without following a link the
 * runtime would not:
 * SHIM_CONFIG_FILE: a regular file in the bundle, *buf its bytes (the shim
 *   may rewrite it);
 * SHIM_CONFIG_LINKED: a symlink to a regular file, *buf the bytes the
 *   runtime will read through it (the shim never writes through a link);
 * 0, *buf NULL: nothing to look at, handed to the runtime untouched: what
 *   the runtime cannot read either (no bundle, no config.json, a dangling
 *   link or a loop, a directory, no permission), or a file over
 *   OCI_SCAN_MAX none of whose bytes could spell a request;
 * < 0: refused: a FIFO, socket or device (its bytes cannot be looked at
 *   without taking them from the runtime), a file over OCI_SCAN_MAX that
 *   may ask, an error reading it.  */
#define SHIM_CONFIG_FILE 1
#define SHIM_CONFIG_LINKED 2
int shim_read_config (const char *bundle, char **buf, size_t *len, roce_error_t *err);

/* Whether a config.json's top-level annotations have roce.io/hca, or its
 * process.env a ROCE_HCA with a value, by the lenient json_scan; without running it
 * when the bytes cannot hold either (neither literally nor any escape that
 * could spell them).  */
bool shim_config_asks (const char *buf, size_t len);

struct shim_ask
{
  const char *hca, *ip;           /* into the tree or env given; ip NULL when none */
  bool from_env;                  /* ROCE_HCA/ROCE_IP: the spec has no roce.io/ annotation */
  const struct annot_source *src; /* how refusals name the two */
};
/* The request of a parsed config.json whose process.env is env (the
 * oci_config's): 1 with *out set, 0 when it asks nothing (no roce.io/hca,
 * no ROCE_HCA or an empty one), < 0 refused: roce.io/hca not a string, ROCE_HCA or ROCE_IP
 * defined twice with different values, or env beside annotations that
 * does not say the same (values never shown).  */
int shim_ask_of (const struct json *root, char *const *env, struct shim_ask *out,
                 roce_error_t *err);
/* A request from env written into root's annotations as roce.io/hca and
 * roce.io/ip, so that the runtime's state, the hook and every later call
 * see what the annotations would have said.  Nothing for annotations.  */
void shim_ask_annotate (struct json *root, const struct shim_ask *ask);

struct roce_policy;
struct shim_start;
/* For create/run: when the bundle's config.json carries roce.io/hca, loads
 * the policy (into *policy), validates the annotations, finds the device
 * nodes, makes the network where the shim can (*start; start->net NULL
 * when it leaves it to the hook), writes the container's record and
 * rewrites config.json: returns 1.
 * Leaves config.json untouched otherwise (returns 0, *policy not loaded). */
int shim_prepare_bundle (const struct shim_args *a, const char *policy_path,
                         struct roce_policy **policy, struct shim_start *start, roce_error_t *err);

/* The record of an annotated container (shim/record.c): what the shim gave
 * its process at create, so that `exec` gives the same to every process
 * started in it later (containerd and CRI-O build those from the spec they
 * stored before config.json was edited).  <state_dir>/shim/<id>.json,
 * root-owned, mode 0600, replaced atomically; removed at `delete`.  */
struct shim_record
{
  const char *root;   /* the runtime's --root, "" when none */
  const char *bundle; /* absolute */
  bool memlock_unlimited;
  uint64_t memlock;
  const char *nccl_ib_hca;
  const char *nccl_ib_tc;
  const char *nccl_ib_addr_range;
  const char *nccl_ib_addr_family; /* NULL: none */
  const char *nccl_ib_sl;          /* NULL: none */
  bool stack_unlimited;            /* RLIMIT_STACK given at create, for exec'd processes too */
  uint64_t stack;                  /* 0 with !stack_unlimited: none */
};

/* Whether the call may read or change the id's record: exec --process F,
 * delete, create and run.  */
bool shim_call_uses_record (const struct shim_args *a);
/* written: the file's identity (shim_record_remove removes only it).  */
int shim_record_write (const char *state_dir, const char *id, const struct shim_record *r,
                       struct file_ident *written, roce_error_t *err);
/* For `exec --process F` of a container with a record (same --root, its
 * bundle still annotated): edits F in place with shim_edit_process.  For
 * `delete`: removes the record.  For `create`/`run`: removes a record of
 * the id left for another bundle, or for one no longer annotated (after
 * shim_prepare_bundle wrote this container's).  Every other call: nothing. */
int shim_prepare_process (const struct shim_args *a, const char *state_dir, roce_error_t *err);

/* Writes the rails file of id beside its record (0444); *path: its path. */
int shim_rails_write (const char *state_dir, const char *id, const char *text, char **path,
                      struct file_ident *written, roce_error_t *err);

/* The start's network, made by the shim itself (shim/start.c).  */
struct net_state;
struct oci_config;
struct roce_request;
struct shim_start
{
  int netns_fd;                          /* the new namespace; -1 when the shim made none */
  char *netns_path;                      /* "/proc/<shim>/fd/<netns_fd>", for config.json */
  struct net_state *net;                 /* what net_setup made */
  char *rails_path;                      /* the rails file, NULL when none */
  struct file_ident rails_id, record_id; /* the files this start wrote */
  /* config.json as the shim wrote it for the runtime, and the caller's,
   * put back once the runtime has returned: the shim's names an fd of this
   * process (a later run of the bundle must not join whatever another
   * process with this pid holds as that fd) and a rails file that goes.
   * The caller's is config_aside in the bundle (exchanged with the shim's:
   * it comes back as it was, inode, owner and labels too), or, where the
   * file system cannot exchange names, its bytes, config_original; when it
   * is one a killed shim left, config_original is it without what that
   * shim left (shim_drop_leftovers).  */
  char *bundle;
  char *config_written, *config_aside, *config_original;
  size_t written_len, original_len;
  /* The seed's checks of the spec the runtime gets (logs, never a
   * refusal): run while the runtime runs, off the start's path.  */
  struct oci_config *seed_config;
  struct roce_request seed_req;
};
#define SHIM_START_INIT                                                                            \
  {                                                                                                \
    .netns_fd = -1                                                                                 \
  }
/* Whether path is of the form the shim gives its namespace,
 * /proc/<pid>/fd/<n>: in a bundle, left by a shim killed before it put
 * config.json back, and never to be joined (the pid is someone else's).  */
bool shim_netns_path_is_shims (const char *path);
/* Whether the shim makes the network of a container with this spec: it
 * asks for a new network namespace (or names one by a path of the shim's
 * form) and no user namespace.  */
bool shim_start_applies (const struct oci_config *config);
/* The QoS gate, a new network namespace with lo up, net_setup in it, the
 * rails file.  On failure nothing is left.  */
int shim_start_network (const struct roce_policy *p, const struct roce_request *req, const char *id,
                        const char *bundle, const struct oci_config *config, struct shim_start *s,
                        roce_error_t *err);
/* Takes back what shim_start_network made (the runtime failed), and puts
 * the caller's config.json back.  */
void shim_start_undo (const struct roce_policy *p, const char *id, struct shim_start *s);
void shim_start_clear (struct shim_start *s);
/* The seed's checks of the spec the runtime got, once (shim_run_*: while
 * the runtime runs).  */
void shim_start_seed_check (const struct roce_policy *p, const char *id, struct shim_start *s);
/* Once the runtime has returned (the container, when there is one, has
 * joined the namespace and bound the rails file): the caller's config.json
 * back when the bundle's is still config_written, and the rails file gone
 * from the host.  */
void shim_start_after_runtime (struct shim_start *s);

/* Removes the record and the rails file of id that this start wrote (by
 * their identity: a same-id container created since keeps its own; none:
 * nothing to do).  */
int shim_record_remove (const char *state_dir, const char *id, const struct file_ident *record,
                        const struct file_ident *rails, roce_error_t *err);

/* A foreground `run` (no --detach) of a container whose id can have a
 * record: the shim runs the runtime as its child and releases after it.  */
bool shim_runs_foreground (const struct shim_args *a);
/* Runs `runtime` with argv as a child, passes on the caller's signals,
 * then has what container a->id held released (by a process it leaves
 * behind, ipam_release_mark; else itself, roce_release_container) and ends
 * as the child did: its exit status, or its signal.  */
int shim_run_foreground (const char *runtime, char **argv, const struct roce_policy *policy,
                         const struct shim_args *a, struct shim_start *start)
    __attribute__ ((noreturn));
/* Runs `runtime` as a child for a create (or detached run) whose network
 * the shim made, passes on signals, takes the network back when the
 * runtime fails, and ends as the child did.  */
int shim_run_create (const char *runtime, char **argv, const struct roce_policy *policy,
                     const struct shim_args *a, struct shim_start *start)
    __attribute__ ((noreturn));

/* A refusal: to stderr, and to --log in runc's format when one was given. */
void shim_report (const struct shim_args *a, const char *msg);

#endif
