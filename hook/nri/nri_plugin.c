/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's connection to the runtime: connect (or the socket the
 * runtime handed over), register on the runtime's connection, serve the
 * Plugin service on the plugin's (Configure, Synchronize, Shutdown, the
 * container requests, the state changes), one request at a time, as the
 * runtime sends them (it holds its NRI lock across each).  A lost
 * connection is made again until the plugin is stopped.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sys/confine.h"
#include "lib/log.h"
#include "nri/nri_int.h"
#include "lib/utils.h"

/* NRI's defaults (containerd/nri pkg/api/timeouts.go).  */
#define NRI_REQUEST_TIMEOUT_MS 2000
#define NRI_REGISTRATION_TIMEOUT_MS 5000
/* A lost connection is tried again after 100 ms, doubling to 2 s.  */
#define NRI_RETRY_MIN_MS 100
#define NRI_RETRY_MAX_MS 2000
/* A reply the runtime does not read within this: the connection is gone. */
#define NRI_WRITE_TIMEOUT_MS 5000

int32_t
nri_events (enum nri_role role)
{
  if (role == NRI_ROLE_GUARD)
    return NRI_EVENT_BIT (NRI_EV_CREATE_CONTAINER);
  return NRI_EVENT_BIT (NRI_EV_RUN_POD_SANDBOX) | NRI_EVENT_BIT (NRI_EV_STOP_POD_SANDBOX)
         | NRI_EVENT_BIT (NRI_EV_REMOVE_POD_SANDBOX) | NRI_EVENT_BIT (NRI_EV_CREATE_CONTAINER)
         | NRI_EVENT_BIT (NRI_EV_POST_START_CONTAINER) | NRI_EVENT_BIT (NRI_EV_REMOVE_CONTAINER);
}

long
nri_ms_left (const struct nri_plugin *pl)
{
  return (long) (pl->deadline_ms - mono_ms ());
}

/* The request's end: its own timeout (ttRPC's timeout_nano, the runtime's
 * context) or the plugin timeout Configure gave, whichever is sooner, less
 * the answer's margin.  */
static void
deadline_set (struct nri_plugin *pl, int64_t timeout_ns)
{
  int64_t ms = pl->request_timeout_ms > 0 ? pl->request_timeout_ms : NRI_REQUEST_TIMEOUT_MS;
  if (timeout_ns > 0 && timeout_ns / 1000000 < ms)
    ms = timeout_ns / 1000000;
  ms -= NRI_ANSWER_MARGIN_MS;
  pl->deadline_ms = mono_ms () + (ms < 0 ? 0 : ms);
}

static void
sync_parts_clear (struct nri_plugin *pl)
{
  for (size_t i = 0; i < pl->n_sync_parts; i++)
    roce_nri__synchronize_request__free_unpacked (pl->sync_parts[i], NULL);
  free (pl->sync_parts);
  pl->sync_parts = NULL;
  pl->n_sync_parts = 0;
}

/* ---- the Plugin service ---------------------------------------------------- */

static int
respond_empty (struct nri_plugin *pl, uint32_t stream, roce_error_t *err)
{
  RoceNri__Empty e = ROCE_NRI__EMPTY__INIT;
  return ttrpc_respond (&pl->tx, stream, &e.base, RPC_OK, NULL, err);
}

static int
respond_refusal (struct nri_plugin *pl, uint32_t stream, const char *id, roce_error_t *refusal,
                 roce_error_t *err)
{
  cleanup_free char *line = nri_refusal_line (id, (*refusal)->msg);
  roce_log (ROCE_LOG_ERR, "refused: %s", (*refusal)->msg);
  return ttrpc_respond (&pl->tx, stream, NULL, RPC_FAILED_PRECONDITION, line, err);
}

/* A request's payload that is not the message its method takes.  */
static int
respond_garbled (struct nri_plugin *pl, uint32_t stream, const char *method, roce_error_t *err)
{
  cleanup_free char *line = xasprintf (
      "roce-hook: -: NRI %s: a request of nri.proto's form vs one that does not decode "
      "(fix: run roce-hook nri against an NRI runtime)",
      method);
  roce_log (ROCE_LOG_WARN, "%s", line);
  return ttrpc_respond (&pl->tx, stream, NULL, RPC_INVALID_ARGUMENT, line, err);
}

static int
on_configure (struct nri_plugin *pl, uint32_t stream, const ProtobufCBinaryData *payload,
              roce_error_t *err)
{
  RoceNri__ConfigureResponse rep = ROCE_NRI__CONFIGURE_RESPONSE__INIT;
  RoceNri__ConfigureRequest *req
      = roce_nri__configure_request__unpack (NULL, payload->len, payload->data);
  if (req == NULL)
    return respond_garbled (pl, stream, "Configure", err);
  if (req->request_timeout > 0)
    pl->request_timeout_ms = req->request_timeout;
  free (pl->runtime);
  {
    /* Raw: every line that names it is escaped where it is printed.  */
    pl->runtime = xasprintf ("%s %s", req->runtime_name ? req->runtime_name : "",
                             req->runtime_version ? req->runtime_version : "");
  }
  roce_log (ROCE_LOG_INFO, "%s: configured by %s (requests within %lld ms)",
            pl->o->role == NRI_ROLE_GUARD ? "guard" : "plugin", pl->runtime,
            (long long) pl->request_timeout_ms);
  roce_nri__configure_request__free_unpacked (req, NULL);
  pl->configured = true;
  pl->status_dirty = true;
  rep.events = nri_events (pl->o->role);
  return ttrpc_respond (&pl->tx, stream, &rep.base, RPC_OK, NULL, err);
}

/* The pods and containers of every part of a split Synchronize, at once.  */
static void
sync_whole (struct nri_plugin *pl)
{
  size_t np = 0, nc = 0;
  cleanup_free RoceNri__PodSandbox **pods = NULL;
  cleanup_free RoceNri__Container **ctrs = NULL;

  for (size_t i = 0; i < pl->n_sync_parts; i++)
    {
      np += pl->sync_parts[i]->n_pods;
      nc += pl->sync_parts[i]->n_containers;
    }
  pods = xmalloc0 ((np + 1) * sizeof (*pods));
  ctrs = xmalloc0 ((nc + 1) * sizeof (*ctrs));
  np = nc = 0;
  for (size_t i = 0; i < pl->n_sync_parts; i++)
    {
      const RoceNri__SynchronizeRequest *r = pl->sync_parts[i];
      for (size_t k = 0; k < r->n_pods; k++)
        pods[np++] = r->pods[k];
      for (size_t k = 0; k < r->n_containers; k++)
        ctrs[nc++] = r->containers[k];
    }
  if (pl->o->role == NRI_ROLE_PLUGIN)
    nri_on_sync (pl, pods, np, ctrs, nc);
  else
    roce_log (ROCE_LOG_INFO, "guard: synchronized: %zu pods, %zu containers", np, nc);
}

static int
on_synchronize (struct nri_plugin *pl, uint32_t stream, const ProtobufCBinaryData *payload,
                roce_error_t *err)
{
  RoceNri__SynchronizeResponse rep = ROCE_NRI__SYNCHRONIZE_RESPONSE__INIT;
  RoceNri__SynchronizeRequest *req
      = roce_nri__synchronize_request__unpack (NULL, payload->len, payload->data);
  if (req == NULL)
    {
      sync_parts_clear (pl);
      return respond_garbled (pl, stream, "Synchronize", err);
    }
  pl->sync_parts = xrealloc (pl->sync_parts, (pl->n_sync_parts + 1) * sizeof (*pl->sync_parts));
  pl->sync_parts[pl->n_sync_parts++] = req;
  /* More to come: this part is kept, and taken as one with the rest.  */
  rep.more = req->more;
  if (! req->more)
    {
      sync_whole (pl);
      sync_parts_clear (pl);
    }
  return ttrpc_respond (&pl->tx, stream, &rep.base, RPC_OK, NULL, err);
}

static int
on_create (struct nri_plugin *pl, uint32_t stream, const ProtobufCBinaryData *payload,
           roce_error_t *err)
{
  RoceNri__CreateContainerResponse rep = ROCE_NRI__CREATE_CONTAINER_RESPONSE__INIT;
  RoceNri__ContainerAdjustment *adjust = NULL;
  cleanup_error roce_error_t refusal = NULL;
  cleanup_free char *id = NULL;
  int ret;
  RoceNri__CreateContainerRequest *req
      = roce_nri__create_container_request__unpack (NULL, payload->len, payload->data);
  if (req == NULL)
    return respond_garbled (pl, stream, "CreateContainer", err);
  /* A start's lines reach the log_file in one write (nothing here forks).  */
  roce_log_batch (true);
  ret = nri_on_create (pl, req->pod, req->container, &adjust, &id, &refusal);
  roce_log_batch (false);
  if (ret < 0)
    ret = respond_refusal (pl, stream, id, &refusal, err);
  else
    {
      rep.adjust = adjust;
      ret = ttrpc_respond (&pl->tx, stream, &rep.base, RPC_OK, NULL, err);
    }
  if (adjust)
    roce_nri__container_adjustment__free_unpacked (adjust, NULL);
  roce_nri__create_container_request__free_unpacked (req, NULL);
  return ret;
}

static int
on_stop (struct nri_plugin *pl, uint32_t stream, const ProtobufCBinaryData *payload,
         roce_error_t *err)
{
  /* The pod's network is the pod's: a container's stop leaves it.  */
  RoceNri__StopContainerResponse rep = ROCE_NRI__STOP_CONTAINER_RESPONSE__INIT;
  RoceNri__StopContainerRequest *req
      = roce_nri__stop_container_request__unpack (NULL, payload->len, payload->data);
  if (req == NULL)
    return respond_garbled (pl, stream, "StopContainer", err);
  roce_nri__stop_container_request__free_unpacked (req, NULL);
  return ttrpc_respond (&pl->tx, stream, &rep.base, RPC_OK, NULL, err);
}

static int
on_state_change (struct nri_plugin *pl, uint32_t stream, const ProtobufCBinaryData *payload,
                 roce_error_t *err)
{
  int ret;
  RoceNri__StateChangeEvent *ev
      = roce_nri__state_change_event__unpack (NULL, payload->len, payload->data);
  if (ev == NULL)
    return respond_garbled (pl, stream, "StateChange", err);
  if (pl->o->role == NRI_ROLE_PLUGIN)
    switch (ev->event)
      {
        case NRI_EV_RUN_POD_SANDBOX:
          roce_log_batch (true);
          nri_on_run_pod (pl, ev->pod);
          roce_log_batch (false);
          break;
        case NRI_EV_STOP_POD_SANDBOX:
          nri_on_stop_pod (pl, ev->pod);
          break;
        case NRI_EV_REMOVE_POD_SANDBOX:
          nri_on_remove_pod (pl, ev->pod);
          break;
        case NRI_EV_POST_START_CONTAINER:
          nri_on_started (pl, ev->pod, ev->container);
          break;
        case NRI_EV_REMOVE_CONTAINER:
          nri_on_remove_ctr (pl, ev->container);
          break;
        default:
          break;
      }
  ret = respond_empty (pl, stream, err);
  roce_nri__state_change_event__free_unpacked (ev, NULL);
  return ret;
}

/* One request of the runtime's, answered into pl->tx.  */
static int
serve (struct nri_plugin *pl, const struct ttrpc_msg *m, roce_error_t *err)
{
  RoceNri__TtrpcRequest *req = NULL;
  cleanup_error roce_error_t derr = NULL;
  const char *method;
  int ret;

  if (m->type != TTRPC_REQUEST)
    {
      roce_log (ROCE_LOG_DEBUG,
                "NRI: a ttRPC message of type %u on the plugin's connection: ignored", m->type);
      return 0;
    }
  if (ttrpc_request_decode (m, &req, &derr) < 0)
    {
      cleanup_free char *line = xasprintf ("roce-hook: -: %s", derr->msg);
      roce_log (ROCE_LOG_WARN, "%s", derr->msg);
      return ttrpc_respond (&pl->tx, m->stream, NULL, RPC_INVALID_ARGUMENT, line, err);
    }
  deadline_set (pl, req->timeout_nano);
  method = req->method ? req->method : "";
  if (req->service == NULL || strcmp (req->service, NRI_SERVICE_PLUGIN) != 0)
    {
      cleanup_free char *s = str_escape (req->service ? req->service : "");
      cleanup_free char *line
          = xasprintf ("roce-hook: -: ttRPC service: %s vs %s", NRI_SERVICE_PLUGIN, s);
      ret = ttrpc_respond (&pl->tx, m->stream, NULL, RPC_UNIMPLEMENTED, line, err);
    }
  else if (strcmp (method, "Configure") == 0)
    ret = on_configure (pl, m->stream, &req->payload, err);
  else if (strcmp (method, "Synchronize") == 0)
    ret = on_synchronize (pl, m->stream, &req->payload, err);
  else if (strcmp (method, "Shutdown") == 0)
    {
      roce_log (ROCE_LOG_INFO, "NRI: the runtime is shutting down");
      pl->shutdown = true;
      ret = respond_empty (pl, m->stream, err);
    }
  else if (strcmp (method, "CreateContainer") == 0)
    ret = on_create (pl, m->stream, &req->payload, err);
  else if (strcmp (method, "StopContainer") == 0)
    ret = on_stop (pl, m->stream, &req->payload, err);
  else if (strcmp (method, "StateChange") == 0)
    ret = on_state_change (pl, m->stream, &req->payload, err);
  else if (strcmp (method, "UpdateContainer") == 0)
    ret = respond_empty (pl, m->stream, err); /* not subscribed: no change */
  else
    {
      cleanup_free char *s = str_escape (method);
      cleanup_free char *line = xasprintf ("roce-hook: -: NRI method: one of the Plugin "
                                           "service's vs %s",
                                           s);
      ret = ttrpc_respond (&pl->tx, m->stream, NULL, RPC_UNIMPLEMENTED, line, err);
    }
  roce_nri__ttrpc_request__free_unpacked (req, NULL);
  return ret;
}

/* An answer on the runtime's connection: RegisterPlugin's.  */
static int
answered (struct nri_plugin *pl, const struct ttrpc_msg *m, roce_error_t *err)
{
  RoceNri__TtrpcResponse *rep = NULL;
  if (ttrpc_response_decode (m, &rep, err) < 0)
    return -1;
  if (m->stream == pl->register_stream)
    {
      if (rep->status && rep->status->code != RPC_OK)
        {
          cleanup_free char *msg = str_quote (rep->status->message ? rep->status->message : "");
          roce_nri__ttrpc_response__free_unpacked (rep, NULL);
          return roce_error_make (err, EPROTO, "NRI registration: accepted vs refused: %s", msg);
        }
      pl->registered = true;
    }
  roce_nri__ttrpc_response__free_unpacked (rep, NULL);
  return 0;
}

/* Whatever the runtime sent, answered; -1 when the connection is to end
 * (the wire broken).  */
int
nri_serve_bytes (struct nri_plugin *pl, const void *data, size_t n, roce_error_t *err)
{
  struct ttrpc_msg m = { 0 };
  int r;

  if (nri_rx_feed (&pl->rx, data, n, err) < 0)
    return -1;
  while ((r = nri_rx_next (&pl->rx, &m, err)) > 0)
    {
      int ret = m.conn == NRI_CONN_RUNTIME ? answered (pl, &m, err) : serve (pl, &m, err);
      ttrpc_msg_clear (&m);
      if (ret < 0)
        return -1;
    }
  return r;
}

/* ---- the connection ---------------------------------------------------------- */

static int
dial (const char *path, roce_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  cleanup_close int fd = -1;

  if (strlen (path) >= sizeof (sa.sun_path))
    return roce_error_make (err, ENAMETOOLONG, "NRI socket `%s`: at most %zu bytes of path vs more",
                            path, sizeof (sa.sun_path) - 1);
  memcpy (sa.sun_path, path, strlen (path) + 1);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return roce_error_sys (err, errno, "socket");
  if (connect (fd, (struct sockaddr *) &sa, sizeof (sa)) < 0)
    return roce_error_sys (err, errno, "connect to the NRI socket `%s`", path);
  return steal_fd (&fd);
}

static int
flush (struct nri_plugin *pl, roce_error_t *err)
{
  size_t at = 0;
  while (at < pl->tx.len)
    {
      ssize_t w = write (pl->fd, pl->tx.p + at, pl->tx.len - at);
      if (w < 0 && errno == EAGAIN)
        {
          struct pollfd p = { .fd = pl->fd, .events = POLLOUT };
          int r = poll (&p, 1, NRI_WRITE_TIMEOUT_MS);
          if (r == 0)
            return roce_error_make (err, ETIMEDOUT,
                                    "NRI: the runtime reading our answer within %d ms vs not",
                                    NRI_WRITE_TIMEOUT_MS);
          continue;
        }
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return roce_error_sys (err, errno, "NRI: writing to the runtime");
      at += (size_t) w;
    }
  pl->tx.len = 0;
  return 0;
}

/* One connection's life: registration, then every request until the
 * runtime goes (0), the plugin is stopped (1) or the wire breaks (-1).  */
static int
session (struct nri_plugin *pl, int sigfd, roce_error_t *err)
{
  RoceNri__RegisterPluginRequest reg = ROCE_NRI__REGISTER_PLUGIN_REQUEST__INIT;
  const char *name = pl->o->name, *idx = pl->o->index;
  uint8_t buf[65536];

  if (name == NULL)
    name = pl->o->role == NRI_ROLE_GUARD ? NRI_GUARD_NAME : NRI_PLUGIN_NAME;
  if (idx == NULL)
    idx = pl->o->role == NRI_ROLE_GUARD ? NRI_GUARD_INDEX : NRI_PLUGIN_INDEX;
  reg.plugin_name = (char *) name;
  reg.plugin_idx = (char *) idx;
  pl->next_stream = 1;
  pl->register_stream = pl->next_stream;
  pl->next_stream += 2;
  if (ttrpc_call (&pl->tx, pl->register_stream, NRI_SERVICE_RUNTIME, "RegisterPlugin", &reg.base,
                  (int64_t) NRI_REGISTRATION_TIMEOUT_MS * 1000000, err)
          < 0
      || flush (pl, err) < 0)
    return -1;
  for (;;)
    {
      struct pollfd p[2]
          = { { .fd = pl->fd, .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
      ssize_t n;
      if (poll (p, 2, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          return roce_error_sys (err, errno, "poll");
        }
      if (p[1].revents & POLLIN)
        return 1;
      if (! (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      n = read (pl->fd, buf, sizeof (buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n < 0)
        return roce_error_sys (err, errno, "NRI: reading from the runtime");
      if (n == 0)
        return 0;
      if (nri_serve_bytes (pl, buf, (size_t) n, err) < 0 || flush (pl, err) < 0)
        return -1;
      if (pl->status_dirty)
        nri_status_write (pl, true);
      if (pl->shutdown)
        return 0;
    }
}

void
nri_reaper_drops (void *arg)
{
  struct nri_plugin *pl = arg;
  cleanup_closep (&pl->fd);
}

static void
connection_reset (struct nri_plugin *pl)
{
  cleanup_closep (&pl->fd);
  nri_rx_clear (&pl->rx);
  nri_buf_clear (&pl->tx);
  sync_parts_clear (pl);
  pl->registered = pl->configured = pl->shutdown = false;
}

/* Waits ms for a stop signal: true when one came.  */
static bool
stop_within (int sigfd, int ms)
{
  struct pollfd p = { .fd = sigfd, .events = POLLIN };
  return poll (&p, 1, ms) > 0;
}

static int
signals_fd (roce_error_t *err)
{
  sigset_t set;
  int fd;
  sigemptyset (&set);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  sigaddset (&set, SIGHUP);
  if (sigprocmask (SIG_BLOCK, &set, NULL) < 0)
    return roce_error_sys (err, errno, "sigprocmask");
  fd = signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0)
    return roce_error_sys (err, errno, "signalfd");
  /* A runtime gone mid-answer is an EPIPE from write, not a death.  */
  signal (SIGPIPE, SIG_IGN);
  return fd;
}

void
nri_plugin_forget (struct nri_plugin *pl)
{
  for (size_t i = 0; i < pl->n_pods; i++)
    {
      free (pl->pods[i].id);
      free (pl->pods[i].ns);
      free (pl->pods[i].name);
      free (pl->pods[i].netns);
      nri_pod_rec_unmake (&pl->pods[i]);
    }
  free (pl->pods);
  pl->pods = NULL;
  pl->n_pods = 0;
  for (size_t i = 0; i < pl->n_ctrs; i++)
    {
      free (pl->ctrs[i].id);
      free (pl->ctrs[i].pod_id);
      free (pl->ctrs[i].name);
    }
  free (pl->ctrs);
  pl->ctrs = NULL;
  pl->n_ctrs = 0;
}

void
nri_plugin_clear (struct nri_plugin *pl)
{
  connection_reset (pl);
  nri_plugin_forget (pl);
  nri_policy_free (pl);
  free (pl->runtime);
  pl->runtime = NULL;
}

int
nri_run (const struct nri_opts *o, roce_error_t *err)
{
  struct nri_plugin pl = { .o = o, .fd = -1, .request_timeout_ms = NRI_REQUEST_TIMEOUT_MS };
  const char *path = o->socket_path ? o->socket_path : NRI_SOCKET_DEFAULT;
  cleanup_close int sigfd = -1;
  int handed = o->fd, retry_ms = NRI_RETRY_MIN_MS, ret = -1;
  bool said_waiting = false;

  sigfd = signals_fd (err);
  if (sigfd < 0)
    return -1;
  if (o->role == NRI_ROLE_PLUGIN && nri_policy_load (&pl, err) < 0)
    return -1;
  /* The plugin never runs a program; it keeps the stage's capabilities
   * (the network, the namespaces) and its filter, TCP included (etcd, a
   * policy that gains `cluster` later).  The guard reads and answers the
   * runtime's socket alone: no capability (its DaemonSet container drops
   * them all) and the query commands' filter.  */
  if (o->role == NRI_ROLE_GUARD
          ? confine_caps (CONFINE_GUARD, err) < 0 || confine_seccomp (CONFINE_GUARD, err) < 0
          : confine_caps (CONFINE_STAGE, err) < 0
                || confine_seccomp_net (CONFINE_STAGE, true, err) < 0)
    goto out;
  for (;;)
    {
      cleanup_error roce_error_t cerr = NULL;
      int r;
      if (handed >= 0)
        {
          pl.fd = handed;
          handed = -1;
        }
      else if ((pl.fd = dial (path, &cerr)) < 0)
        {
          if (o->once)
            {
              *err = steal_pointer (&cerr);
              goto out;
            }
          if (! said_waiting)
            roce_log (ROCE_LOG_WARN, "NRI: %s; trying again until it answers", cerr->msg);
          said_waiting = true;
          if (stop_within (sigfd, retry_ms))
            break;
          retry_ms = retry_ms * 2 > NRI_RETRY_MAX_MS ? NRI_RETRY_MAX_MS : retry_ms * 2;
          continue;
        }
      said_waiting = false;
      roce_log (ROCE_LOG_INFO, "NRI: connected to %s as %s", o->fd >= 0 ? "the runtime" : path,
                o->role == NRI_ROLE_GUARD ? NRI_GUARD_NAME : NRI_PLUGIN_NAME);
      r = session (&pl, sigfd, &cerr);
      roce_log_set_container (NULL);
      if (r < 0)
        roce_log (ROCE_LOG_WARN, "NRI: the connection ends: %s", cerr->msg);
      else if (r == 0)
        roce_log (ROCE_LOG_INFO, "NRI: the runtime closed the connection");
      connection_reset (&pl);
      if (pl.o->role == NRI_ROLE_PLUGIN)
        nri_status_write (&pl, false);
      if (r == 1 || o->once)
        break;
      retry_ms = NRI_RETRY_MIN_MS;
      if (stop_within (sigfd, retry_ms))
        break;
    }
  roce_log_set_container (NULL);
  roce_log (ROCE_LOG_INFO, "NRI: stopped");
  ret = 0;
out:
  nri_plugin_clear (&pl);
  return ret;
}
