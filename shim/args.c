/* SPDX-License-Identifier: Apache-2.0 */
/* roce-runtime's command line, read as runc reads it: the global options,
 * the call, its options and the container id.  */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "lib/utils.h"
#include "shim.h"

/* Global options of runc and crun that take a value.  Others are flags.  */
static const char *const global_valued[]
    = { "root", "log", "log-format", "criu", "rootless", "cgroup-manager", "log-level", NULL };
/* Options of create/run that take a value.  */
static const char *const create_valued[]
    = { "bundle", "b", "console-socket", "pid-file", "preserve-fds", NULL };
/* delete takes flags only (--force).  */
static const char *const delete_valued[] = { NULL };
/* Options of exec that take a value (runc 1.1, crun 1.8).  */
static const char *const exec_valued[] = { "console-socket",
                                           "cwd",
                                           "env",
                                           "e",
                                           "user",
                                           "u",
                                           "additional-gids",
                                           "g",
                                           "process",
                                           "p",
                                           "pid-file",
                                           "process-label",
                                           "apparmor",
                                           "cap",
                                           "c",
                                           "preserve-fds",
                                           "cgroup",
                                           NULL };

static bool
in_list (const char *name, size_t len, const char *const *list)
{
  for (const char *const *p = list; *p; p++)
    if (strlen (*p) == len && strncmp (*p, name, len) == 0)
      return true;
  return false;
}

/* "--name=value", "--name value", "-name value" (urfave/cli accepts single
 * dashes for long names).  Returns the number of argv slots consumed.  */
static int
option (int argc, char *const *argv, int i, const char *const *valued, const char **name,
        size_t *name_len, const char **value, roce_error_t *err)
{
  const char *a = argv[i] + (argv[i][1] == '-' ? 2 : 1);
  const char *eq = strchr (a, '=');

  *name = a;
  *name_len = eq ? (size_t) (eq - a) : strlen (a);
  *value = NULL;
  if (eq)
    {
      *value = eq + 1;
      return 1;
    }
  if (in_list (a, *name_len, valued))
    {
      if (i + 1 >= argc)
        return roce_error_make (err, EINVAL, "option `%s` needs a value", argv[i]);
      *value = argv[i + 1];
      return 2;
    }
  return 1;
}

/* exec [options] <id> <command...>, delete [--force] <id>: the id is the
 * first positional; what follows it is the command.  */
static int
parse_exec_delete (int argc, char *const *argv, int i, struct shim_args *out, roce_error_t *err)
{
  bool exec = strcmp (out->cmd, "exec") == 0;
  for (; i < argc;)
    {
      const char *name, *value;
      size_t len;
      int used;
      if (argv[i][0] != '-' || argv[i][1] == '\0')
        {
          out->id = argv[i];
          return 0;
        }
      if (strcmp (argv[i], "--") == 0)
        {
          out->id = i + 1 < argc ? argv[i + 1] : NULL;
          return 0;
        }
      used = option (argc, argv, i, exec ? exec_valued : delete_valued, &name, &len, &value, err);
      if (used < 0)
        return -1;
      if (exec && ((len == 7 && strncmp (name, "process", 7) == 0) || (len == 1 && name[0] == 'p')))
        out->process = value;
      i += used;
    }
  return 0;
}

int
shim_parse_argv (int argc, char *const *argv, struct shim_args *out, roce_error_t *err)
{
  int i = 1;
  memset (out, 0, sizeof (*out));

  for (; i < argc;)
    {
      const char *name, *value;
      size_t len;
      int used;
      if (argv[i][0] != '-' || argv[i][1] == '\0')
        break;
      if (strcmp (argv[i], "--") == 0)
        {
          i++;
          break;
        }
      used = option (argc, argv, i, global_valued, &name, &len, &value, err);
      if (used < 0)
        return -1;
      if (len == 3 && strncmp (name, "log", 3) == 0)
        out->log_path = value;
      else if (len == 4 && strncmp (name, "root", 4) == 0)
        out->root = value;
      else if (len == 10 && strncmp (name, "log-format", 10) == 0)
        out->log_json = value && strcmp (value, "json") == 0;
      i += used;
    }
  if (i >= argc)
    return 0;
  out->cmd = argv[i++];
  out->edits_bundle = strcmp (out->cmd, "create") == 0 || strcmp (out->cmd, "run") == 0;
  if (strcmp (out->cmd, "exec") == 0 || strcmp (out->cmd, "delete") == 0)
    return parse_exec_delete (argc, argv, i, out, err);
  if (! out->edits_bundle)
    return 0;

  for (; i < argc;)
    {
      const char *name, *value;
      size_t len;
      int used;
      if (argv[i][0] != '-' || argv[i][1] == '\0')
        {
          if (out->id == NULL)
            out->id = argv[i];
          i++;
          continue;
        }
      if (strcmp (argv[i], "--") == 0)
        {
          if (i + 1 < argc && out->id == NULL)
            out->id = argv[i + 1];
          break;
        }
      used = option (argc, argv, i, create_valued, &name, &len, &value, err);
      if (used < 0)
        return -1;
      if ((len == 6 && strncmp (name, "bundle", 6) == 0) || (len == 1 && name[0] == 'b'))
        out->bundle = value;
      else if ((len == 6 && strncmp (name, "detach", 6) == 0) || (len == 1 && name[0] == 'd'))
        out->detach = value == NULL || strcmp (value, "false") != 0;
      i += used;
    }
  if (out->bundle && out->bundle[0] == '\0')
    return roce_error_make (err, EINVAL, "--bundle: empty");
  return 0;
}
