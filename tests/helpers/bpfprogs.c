/* SPDX-License-Identifier: Apache-2.0 */
/* bpfprogs CGROUP_DIR: the ids of the device programs attached to a cgroup
 * v2 directory, one per line (what `bpftool cgroup show` would list).  */
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  __u32 ids[64];
  union bpf_attr a;
  int fd;

  if (argc != 2)
    {
      fprintf (stderr, "usage: bpfprogs CGROUP_DIR\n");
      return 2;
    }
  fd = open (argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    {
      perror (argv[1]);
      return 1;
    }
  memset (&a, 0, sizeof (a));
  a.query.target_fd = (__u32) fd;
  a.query.attach_type = BPF_CGROUP_DEVICE;
  a.query.prog_ids = (__u64) (unsigned long) ids;
  a.query.prog_cnt = 64;
  if (syscall (SYS_bpf, BPF_PROG_QUERY, &a, sizeof (a)) < 0)
    {
      perror ("BPF_PROG_QUERY");
      return 1;
    }
  for (__u32 i = 0; i < a.query.prog_cnt; i++)
    printf ("%u\n", ids[i]);
  return 0;
}
