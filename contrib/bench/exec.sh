#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# roce-runtime's cost on `exec --process F` (how containerd starts every
# `kubectl exec` process), through real runc on the fake host:
#   - a plain container: direct runc, and through the shim (one record lookup);
#   - an annotated container through the shim (the record is read and the
#     process file rewritten with CAP_IPC_LOCK, memlock and the NCCL defaults).
# Usage: sudo contrib/bench/exec.sh [N]   (N execs of each, default 30)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin exec 30 "$@"

bench_host warn
export ROCE_HOOK_CONFIG=$POLICY
runtime_opts

# start NAME ANNOTATED: a long-lived container, started through the shim.
start () {
  local id=$1 b=$T/b-$1
  if [ "$2" = 1 ]; then
    HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 600' make_bundle "$b" "$POLICY"
  else
    HOOKS=0 CMD='sleep 600' make_bundle "$b" "$POLICY"
  fi
  "$SHIM" "${RUNTIME_OPTS[@]}" run -d --bundle "$b" "$id" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench/exec: start $id: $(cat "$T/err")" >&2; exit 1; }
  defer "$SHIM ${RUNTIME_OPTS[*]} delete -f $id"
}

# one_exec BIN ID: wall time in µs of one `exec --process F ID`.
one_exec () {
  local bin=$1 id=$2 f=$T/process.json t0 t1
  printf '{"args":["true"],"env":["PATH=/bin"],"cwd":"/","user":{"uid":0,"gid":0}}' > "$f"
  t0=${EPOCHREALTIME/./}
  "$bin" "${RUNTIME_OPTS[@]}" exec --process "$f" "$id" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench/exec: exec in $id failed: $(cat "$T/err")" >&2; exit 1; }
  t1=${EPOCHREALTIME/./}
  echo $((t1 - t0))
}

median () { sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]/1000}'; }

plain=bench-plain-$(rand_hex 3) ann=bench-ann-$(rand_hex 3)
start "$plain" 0
start "$ann" 1
for ((i = 0; i < N; i++)); do one_exec "$OCI_RUNTIME" "$plain" >> "$T/direct"; done
for ((i = 0; i < N; i++)); do one_exec "$SHIM" "$plain" >> "$T/shim-0"; done
for ((i = 0; i < N; i++)); do one_exec "$SHIM" "$ann" >> "$T/shim-1"; done
d0=$(median < "$T/direct"); s0=$(median < "$T/shim-0"); s1=$(median < "$T/shim-1")
printf '%-52s %10s\n' "what (median of $N, ms)" "wall"
printf '%-52s %10s\n' "runc exec --process, plain container, plain runc" "$d0"
printf '%-52s %10s\n' "the same through roce-runtime" "$s0"
printf '%-52s %10s\n' "annotated container through roce-runtime" "$s1"
awk -v a="$d0" -v b="$s0" 'BEGIN {printf "%-52s %10.2f\n", "shim added, plain container", b - a}'
awk -v a="$d0" -v b="$s1" 'BEGIN {printf "%-52s %10.2f\n", "shim added, annotated (record + rewrite)", b - a}'
