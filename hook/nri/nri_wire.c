/* SPDX-License-Identifier: Apache-2.0 */
/* NRI's bytes: the runtime's trunk split into its multiplexed connections
 * (containerd/nri pkg/net/multiplex: a frame is a 4-byte connection id and
 * a 4-byte length, big-endian, then that many bytes of the connection's
 * stream), each connection's stream into ttRPC messages (a 10-byte header:
 * data length and stream id, big-endian 32 bits each, the message type and
 * its flags, a byte each; data at most 4 MiB), and the envelope of a
 * request and a response (nri.proto's TtrpcRequest, TtrpcResponse).
 * Everything here is the wire's: bounded and checked before it is used,
 * nothing done on the host.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri_int.h"
#include "lib/utils.h"

static uint32_t
get_be32 (const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

static void
put_be32 (uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t) (v >> 24);
  p[1] = (uint8_t) (v >> 16);
  p[2] = (uint8_t) (v >> 8);
  p[3] = (uint8_t) v;
}

void
nri_buf_append (struct nri_buf *b, const void *data, size_t n)
{
  if (n == 0)
    return;
  if (b->len + n > b->cap)
    {
      size_t cap = b->cap ? b->cap : 4096;
      while (cap < b->len + n)
        cap *= 2;
      b->p = xrealloc (b->p, cap);
      b->cap = cap;
    }
  memcpy (b->p + b->len, data, n);
  b->len += n;
}

/* Drops the first n bytes.  */
static void
buf_consume (struct nri_buf *b, size_t n)
{
  memmove (b->p, b->p + n, b->len - n);
  b->len -= n;
}

void
nri_buf_clear (struct nri_buf *b)
{
  free (b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

void
nri_rx_clear (struct nri_rx *rx)
{
  nri_buf_clear (&rx->trunk);
  for (size_t i = 0; i < ARRAY_SIZE (rx->conn); i++)
    nri_buf_clear (&rx->conn[i]);
  for (size_t i = rx->head; i < rx->n_ready; i++)
    ttrpc_msg_clear (&rx->ready[i]);
  free (rx->ready);
  rx->ready = NULL;
  rx->n_ready = rx->head = 0;
}

/* The whole messages of connection conn's stream, queued.  */
static int
take_messages (struct nri_rx *rx, uint32_t conn, roce_error_t *err)
{
  struct nri_buf *b = &rx->conn[conn];
  for (;;)
    {
      struct ttrpc_msg *m;
      uint32_t len;
      if (b->len < TTRPC_HEADER)
        return 0;
      len = get_be32 (b->p);
      if (len > TTRPC_DATA_MAX)
        return roce_error_make (err, EPROTO,
                                "ttRPC message on NRI connection %u: at most %u bytes of data vs "
                                "%u (fix: connect roce-hook nri to an NRI socket)",
                                conn, TTRPC_DATA_MAX, len);
      if (b->len - TTRPC_HEADER < len)
        return 0;
      if (rx->head == rx->n_ready)
        rx->head = rx->n_ready = 0;
      rx->ready = xrealloc (rx->ready, (rx->n_ready + 1) * sizeof (*rx->ready));
      m = &rx->ready[rx->n_ready++];
      m->conn = conn;
      m->stream = get_be32 (b->p + 4);
      m->type = b->p[8];
      m->flags = b->p[9];
      m->len = len;
      m->data = xmalloc0 (len + 1);
      memcpy (m->data, b->p + TTRPC_HEADER, len);
      buf_consume (b, TTRPC_HEADER + len);
    }
}

/* The trunk's whole frames go to their connections' streams; a frame for a
 * connection nobody opened is dropped, as NRI's own mux drops it.  */
int
nri_rx_feed (struct nri_rx *rx, const void *data, size_t n, roce_error_t *err)
{
  size_t at = 0;
  int ret = 0;

  nri_buf_append (&rx->trunk, data, n);
  while (rx->trunk.len - at >= NRI_MUX_HEADER)
    {
      const uint8_t *h = rx->trunk.p + at;
      uint32_t conn = get_be32 (h), len = get_be32 (h + 4);
      if (len > NRI_MUX_MAX)
        {
          ret = roce_error_make (err, EPROTO,
                                 "NRI connection frame: at most %u bytes vs %u (fix: connect "
                                 "roce-hook nri to an NRI socket)",
                                 NRI_MUX_MAX, len);
          break;
        }
      if (rx->trunk.len - at - NRI_MUX_HEADER < len)
        break;
      if (conn < ARRAY_SIZE (rx->conn) && conn != 0)
        {
          if (rx->conn[conn].len + len > NRI_STREAM_MAX)
            {
              ret = roce_error_make (err, EPROTO,
                                     "NRI connection %u: a ttRPC message within %u bytes vs "
                                     "more (fix: connect roce-hook nri to an NRI socket)",
                                     conn, NRI_STREAM_MAX);
              break;
            }
          nri_buf_append (&rx->conn[conn], h + NRI_MUX_HEADER, len);
          if ((ret = take_messages (rx, conn, err)) < 0)
            break;
        }
      at += NRI_MUX_HEADER + len;
    }
  buf_consume (&rx->trunk, at);
  return ret < 0 ? -1 : 0;
}

int
nri_rx_next (struct nri_rx *rx, struct ttrpc_msg *out, roce_error_t *err)
{
  (void) err;
  if (rx->head == rx->n_ready)
    return 0;
  *out = rx->ready[rx->head++];
  return 1;
}

void
ttrpc_msg_clear (struct ttrpc_msg *m)
{
  free (m->data);
  m->data = NULL;
  m->len = 0;
}

int
nri_tx_frame (struct nri_buf *out, uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags,
              const void *data, size_t len, roce_error_t *err)
{
  uint8_t h[NRI_MUX_HEADER + TTRPC_HEADER];

  if (len > TTRPC_DATA_MAX)
    return roce_error_make (err, EMSGSIZE, "ttRPC message: at most %u bytes of data vs %zu",
                            TTRPC_DATA_MAX, len);
  /* One connection frame holds a whole ttRPC message: NRI_MUX_MAX is the
   * largest one.  */
  put_be32 (h, conn);
  put_be32 (h + 4, (uint32_t) (TTRPC_HEADER + len));
  put_be32 (h + NRI_MUX_HEADER, (uint32_t) len);
  put_be32 (h + NRI_MUX_HEADER + 4, stream);
  h[NRI_MUX_HEADER + 8] = type;
  h[NRI_MUX_HEADER + 9] = flags;
  nri_buf_append (out, h, sizeof (h));
  nri_buf_append (out, data, len);
  return 0;
}

/* ---- the envelope -------------------------------------------------------- */

int
ttrpc_request_decode (const struct ttrpc_msg *m, RoceNri__TtrpcRequest **out, roce_error_t *err)
{
  if (m->type != TTRPC_REQUEST)
    return roce_error_make (err, EPROTO, "ttRPC message type: a request (1) vs %u", m->type);
  if (m->flags != 0)
    return roce_error_make (
        err, EPROTO, "ttRPC request flags: 0 (unary) vs 0x%x (NRI streams nothing)", m->flags);
  if (m->stream % 2 == 0)
    return roce_error_make (err, EPROTO, "ttRPC request stream: an odd id vs %u", m->stream);
  *out = roce_nri__ttrpc_request__unpack (NULL, m->len, m->data);
  if (*out == NULL)
    return roce_error_make (err, EPROTO,
                            "ttRPC request: a protobuf message vs %zu bytes of another", m->len);
  return 0;
}

int
ttrpc_response_decode (const struct ttrpc_msg *m, RoceNri__TtrpcResponse **out, roce_error_t *err)
{
  if (m->type != TTRPC_RESPONSE)
    return roce_error_make (err, EPROTO, "ttRPC message type: a response (2) vs %u", m->type);
  *out = roce_nri__ttrpc_response__unpack (NULL, m->len, m->data);
  if (*out == NULL)
    return roce_error_make (err, EPROTO,
                            "ttRPC response: a protobuf message vs %zu bytes of another", m->len);
  return 0;
}

/* msg packed into a new buffer (caller frees); *len its size.  */
uint8_t *
nri_pack (const ProtobufCMessage *msg, size_t *len)
{
  uint8_t *buf;
  *len = protobuf_c_message_get_packed_size (msg);
  buf = xmalloc0 (*len + 1);
  protobuf_c_message_pack (msg, buf);
  return buf;
}

int
ttrpc_respond (struct nri_buf *out, uint32_t stream, const ProtobufCMessage *reply, int code,
               const char *message, roce_error_t *err)
{
  RoceNri__TtrpcResponse r = ROCE_NRI__TTRPC_RESPONSE__INIT;
  RoceNri__RpcStatus st = ROCE_NRI__RPC_STATUS__INIT;
  cleanup_free uint8_t *payload = NULL, *env = NULL;
  size_t plen = 0, elen;

  if (code != 0)
    {
      st.code = code;
      st.message = (char *) (message ? message : "");
      r.status = &st;
    }
  else if (reply)
    {
      payload = nri_pack (reply, &plen);
      r.payload.data = payload;
      r.payload.len = plen;
    }
  env = nri_pack (&r.base, &elen);
  return nri_tx_frame (out, NRI_CONN_PLUGIN, stream, TTRPC_RESPONSE, 0, env, elen, err);
}

int
ttrpc_call (struct nri_buf *out, uint32_t stream, const char *service, const char *method,
            const ProtobufCMessage *req, int64_t timeout_ns, roce_error_t *err)
{
  RoceNri__TtrpcRequest r = ROCE_NRI__TTRPC_REQUEST__INIT;
  cleanup_free uint8_t *payload = NULL, *env = NULL;
  size_t plen, elen;

  payload = nri_pack (req, &plen);
  r.service = (char *) service;
  r.method = (char *) method;
  r.payload.data = payload;
  r.payload.len = plen;
  r.timeout_nano = timeout_ns;
  env = nri_pack (&r.base, &elen);
  return nri_tx_frame (out, NRI_CONN_RUNTIME, stream, TTRPC_REQUEST, 0, env, elen, err);
}
