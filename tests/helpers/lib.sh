# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The integration-test harness: a fake RoCE host and real runc containers.
#
# A test file sources this, defines test_* functions and ends with run_tests.
# tests/run-integration runs each file in a private mount namespace, where
# /dev is a tmpfs that links to the host's nodes and holds the fake
# /dev/infiniband: the host's /dev is never touched.
#
# Every test runs in a subshell with its own $T (temp dir), its own random
# interface names and container ids; whatever it makes is registered with
# `defer` and undone when the test ends, passed or failed.

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${ROCE_BUILD:-$ROOT/build}
HOOK=$BUILD/roce-hook
SHIM=$BUILD/roce-runtime
# make valgrind: the runtimes call wrappers that run the binaries under
# valgrind; a memory error makes the hook fail, and so the test.
if [ -n "${ROCE_VALGRIND:-}" ]; then
  mkdir -p "$BUILD/valgrind"
  for _b in roce-hook roce-runtime; do
    printf '#!/bin/sh\nexec %s --log-file=%s/valgrind/%s.%%p.log %s/%s "$@"\n' \
      "$ROCE_VALGRIND" "$BUILD" "$_b" "$BUILD" "$_b" > "$BUILD/valgrind/$_b"
    chmod +x "$BUILD/valgrind/$_b"
  done
  HOOK=$BUILD/valgrind/roce-hook
  SHIM=$BUILD/valgrind/roce-runtime
fi
# The runtime's timeout for each hook run; valgrind makes a hook some 100
# times slower, and 64 of them at once on 2 cores need more than 30 s.
HOOK_TIMEOUT=${HOOK_TIMEOUT:-$([ -n "${ROCE_VALGRIND:-}" ] && echo 120 || echo 30)}
OCI_RUNTIME=${OCI_RUNTIME:-runc}
RESULTS=${ROCE_RESULTS:-/dev/null}

# roce-hook linked statically (no program interpreter): what loads a library
# is roce-hook-engine's (hook/main.c).
hook_is_static () {
  ! readelf -lW "$BUILD/roce-hook" 2>/dev/null | grep -q "Requesting program interpreter"
}

# ---- assertions -----------------------------------------------------------

fail () { echo "    FAIL: $*" >&2; exit 1; }
skip () { echo "    SKIP: $*" >&2; exit 77; }

assert_eq () { # expected found what
  [ "$1" = "$2" ] || fail "${3:-value}: expected '$1', found '$2'"
}
assert_contains () { # haystack needle what
  case "$1" in *"$2"*) ;; *) fail "${3:-output} lacks '$2'; it is: $1" ;; esac
}
assert_not_contains () {
  case "$1" in *"$2"*) fail "${3:-output} contains '$2'; it is: $1" ;; esac
}
assert_file_contains () { # file needle
  grep -qF -- "$2" "$1" || fail "$1 lacks '$2'; it is: $(cat "$1")"
}
# check's numbered fix lines wrap at 100 columns, each continuation indented
# under its text: join_wrapped (stdin to stdout) makes each one line again,
# so that a suite asserts the whole line.  Only lines that follow a "[N] "
# line are joined; every other line passes as it is.
join_wrapped () {
  awk 'fix && /^ +[^ ]/ { sub(/^ +/, ""); line = line " " $0; next }
       { if (NR > 1) print line; line = $0; fix = ($0 ~ /^\[[0-9]+\] /) }
       END { if (NR) print line }'
}

# ---- cleanup ---------------------------------------------------------------

# Inside a test, deferred commands go to $T/.deferred, so that a helper called
# as NIC=$(fake_nic) (a subshell) still registers its cleanup.
_DEFERRED=()
defer () {
  if [ -n "${T:-}" ] && [ -d "$T" ]; then printf '%s\n' "$*" >> "$T/.deferred"; else _DEFERRED+=("$*"); fi
}
_run_deferred () {
  local i
  if [ -n "${T:-}" ] && [ -f "$T/.deferred" ]; then
    mapfile -t _DEFERRED < "$T/.deferred"
    rm -f "$T/.deferred"
  fi
  for ((i = ${#_DEFERRED[@]} - 1; i >= 0; i--)); do
    eval "${_DEFERRED[$i]}" >/dev/null 2>&1 || true
  done
  _DEFERRED=()
}

# wait_for SECONDS WHAT COMMAND [ARG...]: runs COMMAND until it succeeds,
# for SECONDS at most (fractions allowed); fails the test naming WHAT when it
# never does.  Every wait of a test is for a condition, never for a time.
wait_for () {
  local limit=$1 what=$2 end
  shift 2
  end=$(($(date +%s%N) + $(awk -v s="$limit" 'BEGIN { printf "%d", s * 1000 }') * 1000000))
  until "$@"; do
    [ "$(date +%s%N)" -lt "$end" ] || fail "waited ${limit}s for $what"
    sleep 0.02
  done
}

# assert_log_eventually FILE TEXT [SECONDS]: FILE holds the line TEXT
# (fixed string) within SECONDS (LEASE_SETTLE_S by default): for a line an
# asynchronous actor writes (the poststop's reaper, a daemon, a background
# job), which a plain assert_file_contains would read before it is there.
# A line the command the test just ran wrote itself needs no wait.
assert_log_eventually () {
  wait_for "${3:-$LEASE_SETTLE_S}" "the line '$2' in $1" grep -qF -- "$2" "$1"
}

# timing_holds: whether a test's bound on time means anything here: not
# under memcheck (make valgrind), where our programs run some 30 times
# slower and the paths compared slow down unevenly; that pass looks for
# memory errors, the plain and sanitizer passes keep the bounds.
timing_holds () { [ -z "${ROCE_VALGRIND:-}" ]; }

# port_listens PORT: something listens on loopback TCP PORT.
port_listens () { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# pid_gone PID: the process has exited (a zombie not yet reaped counts).
pid_gone () {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
  [ "${st%% *}" = Z ] || [ -z "$st" ]
}

rand_hex () { # N bytes (3 by default) as hex, from getrandom (bash's SRANDOM)
  local n=${1:-3} out="" w
  while [ "$n" -gt 0 ]; do
    printf -v w '%08x' "$SRANDOM"
    if [ "$n" -ge 4 ]; then out+=$w n=$((n - 4)); else out+=${w:0:$((2 * n))} n=0; fi
  done
  printf '%s' "$out"
}

need_root () { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
need_cmd () { command -v "$1" >/dev/null 2>&1 || skip "needs $1"; }

# ---- the private /dev ------------------------------------------------------

# Called once per file by tests/run-integration inside `unshare -m`.
fakehost_private_dev () {
  # The caller makes (and removes, once the namespace is gone) the mount
  # point of the host's /dev: inside the namespace it is busy.
  local hostdev=${ROCE_HOSTDEV:?the caller makes ROCE_HOSTDEV}
  mount --make-rprivate /
  mount --rbind /dev "$hostdev"
  mount -t tmpfs -o mode=0755,nosuid roce-dev /dev
  local e links=()
  for e in "$hostdev"/* "$hostdev"/.[!.]*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    # Never the host's RDMA nodes: on an RDMA node the fakes would be made
    # and removed in its real /dev/infiniband.
    [ "${e##*/}" = infiniband ] && continue
    links+=("$e")
  done
  # One ln for them all (a process each cost a file seconds on a busy host).
  [ ${#links[@]} -eq 0 ] || ln -s "${links[@]}" /dev/
  # The fakes' own directory: a tmpfs of this namespace, nothing of the host.
  mkdir -m 0755 /dev/infiniband
  mount -t tmpfs -o mode=0755,nosuid,size=1m roce-infiniband /dev/infiniband
  if [ "$OCI_RUNTIME" = crun ]; then
    # crun refuses this host's hybrid cgroups; in this private mount
    # namespace /sys/fs/cgroup becomes a plain cgroup2 mount.
    umount -l /sys/fs/cgroup
    mount -t cgroup2 none /sys/fs/cgroup
  fi
}

# The runtime's global options: crun runs here with cgroups disabled (its
# BPF device program needs a memlock raise this machine refuses).
runtime_opts () {
  RUNTIME_OPTS=(--root "$T/runtime-state")
  [ "$OCI_RUNTIME" = crun ] && RUNTIME_OPTS+=(--cgroup-manager=disabled)
  true
}

# ---- the fake host ---------------------------------------------------------

# fake_nic [mtu] -> prints the NIC's name.  A veth pair: one end (MTU 9000 by
# default, up) stands in for the HCA's netdev, the other is its "switch".
fake_nic () {
  local mtu=${1:-9000} id nic peer
  id=$(rand_hex 3)
  nic=rh$id peer=rp$id
  ip link add "$nic" mtu "$mtu" type veth peer name "$peer" mtu "$mtu" || fail "veth $nic"
  defer ip link del "$nic"
  ip link set "$nic" up && ip link set "$peer" up || fail "link up $nic"
  echo "$nic"
}

# The fake sysfs root of this test (created on first use).
fake_sysfs () {
  FAKE_SYSFS=$T/sys
  mkdir -p "$FAKE_SYSFS/class/infiniband_verbs" "$FAKE_SYSFS/class/infiniband" \
           "$FAKE_SYSFS/class/net" "$FAKE_SYSFS/class/misc"
  [ -f "$FAKE_SYSFS/class/infiniband_verbs/abi_version" ] ||
    echo 6 > "$FAKE_SYSFS/class/infiniband_verbs/abi_version"
}

# fake_hca HCA UVERBS_N NETDEV [--no-netdev-link]
# A ConnectX-6 Dx that real libibverbs lists: sysfs entries plus a char node
# /dev/infiniband/uverbsN (231:192+N) on the private /dev.
fake_hca () {
  local hca=$1 n=$2 netdev=$3 minor=$((192 + $2))
  fake_sysfs
  local v=$FAKE_SYSFS/class/infiniband_verbs/uverbs$n
  local d=$FAKE_SYSFS/class/infiniband/$hca
  # device/: the HCA's PCI function, which lists its uverbs device (in sysfs
  # class/infiniband_verbs/uverbsN is a link to device/infiniband_verbs/uverbsN).
  mkdir -p "$v" "$d/device/net/$netdev" "$d/device/infiniband_verbs/uverbs$n" "$d/ports/1/gids" \
           "$d/ports/1/gid_attrs/types" "$d/ports/1/gid_attrs/ndevs"
  echo "$hca" > "$v/ibdev"
  echo "231:$minor" > "$v/dev"
  echo 1 > "$v/abi_version"
  echo "1: CA" > "$d/node_type"
  printf '0c42:a103:00f2:%04x\n' "$n" > "$d/node_guid"
  echo "pci:v000015B3d0000101Dsv000015B3sd00000043bc02sc00i00" > "$d/device/modalias"
  echo "$netdev" > "$d/ports/1/gid_attrs/ndevs/0"
  echo "IB/RoCE v1" > "$d/ports/1/gid_attrs/types/0"
  echo "fe80:0000:0000:0000:0000:0000:0000:0000" > "$d/ports/1/gids/0"
  if [ ! -e "/dev/infiniband/uverbs$n" ]; then
    mknod -m 0666 "/dev/infiniband/uverbs$n" c 231 "$minor" || fail "mknod uverbs$n"
  fi
  defer rm -f "/dev/infiniband/uverbs$n"
}

# fake_counters HCA PORT hw_counters|counters NAME=VALUE ...
# Counter files of a fake HCA's port, as mlx5 has them under
# class/infiniband/<hca>/ports/<port>/{hw_counters,counters}/ (the fake host
# has none until a test writes them).
fake_counters () {
  local hca=$1 port=$2 sub=$3 kv
  shift 3
  fake_sysfs
  local d=$FAKE_SYSFS/class/infiniband/$hca/ports/$port/$sub
  mkdir -p "$d"
  for kv in "$@"; do echo "${kv#*=}" > "$d/${kv%%=*}"; done
}

# fake_rdma_cm: /dev/infiniband/rdma_cm (10:<minor>) and its sysfs entry.
fake_rdma_cm () {
  fake_sysfs
  mkdir -p "$FAKE_SYSFS/class/misc/rdma_cm"
  echo "10:58" > "$FAKE_SYSFS/class/misc/rdma_cm/dev"
  [ -e /dev/infiniband/rdma_cm ] || mknod -m 0666 /dev/infiniband/rdma_cm c 10 58
  defer rm -f /dev/infiniband/rdma_cm
}

# one_hca_host: the usual fixture: a runtime, a NIC (MTU 9000) carrying the
# HCA mlx5_0, and $POLICY (qos.mode warn) with 198.18.10.0/24 for it.
one_hca_host () {
  need_root
  need_cmd "$OCI_RUNTIME"
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  POLICY=$T/policy.json
  write_policy "$POLICY" warn "mlx5_0 $NIC 10"
}

# ---- policy ----------------------------------------------------------------

# The hook sets RLIMIT_MEMLOCK to the policy's memlock and cannot raise a hard
# limit without CAP_SYS_RESOURCE (a machine may have none, as root in a VM or container often does): the default is
# "unlimited" only where the hard limit already is.
_default_memlock () {
  local h
  h=$(ulimit -Hl)
  if [ "$h" = unlimited ]; then echo '"unlimited"'; else echo $((h * 1024)); fi
}

# write_policy FILE MODE "HCA NETDEV SUBNET_OCTET" ...
# Each HCA gets subnet 198.18.<octet>.0/24 and pool .100-.199; the state,
# sysfs, configfs and log paths point into $T.
write_policy () {
  local file=$1 mode=$2
  shift 2
  fake_sysfs
  {
    printf '{\n  "state_dir": "%s",\n  "sysfs_root": "%s",\n  "log_file": "%s",\n' \
      "$T/state" "$FAKE_SYSFS" "$T/hook.log"
    # configfs (rdma_cm's defaults) is the test's own too: `qos apply` writes there.
    printf '  "configfs_root": "%s",\n' "$T/configfs"
    printf '  "ifname_prefix": "roce",\n  "memlock": %s,\n' "${POLICY_MEMLOCK:-$(_default_memlock)}"
    # roce-runtime execs the runtime under test.
    printf '  "runtime": "%s",\n' "$(command -v "$OCI_RUNTIME")"
    printf '  "qos": { "mode": "%s", "pfc_priority": 3, "dscp": 26, "ecn": "%s", "min_mtu": %s },\n' \
      "$mode" "${POLICY_ECN:-warn-unknown}" "${POLICY_MIN_MTU:-9000}"
    printf '  "hcas": {'
    local sep="" spec hca netdev oct
    for spec in "$@"; do
      read -r hca netdev oct <<<"$spec"
      printf '%s\n    "%s": { "netdev": "%s", "subnet": "198.18.%s.0/24", "pool": "198.18.%s.100-198.18.%s.199" }' \
        "$sep" "$hca" "$netdev" "$oct" "$oct" "$oct"
      sep=","
    done
    printf '\n  }\n}\n'
  } > "$file"
}

# ---- bundles and containers ------------------------------------------------

BUSYBOX_APPLETS="sh cat ls ip ifconfig ping grep sed awk head tail stat test echo sleep wc tr cut
 printf id true false env readlink realpath mount dd hexdump od nc sort uniq seq"

# make_rootfs DIR: a busybox-static rootfs, copied from the one
# tests/run-integration makes for its run (ROCE_ROOTFS_TEMPLATE), else made.
make_rootfs () {
  local r=$1 a
  [ -x /bin/busybox ] || skip "needs busybox-static"
  if [ -n "${ROCE_ROOTFS_TEMPLATE:-}" ] && [ -x "$ROCE_ROOTFS_TEMPLATE/bin/busybox" ]; then
    mkdir -p "$r" && cp -a "$ROCE_ROOTFS_TEMPLATE/." "$r/" && return 0
  fi
  mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/etc" "$r/tmp"
  cp /bin/busybox "$r/bin/busybox"
  for a in $BUSYBOX_APPLETS; do ln -sf busybox "$r/bin/$a"; done
  echo "root:x:0:0:root:/:/bin/sh" > "$r/etc/passwd"
  echo "root:x:0:" > "$r/etc/group"
}

# The control characters, made once (the per-string loop made 62 processes
# a string: most of a test's time went there).
_JSON_CTL=()
for ((_i = 1; _i < 32; _i++)); do printf -v _o '%03o' "$_i"; printf -v "_JSON_CTL[$_i]" "\\$_o"; done
unset _i _o

_json_str () { # JSON-escapes $1 (quotes, backslashes, controls)
  local s=$1 i u
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  if [[ $s == *[[:cntrl:]]* ]]; then
    for ((i = 1; i < 32; i++)); do
      printf -v u '\\u%04x' "$i"
      s=${s//"${_JSON_CTL[$i]}"/$u}
    done
  fi
  printf '"%s"' "$s"
}

_json_list () { # "a" "b" -> ["a","b"]
  local out="" x
  for x in "$@"; do out+="${out:+,}$(_json_str "$x")"; done
  printf '[%s]' "$out"
}

# make_bundle DIR POLICY
# Optional variables: ANNOTATIONS (lines k=v), CMD (shell command run by
# /bin/sh -c), ENV (extra lines K=V), HOOKS (1: register roce-hook, the
# default), NETNS_PATH (join that network namespace), CAPS_EXTRA,
# RLIMITS_JSON (the whole process.rlimits array), HOOK_STAGE (prestart or
# createRuntime), NAMESPACES_JSON (the whole linux.namespaces array).
# leases_settled POLICY: prints `leases --json` once no lease is "releasing"
# (its containers have stopped and the hook's reaper waits for the kernel
# to let their namespace and its interfaces go: a few ms; a namespace the
# kernel keeps with no holder it can name, as a socket made in it, up to
# its patience of 12 s and one last 2 s watch), or as it is after
# LEASE_SETTLE_S seconds.
# rounds N [QUICK]: how many rounds a test of repetition (back-to-back
# runs, a crowd of parallel starts) makes: N in make check-all
# (ROCE_SCOPE=all), QUICK (when given) in make check, whose budget the long
# crowds would fill; then a quarter of it (4 at the least) under memcheck,
# which looks for memory errors that one round shows as well as twenty.
rounds () {
  local n=$1
  [ -z "${2:-}" ] || [ "${ROCE_SCOPE:-}" = all ] || n=$2
  if [ -n "${ROCE_VALGRIND:-}" ]; then echo $((n / 4 > 4 ? n / 4 : (n < 4 ? n : 4))); else echo "$n"; fi
}
LEASE_SETTLE_S=${LEASE_SETTLE_S:-$([ -n "${ROCE_VALGRIND:-}" ] && echo 60 || echo 20)}
leases_settled () {
  local out end=$((SECONDS + LEASE_SETTLE_S))
  # A deadline, not a count of tries: each try is a run of the hook (under
  # valgrind, a second or more).
  while :; do
    out=$("$HOOK" --config "$1" leases --json) || { printf '%s\n' "$out"; return 1; }
    case $out in *'"state": "releasing"'*) ;; *) break ;; esac
    [ "$SECONDS" -lt "$end" ] || break
    sleep 0.02
  done
  printf '%s\n' "$out"
}

make_bundle () {
  local b=$1 policy=$2
  make_rootfs "$b/rootfs"
  local ann="" line k v
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    k=${line%%=*} v=${line#*=}
    ann+="${ann:+,}$(_json_str "$k"):$(_json_str "$v")"
  done <<<"${ANNOTATIONS:-}"
  local env_list=("PATH=/bin" "HOME=/")
  while IFS= read -r line; do
    [ -n "$line" ] && env_list+=("$line")
  done <<<"${ENV:-}"
  local caps=("CAP_CHOWN" "CAP_DAC_OVERRIDE" "CAP_FOWNER" "CAP_KILL" "CAP_NET_BIND_SERVICE"
              "CAP_SETGID" "CAP_SETUID" "CAP_NET_RAW" "CAP_SYS_CHROOT")
  # shellcheck disable=SC2206
  caps+=(${CAPS_EXTRA:-})
  local capj
  capj=$(_json_list "${caps[@]}")
  local netns='{"type":"network"}'
  [ -n "${NETNS_PATH:-}" ] && netns="{\"type\":\"network\",\"path\":$(_json_str "$NETNS_PATH")}"
  local nsj=${NAMESPACES_JSON:-}
  [ -n "$nsj" ] || nsj='[{"type":"pid"},'"$netns"',{"type":"ipc"},{"type":"uts"},{"type":"mount"}]'
  local hooks=""
  if [ "${HOOKS:-1}" = 1 ]; then
    local stage=${HOOK_STAGE:-prestart}
    hooks=",\"hooks\":{\"$stage\":[{\"path\":\"$HOOK\",\"args\":[\"roce-hook\",\"--config\",$(_json_str "$policy"),\"$stage\"],\"timeout\":$HOOK_TIMEOUT}],
      \"poststop\":[{\"path\":\"$HOOK\",\"args\":[\"roce-hook\",\"--config\",$(_json_str "$policy"),\"poststop\"],\"timeout\":$HOOK_TIMEOUT}]}"
  fi
  local rlimits=${RLIMITS_JSON:-'[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}]'}
  cat > "$b/config.json" <<JSON
{
  "ociVersion": "1.0.2",
  "process": {
    "terminal": false,
    "user": {"uid": 0, "gid": 0},
    "args": ["/bin/sh", "-c", $(_json_str "${CMD:-true}")],
    "env": $(_json_list "${env_list[@]}"),
    "cwd": "/",
    "capabilities": {"bounding": $capj, "effective": $capj, "permitted": $capj},
    "rlimits": $rlimits,
    "noNewPrivileges": true
  },
  "root": {"path": "rootfs", "readonly": false},
  "hostname": "roce-test",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid","strictatime","mode=755","size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid","noexec","newinstance","ptmxmode=0666","mode=0620"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid","noexec","nodev","mode=1777","size=65536k"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid","noexec","nodev","ro"]}
  ],
  "annotations": {$ann}$hooks,
  "linux": {
    "resources": {"devices": [{"allow": false, "access": "rwm"}]},
    "namespaces": $nsj,
    "maskedPaths": ["/proc/kcore","/proc/keys","/proc/timer_list","/sys/firmware"],
    "readonlyPaths": ["/proc/bus","/proc/fs","/proc/irq","/proc/sys","/proc/sysrq-trigger"]
  }
}
JSON
}

runtime () { runtime_opts; "$OCI_RUNTIME" "${RUNTIME_OPTS[@]}" "$@"; }

# True when the runtime enforces a device cgroup (runc here; not crun with
# --cgroup-manager=disabled).
has_device_cgroup () { [ "$OCI_RUNTIME" = runc ]; }

# run_container ID BUNDLE: runs to completion; stdout in $T/ID.out, stderr in
# $T/ID.err; returns the runtime's status.
run_container () {
  local id=$1 b=$2 rc=0
  defer runtime delete -f "$id"
  runtime_opts
  timeout 60 "$OCI_RUNTIME" "${RUNTIME_OPTS[@]}" run --bundle "$b" "$id" \
    </dev/null >"$T/$id.out" 2>"$T/$id.err" || rc=$?
  return $rc
}

# start_container ID BUNDLE: runs detached (CMD should be long-lived).
start_container () {
  local id=$1 b=$2 rc=0
  defer runtime delete -f "$id"
  runtime_opts
  timeout 60 "$OCI_RUNTIME" "${RUNTIME_OPTS[@]}" run -d --bundle "$b" "$id" \
    </dev/null >"$T/$id.out" 2>"$T/$id.err" || rc=$?
  return $rc
}

container_pid () { runtime state "$1" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -1; }

new_id () { echo "rt-$(rand_hex 4)"; }

# ---- the runner ------------------------------------------------------------

# The test's directory removed once its deferred steps ran: a process
# the test started and ended (a crowd killed, a reaper finishing its
# release) may still write into it for a moment, and `rm -rf` then finds it
# not empty.  Retried until it is gone, for LEASE_SETTLE_S at most.
_remove_test_dir () {
  local i
  for ((i = 0; i < ${LEASE_SETTLE_S:-10} * 20; i++)); do
    rm -rf "$T" 2>/dev/null
    [ -e "$T" ] || return 0
    sleep 0.05
  done
  rm -rf "$T"
}

run_tests () {
  local file fn pass=0 failed=0 skipped=0 rc log
  file=$(basename "${BASH_SOURCE[1]}" .sh)
  [ "$OCI_RUNTIME" = runc ] || file="$OCI_RUNTIME:$file"
  local t0 ms
  for fn in $(declare -F | awk '{print $3}' | grep '^test_' ); do
    [ -n "${ROCE_TEST_FILTER:-}" ] && [[ "$fn" != *${ROCE_TEST_FILTER}* ]] && continue
    # This pass's share of the file (tests/run-integration: suite_scope).
    [ -n "${ROCE_TEST_ONLY:-}" ] && [[ " $ROCE_TEST_ONLY " != *" $fn "* ]] && continue
    t0=$(date +%s%N)
    # A name of this run's own: two checkouts running the same file at once
    # removed each other's logs (and a failure showed nothing).
    log=$(mktemp "/tmp/roce-it-${file/:/-}-$fn.XXXXXX.log")
    (
      T=$(mktemp -d "/tmp/roce-it.XXXXXX")
      trap '_run_deferred; _remove_test_dir' EXIT
      set -e
      "$fn"
    ) >"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    # Each test's wall time, also to ROCE_TEST_TIMES (tests/README.md).
    echo "$file::$fn $ms" >> "${ROCE_TEST_TIMES:-/dev/null}"
    printf -v ms '%d.%ds' $((ms / 1000)) $((ms % 1000 / 100))
    case $rc in
      0) pass=$((pass + 1)); echo "ok      $file::$fn $ms" ;;
      77) skipped=$((skipped + 1)); echo "skip    $file::$fn ($(grep -m1 'SKIP:' "$log" | sed 's/.*SKIP: //'))" ;;
      *) failed=$((failed + 1)); echo "FAIL    $file::$fn $ms"; sed 's/^/    | /' "$log" | tail -40 ;;
    esac
    rm -f "$log"
  done
  echo "$pass $failed $skipped" >> "$RESULTS"
}
