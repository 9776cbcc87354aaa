/* SPDX-License-Identifier: Apache-2.0 */
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

#include "devices/devices.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "spec/annot.h"
#include "spec/container.h"
#include "spec/oci.h"
#include "spec/policy.h"

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
  cleanup_oci_state struct oci_state *state = NULL;
  struct oci_config *config = NULL;
  struct roce_policy *policy = NULL;
  struct roce_request req = { 0 };
  struct roce_container c = ROCE_CONTAINER_INIT;
  struct devices_state *ds = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_close int sfd = -1;
  char path[64];
  int ret = 0;

  if (argc < 5 || (strcmp (argv[3], "--") != 0 && strcmp (argv[3], "--time") != 0))
    {
      fprintf (stderr, "usage: devices-probe POLICY STATE_FILE -- CMD [ARG...] | --time N\n");
      return 2;
    }
  setvbuf (stdout, NULL, _IOLBF, 0);
  sfd = open (argv[2], O_RDONLY | O_CLOEXEC);
  if (sfd < 0 || oci_state_read (sfd, &state, &err) < 0)
    return die ("state", err);
  roce_log_set_container (state->id);
  /* The step alone, without the engine: the policy, the request and the
   * container are all it is handed.  */
  if (policy_load (argv[1], &policy, &err) < 0 || oci_config_load (state->bundle, &config, &err) < 0
      || annot_parse (policy, roce_kv_get (config->annotations, config->n_annotations, ANNOT_HCA),
                      roce_kv_get (config->annotations, config->n_annotations, ANNOT_IP), &req,
                      &err)
             < 0)
    return die ("load", err);
  if (policy->log_file && roce_log_set_file (policy->log_file, &err) < 0)
    return die ("log", err);
  c.id = state->id;
  c.pid = state->pid;
  c.bundle = state->bundle;
  c.config = config;
  c.pidfd = (int) syscall (SYS_pidfd_open, state->pid, 0);
  snprintf (path, sizeof (path), "/proc/%d/ns/mnt", (int) state->pid);
  c.mntns_fd = open (path, O_RDONLY | O_CLOEXEC);
  /* No pidfd_open under valgrind: the engine then checks with kill(pid, 0).  */
  if ((c.pidfd < 0 && errno != ENOSYS) || c.mntns_fd < 0)
    return die ("container", NULL);

  if (strcmp (argv[3], "--time") == 0)
    {
      int n = atoi (argv[4]);
      for (int i = 0; i < n && ret == 0; i++)
        {
          struct timespec a, b, d;
          clock_gettime (CLOCK_MONOTONIC, &a);
          if (devices_setup (policy, &req, &c, NULL, &ds, &err) < 0)
            {
              ret = die ("devices_setup", err);
              break;
            }
          clock_gettime (CLOCK_MONOTONIC, &b);
          devices_undo (&c, ds);
          ds = NULL;
          clock_gettime (CLOCK_MONOTONIC, &d);
          printf ("%ld %ld\n", (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000,
                  (d.tv_sec - b.tv_sec) * 1000000L + (d.tv_nsec - b.tv_nsec) / 1000);
        }
    }
  else if (devices_setup (policy, &req, &c, NULL, &ds, &err) < 0)
    ret = die ("devices_setup", err);
  else
    {
      printf ("== after setup\n");
      run (argv + 4);
      devices_undo (&c, ds);
      printf ("== after undo\n");
      run (argv + 4);
    }
  annot_request_clear (&req);
  oci_config_free (config);
  policy_free (policy);
  cleanup_closep (&c.pidfd);
  cleanup_closep (&c.mntns_fd);
  return ret;
}
