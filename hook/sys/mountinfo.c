/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/<pid>/mountinfo parsed in one place (the escaped paths unescaped).  */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "sys/mountinfo.h"

/* Undoes the \ooo escapes in place.  */
static void
unescape_octal (char *s)
{
  char *o = s;
  while (*s)
    {
      if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0'
          && s[3] <= '7')
        {
          *o++ = (char) (((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
          s += 4;
        }
      else
        *o++ = *s++;
    }
  *o = '\0';
}

static bool
parse_line (char *line, struct mountinfo_entry *e)
{
  char *f[6] = { 0 };
  char *sep = strstr (line, " - ");
  char *save = NULL, *tail;
  size_t n = 0;

  if (sep == NULL)
    return false;
  *sep = '\0';
  tail = sep + 3;
  for (char *t = strtok_r (line, " ", &save); t && n < 6; t = strtok_r (NULL, " ", &save))
    f[n++] = t;
  if (n < 5 || sscanf (f[0], "%u", &e->id) != 1 || sscanf (f[1], "%u", &e->parent) != 1
      || sscanf (f[2], "%u:%u", &e->major, &e->minor) != 2)
    return false;
  save = NULL;
  e->fstype = strtok_r (tail, " ", &save);
  e->source = e->fstype ? strtok_r (NULL, " ", &save) : NULL;
  e->super = e->source ? strtok_r (NULL, " ", &save) : NULL;
  if (e->super == NULL)
    return false;
  unescape_octal (f[3]);
  unescape_octal (f[4]);
  unescape_octal ((char *) e->source);
  e->root = f[3];
  e->point = f[4];
  return true;
}

void
mountinfo_parse (const char *text, mountinfo_cb cb, void *arg)
{
  cleanup_free char *copy = xstrdup (text);
  char *save = NULL;

  for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      struct mountinfo_entry e = { 0 };
      if (parse_line (line, &e) && ! cb (&e, arg))
        return;
    }
}

bool
mountinfo_has_option (const char *commalist, const char *word)
{
  size_t len = strlen (word);
  const char *p = commalist;
  while (p && *p)
    {
      const char *e = strchr (p, ',');
      size_t l = e ? (size_t) (e - p) : strlen (p);
      if (l == len && strncmp (p, word, len) == 0)
        return true;
      p = e ? e + 1 : NULL;
    }
  return false;
}
