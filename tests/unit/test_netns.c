/* SPDX-License-Identifier: Apache-2.0 */
/* The liveness checks' opens and scans (hook/sys/netns.c): a FIFO, a link
 * or a plain file where a namespace was is refused at once, never waited
 * on; a scan out of time is unsure, and unsure means held.  */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/utils.h"
#include "sys/netns.h"
#include "unit.h"

static char dir[] = "/tmp/roce-netns-XXXXXX";

static void
setup (void)
{
  cr_assert_not_null (mkdtemp (dir));
}

static void
teardown (void)
{
  tree_remove (dir);
}

TestSuite (netns, .init = setup, .fini = teardown, .timeout = 10);

static double
ms_since (const struct timespec *t0)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) (t.tv_sec - t0->tv_sec) * 1e3 + (double) (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A FIFO with no writer: a plain open for reading waits for one forever.  */
Test (netns, fifo_pin_refused_at_once)
{
  cleanup_free char *fifo = xasprintf ("%s/pin", dir);
  cleanup_error roce_error_t err = NULL;
  struct netns_id id;
  struct timespec t0;

  cr_assert_eq (mkfifo (fifo, 0600), 0);
  clock_gettime (CLOCK_MONOTONIC, &t0);
  cr_assert_lt (netns_open_pinned (fifo, &id, &err), 0);
  cr_assert_lt (ms_since (&t0), 1000.0);
  cr_assert_not_null (strstr (err->msg, "a namespace file vs another kind of file"), "%s",
                      err->msg);
}

Test (netns, fifo_by_magic_link_refused)
{
  cleanup_free char *fifo = xasprintf ("%s/f", dir);
  cleanup_free char *link = NULL;
  cleanup_close int rd = -1;
  cleanup_error roce_error_t err = NULL;

  /* Held for reading (as the attack holds it): an open for reading waits
   * for a writer.  Reached through /proc/self/fd/N, as the scan's fd
   * entries are.  */
  cr_assert_eq (mkfifo (fifo, 0600), 0);
  rd = open (fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  cr_assert_geq (rd, 0);
  link = xasprintf ("/proc/self/fd/%d", rd);
  cr_assert_lt (netns_open_nsfs (link, false, NULL, &err), 0);
  cr_assert_not_null (strstr (err->msg, "another kind of file"), "%s", err->msg);
}

Test (netns, namespace_opens_and_is_checked)
{
  cleanup_close int fd = -1;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *link = xasprintf ("%s/l", dir);
  struct stat want, got;

  cr_assert_eq (stat ("/proc/self/ns/net", &want), 0);
  fd = netns_open_nsfs ("/proc/self/ns/net", false, &want, &err);
  cr_assert_geq (fd, 0, "%s", err ? err->msg : "");
  cr_assert_eq (fstat (fd, &got), 0);
  cr_assert_eq (got.st_ino, want.st_ino);
  /* Another inode than the one asked for.  */
  want.st_ino++;
  cr_assert_lt (netns_open_nsfs ("/proc/self/ns/net", false, &want, &err), 0);
  roce_error_release (&err);
  /* A pin is never reached through a link.  */
  cr_assert_eq (symlink ("/proc/self/ns/net", link), 0);
  cr_assert_lt (netns_open_nsfs (link, true, NULL, &err), 0);
  roce_error_release (&err);
  cr_assert_lt (netns_open_nsfs ("/proc/self/status", false, NULL, &err), 0);
  roce_error_release (&err);
  /* A namespace of another kind (a pod's path naming its mount namespace):
   * refused when it is opened, in words, not when something enters it.  */
  cr_assert_lt (netns_open_nsfs ("/proc/self/ns/mnt", false, NULL, &err), 0);
  cr_assert_not_null (strstr (err->msg, "a network namespace vs another kind"), "%s", err->msg);
}

/* No time at all: the scan is unsure, and any namespace counts as held.  */
Test (netns, scan_out_of_time_is_unsure_held)
{
  cleanup_netns_live struct netns_live *live = NULL;
  cleanup_error roce_error_t err = NULL;
  struct netns_id nobody;
  cleanup_close int fd = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

  cr_assert_geq (fd, 0);
  cr_assert_eq (netns_id_of (fd, -1, &nobody, &err), 0, "%s", err ? err->msg : "");
  nobody.ino = 1; /* no namespace has inode 1 */
  cr_assert_eq (netns_live_scan_within (0, &live, &err), 0, "%s", err ? err->msg : "");
  cr_assert (netns_live_has (live, &nobody));
  netns_live_free (live);
  live = NULL;
  cr_assert_eq (netns_live_scan_within (60000, &live, &err), 0, "%s", err ? err->msg : "");
  cr_assert_not (netns_live_has (live, &nobody));
}
