/* SPDX-License-Identifier: Apache-2.0 */
/* Replays every fuzzing seed and every input a fuzzer ever crashed on
 * (tests/fixtures/fuzz/<target>/) through the same parsers: each a regression
 * test under `make check`, and under ASan/UBSan with `make debug check`.  */
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "ipam/ipam_int.h"
#include "ipam/lease.h"
#include "lib/utils.h"
#include "spec/policy.h"
#include "targets.h"
#include "unit.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

Test (fuzz_corpus, replays_every_input)
{
  size_t total = 0;
  for (const struct fuzz_target *t = fuzz_targets; t->name; t++)
    {
      cleanup_free char *dir = xasprintf ("%s/fuzz/%s", FIXTURES, t->name);
      cleanup_dir DIR *d = opendir (dir);
      struct dirent *de;
      size_t n = 0;
      cr_assert_not_null (d, "no corpus at %s", dir);
      while ((de = readdir (d)) != NULL)
        {
          cleanup_free char *buf = NULL;
          size_t len = 0;
          cleanup_free char *path = NULL;
          if (de->d_name[0] == '.')
            continue;
          path = xasprintf ("%s/%s", dir, de->d_name);
          cr_assert_eq (read_file_at (AT_FDCWD, path, 1 << 20, &buf, &len, NULL), 0, "%s", path);
          cr_assert_eq (t->one ((const uint8_t *) buf, len), 0);
          n++;
        }
      cr_assert_gt (n, 0, "the %s corpus is empty", t->name);
      total += n;
    }
  cr_log_info ("replayed %zu inputs", total);
}

/* The IPv6 seeds reach past the parsers' first refusal: those meant to
 * parse do (so the fuzzer starts from inputs that take the IPv6 paths),
 * and the hostile ones are refused for what they are.  */
static char *
seed (const char *target, const char *name)
{
  cleanup_free char *path = xasprintf ("%s/fuzz/%s/%s", FIXTURES, target, name);
  char *buf = NULL;
  size_t len = 0;
  cr_assert_eq (read_file_at (AT_FDCWD, path, 1 << 20, &buf, &len, NULL), 0, "%s", path);
  return buf;
}

static int
store_seed (const char *name, size_t *holders, size_t *blocks, roce_error_t *err)
{
  cleanup_free char *text = seed ("store", name);
  cleanup_lease_store struct lease_store *s = xmalloc0 (sizeof (*s));
  s->dir_fd = s->lock_fd = -1;
  if (lease_store_parse (s, text, err) < 0)
    return -1;
  *holders = s->n;
  *blocks = s->n_blocks;
  return 0;
}

Test (fuzz_corpus, ipv6_store_seeds_parse_or_are_refused_for_their_flaw)
{
  static const struct
  {
    const char *name;
    const char *msg; /* NULL: parses */
    size_t holders, blocks;
  } cases[] = {
    { "ipv4.json", NULL, 1, 0 },
    { "dual-stack.json", NULL, 3, 0 },
    { "ipv6-blocks.json", NULL, 2, 3 },
    /* An IPv4-mapped address is IPv6 text: it parses as one, and round-trips. */
    { "ipv4-mapped.json", NULL, 1, 0 },
    { "zone.json", "holders[0].leases[0].address: 'fe80::1%roce0' is not an IP address" },
    { "block-mixed-families.json", "blocks[0]: not a block of a subnet" },
    { "block-outside.json", "blocks[0]: not a block of a subnet" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_error roce_error_t err = NULL;
      size_t holders = 0, blocks = 0;
      int r = store_seed (cases[i].name, &holders, &blocks, &err);
      if (cases[i].msg == NULL)
        {
          cr_assert_eq (r, 0, "%s: %s", cases[i].name, err ? err->msg : "");
          cr_assert_eq (holders, cases[i].holders, "%s", cases[i].name);
          cr_assert_eq (blocks, cases[i].blocks, "%s", cases[i].name);
        }
      else
        assert_err_contains (r, err, cases[i].msg);
    }
}

Test (fuzz_corpus, ipv6_policy_seeds_parse_or_are_refused_for_their_flaw)
{
  static const char *const good[] = { "ipv6.json", "dual-stack.json", "cluster-ipv6.json" };
  cleanup_free char *mixed = seed ("policy", "mixed-families.json");
  cleanup_error roce_error_t err = NULL;
  cleanup_policy struct roce_policy *bad = NULL;
  for (size_t i = 0; i < ARRAY_SIZE (good); i++)
    {
      cleanup_free char *text = seed ("policy", good[i]);
      cleanup_error roce_error_t e = NULL;
      cleanup_policy struct roce_policy *p = NULL;
      cr_assert_eq (policy_parse (text, good[i], &p, &e), 0, "%s: %s", good[i], e ? e->msg : "");
      cr_assert_eq (p->hcas[0].net[p->hcas[0].n_nets - 1].subnet.addr.family, AF_INET6, "%s",
                    good[i]);
    }
  assert_err_contains (policy_parse (mixed, "mixed-families.json", &bad, &err), err,
                       "hcas.mlx5_0.pool");
}
