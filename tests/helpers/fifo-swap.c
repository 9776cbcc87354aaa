/* SPDX-License-Identifier: Apache-2.0 */
/* fifo-swap NSFILE FIFO UID READY: a tenant's attack on the liveness
 * checks.  Holds the network namespace NSFILE open (a high fd), then, as
 * uid UID and non-dumpable (as a container's root is to the host), swaps
 * its fd 3 between that namespace and FIFO (held for reading: an open for
 * reading of it waits for a writer that never comes) for ever.  A scan
 * that sees fd 3 as the namespace and then opens it finds the FIFO.
 * Creates READY as it starts; killed by the test.  */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  int ns, fifo, ready;
  uid_t uid;

  if (argc != 5)
    {
      fprintf (stderr, "usage: fifo-swap NSFILE FIFO UID READY\n");
      return 2;
    }
  uid = (uid_t) atoi (argv[3]);
  /* Fds 3 and up are ours to place: the namespace far up, the FIFO next.  */
  ns = open (argv[1], O_RDONLY | O_CLOEXEC);
  fifo = open (argv[2], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (ns < 0 || fifo < 0 || dup3 (ns, 900, O_CLOEXEC) < 0 || dup3 (fifo, 901, O_CLOEXEC) < 0)
    {
      perror ("fifo-swap: open");
      return 1;
    }
  close (ns);
  close (fifo);
  if ((ready = open (argv[4], O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
    close (ready);
  if (setresgid (uid, uid, uid) < 0 || setresuid (uid, uid, uid) < 0
      || prctl (PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    {
      perror ("fifo-swap: drop to the tenant's uid");
      return 1;
    }
  for (;;)
    {
      dup2 (900, 3);
      usleep (300);
      dup2 (901, 3);
      usleep (700);
    }
}
