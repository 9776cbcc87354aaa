/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a lease holder's network namespace still lives: the scan, the
 * kernel's word by namespace id, the links still up, and the wait for its end.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/netlink.h"
#include "sys/netns.h"

/* Whether a holder's namespace lives, under the store's lock (struct
 * alive_ctx): the kernel first, by the namespace's id.  Gone when it says
 * so and the holder's interfaces are down; alive when it still has the
 * namespace with our address.  A holder whose containers have all stopped
 * and that a process is releasing is waited for (a container started again
 * at once with its fixed address gets it).  When the kernel cannot tell (no
 * id recorded), the scan made outside the lock decides: it cannot see
 * every holder (a socket made in the namespace and passed to another
 * process, a thread that entered it), so what it does not find is gone
 * only when the interfaces agree.  Unsure means alive: a lease is never
 * released on a guess.  */
bool
alive_cb (const struct lease_holder *h, void *arg)
{
  struct alive_ctx *a = arg;
  int k = holder_alive_by_nsid (&a->host, h), links;

  if (k == 0)
    {
      /* The kernel deletes a dead namespace's interfaces a few ms after it
       * forgets its id: until then the old one answers for the address.  */
      links = holder_links_gone (&a->host, h);
      if (links == 0 && ! a->no_wait)
        a->links_up = true;
      return links != 1;
    }
  if (a->s && ! a->no_wait && lease_reaping (a->s, h) == 1)
    {
      a->has_wait = true;
      a->wait = h->ns;
      return true;
    }
  if (k == 1)
    return true;
  if (a->live == NULL)
    {
      a->want_scan = ! a->failed;
      return true;
    }
  return netns_live_has (a->live, &h->ns) || holder_links_gone (&a->host, h) != 1;
}

void
alive_clear (struct alive_ctx *a)
{
  netns_live_free (a->live);
  a->live = NULL;
  netlink_close (a->host);
  a->host = NULL;
}

/* Whether the holder's namespace still lives, asked without scanning every
 * process: through the host's id for it (the kernel forgets the id when the
 * namespace dies; a reused id holds no namespace with our address on our
 * interface).  1 alive, 0 gone, -1 the kernel cannot tell (no id recorded,
 * an older store, an error).  */
int
holder_alive_by_nsid (struct nl_sock **host, const struct lease_holder *h)
{
  cleanup_error roce_error_t err = NULL;
  int r;

  if (h->nsid < 0 || h->n_addrs == 0)
    return -1;
  if (*host == NULL && netlink_open (-1, host, &err) < 0)
    goto unsure;
  r = netlink_addr_in_nsid (*host, h->nsid, &h->addrs[0].addr, h->addrs[0].ifname, &err);
  if (r == 2)
    return -1; /* a namespace without our address under that id: scan */
  if (r >= 0)
    return r;
unsure:
  roce_log (ROCE_LOG_DEBUG, "liveness of %s by its id: %s", h->owner, err->msg);
  return -1;
}

/* Poststop's watch on a holder's namespace: the kernel's word that it
 * forgot the namespace's id, which it does when the namespace dies.  */
struct end_watch
{
  struct nl_sock *sock; /* RTM_DELNSID, or NULL */
  struct nl_sock **host;
  const struct lease_holder *h;
  bool gone;
};

/* Asked between the processes of a scan: never waits.  */
static bool
end_heard (void *arg)
{
  struct end_watch *w = arg;
  int r;

  if (w->gone || w->sock == NULL)
    return w->gone;
  r = netlink_nsid_forgotten (w->sock, w->h->nsid, 0);
  if (r < 0)
    {
      /* Announcements were dropped: ask the kernel once, then only scan.  */
      w->sock = NULL;
      w->gone = holder_alive_by_nsid (w->host, w->h) == 0;
    }
  else
    w->gone = r == 1;
  return w->gone;
}

/* Waits until the deadline for the namespace's end: the kernel's
 * announcement, or (without a watch) its id asked every 20 ms, or (when
 * the kernel cannot tell) scans 20 ms apart while only dying processes
 * hold it.  true: it ended.  */
static bool
end_wait (struct end_watch *w, const struct timespec *end)
{
  for (long left; (left = ms_until (end)) > 0;)
    {
      int k;
      if (w->sock != NULL)
        {
          int r = netlink_nsid_forgotten (w->sock, w->h->nsid, (int) left);
          if (r >= 0)
            return r == 1;
          w->sock = NULL; /* the watch cannot tell: asked instead */
        }
      usleep (20 * 1000);
      k = w->h->nsid >= 0 ? holder_alive_by_nsid (w->host, w->h) : -1;
      if (k == 0)
        return true;
      if (k < 0)
        {
          /* The kernel cannot tell: what holds it, as the scan sees it.  */
          cleanup_netns_live struct netns_live *live = NULL;
          cleanup_error roce_error_t err = NULL;
          if (netns_live_scan_one (&w->h->ns, NULL, NULL, &live, &err) < 0)
            return false;
          if (! netns_live_has (live, &w->h->ns))
            return true;
          if (! netns_live_dying (live, &w->h->ns))
            return false;
        }
    }
  return false;
}

/* The reaper's question for a holder its containers left: does the
 * namespace still live?  It is held by something else (an fd, a pin, a
 * socket made in it and passed on, a thread that entered it) or about to
 * go: runc and crun run poststop before the kernel lets the namespace of a
 * short-lived container go (it frees a netlink socket the runtime made
 * there one RCU grace period after the container's exec).  So its end is
 * listened for (RTM_DELNSID): for REAP_QUIET_MS alone, then while the
 * namespace's visible holders are looked for.  A live holder found keeps
 * the lease at once; otherwise the namespace is gone only when the kernel
 * says so, and stays (for gc) when it has not said so within 2 s.  The
 * scan alone decides only for a holder without a recorded id (an older
 * store).  */
#define REAP_QUIET_MS 100

enum holder_state
holder_state (struct nl_sock **host, const struct lease_holder *h)
{
  cleanup_nl_sock struct nl_sock *sock = NULL;
  cleanup_netns_live struct netns_live *live = NULL;
  cleanup_error roce_error_t err = NULL;
  struct end_watch w = { .host = host, .h = h };
  struct timespec end;
  int alive = holder_alive_by_nsid (host, h), r;
  bool held;

  if (alive == 0)
    return HOLDER_GONE;
  if (strv_len (h->containers) > 0)
    return HOLDER_ALIVE; /* its other containers use it (or gc finds them gone) */
  clock_gettime (CLOCK_MONOTONIC, &end);
  end.tv_sec += 2;
  if (h->nsid >= 0)
    {
      cleanup_error roce_error_t werr = NULL;
      /* Listening first, then asking again: an end between the two is
       * heard of.  A live namespace never loses its id, so its end is
       * announced also when the address was not found under it.  */
      if (netlink_nsid_watch (&sock, &werr) < 0)
        roce_log (ROCE_LOG_DEBUG, "%s", werr->msg);
      else
        {
          int again = holder_alive_by_nsid (host, h), heard;
          w.sock = sock;
          if (again == 0)
            return HOLDER_GONE;
          if (again == 1)
            alive = 1;
          /* A short-lived container's namespace ends within a grace period
           * or two: heard of without scanning anything (the scan's CPU
           * would be taken from the runtime finishing beside it).  */
          heard = netlink_nsid_forgotten (sock, h->nsid, REAP_QUIET_MS);
          if (heard == 1)
            return HOLDER_GONE;
          if (heard < 0)
            w.sock = NULL;
        }
    }
  r = netns_live_scan_one (&h->ns, end_heard, &w, &live, &err);
  if (r < 0)
    {
      /* Unsure means alive: a lease is never released on a guess.  */
      roce_log (ROCE_LOG_WARN, "%s", err->msg);
      return HOLDER_UNSURE;
    }
  if (r == 1)
    return HOLDER_GONE;
  if (r == 2)
    return HOLDER_ALIVE; /* a live holder */
  held = netns_live_has (live, &h->ns);
  if (held && ! netns_live_dying (live, &h->ns))
    return HOLDER_ALIVE;
  /* Nothing the kernel vouches for and nothing visible holds it: gone.  */
  if (! held && alive != 1)
    return HOLDER_GONE;
  /* The kernel still has it (its holders hidden from /proc, or going), or
   * only processes being killed hold it (crun runs poststop right after
   * its SIGKILL): its address is released once it has gone, within the
   * bound, or stays for gc.  */
  return end_wait (&w, &end) ? HOLDER_GONE : HOLDER_UNSURE;
}

bool
holder_alive (struct nl_sock **host, const struct lease_holder *h)
{
  return holder_state (host, h) != HOLDER_GONE;
}

/* Whether every interface the holder's leases were made on is down or gone:
 * its MAC is off its parent's list (netlink_mac_on_link).  1 yes, 0 one is
 * still up, -1 cannot tell.  A lease of an older store, without its link,
 * counts as gone (the namespace's end alone decided then).  */
int
holder_links_gone (struct nl_sock **host, const struct lease_holder *h)
{
  cleanup_error roce_error_t err = NULL;

  for (size_t k = 0; k < h->n_addrs; k++)
    {
      int r;
      if (! h->addrs[k].has_link)
        continue;
      if (*host == NULL && netlink_open (-1, host, &err) < 0)
        goto unsure;
      r = netlink_mac_on_link (*host, h->addrs[k].parent_ifindex, h->addrs[k].mac, &err);
      if (r < 0)
        goto unsure;
      if (r == 1)
        return 0;
    }
  return 1;
unsure:
  roce_log (ROCE_LOG_DEBUG, "interfaces of %s: %s", h->owner, err->msg);
  return -1;
}

/* Waits until the deadline for the holder's interfaces to go down: the
 * kernel deletes a dead namespace's interfaces a few ms after it forgot
 * its id, and until then the old interface answers for the address.  */
bool
links_wait (struct nl_sock **host, const struct lease_holder *h, const struct timespec *end)
{
  for (;;)
    {
      int r = holder_links_gone (host, h);
      if (r == 1)
        return true;
      if (r < 0 || ms_until (end) <= 0)
        return false;
      usleep (2 * 1000);
    }
}

/* ---- many holders at once --------------------------------------------------- */

int
view_alive_by_nsid (struct alive_view *v, const struct lease_holder *h)
{
  if (h->nsid < 0 || h->n_addrs == 0)
    return -1;
  if (! v->asked)
    {
      cleanup_error roce_error_t err = NULL;
      v->asked = true;
      if ((*v->host == NULL && netlink_open (-1, v->host, &err) < 0)
          || netlink_nsids (*v->host, &v->ids, &v->n_ids, &err) < 0)
        {
          roce_log (ROCE_LOG_DEBUG, "namespace ids: %s", err->msg);
          v->failed = true;
        }
    }
  if (! v->failed && ! netlink_nsids_has (v->ids, v->n_ids, h->nsid))
    return 0;
  return holder_alive_by_nsid (v->host, h);
}

static struct view_link *
view_link (struct alive_view *v, int ifindex)
{
  cleanup_error roce_error_t err = NULL;
  struct view_link *l;

  for (size_t i = 0; i < v->n_links; i++)
    if (v->links[i].ifindex == ifindex)
      return &v->links[i];
  v->links = xrealloc (v->links, (v->n_links + 1) * sizeof (*v->links));
  l = &v->links[v->n_links++];
  *l = (struct view_link){ .ifindex = ifindex };
  if ((*v->host == NULL && netlink_open (-1, v->host, &err) < 0)
      || netlink_link_macs (*v->host, ifindex, &l->macs, &l->n, &err) < 0)
    {
      roce_log (ROCE_LOG_DEBUG, "interfaces on link %d: %s", ifindex, err->msg);
      l->failed = true;
    }
  return l;
}

int
view_links_gone (struct alive_view *v, const struct lease_holder *h)
{
  for (size_t k = 0; k < h->n_addrs; k++)
    {
      struct view_link *l;
      if (! h->addrs[k].has_link)
        continue;
      l = view_link (v, h->addrs[k].parent_ifindex);
      if (l->failed)
        return -1;
      if (netlink_macs_has (l->macs, l->n, h->addrs[k].mac))
        return 0;
    }
  return 1;
}

void
view_clear (struct alive_view *v)
{
  free (v->ids);
  for (size_t i = 0; i < v->n_links; i++)
    free (v->links[i].macs);
  free (v->links);
  v->ids = NULL;
  v->links = NULL;
  v->n_ids = v->n_links = 0;
}
