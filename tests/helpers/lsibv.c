/* SPDX-License-Identifier: Apache-2.0 */
/* Lists the RDMA devices real libibverbs finds: "<name> <uverbs> <ibdev_path>".
 * The harness uses it to prove that its fake host is one libibverbs accepts;
 * SYSFS_PATH selects the fake sysfs tree.  */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

int
main (void)
{
  int n = 0;
  struct ibv_device **list = ibv_get_device_list (&n);
  if (list == NULL)
    {
      fprintf (stderr, "ibv_get_device_list: %s\n", strerror (errno));
      return 1;
    }
  for (int i = 0; i < n; i++)
    printf ("%s %s %s\n", ibv_get_device_name (list[i]), list[i]->dev_name, list[i]->ibdev_path);
  ibv_free_device_list (list);
  return 0;
}
