/* SPDX-License-Identifier: Apache-2.0 */
/* Times the QoS gate's host probe (DCB netlink, ECN sysfs, MTU, ethtool) and
 * the pure verdict: "qosbench NETDEV SYSFS_ROOT N" prints the mean cost of
 * each in microseconds and the process's peak RSS.  contrib/bench/qos.sh
 * runs it.  */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lib/utils.h"
#include "qos/qos.h"
#include "spec/policy.h"

static double
now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

int
main (int argc, char **argv)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_free char *json = NULL;
  char *env[] = { "NCCL_IB_TC=106", "NCCL_IB_SL=3", "NCCL_IB_HCA=mlx5_0", NULL };
  struct rusage ru;
  double t0, probe_us, verdict_us;
  long n;

  if (argc != 4 || (n = atol (argv[3])) <= 0)
    {
      fprintf (stderr, "usage: qosbench NETDEV SYSFS_ROOT N\n");
      return 2;
    }
  json = xasprintf ("{\"sysfs_root\":\"%s\",\"hcas\":{\"mlx5_0\":{\"netdev\":\"%s\",\"subnet\":"
                    "\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                    argv[2], argv[1]);
  if (policy_parse (json, "bench", &p, &err) < 0)
    {
      fprintf (stderr, "%s\n", err->msg);
      return 1;
    }

  t0 = now_us ();
  for (long i = 0; i < n; i++)
    {
      struct qos_probe pr;
      if (qos_probe_run (p, argv[1], &pr, &err) < 0)
        {
          fprintf (stderr, "%s\n", err->msg);
          return 1;
        }
      qos_probe_clear (&pr);
    }
  probe_us = (now_us () - t0) / (double) n;

  {
    struct qos_probe pr;
    struct qos_subject s = { .hca = "mlx5_0", .probe = &pr };
    qos_probe_run (p, argv[1], &pr, &err);
    t0 = now_us ();
    for (long i = 0; i < n; i++)
      {
        struct findings f = { 0 };
        qos_verdict (p, &s, 1, env, &f);
        findings_clear (&f);
      }
    verdict_us = (now_us () - t0) / (double) n;
    qos_probe_clear (&pr);
  }

  getrusage (RUSAGE_SELF, &ru);
  printf ("probe of one netdev: %.1f us (mean of %ld)\n", probe_us, n);
  printf ("verdict (one HCA, NCCL env): %.2f us (mean of %ld)\n", verdict_us, n);
  printf ("peak RSS: %ld KiB\n", ru.ru_maxrss);
  return 0;
}
