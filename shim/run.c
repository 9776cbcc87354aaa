/* SPDX-License-Identifier: Apache-2.0 */
/* A foreground `run` of an annotated container: roce-runtime runs the real
 * runtime as its child instead of becoming it, and once that returns (the
 * container is gone: runc and crun delete it at the end of a foreground
 * run) has what the container held released, by a process of its own that
 * outlives it.  That is the poststop hook's work without a hook: the
 * runtime spawns one program fewer, and a run the runtime fails half-way is
 * released all the same.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipam/ipam.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "net/net.h"
#include "shim.h"
#include "stage.h"
#include "sys/netns.h"

bool
shim_runs_foreground (const struct shim_args *a)
{
  return a->cmd && strcmp (a->cmd, "run") == 0 && ! a->detach && a->id
         && runtime_record_id_valid (a->id);
}

/* What a caller may send to the runtime it started, passed on to it (runc
 * passes them on to the container).  A signal the terminal sent the whole
 * foreground process group (^C, ^\) reached the runtime too: not sent twice. */
static const int forwarded[]
    = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM, SIGCONT, SIGPIPE };

static volatile sig_atomic_t child_pid;

static void
forward (int sig, siginfo_t *si, void *uctx)
{
  int saved = errno;
  (void) uctx;
  if (child_pid > 0 && si->si_code != SI_KERNEL)
    kill ((pid_t) child_pid, sig);
  errno = saved;
}

static void
signals_set (const sigset_t *mask, bool to_default)
{
  struct sigaction sa;
  memset (&sa, 0, sizeof (sa));
  sigemptyset (&sa.sa_mask);
  if (to_default)
    sa.sa_handler = SIG_DFL;
  else
    {
      sa.sa_sigaction = forward;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
    }
  for (size_t i = 0; i < ARRAY_SIZE (forwarded); i++)
    sigaction (forwarded[i], &sa, NULL);
  sigprocmask (SIG_SETMASK, mask, NULL);
}

/* The child's end, as the caller would have seen the runtime's: its exit
 * status, or death by the same signal.  */
static int __attribute__ ((noreturn)) mirror (int status)
{
  if (WIFSIGNALED (status))
    {
      int sig = WTERMSIG (status);
      sigset_t one;
      signal (sig, SIG_DFL);
      sigemptyset (&one);
      sigaddset (&one, sig);
      sigprocmask (SIG_UNBLOCK, &one, NULL);
      raise (sig);
      _exit (128 + sig);
    }
  _exit (WIFEXITED (status) ? WEXITSTATUS (status) : 1);
}

/* Runs the runtime as a child, passing on the caller's signals; its wait
 * status.  */
static int
run_child (const char *runtime, char **argv, const struct roce_policy *policy,
           const struct shim_args *a, struct shim_start *start)
{
  posix_spawnattr_t attr;
  sigset_t all, old;
  int status = 0, e;
  pid_t pid;

  sigemptyset (&all);
  for (size_t i = 0; i < ARRAY_SIZE (forwarded); i++)
    sigaddset (&all, forwarded[i]);
  /* Blocked across the spawn: none is lost, none reaches a child that has
   * not reset them yet (the child starts with the caller's mask and each of
   * them at its default).  Spawned, not forked: the child shares the shim's
   * memory until it execs, so no page table is copied and no other CPU's
   * TLB flushed for it (a fork and its exec flushed them three times, a
   * tenth of the shim's CPU time here, `perf record -a`).  */
  sigprocmask (SIG_BLOCK, &all, &old);
  argv[0] = (char *) runtime;
  e = posix_spawnattr_init (&attr);
  if (e == 0)
    {
      posix_spawnattr_setsigmask (&attr, &old);
      posix_spawnattr_setsigdefault (&attr, &all);
      posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
      e = posix_spawn (&pid, runtime, NULL, &attr, argv, environ);
      posix_spawnattr_destroy (&attr);
    }
  if (e != 0)
    {
      sigprocmask (SIG_SETMASK, &old, NULL);
      if (e == EAGAIN || e == ENOMEM)
        {
          fprintf (stderr,
                   "roce-runtime: %s: running the runtime: a child process vs %s "
                   "(fix: raise the node's process limit, or retry)\n",
                   a->id, strerror (e));
          return 1 << 8; /* as a runtime that failed: what the shim made goes */
        }
      roce_print (stderr, "roce-runtime: exec `%s`: %s", runtime, strerror (e));
      return 127 << 8; /* as the exec that failed in a child */
    }
  child_pid = pid;
  signals_set (&old, false);
  /* While the runtime runs: the shim would only wait.  */
  shim_start_seed_check (policy, a->id, start);
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      {
        status = 1 << 8;
        break;
      }
  child_pid = 0;
  /* The caller's signals from here on are for us, as they would have been
   * for a runtime at its poststop.  */
  signals_set (&old, true);
  return status;
}

/* A release after the run that failed, said where the caller sees it (a
 * release that fails fails no run: gc releases what is left).  */
static void
release_failed (const char *id, const char *msg)
{
  roce_log (ROCE_LOG_WARN, "release after run: %s", msg); /* the container's (log.h) */
  roce_print (stderr,
              "roce-runtime: %s: release after run: released vs %s (fix: run `roce-hook gc`)", id,
              msg);
}

/* The longest life of the process left behind: the release's own bounds
 * (the namespace's end 2 s, its interfaces' 1 s, a scan 1 s, the lock
 * lock_timeout_ms or 10 s) and some slack.  */
#define RELEASE_LIFE_S 30

/* The release, in a process the shim leaves behind (the caller has its
 * runtime's end at once): the holder is marked first, so that `leases`
 * says "releasing" from the moment the shim returns, and that process
 * releases it by its namespace (ipam_release_mark).  false: nothing was
 * left behind (no network, no mark, no fork), the caller releases.  */
static bool
release_behind (const struct roce_policy *policy, const char *id, const struct netns_id *ns)
{
  static const int detached[] = { SIGHUP, SIGINT, SIGQUIT, SIGPIPE };
  cleanup_error roce_error_t err = NULL;
  sigset_t set, old;
  int mark;
  pid_t pid;

  /* Without the kernel's cookie a new namespace may get this one's inode
   * (and its holder) while the release waits: released here, before the
   * runtime's status is returned, as before.  */
  if (ns->cookie == 0)
    return false;
  mark = ipam_release_mark (policy, ns, id, &err);
  if (mark < 0)
    {
      roce_log (ROCE_LOG_DEBUG, "release after run, here: %s", err->msg);
      return false;
    }
  /* The terminal's signals wait until the child has a session of its own:
   * the caller's ^C, or the SIGHUP of a session leader's exit, must not end
   * the release half-way.  */
  sigemptyset (&set);
  for (size_t i = 0; i < ARRAY_SIZE (detached); i++)
    sigaddset (&set, detached[i]);
  sigprocmask (SIG_BLOCK, &set, &old);
  pid = fork ();
  if (pid < 0)
    {
      /* Here then, with the mark taken, the caller still waiting.  */
      sigprocmask (SIG_SETMASK, &old, NULL);
      if (roce_release_netns (policy, id, ns, mark, &err) < 0)
        release_failed (id, err->msg);
      return true;
    }
  if (pid == 0)
    {
      /* Nothing of the caller's stays open in it (--preserve-fds, a pipe
       * the caller reads to its end): the log is opened again.  */
      roce_log_close ();
      if (mark <= STDERR_FILENO)
        {
          /* Above stdio, which goes to /dev/null (the lock goes with it).  */
          int high = fcntl (mark, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
          if (high >= 0)
            mark = high;
        }
      close_fds_but (mark);
      detach_from_caller ();
      /* Not in the caller's directory (a bundle on a tmpfs could not be
       * unmounted while it lives), and not for long: a release that takes
       * longer than RELEASE_LIFE_S is killed (SIGALRM), and gc releases
       * what is left.  gc's capabilities and seccomp profile
       * (roce_release_netns), not the stage's.  */
      if (chdir ("/") < 0)
        _exit (1);
      for (size_t i = 0; i < ARRAY_SIZE (detached); i++)
        signal (detached[i], SIG_IGN);
      signal (SIGALRM, SIG_DFL);
      alarm (RELEASE_LIFE_S);
      sigprocmask (SIG_SETMASK, &old, NULL);
      roce_log_open ("roce-runtime");
      /* A release that fails fails no run (as runc ignores a poststop's
       * failure): gc releases what is left, and the log says why.  */
      if (roce_release_netns (policy, id, ns, mark, &err) < 0)
        roce_log (ROCE_LOG_WARN, "release after run: released vs %s (fix: run `roce-hook gc`)",
                  err->msg);
      roce_log_close ();
      _exit (0);
    }
  sigprocmask (SIG_SETMASK, &old, NULL);
  close (mark); /* the child's fd keeps the lock */
  return true;
}

int
shim_run_foreground (const char *runtime, char **argv, const struct roce_policy *policy,
                     const struct shim_args *a, struct shim_start *start)
{
  int status = run_child (runtime, argv, policy, a, start);
  struct netns_id ns;
  bool have_ns = net_state_netns (start->net, &ns);

  /* Tests: a same-id container can be created here, its record and rails
   * file are then not this run's to remove.  */
  roce_pause_point ("run-ended");
  /* The namespace the shim made is the container's alone now: with it
   * gone, the kernel ends it.  */
  shim_start_after_runtime (start);
  shim_start_clear (start);
  {
    cleanup_error roce_error_t err = NULL;
    if (shim_record_remove (policy->state_dir, a->id, &start->record_id, &start->rails_id, &err)
        < 0)
      roce_log (ROCE_LOG_WARN, "%s", err->msg);
  }
  roce_log_open ("roce-runtime");
  if (have_ns && release_behind (policy, a->id, &ns))
    {
      roce_log_close ();
      mirror (status);
    }
  {
    cleanup_error roce_error_t err = NULL;
    /* A release that fails fails no run (as runc ignores a poststop's
     * failure): gc releases what is left, and the log says why.  */
    if (roce_release_container (policy, a->id, &err) < 0)
      release_failed (a->id, err->msg);
  }
  roce_log_close ();
  mirror (status);
}

int
shim_run_create (const char *runtime, char **argv, const struct roce_policy *policy,
                 const struct shim_args *a, struct shim_start *start)
{
  int status;

  /* Tests: the record and rails file are written, the runtime has not
   * mounted the rails file yet.  */
  roce_pause_point ("create-before-runtime");
  status = run_child (runtime, argv, policy, a, start);
  shim_start_after_runtime (start);
  /* A runtime that failed either never made the container or destroyed
   * it (its poststop hook then released the network already): what is
   * left of ours goes.  */
  if (! (WIFEXITED (status) && WEXITSTATUS (status) == 0))
    {
      cleanup_error roce_error_t err = NULL;
      roce_log_open ("roce-runtime");
      roce_log (ROCE_LOG_INFO, "the runtime failed: taking the network back");
      shim_start_undo (policy, a->id, start);
      if (shim_record_remove (policy->state_dir, a->id, &start->record_id, &start->rails_id, &err)
          < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
    }
  shim_start_clear (start);
  roce_log_close ();
  mirror (status);
}
