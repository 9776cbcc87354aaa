/* SPDX-License-Identifier: Apache-2.0 */
/* The store's layout read: holders/, addrs/ and containers/, and the bitmap
 * index of the addresses in use (a holder found by its address, namespace or
 * container without loading every holder).  */
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

/* ---- the layout: holders/, addrs/, containers/ ------------------------------------ */

/* The fd of a directory of the store; -1 with errno ENOENT when it is not
 * there and create is false.  */
int
lease_subdir (const struct lease_store *s, const char *name, bool create, roce_error_t *err)
{
  int fd = openat (s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create)
    {
      if (mkdirat (s->dir_fd, name, 0755) < 0 && errno != EEXIST)
        return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, name);
      fd = openat (s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  if (fd < 0 && (errno != ENOENT || create))
    return roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, name);
  if (fd >= 0)
    {
      cleanup_free char *path = xasprintf ("%s/%s", s->dir, name);
      if (check_private (fd, path, "lease store directory", S_IFDIR, err) < 0)
        {
          close (fd);
          errno = EACCES;
          return -1;
        }
    }
  return fd;
}

static bool
key_of_this_boot (const char *key)
{
  char now[NETNS_BOOT_ID_MAX] = "";
  size_t n;
  if (netns_boot_id (now, NULL) < 0)
    return true; /* cannot tell: take it for this boot's */
  n = strlen (now);
  return strncmp (key, now, n) == 0 && key[n] == '_';
}

struct lease_holder *
lease_loaded_with_key (const struct lease_store *s, const char *key)
{
  char k[KEY_MAX];
  for (size_t i = 0; i < s->n; i++)
    {
      lease_holder_key (&s->h[i]->ns, k, sizeof (k));
      if (strcmp (k, key) == 0)
        return s->h[i];
    }
  return NULL;
}

static bool
gone_with_key (const struct lease_store *s, const char *key)
{
  char k[KEY_MAX];
  for (size_t i = 0; i < s->n_gone; i++)
    {
      lease_holder_key (&s->gone[i]->ns, k, sizeof (k));
      if (strcmp (k, key) == 0)
        return true;
    }
  return false;
}

static int
holder_unreadable (const struct lease_store *s, const char *key, const char *why, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("lease store `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
  cleanup_free char *fix = xasprintf ("inspect it; when its network namespace is gone (roce-hook "
                                      "leases), move it aside (mv %s/%s/%s %s/%s.bad)",
                                      s->dir, LEASE_HOLDERS, key, s->dir, key);
  return roce_error_refuse (err, what, "a holder this version reads", why, fix);
}

static int
cmp_by_key (const void *a, const void *b)
{
  return strcmp (((const struct by_key *) a)->key, ((const struct by_key *) b)->key);
}

static int
cmp_by_addr (const void *a, const void *b)
{
  return addr_cmp (&((const struct by_addr *) a)->addr, &((const struct by_addr *) b)->addr);
}

void
lease_index_make (struct lease_holder *const *h, size_t n, struct holder_index *ix)
{
  size_t na = 0;
  ix->keys = xmalloc0 ((n + 1) * sizeof (*ix->keys));
  for (size_t i = 0; i < n; i++)
    {
      lease_holder_key (&h[i]->ns, ix->keys[i].key, KEY_MAX);
      ix->keys[i].h = h[i];
      na += h[i]->n_addrs;
    }
  ix->n_keys = n;
  qsort (ix->keys, ix->n_keys, sizeof (*ix->keys), cmp_by_key);
  ix->addrs = xmalloc0 ((na + 1) * sizeof (*ix->addrs));
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < h[i]->n_addrs; k++)
      ix->addrs[ix->n_addrs++] = (struct by_addr){ .addr = h[i]->addrs[k].addr, .h = h[i] };
  qsort (ix->addrs, ix->n_addrs, sizeof (*ix->addrs), cmp_by_addr);
}

void
lease_index_clear (struct holder_index *ix)
{
  free (ix->keys);
  free (ix->addrs);
  memset (ix, 0, sizeof (*ix));
}

struct lease_holder *
lease_index_key (const struct holder_index *ix, const char *key)
{
  struct by_key k = { .h = NULL };
  const struct by_key *f;
  if (strlen (key) >= KEY_MAX)
    return NULL;
  strcpy (k.key, key);
  f = bsearch (&k, ix->keys, ix->n_keys, sizeof (*ix->keys), cmp_by_key);
  return f ? f->h : NULL;
}

struct lease_holder *
lease_index_addr (const struct holder_index *ix, const struct roce_addr *addr)
{
  struct by_addr k = { .addr = *addr };
  const struct by_addr *f = bsearch (&k, ix->addrs, ix->n_addrs, sizeof (*ix->addrs), cmp_by_addr);
  return f ? f->h : NULL;
}

/* Reads holders/<key> into the store (*out; NULL when there is none).  A
 * file of an earlier boot that cannot be read held nothing alive: it is
 * passed over (`gc` removes it).  */
static int
load_key (struct lease_store *s, int hfd, const char *key, const struct holder_index *had,
          struct lease_holder **out, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t perr = NULL;
  cleanup_json struct json *root = NULL;
  struct lease_holder *h;
  struct stat st;
  char k[KEY_MAX];
  int fd;

  /* Loaded already, or dropped in this transaction (load_all: those loaded
   * before it, looked up in `had`; a directory's names are unique).  */
  *out = had ? lease_index_key (&had[0], key) : lease_loaded_with_key (s, key);
  if (*out || (had ? lease_index_key (&had[1], key) != NULL : gone_with_key (s, key)))
    return 0;
  fd = openat (hfd, key, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0)
    return roce_error_sys (err, errno, "lease store `%s/%s/%s`", s->dir, LEASE_HOLDERS, key);
  if (fstat (fd, &st) < 0)
    st.st_ino = 0;
  if (read_all_fd (fd, HOLDER_FILE_MAX, &buf, NULL, &perr) < 0)
    {
      close (fd);
      return holder_unreadable (s, key, perr->msg, err);
    }
  close (fd);
  h = xmalloc0 (sizeof (*h));
  if (json_parse (buf, &root, &perr) < 0 || lease_holder_parse (root, key, h, &perr) < 0)
    {
      lease_holder_free (h);
      if (! key_of_this_boot (key))
        {
          roce_log (ROCE_LOG_WARN,
                    "lease store `%s/%s/%s` of an earlier boot is unreadable (%s): "
                    "passed over",
                    s->dir, LEASE_HOLDERS, key, perr->msg);
          return 0;
        }
      return holder_unreadable (s, key, perr->msg, err);
    }
  lease_holder_key (&h->ns, k, sizeof (k));
  if (strcmp (k, key) != 0)
    {
      lease_holder_free (h);
      return holder_unreadable (s, key, "a holder of another namespace", err);
    }
  h->stored = steal_pointer (&buf);
  h->file_ino = (uint64_t) st.st_ino;
  h->file_ctime_ns = (int64_t) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
  lease_holder_append (s, h);
  *out = h;
  return 0;
}

/* Whether the file `key` in hfd is still the one h was read from.  */
static bool
file_unchanged (int hfd, const char *key, const struct lease_holder *h)
{
  struct stat st;

  return h->file_ino != 0 && fstatat (hfd, key, &st, AT_SYMLINK_NOFOLLOW) == 0
         && (uint64_t) st.st_ino == h->file_ino
         && (int64_t) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec == h->file_ctime_ns;
}

bool
lease_holder_unchanged (const struct lease_store *s, const struct lease_holder *h)
{
  char key[KEY_MAX], path[KEY_MAX + sizeof (LEASE_HOLDERS) + 1];

  if (h->file_ino == 0)
    return true;
  if (s->dir_fd < 0)
    return false;
  /* One stat from the store's directory: only the file's identity is
   * compared, nothing is read through the path.  */
  lease_holder_key (&h->ns, key, sizeof (key));
  snprintf (path, sizeof (path), LEASE_HOLDERS "/%s", key);
  return file_unchanged (s->dir_fd, path, h);
}

/* A holder of `from` whose file `key` in hfd is still the one it was read
 * from, taken out of `from` (NULL when there is none).  */
static struct lease_holder *
take_unchanged (struct lease_store *from, const struct holder_index *fx, int hfd, const char *key)
{
  struct lease_holder *h = fx ? lease_index_key (fx, key) : NULL;

  if (h == NULL || ! file_unchanged (hfd, key, h))
    return NULL;
  for (size_t i = 0; i < from->n; i++)
    if (from->h[i] == h)
      {
        from->h[i] = from->h[--from->n];
        return h;
      }
  return NULL;
}

static int
load_one (struct lease_store *s, const char *key, struct lease_holder **out, roce_error_t *err)
{
  cleanup_close int hfd = -1;
  *out = NULL;
  if (s->all)
    {
      *out = lease_loaded_with_key (s, key);
      return 0;
    }
  hfd = lease_subdir (s, LEASE_HOLDERS, false, err);
  if (hfd < 0)
    return errno == ENOENT ? 0 : -1;
  return load_key (s, hfd, key, NULL, out, err);
}

int
lease_store_load_all (struct lease_store *s, roce_error_t *err)
{
  return lease_store_load_all_from (s, NULL, err);
}

int
lease_store_load_all_from (struct lease_store *s, struct lease_store *from, roce_error_t *err)
{
  cleanup_dir DIR *d = NULL;
  struct holder_index had[3] = { { 0 }, { 0 }, { 0 } };
  struct dirent *e;
  int hfd, ret = 0;

  if (s->all || s->dir_fd < 0)
    {
      s->all = true;
      return 0;
    }
  hfd = lease_subdir (s, LEASE_HOLDERS, false, err);
  if (hfd < 0 && errno == ENOENT)
    {
      s->all = true;
      return 0;
    }
  if (hfd < 0 || (d = fdopendir (hfd)) == NULL)
    {
      if (hfd >= 0)
        close (hfd);
      return hfd < 0 ? -1
                     : roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_HOLDERS);
    }
  lease_index_make (s->h, s->n, &had[0]);
  lease_index_make (s->gone, s->n_gone, &had[1]);
  if (from)
    lease_index_make (from->h, from->n, &had[2]);
  while (ret == 0 && (e = readdir (d)) != NULL)
    {
      struct lease_holder *h;
      if (e->d_name[0] == '.')
        continue; /* ".", "..", a file being written */
      if (from && lease_index_key (&had[0], e->d_name) == NULL
          && lease_index_key (&had[1], e->d_name) == NULL
          && (h = take_unchanged (from, &had[2], dirfd (d), e->d_name)) != NULL)
        {
          lease_holder_append (s, h);
          continue;
        }
      ret = load_key (s, dirfd (d), e->d_name, had, &h, err);
    }
  lease_index_clear (&had[0]);
  lease_index_clear (&had[1]);
  lease_index_clear (&had[2]);
  if (ret < 0)
    return -1;
  s->all = true;
  return 0;
}

int
lease_load_netns (struct lease_store *s, const struct netns_id *id, roce_error_t *err)
{
  struct lease_holder *h;
  char key[KEY_MAX];
  lease_holder_key (id, key, sizeof (key));
  return load_one (s, key, &h, err);
}

/* The key of the holder an index entry names, or "" when it has none.  An
 * entry is a hard link to a version of its holder's file (linking costs no
 * new inode, unlike a symlink): whichever version, its namespace is the
 * holder's.  */
/* The key of a holder's text as this store writes it (lease_json.c:
 * {"netns":{"boot_id":"...","dev":D,"ino":I,...), read from its start
 * without parsing the rest: gc reads an entry for each address and
 * container of every holder it drops.  false: another layout (parsed).  */
static bool
key_of_text (const char *buf, char *key)
{
  static const char open[] = "{\"netns\":{\"boot_id\":\"";
  struct netns_id ns = { .dev = 0 };
  const char *b, *q;
  char *end;

  if (strncmp (buf, open, sizeof (open) - 1) != 0)
    return false;
  b = buf + sizeof (open) - 1;
  q = strchr (b, '"');
  if (q == NULL || (size_t) (q - b) >= sizeof (ns.boot_id) || memchr (b, '\\', (size_t) (q - b)))
    return false;
  memcpy (ns.boot_id, b, (size_t) (q - b));
  ns.boot_id[q - b] = '\0';
  if (strncmp (q, "\",\"dev\":", 8) != 0 || q[8] < '0' || q[8] > '9')
    return false;
  errno = 0;
  ns.dev = strtoull (q + 8, &end, 10);
  if (errno || strncmp (end, ",\"ino\":", 7) != 0 || end[7] < '0' || end[7] > '9')
    return false;
  q = end + 7;
  ns.ino = strtoull (q, &end, 10);
  if (errno || *end != ',')
    return false;
  lease_holder_key (&ns, key, KEY_MAX);
  return true;
}

int
lease_entry_read (int fd, const char *name, char *key, roce_error_t *err)
{
  cleanup_free char *buf = NULL;
  cleanup_json struct json *root = NULL;
  cleanup_error roce_error_t perr = NULL;
  struct lease_holder *h;
  int efd = fd < 0 ? -1 : openat (fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

  key[0] = '\0';
  if (efd < 0 && (fd < 0 || errno == ENOENT))
    return 0;
  if (efd < 0)
    return roce_error_sys (err, errno, "lease store entry `%s`", name);
  if (read_all_fd (efd, HOLDER_FILE_MAX, &buf, NULL, &perr) < 0)
    {
      close (efd);
      return 0; /* names no holder */
    }
  close (efd);
  if (key_of_text (buf, key))
    return 0;
  h = xmalloc0 (sizeof (*h));
  if (json_parse (buf, &root, &perr) == 0 && lease_holder_parse (root, name, h, &perr) == 0)
    lease_holder_key (&h->ns, key, KEY_MAX);
  lease_holder_free (h);
  return 0;
}

int
lease_load_container (struct lease_store *s, const char *container, roce_error_t *err)
{
  cleanup_close int cfd = -1;
  struct lease_holder *h;
  char key[KEY_MAX];

  if (s->all)
    return 0;
  for (size_t i = 0; i < s->n; i++)
    if (lease_holder_has (s->h[i], container))
      return 0;
  if (! lease_container_indexable (container))
    return lease_store_load_all (s, err);
  cfd = lease_subdir (s, LEASE_CONTAINERS, false, err);
  if (cfd < 0 && errno != ENOENT)
    return -1;
  if (lease_entry_read (cfd, container, key, err) < 0)
    return -1;
  return key[0] ? load_one (s, key, &h, err) : 0;
}

/* The first address of the 65,536 whose bits one file of used/ holds.  */
static struct roce_addr
bits_base (const struct roce_addr *a)
{
  return (struct roce_addr){ .v = a->v & ~(roce_u128) 0xffff, .family = a->family };
}

/* used/<a>.<b> for the IPv4 /16 a.b.0.0, used/<its first address> (with
 * its colons) for an IPv6 /112.  */
static void
bits_name (const struct roce_addr *base, char *buf, size_t size)
{
  if (base->family == AF_INET)
    snprintf (buf, size, "%u.%u", (unsigned) (base->v >> 24), (unsigned) (base->v >> 16) & 0xff);
  else
    {
      char a[ADDR_STR_MAX];
      snprintf (buf, size, "%s", addr_format (base, a));
    }
}

/* The header: the magic, then which addresses the file is of: an IPv4 /16
 * as its two first octets (RHUSED01, 16 bytes, as format 2 wrote them), an
 * IPv6 /112 as its first address (RHUSED06, 24 bytes).  */
static size_t
bits_header (const struct roce_addr *base, uint8_t *hdr)
{
  memset (hdr, 0, BITS_HDR6);
  if (base->family == AF_INET)
    {
      memcpy (hdr, BITS_MAGIC, 8);
      hdr[8] = (uint8_t) (base->v >> 24);
      hdr[9] = (uint8_t) (base->v >> 16);
      return BITS_HDR;
    }
  memcpy (hdr, BITS_MAGIC6, 8);
  addr_bytes (base, hdr + 8);
  return BITS_HDR6;
}

/* Writes b whole: beside, then renamed over (a file made again).  */
int
lease_bits_write (struct lease_store *s, struct lease_bits *b, roce_error_t *err)
{
  cleanup_close int ufd = lease_subdir (s, LEASE_USED, true, err);
  cleanup_free char *tmp = NULL;
  uint8_t hdr[BITS_HDR6];
  size_t hlen;
  char name[BITS_NAME_MAX];
  int fd;

  if (ufd < 0)
    return -1;
  bits_name (&b->base, name, sizeof (name));
  tmp = xasprintf (".%s.new", name);
  hlen = bits_header (&b->base, hdr);
  fd = openat (ufd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || write_all_fd (fd, hdr, hlen, NULL) < 0
      || write_all_fd (fd, b->map, BITS_MAP, NULL) < 0 || renameat (ufd, tmp, ufd, name) < 0)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      return roce_error_sys (err, e ? e : EIO, "write `%s/%s/%s`", s->dir, LEASE_USED, name);
    }
  cleanup_closep (&b->fd);
  b->fd = fd;
  b->hdr_len = hlen;
  return 0;
}

/* Reads the used/ file of base's addresses, or makes it again from addrs/
 * when it is missing or is not one (a store of an earlier version, a file
 * torn by a power loss).  */
static struct lease_bits *
bits_load (struct lease_store *s, const struct roce_addr *base, roce_error_t *err)
{
  struct lease_bits *b;
  uint8_t hdr[BITS_HDR6], want[BITS_HDR6];
  size_t hlen;
  char name[BITS_NAME_MAX];
  int fd = -1, ufd;
  bool ok = false;

  for (size_t i = 0; i < s->n_bits; i++)
    if (addr_eq (&s->bits[i].base, base))
      return &s->bits[i];
  s->bits = xrealloc (s->bits, (s->n_bits + 1) * sizeof (*s->bits));
  b = &s->bits[s->n_bits];
  memset (b, 0, sizeof (*b));
  b->base = *base;
  b->fd = -1;
  bits_name (base, name, sizeof (name));
  hlen = bits_header (base, want);
  b->hdr_len = hlen;
  ufd = lease_subdir (s, LEASE_USED, false, err);
  if (ufd < 0 && errno != ENOENT)
    return NULL;
  if (ufd >= 0)
    {
      fd = openat (ufd, name, (s->lock_fd >= 0 ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
      close (ufd);
    }
  if (fd >= 0)
    ok = pread (fd, hdr, hlen, 0) == (ssize_t) hlen && memcmp (hdr, want, hlen) == 0
         && pread (fd, b->map, BITS_MAP, (off_t) hlen) == BITS_MAP;
  if (ok)
    {
      b->fd = fd;
      s->n_bits++;
      return b;
    }
  if (fd >= 0)
    close (fd);
  memset (b->map, 0, BITS_MAP);
  {
    /* Made again from the index: every address some entry names (a superset
     * of what the holders have, never less).  */
    cleanup_dir DIR *d = NULL;
    struct dirent *e;
    int afd = lease_subdir (s, LEASE_ADDRS, false, err);
    if (afd < 0 && errno != ENOENT)
      return NULL;
    if (afd >= 0 && (d = fdopendir (afd)) == NULL)
      {
        close (afd);
        roce_error_sys (err, errno, "lease store `%s/%s`", s->dir, LEASE_ADDRS);
        return NULL;
      }
    while (d && (e = readdir (d)) != NULL)
      {
        struct roce_addr a, ab;
        if (e->d_name[0] == '.' || addr_parse (e->d_name, &a) < 0)
          continue;
        ab = bits_base (&a);
        if (addr_eq (&ab, base))
          b->map[(a.v & 0xffff) >> 3] |= (uint8_t) (1u << (a.v & 7));
      }
  }
  s->n_bits++;
  if (s->lock_fd >= 0 && lease_bits_write (s, &s->bits[s->n_bits - 1], err) < 0)
    {
      s->n_bits--;
      return NULL;
    }
  return &s->bits[s->n_bits - 1];
}

int
lease_store_index (struct lease_store *s, const struct roce_addr *first,
                   const struct roce_addr *last, roce_error_t *err)
{
  struct roce_addr base = bits_base (first), end = bits_base (last);
  if (s->all || addr_cmp (first, last) > 0)
    return 0;
  for (;; base = addr_add (&base, 0x10000))
    {
      if (bits_load (s, &base, err) == NULL)
        return -1;
      if (addr_eq (&base, &end))
        return 0;
    }
}

/* Sets or clears the address's bit, in the file at once (one byte).  */
int
lease_bits_mark (struct lease_store *s, const struct roce_addr *addr, bool used, roce_error_t *err)
{
  struct roce_addr base = bits_base (addr);
  struct lease_bits *b = bits_load (s, &base, err);
  unsigned lo = (unsigned) (addr->v & 0xffff);
  uint8_t old;

  if (b == NULL)
    return -1;
  old = b->map[lo >> 3];
  if (used)
    b->map[lo >> 3] |= (uint8_t) (1u << (lo & 7));
  else
    b->map[lo >> 3] &= (uint8_t) ~(1u << (lo & 7));
  if (b->map[lo >> 3] == old)
    return 0;
  if (b->fd < 0)
    return lease_bits_write (s, b, err);
  if (pwrite (b->fd, &b->map[lo >> 3], 1, (off_t) b->hdr_len + (off_t) (lo >> 3)) != 1)
    return roce_error_sys (err, errno ? errno : EIO, "lease store `%s/%s`", s->dir, LEASE_USED);
  return 0;
}

/* Whether the address's bit is set; an address whose file was not read is
 * taken for used (never handed out on a guess).  */
static bool
bit_set (const struct lease_store *s, const struct roce_addr *addr)
{
  struct roce_addr base = bits_base (addr);
  unsigned lo = (unsigned) (addr->v & 0xffff);
  for (size_t i = 0; i < s->n_bits; i++)
    if (addr_eq (&s->bits[i].base, &base))
      return (s->bits[i].map[lo >> 3] & (1u << (lo & 7))) != 0;
  return true;
}

bool
lease_unloaded_has (const struct lease_store *s, const struct roce_addr *addr)
{
  return ! s->all && bit_set (s, addr) && ! lease_gone_with_addr (s, addr);
}

uint64_t
lease_store_held (const struct lease_store *s, const char *hca, const struct roce_addr *first,
                  const struct roce_addr *last)
{
  uint64_t held = 0;
  for (size_t k = 0; k < s->n; k++)
    for (size_t a = 0; a < s->h[k]->n_addrs; a++)
      {
        const struct lease_addr *la = &s->h[k]->addrs[a];
        if (strcmp (la->hca, hca) == 0 && addr_cmp (&la->addr, first) >= 0
            && addr_cmp (&la->addr, last) <= 0)
          held++;
      }
  return held;
}

bool
lease_addr_used (const struct lease_store *s, const struct roce_addr *addr)
{
  return lease_loaded_with_addr (s, addr, NULL) || lease_unloaded_has (s, addr);
}

int
lease_find_addr (struct lease_store *s, const struct roce_addr *addr, struct lease_holder **out,
                 const struct lease_addr **addr_out, roce_error_t *err)
{
  cleanup_close int afd = -1;
  struct lease_holder *h;
  char name[ADDR_STR_MAX], key[KEY_MAX];

  *out = lease_loaded_with_addr (s, addr, addr_out);
  if (*out || s->all || lease_gone_with_addr (s, addr))
    return 0;
  afd = lease_subdir (s, LEASE_ADDRS, false, err);
  if (afd < 0 && errno != ENOENT)
    return -1;
  if (lease_entry_read (afd, addr_format (addr, name), key, err) < 0)
    return -1;
  if (key[0] == '\0')
    return 0;
  if (load_one (s, key, &h, err) < 0)
    return -1;
  /* An entry whose holder does not list the address is one a killed hook
   * left: the address is free.  */
  if (h && lease_holder_lists (h, addr, addr_out))
    *out = h;
  return 0;
}
