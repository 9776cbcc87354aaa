/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/<pid>/mountinfo, parsed in one place (proc(5)):
 * "<id> <parent> <maj>:<min> <root> <mountpoint> <opts> [<tag>...] - <fstype> <source> <super opts>"
 * with space, tab, newline and backslash escaped as \ooo in the paths.  */
#ifndef ROCE_MOUNTINFO_H
#define ROCE_MOUNTINFO_H

#include <stdbool.h>

/* The longest /proc/self/mountinfo read.  */
#define MOUNTINFO_MAX (8 * 1024 * 1024)

struct mountinfo_entry
{
  unsigned id, parent;
  unsigned major, minor;
  const char *root;  /* unescaped */
  const char *point; /* unescaped */
  const char *fstype;
  const char *source; /* unescaped */
  const char *super;  /* super options, comma-separated */
};

/* Calls cb for every well-formed line of text (a whole mountinfo file), in
 * order; a line that does not parse is skipped.  cb returns false to stop. */
typedef bool (*mountinfo_cb) (const struct mountinfo_entry *e, void *arg);
void mountinfo_parse (const char *text, mountinfo_cb cb, void *arg);

/* Whether the comma list (mount options) holds word.  */
bool mountinfo_has_option (const char *commalist, const char *word);

#endif
