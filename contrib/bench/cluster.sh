#!/usr/bin/env bash
# Cluster addressing's cost, on the fake host of the tests, with a local
# three-member etcd (127.0.0.1 ports, stopped at the end):
#   - the hook's own time (its process, exec included) for a start in the
#     node-local mode and, beside it, with `cluster` and a free address in a
#     held block (no etcd call; goal: within 0.1 ms);
#   - a start that claims a new block (a range and a transaction);
#   - 200 starts over four simulated nodes, eight at once (wall time).
# Starts call the hook directly, as a runtime would, for a process in
# network and mount namespaces of its own (tests/helpers/cluster.sh).
# Usage: sudo contrib/bench/cluster.sh [N]   (N starts of each, default 30)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}
N=${1:-${BENCH_N:-30}}

# shellcheck source=../../tests/helpers/privns.sh
source "$ROOT/tests/helpers/privns.sh"
roce_in_private_ns bench-cluster "$0" "$N"
# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
# shellcheck source=../../tests/helpers/cluster.sh
source "$ROOT/tests/helpers/cluster.sh"
# The helpers' checks end a benchmark with a message instead of a test.
fail () { echo "bench/cluster: $*" >&2; exit 1; }
skip () { echo "bench/cluster: skipped: $*" >&2; exit 0; }

cluster_host
etcd_cluster 3
defer kill_ns_processes
direct_bundle

# timed POLICY ID FILE: one direct start, its microseconds appended to FILE.
timed () {
  local pid s e rc=0
  pid=$(ns_process)
  oci_state "$2" "$pid" "$T/db" > "$T/state.json"
  s=${EPOCHREALTIME/./}
  "$HOOK" --config "$1" prestart < "$T/state.json" > "$T/out" 2>&1 || rc=$?
  e=${EPOCHREALTIME/./}
  [ "$rc" -eq 0 ] || fail "start $2: $(cat "$T/out")"
  echo $((e - s)) >> "$3"
}

stats () {
  sort -n "$1" | awk '{v[NR]=$1} END {
    if (NR == 0) { print "n/a"; exit }
    m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)];
    printf "%7.2f / %7.2f", m / 1000, p / 1000 }'
}
median_us () { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }

# Node-local and cluster-with-a-held-block, alternated (the same load on
# both).  The cluster node claims its blocks ahead with gc (the reserve).
jq --arg st "$T/state-local" '.state_dir = $st' "$NODE_BASE" > "$T/local.json"
held=$(node_policy held ".cluster.reserve = $((N + 2))")
"$HOOK" --config "$held" gc > "$T/gc.out" || fail "gc: $(cat "$T/gc.out")"
: > "$T/t-local"; : > "$T/t-held"; : > "$T/t-claim"
for ((i = 0; i < N; i++)); do
  timed "$T/local.json" "l$i" "$T/t-local"
  timed "$held" "h$i" "$T/t-held"
done
# Claims: each start on a node that holds nothing yet.
for ((i = 0; i < N; i++)); do
  timed "$(node_policy "claim$i")" "c$i" "$T/t-claim"
done
kill_ns_processes
: > "$T/ns-pids"
# Give the pool back for the next part: the claiming nodes' blocks (as for
# nodes gone for good), and the held node's (gc, once its containers died).
for ((i = 0; i < N; i++)); do
  "$HOOK" --config "$held" blocks release --node "claim$i" > "$T/rel.out" || fail "release: $(cat "$T/rel.out")"
done
sleep 0.2
jq '.cluster.reserve = 0' "$held" > "$T/p.tmp" && mv "$T/p.tmp" "$held"
"$HOOK" --config "$held" gc > "$T/gc.out" || fail "gc: $(cat "$T/gc.out")"
[ -z "$(etcd_blocks)" ] || fail "blocks left in etcd: $(etcd_blocks)"

# 200 starts over four nodes, eight at once.
nodes=(b1 b2 b3 b4) pol=()
for i in 0 1 2 3; do pol[$i]=$(node_policy "${nodes[$i]}"); done
s=${EPOCHREALTIME/./}
for ((k = 0; k < 25; k++)); do
  bg=()
  for i in 0 1 2 3; do
    start_direct "${pol[$i]}" "m$k-$i-a" & bg+=($!)
    start_direct "${pol[$i]}" "m$k-$i-b" & bg+=($!)
  done
  wait "${bg[@]}" || true
done
e=${EPOCHREALTIME/./}
many=$(for i in 0 1 2 3; do node_addresses "${pol[$i]}"; done)
[ "$(grep -c . <<<"$many")" = 200 ] ||
  fail "200 starts held $(grep -c . <<<"$many") addresses: $(cat "$T"/out-m* | sort | uniq -c | head -3)"
[ -z "$(sort <<<"$many" | uniq -d)" ] || fail "duplicate addresses: $(sort <<<"$many" | uniq -d)"

diff_us=$(( $(median_us "$T/t-held") - $(median_us "$T/t-local") ))
printf 'roce-hook cluster benchmark: %d starts each, median / p90 in ms (%s, %s cores, etcd %s, 3 members)\n' \
  "$N" "$(uname -r)" "$(nproc)" "$(etcd --version | sed -n 's/^etcd Version: //p')"
printf '  %-56s %s\n' "hook start, node-local (no cluster)" "$(stats "$T/t-local")"
printf '  %-56s %s\n' "hook start, cluster, free address in a held block" "$(stats "$T/t-held")"
printf '  %-56s %7.2f  (goal: <= 0.10)\n' "  difference of medians" "$(awk -v a="$diff_us" 'BEGIN {print a / 1000}')"
printf '  %-56s %s\n' "hook start, cluster, claiming a new block in etcd" "$(stats "$T/t-claim")"
printf '  %-56s %7.2f s (%.2f ms a start)\n' "200 starts over 4 nodes, 8 at once (wall)" \
  "$(awk -v a=$((e - s)) 'BEGIN {print a / 1e6}')" "$(awk -v a=$((e - s)) 'BEGIN {print a / 200e3}')"
