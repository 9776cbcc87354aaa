/* SPDX-License-Identifier: Apache-2.0 */
/* The store's changes written: each holder's file beside and renamed, the
 * index entries pointed and dropped, the repair of what a killed hook left.  */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "spec/oci.h"

/* ---- writing ------------------------------------------------------------------------- */

/* Writes name in dirfd: beside (".name.new"), then renamed over.  */
static int
write_beside (int dirfd, const char *dir, const char *name, const char *text, roce_error_t *err)
{
  cleanup_free char *tmp = xasprintf (".%s.new", name);
  cleanup_close int fd
      = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return roce_error_sys (err, errno, "write `%s/%s`", dir, tmp);
  if (write_all_fd (fd, text, strlen (text), err) < 0)
    return roce_error_wrap (err, "write `%s/%s`", dir, tmp);
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    return roce_error_sys (err, errno, "rename `%s/%s`", dir, tmp);
  return 0;
}

/* Points the index entry name at key: a hard link to hfd/src (the holder's
 * file being written), renamed over an entry of another holder.  */
static int
entry_point (int fd, const char *dir, const char *name, const char *key, int hfd, const char *src,
             roce_error_t *err)
{
  char was[KEY_MAX];
  cleanup_free char *tmp = NULL;

  if (lease_entry_read (fd, name, was, err) < 0)
    return -1;
  if (strcmp (was, key) == 0)
    return 0;
  if (linkat (hfd, src, fd, name, 0) == 0)
    return 0;
  if (errno != EEXIST)
    return roce_error_sys (err, errno, "lease store entry `%s/%s`", dir, name);
  tmp = xasprintf (".%s.new", name);
  unlinkat (fd, tmp, 0);
  if (linkat (hfd, src, fd, tmp, 0) < 0 || renameat (fd, tmp, fd, name) < 0)
    return roce_error_sys (err, errno, "lease store entry `%s/%s`", dir, name);
  return 0;
}

/* Removes the entry name when it still names key: a link to the file
 * whose inode is ino (the holder's, read at its load: linked by the entry,
 * the number is that file's) names it without a read.  */
static void
entry_drop (int fd, const char *name, const char *key, uint64_t ino)
{
  char was[KEY_MAX];
  struct stat st;
  if ((ino && fstatat (fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (uint64_t) st.st_ino == ino)
      || (lease_entry_read (fd, name, was, NULL) == 0 && strcmp (was, key) == 0))
    unlinkat (fd, name, 0);
}

struct store_fds
{
  int h, a, c;
};

/* The entries of a holder as its file had it and no longer has.  */
static void
drop_old_entries (struct lease_store *s, const struct store_fds *f, const struct holder_index *ix,
                  const char *stored, uint64_t ino, const struct lease_holder *now, const char *key)
{
  cleanup_json struct json *root = NULL;
  struct lease_holder *old = xmalloc0 (sizeof (*old));
  char a[ADDR_STR_MAX];

  if (json_parse (stored, &root, NULL) == 0 && lease_holder_parse (root, key, old, NULL) == 0)
    {
      for (size_t k = 0; k < old->n_addrs; k++)
        if (now == NULL || ! lease_holder_lists (now, &old->addrs[k].addr, NULL))
          {
            cleanup_error roce_error_t berr = NULL;
            entry_drop (f->a, addr_format (&old->addrs[k].addr, a), key, ino);
            /* Taken over in this commit by another holder: still used.  */
            if (lease_index_addr (ix, &old->addrs[k].addr) == NULL
                && lease_bits_mark (s, &old->addrs[k].addr, false, &berr) < 0)
              roce_log (ROCE_LOG_WARN, "%s (gc makes it again)", berr->msg);
          }
      for (char **c = old->containers; c && *c; c++)
        if (lease_container_indexable (*c) && (now == NULL || ! lease_holder_has (now, *c)))
          entry_drop (f->c, *c, key, ino);
    }
  lease_holder_free (old);
}

/* With every holder loaded: the entries no holder lists, and files left
 * half-written, are what killed hooks left.  */
static void
bases_add (struct roce_addr **v, size_t *n, const struct roce_addr *a)
{
  struct roce_addr base = { .v = a->v & ~(roce_u128) 0xffff, .family = a->family };
  for (size_t i = 0; i < *n; i++)
    if (addr_eq (&(*v)[i], &base))
      return;
  *v = xrealloc (*v, (*n + 1) * sizeof (**v));
  (*v)[(*n)++] = base;
}

static void
repair_bits (struct lease_store *s)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  cleanup_free struct roce_addr *bases = NULL;
  size_t n = 0;
  int ufd = lease_subdir (s, LEASE_USED, false, NULL);

  /* Every IPv4 /16 and IPv6 /112 a file or a holder has.  */
  if (ufd >= 0 && (d = fdopendir (ufd)) == NULL)
    close (ufd);
  while (d && (e = readdir (d)) != NULL)
    {
      unsigned x, y;
      char end;
      struct roce_addr a;
      if (sscanf (e->d_name, "%3u.%3u%c", &x, &y, &end) == 2 && x < 256 && y < 256)
        {
          a = addr_v4 (x << 24 | y << 16);
          bases_add (&bases, &n, &a);
        }
      else if (strchr (e->d_name, ':') && addr_parse (e->d_name, &a) == 0 && a.family == AF_INET6
               && (a.v & 0xffff) == 0)
        bases_add (&bases, &n, &a);
      else if (e->d_name[0] == '.' && strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      bases_add (&bases, &n, &s->h[i]->addrs[k].addr);
  for (size_t i = 0; i < n; i++)
    {
      struct lease_bits b = { .base = bases[i], .fd = -1 };
      cleanup_error roce_error_t err = NULL;
      for (size_t h = 0; h < s->n; h++)
        for (size_t k = 0; k < s->h[h]->n_addrs; k++)
          {
            const struct roce_addr *a = &s->h[h]->addrs[k].addr;
            if (a->family == b.base.family && (a->v & ~(roce_u128) 0xffff) == b.base.v)
              b.map[(a->v & 0xffff) >> 3] |= (uint8_t) (1u << (a->v & 7));
          }
      if (lease_bits_write (s, &b, &err) < 0)
        roce_log (ROCE_LOG_WARN, "%s", err->msg);
      cleanup_closep (&b.fd);
    }
}

static void
repair (const struct store_fds *f, const struct holder_index *ix)
{
  const int fds[] = { f->a, f->c, f->h };
  for (size_t i = 0; i < ARRAY_SIZE (fds); i++)
    {
      cleanup_dir DIR *d = NULL;
      struct dirent *e;
      int fd = fcntl (fds[i], F_DUPFD_CLOEXEC, 0);
      if (fd < 0 || (d = fdopendir (fd)) == NULL)
        {
          if (fd >= 0)
            close (fd);
          continue;
        }
      while ((e = readdir (d)) != NULL)
        {
          char key[KEY_MAX];
          struct lease_holder *h;
          struct roce_addr addr;
          bool keep;
          if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
            continue;
          if (fds[i] == f->h)
            {
              /* Half-written files; files of an earlier boot passed over.  */
              keep = e->d_name[0] != '.' && lease_index_key (ix, e->d_name) != NULL;
              if (! keep)
                unlinkat (fd, e->d_name, 0);
              continue;
            }
          if (lease_entry_read (fd, e->d_name, key, NULL) < 0)
            continue;
          h = e->d_name[0] == '.' ? NULL : lease_index_key (ix, key);
          if (fds[i] == f->a)
            keep = h && addr_parse (e->d_name, &addr) == 0 && lease_holder_lists (h, &addr, NULL);
          else
            keep = h && lease_holder_has (h, e->d_name);
          if (! keep)
            unlinkat (fd, e->d_name, 0);
        }
    }
}

static int
commit_blocks (struct lease_store *s, roce_error_t *err)
{
  cleanup_free char *text = lease_blocks_format (s);

  if ((text == NULL && s->blocks_stored == NULL)
      || (text && s->blocks_stored && strcmp (text, s->blocks_stored) == 0))
    return 0;
  if (text)
    {
      if (write_beside (s->dir_fd, s->dir, LEASE_BLOCKS, text, err) < 0)
        return -1;
    }
  else if (unlinkat (s->dir_fd, LEASE_BLOCKS, 0) < 0 && errno != ENOENT)
    return roce_error_sys (err, errno, "remove `%s/%s`", s->dir, LEASE_BLOCKS);
  free (s->blocks_stored);
  s->blocks_stored = steal_pointer (&text);
  return 0;
}

static void
close_fds (struct store_fds *f)
{
  cleanup_closep (&f->h);
  cleanup_closep (&f->a);
  cleanup_closep (&f->c);
}

/* Whether the store holds what a reader of format 2 cannot parse: an IPv6
 * address or block.  */
static bool
holds_ipv6 (const struct lease_store *s)
{
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->h[i]->n_addrs; k++)
      if (s->h[i]->addrs[k].addr.family == AF_INET6)
        return true;
  for (size_t i = 0; i < s->n_blocks; i++)
    if (s->blocks[i].subnet.addr.family == AF_INET6)
      return true;
  return false;
}

/* <state_dir>/format says 3 before the first IPv6 address or block is
 * written (beside, then renamed over: never half a file).  */
static int
format_mark (struct lease_store *s, roce_error_t *err)
{
  char text[16];
  cleanup_free char *tmp = xasprintf (".%s.new", LEASE_FORMAT_FILE);
  cleanup_close int fd = -1;

  if (s->format >= LEASE_STORE_FORMAT || ! holds_ipv6 (s))
    return 0;
  snprintf (text, sizeof (text), "%d\n", LEASE_STORE_FORMAT);
  fd = openat (s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || write_all_fd (fd, text, strlen (text), NULL) < 0 || fsync (fd) < 0
      || renameat (s->dir_fd, tmp, s->dir_fd, LEASE_FORMAT_FILE) < 0)
    return roce_error_sys (err, errno ? errno : EIO, "write `%s/%s`", s->dir, LEASE_FORMAT_FILE);
  s->format = LEASE_STORE_FORMAT;
  return 0;
}

int
lease_store_commit (struct lease_store *s, roce_error_t *err)
{
  struct store_fds f __attribute__ ((cleanup (close_fds))) = { -1, -1, -1 };
  struct holder_index ix __attribute__ ((cleanup (lease_index_clear))) = { 0 };
  cleanup_free char **texts = NULL;
  char key[KEY_MAX], a[ADDR_STR_MAX];
  int ret = -1;

  if (s->lock_fd < 0)
    return roce_error_make (err, EINVAL, "internal error: commit of an unlocked lease store");
  if (format_mark (s, err) < 0 || commit_blocks (s, err) < 0)
    return -1;
  if ((f.h = lease_subdir (s, LEASE_HOLDERS, true, err)) < 0
      || (f.a = lease_subdir (s, LEASE_ADDRS, true, err)) < 0
      || (f.c = lease_subdir (s, LEASE_CONTAINERS, true, err)) < 0)
    return -1;
  /* What changed: the holders whose text differs from their file's.  */
  texts = xmalloc0 ((s->n + 1) * sizeof (*texts));
  for (size_t i = 0; i < s->n; i++)
    {
      texts[i] = lease_holder_format (s->h[i]);
      if (s->h[i]->stored && strcmp (texts[i], s->h[i]->stored) == 0)
        {
          free (texts[i]);
          texts[i] = NULL;
        }
    }
  /* Written beside first; nothing of it is in place yet.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        cleanup_free char *tmp = NULL;
        cleanup_close int fd = -1;
        lease_holder_key (&s->h[i]->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        fd = openat (f.h, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write_all_fd (fd, texts[i], strlen (texts[i]), NULL) < 0)
          {
            roce_error_sys (err, errno ? errno : EIO, "write `%s/%s/%s`", s->dir, LEASE_HOLDERS,
                            tmp);
            goto out;
          }
      }
  roce_crash_point ("store-write");
  /* The index entries before the holders that list them.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        const struct lease_holder *h = s->h[i];
        cleanup_free char *tmp = NULL;
        lease_holder_key (&h->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        for (size_t k = 0; k < h->n_addrs; k++)
          if (entry_point (f.a, LEASE_ADDRS, addr_format (&h->addrs[k].addr, a), key, f.h, tmp, err)
              < 0)
            goto out;
        for (char **c = h->containers; c && *c; c++)
          if (lease_container_indexable (*c)
              && entry_point (f.c, LEASE_CONTAINERS, *c, key, f.h, tmp, err) < 0)
            goto out;
        for (size_t k = 0; k < h->n_addrs; k++)
          if (lease_bits_mark (s, &h->addrs[k].addr, true, err) < 0)
            goto out;
      }
  roce_crash_point ("store-index");
  /* Not fsynced (it cost 0.7-2.2 ms on every start and stop here): only a
   * power loss can tear a file, and after one no namespace of the store is
   * alive; the holders are named by boot, and a start never reads one of
   * an earlier boot but to take over its address.  The blocks a cluster
   * node holds are adopted back from etcd.  */
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        cleanup_free char *tmp = NULL;
        lease_holder_key (&s->h[i]->ns, key, sizeof (key));
        tmp = xasprintf (".%s.new", key);
        if (renameat (f.h, tmp, f.h, key) < 0)
          {
            roce_error_sys (err, errno, "rename `%s/%s/%s`", s->dir, LEASE_HOLDERS, tmp);
            goto out;
          }
      }
  /* Then what went: the holders' files, and the entries after them.  */
  lease_index_make (s->h, s->n, &ix);
  for (size_t i = 0; i < s->n_gone; i++)
    {
      struct lease_holder *now;
      lease_holder_key (&s->gone[i]->ns, key, sizeof (key));
      now = lease_index_key (&ix, key);
      if (now == NULL && unlinkat (f.h, key, 0) < 0 && errno != ENOENT)
        {
          roce_error_sys (err, errno, "remove `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
          goto out;
        }
      drop_old_entries (s, &f, &ix, s->gone[i]->stored, s->gone[i]->file_ino, now, key);
    }
  for (size_t i = 0; i < s->n; i++)
    if (texts[i])
      {
        if (s->h[i]->stored)
          {
            lease_holder_key (&s->h[i]->ns, key, sizeof (key));
            drop_old_entries (s, &f, &ix, s->h[i]->stored, 0, s->h[i], key);
          }
        free (s->h[i]->stored);
        s->h[i]->stored = steal_pointer (&texts[i]);
      }
  for (size_t i = 0; i < s->n_gone; i++)
    lease_holder_free (s->gone[i]);
  s->n_gone = 0;
  if (s->all)
    {
      repair (&f, &ix);
      repair_bits (s);
    }
  ret = 0;
out:
  for (size_t i = 0; i < s->n; i++)
    free (texts[i]);
  return ret;
}
