/* SPDX-License-Identifier: Apache-2.0 */
/* Replays every fuzzing seed and every input a fuzzer ever crashed on
 * (tests/fixtures/fuzz/<target>/) through the same parsers: each a regression
 * test under `make check`, and under ASan/UBSan with `make debug check`.  */
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "lib/utils.h"
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
