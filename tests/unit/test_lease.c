/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of lease (Criterion).  */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipam/alloc.h"
#include "ipam/ipam_int.h"
#include "ipam/lease.h"
#include "lib/utils.h"
#include "unit.h"

static char dir[] = "/tmp/roce-lease-XXXXXX";
static struct roce_policy *pol;

static void
setup (void)
{
  cleanup_error roce_error_t err = NULL;
  const char *in
      = "{\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"198.18.10.0/24\",\"pool\":\"198.18.10.100-198.18.10.103\"},"
        "\"mlx5_1\":{\"subnet\":\"198.18.11.0/24\",\"pool\":\"198.18.11.100-198.18.11.199\"}}}";
  cr_assert_not_null (mkdtemp (dir));
  cr_assert_eq (policy_parse (in, "p.json", &pol, &err), 0, "%s", err ? err->msg : "");
}

static void
teardown (void)
{
  tree_remove (dir);
  policy_free (pol);
}

TestSuite (lease, .init = setup, .fini = teardown);

static struct netns_id
ns (uint64_t ino)
{
  struct netns_id id = { .boot_id = "b00t", .dev = 4, .ino = ino, .cookie = ino + 1000 };
  return id;
}

/* Liveness for the tests: namespaces with an odd inode are alive.  */
static bool
odd_alive (const struct lease_holder *h, void *arg)
{
  (void) arg;
  return h->ns.ino % 2 == 1;
}

static struct roce_addr
ip (const char *s)
{
  struct roce_addr a;
  cr_assert_eq (addr_parse (s, &a), 0);
  return a;
}

/* The address of s, for the calls that take one by pointer.  */
#define IPP(s) ((const struct roce_addr[]){ ip (s) })

static void
assign_ok (struct lease_store *s, struct lease_holder *h, int hca, const char *want,
           const char *expect)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_addr got = { 0 };
  char buf[ADDR_STR_MAX];
  cr_assert_eq (alloc_assign (s, h, &pol->hcas[hca], &pol->hcas[hca].net[0], "roce0",
                              want ? IPP (want) : NULL, odd_alive, NULL, &got, &err),
                0, "%s", err ? err->msg : "");
  cr_assert_str_eq (addr_format (&got, buf), expect);
}

Test (lease, lowest_free_address_and_static)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *a, *b, *c;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0);
  a = lease_holder_add (s, &(struct netns_id){ 0 }, "a", 1);
  a->ns = ns (1);
  assign_ok (s, a, 0, NULL, "198.18.10.100");
  assign_ok (s, a, 1, NULL, "198.18.11.100");
  b = lease_holder_add (s, &(struct netns_id){ .ino = 3 }, "b", 2);
  assign_ok (s, b, 0, "198.18.10.102", "198.18.10.102");
  c = lease_holder_add (s, &(struct netns_id){ .ino = 5 }, "c", 3);
  assign_ok (s, c, 0, NULL, "198.18.10.101"); /* the gap below the static one */
  assign_ok (s, c, 1, NULL, "198.18.11.101");
  {
    struct lease_holder *got = NULL;
    cr_assert_eq (lease_find_addr (s, IPP ("198.18.10.102"), &got, NULL, &err), 0);
    cr_assert_eq (got, b);
  }
  cr_assert_str_eq (lease_holder_addr (c, "mlx5_1", AF_INET)->ifname, "roce0");
}

Test (lease, static_address_of_a_live_holder_is_refused)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *a, *b;
  struct roce_addr got;
  int ret;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0);
  a = lease_holder_add (s, &(struct netns_id){ .ino = 1 }, "ctr-a", 0);
  lease_holder_join (a, "ctr-a");
  assign_ok (s, a, 0, "198.18.10.101", "198.18.10.101");
  b = lease_holder_add (s, &(struct netns_id){ .ino = 3 }, "ctr-b", 0);
  ret = alloc_assign (s, b, &pol->hcas[0], &pol->hcas[0].net[0], "roce0", IPP ("198.18.10.101"),
                      odd_alive, NULL, &got, &err);
  assert_err_contains (ret, err,
                       "address 198.18.10.101 of mlx5_0: an address no running container "
                       "holds vs held by container ctr-a since 1970-01-01T00:00:00Z (fix: pick "
                       "another address in 198.18.10.100-198.18.10.103, or omit roce.io/ip");
  cr_assert_eq (b->n_addrs, 0);
}

Test (lease, static_address_of_a_dead_holder_is_taken_over)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *a, *b;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0);
  a = lease_holder_add (s, &(struct netns_id){ .ino = 2 }, "dead", 0); /* even: gone */
  assign_ok (s, a, 0, "198.18.10.101", "198.18.10.101");
  b = lease_holder_add (s, &(struct netns_id){ .ino = 3 }, "new", 0);
  assign_ok (s, b, 0, "198.18.10.101", "198.18.10.101");
  cr_assert_eq (s->n, 1);
  cr_assert_str_eq (s->h[0]->owner, "new");
}

Test (lease, exhausted_pool_names_the_pool_and_dead_holders_are_reclaimed)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  struct lease_holder *h[4], *x;
  struct roce_addr got;
  int ret;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0);
  for (int i = 0; i < 4; i++)
    {
      h[i] = lease_holder_add (s, &(struct netns_id){ .ino = (uint64_t) (2 * i + 1) }, "live", 0);
      assign_ok (s, h[i], 0, NULL,
                 (const char *[]){ "198.18.10.100", "198.18.10.101", "198.18.10.102",
                                   "198.18.10.103" }[i]);
    }
  x = lease_holder_add (s, &(struct netns_id){ .ino = 99 }, "x", 0);
  ret = alloc_assign (s, x, &pol->hcas[0], &pol->hcas[0].net[0], "roce0", NULL, odd_alive, NULL,
                      &got, &err);
  assert_err_contains (ret, err,
                       "address pool of mlx5_0: a free address in "
                       "198.18.10.100-198.18.10.103 vs all 4 held (fix: ");
  roce_error_release (&err);

  h[2]->ns.ino = 6; /* its namespace died */
  assign_ok (s, x, 0, NULL, "198.18.10.102");
  cr_assert_eq (s->n, 4);
}

Test (lease, store_roundtrip_through_the_file)
{
  cleanup_error roce_error_t err = NULL;
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    h = lease_holder_add (
        s, &(struct netns_id){ .boot_id = "b", .dev = 4, .ino = 4026532177, .cookie = 77 },
        "pod-sandbox", 1700000000);
    lease_holder_join (h, "pod-sandbox");
    lease_holder_join (h, "app");
    lease_holder_join (h, "app");
    assign_ok (s, h, 0, NULL, "198.18.10.100");
    assign_ok (s, h, 1, "198.18.11.150", "198.18.11.150");
    lease_holder_set_link (h, "mlx5_1", 7, (const uint8_t[]){ 0x02, 0xce, 0xc6, 0x12, 0x0b, 0x96 });
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  {
    cleanup_lease_store struct lease_store *s = NULL;
    cleanup_free char *users = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_snapshot (dir, &s, &err), 0, "%s", err ? err->msg : "");
    cr_assert_eq (s->n, 1);
    h = s->h[0];
    cr_assert_str_eq (h->ns.boot_id, "b");
    cr_assert_eq (h->ns.ino, 4026532177);
    cr_assert_eq (h->ns.cookie, 77);
    cr_assert_eq (h->since, 1700000000);
    cr_assert_eq (h->n_addrs, 2);
    cr_assert (addr_eq (&h->addrs[1].addr, IPP ("198.18.11.150")));
    cr_assert_str_eq (h->addrs[1].hca, "mlx5_1");
    /* The link is recorded where it was set, and only there.  */
    cr_assert_not (h->addrs[0].has_link);
    cr_assert (h->addrs[1].has_link);
    cr_assert_eq (h->addrs[1].parent_ifindex, 7);
    cr_assert_arr_eq (h->addrs[1].mac, ((uint8_t[]){ 0x02, 0xce, 0xc6, 0x12, 0x0b, 0x96 }), 6);
    {
      struct lease_holder *c = lease_holder_copy (h);
      cr_assert_eq (c->n_addrs, 2);
      cr_assert_eq (c->addrs[1].parent_ifindex, 7);
      cr_assert_str_eq (c->owner, "pod-sandbox");
      lease_holder_free (c);
    }
    users = lease_holder_users (h, false);
    cr_assert_str_eq (users, "pod-sandbox,app");
    cr_assert (lease_holder_leave (h, "pod-sandbox"));
    cr_assert (lease_holder_leave (h, "app"));
    cr_assert_not (lease_holder_leave (h, "app"));
    free (users);
    users = lease_holder_users (h, false);
    cr_assert_str_eq (users, "pod-sandbox (stopped)");
    free (users);
    users = lease_holder_users (h, true);
    cr_assert_str_eq (users, "pod-sandbox (releasing)");
  }
}

Test (lease, missing_store_is_empty_and_snapshot_creates_nothing)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *sub = xasprintf ("%s/not/yet", dir);
  struct stat st;
  cr_assert_eq (lease_store_snapshot (sub, &s, &err), 0);
  cr_assert_eq (s->n, 0);
  cr_assert_neq (stat (sub, &st), 0);
}

/* A store that cannot be read refuses with the one-line contract: what,
 * expected vs found, a fix; no excerpt of the file (yajl's "(right here)").  */
Test (lease, an_unreadable_store_is_one_contract_line)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *f = xasprintf ("%s/leases.json", dir);
  FILE *o = fopen (f, "w");
  cr_assert_not_null (o);
  fputs ("{\"leases\": [ garbage\n\n\n", o);
  fclose (o);
  assert_err_contains (lease_store_open (dir, &s, &err), err,
                       "leases.json`: a store this version reads vs ");
  cr_assert_not_null (strstr (err->msg, " (fix: "), "%s", err->msg);
  cr_assert_null (strstr (err->msg, "right here"), "%s", err->msg);
  cr_assert_null (strchr (err->msg, '\n'), "%s", err->msg);
}

/* The store is not fsynced: a power loss may tear it.  Torn before this
 * boot, it held only dead leases: an empty store, not a refusal.  */
Test (lease, a_store_torn_before_this_boot_is_empty)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *f = xasprintf ("%s/leases.json", dir);
  struct timespec old[2] = { { .tv_sec = 86400 }, { .tv_sec = 86400 } };
  FILE *o = fopen (f, "w");
  cr_assert_not_null (o);
  fputs ("{\"version\": 1, \"holders\": [{\"netns\"", o);
  fclose (o);
  cr_assert_eq (utimensat (AT_FDCWD, f, old, 0), 0);
  cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (s->n, 0);
}

/* The boot that wrote leases.json is recorded beside it: a torn store of
 * this boot is a refusal even when the clock makes the file look older than
 * the boot.  */
Test (lease, a_torn_store_of_this_boot_is_refused_whatever_the_clock)
{
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *f = xasprintf ("%s/leases.json", dir);
  struct timespec old[2] = { { .tv_sec = 86400 }, { .tv_sec = 86400 } };
  FILE *o;
  /* The version that wrote leases.json recorded its boot beside it.  */
  {
    cleanup_free char *boot = NULL, *bf = xasprintf ("%s/leases.boot", dir);
    size_t len = 0;
    cr_assert_eq (
        read_file_at (AT_FDCWD, "/proc/sys/kernel/random/boot_id", 4096, &boot, &len, &err), 0);
    o = fopen (bf, "w");
    cr_assert_not_null (o);
    fwrite (boot, 1, len, o);
    fclose (o);
  }
  o = fopen (f, "w");
  cr_assert_not_null (o);
  fputs ("{\"version\": 1, \"holders\": [{\"netns\"", o);
  fclose (o);
  cr_assert_eq (utimensat (AT_FDCWD, f, old, 0), 0);
  assert_err_contains (lease_store_open (dir, &s, &err), err, "a store this version reads vs ");
}

Test (lease, corrupt_or_foreign_files_are_errors_naming_the_key)
{
  static const struct
  {
    const char *in, *msg;
  } cases[] = {
    { "{", "not valid JSON" },
    { "[]", "not a JSON object" },
    { "{\"version\":2,\"holders\":[]}", "version 2 (this roce-hook reads version 1)" },
    { "{\"version\":1}", "holders: missing" },
    { "{\"version\":1,\"holders\":[{\"netns\":{\"boot_id\":\"b\",\"dev\":4,\"ino\":1,\"cookie\":0},"
      "\"owner\":\"a\",\"containers\":[],\"since\":0,\"leases\":[{\"hca\":\"mlx5_0\","
      "\"address\":\"198.18.10.300\",\"ifname\":\"roce0\"}]}]}",
      "holders[0].leases[0].address: '198.18.10.300' is not an IP address" },
    { "{\"version\":1,\"holders\":[{\"netns\":{\"boot_id\":\"b\",\"dev\":-4,\"ino\":1,\"cookie\":0}"
      "}]}",
      "holders[0].netns.dev: expected an integer in 0..18446744073709551615" },
    { "{\"version\":1,\"holders\":[{\"netns\":{\"boot_id\":\"b\",\"dev\":4,\"ino\":1,\"cookie\":0},"
      "\"owner\":\"a\",\"containers\":[\"x\\u0001\"],\"since\":0,\"leases\":[]}]}",
      "holders[0].containers[0]: not a container id" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      cleanup_lease_store struct lease_store *s = xmalloc0 (sizeof (*s));
      cleanup_error roce_error_t err = NULL;
      s->dir_fd = s->lock_fd = -1;
      assert_err_contains (lease_store_parse (s, cases[i].in, &err), err, cases[i].msg);
    }
}

/* One process per "container", all at once: every one gets its own address.  */
Test (lease, parallel_writers_never_share_an_address)
{
  enum
  {
    N = 24
  };
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  pid_t pids[N];

  for (int i = 0; i < N; i++)
    {
      pids[i] = fork ();
      cr_assert_geq (pids[i], 0);
      if (pids[i] == 0)
        {
          struct lease_store *c = NULL;
          struct lease_holder *h;
          struct roce_addr got;
          /* The lock serialises them; waiting for it is not what is tested
           * (24 under memcheck on a loaded host outwait the default).  */
          if (lease_store_open_wait (dir, 600000, &c, NULL) < 0)
            _exit (1);
          h = lease_holder_add (c, &(struct netns_id){ .ino = (uint64_t) (2 * i + 1) }, "c", 0);
          if (alloc_assign (c, h, &pol->hcas[1], &pol->hcas[1].net[0], "roce0", NULL, odd_alive,
                            NULL, &got, NULL)
                  < 0
              || lease_store_commit (c, NULL) < 0)
            _exit (2);
          lease_store_free (c);
          _exit (0);
        }
    }
  for (int i = 0; i < N; i++)
    {
      int st;
      cr_assert_eq (waitpid (pids[i], &st, 0), pids[i]);
      cr_assert (WIFEXITED (st) && WEXITSTATUS (st) == 0,
                 "child %d failed: %s %d (1: the lock, 2: the address or the commit)", i,
                 WIFEXITED (st) ? "exit" : "signal",
                 WIFEXITED (st) ? WEXITSTATUS (st) : WTERMSIG (st));
    }
  cr_assert_eq (lease_store_snapshot (dir, &s, &err), 0);
  cr_assert_eq (s->n, N);
  for (int i = 0; i < N; i++)
    for (int k = i + 1; k < N; k++)
      cr_assert_not (addr_eq (&s->h[i]->addrs[0].addr, &s->h[k]->addrs[0].addr),
                     "holders %d and %d share", i, k);
}

/* "first" holds .100; then a writer taking an address for "killed" is
 * killed at the crash point.  */
static void
first_then_killed_at (const char *point)
{
  cleanup_error roce_error_t err = NULL;
  pid_t pid;
  int st;
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    h = lease_holder_add (s, &(struct netns_id){ .ino = 1 }, "first", 0);
    assign_ok (s, h, 0, NULL, "198.18.10.100");
    cr_assert_eq (lease_store_commit (s, &err), 0);
  }
  pid = fork ();
  if (pid == 0)
    {
      struct lease_store *c = NULL;
      struct lease_holder *h;
      struct roce_addr got;
      setenv ("ROCE_TEST_CRASH", point, 1);
      if (lease_store_open (dir, &c, NULL) < 0)
        _exit (1);
      h = lease_holder_add (c, &(struct netns_id){ .ino = 3 }, "killed", 0);
      alloc_assign (c, h, &pol->hcas[0], &pol->hcas[0].net[0], "roce0", NULL, odd_alive, NULL, &got,
                    NULL);
      lease_store_commit (c, NULL);
      _exit (3);
    }
  cr_assert_eq (waitpid (pid, &st, 0), pid);
  cr_assert (WIFSIGNALED (st) && WTERMSIG (st) == SIGKILL, "the writer was not killed");
}

/* Killed between writing the new state and renaming it: the old state is
 * intact, and the next writer goes on.  */
Test (lease, killed_writer_leaves_the_old_state_readable)
{
  cleanup_error roce_error_t err = NULL;
  first_then_killed_at ("store-write");
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0, "lock left behind or file broken: %s",
                  err ? err->msg : "");
    cr_assert_eq (lease_store_load_all (s, &err), 0, "%s", err ? err->msg : "");
    cr_assert_eq (s->n, 1);
    cr_assert_str_eq (s->h[0]->owner, "first");
    h = lease_holder_add (s, &(struct netns_id){ .ino = 5 }, "next", 0);
    assign_ok (s, h, 0, NULL, "198.18.10.101");
    cr_assert_eq (lease_store_commit (s, &err), 0);
  }
}

/* Killed after the index entries, before the holder's file is in place:
 * the entry names no holder that lists the address.  The address is not
 * handed out again meanwhile (never two holders of one address), and the
 * next commit with every holder read (gc's) drops the entry.  */
Test (lease, killed_between_index_and_holder_leaks_nothing_past_gc)
{
  cleanup_error roce_error_t err = NULL;
  first_then_killed_at ("store-index");
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
    h = lease_holder_add (s, &(struct netns_id){ .ino = 5 }, "next", 0);
    assign_ok (s, h, 0, NULL, "198.18.10.102");
    cr_assert_eq (lease_store_commit (s, &err), 0);
  }
  {
    /* gc's commit: every holder read, the stray entry dropped.  */
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    cr_assert_eq (lease_store_load_all (s, &err), 0);
    cr_assert_eq (s->n, 2);
    cr_assert_eq (lease_store_commit (s, &err), 0);
    lease_store_free (s);
    s = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    h = lease_holder_add (s, &(struct netns_id){ .ino = 7 }, "after-gc", 0);
    assign_ok (s, h, 0, NULL, "198.18.10.101");
  }
}

/* dev, ino and cookie are 64-bit unsigned: values of 2^63 and more (a
 * cookie can be) round-trip instead of making the store unreadable.  */
Test (lease, unsigned_64_bit_ids_round_trip)
{
  cleanup_lease_store struct lease_store *s = xmalloc0 (sizeof (*s));
  cleanup_lease_store struct lease_store *t = xmalloc0 (sizeof (*t));
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  struct netns_id id
      = { .boot_id = "b", .dev = UINT64_MAX, .ino = (1ULL << 63) + 5, .cookie = UINT64_MAX - 1 };
  s->dir_fd = s->lock_fd = t->dir_fd = t->lock_fd = -1;
  lease_holder_add (s, &id, "c1", 1);
  text = lease_store_format (s);
  cr_assert_eq (lease_store_parse (t, text, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (t->n, 1);
  cr_assert (netns_id_equal (&t->h[0]->ns, &id));
  cr_assert_eq (t->h[0]->ns.ino, (1ULL << 63) + 5);
}

/* A holder that is stopped (SIGSTOP) keeps the lock: the wait is bounded
 * and the refusal names it.  */
Test (lease, a_stopped_lock_holder_is_named_after_the_timeout)
{
  cleanup_error roce_error_t err = NULL;
  struct lease_store *s = NULL;
  int ready[2];
  char c;
  pid_t pid;
  cleanup_free char *want = NULL;

  cr_assert_eq (pipe (ready), 0);
  pid = fork ();
  cr_assert_geq (pid, 0);
  if (pid == 0)
    {
      struct lease_store *h = NULL;
      if (lease_store_open (dir, &h, NULL) < 0)
        _exit (1);
      (void) ! write (ready[1], "x", 1);
      raise (SIGSTOP);
      _exit (0);
    }
  cr_assert_eq (read (ready[0], &c, 1), 1);
  assert_err_contains (lease_store_open_wait (dir, 150, &s, &err), err, "free within 150 ms");
  want = xasprintf ("held by pid %d", (int) pid);
  cr_assert_not_null (strstr (err->msg, want), "%s", err->msg);
  cr_assert_null (s);
  kill (pid, SIGKILL);
  waitpid (pid, NULL, 0);
  roce_error_release (&err);
  cr_assert_eq (lease_store_open_wait (dir, 150, &s, &err), 0, "released when the holder died");
  lease_store_free (s);
}

/* The free address comes from used/, not from listing the holders: a store
 * whose bits say an address is held does not hand it out, one whose bits
 * are gone makes them again from addrs/, and gc makes them from the
 * holders (a bit a killed hook left is dropped).  */
Test (lease, free_addresses_come_from_the_bits_and_gc_remakes_them)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *used = xasprintf ("%s/used/198.18", dir);
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *a = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    a = lease_holder_add (s, &(struct netns_id){ .ino = 1 }, "a", 0);
    assign_ok (s, a, 0, NULL, "198.18.10.100");
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  {
    /* A bit set with no holder (as a killed hook leaves it): skipped.  */
    uint8_t byte;
    int fd = open (used, O_RDWR);
    cr_assert_geq (fd, 0, "no used/198.18");
    cr_assert_eq (pread (fd, &byte, 1, 16 + (10 * 256 + 101) / 8), 1);
    byte |= (uint8_t) (1u << ((10 * 256 + 101) % 8));
    cr_assert_eq (pwrite (fd, &byte, 1, 16 + (10 * 256 + 101) / 8), 1);
    close (fd);
  }
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *b = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    b = lease_holder_add (s, &(struct netns_id){ .ino = 3 }, "b", 0);
    assign_ok (s, b, 0, NULL, "198.18.10.102");
  }
  /* The bits gone: made again from addrs/ (.100 only).  */
  cr_assert_eq (unlink (used), 0);
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *b = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    b = lease_holder_add (s, &(struct netns_id){ .ino = 3 }, "b", 0);
    assign_ok (s, b, 0, NULL, "198.18.10.101");
  }
  {
    /* gc's commit with the stray bit set again: dropped.  */
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *c = NULL;
    uint8_t byte;
    int fd = open (used, O_RDWR);
    cr_assert_geq (fd, 0);
    cr_assert_eq (pread (fd, &byte, 1, 16 + (10 * 256 + 101) / 8), 1);
    byte |= (uint8_t) (1u << ((10 * 256 + 101) % 8));
    cr_assert_eq (pwrite (fd, &byte, 1, 16 + (10 * 256 + 101) / 8), 1);
    close (fd);
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    cr_assert_eq (lease_store_load_all (s, &err), 0);
    cr_assert_eq (lease_store_commit (s, &err), 0);
    lease_store_free (s);
    s = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    c = lease_holder_add (s, &(struct netns_id){ .ino = 5 }, "c", 0);
    assign_ok (s, c, 0, NULL, "198.18.10.101");
  }
}

/* A holder being released by a reaper is marked so while the reaper lives
 * (its lock); a second reaper stays out, and the mark of a reaper that
 * died is swept by gc.  */
Test (lease, a_reapers_mark_lives_with_its_lock)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  struct netns_id id = ns (41);
  struct lease_holder h = { .ns = id };
  cleanup_free char *mark = xasprintf ("%s/reaping", dir);
  int fd, again;
  pid_t child;
  int status;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_not (lease_reaping (s, &h), "marked before any mark");
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &fd, &err), 1, "%s", err ? err->msg : "");
  cr_assert_geq (fd, 0);
  /* Another process sees it, and cannot take it.  */
  child = fork ();
  cr_assert_geq (child, 0);
  if (child == 0)
    {
      cleanup_lease_store struct lease_store *o = NULL;
      if (lease_store_snapshot (dir, &o, NULL) < 0 || lease_reaping (o, &h) != 1)
        _exit (1);
      _exit (0);
    }
  cr_assert_eq (waitpid (child, &status, 0), child);
  cr_assert (WIFEXITED (status) && WEXITSTATUS (status) == 0,
             "another process does not see the mark");
  cr_assert_eq (lease_reaping (s, &h), 1);
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &again, &err), 0, "a second mark: %s",
                err ? err->msg : "taken");
  cr_assert_eq (again, -1);
  cr_assert_null (err);
  /* The reaper dies (its fd closes): the mark is stale, gc sweeps it.  */
  close (fd);
  cr_assert_not (lease_reaping (s, &h), "a dead reaper's mark counts");
  cr_assert_eq (access (mark, F_OK), 0);
  lease_reap_sweep (s);
  {
    cleanup_free char *file = NULL;
    char key[128];
    snprintf (key, sizeof (key), "b00t_4_41_1041");
    file = xasprintf ("%s/%s", mark, key);
    cr_assert_neq (access (file, F_OK), 0, "the stale mark stays");
  }
  /* A live one is left alone; unmark removes it.  */
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &fd, &err), 1);
  cr_assert_geq (fd, 0);
  lease_reap_sweep (s);
  cr_assert_eq (lease_reaping (s, &h), 1, "gc swept a live mark");
  lease_reap_unmark (s, &id, fd);
  cr_assert_not (lease_reaping (s, &h));
}

/* roce-runtime's mark after a foreground run names the container it
 * releases: the holder still lists that one (and only it) until the
 * process it left commits, and is "releasing" meanwhile; a holder another
 * container joined, or a plain mark while containers are listed, is not.  */
Test (lease, a_mark_naming_the_container_counts_while_it_is_listed)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  struct netns_id id = ns (42);
  char *one[] = { (char *) "run-1", NULL }, *two[] = { (char *) "run-1", (char *) "other", NULL };
  char *else_[] = { (char *) "other", NULL };
  struct lease_holder h = { .ns = id, .containers = one };
  int fd;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &fd, &err), 1, "%s", err ? err->msg : "");
  cr_assert_geq (fd, 0);
  cr_assert_not (lease_reaping (s, &h), "a plain mark with a container listed");
  lease_reap_unmark (s, &id, fd);
  cr_assert_eq (lease_reap_mark (s, &id, "run-1", &fd, &err), 1, "%s", err ? err->msg : "");
  cr_assert_geq (fd, 0);
  cr_assert_eq (lease_reaping (s, &h), 1, "the mark names the one container listed");
  h.containers = two;
  cr_assert_not (lease_reaping (s, &h), "another container joined");
  h.containers = else_;
  cr_assert_not (lease_reaping (s, &h), "the mark names another container");
  h.containers = NULL;
  cr_assert_eq (lease_reaping (s, &h), 1, "no container left");
  lease_reap_unmark (s, &id, fd);
  /* A mark taken again names what the new taker says, not the stale one.  */
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &fd, &err), 1);
  cr_assert_geq (fd, 0);
  h.containers = one;
  cr_assert_not (lease_reaping (s, &h), "a stale mark's name survived");
  close (fd);
}

/* A process that asks whether a mark is held (`leases`, a start waiting
 * for a reaper) takes no lock of it: a release that marks at that moment
 * gets its mark, every time.  */
Test (lease, asking_about_a_mark_never_keeps_a_release_from_taking_it)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  struct netns_id id = ns (43);
  struct lease_holder h = { .ns = id };
  int fd, status, missed = 0;
  pid_t child;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &fd, &err), 1, "%s", err ? err->msg : "");
  child = fork ();
  cr_assert_geq (child, 0);
  if (child == 0)
    {
      /* Asks as fast as it can until it is killed.  */
      cleanup_lease_store struct lease_store *o = NULL;
      if (lease_store_snapshot (dir, &o, NULL) < 0)
        _exit (1);
      for (;;)
        (void) lease_reaping (o, &h);
    }
  for (int i = 0; i < 3000; i++)
    {
      lease_reap_unmark (s, &id, fd);
      if (lease_reap_mark (s, &id, NULL, &fd, &err) != 1)
        {
          missed++;
          fd = -1;
          cr_assert_null (err, "%s", err->msg);
        }
    }
  kill (child, SIGKILL);
  cr_assert_eq (waitpid (child, &status, 0), child);
  lease_reap_unmark (s, &id, fd);
  cr_assert_eq (missed, 0, "%d of 3000 marks found taken by a process that only asked", missed);
}

/* An older version's reaper holds its mark with flock, which OFD locks do
 * not see: while an upgrade leaves it alive, its mark still counts as
 * held (leases, a start's wait) and gc does not sweep it.  */
Test (lease, an_older_versions_flock_mark_still_counts)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_free char *mark = xasprintf ("%s/reaping", dir);
  cleanup_free char *file = NULL;
  struct netns_id id = ns (45);
  struct lease_holder h = { .ns = id };
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  int fd, old;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_reap_mark (s, &id, NULL, &fd, &err), 1, "%s", err ? err->msg : "");
  close (fd);
  d = opendir (mark);
  cr_assert_not_null (d);
  while ((e = readdir (d)) != NULL)
    if (e->d_name[0] != '.')
      file = xasprintf ("%s/%s", mark, e->d_name);
  cr_assert_not_null (file);
  /* The older reaper: a flock of its own open of the file.  */
  old = open (file, O_RDWR | O_CLOEXEC);
  cr_assert_geq (old, 0);
  cr_assert_eq (flock (old, LOCK_EX | LOCK_NB), 0);
  cr_assert_eq (lease_reaping (s, &h), 1, "an older reaper's mark is not seen");
  cr_assert_not (lease_reap_wait (s, &id, 20), "a start did not wait for an older reaper");
  lease_reap_sweep (s);
  cr_assert_eq (access (file, F_OK), 0, "gc swept an older reaper's live mark");
  /* The older reaper ends: its mark is stale, and gc sweeps it.  */
  close (old);
  cr_assert_eq (lease_reaping (s, &h), 0);
  lease_reap_sweep (s);
  cr_assert_neq (access (file, F_OK), 0, "the mark an older reaper left stays");
}

/* `leases` reads the store without its lock: a holder it read may have
 * been released (committed, its mark gone) before it looks at the mark.
 * It is then told to read again, never that the holder is left to gc.  */
Test (lease, a_holder_released_since_the_snapshot_asks_for_another_read)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_lease_store struct lease_store *s = NULL;
  cleanup_lease_store struct lease_store *o = NULL;
  struct lease_holder *h;
  int fd;

  cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
  h = lease_holder_add (s, &(struct netns_id){ .ino = 44 }, "c", 0);
  lease_holder_join (h, "c");
  assign_ok (s, h, 0, NULL, "198.18.10.100");
  cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_store_snapshot (dir, &o, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (o->n, 1);
  cr_assert_eq (lease_reaping (o, o->h[0]), 0, "in use, read as it is");
  /* The release: marked, the container gone, committed.  */
  cr_assert_eq (lease_reap_mark (s, &h->ns, NULL, &fd, &err), 1, "%s", err ? err->msg : "");
  cr_assert (lease_holder_leave (h, "c"));
  cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (lease_reaping (o, o->h[0]), -1, "a holder that changed is judged by its old text");
  /* Under the store's lock the holder is what the store has.  */
  cr_assert_eq (lease_reaping (s, h), 1);
  /* Dropped and unmarked: the old snapshot cannot tell, a new one has none.  */
  lease_holder_drop (s, h);
  cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  lease_reap_unmark (s, &o->h[0]->ns, fd);
  cr_assert_eq (lease_reaping (o, o->h[0]), -1);
  lease_store_free (o);
  o = NULL;
  cr_assert_eq (lease_store_snapshot (dir, &o, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (o->n, 0);
}

/* The kernel hands a dead namespace's inode to the next one: the new
 * holder takes the old key, and the old holder, whose interface may still
 * be up, is kept aside with its addresses, their entries and bits until it
 * is released like any dead holder.  */
Test (lease, a_holder_moved_aside_keeps_its_addresses_under_a_key_of_its_own)
{
  cleanup_error roce_error_t err = NULL;
  struct netns_id old_ns = ns (51), new_ns = ns (51), aside;
  new_ns.cookie = 9999;
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    h = lease_holder_add (s, &old_ns, "old", 1700000000);
    assign_ok (s, h, 0, NULL, "198.18.10.100");
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h, *g;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    cr_assert_eq (lease_load_netns (s, &new_ns, &err), 0);
    cr_assert_null (lease_find_netns (s, &new_ns), "the new namespace found the old holder");
    cr_assert_eq (s->n, 1);
    g = lease_holder_move_aside (s, s->h[0]);
    cr_assert (g->ns.ino & NETNS_INO_GONE);
    h = lease_holder_add (s, &new_ns, "new", 1700000001);
    lease_holder_join (h, "new");
    assign_ok (s, h, 0, NULL, "198.18.10.101");
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  {
    cleanup_lease_store struct lease_store *s = NULL;
    const struct lease_addr *la = NULL;
    struct lease_holder *h = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    cr_assert_eq (lease_store_load_all (s, &err), 0, "%s", err ? err->msg : "");
    cr_assert_eq (s->n, 2);
    aside = old_ns;
    aside.ino |= NETNS_INO_GONE;
    cr_assert_not_null (lease_find_netns (s, &aside));
    cr_assert_not_null (lease_find_netns (s, &new_ns));
    cr_assert_eq (lease_find_addr (s, IPP ("198.18.10.100"), &h, &la, &err), 0);
    cr_assert (h && netns_id_equal (&h->ns, &aside), "the old address's entry");
    cr_assert_eq (lease_store_index (s, IPP ("198.18.10.100"), IPP ("198.18.10.103"), &err), 0);
    cr_assert (lease_addr_used (s, IPP ("198.18.10.100")), "the old address's bit");
    {
      char text[48];
      cr_assert_str_eq (netns_id_format (&aside, text, sizeof (text)), "net:[51] (gone)");
    }
    /* Released like any dead holder: its entry and bit go.  */
    lease_holder_drop (s, lease_find_netns (s, &aside));
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  {
    cleanup_lease_store struct lease_store *s = NULL;
    const struct lease_addr *la = NULL;
    struct lease_holder *h = NULL;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0);
    cr_assert_eq (lease_find_addr (s, IPP ("198.18.10.100"), &h, &la, &err), 0);
    cr_assert_null (h);
    cr_assert_eq (lease_store_index (s, IPP ("198.18.10.100"), IPP ("198.18.10.103"), &err), 0);
    cr_assert_not (lease_addr_used (s, IPP ("198.18.10.100")));
    cr_assert (lease_addr_used (s, IPP ("198.18.10.101")));
  }
}

/* A sticky world-writable state_dir (as /tmp) is refused: anybody could
 * take the store's fixed names first (its lock, its marks).  */
Test (lease, sticky_state_dir_refused)
{
  cleanup_free char *sd = xasprintf ("%s/sticky", dir);
  cleanup_error roce_error_t err = NULL;
  struct lease_store *s = NULL;

  cr_assert_eq (mkdir (sd, 0700), 0);
  cr_assert_eq (chmod (sd, 01777), 0);
  cr_assert_lt (lease_store_open (sd, &s, &err), 0);
  cr_assert_not_null (strstr (err->msg, "state_dir"), "%s", err->msg);
  cr_assert_not_null (strstr (err->msg, "a directory of its own"), "%s", err->msg);
  cr_assert_null (strchr (err->msg, '\n'));
  roce_error_release (&err);
  cr_assert_lt (lease_store_snapshot (sd, &s, &err), 0);
  /* Nothing was made in it.  */
  cr_assert_neq (faccessat (AT_FDCWD, sd, F_OK, 0), -1);
  {
    cleanup_free char *lock = xasprintf ("%s/" LEASE_LOCK, sd);
    cr_assert_eq (access (lock, F_OK), -1);
  }
}

/* A lock file, or a directory of the store, that another user owns or may
 * write is refused, checked on the fd used.  */
Test (lease, foreign_lock_and_dirs_refused)
{
  cleanup_free char *sd = xasprintf ("%s/st", dir);
  cleanup_free char *lock = xasprintf ("%s/" LEASE_LOCK, sd);
  cleanup_free char *reap = xasprintf ("%s/" LEASE_REAPING, sd);
  cleanup_error roce_error_t err = NULL;
  struct lease_store *s = NULL;
  struct netns_id id = ns (7);
  int fd;

  cr_assert_eq (mkdir (sd, 0755), 0);
  fd = open (lock, O_CREAT | O_WRONLY, 0600);
  cr_assert_geq (fd, 0);
  cr_assert_eq (fchmod (fd, 0666), 0);
  close (fd);
  cr_assert_lt (lease_store_open (sd, &s, &err), 0);
  cr_assert_not_null (strstr (err->msg, "the lease store's lock"), "%s", err->msg);
  cr_assert_not_null (strstr (err->msg, "mode 0666"), "%s", err->msg);
  roce_error_release (&err);
  cr_assert_eq (chmod (lock, 0600), 0);
  /* reaping/ made writable by all: no mark is made in it.  */
  cr_assert_eq (mkdir (reap, 0755), 0);
  cr_assert_eq (chmod (reap, 0777), 0);
  cr_assert_eq (lease_store_open (sd, &s, &err), 0, "%s", err ? err->msg : "");
  cr_assert_lt (lease_reap_mark (s, &id, "c1", &fd, &err), 0);
  cr_assert_eq (fd, -1);
  cr_assert_not_null (strstr (err->msg, "lease store directory"), "%s", err->msg);
  lease_store_free (s);
}

/* <state_dir>/format: a store of IPv4 leases stays format 2 (the release
 * before reads it); the first IPv6 lease writes 3 before it is stored; a
 * store of a later format, or a marker that says nothing, is refused in one
 * line by a writer and a reader alike.  */
Test (lease, an_ipv6_lease_raises_the_store_format)
{
  cleanup_policy struct roce_policy *p6 = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *fmt = xasprintf ("%s/%s", dir, LEASE_FORMAT_FILE);
  cleanup_free char *text = NULL;
  struct roce_addr got;
  char a[ADDR_STR_MAX];
  const char *in = "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.10.0/"
                   "24\",\"pool\":\"198.18.10.100-198.18.10.103\","
                   "\"subnet6\":\"2001:2:0:10::/64\",\"pool6\":\"2001:2:0:10::/64\"}}}";

  cr_assert_eq (policy_parse (in, "p.json", &p6, &err), 0, "%s", err ? err->msg : "");
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
    h = lease_holder_add (s, &(struct netns_id){ .ino = 1 }, "v4", 0);
    cr_assert_eq (alloc_assign (s, h, &p6->hcas[0], &p6->hcas[0].net[0], "roce0", NULL, odd_alive,
                                NULL, &got, &err),
                  0);
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  cr_assert_lt (access (fmt, F_OK), 0, "IPv4 alone: still format 2");
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h;
    cr_assert_eq (lease_store_open (dir, &s, &err), 0, "%s", err ? err->msg : "");
    h = lease_holder_add (s, &(struct netns_id){ .ino = 3 }, "v6", 0);
    cr_assert_eq (alloc_assign (s, h, &p6->hcas[0], &p6->hcas[0].net[1], "roce0", NULL, odd_alive,
                                NULL, &got, &err),
                  0, "%s", err ? err->msg : "");
    cr_assert_str_eq (addr_format (&got, a), "2001:2:0:10::1");
    cr_assert_eq (lease_store_commit (s, &err), 0, "%s", err ? err->msg : "");
  }
  cr_assert_eq (read_file_at (AT_FDCWD, fmt, 64, &text, NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq (text, "3\n");
  {
    cleanup_lease_store struct lease_store *s = NULL;
    struct lease_holder *h = NULL;
    cr_assert_eq (lease_store_snapshot (dir, &s, &err), 0, "%s", err ? err->msg : "");
    cr_assert_eq (s->n, 2, "both leases read back");
    cr_assert_eq (lease_find_addr (s, IPP ("2001:2:0:10::1"), &h, NULL, &err), 0);
    cr_assert_not_null (h);
    cr_assert_str_eq (h->owner, "v6");
  }
  /* A later roce-hook's store; a marker that says no format.  */
  tree_write (dir, LEASE_FORMAT_FILE, "4\n");
  {
    struct lease_store *s = NULL;
    cleanup_error roce_error_t e1 = NULL;
    cleanup_error roce_error_t e2 = NULL;
    cleanup_free char *want
        = xasprintf ("lease store `%s`: a store this version reads (format 1-3) vs format 4 "
                     "(%s/format) (fix: install a roce-hook that reads format 4, or drain the node "
                     "and move %s aside)",
                     dir, dir, dir);
    assert_err_contains (lease_store_open (dir, &s, &e1), e1, want);
    cr_assert_null (s);
    assert_err_contains (lease_store_snapshot (dir, &s, &e2), e2, want);
    cr_assert_null (s);
  }
  tree_write (dir, LEASE_FORMAT_FILE, "three");
  {
    struct lease_store *s = NULL;
    cleanup_error roce_error_t e = NULL;
    assert_err_contains (lease_store_open (dir, &s, &e), e, "vs 'three' in ");
  }
}
