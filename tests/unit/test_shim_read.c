/* SPDX-License-Identifier: Apache-2.0 */
/* The shim's look at a bundle's config.json (shim/front.c,
 * shim_read_config) and what create/run make of it (shim/bundle.c): a
 * regular file is looked at and may be edited; a link is looked through as
 * the runtime reads it, and refused when it asks; what the runtime cannot
 * read either goes to it untouched; a FIFO or a device is never opened and
 * refused.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/oci.h"
#include "shim.h"
#include "unit.h"
#include "lib/utils.h"

TestSuite (shim_read, .init = tree_setup, .fini = tree_teardown);

#define PLAIN "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"]}}"
#define ASKS "{\"annotations\":{\"roce.io/hca\":\"mlx5_9\"}}"

static char *
at (const char *rel)
{
  return xasprintf ("%s/%s", tree_root, rel);
}

static void
link_config (const char *target)
{
  cleanup_free char *path = at ("b/config.json");
  tree_mk ("b/x", NULL);
  cr_assert_eq (symlink (target, path), 0);
}

/* shim_read_config of the tree's bundle b: its return, and *text the bytes
 * (NULL when none), *msg the error's message (NULL when none).  */
static int
look (char **text, char **msg)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *bundle = at ("b");
  char *buf = (char *) "unset";
  size_t len = 7;
  int r = shim_read_config (bundle, &buf, &len, &err);
  cr_assert ((r < 0) == (err != NULL), "return %d and the error disagree", r);
  cr_assert ((buf == NULL) == (r <= 0), "return %d with bytes %p", r, (void *) buf);
  cr_assert (buf != NULL || len == 0);
  *text = buf;
  *msg = err ? xstrdup (err->msg) : NULL;
  return r;
}

static void
assert_look (int want, const char *want_text)
{
  cleanup_free char *text = NULL, *msg = NULL;
  int r = look (&text, &msg);
  cr_assert_eq (r, want, "look: %d (%s)", r, msg ? msg : "no error");
  if (want_text)
    cr_assert_str_eq (text, want_text);
}

static void
assert_look_refused (const char *want_msg)
{
  cleanup_free char *text = NULL, *msg = NULL;
  int r = look (&text, &msg);
  cr_assert_lt (r, 0, "look: %d, expected a refusal", r);
  cr_assert_str_eq (msg, want_msg);
}

Test (shim_read, a_regular_file_in_the_bundle)
{
  tree_mk ("b/config.json", PLAIN);
  assert_look (SHIM_CONFIG_FILE, PLAIN);
}

/* The runtime follows a link at config.json: the look does too, inside the
 * bundle or out of it, and says it was a link.  */
Test (shim_read, a_link_is_looked_through_as_the_runtime_reads_it)
{
  cleanup_free char *out = at ("elsewhere/spec.json");
  cleanup_free char *config = at ("b/config.json");
  tree_mk ("b/real.json", ASKS);
  link_config ("real.json");
  assert_look (SHIM_CONFIG_LINKED, ASKS);
  tree_mk ("elsewhere/spec.json", PLAIN);
  cr_assert_eq (unlink (config), 0);
  link_config (out);
  assert_look (SHIM_CONFIG_LINKED, PLAIN);
}

/* What the runtime cannot read either: nothing to look at, handed to it
 * untouched (it says why itself).  */
Test (shim_read, what_the_runtime_cannot_read_either_is_its_own)
{
  cleanup_free char *loop = at ("b/config.json");
  cleanup_free char *inner = at ("b/config.json/x");
  assert_look (0, NULL); /* no bundle */
  tree_mk ("b/rootfs/x", "");
  assert_look (0, NULL); /* no config.json */
  link_config ("nowhere.json");
  assert_look (0, NULL); /* a dangling link */
  cr_assert_eq (unlink (loop), 0);
  link_config ("config.json");
  assert_look (0, NULL); /* a loop */
  cr_assert_eq (unlink (loop), 0);
  tree_mk ("b/config.json/x", "");
  assert_look (0, NULL); /* a directory */
  tree_mk ("f", "");
  cr_assert_eq (unlink (inner), 0);
  cr_assert_eq (rmdir (loop), 0);
  link_config ("../f/config.json");
  assert_look (0, NULL); /* ENOTDIR on the way */
}

/* A FIFO (at config.json or behind a link) is never opened: the look
 * returns at once (an open for reading would wait for a writer) and
 * refuses, as it does a device.  */
Test (shim_read, a_fifo_or_a_device_is_refused_unopened, .timeout = 10)
{
  cleanup_free char *fifo = at ("b/config.json");
  cleanup_free char *other = at ("elsewhere.fifo");
  cleanup_free char *want
      = xasprintf ("`%s/b/config.json`: a regular file vs a fifo (fix: write the spec into the "
                   "bundle as a regular file)",
                   tree_root);
  cleanup_free char *want_dev
      = xasprintf ("`%s/b/config.json`: a regular file vs a char device (fix: write the spec "
                   "into the bundle as a regular file)",
                   tree_root);
  tree_mk ("b/x", NULL);
  cr_assert_eq (mkfifo (fifo, 0644), 0);
  assert_look_refused (want);
  /* Nobody holds it open for reading: a writer finds no reader.  */
  cr_assert_lt (open (fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC), 0);
  cr_assert_eq (errno, ENXIO);
  cr_assert_eq (unlink (fifo), 0);
  cr_assert_eq (mkfifo (other, 0644), 0);
  link_config ("../elsewhere.fifo");
  assert_look_refused (want);
  cr_assert_eq (unlink (fifo), 0);
  link_config ("/dev/null");
  assert_look_refused (want_dev);
}

/* Over OCI_SCAN_MAX (a sparse file): untouched when no byte could spell a
 * request, refused as too large when one could, the key's bytes split
 * across the look's chunks or a backslash (an escape may spell it).  */
Test (shim_read, a_huge_file_is_refused_only_when_its_bytes_could_ask)
{
  cleanup_free char *path = at ("b/config.json");
  cleanup_free char *want
      = xasprintf ("`%s/b/config.json`: larger than %d bytes", tree_root, OCI_CONFIG_MAX);
  static const struct
  {
    const char *bytes;
    off_t at;
  } cases[] = {
    { "roce.io/hca", (1 << 20) - 5 },
    { "ROCE_HCA=", 3 << 20 },
    { "\\", OCI_SCAN_MAX },
  };
  int fd;

  tree_mk ("b/x", NULL);
  fd = open (path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  cr_assert_geq (fd, 0);
  cr_assert_eq (ftruncate (fd, (off_t) OCI_SCAN_MAX + 4096), 0);
  close (fd);
  assert_look (0, NULL);
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      size_t n = strlen (cases[i].bytes);
      fd = open (path, O_WRONLY | O_CLOEXEC);
      cr_assert_geq (fd, 0);
      cr_assert_eq (pwrite (fd, cases[i].bytes, n, cases[i].at), (ssize_t) n);
      assert_look_refused (want);
      cr_assert_eq (pwrite (fd, "                ", n, cases[i].at), (ssize_t) n);
      close (fd);
      assert_look (0, NULL);
    }
}

/* ---- create/run (shim_prepare_bundle) ---------------------------------- */

/* shim_prepare_bundle of `create --bundle <tree>/b c1` with a policy that
 * does not exist (none of these gets as far as loading it).  */
static int
prepare (char **msg)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *bundle = at ("b");
  struct shim_args a
      = shim_parse_ok ((const char *[]){ "r", "create", "--bundle", bundle, "c1", NULL });
  struct shim_start st = SHIM_START_INIT;
  struct roce_policy *pol = NULL;
  int r = shim_prepare_bundle (&a, "/nonexistent/policy.json", &pol, &st, &err);
  cr_assert_null (pol, "the policy was loaded");
  shim_start_clear (&st);
  *msg = err ? xstrdup (err->msg) : NULL;
  return r;
}

static void
assert_prepared_untouched (void)
{
  cleanup_free char *msg = NULL;
  int r = prepare (&msg);
  cr_assert_eq (r, 0, "prepare: %d (%s)", r, msg ? msg : "no error");
}

static void
assert_prepare_refused (const char *want)
{
  cleanup_free char *msg = NULL;
  int r = prepare (&msg);
  cr_assert_lt (r, 0, "prepare: %d, expected a refusal", r);
  cr_assert_str_eq (msg, want);
}

/* An annotated spec behind a link is refused in one line (the runtime
 * would run it unvalidated); a plain one behind a link goes to the runtime,
 * the link left as it is.  */
Test (shim_read, create_refuses_an_annotated_spec_behind_a_link)
{
  cleanup_free char *want
      = xasprintf ("`%s/b/config.json`: a regular file in the bundle vs a symlink (fix: write the "
                   "spec into the bundle as a regular file)",
                   tree_root);
  cleanup_free char *out = at ("elsewhere/spec.json");
  cleanup_free char *config = at ("b/config.json");
  char target[256];
  ssize_t n;

  tree_mk ("elsewhere/spec.json", ASKS);
  link_config (out);
  assert_prepare_refused (want);
  tree_mk ("b/real.json", ASKS);
  cr_assert_eq (unlink (config), 0);
  link_config ("real.json");
  assert_prepare_refused (want);
  tree_mk ("elsewhere/spec.json", PLAIN);
  cr_assert_eq (unlink (config), 0);
  link_config (out);
  assert_prepared_untouched ();
  n = readlink (config, target, sizeof (target) - 1);
  cr_assert_gt (n, 0, "config.json is no longer a link");
  target[n] = '\0';
  cr_assert_str_eq (target, out);
}

Test (shim_read, create_refuses_a_fifo_and_leaves_the_rest_to_the_runtime, .timeout = 10)
{
  cleanup_free char *config = at ("b/config.json");
  cleanup_free char *want
      = xasprintf ("`%s/b/config.json`: a regular file vs a fifo (fix: write the spec into the "
                   "bundle as a regular file)",
                   tree_root);
  assert_prepared_untouched (); /* no bundle */
  tree_mk ("b/x", NULL);
  assert_prepared_untouched (); /* no config.json */
  cr_assert_eq (mkfifo (config, 0644), 0);
  assert_prepare_refused (want);
  cr_assert_eq (unlink (config), 0);
  link_config ("nowhere.json");
  assert_prepared_untouched ();
  cr_assert_eq (unlink (config), 0);
  tree_mk ("b/config.json/x", "");
  assert_prepared_untouched ();
}

/* ROCE_HCA= (empty) asks nothing: the spec is not even parsed strictly
 * (args of the wrong type would refuse it), as runc would run it.  */
Test (shim_read, an_empty_roce_hca_asks_nothing)
{
  tree_mk ("b/config.json", "{\"process\":{\"env\":[\"ROCE_HCA=\"],\"args\":7}}");
  assert_prepared_untouched ();
  tree_mk ("b/config.json",
           "{\"process\":{\"env\":[\"ROCE_HCA=\",\"ROCE_IP=198.18.10.5\"],\"args\":7}}");
  assert_prepared_untouched ();
}
