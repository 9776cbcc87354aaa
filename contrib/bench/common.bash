# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# What the benchmark scripts share (sourced; not a benchmark of its own):
#
#   source "$(dirname "$0")/common.bash"
#   bench_begin NAME DEFAULT_N "$@"
#
# sets ROOT and ROCE_BUILD when sourced; bench_begin sets N (the script's
# first argument, else BENCH_N, else DEFAULT_N) and re-runs the script as
# root in a private mount namespace with the tests' harness loaded
# (tests/helpers/privns.sh: the fake host's /dev, $T, defer), then the
# helpers below set up what most scripts run on.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}

bench_begin () { # NAME DEFAULT_N [N]
  N=${3:-${BENCH_N:-$2}}
  # shellcheck source=../../tests/helpers/privns.sh
  source "$ROOT/tests/helpers/privns.sh"
  roce_in_private_ns "bench-$1" "$0" "$N"
}

# bench_host MODE: the fake NIC (MTU 9000) carrying mlx5_0, rdma_cm, and
# $POLICY (qos.mode MODE) with 198.18.10.0/24 for it.
bench_host () {
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  fake_rdma_cm
  POLICY=$T/policy.json
  write_policy "$POLICY" "$1" "mlx5_0 $NIC 10"
}

# bench_state_dir: $POLICY's lease store where a node keeps it
# (state_dir /var/lib/roce-hook), not in $T: /tmp may sit in another block
# group of the disk (on this VM an inode made under /tmp costs 0.3 ms,
# under /var/lib 0.03).  $SD is its directory, removed at the end.
bench_state_dir () {
  SD=$(mktemp -d /var/lib/roce-bench.XXXXXX)
  defer "rm -rf $SD"
  sed -i "s|\"state_dir\": \"[^\"]*\"|\"state_dir\": \"$SD/state\"|" "$POLICY"
}

# bench_empty NAME: $T/empty, an empty C program (libc only, as the hook
# is one): the spawn a figure subtracts.
bench_empty () {
  printf 'int main (void) { return 0; }\n' > "$T/empty.c"
  cc -O2 -o "$T/empty" "$T/empty.c" || { echo "bench/$1: needs cc" >&2; exit 1; }
}

# bench_cpu NAME: $T/cpu, which runs CMD (`$T/cpu FILE CMD...`) and
# appends the CPU time it and the children it waited for took (user +
# system, us, wait4's rusage) to FILE: on a machine shared with other work
# the wall clock measures the others as much.
bench_cpu () {
  cat > "$T/cpu.c" <<'CEOF'
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main (int argc, char **argv) {
  struct rusage ru; int st = 0; pid_t p; FILE *f;
  if (argc < 3) return 2;
  p = fork ();
  if (p == 0) { execv (argv[2], argv + 2); _exit (127); }
  if (p < 0 || wait4 (p, &st, 0, &ru) < 0 || (f = fopen (argv[1], "a")) == NULL) return 2;
  fprintf (f, "%ld\n", (long) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L
                          + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  fclose (f);
  return WIFEXITED (st) ? WEXITSTATUS (st) : 1;
}
CEOF
  cc -O2 -o "$T/cpu" "$T/cpu.c" || { echo "bench/$1: needs cc" >&2; exit 1; }
}

# bench_floor NAME: $FLOOR, contrib/bench/floor.c (the kernel work of an
# annotated start and nothing else) linked as roce-hook is; empty, said on
# stderr, where it cannot be built or measured.  What the hook takes over
# it is its own: parsing, checks, confinement, the store, the log, the
# larger program.
bench_floor () {
  local static_libc=$ROCE_BUILD/obj/hook/static_libc.o
  FLOOR=$T/floor
  [ -f "$static_libc" ] || static_libc=
  # shellcheck disable=SC2046
  cc -O2 -static-pie -o "$FLOOR" "$ROOT/contrib/bench/floor.c" $static_libc \
    $(pkg-config --cflags libnl-route-3.0) $(pkg-config --static --libs libnl-route-3.0) 2>"$T/err" ||
    { echo "bench/$1: floor.c: $(cat "$T/err")" >&2; FLOOR=; }
  # floor.c writes a v1 devices cgroup; under cgroup v2 the hook's device
  # work (an eBPF program) has no part in it, and the row would flatter
  # the hook.
  if [ -n "$FLOOR" ] && ! awk -F: '$2 == "devices" {found = 1} END {exit !found}' /proc/self/cgroup; then
    echo "bench/$1: the floor is measured on a cgroup v1 host alone (no devices controller here)" >&2
    FLOOR=
  fi
}

# fresh_container TAG: creates bn-TAG-<random> from the annotated bundle
# $T/ann (made without hooks: the benchmark runs the hook) through RT (the
# runtime and its options) and writes its OCI state; sets id, pid and st
# (the state's file).
fresh_container () {
  id=bn-$1-$(rand_hex 3)
  "${RT[@]}" create --bundle "$T/ann" "$id" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench: runc create: $(cat "$T/err")" >&2; exit 1; }
  pid=$(container_pid "$id")
  st=$T/state-$id
  printf '{"ociVersion":"1.0.2","id":"%s","status":"created","pid":%s,"bundle":"%s","annotations":{"roce.io/hca":"mlx5_0"}}' \
    "$id" "$pid" "$T/ann" > "$st"
}
# one_start TAG POLICY [PREFIX...]: a fresh container's prestart by $HOOK,
# timed (wall to $T/n-TAG-start, CPU through bench_cpu's $T/cpu to
# $T/n-TAG-cpu), with the empty program's spawn beside it (n-TAG-spawn,
# n-TAG-cpuspawn; both through PREFIX), then its poststop.
one_start () {
  local tag=$1 pol=$2 id pid st t0 t1
  shift 2
  fresh_container "$tag"
  t0=$(now_us); "$@" "$T/cpu" "$T/n-$tag-cpuspawn" "$T/empty" < "$st"; t1=$(now_us)
  echo $((t1 - t0)) >> "$T/n-$tag-spawn"
  t0=$(now_us)
  "$@" "$T/cpu" "$T/n-$tag-cpu" "$HOOK" --config "$pol" prestart < "$st" 2>"$T/err" ||
    { echo "bench: prestart ($tag): $(cat "$T/err")" >&2; exit 1; }
  t1=$(now_us); echo $((t1 - t0)) >> "$T/n-$tag-start"
  "${RT[@]}" delete -f "$id" >/dev/null 2>&1
  "$HOOK" --config "$pol" poststop < "$st" 2>"$T/err" ||
    { echo "bench: poststop ($tag): $(cat "$T/err")" >&2; exit 1; }
  rm -f "$st"
}
# one_floor: a fresh container's floor ($FLOOR, bench_floor's), timed as
# one_start times the hook (files $T/n-floor-*), in a state directory of
# its own under $SD; $NIC the fake NIC.
one_floor () {
  local id pid st cg t0 t1
  fresh_container floor
  cg=$(awk -F: '$2 == "devices" {print "/sys/fs/cgroup/devices" $3}' "/proc/$pid/cgroup")
  rm -rf "$SD/floor-sd"; mkdir "$SD/floor-sd"
  t0=$(now_us); "$T/cpu" "$T/n-floor-cpuspawn" "$T/empty" < "$st"; t1=$(now_us)
  echo $((t1 - t0)) >> "$T/n-floor-spawn"
  t0=$(now_us)
  "$T/cpu" "$T/n-floor-cpu" "$FLOOR" "$(cat "/sys/class/net/$NIC/ifindex")" "$SD/floor-sd" "${cg:--}" \
    /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm < "$st" 2>"$T/err" ||
    { echo "bench: floor: $(cat "$T/err")" >&2; exit 1; }
  t1=$(now_us); echo $((t1 - t0)) >> "$T/n-floor-start"
  "${RT[@]}" delete -f "$id" >/dev/null 2>&1
  rm -f "$st"
}
# cpu_own TAG: $T/n-TAG-own, each round's CPU (n-TAG-cpu) less the empty
# program's median (n-TAG-cpuspawn), and $T/n-TAG-wall, the same of the
# wall times (n-TAG-start less n-TAG-spawn's median).
cpu_own () {
  local sp
  sp=$(median_us "$T/n-$1-cpuspawn")
  awk -v s="$sp" '{print $1 - s}' "$T/n-$1-cpu" > "$T/n-$1-own"
  sp=$(median_us "$T/n-$1-spawn")
  awk -v s="$sp" '{print $1 - s}' "$T/n-$1-start" > "$T/n-$1-wall"
}
# bench_veth: a veth pair ($nic, its peer rq<id>, MTU 9000) and $T, both
# removed on exit: for the scripts that run no container (no private
# namespace, no harness).
bench_veth () {
  id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  nic=rb$id
  T=$(mktemp -d /tmp/roce-bench.XXXXXX)
  trap 'ip link del "$nic" 2>/dev/null || true; rm -rf "$T"' EXIT
  ip link add "$nic" mtu 9000 type veth peer name "rq$id" mtu 9000
}

# cni_json: $T/cni.json, Debian's CNI macvlan plugin with host-local IPAM
# doing what the hook does for a container (mode bridge on $NIC, MTU 9000,
# an address of 198.18.10.100-199, one route), its data in $T/cni.
cni_json () {
  mkdir -p "$T/cni"
  cat > "$T/cni.json" <<EOF
{"cniVersion": "1.0.0", "name": "roce-bench", "type": "macvlan", "master": "$NIC",
 "mode": "bridge", "mtu": 9000,
 "ipam": {"type": "host-local", "dataDir": "$T/cni",
          "ranges": [[{"subnet": "198.18.10.0/24", "rangeStart": "198.18.10.100",
                       "rangeEnd": "198.18.10.199", "gateway": "198.18.10.1"}]],
          "routes": [{"dst": "198.19.10.0/24"}]}}
EOF
}

now_us () { local t=${EPOCHREALTIME/./}; echo "$t"; }

# stats FILE: "median / p90" in ms of the microsecond values in FILE.
stats () {
  sort -n "$1" | awk '{v[NR]=$1} END {
    if (NR == 0) { print "n/a"; exit }
    m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)];
    printf "%7.2f / %7.2f", m / 1000, p / 1000 }'
}
# median_us FILE: the median of its microsecond values.
median_us () { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
