/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespaces: who a namespace is, entering one for a moment, and
 * whether one still exists.
 *
 * A namespace is named by the nsfs inode of /proc/<pid>/ns/net (st_dev,
 * st_ino), plus the boot it belongs to and its SO_NETNS_COOKIE: inode
 * numbers are reused once a namespace dies (older kernels hand out the lowest
 * free one), the cookie never is within a boot.  */
#ifndef ROCE_NETNS_H
#define ROCE_NETNS_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/error.h"

#define NETNS_BOOT_ID_MAX 40

/* An inode bit no kernel sets (nsfs inodes are 32-bit): the id of a namespace
 * that died and whose inode number a live namespace now has, kept apart
 * from it (lease.h: lease_holder_move_aside).  */
#define NETNS_INO_GONE (1ULL << 63)

struct netns_id
{
  char boot_id[NETNS_BOOT_ID_MAX]; /* /proc/sys/kernel/random/boot_id */
  uint64_t dev;
  uint64_t ino;
  uint64_t cookie; /* 0: the kernel has no SO_NETNS_COOKIE (before 5.14) */
};

/* This boot's id (/proc/sys/kernel/random/boot_id, without its newline):
 * the one reader of it (namespace ids, the lease store's keys, the
 * cluster's liveness file, the runtime records).  */
int netns_boot_id (char out[NETNS_BOOT_ID_MAX], roce_error_t *err);

/* The identity of the namespace nsfd refers to.  sockfd is a socket created
 * inside it (its cookie is read), or -1 to enter the namespace for a moment
 * to make one.  */
int netns_id_of (int nsfd, int sockfd, struct netns_id *out, roce_error_t *err);
/* Opens the namespace file at path without ever waiting: O_PATH first,
 * then an nsfs file (and the inode want, when given) is opened again
 * through /proc/self/fd; anything else (a FIFO a tenant put there, a
 * regular file) is refused.  nofollow: the last component is no link.
 * Returns the fd.  */
struct stat;
int netns_open_nsfs (const char *path, bool nofollow, const struct stat *want, roce_error_t *err);
/* Opens a namespace pinned at path (a bind mount: a pod sandbox's under
 * /var/run/netns), never through a symlink, and reads its identity.
 * Returns the fd.  */
int netns_open_pinned (const char *path, struct netns_id *id, roce_error_t *err);
bool netns_id_equal (const struct netns_id *a, const struct netns_id *b);
/* Same inode in the same boot: a and b are the same namespace, or b reuses
 * the inode of a dead a (then their cookies differ).  */
bool netns_id_same_inode (const struct netns_id *a, const struct netns_id *b);
/* "net:[4026532177]" into buf.  */
const char *netns_id_format (const struct netns_id *id, char *buf, size_t size);

/* Switches the calling thread into nsfd's network namespace; *saved gets an
 * fd of the one it was in.  netns_leave() switches back and closes *saved;
 * it cannot fail (a hook left in the wrong namespace aborts).  */
/* Whether the namespace nsfd (an fd of /proc/<pid>/ns/<type>, or of a
 * bind mount of one) is the caller's own namespace of that type ("net",
 * "mnt", ...): 1 yes, 0 no, < 0 it cannot be told.  The one way roce-hook
 * asks "is this namespace ours".  */
int ns_is_self (int nsfd, const char *type, roce_error_t *err);
/* The inode of the process's own TYPE namespace ("net", "mnt", ...), as it
 * was at the first ask (read before the process enters any other).  */
int ns_self_ino (const char *type, uint64_t *ino, roce_error_t *err);
/* The inode number of a namespace link under /proc (`net:[4026531840]`):
 * a readlink costs the kernel less than a stat (no inode to fill in), and
 * every namespace is on the one nsfs, where its number is its identity.  */
int ns_link_ino (const char *path, uint64_t *ino, roce_error_t *err);
/* The same for two paths (either may be a namespace file or bind mount).  */
int ns_same_path (const char *a, const char *b, roce_error_t *err);

int netns_enter (int nsfd, int *saved, roce_error_t *err);
void netns_leave (int *saved);
/* Whether an interface made in nsfd's network namespace now gets IPv6:
 * 0 on; 1 off, *which the switch that says so ("net.ipv6.conf.all.
 * disable_ipv6", ".default.", or NETNS_NO_IPV6: the kernel has none), *value
 * its value; < 0 unreadable.  */
#define NETNS_NO_IPV6 "net.ipv6 (absent)"
int netns_ipv6_off (int nsfd, const char **which, int64_t *value, roce_error_t *err);

/* The same for a mount namespace, in this process (a child costs a fork
 * and an exit on every start): mntns_leave() returns to the runtime's
 * mount namespace and working directory, or aborts.  Meanwhile paths
 * resolve in the container's view, and syslog lines wait (log.h): a
 * socket opened now would be the container's /dev/log.  */
struct mntns_saved
{
  int ns;
  int cwd;
};
int mntns_enter (int nsfd, struct mntns_saved *saved, roce_error_t *err);
void mntns_leave (struct mntns_saved *saved);

/* The cookie of the namespace a socket lives in; 0 when unknown.  */
uint64_t netns_socket_cookie (int sockfd);

/* A snapshot of the network namespaces in use on the host: those of every
 * process in /proc, those a process holds open as an fd, and every nsfs
 * bind mount (`ip netns add`, a pod sandbox's pinned namespace) of the
 * caller's mount namespace.  */
struct netns_live;
/* A scan stops after this long (a node of fd-heavy processes, a tenant's
 * crowd) and is then unsure: every namespace counts as held.  */
#define NETNS_SCAN_MS 1000
int netns_live_scan (struct netns_live **out, roce_error_t *err);
int netns_live_scan_within (unsigned ms, struct netns_live **out, roce_error_t *err);
/* The same, for one namespace only (what holds id, every other inode passed
 * over), asking gone(arg) between processes whether the kernel has said
 * meanwhile that id ended: 1 it has (the scan stopped there: *out lists
 * what was found so far), 2 a holder that is not dying was found (the scan
 * stopped there: the answer is already "held"), 0 every process was
 * read.  */
int netns_live_scan_one (const struct netns_id *id, bool (*gone) (void *arg), void *arg,
                         struct netns_live **out, roce_error_t *err);
/* Whether the namespace id still exists: its inode is in use in this boot
 * and (when both are known) with the same cookie; true also when the scan
 * was unsure (out of time, a mount namespace it could not read).  */
bool netns_live_has (struct netns_live *l, const struct netns_id *id);
/* Whether only dying processes hold it (in it, or by an fd; no mount): a
 * process with SIGKILL pending, or exiting.  The namespace goes with them
 * in a moment: a runtime may run poststop before they are reaped.  */
bool netns_live_dying (struct netns_live *l, const struct netns_id *id);
void netns_live_free (struct netns_live *l);
void cleanup_netns_livep (struct netns_live **l);
#define cleanup_netns_live __attribute__ ((cleanup (cleanup_netns_livep)))

#endif
