/* SPDX-License-Identifier: Apache-2.0 */
/* NRI's wire and messages on bytes containerd 2.1.9 sent and roce-hook nri
 * answered (tests/fixtures/nri/, captured once between the two through a
 * recording proxy on the NRI socket: a pod without RoCE and a RoCE pod with
 * two containers, their lives whole; the plugin connecting again to a
 * runtime with three pods running), read in pieces of any size; the guard
 * on them; hostile frames; the adjustment.  */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "nri/nri_int.h"
#include "devices/grant.h"
#include "unit.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

struct bytes
{
  char *b;
  size_t len;
};

static struct bytes
fixture (const char *name)
{
  cleanup_free char *path = xasprintf ("%s/nri/%s", FIXTURES, name);
  cleanup_error roce_error_t err = NULL;
  struct bytes f = { 0 };
  cr_assert_eq (read_file_at (AT_FDCWD, path, 1 << 20, &f.b, &f.len, &err), 0, "%s", path);
  return f;
}

/* Every ttRPC message of a stream, fed `chunk` bytes at a time.  */
struct msgs
{
  struct ttrpc_msg v[64];
  size_t n;
};

static void
split (const struct bytes *f, size_t chunk, struct msgs *out)
{
  struct nri_rx rx = { 0 };
  cleanup_error roce_error_t err = NULL;
  out->n = 0;
  for (size_t at = 0; at < f->len; at += chunk)
    {
      size_t n = f->len - at < chunk ? f->len - at : chunk;
      int r;
      cr_assert_eq (nri_rx_feed (&rx, f->b + at, n, &err), 0);
      while ((r = nri_rx_next (&rx, &out->v[out->n], &err)) > 0)
        {
          cr_assert_lt (out->n, ARRAY_SIZE (out->v));
          out->n++;
        }
      cr_assert_eq (r, 0);
    }
  cr_assert_eq (rx.trunk.len, 0, "bytes left over in the trunk");
  nri_rx_clear (&rx);
}

static void
msgs_clear (struct msgs *m)
{
  for (size_t i = 0; i < m->n; i++)
    ttrpc_msg_clear (&m->v[i]);
  m->n = 0;
}

static RoceNri__TtrpcRequest *
request (const struct ttrpc_msg *m)
{
  RoceNri__TtrpcRequest *r = NULL;
  cleanup_error roce_error_t err = NULL;
  cr_assert_eq (ttrpc_request_decode (m, &r, &err), 0, "%s", err ? err->msg : "");
  return r;
}

static const char *const pod_methods[] = {
  NULL, /* RegisterPlugin's answer, on the runtime's connection */
  "Configure",   "Synchronize",     "StateChange", "CreateContainer", "StateChange",
  "StateChange", "CreateContainer", "StateChange", "CreateContainer", "StateChange",
  "StateChange", "StateChange",     "StateChange", "StateChange",     "StateChange",
  "StateChange", "StateChange",
};

Test (nri, the_runtimes_stream_split_anywhere_is_the_same_messages)
{
  struct bytes f = fixture ("containerd-2.1.9-pod.rx");
  static const size_t chunks[] = { 1, 7, 10, 4096, 1 << 20 };
  for (size_t c = 0; c < ARRAY_SIZE (chunks); c++)
    {
      struct msgs m;
      split (&f, chunks[c], &m);
      cr_assert_eq (m.n, ARRAY_SIZE (pod_methods), "chunk %zu: %zu messages", chunks[c], m.n);
      /* Its answer to our RegisterPlugin comes first, on conn 2.  */
      cr_assert_eq (m.v[0].conn, NRI_CONN_RUNTIME);
      cr_assert_eq (m.v[0].type, TTRPC_RESPONSE);
      cr_assert_eq (m.v[0].stream, 1);
      for (size_t i = 1; i < m.n; i++)
        {
          RoceNri__TtrpcRequest *r = request (&m.v[i]);
          cr_assert_eq (m.v[i].conn, NRI_CONN_PLUGIN);
          cr_assert_eq (m.v[i].stream, 2 * i - 1, "the runtime's streams are odd, in order");
          cr_assert_str_eq (r->service, NRI_SERVICE_PLUGIN);
          cr_assert_str_eq (r->method, pod_methods[i]);
          /* The runtime's 2 s, less what it took to send.  */
          cr_assert (r->timeout_nano > 1900000000LL && r->timeout_nano <= 2000000000LL);
          roce_nri__ttrpc_request__free_unpacked (r, NULL);
        }
      msgs_clear (&m);
    }
  free (f.b);
}

Test (nri, configure_and_a_roce_pods_create_read_as_the_plugin_reads_them)
{
  struct bytes f = fixture ("containerd-2.1.9-pod.rx");
  struct msgs m;
  RoceNri__TtrpcRequest *r;
  RoceNri__ConfigureRequest *cfg;
  RoceNri__CreateContainerRequest *web, *roce;
  struct nri_pod pod;
  struct nri_ctr ctr;
  cleanup_error roce_error_t err = NULL;

  split (&f, 4096, &m);
  r = request (&m.v[1]);
  cfg = roce_nri__configure_request__unpack (NULL, r->payload.len, r->payload.data);
  cr_assert_not_null (cfg);
  cr_assert_str_eq (cfg->runtime_name, "containerd");
  cr_assert_str_eq (cfg->runtime_version, "2.1.9+unknown");
  cr_assert_eq (cfg->request_timeout, 2000);
  cr_assert_eq (cfg->registration_timeout, 5000);
  roce_nri__configure_request__free_unpacked (cfg, NULL);
  roce_nri__ttrpc_request__free_unpacked (r, NULL);

  /* The pod without RoCE: not a request.  */
  r = request (&m.v[4]);
  web = roce_nri__create_container_request__unpack (NULL, r->payload.len, r->payload.data);
  roce_nri__ttrpc_request__free_unpacked (r, NULL);
  cr_assert_not_null (web);
  cr_assert_eq (nri_pod_read (web->pod, false, &pod, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (pod.name, "web");
  cr_assert_not (pod.asks);
  nri_pod_clear (&pod);
  roce_nri__create_container_request__free_unpacked (web, NULL);

  /* The RoCE pod's first container.  */
  r = request (&m.v[7]);
  roce = roce_nri__create_container_request__unpack (NULL, r->payload.len, r->payload.data);
  roce_nri__ttrpc_request__free_unpacked (r, NULL);
  cr_assert_not_null (roce);
  cr_assert_eq (nri_pod_read (roce->pod, false, &pod, &err), 0, "%s", err ? err->msg : "");
  cr_assert (pod.asks);
  cr_assert_str_eq (pod.hca, "mlx5_0");
  cr_assert_null (pod.ip);
  cr_assert_str_eq (pod.ns, "default");
  cr_assert_str_eq (pod.name, "trainer");
  cr_assert_not_null (strstr (pod.netns, "/io.containerd.grpc.v1.cri/netns/cni-"));
  /* The tenant rule's namespace is the runtime's record of the pod, and
   * of the pod's own annotations only the roce.io/ ones are read.  */
  cr_assert_str_eq (roce_kv_get (pod.kv, pod.n_kv, "io.kubernetes.pod.namespace"), "default");
  cr_assert_str_eq (roce_kv_get (pod.kv, pod.n_kv, "io.kubernetes.cri.container-type"),
                    "container");
  cr_assert_null (roce_kv_get (pod.kv, pod.n_kv, "io.kubernetes.cri.sandbox-namespace"));
  cr_assert_eq (nri_ctr_read (roce->container, &ctr, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (ctr.name, "app");
  cr_assert_str_eq (ctr.pod_id, pod.id);
  cr_assert_null (ctr.marker, "the plugin's request is the spec before any adjustment");
  cr_assert_str_eq (oci_env_get (ctr.config->env, "PATH"), "/bin");
  cr_assert_null (oci_config_rlimit (ctr.config, "RLIMIT_MEMLOCK"));
  /* The guard, asked about it, refuses: no mark.  */
  cr_assert_lt (nri_guard_check (&pod, ctr.id, ctr.marker, &err), 0);
  cr_assert_not_null (strstr (err->msg, "the RoCE pod's container: prepared by roce-hook's NRI "
                                        "plugin vs not prepared (fix: the NRI plugin roce-hook is "
                                        "down"));
  roce_error_release (&err);
  cr_assert_eq (nri_guard_check (&pod, ctr.id, ctr.id, &err), 0, "marked: it runs");
  nri_ctr_clear (&ctr);
  nri_pod_clear (&pod);
  roce_nri__create_container_request__free_unpacked (roce, NULL);
  msgs_clear (&m);
  free (f.b);
}

/* What the plugin sent: its registration, and the adjustment of the RoCE
 * pod's first container, as the runtime decodes them.  */
Test (nri, the_plugins_registration_and_adjustment_as_sent)
{
  struct bytes f = fixture ("containerd-2.1.9-pod.tx");
  struct msgs m;
  RoceNri__TtrpcRequest *r;
  RoceNri__RegisterPluginRequest *reg;
  RoceNri__TtrpcResponse *rep = NULL;
  RoceNri__CreateContainerResponse *cc;
  const RoceNri__ContainerAdjustment *a;
  cleanup_error roce_error_t err = NULL;
  size_t i;

  split (&f, 3, &m);
  cr_assert_eq (m.n, 18);
  r = request (&m.v[0]);
  cr_assert_eq (m.v[0].conn, NRI_CONN_RUNTIME);
  cr_assert_str_eq (r->service, NRI_SERVICE_RUNTIME);
  cr_assert_str_eq (r->method, "RegisterPlugin");
  reg = roce_nri__register_plugin_request__unpack (NULL, r->payload.len, r->payload.data);
  cr_assert_str_eq (reg->plugin_name, NRI_PLUGIN_NAME);
  cr_assert_str_eq (reg->plugin_idx, NRI_PLUGIN_INDEX);
  roce_nri__register_plugin_request__free_unpacked (reg, NULL);
  roce_nri__ttrpc_request__free_unpacked (r, NULL);
  /* The answer on stream 13: CreateContainer of the RoCE pod's app.  */
  for (i = 1; i < m.n && m.v[i].stream != 13; i++)
    ;
  cr_assert_lt (i, m.n);
  cr_assert_eq (ttrpc_response_decode (&m.v[i], &rep, &err), 0);
  cr_assert_null (rep->status);
  cc = roce_nri__create_container_response__unpack (NULL, rep->payload.len, rep->payload.data);
  cr_assert_not_null (cc);
  a = cc->adjust;
  cr_assert_eq (a->n_annotations, 1);
  cr_assert_str_eq (a->annotations[0]->key, NRI_MARKER);
  cr_assert_eq (strlen (a->annotations[0]->value), 64);
  cr_assert_eq (a->linux_->n_devices, 2);
  cr_assert_str_eq (a->linux_->devices[0]->path, "/dev/infiniband/uverbs0");
  cr_assert_eq (a->linux_->devices[0]->major, 231);
  cr_assert_eq (a->linux_->devices[0]->file_mode->value, 0666);
  cr_assert_str_eq (a->linux_->devices[1]->path, "/dev/infiniband/rdma_cm");
  cr_assert_str_eq (a->rlimits[0]->type, "RLIMIT_MEMLOCK");
  cr_assert_eq (a->rlimits[0]->hard, a->rlimits[0]->soft);
  cr_assert_eq (a->n_env, 4);
  cr_assert_str_eq (a->env[0]->key, "NCCL_IB_HCA");
  cr_assert_str_eq (a->env[0]->value, "mlx5_0");
  cr_assert_str_eq (a->env[1]->value, "106");
  cr_assert_eq (a->n_mounts, 1);
  cr_assert_str_eq (a->mounts[0]->destination, "/dev/roce/rails");
  roce_nri__create_container_response__free_unpacked (cc, NULL);
  roce_nri__ttrpc_response__free_unpacked (rep, NULL);
  msgs_clear (&m);
  free (f.b);
}

/* The plugin connecting again to a runtime with pods running: one
 * Synchronize with all of them, the mark on the container it prepared
 * before, none on the pod without RoCE's.  */
Test (nri, synchronize_lists_the_running_pods_and_the_marks)
{
  struct bytes f = fixture ("containerd-2.1.9-sync.rx");
  struct msgs m;
  RoceNri__TtrpcRequest *r;
  RoceNri__SynchronizeRequest *s;
  size_t asks = 0, marked = 0;
  cleanup_error roce_error_t err = NULL;

  split (&f, 100, &m);
  r = request (&m.v[2]);
  cr_assert_str_eq (r->method, "Synchronize");
  s = roce_nri__synchronize_request__unpack (NULL, r->payload.len, r->payload.data);
  cr_assert_not_null (s);
  cr_assert_not (s->more);
  cr_assert_eq (s->n_pods, 3);
  cr_assert_eq (s->n_containers, 2);
  for (size_t i = 0; i < s->n_pods; i++)
    {
      struct nri_pod pod;
      cr_assert_eq (nri_pod_read (s->pods[i], true, &pod, &err), 0);
      asks += pod.asks;
      cr_assert_not_null (pod.netns);
      nri_pod_clear (&pod);
    }
  for (size_t i = 0; i < s->n_containers; i++)
    {
      struct nri_ctr ctr;
      cr_assert_eq (nri_ctr_read (s->containers[i], &ctr, &err), 0);
      cr_assert_gt (ctr.pid, 0);
      cr_assert_eq (s->containers[i]->state, 3, "running");
      marked += ctr.marker && strcmp (ctr.marker, ctr.id) == 0;
      nri_ctr_clear (&ctr);
    }
  cr_assert_eq (asks, 2);
  cr_assert_eq (marked, 1);
  roce_nri__synchronize_request__free_unpacked (s, NULL);
  roce_nri__ttrpc_request__free_unpacked (r, NULL);
  msgs_clear (&m);
  free (f.b);
}

/* The guard fed the runtime's bytes answers every request, on its stream:
 * the RoCE pod's containers (no mark: the capture is of the plugin's
 * requests) refused in one line, everything else answered empty.  */
Test (nri, the_guard_answers_every_request_of_the_capture)
{
  struct bytes f = fixture ("containerd-2.1.9-pod.rx");
  struct nri_opts o = { .config_path = "/nonexistent", .fd = -1, .role = NRI_ROLE_GUARD };
  struct nri_plugin pl = { .o = &o, .fd = -1, .request_timeout_ms = 2000 };
  struct bytes answers;
  struct msgs m;
  size_t refused = 0;
  cleanup_error roce_error_t err = NULL;

  cr_assert_eq (nri_serve_bytes (&pl, f.b, f.len, &err), 0, "%s", err ? err->msg : "");
  answers.b = (char *) pl.tx.p;
  answers.len = pl.tx.len;
  split (&answers, 4096, &m);
  cr_assert_eq (m.n, ARRAY_SIZE (pod_methods) - 1);
  for (size_t i = 0; i < m.n; i++)
    {
      RoceNri__TtrpcResponse *rep = NULL;
      cr_assert_eq (m.v[i].stream, 2 * i + 1);
      cr_assert_eq (ttrpc_response_decode (&m.v[i], &rep, &err), 0);
      if (rep->status)
        {
          refused++;
          cr_assert_eq (rep->status->code, RPC_FAILED_PRECONDITION);
          cr_assert_str_eq (pod_methods[i + 1], "CreateContainer");
          cr_assert_not_null (strstr (rep->status->message, ": the RoCE pod's container: "));
          cr_assert_null (strchr (rep->status->message, '\n'));
        }
      roce_nri__ttrpc_response__free_unpacked (rep, NULL);
    }
  cr_assert_eq (refused, 2, "the RoCE pod's two containers, not the other pod's");
  msgs_clear (&m);
  nri_plugin_clear (&pl);
  free (f.b);
}

/* ---- hostile frames ------------------------------------------------------------ */

static void
be32 (uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t) (v >> 24);
  p[1] = (uint8_t) (v >> 16);
  p[2] = (uint8_t) (v >> 8);
  p[3] = (uint8_t) v;
}

Test (nri, a_frame_or_message_too_long_ends_the_connection)
{
  struct nri_rx rx = { 0 };
  struct ttrpc_msg m;
  uint8_t h[18] = { 0 };
  cleanup_error roce_error_t err = NULL;

  be32 (h, 1);
  be32 (h + 4, NRI_MUX_MAX + 1);
  cr_assert_lt (nri_rx_feed (&rx, h, 8, &err), 0);
  cr_assert_not_null (strstr (err->msg, "NRI connection frame: at most"));
  roce_error_release (&err);
  nri_rx_clear (&rx);

  /* A whole frame announcing a ttRPC message over 4 MiB.  */
  be32 (h, 1);
  be32 (h + 4, 10);
  be32 (h + 8, TTRPC_DATA_MAX + 1);
  be32 (h + 12, 1);
  h[16] = TTRPC_REQUEST;
  cr_assert_lt (nri_rx_feed (&rx, h, 18, &err), 0);
  cr_assert_eq (nri_rx_next (&rx, &m, &err), 0);
  cr_assert_not_null (strstr (err->msg, "at most 4194304 bytes of data"));
  nri_rx_clear (&rx);
}

Test (nri, frames_of_unknown_connections_are_dropped_and_odd_requests_answered)
{
  struct nri_opts o = { .config_path = "/nonexistent", .fd = -1, .role = NRI_ROLE_PLUGIN };
  struct nri_plugin pl = { .o = &o, .fd = -1, .request_timeout_ms = 2000 };
  struct nri_buf in = { 0 };
  struct bytes answers;
  struct msgs m;
  cleanup_error roce_error_t err = NULL;
  uint8_t junk[12] = { 0 };
  RoceNri__TtrpcRequest r = ROCE_NRI__TTRPC_REQUEST__INIT;
  RoceNri__Empty e = ROCE_NRI__EMPTY__INIT;
  uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
  const char *reasons[] = { "NRI method: one of the Plugin service's vs Frobnicate",
                            "NRI CreateContainer: a request of nri.proto's form vs one that does "
                            "not decode",
                            "ttRPC request flags: 0 (unary) vs 0x1" };

  /* Connection 7 (nobody's): dropped.  */
  be32 (junk, 7);
  be32 (junk + 4, 4);
  nri_buf_append (&in, junk, sizeof (junk));
  /* An unknown method, a payload that is no CreateContainerRequest, a
   * streaming request.  */
  {
    size_t len;
    cleanup_free uint8_t *empty = NULL, *env = NULL;
    size_t elen;
    r.service = (char *) NRI_SERVICE_PLUGIN;
    r.method = (char *) "Frobnicate";
    empty = nri_pack (&e.base, &elen);
    r.payload.data = empty;
    r.payload.len = elen;
    env = nri_pack (&r.base, &len);
    cr_assert_eq (nri_tx_frame (&in, NRI_CONN_PLUGIN, 1, TTRPC_REQUEST, 0, env, len, &err), 0);
  }
  {
    size_t len;
    cleanup_free uint8_t *env = NULL;
    r.method = (char *) "CreateContainer";
    r.payload.data = garbage;
    r.payload.len = sizeof (garbage);
    env = nri_pack (&r.base, &len);
    cr_assert_eq (nri_tx_frame (&in, NRI_CONN_PLUGIN, 3, TTRPC_REQUEST, 0, env, len, &err), 0);
    cr_assert_eq (nri_tx_frame (&in, NRI_CONN_PLUGIN, 5, TTRPC_REQUEST, 1, env, len, &err), 0);
  }
  cr_assert_eq (nri_serve_bytes (&pl, in.p, in.len, &err), 0, "%s", err ? err->msg : "");
  answers.b = (char *) pl.tx.p;
  answers.len = pl.tx.len;
  split (&answers, 4096, &m);
  cr_assert_eq (m.n, 3);
  for (size_t i = 0; i < m.n; i++)
    {
      RoceNri__TtrpcResponse *rep = NULL;
      cr_assert_eq (m.v[i].stream, 2 * i + 1);
      cr_assert_eq (ttrpc_response_decode (&m.v[i], &rep, &err), 0);
      cr_assert_not_null (rep->status);
      cr_assert_not_null (strstr (rep->status->message, reasons[i]), "%s", rep->status->message);
      roce_nri__ttrpc_response__free_unpacked (rep, NULL);
    }
  msgs_clear (&m);
  nri_buf_clear (&in);
  nri_plugin_clear (&pl);
}

/* A Synchronize split by the runtime (more = true): each part answered
 * `more`, the whole taken at the last.  */
Test (nri, a_split_synchronize_is_answered_part_by_part)
{
  struct nri_opts o = { .config_path = "/nonexistent", .fd = -1, .role = NRI_ROLE_GUARD };
  struct nri_plugin pl = { .o = &o, .fd = -1, .request_timeout_ms = 2000 };
  struct nri_buf in = { 0 };
  struct bytes answers;
  struct msgs m;
  cleanup_error roce_error_t err = NULL;

  for (int part = 0; part < 2; part++)
    {
      RoceNri__SynchronizeRequest s = ROCE_NRI__SYNCHRONIZE_REQUEST__INIT;
      RoceNri__TtrpcRequest r = ROCE_NRI__TTRPC_REQUEST__INIT;
      cleanup_free uint8_t *payload = NULL, *env = NULL;
      size_t plen, elen;
      s.more = part == 0;
      payload = nri_pack (&s.base, &plen);
      r.service = (char *) NRI_SERVICE_PLUGIN;
      r.method = (char *) "Synchronize";
      r.payload.data = payload;
      r.payload.len = plen;
      env = nri_pack (&r.base, &elen);
      cr_assert_eq (nri_tx_frame (&in, NRI_CONN_PLUGIN, 1 + 2 * (uint32_t) part, TTRPC_REQUEST, 0,
                                  env, elen, &err),
                    0);
    }
  cr_assert_eq (nri_serve_bytes (&pl, in.p, in.len, &err), 0);
  cr_assert_eq (pl.n_sync_parts, 0, "the parts taken and freed");
  answers.b = (char *) pl.tx.p;
  answers.len = pl.tx.len;
  split (&answers, 4096, &m);
  cr_assert_eq (m.n, 2);
  for (size_t i = 0; i < 2; i++)
    {
      RoceNri__TtrpcResponse *rep = NULL;
      RoceNri__SynchronizeResponse *s;
      cr_assert_eq (ttrpc_response_decode (&m.v[i], &rep, &err), 0);
      s = roce_nri__synchronize_response__unpack (NULL, rep->payload.len, rep->payload.data);
      cr_assert_eq (s->more, i == 0);
      roce_nri__synchronize_response__free_unpacked (s, NULL);
      roce_nri__ttrpc_response__free_unpacked (rep, NULL);
    }
  msgs_clear (&m);
  nri_buf_clear (&in);
  nri_plugin_clear (&pl);
}

Test (nri, a_tenant_cannot_write_the_mark)
{
  struct nri_pod pod = { .id = "p", .asks = true, .has_marker = true };
  cleanup_error roce_error_t err = NULL;
  cr_assert_lt (nri_guard_check (&pod, "c1", "c1", &err), 0);
  cr_assert_str_eq (err->msg, "pod annotation " NRI_MARKER ": none (the plugin's alone) vs one "
                              "written in the pod (fix: remove it from the pod; the plugin marks "
                              "what it prepared)");
  roce_error_release (&err);
  pod.has_marker = false;
  cr_assert_lt (nri_guard_check (&pod, "c1", "c2", &err), 0);
  cr_assert_not_null (strstr (err->msg, "vs a mark naming another container"));
  roce_error_release (&err);
  pod.asks = false;
  cr_assert_eq (nri_guard_check (&pod, "c1", NULL, &err), 0, "a pod that did not ask: untouched");
}

/* The adjustment: the container's own NCCL values and RLIMIT_STACK kept,
 * the rest added.  */
Test (nri, the_adjustment_keeps_what_the_container_set)
{
  struct roce_policy p = { .memlock_unlimited = true, .stack = 65536 };
  struct rdma_node nodes[1] = { { .path = "/dev/infiniband/uverbs3", .major = 231, .minor = 195 } };
  struct spec_grant g = { .nccl_ib_hca = (char *) "mlx5_3",
                          .nccl_ib_tc = (char *) "106",
                          .nccl_ib_sl = (char *) "3",
                          .nodes = nodes,
                          .n_nodes = 1 };
  char *env[] = { (char *) "NCCL_IB_TC=98", NULL };
  struct oci_rlimit stack = { .type = (char *) "RLIMIT_STACK", .hard = 8, .soft = 8 };
  struct oci_config have = { .env = env, .rlimits = &stack, .n_rlimits = 1 };
  RoceNri__ContainerAdjustment *a = nri_adjust_new ("c1");

  strcpy (g.nccl_ib_addr_range, "198.18.0.0/16");
  nri_adjust_grant (a, &p, &g, &have, NULL);
  cr_assert_eq (a->n_env, 3, "NCCL_IB_TC is the container's");
  for (size_t i = 0; i < a->n_env; i++)
    cr_assert_str_neq (a->env[i]->key, "NCCL_IB_TC");
  cr_assert_eq (a->n_rlimits, 1, "RLIMIT_STACK is the container's");
  cr_assert_eq (a->rlimits[0]->hard, UINT64_MAX, "memlock unlimited");
  cr_assert_eq (a->n_mounts, 0, "no rails: no mount");
  cr_assert_eq (a->linux_->devices[0]->minor, 195);
  roce_nri__container_adjustment__free_unpacked (a, NULL);
}

/* An IPv6 grant: its range and NCCL_IB_ADDR_FAMILY=AF_INET6, as
 * roce-runtime sets them; rails of no common family: neither.  */
static const char *
adjusted_env (const RoceNri__ContainerAdjustment *a, const char *key)
{
  for (size_t i = 0; i < a->n_env; i++)
    if (strcmp (a->env[i]->key, key) == 0)
      return a->env[i]->value;
  return NULL;
}

Test (nri, an_ipv6_grant_sets_the_nccl_family)
{
  struct roce_policy p = { 0 };
  struct spec_grant g = { .nccl_ib_hca = (char *) "mlx5_0",
                          .nccl_ib_tc = (char *) "106",
                          .nccl_ib_sl = (char *) "3",
                          .nccl_ib_addr_family = "AF_INET6" };
  RoceNri__ContainerAdjustment *a = nri_adjust_new ("c1");

  strcpy (g.nccl_ib_addr_range, "2001:2:0:10::/64");
  nri_adjust_grant (a, &p, &g, NULL, NULL);
  cr_assert_str_eq (adjusted_env (a, "NCCL_IB_ADDR_RANGE"), "2001:2:0:10::/64");
  cr_assert_str_eq (adjusted_env (a, "NCCL_IB_ADDR_FAMILY"), "AF_INET6");
  roce_nri__container_adjustment__free_unpacked (a, NULL);

  a = nri_adjust_new ("c2");
  g.nccl_ib_addr_range[0] = '\0';
  g.nccl_ib_addr_family = NULL;
  nri_adjust_grant (a, &p, &g, NULL, NULL);
  cr_assert_null (adjusted_env (a, "NCCL_IB_ADDR_RANGE"), "no common family: no range");
  cr_assert_null (adjusted_env (a, "NCCL_IB_ADDR_FAMILY"));
  cr_assert_str_eq (adjusted_env (a, "NCCL_IB_HCA"), "mlx5_0");
  roce_nri__container_adjustment__free_unpacked (a, NULL);
}
