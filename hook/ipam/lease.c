/* SPDX-License-Identifier: Apache-2.0 */
/* The holders in memory: made, dropped, joined and left, looked up by
 * namespace or address, and the blocks held.  The bottom of the store: the
 * files lease_*.c keep them in on disk are read and written above it, and
 * the allocator (alloc.c) chooses their addresses.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/utils.h"

void
lease_holder_key (const struct netns_id *ns, char *buf, size_t size)
{
  char boot[NETNS_BOOT_ID_MAX];
  size_t i;
  /* The boot id is a UUID; anything else in it (a hand-made store) cannot
   * become a path.  The file's content has the whole id.  */
  for (i = 0; ns->boot_id[i] && i < sizeof (boot) - 1; i++)
    {
      char c = ns->boot_id[i];
      boot[i]
          = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'
                ? c
                : 'x';
    }
  boot[i] = '\0';
  snprintf (buf, size, "%s_%llu_%llu", boot, (unsigned long long) ns->dev,
            (unsigned long long) ns->ino);
}

/* Container ids that can name an index entry: [A-Za-z0-9_.-], not hidden.  */
bool
lease_container_indexable (const char *id)
{
  return id[0] != '.' && str_is_name (id, 200);
}
/* ---- holders ---------------------------------------------------------------- */

void
lease_holder_free (struct lease_holder *h)
{
  if (h == NULL)
    return;
  free (h->owner);
  strv_free (h->containers);
  for (size_t i = 0; i < h->n_addrs; i++)
    {
      free (h->addrs[i].hca);
      free (h->addrs[i].ifname);
      strv_free (h->addrs[i].gpus);
    }
  free (h->addrs);
  free (h->stored);
  free (h);
}

struct lease_holder *
lease_holder_add (struct lease_store *s, const struct netns_id *ns, const char *owner,
                  int64_t since)
{
  struct lease_holder *h = xmalloc0 (sizeof (*h));
  h->ns = *ns;
  h->owner = xstrdup (owner);
  h->since = since;
  h->nsid = -1;
  lease_holder_append (s, h);
  return h;
}

void
lease_holder_append (struct lease_store *s, struct lease_holder *h)
{
  /* Grown by half when full: gc loads thousands.  */
  if (s->n >= s->cap_h)
    {
      s->cap_h = s->cap_h ? s->cap_h + s->cap_h / 2 + 1 : 8;
      s->h = xrealloc (s->h, s->cap_h * sizeof (*s->h));
    }
  s->h[s->n++] = h;
}

void
lease_holder_drop (struct lease_store *s, struct lease_holder *h)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->h[i] == h)
      {
        lease_holder_drop_at (s, i);
        return;
      }
}

void
lease_holder_drop_at (struct lease_store *s, size_t i)
{
  struct lease_holder *h = s->h[i];
  memmove (&s->h[i], &s->h[i + 1], (s->n - i - 1) * sizeof (*s->h));
  s->n--;
  if (h->stored == NULL)
    {
      lease_holder_free (h);
      return;
    }
  /* Its file, and its index entries, go at the commit.  */
  if ((s->n_gone & (s->n_gone + 1)) == 0) /* 0, 1, 3, 7, ...: room doubled */
    s->gone = xrealloc (s->gone, (2 * s->n_gone + 2) * sizeof (*s->gone));
  s->gone[s->n_gone++] = h;
}

bool
lease_holder_has (const struct lease_holder *h, const char *container)
{
  for (char **c = h->containers; c && *c; c++)
    if (strcmp (*c, container) == 0)
      return true;
  return false;
}

void
lease_holder_join (struct lease_holder *h, const char *container)
{
  if (! lease_holder_has (h, container))
    strv_push (&h->containers, container);
}

bool
lease_holder_leave (struct lease_holder *h, const char *container)
{
  size_t n = strv_len (h->containers);
  for (size_t i = 0; i < n; i++)
    if (strcmp (h->containers[i], container) == 0)
      {
        free (h->containers[i]);
        memmove (&h->containers[i], &h->containers[i + 1], (n - i) * sizeof (char *));
        return true;
      }
  return false;
}

const struct lease_addr *
lease_holder_addr (const struct lease_holder *h, const char *hca, int family)
{
  for (size_t i = 0; i < h->n_addrs; i++)
    if (strcmp (h->addrs[i].hca, hca) == 0 && h->addrs[i].addr.family == family)
      return &h->addrs[i];
  return NULL;
}

void
lease_holder_set_gpus (struct lease_holder *h, const char *hca, char *const *gpus)
{
  for (size_t i = 0; i < h->n_addrs; i++)
    if (strcmp (h->addrs[i].hca, hca) == 0)
      {
        strv_free (h->addrs[i].gpus);
        h->addrs[i].gpus = NULL;
        for (size_t k = 0; gpus && gpus[k]; k++)
          strv_push (&h->addrs[i].gpus, gpus[k]);
      }
}

void
lease_holder_set_link (struct lease_holder *h, const char *hca, int parent_ifindex,
                       const uint8_t mac[6])
{
  for (size_t i = 0; i < h->n_addrs; i++)
    if (strcmp (h->addrs[i].hca, hca) == 0)
      {
        h->addrs[i].has_link = true;
        h->addrs[i].parent_ifindex = parent_ifindex;
        memcpy (h->addrs[i].mac, mac, 6);
      }
}

char *
lease_holder_users (const struct lease_holder *h, bool releasing)
{
  char *list;
  if (strv_len (h->containers) == 0)
    return xasprintf ("%s (%s)", h->owner, releasing ? "releasing" : "stopped");
  list = xstrdup ("");
  for (char **c = h->containers; *c; c++)
    {
      char *n = xasprintf ("%s%s%s", list, c == h->containers ? "" : ",", *c);
      free (list);
      list = n;
    }
  if (releasing)
    {
      char *n = xasprintf ("%s (releasing)", list);
      free (list);
      list = n;
    }
  return list;
}

struct lease_holder *
lease_find_netns (const struct lease_store *s, const struct netns_id *id)
{
  for (size_t i = 0; i < s->n; i++)
    if (netns_id_equal (&s->h[i]->ns, id))
      return s->h[i];
  return NULL;
}

bool
lease_holder_lists (const struct lease_holder *h, const struct roce_addr *addr,
                    const struct lease_addr **addr_out)
{
  for (size_t k = 0; k < h->n_addrs; k++)
    if (addr_eq (&h->addrs[k].addr, addr))
      {
        if (addr_out)
          *addr_out = &h->addrs[k];
        return true;
      }
  return false;
}

struct lease_holder *
lease_loaded_with_addr (const struct lease_store *s, const struct roce_addr *addr,
                        const struct lease_addr **addr_out)
{
  for (size_t i = 0; i < s->n; i++)
    if (lease_holder_lists (s->h[i], addr, addr_out))
      return s->h[i];
  return NULL;
}

/* Released in this transaction: its entry goes at the commit.  */
bool
lease_gone_with_addr (const struct lease_store *s, const struct roce_addr *addr)
{
  for (size_t i = 0; i < s->n_gone; i++)
    if (lease_holder_lists (s->gone[i], addr, NULL))
      return true;
  return false;
}

const char *
lease_time_format (int64_t t, char *buf, size_t size)
{
  char ts[UTC_TIME_MAX];
  snprintf (buf, size, "%sZ", utc_time_format (t, ts));
  return buf;
}

struct lease_block *
lease_block_add (struct lease_store *s, const struct roce_cidr *subnet,
                 const struct roce_addr *first, const struct roce_addr *last, int64_t since,
                 const char *value)
{
  struct lease_block *b;
  s->blocks = xrealloc (s->blocks, (s->n_blocks + 1) * sizeof (*s->blocks));
  b = &s->blocks[s->n_blocks++];
  *b = (struct lease_block){
    .subnet = *subnet, .first = *first, .last = *last, .since = since, .value = xstrdup (value)
  };
  return b;
}

void
lease_block_drop (struct lease_store *s, size_t i)
{
  free (s->blocks[i].value);
  memmove (&s->blocks[i], &s->blocks[i + 1], (s->n_blocks - i - 1) * sizeof (*s->blocks));
  s->n_blocks--;
}
