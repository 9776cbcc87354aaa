/* SPDX-License-Identifier: Apache-2.0 */
/* The device cgroup: the container may open its RDMA nodes (a v1 devices.allow
 * rule, or the v2 BPF program extended) and nothing it could not open before.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "devices/devcgroup.h"
#include "devices_int.h"
#include "lib/log.h"
#include "lib/utils.h"
#include "sys/mountinfo.h"
#include "sys/rootfs.h"

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define BPF_PROGS_MAX 64
#define BPF_INSNS_MAX 65536

struct v1_rule
{
  struct rdma_node node;
  char bits[3]; /* what this hook added */
};

struct v2_prog
{
  int old_fd;
  int new_fd;
};

struct devcg_state
{
  int v1_fd; /* the container's devices directory, -1 when untouched */
  struct v1_rule *v1;
  size_t n_v1;
  int v2_fd; /* the container's cgroup2 directory, -1 when untouched */
  uint32_t v2_flags;
  struct v2_prog *v2;
  size_t n_v2;
};

/* ---- finding the cgroup directories ---------------------------------------- */

struct mnt
{
  char *root;
  char *point;
};

static void
mnt_clear (struct mnt *m)
{
  free (m->root);
  free (m->point);
  m->root = m->point = NULL;
}

struct find_args
{
  const char *fstype, *option;
  struct mnt *out;
};

static bool
find_cb (const struct mountinfo_entry *e, void *arg)
{
  struct find_args *a = arg;
  if (strcmp (e->fstype, a->fstype) == 0
      && (a->option == NULL || mountinfo_has_option (e->super, a->option)))
    {
      mnt_clear (a->out);
      a->out->root = xstrdup (e->root);
      a->out->point = xstrdup (e->point);
    }
  return true;
}

/* The last mount of fstype (and, for v1, with `option` in its super
 * options): a later mount is the one on top where two cover each other.  */
static bool
find_mount (const char *mountinfo, const char *fstype, const char *option, struct mnt *out)
{
  struct find_args a = { fstype, option, out };
  mountinfo_parse (mountinfo, find_cb, &a);
  return out->point != NULL;
}

static bool
safe_cgroup_path (const char *p)
{
  if (p[0] != '/')
    return false;
  for (const char *s = p; (s = strstr (s, "/..")) != NULL; s += 3)
    if (s[3] == '/' || s[3] == '\0')
      return false;
  return true;
}

static int
join_cgroup_dir (const struct mnt *m, const char *path, const char *what, char **out,
                 roce_error_t *err)
{
  const char *rel = path;
  size_t rl = strlen (m->root);

  if (! safe_cgroup_path (path))
    return roce_error_make (err, EINVAL, "%s cgroup path `%s`: not a plain absolute path", what,
                            path);
  if (strcmp (m->root, "/") != 0)
    {
      if (strncmp (path, m->root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
        return roce_error_make (err, ENOENT,
                                "%s cgroup `%s` lies outside the hierarchy mounted at %s (root %s)",
                                what, path, m->point, m->root);
      rel = path + rl;
    }
  *out = xasprintf ("%s%s%s", m->point, *rel == '/' ? "" : "/", rel);
  return 0;
}

/* The container's paths in /proc/<pid>/cgroup (`copy`, cut in place): the
 * v1 devices hierarchy's and the v2 one's; NULL where it has none.  */
static void
cgroup_paths (char *copy, const char **v1_path, const char **v2_path)
{
  char *save = NULL;

  *v1_path = *v2_path = NULL;
  for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char *c1 = strchr (line, ':');
      char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
      if (c2 == NULL)
        continue;
      *c1 = *c2 = '\0';
      if (strcmp (line, "0") == 0 && c1 + 1 == c2 && *v2_path == NULL)
        *v2_path = c2 + 1;
      else if (mountinfo_has_option (c1 + 1, "devices") && *v1_path == NULL)
        *v1_path = c2 + 1;
    }
}

int
devcg_find_dirs (const char *proc_cgroup, const char *mountinfo, char **v1_dir, char **v2_dir,
                 roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (proc_cgroup);
  const char *v1_path, *v2_path;

  *v1_dir = *v2_dir = NULL;
  cgroup_paths (copy, &v1_path, &v2_path);
  /* The root of the v1 devices hierarchy allows everything and takes no
   * rules (a process there is in no device cgroup at all).  */
  if (v1_path && strcmp (v1_path, "/") != 0)
    {
      struct mnt m = { 0 };
      if (find_mount (mountinfo, "cgroup", "devices", &m))
        {
          int ret = join_cgroup_dir (&m, v1_path, "devices", v1_dir, err);
          mnt_clear (&m);
          if (ret < 0)
            return ret;
        }
    }
  if (v2_path)
    {
      struct mnt m = { 0 };
      if (find_mount (mountinfo, "cgroup2", NULL, &m))
        {
          int ret = join_cgroup_dir (&m, v2_path, "cgroup2", v2_dir, err);
          mnt_clear (&m);
          if (ret < 0)
            {
              free (*v1_dir);
              *v1_dir = NULL;
              return ret;
            }
        }
    }
  return 0;
}

/* ---- what is allowed already ----------------------------------------------- */

static bool
has_bits (const char *acc, const char *need)
{
  for (const char *p = need; *p; p++)
    if (strchr (acc, *p) == NULL)
      return false;
  return true;
}

void
devcg_v1_missing (const char *devices_list, unsigned major, unsigned minor, char out[3])
{
  cleanup_free char *copy = xstrdup (devices_list);
  char exact[8] = "";
  char *save = NULL;

  for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char type, maj[16], min[16], acc[8];
      bool mj, mn;
      if (sscanf (line, "%c %15[^:]:%15s %7s", &type, maj, min, acc) != 4)
        continue;
      if (type != 'a' && type != 'c')
        continue;
      mj = strcmp (maj, "*") == 0;
      mn = strcmp (min, "*") == 0;
      if (! mj && strtoul (maj, NULL, 10) != major)
        continue;
      if (! mn && strtoul (min, NULL, 10) != minor)
        continue;
      /* The kernel wants one entry that covers the whole access.  */
      if (has_bits (acc, "rw"))
        {
          out[0] = '\0';
          return;
        }
      if (type == 'c' && ! mj && ! mn)
        snprintf (exact, sizeof (exact), "%s", acc);
    }
  {
    size_t n = 0;
    if (! strchr (exact, 'r'))
      out[n++] = 'r';
    if (! strchr (exact, 'w'))
      out[n++] = 'w';
    out[n] = '\0';
  }
}

bool
devcg_spec_allows (const struct oci_config *c, unsigned major, unsigned minor)
{
  bool r = false, w = false;
  for (size_t i = 0; i < c->n_device_rules; i++)
    {
      const struct oci_device_rule *d = &c->device_rules[i];
      if (d->type != 'a' && d->type != 'c')
        continue;
      if ((d->major != -1 && d->major != (int64_t) major)
          || (d->minor != -1 && d->minor != (int64_t) minor))
        continue;
      if (strchr (d->access, 'r'))
        r = d->allow;
      if (strchr (d->access, 'w'))
        w = d->allow;
    }
  return r && w;
}

/* ---- cgroup v1 ------------------------------------------------------------- */

static bool
on_fs (int fd, long magic)
{
  struct statfs sfs;
  return fstatfs (fd, &sfs) == 0 && (long) sfs.f_type == magic;
}

static int
write_rule (int dirfd, const char *file, const struct rdma_node *n, const char *bits,
            roce_error_t *err)
{
  cleanup_close int fd = openat (dirfd, file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  char line[64];

  if (fd < 0)
    return roce_error_sys (err, errno, "open %s", file);
  snprintf (line, sizeof (line), "c %u:%u %s", n->major, n->minor, bits);
  if (write (fd, line, strlen (line)) < 0)
    return roce_error_sys (err, errno, "write `%s` to %s", line, file);
  return 0;
}

static int
read_list (int dirfd, char **out, roce_error_t *err)
{
  return read_file_at (dirfd, "devices.list", 1024 * 1024, out, NULL, err);
}

static void
undo_v1 (struct devcg_state *s)
{
  for (size_t i = s->n_v1; i > 0; i--)
    {
      cleanup_error roce_error_t err = NULL;
      const struct v1_rule *r = &s->v1[i - 1];
      if (write_rule (s->v1_fd, "devices.deny", &r->node, r->bits, &err) < 0)
        roce_log (ROCE_LOG_WARN, "undo of the device cgroup rule for %s: %s", r->node.path,
                  err->msg);
    }
  s->n_v1 = 0;
}

static int
allow_v1 (struct devcg_state *s, const char *dir, const struct rdma_node *nodes, size_t n,
          roce_error_t *err)
{
  cleanup_free char *list = NULL;

  s->v1_fd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (s->v1_fd < 0)
    return roce_error_sys (err, errno, "open the container's device cgroup `%s`", dir);
  if (! on_fs (s->v1_fd, CGROUP_SUPER_MAGIC))
    return roce_error_make (err, ENOTDIR, "`%s` is not a cgroup v1 directory", dir);
  s->v1 = xmalloc0 ((n + 1) * sizeof (*s->v1));
  if (read_list (s->v1_fd, &list, err) < 0)
    return roce_error_wrap (err, "device cgroup `%s`", dir);
  for (size_t i = 0; i < n; i++)
    {
      char bits[3];
      devcg_v1_missing (list, nodes[i].major, nodes[i].minor, bits);
      if (! bits[0])
        continue;
      if (write_rule (s->v1_fd, "devices.allow", &nodes[i], bits, err) < 0)
        {
          undo_v1 (s);
          return roce_error_wrap (err, "device cgroup `%s`", dir);
        }
      s->v1[s->n_v1].node = nodes[i];
      memcpy (s->v1[s->n_v1].bits, bits, sizeof (bits));
      s->n_v1++;
    }
  /* The kernel is the judge: every node must now be open-able.  */
  free (list);
  list = NULL;
  if (read_list (s->v1_fd, &list, err) < 0)
    {
      undo_v1 (s);
      return roce_error_wrap (err, "device cgroup `%s`", dir);
    }
  for (size_t i = 0; i < n; i++)
    {
      char bits[3];
      devcg_v1_missing (list, nodes[i].major, nodes[i].minor, bits);
      if (bits[0])
        {
          undo_v1 (s);
          return roce_error_make (err, EPERM, "device cgroup `%s` still lacks `%s` for %s", dir,
                                  bits, nodes[i].path);
        }
    }
  return 0;
}

/* ---- cgroup v2 ------------------------------------------------------------- */

static long
sys_bpf (int cmd, union bpf_attr *a)
{
  return syscall (SYS_bpf, cmd, a, sizeof (*a));
}

static struct bpf_insn
insn (uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
  struct bpf_insn i = { .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
  return i;
}

/* struct bpf_cgroup_dev_ctx { u32 access_type (access << 16 | type); u32 major; u32 minor; } */
static size_t
build_prelude (const struct rdma_node *const *nodes, size_t n, struct bpf_insn *p)
{
  size_t k = 0;
  p[k++] = insn (BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0);
  p[k++] = insn (BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff); /* type */
  p[k++] = insn (BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 0, 0);
  p[k++] = insn (BPF_ALU | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16); /* access */
  p[k++] = insn (BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 4, 0);
  p[k++] = insn (BPF_LDX | BPF_W | BPF_MEM, BPF_REG_5, BPF_REG_1, 8, 0);
  for (size_t i = 0; i < n; i++)
    {
      /* char, this major:minor, and nothing but read/write: allow.  Else
       * on to the next rule, and at last to the runtime's own program.  */
      p[k++] = insn (BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 7, BPF_DEVCG_DEV_CHAR);
      p[k++] = insn (BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 6, (int32_t) nodes[i]->major);
      p[k++] = insn (BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 5, (int32_t) nodes[i]->minor);
      p[k++] = insn (BPF_ALU | BPF_MOV | BPF_X, BPF_REG_0, BPF_REG_3, 0, 0);
      p[k++] = insn (BPF_ALU | BPF_AND | BPF_K, BPF_REG_0, 0, 0,
                     (int32_t) ~(BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE));
      p[k++] = insn (BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 2, 0);
      p[k++] = insn (BPF_ALU | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
      p[k++] = insn (BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    }
  return k;
}

#define PRELUDE_LEN(n) (6 + 8 * (n))

/* The instructions of an attached program, as the kernel holds them.  Only
 * self-contained programs (no helper calls, maps or subprograms, like the
 * ones runc, crun and systemd generate) can be re-loaded from them.  */
static int
prog_insns (int fd, struct bpf_insn **out, uint32_t *count, roce_error_t *err)
{
  struct bpf_prog_info info = { 0 };
  union bpf_attr a = { 0 };
  cleanup_free struct bpf_insn *insns = NULL;
  uint32_t len;

  a.info.bpf_fd = (uint32_t) fd;
  a.info.info_len = sizeof (info);
  a.info.info = (uint64_t) (uintptr_t) &info;
  if (sys_bpf (BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
    return roce_error_sys (err, errno, "BPF_OBJ_GET_INFO_BY_FD");
  if (info.type != BPF_PROG_TYPE_CGROUP_DEVICE)
    return roce_error_make (err, EINVAL, "program %u is not a device program", info.id);
  len = info.xlated_prog_len;
  if (len == 0 || len % sizeof (struct bpf_insn) != 0
      || len / sizeof (struct bpf_insn) > BPF_INSNS_MAX)
    return roce_error_make (err, EPERM,
                            "the kernel does not show the instructions of device program %u "
                            "(kernel.kptr_restrict, or no CAP_SYS_ADMIN)",
                            info.id);
  insns = xmalloc0 (len);
  memset (&info, 0, sizeof (info));
  info.xlated_prog_len = len;
  info.xlated_prog_insns = (uint64_t) (uintptr_t) insns;
  memset (&a, 0, sizeof (a));
  a.info.bpf_fd = (uint32_t) fd;
  a.info.info_len = sizeof (info);
  a.info.info = (uint64_t) (uintptr_t) &info;
  if (sys_bpf (BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
    return roce_error_sys (err, errno, "BPF_OBJ_GET_INFO_BY_FD");
  if (info.xlated_prog_len != len)
    return roce_error_make (err, EAGAIN, "device program %u changed while read", info.id);
  for (uint32_t i = 0; i < len / sizeof (struct bpf_insn); i++)
    {
      uint8_t c = insns[i].code;
      if ((BPF_CLASS (c) == BPF_JMP && BPF_OP (c) == BPF_CALL)
          || (c == (BPF_LD | BPF_IMM | BPF_DW) && insns[i].src_reg != 0))
        return roce_error_make (err, ENOTSUP,
                                "device program %u calls helpers or uses maps: cannot extend it",
                                info.id);
    }
  *count = len / sizeof (struct bpf_insn);
  *out = steal_pointer (&insns);
  return 0;
}

static int
load_prog (const struct bpf_insn *insns, size_t n, roce_error_t *err)
{
  static const char license[] = "Apache";
  union bpf_attr a = { 0 };
  cleanup_free char *log = NULL;
  int fd;

  a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  a.insns = (uint64_t) (uintptr_t) insns;
  a.insn_cnt = (uint32_t) n;
  a.license = (uint64_t) (uintptr_t) license;
  memcpy (a.prog_name, "roce_devices", sizeof ("roce_devices"));
  fd = (int) sys_bpf (BPF_PROG_LOAD, &a);
  if (fd >= 0)
    return fd;
  /* Again, with the verifier's log for the message.  */
  log = xmalloc0 (65536);
  a.log_level = 1;
  a.log_buf = (uint64_t) (uintptr_t) log;
  a.log_size = 65536;
  fd = (int) sys_bpf (BPF_PROG_LOAD, &a);
  if (fd >= 0)
    return fd;
  {
    int e = errno;
    size_t l = strlen (log);
    while (l > 0 && log[l - 1] == '\n')
      log[--l] = '\0';
    const char *last = strrchr (log, '\n');
    return roce_error_make (err, e, "load the extended device program: %s%s%s", strerror (e),
                            *log ? ": " : "", last ? last + 1 : log);
  }
}

/* Puts `in` where `out` is attached, atomically where the kernel can.  */
static int
swap_prog (int cgfd, uint32_t flags, int out, int in, roce_error_t *err)
{
  union bpf_attr a = { 0 };

  a.target_fd = (uint32_t) cgfd;
  a.attach_bpf_fd = (uint32_t) in;
  a.attach_type = BPF_CGROUP_DEVICE;
  if (flags & BPF_F_ALLOW_MULTI)
    {
      a.attach_flags = BPF_F_ALLOW_MULTI | BPF_F_REPLACE;
      a.replace_bpf_fd = (uint32_t) out;
      if (sys_bpf (BPF_PROG_ATTACH, &a) == 0)
        return 0;
      if (errno != EINVAL)
        return roce_error_sys (err, errno, "BPF_PROG_ATTACH (replace)");
      /* No BPF_F_REPLACE (before 5.6): attach, then detach the old one; in
       * between both run, AND-ed: never more access than before.  */
      a.attach_flags = BPF_F_ALLOW_MULTI;
      a.replace_bpf_fd = 0;
      if (sys_bpf (BPF_PROG_ATTACH, &a) < 0)
        return roce_error_sys (err, errno, "BPF_PROG_ATTACH");
      memset (&a, 0, sizeof (a));
      a.target_fd = (uint32_t) cgfd;
      a.attach_bpf_fd = (uint32_t) out;
      a.attach_type = BPF_CGROUP_DEVICE;
      if (sys_bpf (BPF_PROG_DETACH, &a) < 0)
        return roce_error_sys (err, errno, "BPF_PROG_DETACH");
      return 0;
    }
  /* A single program (flags 0 or BPF_F_ALLOW_OVERRIDE): attaching replaces it.  */
  a.attach_flags = flags;
  if (sys_bpf (BPF_PROG_ATTACH, &a) < 0)
    return roce_error_sys (err, errno, "BPF_PROG_ATTACH");
  return 0;
}

static void
undo_v2 (struct devcg_state *s)
{
  for (size_t i = s->n_v2; i > 0; i--)
    {
      struct v2_prog *p = &s->v2[i - 1];
      cleanup_error roce_error_t err = NULL;
      if (p->new_fd >= 0 && swap_prog (s->v2_fd, s->v2_flags, p->new_fd, p->old_fd, &err) < 0)
        roce_log (ROCE_LOG_WARN, "undo of the device program: %s", err->msg);
    }
}

static int
query_progs (int cgfd, uint32_t *ids, uint32_t *cnt, uint32_t *flags, roce_error_t *err)
{
  union bpf_attr a = { 0 };
  a.query.target_fd = (uint32_t) cgfd;
  a.query.attach_type = BPF_CGROUP_DEVICE;
  a.query.prog_ids = (uint64_t) (uintptr_t) ids;
  a.query.prog_cnt = BPF_PROGS_MAX;
  if (sys_bpf (BPF_PROG_QUERY, &a) < 0)
    return roce_error_sys (err, errno, "BPF_PROG_QUERY");
  *cnt = a.query.prog_cnt;
  *flags = a.query.attach_flags;
  return 0;
}

static int
allow_v2 (struct devcg_state *s, const char *dir, const struct oci_config *c,
          const struct rdma_node *nodes, size_t n, roce_error_t *err)
{
  uint32_t ids[BPF_PROGS_MAX], cnt = 0;
  cleanup_free const struct rdma_node **todo = xmalloc0 ((n + 1) * sizeof (*todo));
  size_t n_todo = 0;

  for (size_t i = 0; i < n; i++)
    if (! devcg_spec_allows (c, nodes[i].major, nodes[i].minor))
      todo[n_todo++] = &nodes[i];
  if (n_todo == 0)
    return 0;

  s->v2_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->v2_fd < 0)
    return roce_error_sys (err, errno, "open the container's cgroup `%s`", dir);
  if (! on_fs (s->v2_fd, CGROUP2_SUPER_MAGIC))
    return roce_error_make (err, ENOTDIR, "`%s` is not a cgroup v2 directory", dir);
  if (query_progs (s->v2_fd, ids, &cnt, &s->v2_flags, err) < 0)
    return roce_error_wrap (err, "device programs of `%s`", dir);
  if (cnt == 0)
    return 0; /* no device program: nothing restricts it here */
  s->v2 = xmalloc0 (cnt * sizeof (*s->v2));

  for (uint32_t i = 0; i < cnt; i++)
    {
      union bpf_attr a = { 0 };
      cleanup_free struct bpf_insn *old = NULL;
      cleanup_free struct bpf_insn *prog = NULL;
      struct v2_prog *p = &s->v2[s->n_v2];
      uint32_t n_old = 0;
      size_t k;

      a.prog_id = ids[i];
      p->new_fd = -1;
      p->old_fd = (int) sys_bpf (BPF_PROG_GET_FD_BY_ID, &a);
      if (p->old_fd < 0)
        {
          roce_error_sys (err, errno, "device program %u of `%s`", ids[i], dir);
          goto fail;
        }
      s->n_v2++;
      if (prog_insns (p->old_fd, &old, &n_old, err) < 0)
        {
          roce_error_wrap (err, "`%s`", dir);
          goto fail;
        }
      prog = xmalloc0 ((PRELUDE_LEN (n_todo) + n_old) * sizeof (*prog));
      k = build_prelude (todo, n_todo, prog);
      memcpy (prog + k, old, n_old * sizeof (*old));
      p->new_fd = load_prog (prog, k + n_old, err);
      if (p->new_fd < 0)
        goto fail;
      if (swap_prog (s->v2_fd, s->v2_flags, p->old_fd, p->new_fd, err) < 0)
        {
          close (p->new_fd);
          p->new_fd = -1;
          roce_error_wrap (err, "device program of `%s`", dir);
          goto fail;
        }
    }
  return 0;

fail:
  undo_v2 (s);
  return -1;
}

/* ---- the whole --------------------------------------------------------------- */

void
devcg_state_free (struct devcg_state *s)
{
  if (s == NULL)
    return;
  cleanup_closep (&s->v1_fd);
  cleanup_closep (&s->v2_fd);
  for (size_t i = 0; i < s->n_v2; i++)
    {
      cleanup_closep (&s->v2[i].old_fd);
      cleanup_closep (&s->v2[i].new_fd);
    }
  free (s->v1);
  free (s->v2);
  free (s);
}

void
devcg_undo (struct devcg_state *s)
{
  if (s == NULL)
    return;
  undo_v2 (s);
  if (s->v1_fd >= 0)
    undo_v1 (s);
  devcg_state_free (s);
}

char *
devcg_describe (const struct devcg_state *s)
{
  char *d = xstrdup ("");
  for (size_t i = 0; s && i < s->n_v1; i++)
    str_list_add (&d, ", ", "devices.allow c %u:%u %s", s->v1[i].node.major, s->v1[i].node.minor,
                  s->v1[i].bits);
  if (s && s->n_v2)
    str_list_add (&d, ", ", "%zu device program(s) extended", s->n_v2);
  if (! *d)
    {
      free (d);
      d = xstrdup ("nothing to add");
    }
  return d;
}

/* Whether pid is listed in <dir>/cgroup.procs.  A cgroup of more than
 * about 9,000 processes (a runtime's own, where a container was put without
 * a cgroup of its own) is not read through: false, and the caller falls
 * back to the mount table.  */
#define CGROUP_PROCS_READ_MAX (64 * 1024)
static bool
cgroup_has_pid (const char *dir, pid_t pid)
{
  cleanup_free char *path = xasprintf ("%s/cgroup.procs", dir);
  cleanup_free char *procs = NULL;
  cleanup_error roce_error_t err = NULL;
  char want[24];
  size_t wl;

  if (read_file_at (AT_FDCWD, path, CGROUP_PROCS_READ_MAX, &procs, NULL, &err) < 0)
    return false;
  wl = (size_t) snprintf (want, sizeof (want), "%d", (int) pid);
  for (const char *l = procs; *l;)
    {
      const char *nl = strchr (l, '\n');
      size_t len = nl ? (size_t) (nl - l) : strlen (l);
      if (len == wl && memcmp (l, want, wl) == 0)
        return true;
      l += len + (nl != NULL);
    }
  return false;
}

/* The container's cgroup directory under `base` (a mount of `magic` where
 * every distribution puts it), taken only when the kernel confirms it: the
 * right filesystem there and pid in that cgroup.  */
static char *
try_base (const char *base, long magic, const char *path, pid_t pid)
{
  struct mnt m = { .root = (char *) "/", .point = (char *) base };
  cleanup_error roce_error_t err = NULL;
  char *dir = NULL;
  struct statfs sfs;

  if (statfs (base, &sfs) < 0 || sfs.f_type != magic
      || join_cgroup_dir (&m, path, "", &dir, &err) < 0)
    return NULL;
  if (! cgroup_has_pid (dir, pid))
    {
      free (dir);
      return NULL;
    }
  return dir;
}

/* devcg_find_dirs without the host's mounts: /sys/fs/cgroup/devices (v1),
 * /sys/fs/cgroup or /sys/fs/cgroup/unified (v2).  A parse of every mount
 * the host has took 2.3 ms a start with 2,000 of them (a Kubernetes node's
 * volumes); these are a few calls whatever their number.  false: not found
 * so (another layout, a cgroup namespace), *v1 and *v2 untouched.  */
static bool
find_dirs_fast (const char *proc_cgroup, pid_t pid, char **v1_dir, char **v2_dir)
{
  cleanup_free char *copy = xstrdup (proc_cgroup);
  cleanup_free char *v1 = NULL, *v2 = NULL;
  const char *v1_path, *v2_path;

  cgroup_paths (copy, &v1_path, &v2_path);
  if (v1_path && strcmp (v1_path, "/") != 0
      && (v1 = try_base ("/sys/fs/cgroup/devices", CGROUP_SUPER_MAGIC, v1_path, pid)) == NULL)
    return false;
  if (v2_path && (v2 = try_base ("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC, v2_path, pid)) == NULL
      && (v2 = try_base ("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC, v2_path, pid)) == NULL)
    return false;
  *v1_dir = steal_pointer (&v1);
  *v2_dir = steal_pointer (&v2);
  return true;
}

int
devcg_allow (pid_t pid, int pidfd, const struct oci_config *c, const char *host_mounts,
             const struct rdma_node *nodes, size_t n, struct devcg_state **out, roce_error_t *err)
{
  cleanup_free char *path = xasprintf ("/proc/%d/cgroup", (int) pid);
  cleanup_free char *cg = NULL;
  cleanup_free char *mountinfo = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  struct devcg_state *s;

  *out = NULL;
  if (read_file_at (AT_FDCWD, path, 1024 * 1024, &cg, NULL, err) < 0)
    return roce_error_wrap (err, "the container's cgroup");
  /* No pidfd (a kernel before 5.3, valgrind): kill(pid, 0) is the check.  */
  if (pidfd >= 0 ? syscall (SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 : kill (pid, 0) < 0)
    return roce_error_sys (err, errno, "container process %d went away", (int) pid);
  if (! find_dirs_fast (cg, pid, &v1, &v2))
    {
      if (host_mounts == NULL
          && read_file_at (AT_FDCWD, "/proc/self/mountinfo", MOUNTINFO_MAX, &mountinfo, NULL, err)
                 < 0)
        return -1;
      if (devcg_find_dirs (cg, host_mounts ? host_mounts : mountinfo, &v1, &v2, err) < 0)
        return -1;
    }

  s = xmalloc0 (sizeof (*s));
  s->v1_fd = s->v2_fd = -1;
  if (v1 && allow_v1 (s, v1, nodes, n, err) < 0)
    {
      devcg_state_free (s);
      return -1;
    }
  if (v2 && allow_v2 (s, v2, c, nodes, n, err) < 0)
    {
      devcg_undo (s);
      return -1;
    }
  *out = s;
  return 0;
}
