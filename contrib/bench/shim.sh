#!/usr/bin/env bash
# roce-runtime's cost, through real runc on the fake host:
#   - `runc run` of an unannotated bundle, directly and through the shim;
#   - the same for an annotated bundle (the shim reads the policy, lists the
#     devices, rewrites config.json; the hook then does its work in both).
# Usage: sudo contrib/bench/shim.sh [N]   (N runs of each, default 30)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}
N=${1:-${BENCH_N:-30}}

# shellcheck source=../../tests/helpers/privns.sh
source "$ROOT/tests/helpers/privns.sh"
roce_in_private_ns bench-shim "$0" "$N"


NIC=$(fake_nic 9000)
fake_hca mlx5_0 0 "$NIC"
fake_rdma_cm
POLICY=$T/policy.json
write_policy "$POLICY" warn "mlx5_0 $NIC 10"
export ROCE_HOOK_CONFIG=$POLICY

# one_run MODE ANNOTATED: wall time in µs of one `run` to completion.
one_run () {
  local mode=$1 ann=$2 id b t0 t1
  id=bench-$(rand_hex 4)
  b=$T/b-$id
  if [ "$ann" = 1 ]; then
    HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=true make_bundle "$b" "$POLICY"
  else
    HOOKS=0 CMD=true make_bundle "$b" "$POLICY"
  fi
  local bin=$OCI_RUNTIME
  [ "$mode" = shim ] && bin=$SHIM
  runtime_opts
  t0=${EPOCHREALTIME/./}
  "$bin" "${RUNTIME_OPTS[@]}" run --bundle "$b" "$id" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench/shim: $mode run failed: $(cat "$T/err")" >&2; exit 1; }
  t1=${EPOCHREALTIME/./}
  runtime delete -f "$id" >/dev/null 2>&1
  rm -rf "$b"
  echo $((t1 - t0))
}

median () { sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]/1000}'; }

for mode in direct shim; do
  for ann in 0 1; do
    [ "$mode" = direct ] && [ "$ann" = 1 ] && continue
    : > "$T/$mode-$ann"
    for ((i = 0; i < N; i++)); do one_run "$mode" "$ann" >> "$T/$mode-$ann"; done
  done
done
d0=$(median < "$T/direct-0"); s0=$(median < "$T/shim-0"); s1=$(median < "$T/shim-1")
printf '%-52s %10s\n' "what (median of $N, ms)" "wall"
printf '%-52s %10s\n' "runc run, unannotated, plain runc" "$d0"
printf '%-52s %10s\n' "runc run, unannotated, through roce-runtime" "$s0"
printf '%-52s %10s\n' "runc run, annotated, through roce-runtime (+hook)" "$s1"
awk -v a="$d0" -v b="$s0" 'BEGIN {printf "%-52s %10.2f\n", "shim added, unannotated", b - a}'
awk -v a="$d0" -v b="$s1" 'BEGIN {printf "%-52s %10.2f\n", "shim + hook added, annotated", b - a}'
