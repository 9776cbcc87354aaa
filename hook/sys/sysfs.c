#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sysfs.h"
#include "utils.h"

int
sysfs_read_line (const char *root, const char *rel, char **out, roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("%s/%s", root, rel);
  return read_line_at (AT_FDCWD, path, out, err);
}

int
sysfs_write_value (const char *path, const char *value, roce_error_t *err)
{
  cleanup_close int fd = open (path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return roce_error_sys (err, errno, "open `%s` for writing", path);
  /* One write(2): a sysfs or configfs store sees the value whole.  */
  if (write_all_fd (fd, value, strlen (value), err) < 0)
    return roce_error_wrap (err, "write '%s' to `%s`", value, path);
  if (close (steal_fd (&fd)) < 0)
    return roce_error_sys (err, errno, "write '%s' to `%s`", value, path);
  return 0;
}

static bool
plausible_ifname (const char *s)
{
  size_t len = strlen (s);
  if (len == 0 || len > 15)
    return false;
  for (const char *p = s; *p; p++)
    if (*p <= 0x20 || *p > 0x7e || *p == '/' || *p == ':')
      return false;
  return true;
}

int
sysfs_hca_netdev (const struct roce_policy *p, const struct policy_hca *h, char **out,
                  roce_error_t *err)
{
  cleanup_free char *dir = NULL;
  cleanup_free char *found = NULL;
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  int n = 0;

  if (h->netdev)
    {
      *out = xstrdup (h->netdev);
      return 0;
    }

  dir = xasprintf ("%s/class/infiniband/%s/device/net", p->sysfs_root, h->name);
  d = opendir (dir);
  if (d)
    {
      while ((de = readdir (d)) != NULL)
        {
          if (de->d_name[0] == '.')
            continue;
          n++;
          free (found);
          found = xstrdup (de->d_name);
        }
      if (n > 1)
        return roce_error_refuse (err, "netdev of HCA", "one netdev", "several in device/net",
                                  "set hcas.<hca>.netdev in the policy");
      if (n == 1 && plausible_ifname (found))
        {
          *out = steal_pointer (&found);
          return 0;
        }
    }

  {
    cleanup_free char *rel = xasprintf ("class/infiniband/%s/ports/1/gid_attrs/ndevs/0", h->name);
    cleanup_error roce_error_t lerr = NULL;
    if (sysfs_read_line (p->sysfs_root, rel, &found, &lerr) == 0 && plausible_ifname (found))
      {
        *out = steal_pointer (&found);
        return 0;
      }
  }
  {
    cleanup_free char *what = xasprintf ("netdev of HCA %s", h->name);
    cleanup_free char *fix = xasprintf ("set hcas.%s.netdev in %s", h->name, p->path);
    return roce_error_refuse (err, what, "found in sysfs (device/net or gid_attrs/ndevs/0)", "none",
                              fix);
  }
}
