/* SPDX-License-Identifier: Apache-2.0 */
/* The fuzz targets' bodies, shared by libFuzzer (tests/fuzz/fuzz_*.c) and
 * the corpus replay in the unit tests.  */
#include <stdlib.h>
#include <string.h>

#include "ipam/blocks/blocks.h"
#include "ipam/blocks/etcd.h"
#include "ipam/ipam_int.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "lldp/lldp.h"
#include "nri/nri_int.h"
#include "probe/pmtu.h"
#include "shim.h"
#include "spec/annot.h"
#include "spec/oci.h"
#include "spec/policy.h"
#include "sys/dcb.h"
#include "targets.h"
#include "topo/topo_int.h"

/* The parsers take NUL-terminated text, as the hook hands them.  */
static char *
text (const uint8_t *data, size_t size)
{
  char *s = xmalloc0 (size + 1);
  memcpy (s, data, size);
  return s;
}

int
fuzz_one_oci_state (const uint8_t *data, size_t size)
{
  cleanup_free char *s = text (data, size);
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_state struct oci_state *st = NULL;
  oci_state_parse (s, &st, &err);
  return 0;
}

int
fuzz_one_oci_config (const uint8_t *data, size_t size)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_oci_config struct oci_config *c = NULL;
  cleanup_json struct json *root = NULL;
  /* The shim's lenient look (annotation or ROCE_HCA in process.env).  */
  shim_config_asks ((const char *) data, size);
  if (json_parse_n ((const char *) data, size, &root, &err) == 0
      && oci_config_from_tree (root, "/run/bundle", &c, &err) == 0)
    {
      struct shim_ask ask;
      oci_env_get (c->env, "NCCL_IB_TC");
      oci_config_namespace (c, "network");
      oci_config_rlimit (c, "RLIMIT_MEMLOCK");
      /* The request, annotations else env, written into the annotations.  */
      roce_error_release (&err);
      if (shim_ask_of (root, c->env, &ask, &err) == 1)
        shim_ask_annotate (root, &ask);
    }
  return 0;
}

int
fuzz_one_policy (const uint8_t *data, size_t size)
{
  cleanup_free char *s = text (data, size);
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  if (policy_parse (s, "fuzz.json", &p, &err) == 0)
    {
      cleanup_free char *names = policy_hca_names (p);
    }
  return 0;
}

/* Input: "<roce.io/hca value>\n<roce.io/ip value>" (the second part
 * optional), against a fixed policy: mlx5_0 dual-stack, mlx5_1 IPv4,
 * mlx5_2 IPv6.  */
int
fuzz_one_annot (const uint8_t *data, size_t size)
{
  static const char *pol = "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"192.168.100.0/"
                           "24\",\"pool\":\"192.168.100.100-192.168.100.199\","
                           "\"subnet6\":\"fd00:10::/64\",\"pool6\":\"fd00:10::100-fd00:10::1ff\"},"
                           "\"mlx5_1\":{\"subnet\":\"192.168.101.0/"
                           "24\",\"pool\":\"192.168.101.100-192.168.101.199\"},"
                           "\"mlx5_2\":{\"subnet\":\"fd00:12::/64\","
                           "\"pool\":\"fd00:12::1-fd00:12::ffff:ffff:ffff:ffff\"}}}";
  cleanup_free char *s = text (data, size);
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  struct roce_request r = { 0 };
  char *nl;

  if (policy_parse (pol, "fuzz.json", &p, &err) < 0)
    abort ();
  nl = strchr (s, '\n');
  if (nl)
    *nl = '\0';
  if (annot_parse (p, s, nl ? nl + 1 : NULL, &r, &err) == 0)
    {
      cleanup_free char *names = annot_request_names (&r);
      annot_request_clear (&r);
    }
  return 0;
}

/* Input: the store as one document (leases.json's format, which the
 * upgrade from an earlier layout reads, and the holders' and blocks.json's
 * objects within it): holders and blocks of either family.  What parses
 * is written back, and that text parses to itself again.  */
int
fuzz_one_store (const uint8_t *data, size_t size)
{
  cleanup_free char *s = text (data, size);
  cleanup_lease_store struct lease_store *a = xmalloc0 (sizeof (*a));
  cleanup_lease_store struct lease_store *b = xmalloc0 (sizeof (*b));
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *once = NULL, *twice = NULL;

  a->dir_fd = a->lock_fd = b->dir_fd = b->lock_fd = -1;
  if (lease_store_parse (a, s, &err) < 0)
    return 0;
  once = lease_store_format (a);
  if (lease_store_parse (b, once, &err) < 0)
    abort (); /* the store's own text unreadable */
  twice = lease_store_format (b);
  if (strcmp (once, twice) != 0)
    abort ();
  for (size_t i = 0; i < a->n; i++)
    {
      cleanup_free char *h = lease_holder_format (a->h[i]);
      cleanup_free char *users = lease_holder_users (a->h[i], false);
    }
  {
    cleanup_free char *bl = lease_blocks_format (a);
  }
  return 0;
}

/* Input: one datagram as the kernel would answer RTM_GETDCB (netlink
 * messages); the sequence number asked for is the first message's.  */
int
fuzz_one_dcb (const uint8_t *data, size_t size)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free uint8_t *buf = NULL;
  struct dcb_reply r;
  uint32_t seq = 0;

  if (size == 0)
    return 0;
  /* Netlink buffers are 4-byte aligned; the parser may rely on it.  */
  buf = xmalloc0 (size + 4);
  memcpy (buf, data, size);
  if (size >= 12)
    memcpy (&seq, buf + 8, sizeof (seq));
  dcb_reply_init (&r, seq);
  if (dcb_reply_feed (&r, buf, size, &err) == 0 && r.have_data)
    {
      cleanup_free char *l = dcb_prio_list (r.ieee.pfc_en);
      cleanup_free char *x = dcb_dcbx_text (r.ieee.dcbx);
    }
  return 0;
}

/* The answers of a fake etcd member: NUL-separated; each call takes the
 * next, and the last is given again and again (a member that keeps
 * answering the same).  */
struct fake_etcd
{
  const uint8_t *data;
  size_t size, pos;
  const uint8_t *last;
  size_t last_n;
  unsigned calls;
};

static int
fake_answer (void *arg, const char *path, const char *body, char **answer, size_t *len)
{
  struct fake_etcd *f = arg;
  (void) path;
  (void) body;
  if (++f->calls > 100000)
    abort (); /* a caller that never stops asking */
  if (f->pos < f->size)
    {
      const uint8_t *nul = memchr (f->data + f->pos, '\0', f->size - f->pos);
      size_t n = nul ? (size_t) (nul - (f->data + f->pos)) : f->size - f->pos;
      f->last = f->data + f->pos;
      f->last_n = n;
      f->pos += n + 1;
    }
  if (f->last == NULL)
    return -1;
  *answer = xmalloc0 (f->last_n + 1);
  memcpy (*answer, f->last, f->last_n);
  *len = f->last_n;
  return 0;
}

struct seen
{
  char *prev;
  const char *prefix;
};

static int
seen_kv (const struct etcd_kv *kv, void *arg)
{
  struct seen *s = arg;
  /* What a listing hands on lies under its prefix, in ascending order.  */
  if (strncmp (kv->key, s->prefix, strlen (s->prefix)) != 0
      || (s->prev && strcmp (kv->key, s->prev) <= 0))
    abort ();
  free (s->prev);
  s->prev = xstrdup (kv->key);
  /* A block's key of either family (an IPv6 one in full, as the hook
   * writes it, or as another writer spelled it): what parses is said back
   * as a key that parses to the same block.  */
  {
    static const struct policy_cluster c = { .etcd = { .prefix = "/roce-hook/" }, .block = 16 };
    struct roce_cidr sub, sub2;
    struct roce_addr first, first2;
    if (blocks_key_parse (&c, kv->key, &sub, &first) == 0)
      {
        cleanup_free char *again = blocks_key (&c, &sub, &first);
        if (blocks_key_parse (&c, again, &sub2, &first2) < 0 || ! cidr_eq (&sub, &sub2)
            || ! addr_eq (&first, &first2))
          abort ();
      }
  }
  {
    cleanup_error roce_error_t ve = NULL;
    cleanup_free char *node = NULL, *id = NULL;
    int64_t since;
    unsigned bsize;
    blocks_value_parse (kv->value, &node, &id, &since, &bsize, &ve);
  }
  return 0;
}

/* Input: answers of etcd's JSON gateway (a txn's, a range's), NUL-separated:
 * each through every parser of the cluster client, and the whole as a
 * member's answers to a paged listing (etcd_range_each: every page must
 * move on, whatever "more" says), to a claim's transaction (its ranges'
 * keys where they were asked) and to a lease grant.  */
int
fuzz_one_etcd (const uint8_t *data, size_t size)
{
  static const struct policy_etcd conf = { .timeout_ms = 2000 };
  const char *text = (const char *) data;
  size_t first = memchr (data, '\0', size)
                     ? (size_t) ((const uint8_t *) memchr (data, '\0', size) - data)
                     : size;
  struct etcd_kv kv = { 0 };
  struct etcd_kvs kvs = { 0 };
  int64_t deleted;
  cleanup_error roce_error_t e1 = NULL;
  cleanup_error roce_error_t e2 = NULL;
  cleanup_error roce_error_t e3 = NULL;

  etcd_parse_txn (text, first, &kv, &e1);
  etcd_parse_txn_deleted (text, first, &deleted, &e2);
  if (etcd_parse_range (text, first, &kvs, &e3) == 0)
    for (size_t i = 0; i < kvs.n; i++)
      {
        cleanup_error roce_error_t ve = NULL;
        cleanup_error roce_error_t le = NULL;
        cleanup_free char *node = NULL, *id = NULL, *lnode = NULL, *lid = NULL;
        int64_t since;
        unsigned bsize;
        blocks_value_parse (kvs.v[i].value, &node, &id, &since, &bsize, &ve);
        blocks_liveness_parse (kvs.v[i].value, &lnode, &lid, &le);
      }
  etcd_kv_clear (&kv);
  etcd_kvs_clear (&kvs);

  /* A paged listing.  */
  {
    struct fake_etcd f = { .data = data, .size = size };
    cleanup_etcd_client struct etcd_client *c = NULL;
    cleanup_error roce_error_t err = NULL;
    struct seen sn = { .prefix = "/roce-hook/blocks/" };
    etcd_open_transport (&conf, fake_answer, &f, &c);
    etcd_range_each (c, sn.prefix, false, seen_kv, &sn, &err);
    free (sn.prev);
  }
  /* A claim's transaction: put the block, else read it, the geometry and
   * a page of its group.  */
  {
    struct fake_etcd f = { .data = data, .size = size };
    cleanup_etcd_client struct etcd_client *c = NULL;
    cleanup_error roce_error_t err = NULL;
    const char *key = "/roce-hook/blocks/198.18.20.0_23/198.18.20.16";
    struct etcd_cmp cmps[]
        = { { .key = key },
            { .key = "/roce-hook/geometry/198.18.20.0_23", .value = "{\"block\":16}" } };
    struct etcd_op put[] = { { .kind = ETCD_OP_PUT, .key = key, .value = "v" } };
    struct etcd_op fail[] = {
      { .kind = ETCD_OP_RANGE, .key = key },
      { .kind = ETCD_OP_RANGE, .key = "/roce-hook/geometry/198.18.20.0_23" },
      { .kind = ETCD_OP_RANGE,
        .key = "/roce-hook/blocks/198.18.20.0_23/198.18.20.",
        .range_end = "/roce-hook/blocks/198.18.20.0_23/198.18.20/",
        .limit = 4,
        .keys_only = true },
    };
    struct etcd_txn t = { 0 };
    int64_t lease = 0;
    etcd_open_transport (&conf, fake_answer, &f, &c);
    if (etcd_txn (c, cmps, 2, put, 1, fail, 3, &t, &err) == 0)
      {
        if (t.ranges[0].n > 1 || t.ranges[1].n > 1 || t.ranges[2].n > 4)
          abort ();
        if (t.ranges[0].n == 1 && strcmp (t.ranges[0].v[0].key, key) != 0)
          abort ();
        for (size_t i = 0; i < t.ranges[2].n; i++)
          if (strncmp (t.ranges[2].v[i].key, fail[2].key, strlen (fail[2].key)) != 0)
            abort ();
      }
    etcd_txn_clear (&t);
    roce_error_release (&err);
    etcd_lease_grant (c, 60, &lease, &err);
  }
  return 0;
}

/* A process file as containerd hands it to `runc exec --process F`, edited
 * as the shim does for an annotated container, then generated again.  */
int
fuzz_one_shim_process (const uint8_t *data, size_t size)
{
  static const struct shim_edit e = { .memlock = 4194304,
                                      .nccl_ib_hca = "mlx5_0",
                                      .nccl_ib_tc = "106",
                                      .nccl_ib_addr_range = "198.18.10.0/24" };
  cleanup_error roce_error_t err = NULL;
  cleanup_json struct json *j = NULL;
  if (json_parse_n ((const char *) data, size, &j, &err) == 0
      && shim_edit_process (j, &e, &err) == 0)
    {
      cleanup_json_gen struct json_gen *g = json_gen_new (false);
      const char *b;
      size_t l;
      json_gen_tree (g, j);
      json_gen_result (g, &b, &l, NULL);
    }
  return 0;
}

/* Input: one datagram as the kernel would answer RTM_SETDCB (IEEE_SET or
 * IEEE_DEL: the command is the first message's); the sequence number asked
 * for is the first message's.  */
int
fuzz_one_dcb_set (const uint8_t *data, size_t size)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free uint8_t *buf = NULL;
  struct dcb_set_reply r;
  uint32_t seq = 0;
  uint8_t cmd = 20; /* DCB_CMD_IEEE_SET */

  if (size == 0)
    return 0;
  buf = xmalloc0 (size + 4);
  memcpy (buf, data, size);
  if (size >= 12)
    memcpy (&seq, buf + 8, sizeof (seq));
  if (size >= 18 && buf[17] == 27) /* DCB_CMD_IEEE_DEL */
    cmd = 27;
  dcb_set_reply_init (&r, seq, cmd);
  dcb_set_reply_feed (&r, buf, size, &err);
  return 0;
}

/* Input: one received Ethernet frame (a switch's LLDPDU, or anything a
 * hostile neighbour sends to 0x88CC), through the decoder, the names made
 * of it, and a record's text and back.  */
int
fuzz_one_lldp (const uint8_t *data, size_t size)
{
  cleanup_error roce_error_t err = NULL;
  struct lldp_info in;
  char id[2 * LLDP_TEXT_MAX + 2];

  if (size > LLDP_FRAME_MAX)
    size = LLDP_FRAME_MAX;
  if (lldp_decode (data, size, &in, &err) == 0)
    {
      cleanup_free char *rec = lldp_record_format ("eth0", 1, data, size);
      uint8_t back[LLDP_FRAME_MAX];
      size_t blen = 0;
      int64_t heard = 0;
      cleanup_error roce_error_t perr = NULL;
      lldp_identity (&in, id, sizeof (id));
      for (const char *c = id; *c; c++)
        if ((unsigned char) *c < 0x20 || (unsigned char) *c > 0x7e)
          abort (); /* a kept string is printable ASCII only */
      if (rec == NULL || lldp_record_parse (rec, strlen (rec), back, &blen, &heard, &perr) < 0
          || blen != size || memcmp (back, data, size) != 0 || heard != 1)
        abort ();
    }
  return 0;
}

void
fuzz_icmp_echoes (int family, struct pmtu_echoes *e)
{
  static uint8_t data[FUZZ_ICMP_PAYLOAD];
  static const uint8_t src6[16] = { 0xfd, 0, 0, 0x10, [14] = 0x01, [15] = 0x50 };
  static const uint8_t dst6[16] = { 0xfd, 0, 0, 0x10, [14] = 0x02, [15] = 0x54 };
  uint32_t s = 0;
  for (size_t i = 0; i < sizeof (data); i++)
    data[i] = (uint8_t) (i * 7 + 13);
  for (size_t i = 0; i + 1 < sizeof (data); i += 2)
    s += (uint32_t) (data[i] << 8 | data[i + 1]);
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  *e = (struct pmtu_echoes){ .src = addr_v4 (0xc6120a96),
                             .dst = addr_v4 (0xc6120afe),
                             .id = 0x5a17,
                             .seq_first = 0xfffe,
                             .n_sent = 3,
                             .payload = sizeof (data),
                             .payload_sum = s,
                             .data = data };
  if (family == AF_INET6)
    {
      addr_from_bytes (AF_INET6, src6, &e->src);
      addr_from_bytes (AF_INET6, dst6, &e->dst);
    }
}

/* What pmtu_match accepted must be one of the answers the round could
 * have: a whole or shorter echo of our bytes, or a cut naming an MTU
 * below what was sent (IPv6: at least 1280).  */
static void
icmp_answer (int family, const struct pmtu_echoes *e, const struct pmtu_result *r)
{
  unsigned sent = pmtu_overhead (family) + e->payload;
  switch (r->outcome)
    {
      case PMTU_OK:
        if (r->got != e->payload)
          abort ();
        break;
      case PMTU_SHORT:
        if (r->got >= e->payload)
          abort ();
        break;
      case PMTU_CUT:
        if (family == AF_INET6 ? r->next_mtu < 1280 || r->next_mtu >= sent
                               : r->next_mtu != 0 && (r->next_mtu < 68 || r->next_mtu >= sent))
          abort ();
        break;
      default:
        abort ();
    }
}

/* Input: one IPv4 datagram as the probe's raw ICMP socket reads it, against
 * a round of three echoes (fuzz_icmp_echoes).  */
int
fuzz_one_icmp (const uint8_t *data, size_t size)
{
  struct pmtu_echoes e;
  struct pmtu_result r = { 0 };
  /* Exactly size bytes: a read past them is the sanitizer's to see.  */
  cleanup_free uint8_t *b = xmalloc0 (size ? size : 1);

  memcpy (b, data, size);
  fuzz_icmp_echoes (AF_INET, &e);
  if (pmtu_match (&e, NULL, b, size, &r) == 1)
    icmp_answer (AF_INET, &e, &r);
  return 0;
}

/* Input: the sender's IPv6 address (16 bytes, as the raw ICMPv6 socket's
 * recvfrom names it), then the ICMPv6 message the socket reads, against
 * the IPv6 round (fuzz_icmp_echoes).  */
int
fuzz_one_icmp6 (const uint8_t *data, size_t size)
{
  struct pmtu_echoes e;
  struct pmtu_result r = { 0 };
  struct roce_addr from;
  cleanup_free uint8_t *b = NULL;

  if (size < 16)
    return 0;
  b = xmalloc0 (size - 16 ? size - 16 : 1);
  memcpy (b, data + 16, size - 16);
  addr_from_bytes (AF_INET6, data, &from);
  fuzz_icmp_echoes (AF_INET6, &e);
  if (pmtu_match (&e, &from, b, size - 16, &r) == 1)
    icmp_answer (AF_INET6, &e, &r);
  return 0;
}

/* Input: "<first line>\n<rest>".  The first line is an
 * NVIDIA_VISIBLE_DEVICES value, a cpuset and a PCI path under
 * <sysfs>/devices; the whole is a GPU's information file.  */
int
fuzz_one_topo (const uint8_t *data, size_t size)
{
  cleanup_free char *s = text (data, size);
  cleanup_free char *line = xstrndup (s, strcspn (s, "\n"));
  cleanup_free char *uuid = NULL;
  cleanup_free struct topo_cpuset *cpus = xmalloc0 (sizeof (*cpus));
  struct topo_refs refs = { 0 };
  struct topo_pos pos;
  int minor;

  {
    cleanup_error roce_error_t err = NULL;
    topo_parse_visible ("NVIDIA_VISIBLE_DEVICES", line, &refs, &err);
    topo_refs_clear (&refs);
  }
  topo_parse_information (s, &uuid, &minor);
  topo_parse_cpulist (line, cpus);
  {
    cleanup_error roce_error_t err = NULL;
    if (topo_pos_parse (line, &pos, &err) == 0)
      {
        topo_distance (&pos, &pos);
        topo_pos_clear (&pos);
      }
  }
  return 0;
}

/* What the runtime sends the NRI plugin (its trunk's bytes): the wire,
 * each request's envelope and message, the pods and containers read as
 * the plugin reads them, and the answers, through the plugin and the guard
 * (in two pieces: where the bytes split must not matter).  The plugin's
 * policy does not exist: every RoCE start is refused before anything on
 * the host is looked at.  */
static void
nri_messages (const uint8_t *data, size_t size)
{
  struct nri_rx rx = { 0 };
  struct ttrpc_msg m;
  cleanup_error roce_error_t err = NULL;

  nri_rx_feed (&rx, data, size, &err);
  while (nri_rx_next (&rx, &m, &err) > 0)
    {
      RoceNri__TtrpcRequest *r = NULL;
      RoceNri__CreateContainerRequest *cc = NULL;
      RoceNri__SynchronizeRequest *sy = NULL;
      RoceNri__StateChangeEvent *ev = NULL;
      const RoceNri__PodSandbox *pods[64];
      const RoceNri__Container *ctrs[64];
      size_t np = 0, nc = 0;
      cleanup_error roce_error_t rerr = NULL;

      if (ttrpc_request_decode (&m, &r, &rerr) < 0 || r->method == NULL)
        goto next;
      if (strcmp (r->method, "CreateContainer") == 0
          && (cc
              = roce_nri__create_container_request__unpack (NULL, r->payload.len, r->payload.data)))
        {
          pods[np++] = cc->pod;
          ctrs[nc++] = cc->container;
        }
      else if (strcmp (r->method, "Synchronize") == 0
               && (sy
                   = roce_nri__synchronize_request__unpack (NULL, r->payload.len, r->payload.data)))
        {
          for (size_t i = 0; i < sy->n_pods && np < 64; i++)
            pods[np++] = sy->pods[i];
          for (size_t i = 0; i < sy->n_containers && nc < 64; i++)
            ctrs[nc++] = sy->containers[i];
        }
      else if (strcmp (r->method, "StateChange") == 0
               && (ev
                   = roce_nri__state_change_event__unpack (NULL, r->payload.len, r->payload.data)))
        {
          pods[np++] = ev->pod;
          ctrs[nc++] = ev->container;
        }
      for (size_t i = 0; i < np; i++)
        for (int sandbox = 0; sandbox < 2; sandbox++)
          {
            struct nri_pod pod;
            cleanup_error roce_error_t perr = NULL;
            if (nri_pod_read (pods[i], sandbox, &pod, &perr) == 0)
              {
                cleanup_error roce_error_t gerr = NULL;
                nri_guard_check (&pod, "c1", "c1", &gerr);
                nri_pod_clear (&pod);
              }
          }
      for (size_t i = 0; i < nc; i++)
        {
          struct nri_ctr ctr;
          cleanup_error roce_error_t cerr = NULL;
          if (nri_ctr_read (ctrs[i], &ctr, &cerr) == 0)
            nri_ctr_clear (&ctr);
        }
      if (cc)
        roce_nri__create_container_request__free_unpacked (cc, NULL);
      if (sy)
        roce_nri__synchronize_request__free_unpacked (sy, NULL);
      if (ev)
        roce_nri__state_change_event__free_unpacked (ev, NULL);
    next:
      if (r)
        roce_nri__ttrpc_request__free_unpacked (r, NULL);
      ttrpc_msg_clear (&m);
    }
  nri_rx_clear (&rx);
}

int
fuzz_one_nri (const uint8_t *data, size_t size)
{
  nri_messages (data, size);
  for (int role = NRI_ROLE_PLUGIN; role <= NRI_ROLE_GUARD; role++)
    {
      struct nri_opts o = { .config_path = "/nonexistent/roce-hook-fuzz/config.json",
                            .fd = -1,
                            .role = (enum nri_role) role };
      struct nri_plugin pl = { .o = &o, .fd = -1, .request_timeout_ms = 2000 };
      cleanup_error roce_error_t err = NULL;
      size_t half = size / 2;
      if (nri_serve_bytes (&pl, data, half, &err) == 0)
        nri_serve_bytes (&pl, data + half, size - half, &err);
      nri_plugin_clear (&pl);
    }
  return 0;
}

const struct fuzz_target fuzz_targets[] = {
  { "oci_state", fuzz_one_oci_state },
  { "oci_config", fuzz_one_oci_config },
  { "policy", fuzz_one_policy },
  { "annot", fuzz_one_annot },
  { "dcb", fuzz_one_dcb },
  { "etcd", fuzz_one_etcd },
  { "shim_process", fuzz_one_shim_process },
  { "dcb_set", fuzz_one_dcb_set },
  { "lldp", fuzz_one_lldp },
  { "icmp", fuzz_one_icmp },
  { "icmp6", fuzz_one_icmp6 },
  { "topo", fuzz_one_topo },
  { "nri", fuzz_one_nri },
  { "store", fuzz_one_store },
  { NULL, NULL },
};
