/* SPDX-License-Identifier: Apache-2.0 */
/* Poststop's side of the store (ipam.h): the leases of a stopped container
 * released, at once when its namespace has gone, else by a reaper that
 * waits for its end.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ipam/ipam.h"
#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/confine.h"
#include "sys/netlink.h"
#include "sys/netns.h"

/* A holder left without containers: released at once when the kernel has
 * let its namespace go and its interfaces are down (a container that lived
 * longer than a few ms), else by a reaper (below).  */
struct reap_item
{
  struct lease_holder *h; /* a copy */
  int fd;                 /* its reaping/ mark, locked */
};

struct reap_list
{
  struct reap_item *items;
  size_t n;
};

static void
reap_list_clear (struct reap_list *l)
{
  for (size_t i = 0; i < l->n; i++)
    {
      lease_holder_free (l->items[i].h);
      cleanup_closep (&l->items[i].fd);
    }
  free (l->items);
  l->items = NULL;
  l->n = 0;
}

/* The reaper's work for one holder, in the child: waits for the end of the
 * namespace (holder_state: a live holder found keeps the lease, else the
 * kernel's word) and then of its interfaces, asking again within
 * REAP_PATIENCE_MS, and releases the lease under the store's lock if it is
 * still that holder's, with no container in it.  Otherwise the lease stays
 * for gc.  */
static void
reap_one (const struct roce_policy *p, struct reap_item *it)
{
  cleanup_nl_sock struct nl_sock *host = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  const struct lease_holder *h = it->h;
  struct lease_holder *now;
  struct timespec end, patience;
  enum holder_state st;
  char ns[48];
  bool gone;

  netns_id_format (&h->ns, ns, sizeof (ns));
  roce_pause_point ("reap");
  roce_crash_point ("reap");
  /* Nobody waits for the reaper: a namespace not gone yet (the kernel still
   * has it, a busy node's scan ran out of time, a runtime's hold on it goes
   * just after the poststop) is asked again for REAP_PATIENCE_MS rather
   * than left to gc; a live holder seen ends the wait at once.  */
  clock_gettime (CLOCK_MONOTONIC, &patience);
  patience.tv_sec += REAP_PATIENCE_MS / 1000;
  for (;;)
    {
      st = holder_state (&host, h);
      gone = false;
      if (st == HOLDER_GONE)
        {
          clock_gettime (CLOCK_MONOTONIC, &end);
          end.tv_sec += 1;
          gone = links_wait (&host, h, &end);
        }
      /* Gone with its interfaces still up (moved to another namespace):
       * that does not change by waiting; gc sees when they go.  */
      if (gone || st != HOLDER_UNSURE)
        break;
      clock_gettime (CLOCK_MONOTONIC, &end);
      if (end.tv_sec > patience.tv_sec
          || (end.tv_sec == patience.tv_sec && end.tv_nsec >= patience.tv_nsec))
        break;
      nanosleep (&(struct timespec){ .tv_nsec = REAP_RETRY_MS * 1000000L }, NULL);
    }
  if (! gone && st == HOLDER_GONE)
    roce_log (ROCE_LOG_WARN,
              "network: %s stays: %s is gone but its interfaces are still up; "
              "gc releases it once they are down",
              h->owner, ns);
  else if (! gone)
    roce_log (ROCE_LOG_INFO, "network: %s stays, %s still exists", h->owner, ns);
  /* Nobody waits for the reaper: it waits for the lock longer than a
   * start would, rather than leave the lease to gc.  */
  if (lease_store_open_held (p->state_dir,
                             p->lock_timeout_ms > REAP_LOCK_MS ? p->lock_timeout_ms : REAP_LOCK_MS,
                             &s, &err)
          < 0
      && roce_error_status (&err) == ENOENT)
    {
      /* Removed with the node's state while this waited: nothing is held.  */
      roce_log (ROCE_LOG_INFO, "network: %s: %s", h->owner, err->msg);
      cleanup_closep (&it->fd);
      return;
    }
  if (s == NULL || lease_load_netns (s, &h->ns, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN, "releasing the leases of %s: %s; gc releases them", h->owner,
                err->msg);
      cleanup_closep (&it->fd); /* gc removes the mark */
      return;
    }
  now = lease_find_netns (s, &h->ns);
  if (now == NULL)
    {
      /* A start in a namespace that got its inode moved it aside.  */
      struct netns_id aside = h->ns;
      aside.ino |= NETNS_INO_GONE;
      if (lease_load_netns (s, &aside, &err) < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
      now = lease_find_netns (s, &aside);
    }
  if (gone && now && strv_len (now->containers) == 0)
    {
      for (size_t k = 0; k < now->n_addrs; k++)
        {
          char a[ADDR_STR_MAX];
          roce_log (ROCE_LOG_INFO, "released %s (%s)", addr_format (&now->addrs[k].addr, a),
                    now->addrs[k].hca);
        }
      lease_holder_drop (s, now);
      if (lease_store_commit (s, &err) < 0)
        roce_log (ROCE_LOG_WARN, "releasing the leases of %s: %s", h->owner, err->msg);
    }
  lease_reap_unmark (s, &h->ns, it->fd);
  it->fd = -1;
}

/* The reaper itself: never returns.  */
static void __attribute__ ((noreturn)) reap_run (const struct roce_policy *p, struct reap_list *l,
                                                 pid_t runtime, const struct ipam_release_how *how)
{
  cleanup_error roce_error_t err = NULL;

  if (how->in_reaper)
    how->in_reaper (how->reaper_arg);
  detach_from_caller ();
  /* gc's confinement, as the shim's release has it: the wait and the
   * release need the network and the scan, nothing of a stage's (no mount,
   * unshare, bpf or new process), and this process outlives the stage.  */
  if (confine_caps (CONFINE_GC, &err) < 0 || confine_phase (PHASE_NETWORK, &err) < 0
      || confine_seccomp_net (CONFINE_GC, p->cluster != NULL, &err) < 0)
    {
      roce_log (ROCE_LOG_WARN,
                "network: the reaper cannot confine itself (%s); gc releases %zu "
                "lease holder(s) once their namespaces are gone",
                err->msg, l->n);
      _exit (0); /* its marks go with it: gc sweeps them */
    }
  for (size_t i = 0; i < l->n; i++)
    reap_one (p, &l->items[i]);
  reap_list_clear (l);
  /* The runtime's child (reap_spawn): its end waits for the runtime's own
   * (60 s at most): crun waits for each hook with sigtimedwait on SIGCHLD,
   * and a SIGCHLD still pending from another child swallows the hook's.
   * Whoever it is given to then (a containerd shim, init) reaps it.  */
  for (int i = 0; runtime > 1 && getppid () == runtime && i < 3000; i++)
    usleep (20 * 1000);
  _exit (0);
}

/* Runs the reaper: a process that nobody waits for.  It has no fd of the
 * runtime's (its stdio goes to /dev/null: runc reads a hook's output to its
 * end) and a session of its own.  The hook makes it its runtime's child
 * (CLONE_PARENT), not its own: alive when the hook exits, never the hook's
 * orphan to be reparented, and it outlives the runtime (reap_run): a
 * runtime that waits for its hook through SIGCHLD (crun) is never told of
 * a dead reaper in the same breath as of the hook, whose one signal would
 * then name the reaper.  One fork: a middle process that forked it and
 * exited, and the pipe that told its pid, cost a poststop that forks a
 * reaper more than a prestart.  Its marks say that it lives (`leases`:
 * "releasing").  */
static void
reap_spawn (const struct roce_policy *p, struct reap_list *l, const struct ipam_release_how *how)
{
  bool caller_ends = how->caller_ends;
  pid_t pid, runtime = getppid ();
  int e = 0;

  if (l->n == 0)
    return;
  /* A caller that ends now (roce-runtime) is no runtime waiting for its
   * hook: its child is orphaned as soon as it exits.  Else the reaper is
   * the runtime's child, as the hook is (the kernel refuses CLONE_PARENT
   * to a namespace's init: then a child of ours, as for roce-runtime).  */
  pid = caller_ends ? -1
                    : (pid_t) syscall (SYS_clone, (unsigned long) CLONE_PARENT, 0UL, 0UL, 0UL, 0UL);
  if (pid < 0)
    {
      runtime = caller_ends ? 0 : runtime;
      pid = fork ();
    }
  if (pid == 0)
    reap_run (p, l, runtime, how);
  if (pid < 0)
    {
      e = errno;
      roce_log (ROCE_LOG_WARN,
                "network: no process to release %zu lease holder(s) once their "
                "namespaces are gone (%s); gc releases them",
                l->n, strerror (e));
      return; /* the marks go with the fds: gc removes them */
    }
  for (size_t i = 0; i < l->n; i++)
    {
      char ns[48];
      roce_log (ROCE_LOG_INFO,
                "network: %s still exists: its leases go once it and its "
                "interfaces are gone (pid %d waits for that)",
                netns_id_format (&l->items[i].h->ns, ns, sizeof (ns)), (int) pid);
    }
  roce_pause_point ("reaper-started");
}

/* The holder the container leaves, in the store: released now, kept (other
 * containers use it), or handed to the reaper.  */
static void
leave_holder (struct lease_store *s, struct lease_holder *h, struct nl_sock **host,
              const struct ipam_release_how *how, int *mark, struct reap_list *reap)
{
  cleanup_error roce_error_t err = NULL;
  int fd = -1;

  /* A pod sandbox's stop took the pod's network down (the caller's).  */
  if (how->pod_down && how->pod_down (h, how->arg))
    ;
  else if (strv_len (h->containers) > 0)
    return; /* its other containers use it (or gc finds them gone) */
  else if (holder_alive_by_nsid (host, h) != 0 || holder_links_gone (host, h) != 1)
    {
      /* The kernel still has the namespace (runc and crun run poststop
       * before it lets a short-lived container's go: it frees a netlink
       * socket made there one RCU grace period later), or its interfaces
       * are still up: the reaper waits for both, so that neither the
       * runtime nor the next container waits here.  */
      /* The mark the caller holds for this holder (ipam_release_mark), else
       * one of its own.  */
      if (*mark >= 0)
        fd = *mark;
      else if (lease_reap_mark (s, &h->ns, NULL, &fd, &err) < 0)
        roce_log (ROCE_LOG_WARN, "network: %s stays for gc: %s", h->owner, err->msg);
      *mark = -1;
      if (fd < 0)
        return; /* an error, or a live process releases it */
      reap->items = xrealloc (reap->items, (reap->n + 1) * sizeof (*reap->items));
      reap->items[reap->n++] = (struct reap_item){ .h = lease_holder_copy (h), .fd = fd };
      return;
    }
  for (size_t k = 0; k < h->n_addrs; k++)
    {
      char a[ADDR_STR_MAX];
      roce_log (ROCE_LOG_INFO, "released %s (%s)", addr_format (&h->addrs[k].addr, a),
                h->addrs[k].hca);
    }
  lease_holder_drop (s, h);
}

int
ipam_release (const struct roce_policy *p, const char *id, const struct netns_id *ns, int mark,
              const struct ipam_release_how *how, roce_error_t *err)
{
  struct lease_store *s = NULL;
  bool changed = false;
  int ret = -1;
  struct netns_id aside = { 0 };
  cleanup_nl_sock struct nl_sock *host = NULL;
  struct reap_list reap = { 0 };

  if (ns)
    {
      /* A start in a namespace that got its inode moves the holder aside.  */
      aside = *ns;
      aside.ino |= NETNS_INO_GONE;
    }
  /* No store, no leases (a start refused before any, a state_dir removed
   * with what it held): nothing to make.  */
  if (lease_store_open_held (p->state_dir, p->lock_timeout_ms, &s, err) < 0
      && roce_error_status (err) == ENOENT)
    {
      roce_error_release (err);
      ret = 0;
      goto out;
    }
  if (s == NULL
      || (ns ? lease_load_netns (s, ns, err) < 0 || lease_load_netns (s, &aside, err) < 0
             : lease_load_container (s, id, err) < 0))
    goto out;
  for (size_t i = s->n; i > 0; i--)
    {
      struct lease_holder *h = s->h[i - 1];
      int none = -1;
      if (ns && ! netns_id_equal (&h->ns, ns) && ! netns_id_equal (&h->ns, &aside))
        continue;
      if (! lease_holder_leave (h, id))
        continue;
      changed = true;
      /* The mark is the namespace's as it was: a holder moved aside gets
       * one of its own.  */
      leave_holder (s, h, &host, how, ns && netns_id_equal (&h->ns, ns) ? &mark : &none, &reap);
    }
  ret = changed ? lease_store_commit (s, err) : 0;
  if (ret < 0)
    {
      /* Not committed: the marks go (the holders still list the container,
       * as gc sees them).  */
      for (size_t i = 0; i < reap.n; i++)
        {
          lease_reap_unmark (s, &reap.items[i].h->ns, reap.items[i].fd);
          reap.items[i].fd = -1;
        }
      reap_list_clear (&reap);
    }
  /* A mark nothing waits on: released at once, or not ours to release.  */
  if (mark >= 0)
    {
      lease_reap_unmark (s, ns, mark);
      mark = -1;
    }
  /* The lock goes before the reaper starts: it must not hold the store.  */
  lease_store_free (s);
  s = NULL;
  netlink_close (host);
  host = NULL;
  if (how->reap_inline)
    for (size_t i = 0; i < reap.n; i++)
      reap_one (p, &reap.items[i]);
  else
    reap_spawn (p, &reap, how);
out:
  if (mark >= 0)
    close (mark); /* its file: swept by gc */
  lease_store_free (s);
  reap_list_clear (&reap);
  return ret < 0 ? -1 : 0;
}

int
ipam_release_mark (const struct roce_policy *p, const struct netns_id *ns, const char *id,
                   roce_error_t *err)
{
  cleanup_lease_store struct lease_store *s = NULL;
  int fd = -1, r;

  if (lease_store_open_held (p->state_dir, p->lock_timeout_ms, &s, err) < 0)
    return -1;
  r = lease_reap_mark (s, ns, id, &fd, err);
  if (r < 0)
    return r;
  if (r == 0)
    return roce_error_make (err, EBUSY,
                            "the mark of %s's lease holder: free vs taken by another "
                            "process (fix: none needed: the release runs here)",
                            id);
  return fd;
}
