#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start and stop, side by side in one run, on the fake host of the tests (a
# veth end as the NIC, one HCA, qos.mode off): the start and stop figures.
#
#   hook, annotated prestart / its poststop / unannotated prestart: the hook
#     run directly (as a runtime runs it) against a live container's
#     namespaces (`runc create`, no hooks), each a fresh container; the
#     spawn is subtracted: an empty C program timed the same way, in the
#     same loop.
#   CNI macvlan + host-local ADD into a fresh namespace, the same way.
#   runc run of `true` (whole life: run, then delete), annotated (hooks
#     registered) over unannotated; the same with `sleep 0.05`.
#   annotated prestart with 4,000 leases held vs 10 (a /20 pool).
#   roce-runtime pass-through (unannotated runc run) over plain runc, and
#     roce-runtime + hook (annotated) over plain runc unannotated.
#   prestart and poststop with 2,000 extra processes holding 50 fds each,
#     and a whole life among them.
#   prestart with 128 RDMA devices (HCAs, VFs) on the node, and with 2,000
#     more mounts.
#   the floor (floor.c): the kernel work of an annotated start alone, timed
#     as the hook is, beside it and beside CNI.
# The hook and the shim run as installed: copies of the build's programs.
# Medians (ms), differences of whole lives as the median of the rounds'
# differences (runs interleaved, their order turning); goals beside them.
# Usage: sudo contrib/bench/start.sh [N]   (N runs of each, default 60)
#   HOOK_BASELINE=/other/roce-hook: the whole lives among the crowd again
#   with that build registered, interleaved with this one's (before/after);
#   with BENCH_ONLY=stop, its starts and stops beside this one's.
#   BENCH_ONLY=stop: the start and the stop side by side alone.
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin start 60 "$@"
[ "$N" -ge 60 ] 2>/dev/null || N=60
# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
CNI_DIR=${CNI_DIR:-/usr/lib/cni}

bench_host off
bench_state_dir
export ROCE_HOOK_CONFIG=$POLICY

# The spawn: an empty program, as the hook is one (libc only).
bench_empty start
bench_cpu start

us () { echo "${EPOCHREALTIME/./}"; }
median () { sort -n "$1" | awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%.2f", v[int((NR+1)/2)]/1000}'; }
# quartiles FILE: "p25-p75" in ms (a whole life on this VM swings by a few ms).
quartiles () { sort -n "$1" | awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%.1f-%.1f", v[int((NR+3)/4)]/1000, v[int((3*NR+3)/4)]/1000}'; }
# own FILE SPAWNFILE: the median of FILE minus the median spawn, in ms.
own () { awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN {printf "%.2f", a - b}'; }
# paired, paired_q, paired_ci: differences of whole lives, round by round.
# shellcheck source=paired.bash
source "$ROOT/contrib/bench/paired.bash"

# The hook as a node runs it: installed, a copy written whole.  The build's
# file, written by the linker piece by piece, sits in the page cache in small
# folios: 9 more page faults and 0.05 ms more CPU at each exec here than the
# same bytes copied (`perf stat -r 200 build/roce-hook --version`).
mkdir -p "$T/bin"
for b in roce-hook roce-hook-engine roce-runtime roce-runtime-engine; do
  [ -x "$ROCE_BUILD/$b" ] && install -m 0755 "$ROCE_BUILD/$b" "$T/bin/$b"
done
[ "$HOOK" = "$ROCE_BUILD/roce-hook" ] && HOOK=$T/bin/roce-hook
[ "$SHIM" = "$ROCE_BUILD/roce-runtime" ] && SHIM=$T/bin/roce-runtime

bench_floor start

runtime_opts
RT=("$OCI_RUNTIME" "${RUNTIME_OPTS[@]}")

# One bundle for the direct runs (no hooks: the benchmark runs the hook).
HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 600' make_bundle "$T/ann" "$POLICY"
HOOKS=0 CMD='sleep 600' make_bundle "$T/plain" "$POLICY"

# start_stop_one ID HOOK PREFIX [pin]: a fresh container ID, HOOK's prestart
# (timed), runc delete, HOOK's poststop (timed), the empty program beside:
# wall (us) appended to PREFIX-{start,stop,spawn}, CPU to
# PREFIX-{cpu,stopcpu,cpuspawn}.  With pin, the container's network
# namespace outlives it until the poststop has returned (a bind mount, as
# the socket a runtime made there holds it one grace period): the
# poststop leaves the release to the process it forks.
start_stop_one () {
  local id=$1 hook=$2 f=$3 pin=${4:-} pid st t0 t1
  "${RT[@]}" create --bundle "$T/ann" "$id" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench/start: runc create: $(cat "$T/err")" >&2; exit 1; }
  defer "${RT[*]} delete -f $id"
  pid=$(container_pid "$id")
  st=$T/state-$id
  printf '{"ociVersion":"1.0.2","id":"%s","status":"created","pid":%s,"bundle":"%s","annotations":{"roce.io/hca":"mlx5_0"}}' \
    "$id" "$pid" "$T/ann" > "$st"
  t0=$(us); "$T/cpu" "$f-cpuspawn" "$T/empty" < "$st"; t1=$(us); echo $((t1 - t0)) >> "$f-spawn"
  t0=$(us)
  "$T/cpu" "$f-cpu" "$hook" --config "$POLICY" prestart < "$st" 2>"$T/err" ||
    { echo "bench/start: prestart: $(cat "$T/err")" >&2; exit 1; }
  t1=$(us); echo $((t1 - t0)) >> "$f-start"
  if [ -n "$pin" ]; then
    : > "$T/pin-$id"
    mount --bind "/proc/$pid/ns/net" "$T/pin-$id" || { echo "bench/start: pin $id" >&2; exit 1; }
  fi
  "${RT[@]}" delete -f "$id" >/dev/null 2>&1
  t0=$(us)
  "$T/cpu" "$f-stopcpu" "$hook" --config "$POLICY" poststop < "$st" 2>"$T/err" ||
    { echo "bench/start: poststop: $(cat "$T/err")" >&2; exit 1; }
  t1=$(us); echo $((t1 - t0)) >> "$f-stop"
  # Lazily: the waiter may be looking inside it.
  [ -z "$pin" ] || { umount -l "$T/pin-$id" && rm -f "$T/pin-$id"; }
  rm -f "$st"
}
# start_stop TAG [COUNT]: COUNT (N) fresh containers; for each the hook's prestart
# (timed), runc delete, the hook's poststop (timed); beside each, the empty
# program with the same stdin.  Files: $T/TAG-{start,stop,spawn}.
start_stop () {
  local tag=$1 count=${2:-$N} i
  : > "$T/$tag-start"; : > "$T/$tag-stop"; : > "$T/$tag-spawn"; : > "$T/$tag-cpu"; : > "$T/$tag-cpuspawn"
  for ((i = 0; i < count; i++)); do
    start_stop_one "bs-$tag-$i" "$HOOK" "$T/$tag"
  done
  # Among the crowd a poststop's liveness scan may run out of its time
  # (NETNS_SCAN_MS) and hold the lease, unsure: gc takes it once the
  # namespace is gone.  Said, not fatal.
  if [ -n "$(held_addresses_of "$tag")" ]; then
    echo "bench/start: $tag: $(held_addresses_of "$tag" | wc -l) lease(s) left held; gc" >&2
    "$HOOK" --config "$POLICY" gc >/dev/null 2>&1 || true
  fi
}
held_addresses_of () { leases_settled "$POLICY" | grep -o "\"bs-$1-[0-9]*\"" || true; }

unannotated () {
  local i st=$T/state-plain t0 t1
  printf '{"ociVersion":"1.0.2","id":"plain","status":"created","pid":1,"bundle":"%s"}' "$T/plain" > "$st"
  : > "$T/plain-start"; : > "$T/plain-spawn"
  for ((i = 0; i < N; i++)); do
    t0=$(us); "$T/empty" < "$st"; t1=$(us); echo $((t1 - t0)) >> "$T/plain-spawn"
    t0=$(us); "$HOOK" --config "$POLICY" prestart < "$st" || exit 1; t1=$(us)
    echo $((t1 - t0)) >> "$T/plain-start"
  done
}

cni_add () {
  local i ns t0 t1
  [ -x "$CNI_DIR/macvlan" ] && [ -x "$CNI_DIR/host-local" ] || { : > "$T/cni-add"; return; }
  cni_json
  : > "$T/cni-add"
  for ((i = 0; i < N; i++)); do
    ns=rb$(rand_hex 3)
    ip netns add "$ns"
    t0=$(us)
    CNI_COMMAND=ADD CNI_CONTAINERID=$ns CNI_NETNS=/run/netns/$ns CNI_IFNAME=roce0 CNI_PATH=$CNI_DIR \
      "$CNI_DIR/macvlan" < "$T/cni.json" > "$T/cni.out" 2>&1 ||
      { echo "bench/start: CNI ADD: $(cat "$T/cni.out")" >&2; ip netns del "$ns"; exit 1; }
    t1=$(us); echo $((t1 - t0)) >> "$T/cni-add"
    CNI_COMMAND=DEL CNI_CONTAINERID=$ns CNI_NETNS=/run/netns/$ns CNI_IFNAME=roce0 CNI_PATH=$CNI_DIR \
      "$CNI_DIR/macvlan" < "$T/cni.json" > /dev/null 2>&1 || true
    ip netns del "$ns"
  done
}

# whole_life BUNDLE FILE [BIN]: `run` of `true` to completion, then delete.
whole_life () {
  local b=$1 f=$2 bin=${3:-} i id t0 t1
  [ -n "$bin" ] || bin=$OCI_RUNTIME
  : > "$f"
  for ((i = 0; i < N; i++)); do
    id=bw-$(rand_hex 4)
    t0=$(us)
    "$bin" "${RUNTIME_OPTS[@]}" run --bundle "$b" "$id" </dev/null >/dev/null 2>"$T/err" ||
      { echo "bench/start: run ($b): $(cat "$T/err")" >&2; exit 1; }
    "${RT[@]}" delete -f "$id" >/dev/null 2>&1
    t1=$(us); echo $((t1 - t0)) >> "$f"
  done
}

# A lease store of COUNT holders in a /20 pool, all of this boot (held), in
# hook/ipam/lease.c's layout: a file per holder, hard-linked from the two indexes.
big_store () {
  local count=$1 dir=$2
  mkdir -p "$dir"
  chmod 0755 "$dir"
  python3 - "$count" "$dir" "$(cat /proc/sys/kernel/random/boot_id)" <<'PY'
import json, os, sys
n, d, boot = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for sub in ("holders", "addrs", "containers"):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
for i in range(n):
    a = (198 << 24) | (18 << 16) | (16 << 8)
    a += 10 + i
    ip = "%d.%d.%d.%d" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255)
    ino = 4026540000 + i
    key = "%s_4_%d" % (boot, ino)
    h = {"netns": {"boot_id": boot, "dev": 4, "ino": ino, "cookie": 900000 + i},
         "owner": "held-%d" % i, "containers": ["held-%d" % i], "since": 1700000000,
         "leases": [{"hca": "mlx5_0", "address": ip, "ifname": "roce0"}]}
    with open(os.path.join(d, "holders", key), "w") as f:
        json.dump(h, f, separators=(",", ":"))
    os.link(os.path.join(d, "holders", key), os.path.join(d, "addrs", ip))
    os.link(os.path.join(d, "holders", key), os.path.join(d, "containers", "held-%d" % i))
PY
}

echo "bench/start: $N runs of each (this takes a few minutes)" >&2
# BENCH_ONLY=nodes: the node's dimensions alone (their table).
ONLY=${BENCH_ONLY:-}

# BENCH_ONLY=stop: start and stop side by side.  Each round a fresh
# container is started and stopped by this build and by HOOK_BASELINE's
# (their order turning): the prestart's and the poststop's own CPU (wait4's
# rusage, the empty program's subtracted) and wall, the poststop finding
# the namespace still there (as runc's and crun's find a short-lived
# container's: the kernel lets it go a grace period later), so that it
# forks the process that waits for its end.
# stop_round TAG HOOK: one such round (files $T/s-TAG-*, start_stop_one's),
# the namespace outliving the container.
stop_round () {
  start_stop_one "bs-$1-$(rand_hex 3)" "$2" "$T/s-$1" pin
  # The waiter hears of the namespace's end at once (RTM_DELNSID): the
  # next round does not pay for it.
  sleep 0.05
}
if [ "$ONLY" = stop ]; then
  tags=(new)
  if [ -n "${HOOK_BASELINE:-}" ]; then
    mkdir -p "$T/base"
    for b in roce-hook roce-hook-engine; do
      [ -x "$(dirname "$HOOK_BASELINE")/$b" ] && install -m 0755 "$(dirname "$HOOK_BASELINE")/$b" "$T/base/$b"
    done
    tags+=(base)
  fi
  for ((i = 0; i < N; i++)); do
    if ((i % 2 == 0)); then order=("${tags[@]}"); else order=($(printf '%s\n' "${tags[@]}" | tac)); fi
    for tag in "${order[@]}"; do
      if [ "$tag" = new ]; then stop_round new "$HOOK"; else stop_round base "$T/base/roce-hook"; fi
    done
  done
  "$HOOK" --config "$POLICY" gc >/dev/null 2>&1 || true
  log=$(jq -r .log_file "$POLICY")
  mcpu () { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  printf 'roce-hook start and stop side by side: %d rounds, own CPU in ms, median (95%% CI of the median); wall median (%s, %s cores)\n' \
    "$N" "$(uname -r)" "$(nproc)"
  for tag in "${tags[@]}"; do
    name=this; [ "$tag" = base ] && name=$HOOK_BASELINE
    sp=$(mcpu "$T/s-$tag-cpuspawn"); spw=$(mcpu "$T/s-$tag-spawn")
    printf '  %s\n' "$name"
    printf '    %-44s %-22s wall %s\n' "annotated prestart" "$(median_ci "$T/s-$tag-cpu" "$sp")" \
      "$(awk -v a="$(mcpu "$T/s-$tag-start")" -v b="$spw" 'BEGIN {printf "%.2f", (a - b) / 1000}')"
    printf '    %-44s %-22s wall %s\n' "its poststop ($(grep -c "bs-$tag-.*waits for that" "$log") of $N forked a waiter)" \
      "$(median_ci "$T/s-$tag-stopcpu" "$sp")" \
      "$(awk -v a="$(mcpu "$T/s-$tag-stop")" -v b="$spw" 'BEGIN {printf "%.2f", (a - b) / 1000}')"
    printf '    %-44s %s\n' "poststop / prestart, CPU round by round" "$(ratio_ci "$T/s-$tag-stopcpu" "$T/s-$tag-cpu" "$sp")"
    printf '    %-44s %s\n' "poststop / prestart, wall round by round" "$(ratio_ci "$T/s-$tag-stop" "$T/s-$tag-start" "$spw")"
  done
  if [ -n "${HOOK_BASELINE:-}" ]; then
    printf '  %-46s %s\n' "poststop CPU, this / the baseline" "$(ratio_ci "$T/s-new-stopcpu" "$T/s-base-stopcpu" "$(mcpu "$T/s-new-cpuspawn")")"
    printf '  %-46s %s\n' "poststop wall, this / the baseline" "$(ratio_ci "$T/s-new-stop" "$T/s-base-stop" "$(mcpu "$T/s-new-spawn")")"
  fi
  exit 0
fi
cni_json
[ "$ONLY" = nodes ] || unannotated
# The crowd's comparison (base, crowd, after) takes 3N each: a poststop's
# median (0.6 ms) moved by 20-50% between two runs of 60 here (a poststop
# forks a reaper only when the kernel still has the namespace).
start_stop base $((3 * N))
if [ "$ONLY" != nodes ]; then
cni_add

# Whole life through runc: hooks registered in both bundles.
ANNOTATIONS="roce.io/hca=mlx5_0" CMD=true make_bundle "$T/life-ann" "$POLICY"
CMD=true make_bundle "$T/life-plain" "$POLICY"
# The same with a container that lives 50 ms: `true` is gone before the
# kernel frees the netlink socket runc made in its namespace (one RCU grace
# period, 5-15 ms here), so its poststop finds the namespace still there.
ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 0.05' make_bundle "$T/life50-ann" "$POLICY"
CMD='sleep 0.05' make_bundle "$T/life50-plain" "$POLICY"
# The shim: unannotated pass-through, and annotated (the shim's edits, then
# the hook), beside plain runc unannotated.  No hooks in the bundles: the
# shim adds its own to the annotated one.
HOOKS=0 CMD=true make_bundle "$T/shim-plain" "$POLICY"
HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=true make_bundle "$T/shim-ann-orig" "$POLICY"
# Interleaved, one of each a round, so that a drift of the machine weighs
# on all alike.
: > "$T/t-life-plain"; : > "$T/t-life-ann"; : > "$T/shim-direct"; : > "$T/shim-pass"; : > "$T/shim-annotated"
: > "$T/t-life50-plain"; : > "$T/t-life50-ann"
# A pause between runs lets the kernel finish tearing down the last one's
# namespaces (work it does after runc returns), so no run pays for its
# predecessor.
one_life () { # BUNDLE FILE [BIN]
  sleep 0.05
  N=1 whole_life "$1" "$T/one" "${3:-}"
  cat "$T/one" >> "$2"
}
# The order within a pair (and the shim's three) turns from round to
# round: a run that follows an annotated one may meet the kernel still
# tearing its namespace down, and no kind is always the one that does.
shim_life () { # KIND
  case $1 in
    direct) one_life "$T/shim-plain" "$T/shim-direct" ;;
    pass) one_life "$T/shim-plain" "$T/shim-pass" "$SHIM" ;;
    ann) rm -rf "$T/shim-ann" && cp -a "$T/shim-ann-orig" "$T/shim-ann"
      one_life "$T/shim-ann" "$T/shim-annotated" "$SHIM" ;;
  esac
}
for ((i = 0; i < N; i++)); do
  if ((i % 2 == 0)); then
    one_life "$T/life-plain" "$T/t-life-plain"; one_life "$T/life-ann" "$T/t-life-ann"
    one_life "$T/life50-plain" "$T/t-life50-plain"; one_life "$T/life50-ann" "$T/t-life50-ann"
  else
    one_life "$T/life-ann" "$T/t-life-ann"; one_life "$T/life-plain" "$T/t-life-plain"
    one_life "$T/life50-ann" "$T/t-life50-ann"; one_life "$T/life50-plain" "$T/t-life50-plain"
  fi
  case $((i % 3)) in
    0) shim_life direct; shim_life pass; shim_life ann ;;
    1) shim_life pass; shim_life ann; shim_life direct ;;
    2) shim_life ann; shim_life direct; shim_life pass ;;
  esac
done

fi

# 2,000 extra processes holding 50 fds each.
holders=()
for ((i = 0; i < 2000; i++)); do
  bash -c 'for f in $(seq 3 52); do eval "exec $f</dev/null"; done; exec sleep 600' </dev/null >/dev/null 2>&1 &
  holders+=($!)
done
defer "kill ${holders[*]}"
sleep 2
start_stop crowd $((3 * N))
BASE=${HOOK_BASELINE:-}
if [ "$ONLY" != nodes ]; then
# A whole life among them: the runtime runs poststop before the kernel has
# let the namespace go, the path on which poststop once read every fd.
if [ -n "$BASE" ]; then
  HOOK=$BASE ANNOTATIONS="roce.io/hca=mlx5_0" CMD=true make_bundle "$T/life-ann-base" "$POLICY"
  HOOK=$BASE CMD=true make_bundle "$T/life-plain-base" "$POLICY"
fi
: > "$T/crowd-life-plain"; : > "$T/crowd-life-ann"; : > "$T/crowd-base-plain"; : > "$T/crowd-base-ann"
for ((i = 0; i < N; i++)); do
  if ((i % 2 == 0)); then
    one_life "$T/life-plain" "$T/crowd-life-plain"; one_life "$T/life-ann" "$T/crowd-life-ann"
  else
    one_life "$T/life-ann" "$T/crowd-life-ann"; one_life "$T/life-plain" "$T/crowd-life-plain"
  fi
  if [ -n "$BASE" ]; then
    if ((i % 2 == 0)); then
      one_life "$T/life-plain-base" "$T/crowd-base-plain"; one_life "$T/life-ann-base" "$T/crowd-base-ann"
    else
      one_life "$T/life-ann-base" "$T/crowd-base-ann"; one_life "$T/life-plain-base" "$T/crowd-base-plain"
    fi
  fi
done
fi
kill "${holders[@]}" 2>/dev/null
wait "${holders[@]}" 2>/dev/null
"$HOOK" --config "$POLICY" gc >/dev/null 2>&1 || true
# The same again without them: the crowd is held to the mean of the runs
# before and after it (the machine drifts over a bench's minutes).
start_stop after $((3 * N))

# ---- the node's dimensions, interleaved ------------------------------------
# Each round starts one fresh container under each variant, their order
# turning, so a drift of the machine weighs on all alike; a variant's figure
# is the median of the rounds' ratios to its dimension's first, with the 95%
# interval of that median (ratio_ci).
#   mounts 0 / 2,000 / 10,000: the hook run (nsenter -m) in a mount namespace
#     holding that many more mounts than the node's (the spawn measured the
#     same way and subtracted);
#   HCAs 1 / 8 / 128: a sysfs tree of that many RDMA devices (HCAs, VFs);
#   leases 10 / 4,000 held in a /20 pool;
#   qos warn: the gate probing the NIC (DCB, ECN, MTU, the switch) against
#     qos off;
#   CNI macvlan + host-local ADD in the same rounds, over the hook's own time.
# Processes 0 / 2,000 x 50 fds cannot be interleaved: the crowd's rounds
# above, each over the mean of the same round before and after it.
# One CNI ADD into a fresh namespace, timed (and its DEL).
one_cni () {
  local ns t0 t1
  ns=rb$(rand_hex 3)
  ip netns add "$ns"
  t0=$(us)
  CNI_COMMAND=ADD CNI_CONTAINERID=$ns CNI_NETNS=/run/netns/$ns CNI_IFNAME=roce0 CNI_PATH=$CNI_DIR \
    "$T/cpu" "$T/n-cni-cpu" "$CNI_DIR/macvlan" < "$T/cni.json" > "$T/cni.out" 2>&1 ||
    { echo "bench/start: CNI ADD: $(cat "$T/cni.out")" >&2; ip netns del "$ns"; exit 1; }
  t1=$(us); echo $((t1 - t0)) >> "$T/n-cni-start"
  CNI_COMMAND=DEL CNI_CONTAINERID=$ns CNI_NETNS=/run/netns/$ns CNI_IFNAME=roce0 CNI_PATH=$CNI_DIR \
    "$CNI_DIR/macvlan" < "$T/cni.json" > /dev/null 2>&1 || true
  ip netns del "$ns"
}
# mount_holder COUNT: a process in a mount namespace of its own (a copy of
# this script's) with COUNT more tmpfs mounts; prints its pid.
mount_holder () {
  local count=$1 pid
  unshare -m --propagation private sleep 3600 </dev/null >/dev/null 2>&1 &
  pid=$!
  defer "kill $pid"
  sleep 0.1
  nsenter -t "$pid" -m python3 - "$count" "$T/mnts-$count" <<'PY' || { echo "bench/start: mounts" >&2; exit 1; }
import ctypes, os, sys
n, d = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
for i in range(n):
    p = os.path.join(d, str(i))
    os.makedirs(p, exist_ok=True)
    if libc.mount(b"none", p.encode(), b"tmpfs", 0, b"size=4k") != 0:
        sys.exit("mount %s: %s" % (p, os.strerror(ctypes.get_errno())))
PY
  echo "$pid"
}
node_dimensions () {
  local i k v order h0 h2k h10k
  local variants=(m0 m2000 m10000 h1 h8 h128 l10 l4000 qwarn cni)
  [ -n "$FLOOR" ] && variants+=(floor)
  # HCAs: sysfs trees of 1, 8 and 128 RDMA devices.
  cp -a "$T/sys" "$T/sys-1"
  for ((i = 1; i < 8; i++)); do fake_hca "mlx5_$i" "$i" "vf$i"; done
  cp -a "$T/sys" "$T/sys-8"
  for ((i = 8; i < 128; i++)); do fake_hca "mlx5_$i" "$i" "vf$i"; done
  for k in 1 8 128; do
    v=$T/sys-$k; [ "$k" = 128 ] && v=$T/sys
    sed -e "s|\"sysfs_root\": \"[^\"]*\"|\"sysfs_root\": \"$v\"|" \
        -e "s|\"state_dir\": \"[^\"]*\"|\"state_dir\": \"$SD/state-h$k\"|" "$POLICY" > "$T/policy-h$k.json"
  done
  sed -e 's|"mode": "off"|"mode": "warn"|' -e "s|\"sysfs_root\": \"[^\"]*\"|\"sysfs_root\": \"$T/sys-1\"|" \
      -e "s|\"state_dir\": \"[^\"]*\"|\"state_dir\": \"$SD/state-qw\"|" "$POLICY" > "$T/policy-qwarn.json"
  # Leases: 10 and 4,000 held in a /20 pool.
  for k in 10 4000; do
    sed -e "s|\"state_dir\": \"[^\"]*\"|\"state_dir\": \"$SD/state-l$k\"|" \
        -e "s|\"sysfs_root\": \"[^\"]*\"|\"sysfs_root\": \"$T/sys-1\"|" \
        -e 's|"subnet": "198.18.10.0/24", "pool": "198.18.10.100-198.18.10.199"|"subnet": "198.18.16.0/20", "pool": "198.18.16.10-198.18.31.250"|' \
        "$POLICY" > "$T/policy-l$k.json"
    big_store "$k" "$SD/state-l$k"
  done
  # Mounts: namespaces holding 0, 2,000 and 10,000 more.
  h0=$(mount_holder 0); h2k=$(mount_holder 2000); h10k=$(mount_holder 10000)
  for ((i = 0; i < N; i++)); do
    order=("${variants[@]:$((i % ${#variants[@]}))}" "${variants[@]:0:$((i % ${#variants[@]}))}")
    for v in "${order[@]}"; do
      case $v in
        m0) one_start m0 "$T/policy-h1.json" nsenter -t "$h0" -m -- ;;
        m2000) one_start m2000 "$T/policy-h1.json" nsenter -t "$h2k" -m -- ;;
        m10000) one_start m10000 "$T/policy-h1.json" nsenter -t "$h10k" -m -- ;;
        h*) one_start "$v" "$T/policy-$v.json" ;;
        l*) one_start "$v" "$T/policy-$v.json" ;;
        qwarn) one_start qwarn "$T/policy-qwarn.json" ;;
        cni) [ -x "$CNI_DIR/macvlan" ] && one_cni ;;
        floor) one_floor ;;
      esac
    done
  done
}
node_dimensions

node_table () {
  # The rounds' own CPU time (us): the hook's minus the empty program's
  # median (wait4's rusage, both through the same prefix); the wall clock's
  # median beside it, the empty program's subtracted the same way.
  local v sp
  for v in m0 m2000 m10000 h1 h8 h128 l10 l4000 qwarn; do cpu_own "$v"; done
  if [ -s "$T/n-floor-cpu" ]; then cpu_own floor; else : > "$T/n-floor-own"; : > "$T/n-floor-wall"; fi
  [ -s "$T/n-cni-cpu" ] || : > "$T/n-cni-cpu"
  [ -s "$T/n-cni-start" ] || : > "$T/n-cni-start"
  cp "$T/n-cni-cpu" "$T/n-cni-own"; cp "$T/n-cni-start" "$T/n-cni-wall"
  # The processes: each crowd round over the mean of the same round before
  # and after it (the crowd cannot be interleaved).
  sp=$(cat "$T/base-spawn" "$T/crowd-spawn" "$T/after-spawn" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  paste "$T/base-start" "$T/after-start" | awk -v s="$sp" '{print ($1 + $2) / 2 - s}' > "$T/n-p0-wall"
  awk -v s="$sp" '{print $1 - s}' "$T/crowd-start" > "$T/n-p2000-wall"
  sp=$(cat "$T/base-cpuspawn" "$T/crowd-cpuspawn" "$T/after-cpuspawn" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  paste "$T/base-cpu" "$T/after-cpu" | awk -v s="$sp" '{print ($1 + $2) / 2 - s}' > "$T/n-p0-own"
  awk -v s="$sp" '{print $1 - s}' "$T/crowd-cpu" > "$T/n-p2000-own"
  nrow () { printf '  %-30s %-20s %-22s %-8s %s\n' "$1" "$2" "$3" "$4" "$5"; }
  wmed () { median_ci "$1" 0 | cut -d' ' -f1; }
  printf '\nthe node'"'"'s dimensions: the annotated prestart'"'"'s own CPU time (1 HCA, qos off unless said),\n'
  printf '  %d interleaved rounds; medians, the 95%% CI of the median in (); wall: the median own wall time\n' "$N"
  nrow "dimension" "CPU ms" "ratio to the first" "wall ms" "goal"
  nrow "mounts: the node's" "$(median_ci "$T/n-m0-own" 0)" "1" "$(wmed "$T/n-m0-wall")" ""
  nrow "mounts: 2,000 more" "$(median_ci "$T/n-m2000-own" 0)" "$(ratio_ci "$T/n-m2000-own" "$T/n-m0-own" 0)" "$(wmed "$T/n-m2000-wall")" "<= 1.1x"
  nrow "mounts: 10,000 more" "$(median_ci "$T/n-m10000-own" 0)" "$(ratio_ci "$T/n-m10000-own" "$T/n-m0-own" 0)" "$(wmed "$T/n-m10000-wall")" "<= 1.1x"
  nrow "RDMA devices (HCAs, VFs): 1" "$(median_ci "$T/n-h1-own" 0)" "1" "$(wmed "$T/n-h1-wall")" "<= 1.0 ms"
  nrow "RDMA devices: 8" "$(median_ci "$T/n-h8-own" 0)" "$(ratio_ci "$T/n-h8-own" "$T/n-h1-own" 0)" "$(wmed "$T/n-h8-wall")" "<= 1.1x"
  nrow "RDMA devices: 128" "$(median_ci "$T/n-h128-own" 0)" "$(ratio_ci "$T/n-h128-own" "$T/n-h1-own" 0)" "$(wmed "$T/n-h128-wall")" "<= 1.1x"
  nrow "leases held: 10 (a /20 pool)" "$(median_ci "$T/n-l10-own" 0)" "1" "$(wmed "$T/n-l10-wall")" ""
  nrow "leases held: 4,000" "$(median_ci "$T/n-l4000-own" 0)" "$(ratio_ci "$T/n-l4000-own" "$T/n-l10-own" 0)" "$(wmed "$T/n-l4000-wall")" "<= 1.1x"
  nrow "qos warn (the gate probes)" "$(median_ci "$T/n-qwarn-own" 0)" "$(ratio_ci "$T/n-qwarn-own" "$T/n-h1-own" 0)" "$(wmed "$T/n-qwarn-wall")" "(over off)"
  nrow "CNI macvlan + host-local ADD" "$(median_ci "$T/n-cni-own" 0)" "$(ratio_ci "$T/n-cni-own" "$T/n-h1-own" 0)" "$(wmed "$T/n-cni-wall")" ">= 8x"
  nrow "the floor (floor.c): kernel work" "$(median_ci "$T/n-floor-own" 0)" "$(ratio_ci "$T/n-floor-own" "$T/n-h1-own" 0)" "$(wmed "$T/n-floor-wall")" "(no checks)"
  nrow "  CNI ADD over the floor" "" "$(ratio_ci "$T/n-cni-own" "$T/n-floor-own" 0)" "" "(the most 8x can be)"
  nrow "processes: 0 (before/after, 3N)" "$(median_ci "$T/n-p0-own" 0)" "1" "$(wmed "$T/n-p0-wall")" ""
  nrow "processes: 2,000 x 50 fds" "$(median_ci "$T/n-p2000-own" 0)" "$(ratio_ci "$T/n-p2000-own" "$T/n-p0-own" 0)" "$(wmed "$T/n-p2000-wall")" "<= 1.1x"
}

if [ "$ONLY" = nodes ]; then
  printf 'roce-hook start benchmark, the node'"'"'s dimensions (%s, %s cores)\n' "$(uname -r)" "$(nproc)"
  node_table
  exit 0
fi
life_delta=$(paired "$T/t-life-ann" "$T/t-life-plain")
pass_delta=$(paired "$T/shim-pass" "$T/shim-direct")
ann_delta=$(paired "$T/shim-annotated" "$T/shim-direct")
hook_start=$(own "$T/base-start" "$T/base-spawn")
cni=$(median "$T/cni-add")

printf 'roce-hook start/stop benchmark: %d runs each, medians in ms (%s, %s cores)\n' "$N" "$(uname -r)" "$(nproc)"
printf '  (a difference of whole lives: the median of the rounds'"'"' differences, their p25..p75 beside it)\n'
printf '  %-62s %8s   %s\n' "figure" "ms" "goal"
row () { printf '  %-62s %8s   %s\n' "$1" "$2" "$3"; }
row "hook, annotated prestart (1 HCA, qos off), own time" "$hook_start" "<= 2.5"
row "hook, poststop of that container, own time" "$(own "$T/base-stop" "$T/base-spawn")" "<= 1.5"
row "hook, unannotated prestart, own time" "$(own "$T/plain-start" "$T/plain-spawn")" "<= 0.5"
row "  (the spawn subtracted: an empty program)" "$(median "$T/base-spawn")" ""
row "CNI macvlan + host-local ADD" "$cni" ""
row "  CNI ADD / hook annotated prestart (ratio)" \
  "$(awk -v a="$cni" -v b="$hook_start" 'BEGIN {if (b > 0) printf "%.1fx", a / b; else print "n/a"}')" ">= 5x"
row "runc run of true, whole life, unannotated" "$(median "$T/t-life-plain")" "(p25-p75 $(quartiles "$T/t-life-plain"))"
row "runc run of true, whole life, annotated, difference" "$life_delta" "<= +4 ($(paired_q "$T/t-life-ann" "$T/t-life-plain"); 95% CI $(paired_ci "$T/t-life-ann" "$T/t-life-plain"))"
row "runc run of sleep 0.05, whole life, annotated, difference" "$(paired "$T/t-life50-ann" "$T/t-life50-plain")" "($(paired_q "$T/t-life50-ann" "$T/t-life50-plain"))"
row "roce-runtime pass-through, unannotated runc run, difference" "$pass_delta" "<= +1 ($(paired_q "$T/shim-pass" "$T/shim-direct"); 95% CI $(paired_ci "$T/shim-pass" "$T/shim-direct"))"
row "roce-runtime + hook, annotated, over plain runc unannotated" "$ann_delta" "<= +5 ($(paired_q "$T/shim-annotated" "$T/shim-direct"); 95% CI $(paired_ci "$T/shim-annotated" "$T/shim-direct"); shim.sh: 4x the rounds)"
mean2 () { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (a + b) / 2}'; }
ref_start=$(mean2 "$hook_start" "$(own "$T/after-start" "$T/after-spawn")")
ref_stop=$(mean2 "$(own "$T/base-stop" "$T/base-spawn")" "$(own "$T/after-stop" "$T/after-spawn")")
pct () { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%+.0f%%", 100 * (a - b) / b; else print "n/a"}'; }
crowd_stop=$(own "$T/crowd-stop" "$T/crowd-spawn")
row "poststop with 2,000 processes x 50 fds, own time" "$crowd_stop" "within 10% of $ref_stop (before/after): $(pct "$crowd_stop" "$ref_stop")"
crowd_life=$(paired "$T/crowd-life-ann" "$T/crowd-life-plain")
row "runc run of true with them, annotated, difference" "$crowd_life" "without them $life_delta ($(paired_q "$T/crowd-life-ann" "$T/crowd-life-plain"))"
if [ -n "$BASE" ]; then
  row "  the same with $BASE" "$(paired "$T/crowd-base-ann" "$T/crowd-base-plain")" "($(paired_q "$T/crowd-base-ann" "$T/crowd-base-plain"))"
fi
node_table
