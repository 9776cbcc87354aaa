/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers for the Criterion unit tests.  */
#ifndef ROCE_UNIT_H
#define ROCE_UNIT_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/utils.h"

/* Asserts that ret failed and that the message, as it is printed (escaped
 * once: utils.h), contains `needle`.  */
#define assert_err_contains(ret, err, needle)                                                      \
  do                                                                                               \
    {                                                                                              \
      cr_assert_lt ((ret), 0, "expected a failure");                                               \
      cr_assert_not_null ((err), "a failure must set the error");                                  \
      char *shown_ = str_escape ((err)->msg);                                                      \
      bool has_ = strstr (shown_, (needle)) != NULL;                                               \
      cr_assert (has_, "message `%s` lacks `%s`", shown_, (needle));                               \
      free (shown_);                                                                               \
    }                                                                                              \
  while (0)

/* A temporary tree (tests/unit/tree.c).  tree_write creates the parents of
 * rel; content NULL makes only them.  */
void tree_make (char *tmpl);
void tree_remove (const char *root);
void tree_write (const char *root, const char *rel, const char *content);
/* The suites' fixture: a fresh tree at tree_root for each test
 * (TestSuite (x, .init = tree_setup, .fini = tree_teardown)); tree_mk is
 * tree_write below it.  */
extern char tree_root[];
void tree_setup (void);
void tree_teardown (void);
void tree_mk (const char *rel, const char *content);

/* shim_parse_argv of a NULL-terminated argv that must parse
 * (tests/unit/shim_args.c; the caller includes shim.h).  */
struct shim_args shim_parse_ok (const char *const *argv);

#endif
