/* SPDX-License-Identifier: Apache-2.0 */
/* The node admin's policy, /etc/roce-hook/config.json (trusted, but checked
 * strictly: a typo must not silently change what containers get).  */
#ifndef ROCE_POLICY_H
#define ROCE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/ipaddr.h"

struct json;

#define ROCE_DEFAULT_CONFIG "/etc/roce-hook/config.json"
#define POLICY_MAX (1024 * 1024)
#define HCA_NAME_MAX 63
/* roce.io/hca=auto: the policy HCAs nearest the container's GPUs (topo.h);
 * no HCA may carry the name.  */
#define POLICY_HCA_AUTO "auto"
#define IFNAME_PREFIX_MAX 12
#define POLICY_LOCK_TIMEOUT_MS 10000

enum qos_mode
{
  QOS_MODE_ENFORCE,
  QOS_MODE_WARN,
  QOS_MODE_OFF,
};

enum qos_ecn
{
  QOS_ECN_REQUIRE,
  QOS_ECN_WARN_UNKNOWN,
  QOS_ECN_OFF,
};

/* One address family of a rail: its subnet, pool, gateway and routes.  The
 * keys subnet, pool, gateway and routes are the rail's first family (IPv4 or
 * IPv6); a dual-stack rail's second, IPv6, is subnet6, pool6, gateway6 and
 * routes6.  Every address of one net is of its subnet's family.  */
struct policy_net
{
  struct roce_cidr subnet;
  struct roce_addr pool_first;
  struct roce_addr pool_last;
  bool has_gateway;
  struct roce_addr gateway;
  struct roce_cidr *routes;
  size_t n_routes;
};

/* A rail has one family or two (dual-stack: IPv4 first, then IPv6).  */
#define POLICY_NETS 2

struct policy_hca
{
  char *name;
  char *netdev; /* NULL: found from sysfs */
  struct policy_net net[POLICY_NETS];
  size_t n_nets;
  /* The peer the MTU probe sends full-MTU echoes to (a host on the same
   * rail, of a family the rail has); without it, the IPv4 gateway, else
   * the IPv6 one (policy_hca_probe_peer).  */
  bool has_probe;
  struct roce_addr probe;
  /* Who may use this HCA: Kubernetes namespaces, or "*" for anyone.  NULL:
   * the node-wide default_tenants applies.  */
  char **tenants;
};

struct policy_qos
{
  enum qos_mode mode;
  unsigned pfc_priority;
  unsigned dscp;
  enum qos_ecn ecn;
  unsigned min_mtu;
  /* PFC stall prevention (the ethtool tunable) `qos apply` sets: false
   * when the policy asks for none; 0xffff is "auto".  */
  bool has_stall;
  unsigned stall_ms;
  /* qos.pfc_other_priorities: "keep" (false, the default) or "off": what
   * `qos apply` does with PFC on the priorities other than pfc_priority.  */
  bool pfc_others_off;
  /* qos.switch: the switch port's LLDP-advertised PFC, DSCP map, maximum
   * frame size and traffic class (hook/qos/qos_switch.c).  enforce: an
   * advertised mismatch refuses a start; warn (the default): logged; off:
   * not looked at.  What was not heard never refuses.  */
  enum qos_mode sw;
};

/* The fabric section: per-rail routing, ARP hygiene, the MAC,
 * the duplicate-address probe and the RoCE v2 GID.  */
#define FABRIC_ROUTE_TABLE 100
#define FABRIC_GID_WAIT_MS 300
#define FABRIC_AUTO (-1) /* a devconf value left to the hook's rule */

struct policy_fabric
{
  /* Rail i (roce<i>) routes in table route_table + i, with a rule `from
   * <its address> lookup <table>`; 0: the main table, no rules (the old way). */
  unsigned route_table;
  bool has_mac_prefix; /* false: the kernel's random MAC */
  uint8_t mac_prefix[2];
  /* IPv4 devconf of each macvlan: a value, or FABRIC_AUTO (arp_notify: 1;
   * arp_ignore, arp_announce, rp_filter: 2 when two selected rails share a
   * subnet, else the kernel's default).  */
  int arp_notify, arp_ignore, arp_announce, rp_filter;
  bool ipv6_link_local;    /* false: addr_gen_mode none on the macvlan */
  unsigned dad_probe_ms;   /* 0: no RFC 5227 probe */
  unsigned mtu_probe_ms;   /* 0: no full-MTU DF echo to the gateway/probe at start */
  unsigned gid_wait_ms;    /* the longest wait for the RoCE v2 GID */
  enum qos_mode gid_check; /* default: qos.mode */
};

/* The `cluster` section (blocks.h): addresses come from blocks of each rail
 * subnet's pool that this node holds in etcd.  */
#define CLUSTER_NODE_MAX 253
#define CLUSTER_ENDPOINTS_MAX 16
#define CLUSTER_TIMEOUT_MS 2000
#define CLUSTER_BLOCK 16
#define CLUSTER_RESERVE 8
#define CLUSTER_RELEASE_AFTER_S 600
/* How long the node's liveness record outlives its last renewal (gc's
 * timer renews it every 300 s): while it lives, `blocks release --node`
 * refuses without --force; once it lapsed, the node checks its blocks
 * against etcd before it allocates from them.  */
#define CLUSTER_LIVENESS_TTL_S 900
/* Blocks a node claims for roce.io/ip addresses outside its own blocks,
 * per subnet (each given back as soon as it is empty: blocks.h).  */
#define CLUSTER_MAX_STATIC_BLOCKS 2
/* The addresses one HCA can carry: its port's GID table (256 entries)
 * holds two per address (RoCE v1 and v2).  cluster.max_blocks' default is
 * this many addresses per HCA of the subnet, in blocks.  */
#define CLUSTER_ADDRS_PER_HCA 128

struct policy_etcd
{
  char **endpoints; /* "http(s)://host:port", no trailing '/'; NULL-terminated */
  char *prefix;     /* "/roce-hook/": starts and ends with '/' */
  char *cacert;     /* NULL: the system's CAs */
  char *cert;       /* client certificate and key, both or neither */
  char *key;
  unsigned timeout_ms; /* the longest an etcd exchange may hold a start */
};

struct policy_cluster
{
  char *node; /* default: the host name */
  struct policy_etcd etcd;
  unsigned block;             /* addresses per block, a power of two */
  unsigned reserve;           /* free addresses gc keeps claimed ahead, per subnet */
  unsigned release_after_s;   /* gc gives back a block wholly free this long */
  unsigned max_blocks;        /* per subnet; 0: sized from block and the HCAs (blocks_max) */
  unsigned liveness_ttl_s;    /* the node's liveness record in etcd */
  unsigned max_static_blocks; /* per subnet, claimed for roce.io/ip (0: none) */
};

struct roce_policy
{
  char *path;
  char *state_dir;
  char *sysfs_root;
  /* Where procfs is read (driver/nvidia/gpus/<pci>/information): a test's
   * fake host, as sysfs_root.  */
  char *procfs_root;
  char *log_file; /* NULL when "" */
  char *ifname_prefix;
  /* The real runtime roce-runtime chains to: the policy's `runtime`, a
   * name or a list of candidates (each an absolute path or a bare name),
   * the first installed one used; NULL: the first of runc, crun on PATH.  */
  char **runtimes;
  bool memlock_unlimited;
  uint64_t memlock;
  struct policy_qos qos;
  struct policy_hca *hcas;
  size_t n_hcas;
  /* The node-wide default for HCAs without their own `tenants`; the
   * default default is ["*"].  */
  char **default_tenants;
  /* The longest wait for the lease store's lock.  */
  unsigned lock_timeout_ms;
  /* NULL: node-local addressing (the default).  */
  struct policy_cluster *cluster;
  struct policy_fabric fabric;
  /* Where configfs is mounted (rdma_cm's default ToS and RoCE mode).  */
  char *configfs_root;
  /* What roce-runtime gives an annotated container where its spec sets
   * nothing: RLIMIT_STACK (soft = hard) and the size of /dev/shm.  */
  bool stack_unlimited;
  uint64_t stack;
  uint64_t shm_size;
};

#define POLICY_STACK_DEFAULT (64ull << 20)
#define POLICY_SHM_DEFAULT (1ull << 30)

/* `path` is only used in messages.  */
int policy_parse (const char *buf, const char *path, struct roce_policy **out, roce_error_t *err);
int policy_load (const char *path, struct roce_policy **out, roce_error_t *err);
void policy_free (struct roce_policy *p);
void cleanup_policyp (struct roce_policy **p);
#define cleanup_policy __attribute__ ((cleanup (cleanup_policyp)))

/* The tenant list that applies to h, and the policy key it came from.  */
char *const *policy_hca_tenants (const struct roce_policy *p, const struct policy_hca *h,
                                 const char **key);

/* The `cluster` object (hook/policy_cluster.c); errors name the key as
 * "policy <path>: cluster.<key>: ...".  */
int policy_cluster_parse (const struct json *v, const char *path, struct policy_cluster **out,
                          roce_error_t *err);
void policy_cluster_free (struct policy_cluster *c);
/* The `fabric` object (NULL: absent), into p->fabric; qos must be parsed
 * first (gid_check defaults to qos.mode).  hook/policy_fabric.c.  */
struct json;
int policy_parse_fabric (const struct json *v, const char *path, struct roce_policy *p,
                         roce_error_t *err);

const struct policy_hca *policy_find_hca (const struct roce_policy *p, const char *name);
/* The net of h of that family (AF_INET, AF_INET6), or NULL.  */
const struct policy_net *policy_hca_net (const struct policy_hca *h, int family);
/* The MTU probe's peer of h (fabric.mtu_probe_ms, check --probe): its
 * probe, else its IPv4 gateway, else its IPv6 one (a dual-stack rail is
 * probed in one family: the probe's, else IPv4's); NULL: none.  */
const struct roce_addr *policy_hca_probe_peer (const struct policy_hca *h);
/* A net's pool for messages: "<first>-<last>".  Caller frees.  */
char *policy_net_pool_text (const struct policy_net *n);
/* What NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE select for rails of these
 * HCAs (NCCL takes one family and one range for all): the family of every
 * rail's first net when they agree, else one family every rail has; the
 * smallest CIDR holding each rail's subnet of that family.  false: no
 * family is every rail's (an IPv4 rail beside an IPv6 one).  */
bool policy_nccl_range (const struct policy_hca *const *hcas, size_t n, struct roce_cidr *out);
/* "mlx5_0, mlx5_1": the names the policy lists, for messages.  Caller frees.  */
char *policy_hca_names (const struct roce_policy *p);
/* An HCA name as the kernel and the policy spell them: 1..HCA_NAME_MAX of
 * [A-Za-z0-9_.-], not "." or "..".  */
bool policy_valid_hca_name (const char *s);
/* --config F, else $ROCE_HOOK_CONFIG, else the default.  */
const char *policy_default_path (const char *cli);

const char *qos_mode_name (enum qos_mode m);
const char *qos_ecn_name (enum qos_ecn e);

/* The policy's log_file as the log sink's file, when it names one (a file
 * that cannot be opened is logged, never fatal).  hook/spec/policy_log.c.  */
void policy_open_log (const struct roce_policy *p);

#endif
