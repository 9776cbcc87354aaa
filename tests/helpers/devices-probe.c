/* devices-probe POLICY STATE_FILE -- CMD [ARG...]
 * devices-probe POLICY STATE_FILE --time N
 *
 * For a running container (the OCI state in STATE_FILE, as a runtime would
 * pass it to a hook): devices_setup(), CMD, devices_undo(), CMD again.  The
 * tests use it to see an undo from the container's side: nodes gone, no
 * mount, the device cgroup and the memlock limit as they were.  With --time,
 * N rounds of setup + undo, each printed as "<setup us> <undo us>" (the
 * bench).  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "annot.h"
#include "devices.h"
#include "engine.h"
#include "log.h"
#include "utils.h"

static int
run (char **cmd)
{
  int st = 0;
  pid_t p = fork ();
  if (p == 0)
    {
      execvp (cmd[0], cmd);
      _exit (127);
    }
  waitpid (p, &st, 0);
  fflush (stdout);
  return st;
}

static int
die (const char *what, roce_error_t err)
{
  fprintf (stderr, "devices-probe: %s: %s\n", what, err ? err->msg : strerror (errno));
  return 1;
}

int
main (int argc, char **argv)
{
  struct roce_ctx ctx = { ROCE_CTX_INIT };
  cleanup_error roce_error_t err = NULL;
  cleanup_close int sfd = -1;
  char path[64];

  if (argc < 5 || (strcmp (argv[3], "--") != 0 && strcmp (argv[3], "--time") != 0))
    {
      fprintf (stderr, "usage: devices-probe POLICY STATE_FILE -- CMD [ARG...] | --time N\n");
      return 2;
    }
  setvbuf (stdout, NULL, _IOLBF, 0);
  sfd = open (argv[2], O_RDONLY | O_CLOEXEC);
  if (sfd < 0 || oci_state_read (sfd, &ctx.state, &err) < 0)
    return die ("state", err);
  roce_log_set_container (ctx.state->id);
  if (policy_load (argv[1], &ctx.policy, &err) < 0
      || oci_config_load (ctx.state->bundle, &ctx.config, &err) < 0
      || annot_parse (ctx.policy, roce_ctx_annotation (&ctx, ANNOT_HCA),
                      roce_ctx_annotation (&ctx, ANNOT_IP), &ctx.req, &err)
             < 0)
    return die ("load", err);
  if (ctx.policy->log_file && roce_log_set_file (ctx.policy->log_file, &err) < 0)
    return die ("log", err);
  ctx.pidfd = (int) syscall (SYS_pidfd_open, ctx.state->pid, 0);
  snprintf (path, sizeof (path), "/proc/%d/ns/mnt", (int) ctx.state->pid);
  ctx.mntns_fd = open (path, O_RDONLY | O_CLOEXEC);
  /* No pidfd_open under valgrind: the engine then checks with kill(pid, 0).  */
  if ((ctx.pidfd < 0 && errno != ENOSYS) || ctx.mntns_fd < 0)
    return die ("container", NULL);

  if (strcmp (argv[3], "--time") == 0)
    {
      int n = atoi (argv[4]);
      for (int i = 0; i < n; i++)
        {
          struct timespec a, b, c;
          clock_gettime (CLOCK_MONOTONIC, &a);
          if (devices_setup (&ctx, &err) < 0)
            return die ("devices_setup", err);
          clock_gettime (CLOCK_MONOTONIC, &b);
          devices_undo (&ctx);
          clock_gettime (CLOCK_MONOTONIC, &c);
          printf ("%ld %ld\n", (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000,
                  (c.tv_sec - b.tv_sec) * 1000000L + (c.tv_nsec - b.tv_nsec) / 1000);
        }
      roce_ctx_clear (&ctx);
      return 0;
    }
  if (devices_setup (&ctx, &err) < 0)
    return die ("devices_setup", err);
  printf ("== after setup\n");
  run (argv + 4);
  devices_undo (&ctx);
  printf ("== after undo\n");
  run (argv + 4);
  roce_ctx_clear (&ctx);
  return 0;
}
