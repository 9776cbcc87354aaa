/* SPDX-License-Identifier: Apache-2.0 */
/* The OCI state a runtime writes on a hook's stdin, and the parts of the
 * bundle's config.json the hook reads.  Both are untrusted: every field is
 * type-checked and bounded here, and nothing past this module sees JSON.  */
#ifndef ROCE_OCI_H
#define ROCE_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/error.h"

#define OCI_STATE_MAX (1024 * 1024)
#define OCI_CONFIG_MAX (16 * 1024 * 1024)
#define OCI_ID_MAX 1024
/* The lenient look reads this much at most; more is not ours.  */
#define OCI_SCAN_MAX (64 * 1024 * 1024)

struct roce_kv
{
  char *key;
  char *value;
};

struct oci_state
{
  char *oci_version;
  char *id;
  char *status;
  char *bundle;
  pid_t pid; /* 0 when the state carries none (poststop of a dead container) */
  bool has_annotations;
  struct roce_kv *annotations;
  size_t n_annotations;
};

struct oci_rlimit
{
  char *type;
  uint64_t hard;
  uint64_t soft;
};

struct oci_namespace
{
  char *type;
  char *path; /* NULL when the runtime creates a new one */
};

enum oci_cap_set
{
  OCI_CAP_BOUNDING,
  OCI_CAP_EFFECTIVE,
  OCI_CAP_PERMITTED,
  OCI_CAP_INHERITABLE,
  OCI_CAP_AMBIENT,
  OCI_CAP_N_SETS,
};

/* linux.resources.devices[]: a device cgroup rule.  */
struct oci_device_rule
{
  bool allow;
  char type;      /* 'a', 'c' or 'b' */
  int64_t major;  /* -1: any */
  int64_t minor;  /* -1: any */
  char access[4]; /* a subset of "rwm" */
};

/* linux.devices[]: a node the runtime makes in the container.  */
struct oci_device
{
  char type; /* 'c', 'b', 'u' or 'p' */
  int64_t major;
  int64_t minor;
};

struct oci_config
{
  char *root_path; /* absolute: root.path resolved against the bundle */
  bool root_readonly;
  struct roce_kv *annotations;
  size_t n_annotations;
  char **env; /* NULL-terminated, "K=V" */
  bool has_capabilities;
  char **caps[OCI_CAP_N_SETS]; /* each NULL-terminated (may be NULL) */
  struct oci_rlimit *rlimits;
  size_t n_rlimits;
  struct oci_namespace *namespaces;
  size_t n_namespaces;
  uint32_t uid; /* process.user.uid (0 when absent) */
  struct oci_device_rule *device_rules;
  size_t n_device_rules;
  /* linux.devices and linux.resources.cpu.cpus, read leniently for
   * roce.io/hca=auto (topo.h: the GPUs /dev/nvidiaN, or the cpuset's NUMA
   * nodes): an entry of another shape is skipped, the runtime judges it.
   * cpus NULL when absent.  */
  struct oci_device *devices;
  size_t n_devices;
  char *cpus;
  /* The mounts entry for /dev/shm (read for what the hook verifies; the
   * runtime judges the mounts): its type and the value of its size=
   * option, each NULL when absent.  */
  bool has_shm;
  char *shm_type;
  char *shm_size;
  /* The sources of the mounts entries that are bind mounts (type "bind",
   * or a "bind"/"rbind" option), absolute (a relative one against the
   * bundle), NULL-terminated (NULL: none): where a filesystem of the
   * host's comes into the container (rootfs.h).  */
  char **bind_sources;
  /* linux.sysctl, read leniently: the key that turns IPv6 off in the
   * container's network namespace (net.ipv6.conf.all or .default
   * .disable_ipv6 set nonzero), which the runtime writes after the hooks
   * ran; NULL when none does.  ipv6_off_value: its value.  */
  const char *ipv6_off;
  int64_t ipv6_off_value;
};

extern const char *const oci_cap_set_names[OCI_CAP_N_SETS];

/* The config.json the lenient look read, kept for the strict read of a
 * container that asked (read once, not twice).  */
struct oci_seen_config
{
  char *bundle; /* the state's bundle, as the lenient look saw it */
  char *buf;
  size_t len;
};

/* Whether the container asked for the annotation `key`: a lenient, linear
 * look (json_scan) at the state, and at <bundle>/config.json, whose
 * annotations must carry the key exactly as well (a state without
 * annotations defers to it).  Never fails: a state that cannot be read did
 * not ask.  Nothing strict runs on a container before this says true.
 * `seen` (may be NULL) keeps config.json for a container that asked.  */
bool oci_asks_for (const char *state, size_t len, const char *key, struct oci_seen_config *seen);
void oci_seen_config_clear (struct oci_seen_config *seen);
/* config.json of `bundle`: from `seen` when it holds that bundle's, else
 * read (as oci_config_load).  */
int oci_config_load_seen (const char *bundle, const struct oci_seen_config *seen,
                          struct oci_config **out, roce_error_t *err);

int oci_state_parse (const char *buf, struct oci_state **out, roce_error_t *err);
/* Reads at most OCI_STATE_MAX bytes from fd.  */
int oci_state_read (int fd, struct oci_state **out, roce_error_t *err);
void oci_state_free (struct oci_state *s);
void cleanup_oci_statep (struct oci_state **s);
#define cleanup_oci_state __attribute__ ((cleanup (cleanup_oci_statep)))

/* `bundle` is the absolute bundle directory (used to resolve root.path).  */
int oci_config_parse (const char *buf, const char *bundle, struct oci_config **out,
                      roce_error_t *err);
/* The same from a tree already parsed (the shim edits the one it reads).  */
struct json;
int oci_config_from_tree (const struct json *root, const char *bundle, struct oci_config **out,
                          roce_error_t *err);
/* Opens <bundle>/config.json (no symlink as the last component) and parses it.  */
int oci_config_load (const char *bundle, struct oci_config **out, roce_error_t *err);
void oci_config_free (struct oci_config *c);
void cleanup_oci_configp (struct oci_config **c);
#define cleanup_oci_config __attribute__ ((cleanup (cleanup_oci_configp)))

const char *roce_kv_get (const struct roce_kv *kv, size_t n, const char *key);
/* A Kubernetes pod's container type, as the CRI runtimes annotate it
 * (containerd's io.kubernetes.cri.container-type, CRI-O's
 * io.kubernetes.cri-o.ContainerType): "sandbox", "container", or NULL for
 * a container outside Kubernetes.  */
const char *oci_pod_container_type (const struct roce_kv *kv, size_t n);
bool oci_is_pod_sandbox (const struct roce_kv *kv, size_t n);
/* The value of NAME in a "K=V" environment list, or NULL.  */
const char *oci_env_get (char *const *env, const char *name);
/* The namespace entry of that type, or NULL.  */
const struct oci_namespace *oci_config_namespace (const struct oci_config *c, const char *type);
const struct oci_rlimit *oci_config_rlimit (const struct oci_config *c, const char *type);
bool oci_config_has_cap (const struct oci_config *c, enum oci_cap_set set, const char *cap);

#endif
