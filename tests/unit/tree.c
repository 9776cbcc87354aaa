/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary file trees for the unit tests (fake sysfs roots): made, filled
 * and removed without a shell.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/utils.h"
#include "unit.h"

void
tree_make (char *tmpl)
{
  cr_assert_not_null (mkdtemp (tmpl), "mkdtemp %s: %s", tmpl, strerror (errno));
}

static int
remove_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path) < 0 ? -1 : 0;
}

void
tree_remove (const char *root)
{
  nftw (root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void
tree_write (const char *root, const char *rel, const char *content)
{
  cleanup_free char *path = xasprintf ("%s/%s", root, rel);
  /* mkdir -p of the parents.  */
  for (char *p = path + strlen (root) + 1; (p = strchr (p, '/')) != NULL; p++)
    {
      *p = '\0';
      cr_assert (mkdir (path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path,
                 strerror (errno));
      *p = '/';
    }
  if (content)
    {
      int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      cr_assert_geq (fd, 0, "open %s: %s", path, strerror (errno));
      cr_assert_eq (write_all_fd (fd, content, strlen (content), NULL), 0);
      close (fd);
    }
}

#define TREE_TEMPLATE "/tmp/roce-unit-XXXXXX"
char tree_root[sizeof (TREE_TEMPLATE)];

void
tree_setup (void)
{
  memcpy (tree_root, TREE_TEMPLATE, sizeof (TREE_TEMPLATE));
  tree_make (tree_root);
}

void
tree_teardown (void)
{
  tree_remove (tree_root);
}

void
tree_mk (const char *rel, const char *content)
{
  tree_write (tree_root, rel, content);
}
