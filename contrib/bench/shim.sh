#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# roce-runtime's own cost (the two shim rows: pass-through and annotated), side by side in one run,
# on the fake host of the tests (a veth end as the NIC, one HCA, qos warn):
#
#   whole life of `run` of `true` (run to completion, then a plain runc
#   delete), the way contrib/bench/start.sh times it:
#     - plain runc, unannotated bundle (the base);
#     - through roce-runtime, unannotated (pass-through): goal <= +1 ms
#       (a whole life's p25..p75 spans ~10 ms here: the shim-alone plain
#       create below is the same path's cost without runc's noise);
#     - through roce-runtime, annotated: goal <= +5 ms over the base.  The
#       shim makes the network itself (a namespace of its own, the QoS gate,
#       the macvlan and lease) and edits config.json, runs runc as its child
#       and releases once it returns: runc spawns no hook.
#   the shim alone, its runtime an empty C program (so no runc in the figure),
#   the empty program run directly subtracted: `state` (a call with no
#   bundle), `create` of the unannotated bundle, `create` of the annotated
#   one (policy, devices, the network, record, config.json and back; the
#   lease it leaves, a dead namespace's since the empty program never
#   joined it, goes with gc between rounds, untimed), and a foreground `run`
#   of it (the same, then the release the annotated whole life ends with).
#
# Runs are interleaved, one of each a round, with a pause between whole
# lives (the kernel tears a container's namespaces down after runc returns);
# medians in ms, a whole life's difference the median of the rounds'
# differences from a base run of the same round (before the shim's runs in
# one round, after them in the next).
# Usage: sudo contrib/bench/shim.sh [N]   (N rounds of the shim alone,
#   default 30; whole lives 4N, or SHIM_LIVES rounds)
#   SHIM_BASELINE=/path/to/other/roce-runtime: the same shim rows for that
#   build too (its own roce-hook beside it), in the same rounds, and the
#   ratios (this build over that one).
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin shim 30 "$@"

bench_host warn
bench_state_dir
export ROCE_HOOK_CONFIG=$POLICY
runtime_opts

bench_empty shim
# The same policy, but its runtime is the empty program.
sed "s|\"runtime\": \"[^\"]*\"|\"runtime\": \"$T/empty\"|" "$POLICY" > "$T/policy-empty.json"

# No hooks in the bundles: the shim adds its own to the annotated one.
HOOKS=0 CMD=true make_bundle "$T/plain" "$POLICY"
HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=true make_bundle "$T/ann-orig" "$POLICY"
# For the shim alone: the annotated config.json restored before each create.
mkdir -p "$T/ann-alone"
ln -s "$T/ann-orig/rootfs" "$T/ann-alone/rootfs"

us () { echo "${EPOCHREALTIME/./}"; }
median () { sort -n "$1" | awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%.2f", v[int((NR+1)/2)]/1000}'; }
minus () { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.2f", a - b}'; }
# paired, paired_q, paired_ci: differences of whole lives, round by round.
# shellcheck source=paired.bash
source "$ROOT/contrib/bench/paired.bash"

# life FILE BIN BUNDLE: one whole life, its wall time (µs) appended to FILE.
life () {
  local f=$1 bin=$2 b=$3 id t0 t1
  id=bs-$(rand_hex 4)
  sleep 0.05
  t0=$(us)
  "$bin" "${RUNTIME_OPTS[@]}" run --bundle "$b" "$id" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench/shim: $bin run ($b): $(cat "$T/err")" >&2; runtime delete -f "$id" >/dev/null 2>&1; exit 1; }
  runtime delete -f "$id" >/dev/null 2>&1
  t1=$(us)
  echo $((t1 - t0)) >> "$f"
}

# alone FILE BIN ARGS...: the shim (runtime: the empty program), wall time (µs).
alone () {
  local f=$1 bin=$2 t0 t1
  shift 2
  t0=$(us)
  ROCE_HOOK_CONFIG=$T/policy-empty.json "$bin" "${RUNTIME_OPTS[@]}" "$@" </dev/null >/dev/null 2>"$T/err" ||
    { echo "bench/shim: shim alone $*: $(cat "$T/err")" >&2; exit 1; }
  t1=$(us)
  echo $((t1 - t0)) >> "$f"
}

BASELINE=${SHIM_BASELINE:-}
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || { echo "bench/shim: SHIM_BASELINE $BASELINE: not executable" >&2; exit 1; }
for f in base pass ann empty state create-plain create-ann run-ann; do : > "$T/t-$f"; : > "$T/b-$f"; done
# Whole lives get LIVES rounds (4N by default), the shim alone N: a whole
# life's difference is the median of a distribution 10 ms wide (p25..p75),
# whose 95% CI is about +-2 ms at 60 rounds and +-1 ms at 240 (two runs
# of the same plain life gave medians 1.9 ms apart at 60); the shim alone
# is within 0.1 ms at 30.
LIVES=${SHIM_LIVES:-$((4 * N))}
echo "bench/shim: $LIVES rounds of whole lives, $N of the shim alone (about $((LIVES / 3 + 1)) s)" >&2
# round P BIN: the shim rows of one round for BIN, into files $T/P-*.
round () {
  local p=$1 bin=$2
  life "$T/$p-pass" "$bin" "$T/plain"
  rm -rf "$T/ann" && cp -a "$T/ann-orig" "$T/ann"
  life "$T/$p-ann" "$bin" "$T/ann"
  # The base beside them (before in one round, after in the next).
  if ((i % 2 == 0)); then life "$T/$p-base" "$OCI_RUNTIME" "$T/plain"; fi
  ((i < N)) || return 0
  alone "$T/$p-state" "$bin" state "bs-alone"
  # Its own id: the annotated create's record of bs-alone stays until a
  # delete that never comes here, and a plain create over it is the
  # engine's (it drops that record), not a plain container's.
  alone "$T/$p-create-plain" "$bin" create --bundle "$T/plain" "bs-plain"
  cp "$T/ann-orig/config.json" "$T/ann-alone/config.json"
  alone "$T/$p-create-ann" "$bin" create --bundle "$T/ann-alone" "bs-alone"
  # A foreground run: the same, then config.json back and the release.
  alone "$T/$p-run-ann" "$bin" run --bundle "$T/ann-alone" "bs-run"
  "$HOOK" --config "$POLICY" gc >/dev/null 2>&1
}
for ((i = 0; i < LIVES || i < N; i++)); do
  if ((i % 2 == 1)); then
    life "$T/t-base" "$OCI_RUNTIME" "$T/plain"
    [ -z "$BASELINE" ] || life "$T/b-base" "$OCI_RUNTIME" "$T/plain"
  fi
  if ((i < N)); then
    t0=$(us); "$T/empty" "${RUNTIME_OPTS[@]}" state x </dev/null; t1=$(us); echo $((t1 - t0)) >> "$T/t-empty"
  fi
  # Which build goes first alternates, so neither always follows the base.
  if [ -n "$BASELINE" ] && [ $((i % 2)) = 1 ]; then round b "$BASELINE"; fi
  round t "$SHIM"
  if [ -n "$BASELINE" ] && [ $((i % 2)) = 0 ]; then round b "$BASELINE"; fi
done
# The annotated create did its work (config.json is the caller's again
# once the runtime returns): the network, and the record for exec.
if ! grep -q 'bs-alone: start (roce-runtime): HCAs mlx5_0, the network made before the runtime' "$T/hook.log" ||
   ! grep -q '"NCCL_IB_HCA":"mlx5_0"' "$SD/state/shim/bs-alone.json"; then
  echo "bench/shim: the annotated create made no network or no record" >&2
  exit 1
fi

base=$(median "$T/t-base") empty=$(median "$T/t-empty")
printf 'roce-runtime benchmark: %d rounds of whole lives, %d of the shim alone, medians in ms (%s, %s cores)\n' \
  "$((LIVES > N ? LIVES : N))" "$N" "$(uname -r)" "$(nproc)"
if [ -n "$BASELINE" ]; then
  row () { printf '  %-64s %8s %9s %7s   %s\n' "$@"; }
  row "figure" "ms" "baseline" "ratio" "goal"
else
  row () { printf '  %-64s %8s   %s\n' "$1" "$2" "${5:-}"; }
  row "figure" "ms" "" "" "goal"
fi
# shim_row TEXT KEY FROM GOAL: this build's median of KEY minus FROM, the
# baseline's beside it, and their ratio (n/a when the baseline's is within
# the noise of zero).
shim_row () {
  local t b r
  if [ "$3" = base ]; then
    # Whole lives: paired with the base runs of their own rounds.
    t=$(paired "$T/t-$2" "$T/t-base")
    b=$([ -n "$BASELINE" ] && paired "$T/b-$2" "$T/b-base")
  else
    t=$(minus "$(median "$T/t-$2")" "$3")
    b=$([ -n "$BASELINE" ] && minus "$(median "$T/b-$2")" "$3")
  fi
  r=$([ -n "$BASELINE" ] && awk -v a="$t" -v b="$b" 'BEGIN {if (b >= 0.1) printf "%.2fx", a / b; else print "n/a"}')
  row "$1" "$t" "$b" "$r" "$4"
}
row "runc run of true, whole life, plain runc, unannotated" "$base" "" "" ""
shim_row "roce-runtime pass-through, unannotated runc run, difference" pass base \
  "<= +1 (p25..p75 $(paired_q "$T/t-pass" "$T/t-base"); 95% CI $(paired_ci "$T/t-pass" "$T/t-base"))"
shim_row "roce-runtime + hook, annotated, over plain runc unannotated" ann base \
  "<= +5 (p25..p75 $(paired_q "$T/t-ann" "$T/t-base"); 95% CI $(paired_ci "$T/t-ann" "$T/t-base"))"
row "the shim alone (runtime: an empty program; that run subtracted):" "" "" "" ""
shim_row "  state (no bundle)" state "$empty" ""
# The pass-through's own cost without runc's noise: the same path (the
# front reads config.json and the policy, finds no record, execs the
# runtime), the runtime an empty program.
shim_row "  create, unannotated bundle (the pass-through's own cost)" create-plain "$empty" "<= +1"
shim_row "  create, annotated bundle (policy, devices, network, record, config.json)" create-ann "$empty" ""
shim_row "  run, annotated bundle (the same, then config.json back, the release)" run-ann "$empty" ""
row "  (the empty program itself)" "$empty" "" "" ""
