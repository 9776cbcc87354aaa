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

# timed POLICY ID FILE: one direct start; its wall and CPU (user + system,
# from wait4's rusage: far less noisy on shared cores) microseconds are
# appended to FILE and FILE.cpu.
cat > "$T/run.py" <<'PY'
import os, sys, time
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1], os.O_RDONLY); os.dup2(fd, 0)
    out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC); os.dup2(out, 1); os.dup2(out, 2)
    os.execv(sys.argv[3], sys.argv[3:])
_, st, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
print(int(wall * 1e6), int((ru.ru_utime + ru.ru_stime) * 1e6), os.waitstatus_to_exitcode(st))
PY
timed () {
  local pid wall cpu rc
  pid=$(ns_process)
  oci_state "$2" "$pid" "$T/db" > "$T/state.json"
  read -r wall cpu rc < <(python3 "$T/run.py" "$T/state.json" "$T/out" "$HOOK" --config "$1" prestart)
  [ "$rc" -eq 0 ] || fail "start $2: $(cat "$T/out")"
  echo "$wall" >> "$3"
  echo "$cpu" >> "$3.cpu"
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
# (Random MACs for the node-local one: both "nodes" share one NIC here, and
# its addresses come from the same pool as the cluster node's, whose MACs
# the addresses derive: the same MAC cannot be on a link twice.)
jq --arg st "$T/state-local" '.state_dir = $st | .fabric.mac_prefix = ""' "$NODE_BASE" > "$T/local.json"
held=$(node_policy held ".cluster.reserve = $((N + 2))")
"$HOOK" --config "$held" gc > "$T/gc.out" || fail "gc: $(cat "$T/gc.out")"
: > "$T/t-local"; : > "$T/t-held"; : > "$T/t-claim"; : > "$T/t-local.cpu"; : > "$T/t-held.cpu"; : > "$T/t-claim.cpu"
for ((i = 0; i < N; i++)); do
  timed "$T/local.json" "l$i" "$T/t-local"
  timed "$held" "h$i" "$T/t-held"
done
# Claims: each start on a node that holds nothing yet (at most 20: the pool
# has 32 blocks).
NC=$((N < 20 ? N : 20))
for ((i = 0; i < NC; i++)); do
  timed "$(node_policy "claim$i")" "c$i" "$T/t-claim"
done
kill_ns_processes
: > "$T/ns-pids"
# Give the pool back for the next part: the claiming nodes' blocks (as for
# nodes gone for good), and the held node's (gc, once its containers died).
for ((i = 0; i < NC; i++)); do
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
diff_cpu=$(( $(median_us "$T/t-held.cpu") - $(median_us "$T/t-local.cpu") ))
printf 'roce-hook cluster benchmark: %d starts each (%d claiming), median / p90 in ms (%s, %s cores, etcd %s, 3 members)\n' \
  "$N" "$NC" "$(uname -r)" "$(nproc)" "$(etcd --version | sed -n 's/^etcd Version: //p')"
printf '  %-56s %s\n' "hook start, node-local (no cluster)" "$(stats "$T/t-local")"
printf '  %-56s %s\n' "hook start, cluster, free address in a held block" "$(stats "$T/t-held")"
printf '  %-56s %7.2f  (goal: <= 0.10)\n' "  difference of medians" "$(awk -v a="$diff_us" 'BEGIN {print a / 1000}')"
printf '  %-56s %s\n' "  CPU (user+sys), node-local" "$(stats "$T/t-local.cpu")"
printf '  %-56s %s\n' "  CPU (user+sys), cluster, held block" "$(stats "$T/t-held.cpu")"
printf '  %-56s %7.2f  (goal: <= 0.10)\n' "  CPU difference of medians" "$(awk -v a="$diff_cpu" 'BEGIN {print a / 1000}')"
printf '  %-56s %s\n' "hook start, cluster, claiming a new block in etcd" "$(stats "$T/t-claim")"
printf '  %-56s %s\n' "  CPU (user+sys), claiming" "$(stats "$T/t-claim.cpu")"
printf '  %-56s %7.2f s (%.2f ms a start)\n' "200 starts over 4 nodes, 8 at once (wall)" \
  "$(awk -v a=$((e - s)) 'BEGIN {print a / 1e6}')" "$(awk -v a=$((e - s)) 'BEGIN {print a / 200e3}')"
