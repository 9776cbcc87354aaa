#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gc on a node whose containers died without a poststop: N holders (10,000
# by default) whose network namespaces are gone, in the layout a start
# writes (a file per holder hard-linked from addrs/ and containers/, the
# namespace's id as the host saw it, the macvlan's parent and MAC), in a
# /16 pool on the fake NIC.  gc releases them all; its wall and CPU time,
# and per holder.  Then the same store with every namespace alive (held by
# processes of the test): what gc costs a node that holds them.
# Usage: sudo contrib/bench/gc.sh [N]   (GC_BASELINE=<other roce-hook>: the
# same runs with that build, interleaved)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
ROUNDS=${GC_ROUNDS:-3}
bench_begin gc 10000 "$@"
# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"

NIC=$(fake_nic 9000)
fake_hca mlx5_0 0 "$NIC"
POLICY=$T/policy.json
write_policy "$T/p0.json" off "mlx5_0 $NIC 10"
# The state where a node keeps it (/var/lib, not /tmp: see start.sh).
SD=$(mktemp -d /var/lib/roce-bench.XXXXXX)
defer "rm -rf $SD"
jq --arg sd "$SD/state" '.state_dir = $sd | .hcas.mlx5_0.subnet = "198.18.0.0/16"
  | .hcas.mlx5_0.pool = "198.18.16.1-198.18.127.254"' "$T/p0.json" > "$POLICY"
PARENT=$(cat "/sys/class/net/$NIC/ifindex")

# gc_once BIN: wall and CPU ms of one gc over a fresh dead store.
gc_once () {
  local bin=$1 t0 t1 out
  dead_store "$SD/state" "$N" "$PARENT"
  t0=$(date +%s%N)
  out=$( { /usr/bin/time -f '%U %S' "$bin" --config "$POLICY" gc > "$T/gc.out"; } 2>&1) ||
    { echo "bench/gc: gc failed: $(cat "$T/gc.out")" >&2; exit 1; }
  t1=$(date +%s%N)
  grep -q "released $N leases\|released $N lease" "$T/gc.out" ||
    { echo "bench/gc: gc did not release the $N leases: $(tail -2 "$T/gc.out")" >&2; exit 1; }
  awk -v w="$(((t1 - t0) / 1000000))" -v n="$N" '{ c = ($1 + $2) * 1000; printf "%d %d %.3f %.3f\n", w, c, w / n, c / n }' <<<"$out"
}

bins=("$BUILD/roce-hook")
[ -n "${GC_BASELINE:-}" ] && bins=("$GC_BASELINE" "$BUILD/roce-hook")
printf 'gc of %d holders whose namespaces are gone (wall ms, CPU ms, wall and CPU ms a holder)\n' "$N"
for ((r = 0; r < ROUNDS; r++)); do
  for b in "${bins[@]}"; do
    printf "  %-40s %s\n" "$b" "$(gc_once "$b")"
  done
done
