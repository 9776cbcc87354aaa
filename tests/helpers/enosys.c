/* SPDX-License-Identifier: Apache-2.0 */
/* enosys CMD [ARG...]: runs CMD where openat2, open_tree, move_mount and
 * statmount fail with ENOSYS, as on a kernel before 5.2: the hook's
 * fallbacks (the fd walk, a bind mount through /proc/self/fd, the host's
 * mount table read whole) then run for real.  */
#define _GNU_SOURCE
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  static const char *const calls[] = { "openat2", "open_tree", "move_mount", "statmount" };
  scmp_filter_ctx ctx;
  int rc;

  if (argc < 2)
    {
      fprintf (stderr, "usage: enosys CMD [ARG...]\n");
      return 2;
    }
  ctx = seccomp_init (SCMP_ACT_ALLOW);
  if (ctx == NULL)
    return 1;
  for (size_t i = 0; i < sizeof (calls) / sizeof (calls[0]); i++)
    {
      int nr = seccomp_syscall_resolve_name (calls[i]);
      /* libseccomp 2.5 knows no statmount: 457 on every architecture.  */
      if (nr == __NR_SCMP_ERROR && strcmp (calls[i], "statmount") == 0)
        nr = 457;
      if (nr == __NR_SCMP_ERROR
          || (rc = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (ENOSYS), nr, 0)) < 0)
        {
          fprintf (stderr, "enosys: %s: cannot filter\n", calls[i]);
          return 1;
        }
    }
  rc = seccomp_load (ctx);
  seccomp_release (ctx);
  if (rc < 0)
    {
      fprintf (stderr, "enosys: seccomp_load: %s\n", strerror (-rc));
      return 1;
    }
  execvp (argv[1], argv + 1);
  fprintf (stderr, "enosys: %s: %s\n", argv[1], strerror (errno));
  return 127;
}
