#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blocks.h"
#include "check.h"
#include "cdi.h"
#include "confine.h"
#include "engine.h"
#include "etcd.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "qos_apply.h"
#include "utils.h"

#ifndef ROCE_VERSION
#define ROCE_VERSION "0.0.0"
#endif

static void
usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] prestart|createRuntime|poststop  (OCI state on stdin)\n"
         "       roce-hook [--config F] leases [--json]   the IP leases held\n"
         "       roce-hook [--config F] gc                release leases whose netns is gone\n"
         "       roce-hook [--config F] blocks [--json] [--all] | blocks release --node N\n"
         "       roce-hook [--config F] check [--json] [--hca H]\n"
         "       roce-hook [--config F] cdi [--output FILE]   a CDI spec (kind roce.io/hca)\n"
         "       roce-hook [--config F] metrics [--hca H] [--output FILE]   Prometheus text\n"
         "       roce-hook [--config F] qos apply [--dry-run] [--hca H] [--only LIST]\n"
         "       roce-hook version\n"
         "config: --config F, else $ROCE_HOOK_CONFIG, else " ROCE_DEFAULT_CONFIG "\n",
         out);
}

/* ---- roce-hook and roce-hook-engine ---------------------------------------------
 *
 * roce-hook is linked statically (-static-pie, ROCE_HOOK_STATIC): no ld.so
 * work at exec, which was a third of a start's own time.  A static program
 * cannot load a library soundly (dlopen brings a second libc), so what needs
 * one goes to roce-hook-engine beside it, the same program linked
 * dynamically: every operator command (check loads libibverbs; gc, blocks
 * and check speak to etcd through libcurl), and the rare start of a node
 * with `cluster` that needs a new address block from etcd, handed over
 * before anything was made (engine.h).  Sanitizer and valgrind builds link
 * roce-hook dynamically: it then does everything itself.  */

#define ENGINE_NAME "roce-hook-engine"

#ifdef ROCE_HOOK_STATIC
/* The engine's path: beside this program's own file.  */
static int
engine_path (char *buf, size_t size, roce_error_t *err)
{
  ssize_t n = readlink ("/proc/self/exe", buf, size - 1);
  char *slash;

  if (n <= 0 || (size_t) n >= size - 1)
    return roce_error_sys (err, n < 0 ? errno : ENAMETOOLONG, "/proc/self/exe");
  buf[n] = '\0';
  slash = strrchr (buf, '/');
  if (slash == NULL || (size_t) (slash + 1 - buf) + sizeof (ENGINE_NAME) > size)
    return roce_error_make (err, ENAMETOOLONG, "/proc/self/exe: `%s`", buf);
  memcpy (slash + 1, ENGINE_NAME, sizeof (ENGINE_NAME));
  return 0;
}

/* Runs the engine in this process with the same argv; returns only on
 * failure, with *err set.  */
static int
engine_exec (char **argv, roce_error_t *err)
{
  char path[4096];

  if (engine_path (path, sizeof (path), err) < 0)
    return -1;
  execv (path, argv);
  {
    cleanup_free char *found = xasprintf ("%s: %s", path, strerror (errno));
    return roce_error_refuse (err, ENGINE_NAME " (roce-hook linked dynamically: it loads libibverbs "
                              "and libcurl)", "beside roce-hook, executable", found,
                              "install both programs (make install, or the DaemonSet's image)");
  }
}

/* The start goes on in the engine, from the state as the runtime sent it
 * (a memfd as its stdin).  */
static int
engine_handover (const struct roce_ctx *ctx, char **argv, roce_error_t *err)
{
  cleanup_close int fd = memfd_create ("roce-hook-state", MFD_CLOEXEC);

  if (fd < 0)
    return roce_error_sys (err, errno, "memfd_create");
  if (write_all_fd (fd, ctx->state_raw, ctx->state_raw_len, err) < 0)
    return -1;
  if (lseek (fd, 0, SEEK_SET) < 0 || dup2 (fd, STDIN_FILENO) < 0)
    return roce_error_sys (err, errno, "the state for " ENGINE_NAME);
  roce_log (ROCE_LOG_INFO, "a new address block needs etcd: " ENGINE_NAME " goes on with the start");
  return engine_exec (argv, err);
}
#endif

static int
run_stage (enum roce_stage stage, const char *config_path, char **argv)
{
  struct roce_ctx ctx = { .config_path = config_path, .state_fd = STDIN_FILENO, .stage = stage,
                          ROCE_CTX_INIT };
  cleanup_error roce_error_t err = NULL;
  int ret = roce_stage_run (&ctx, &err);

#ifdef ROCE_HOOK_STATIC
  if (ret < 0 && roce_stage_needs_engine (&ctx, &err))
    {
      /* Back only when the engine could not run: what needed it, then why. */
      roce_error_t herr = NULL;
      size_t len = strlen (err->msg), tail = strlen (": " ETCD_NEEDS_ENGINE_MSG);
      engine_handover (&ctx, argv, &herr);
      if (len > tail && strcmp (err->msg + len - tail, ": " ETCD_NEEDS_ENGINE_MSG) == 0)
        roce_error_wrap (&herr, "%.*s", (int) (len - tail), err->msg);
      roce_error_release (&err);
      err = herr;
    }
#else
  (void) argv;
#endif

  if (ret < 0 && stage == ROCE_STAGE_POSTSTOP)
    {
      /* Poststop never fails: the container is gone whatever we say, the
       * runtime would only print our line again after the start's refusal,
       * and gc recovers what could not be released.  Logged, not printed. */
      roce_log (ROCE_LOG_ERR, "poststop: %s (roce-hook gc releases what is left)", err->msg);
      ret = 0;
    }
  if (ret < 0)
    {
      /* Under crun the line goes to the runtime's stderr through pidfd_getfd,
       * which needs ptrace access to the (possibly non-dumpable) runtime.  */
      confine_phase (PHASE_INSPECT, NULL);
      roce_log (ROCE_LOG_ERR, "%s refused: %s", roce_stage_name (stage), err->msg);
      roce_log_refusal (stderr, "roce-hook", roce_ctx_id (&ctx), err->msg);
    }
  roce_ctx_clear (&ctx);
  return ret < 0 ? 1 : 0;
}

/* The operator commands: argv here, the work in the library, the error
 * printed once.  Exit 0 done, 2 cannot run (check: 1 when a finding blocks).  */

static int
cmd_fail (const char *cmd, roce_error_t err)
{
  roce_log (ROCE_LOG_ERR, "%s: %s", cmd, err->msg);
  roce_log_refusal (stderr, "roce-hook", cmd, err->msg);
  return 2;
}

/* An operator command's document: to stdout, or replacing FILE atomically.  */
static int
emit (const char *output, const char *text, roce_error_t *err)
{
  if (output)
    return file_replace (output, text, strlen (text), err);
  if (fputs (text, stdout) == EOF || fflush (stdout) != 0)
    return roce_error_sys (err, errno, "write to stdout");
  return 0;
}

static void
check_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] check [--json] [--hca H]\n"
         "  a host readiness report for every HCA of the policy (or H only):\n"
         "  QoS (PFC, DSCP trust, ECN, MTU), PFC stall prevention, GPUDirect RDMA,\n"
         "  the rdma_cm default ToS and RoCE mode, RoCE v2 GIDs,\n"
         "  RDMA netns mode.  Exit 0: nothing blocks; 1: a finding refuses containers\n"
         "  under qos.mode=enforce; 2: the check cannot run.\n",
         out);
}

static int
cmd_check (const char *config_path, int argc, char **argv)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'j' },
    { "hca", required_argument, NULL, 'H' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  struct check_report r = { 0 };
  const char *only = NULL;
  bool json = false;
  int c, code;

  optind = 0; /* a fresh getopt over the subcommand's own argv */
  while ((c = getopt_long (argc, argv, "+jH:h", opts, NULL)) != -1)
    switch (c)
      {
      case 'j':
        json = true;
        break;
      case 'H':
        only = optarg;
        break;
      case 'h':
        check_usage (stdout);
        return 0;
      default:
        check_usage (stderr);
        return 2;
      }
  if (optind < argc)
    {
      cleanup_free char *shown = str_escape (argv[optind]);
      fprintf (stderr, "roce-hook check: unexpected argument '%s'\n", shown);
      check_usage (stderr);
      return 2;
    }
  if (policy_load (config_path, &p, &err) < 0 || check_report_build (p, only, &r, &err) < 0)
    {
      fprintf (stderr, "roce-hook check: %s\n", err->msg);
      return 2;
    }
  code = check_report_status (&r);
  if (json)
    {
      if (check_render_json (stdout, &r, code, &err) < 0)
        {
          fprintf (stderr, "roce-hook check: %s\n", err->msg);
          code = 2;
        }
    }
  else
    check_render_text (stdout, &r);
  fflush (stdout);
  check_report_clear (&r);
  return code;
}

static int
cmd_cdi (const char *config_path, int argc, char **argv)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  const char *output = NULL;

  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--output") == 0 && i + 1 < argc)
      output = argv[++i];
    else
      {
        fprintf (stderr, "usage: roce-hook [--config F] cdi [--output FILE]\n");
        return 2;
      }
  if (policy_load (config_path, &p, &err) < 0 || (text = cdi_spec_text (p, &err)) == NULL
      || emit (output, text, &err) < 0)
    return cmd_fail ("cdi", err);
  return 0;
}

/* `leases [--json]` and `gc`.  */
static int
cmd_leases_gc (const char *cmd, int argc, char **argv, const char *config_path)
{
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  bool json = false;
  int ret;

  for (int i = 0; i < argc; i++)
    if (strcmp (cmd, "leases") == 0 && strcmp (argv[i], "--json") == 0)
      json = true;
    else
      {
        cleanup_free char *shown = str_escape (argv[i]);
        fprintf (stderr, "roce-hook: %s: unknown argument `%s`\n", cmd, shown);
        return 2;
      }
  if (policy_load (config_path, &p, &err) < 0)
    ret = -1;
  else if (strcmp (cmd, "leases") == 0)
    ret = net_cmd_leases (p, json, stdout, &err);
  /* gc is confined here, once the policy says whether it talks to etcd.  */
  else if (confine_caps (CONFINE_GC, &err) < 0 || confine_phase (PHASE_NETWORK, &err) < 0
           || confine_seccomp_net (CONFINE_GC, p->cluster != NULL, &err) < 0)
    ret = -1;
  else if ((ret = net_cmd_gc (p, stdout, &err)) == 0)
    ret = blocks_gc (p, stdout, &err);
  return ret < 0 ? cmd_fail (cmd, err) : 0;
}

/* `metrics [--hca H] [--output FILE]`: exit 0 written, 2 cannot run.  */
static int
cmd_metrics (int argc, char **argv, const char *config_path)
{
  static const struct option opts[] = {
    { "hca", required_argument, NULL, 'H' },
    { "output", required_argument, NULL, 'o' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  struct metrics m = { 0 };
  const char *hca = NULL, *output = NULL;
  int c, ret;

  optind = 0; /* a fresh getopt over the subcommand's own argv */
  while ((c = getopt_long (argc, argv, "+H:o:", opts, NULL)) != -1)
    switch (c)
      {
      case 'H':
        hca = optarg;
        break;
      case 'o':
        output = optarg;
        break;
      default:
        fputs ("usage: roce-hook [--config F] metrics [--hca H] [--output FILE]\n", stderr);
        return 2;
      }
  if (optind < argc)
    {
      cleanup_free char *shown = str_escape (argv[optind]);
      fprintf (stderr, "roce-hook: metrics: unknown argument `%s`\n", shown);
      return 2;
    }
  if (policy_load (config_path, &p, &err) < 0 || metrics_collect (p, hca, &m, &err) < 0)
    return cmd_fail ("metrics", err);
  text = metrics_render (&m);
  metrics_clear (&m);
  ret = emit (output, text, &err);
  return ret < 0 ? cmd_fail ("metrics", err) : 0;
}

static void
qos_usage (FILE *out)
{
  fputs ("usage: roce-hook [--config F] qos apply [--dry-run] [--hca H] [--only LIST]\n"
         "  brings each policy HCA's netdev (or H's) to the policy: PFC on pfc_priority,\n"
         "  DSCP dscp -> pfc_priority (trust dscp), RoCE ECN NP/RP, PFC stall prevention\n"
         "  (qos.pfc_stall_prevention), rdma_cm default ToS and RoCE v2 mode.  LIST: a comma\n"
         "  list of pfc, dscp, ecn, pfc-stall, rdma-cm.  Changes only what differs.\n"
         "  Exit 0: done (or nothing to do); 1: refused or failed, nothing left half-applied;\n"
         "  2: cannot run.\n",
         out);
}

/* `qos apply [--dry-run] [--hca H] [--only LIST]`: plan, print, apply.  */
static int
cmd_qos (const char *config_path, int argc, char **argv)
{
  static const struct option opts[] = {
    { "dry-run", no_argument, NULL, 'n' },
    { "hca", required_argument, NULL, 'H' },
    { "only", required_argument, NULL, 'o' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  cleanup_policy struct roce_policy *p = NULL;
  cleanup_error roce_error_t err = NULL;
  const char *hca = NULL;
  unsigned groups = QA_ALL;
  bool dry_run = false;
  int c;

  if (argc < 2 || strcmp (argv[1], "apply") != 0)
    {
      qos_usage (argc >= 2 && strcmp (argv[1], "--help") == 0 ? stdout : stderr);
      return argc >= 2 && strcmp (argv[1], "--help") == 0 ? 0 : 2;
    }
  argc--, argv++;
  optind = 0;
  while ((c = getopt_long (argc, argv, "+nH:o:h", opts, NULL)) != -1)
    switch (c)
      {
      case 'n':
        dry_run = true;
        break;
      case 'H':
        hca = optarg;
        break;
      case 'o':
        if (qos_apply_parse_only (optarg, &groups, &err) < 0)
          return cmd_fail ("qos apply", err);
        break;
      case 'h':
        qos_usage (stdout);
        return 0;
      default:
        qos_usage (stderr);
        return 2;
      }
  if (optind < argc)
    {
      cleanup_free char *shown = str_escape (argv[optind]);
      fprintf (stderr, "roce-hook: qos apply: unknown argument `%s`\n", shown);
      return 2;
    }
  /* A dry run only reads (a query); the apply has its own profile:
   * CAP_NET_ADMIN alone (RTM_SETDCB, ETHTOOL_STUNABLE).  Neither mounts,
   * enters namespaces, loads BPF or runs anything.  */
  if (confine_caps (dry_run ? CONFINE_QUERY : CONFINE_QOS, &err) < 0
      || confine_phase (dry_run ? PHASE_NONE : PHASE_QOS, &err) < 0
      || confine_seccomp (dry_run ? CONFINE_QUERY : CONFINE_QOS, &err) < 0)
    return cmd_fail ("qos apply", err);
  if (policy_load (config_path, &p, &err) < 0)
    return cmd_fail ("qos apply", err);
  if (p->log_file)
    {
      /* What the host was changed to goes to the policy's log as well.  */
      cleanup_error roce_error_t lerr = NULL;
      if (roce_log_set_file (p->log_file, &lerr) < 0)
        fprintf (stderr, "roce-hook: qos apply: %s\n", lerr->msg);
    }
  if (qos_apply_command (p, hca, groups, dry_run, stdout, &err) < 0)
    {
      roce_log (ROCE_LOG_ERR, "qos apply: %s", err->msg);
      roce_log_refusal (stderr, "roce-hook", "qos apply", err->msg);
      /* An --hca the policy lacks is a usage error; the rest are refusals. */
      return hca && policy_find_hca (p, hca) == NULL ? 2 : 1;
    }
  return 0;
}

/* Every subcommand but the stages: its argv is argv[0] = its name.  */
static int
cmd_metrics_ (const char *config, int argc, char **argv)
{
  return cmd_metrics (argc, argv, config);
}

static int
cmd_blocks_ (const char *config, int argc, char **argv)
{
  return blocks_main (config, argc, argv, stdout, stderr);
}

static int
cmd_leases_ (const char *config, int argc, char **argv)
{
  return cmd_leases_gc ("leases", argc - 1, argv + 1, config);
}

static int
cmd_gc_ (const char *config, int argc, char **argv)
{
  return cmd_leases_gc ("gc", argc - 1, argv + 1, config);
}

static const struct subcommand
{
  const char *name;
  int (*run) (const char *config, int argc, char **argv);
  bool query; /* only reads: confined before it runs (the query profile) */
  bool logs;  /* writes to syslog / log_file */
  bool loads; /* may load a library (libibverbs, etcd's libcurl): roce-hook-engine's */
} subcommands[] = {
  { "cdi", cmd_cdi, true, false, false },
  { "check", cmd_check, true, false, true },
  { "metrics", cmd_metrics_, true, false, false },
  { "leases", cmd_leases_, true, true, false },
  /* gc is confined once its policy says whether it talks to etcd.  */
  { "gc", cmd_gc_, false, true, true },
  { "blocks", cmd_blocks_, false, true, true },
  { "qos", cmd_qos, false, true, false },
};

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "config", required_argument, NULL, 'c' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *config_cli = NULL;
  enum roce_stage stage;
  const char *cmd;
  int c, ret;

#ifdef ROCE_HOOK_STATIC
  etcd_needs_engine = true;
#endif
  /* Stop at the first non-option: the subcommand has options of its own.  */
  while ((c = getopt_long (argc, argv, "+c:h", opts, NULL)) != -1)
    switch (c)
      {
      case 'c':
        config_cli = optarg;
        break;
      case 'h':
        usage (stdout);
        return 0;
      default:
        usage (stderr);
        return 2;
      }
  if (optind >= argc)
    {
      usage (stderr);
      return 2;
    }
  cmd = argv[optind];
  if (strcmp (cmd, "version") == 0 || strcmp (cmd, "--version") == 0)
    {
      printf ("roce-hook %s\n", ROCE_VERSION);
      return 0;
    }
  if (roce_stage_parse (cmd, &stage) == 0)
    {
      roce_log_open ("roce-hook");
      ret = run_stage (stage, policy_default_path (config_cli), argv);
      roce_log_close ();
      return ret;
    }
  for (size_t i = 0; i < ARRAY_SIZE (subcommands); i++)
    {
      const struct subcommand *sc = &subcommands[i];
      if (strcmp (cmd, sc->name) != 0)
        continue;
#ifdef ROCE_HOOK_STATIC
      if (sc->loads)
        {
          cleanup_error roce_error_t err = NULL;
          engine_exec (argv, &err);
          roce_log_refusal (stderr, "roce-hook", sc->name, err->msg);
          return 2;
        }
#endif
      if (sc->query)
        {
          /* The queries only read: a tighter filter and no capability (check
           * may ask the policy's etcd whether it answers: TCP).  */
          cleanup_error roce_error_t err = NULL;
          if (confine_caps (CONFINE_QUERY, &err) < 0 || confine_phase (PHASE_NONE, &err) < 0
              || confine_seccomp_net (CONFINE_QUERY, strcmp (cmd, "check") == 0, &err) < 0)
            {
              fprintf (stderr, "roce-hook: confining the hook: %s\n", err->msg);
              return 2;
            }
        }
      if (sc->logs)
        roce_log_open ("roce-hook");
      ret = sc->run (policy_default_path (config_cli), argc - optind, argv + optind);
      if (sc->logs)
        roce_log_close ();
      return ret;
    }
  {
    cleanup_free char *shown = str_escape (cmd);
    fprintf (stderr, "roce-hook: unknown command `%s`\n", shown);
  }
  usage (stderr);
  return 2;
}
