/* SPDX-License-Identifier: Apache-2.0 */
/* A start's side of the store (ipam.h): the leases taken in one
 * transaction, or the pod's network joined; again while what kept the
 * transaction from its answer is done without the lock; given back when a
 * later step fails; the GIDs found recorded.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ipam/blocks/blocks.h"
#include "ipam/ipam.h"
#include "ipam/lease.h"
#include "ipam_int.h"
#include "lib/log.h"
#include "lib/utils.h"

/* One take's inputs.  */
struct take
{
  const struct roce_policy *p;
  const char *id;
  const struct netns_id *ns;
  int32_t nsid;
  struct ipam_rail *rails;
  size_t n;
  enum ipam_hold hold;
};

/* Whether the pool of net spans more than 2^32 addresses: the MAC's four
 * octets cannot tell them apart.  */
static bool
pool_too_wide_for_mac (const struct policy_net *net)
{
  return addr_diff (&net->pool_last, &net->pool_first) > 0xffffffffu;
}

/* The MAC of a rail: the policy's two-octet prefix, then the last 32 bits
 * of its first address (its IPv4 address on a dual-stack rail); without a
 * prefix, or for an IPv6 pool wider than 2^32 addresses (whose last 32
 * bits repeat), a random one (locally administered, unicast), as the
 * kernel would pick.  Chosen before the link is made, so that the lease
 * records it: while the parent lists it, the interface lives.  */
static void
mac_pick (const struct policy_fabric *f, const struct policy_net *net, const struct roce_addr *addr,
          struct ipam_rail *it)
{
  uint32_t low = (uint32_t) addr->v;
  it->has_mac = true;
  if (! f->has_mac_prefix || pool_too_wide_for_mac (net))
    {
      if (getrandom (it->mac, sizeof (it->mac), 0) != (ssize_t) sizeof (it->mac))
        {
          struct timespec t;
          clock_gettime (CLOCK_MONOTONIC, &t);
          for (int b = 0; b < 6; b++)
            it->mac[b]
                = (uint8_t) ((uint64_t) t.tv_nsec >> (8 * b)) ^ (uint8_t) (low >> (8 * (b % 4)));
        }
      it->mac[0] = (uint8_t) ((it->mac[0] & 0xfe) | 0x02);
      return;
    }
  it->mac[0] = f->mac_prefix[0];
  it->mac[1] = f->mac_prefix[1];
  for (int b = 0; b < 4; b++)
    it->mac[2 + b] = (uint8_t) (low >> (24 - 8 * b));
}

/* A container whose namespace already has the network: it must ask for no
 * more than is there.  */
static int
check_join (const struct take *t, const struct lease_holder *h, roce_error_t *err)
{
  cleanup_free char *what = xasprintf ("network namespace shared with container %s", h->owner);
  char a[ADDR_STR_MAX], b[ADDR_STR_MAX];

  for (size_t i = 0; i < t->n; i++)
    {
      const struct ipam_rail *s = &t->rails[i];
      for (size_t k = 0; k < s->hca->n_nets; k++)
        {
          int family = s->hca->net[k].subnet.addr.family;
          const struct lease_addr *la = lease_holder_addr (h, s->hca->name, family);
          if (la == NULL)
            {
              cleanup_free char *exp = xstrdup ("");
              for (size_t j = 0; j < h->n_addrs; j++)
                str_list_add (&exp, ",", "%s", h->addrs[j].hca);
              cleanup_free char *e2 = xasprintf ("roce.io/hca within the HCAs it has (%s)", exp);
              return roce_error_refuse (err, what, e2, s->hca->name,
                                        "give every container of a pod the same roce.io/hca");
            }
          if (s->a[k].want.family && ! addr_eq (&la->addr, &s->a[k].want))
            {
              cleanup_free char *e2 = xasprintf ("roce.io/ip %s=%s as it has", s->hca->name,
                                                 addr_format (&la->addr, a));
              return roce_error_refuse (
                  err, what, e2, addr_format (&s->a[k].want, b),
                  "give every container of a pod the same roce.io/ip, or none");
            }
        }
    }
  return 0;
}

/* Takes the leases (or joins the namespace's network) in one transaction.
 * *sp: the store, left open for the caller.  BLOCKS_AGAIN: a rail needs
 * etcd (blocks_outside, without the lock), then a new round.  */
static int
take_once (struct take *t, struct alive_ctx *alive_p, struct blocks_ctx *blocks,
           struct lease_store **sp, roce_error_t *err)
{
  const char *id = t->id;
  struct lease_store *s = NULL;
  struct alive_ctx alive = *alive_p;
  struct lease_holder *h;
  char ns[48];
  int ret = -1;

  if (lease_store_open_wait (t->p->state_dir, t->p->lock_timeout_ms, sp, err) < 0)
    return -1;
  s = *sp;
  alive.s = s;
  alive.want_scan = alive.has_wait = alive.links_up = false;
  if (lease_load_netns (s, t->ns, err) < 0)
    return -1;
  h = lease_find_netns (s, t->ns);
  if (h)
    {
      if (check_join (t, h, err) < 0)
        return -1;
      lease_holder_join (h, id);
      if (lease_store_commit (s, err) < 0)
        return -1;
      t->hold = IPAM_JOINED;
      /* What the pod's network is, for this container's rails file.  */
      for (size_t i = 0; i < t->n; i++)
        {
          const struct policy_hca *hca = t->rails[i].hca;
          for (size_t k = 0; k < hca->n_nets; k++)
            {
              const struct lease_addr *la
                  = lease_holder_addr (h, hca->name, hca->net[k].subnet.addr.family);
              struct ipam_addr *a = &t->rails[i].a[k];
              a->addr = la->addr;
              snprintf (t->rails[i].ifname, sizeof (t->rails[i].ifname), "%s", la->ifname);
              a->has_gid = la->has_gid;
              a->gid_port = la->gid_port;
              a->gid_index = la->gid_index;
            }
        }
      roce_log (ROCE_LOG_INFO, "network: joined %s, set up by %s",
                netns_id_format (t->ns, ns, sizeof (ns)), h->owner);
      return 0;
    }

  /* A holder with our inode but another cookie had a namespace that died
   * and whose inode number was handed out again (the kernel hands out the
   * lowest free one): its leases go, unless its interfaces are still up
   * (the kernel deletes them a few ms after the namespace's end, and one
   * may live on elsewhere): then it is kept aside until they are down.  */
  for (size_t i = s->n; i > 0; i--)
    if (netns_id_same_inode (&s->h[i - 1]->ns, t->ns))
      {
        struct lease_holder *old = s->h[i - 1];
        if (holder_links_gone (&alive.host, old) != 1)
          {
            roce_log (ROCE_LOG_INFO,
                      "the leases of %s stay aside: its namespace is gone, its "
                      "interfaces are not yet",
                      old->owner);
            lease_holder_move_aside (s, old);
            continue;
          }
        roce_log (ROCE_LOG_INFO, "dropping the leases of %s: its namespace is gone", old->owner);
        lease_holder_drop (s, old);
      }

  h = lease_holder_add (s, t->ns, id, (int64_t) time (NULL));
  h->nsid = t->nsid;
  lease_holder_join (h, id);
  for (size_t i = 0; i < t->n; i++)
    {
      struct ipam_rail *it = &t->rails[i];
      for (size_t k = 0; k < it->hca->n_nets; k++)
        {
          struct ipam_addr *a = &it->a[k];
          int r = blocks_assign (blocks, s, h, it->hca, &it->hca->net[k], it->ifname,
                                 a->want.family ? &a->want : NULL, alive_cb, &alive, &a->addr, err);
          if (r != 0)
            {
              ret = r; /* < 0, or BLOCKS_AGAIN: nothing committed */
              goto out;
            }
        }
      mac_pick (&t->p->fabric, &it->hca->net[0], &it->a[0].addr, it);
      lease_holder_set_link (h, it->hca->name, it->parent_ifindex, it->mac);
      lease_holder_set_gpus (h, it->hca->name, it->gpus);
    }
  if (lease_store_commit (s, err) < 0)
    goto out;
  t->hold = IPAM_MADE;
  ret = 0;
out:
  *alive_p = alive;
  alive_p->s = NULL;
  return ret;
}

/* The transaction, again while what kept it from its answer is done
 * without the store's lock (struct alive_ctx): a scan (bounded), the end
 * of a release under way, a dead namespace's interfaces going.  All within
 * lock_timeout_ms; past it the kernel's word alone answers (unsure:
 * alive).  */
int
ipam_take (const struct roce_policy *p, const char *id, const struct netns_id *ns, int32_t nsid,
           struct ipam_rail *rails, size_t n, enum roce_linkage linkage, enum ipam_hold *hold,
           roce_error_t *err)
{
  struct take t = { .p = p, .id = id, .ns = ns, .nsid = nsid, .rails = rails, .n = n };
  struct alive_ctx alive = { 0 };
  /* A start that needs a new block (or its blocks checked) talks to etcd
   * without the store's lock: starts that need none never wait for it.  */
  struct blocks_ctx blocks = { .p = p, .unlocked = true, .linkage = linkage };
  struct timespec end;
  int ret, etcd_rounds = 0;

  *hold = IPAM_NONE;
  clock_gettime (CLOCK_MONOTONIC, &end);
  end.tv_sec += p->lock_timeout_ms / 1000;
  end.tv_nsec += (long) (p->lock_timeout_ms % 1000) * 1000000L;
  if (end.tv_nsec >= 1000000000L)
    {
      end.tv_sec++;
      end.tv_nsec -= 1000000000L;
    }
  for (;;)
    {
      cleanup_lease_store struct lease_store *s = NULL;
      long left;

      ret = take_once (&t, &alive, &blocks, &s, err);
      if (ret == BLOCKS_AGAIN)
        {
          lease_store_unlock (s);
          if (++etcd_rounds > 8)
            {
              ret = roce_error_make (err, EAGAIN,
                                     "address blocks: the held ones used up by other "
                                     "starts while new ones were claimed, 8 times");
              break;
            }
          if (blocks_outside (&blocks, err) < 0)
            {
              ret = -1;
              break;
            }
          continue;
        }
      if (ret == 0 || s == NULL || (! alive.want_scan && ! alive.has_wait && ! alive.links_up))
        break;
      /* Refused only for want of an answer: the lock goes first.  */
      lease_store_unlock (s);
      left = ms_until (&end);
      if (alive.no_wait && ! alive.want_scan)
        break;
      if (left <= 0)
        alive.no_wait = true; /* one last time, the kernel's word alone */
      else if (alive.want_scan)
        {
          cleanup_error roce_error_t serr = NULL;
          if (netns_live_scan_within (left < NETNS_SCAN_MS ? (unsigned) left : NETNS_SCAN_MS,
                                      &alive.live, &serr)
              < 0)
            {
              roce_log (ROCE_LOG_WARN, "%s", serr->msg);
              alive.failed = true;
            }
        }
      else if (alive.has_wait)
        {
          char shown[48];
          roce_log (ROCE_LOG_INFO, "network: waiting up to %ld ms for the release of %s", left,
                    netns_id_format (&alive.wait, shown, sizeof (shown)));
          if (! lease_reap_wait (s, &alive.wait, left))
            alive.no_wait = true;
        }
      else
        usleep (2000); /* interfaces of a dead namespace: the kernel's, in ms */
      if (alive.want_scan && alive.live == NULL && ! alive.failed)
        alive.failed = true;
      roce_error_release (err);
    }
  alive_clear (&alive);
  blocks_ctx_clear (&blocks);
  if (ret == 0)
    *hold = t.hold;
  return ret;
}

int
ipam_untake (const struct roce_policy *p, const char *id, const struct netns_id *ns,
             enum ipam_hold hold, void (*undo_links) (void *arg), void *arg)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *h;
  bool made = hold == IPAM_MADE;

  if (hold == IPAM_NONE)
    {
      undo_links (arg);
      return 0;
    }
  /* Under the lock, so that no container joins between the decision and
   * the links going.  */
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, &err) < 0
      || lease_load_netns (s, ns, &err) < 0)
    {
      undo_links (arg);
      goto fail;
    }
  h = lease_find_netns (s, ns);
  if (h)
    lease_holder_leave (h, id);
  /* Containers that joined the pod's network meanwhile use it: it stays,
   * held by them.  Only the network nobody else uses is taken down.  */
  if (h && made && strv_len (h->containers) == 0)
    {
      undo_links (arg);
      lease_holder_drop (s, h);
    }
  else if (h && made)
    roce_log (ROCE_LOG_INFO, "rolling back: the network stays, %s joined it meanwhile",
              h->containers[0]);
  else if (! h)
    undo_links (arg);
  if (lease_store_commit (s, &err) < 0)
    goto fail;
  return 0;
fail:
  /* The namespace dies with the refused container: `gc` recovers these.  */
  roce_log (ROCE_LOG_ERR, "releasing the leases: %s", err->msg);
  return -1;
}

/* The GIDs found go to the leases (so that a container joining the pod's
 * network, and `leases`, see them).  */
void
ipam_record_gids (const struct roce_policy *p, const struct netns_id *ns,
                  const struct ipam_rail *rails, size_t n)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *h;
  bool any = false;

  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < rails[i].hca->n_nets; k++)
      any = any || rails[i].a[k].has_gid;
  if (! any)
    return;
  if (lease_store_open_wait (p->state_dir, p->lock_timeout_ms, &s, &err) < 0
      || lease_load_netns (s, ns, &err) < 0)
    goto fail;
  h = lease_find_netns (s, ns);
  for (size_t i = 0; h && i < h->n_addrs; i++)
    for (size_t k = 0; k < n; k++)
      for (size_t j = 0; j < rails[k].hca->n_nets; j++)
        {
          const struct ipam_addr *a = &rails[k].a[j];
          if (a->has_gid && addr_eq (&h->addrs[i].addr, &a->addr))
            {
              h->addrs[i].has_gid = true;
              h->addrs[i].gid_port = a->gid_port;
              h->addrs[i].gid_index = a->gid_index;
            }
        }
  if (h && lease_store_commit (s, &err) < 0)
    goto fail;
  return;
fail:
  roce_log (ROCE_LOG_WARN, "recording the GIDs in the lease store: %s", err->msg);
}
