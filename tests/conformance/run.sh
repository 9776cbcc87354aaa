#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# roce-runtime is runc: two suites this project did not write, each run
# three ways, through a wrapper of its own (a `runc` in a directory of each
# way's) with a pass-through policy (its runtime runc, its state under the
# output directory, no container of the suites asks for RoCE):
#
#   runc                 runc itself
#   roce-runtime         the front, which execs runc for what needs nothing
#   roce-runtime-engine  the engine called directly, which decides every
#                        call again and execs runc
#
# and compared by tests/conformance/compare.py: a test point that passes
# with runc and not through a shim, a suite file (a validation/*.t, a
# .bats) or a runc call inside a passing test that ends with another exit
# status, or a changed line from inside the container, fails the run.
#
#   run.sh [runtime-tools|runc]...     (both without an argument)
#
# The suites come from tests/conformance/fetch.sh's cache (make
# conformance-fetch): Debian's source packages, built there; a suite not
# there is skipped with its reason.  No network: the sources, their
# programs and the images are in the cache.
#
#   runtime-tools  every validation/*.t, RUNTIME=<wrapper>; the wrapper adds
#                  --root <a directory of the way's>
#   runc           every tests/integration/*.bats under a pseudo-terminal
#                  (script(1): tty.bats runs `runc run -t` in the
#                  foreground), RUNC=<wrapper>, --show-output-of-passing-tests
#                  (what each runc call printed and its status); the bats
#                  helpers give each test its own --root
#
# ROCE_BUILD: the build (roce-runtime, roce-runtime-engine); ROCE_CONFORMANCE_OUT:
# the results (default $ROCE_BUILD/conformance: <suite>/<way>/<file>.tap,
# .err, .rc); ROCE_CONFORMANCE_FILTER: only the suite files so named (words:
# `default create`; a word ending in * a prefix); ROCE_CONFORMANCE_WAYS: the
# ways (runc first); ROCE_CONFORMANCE_NICE: their priority (10).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${ROCE_BUILD:-$ROOT/build}
CACHE=${ROCE_CONFORMANCE_CACHE:-/var/cache/roce-hook/conformance}
OUT=${ROCE_CONFORMANCE_OUT:-$BUILD/conformance}
read -r -a WAYS <<<"${ROCE_CONFORMANCE_WAYS:-runc roce-runtime roce-runtime-engine}"
read -r -a FILTER <<<"${ROCE_CONFORMANCE_FILTER:-}"
# A suite file that runs longer than this is ended (and fails).
FILE_TIMEOUT=${ROCE_CONFORMANCE_TIMEOUT:-1800}
# The suites run at low priority: they are long, and the machine is shared.
NICE=${ROCE_CONFORMANCE_NICE:-10}

say () { printf 'conformance: %s\n' "$*"; }

# chosen NAME: whether the filter takes the suite file NAME.
chosen () {
  local f
  [ ${#FILTER[@]} -gt 0 ] || return 0
  for f in "${FILTER[@]}"; do
    # shellcheck disable=SC2053
    [[ $1 == $f ]] && return 0
  done
  return 1
}

# skip SUITE REASON
skip () { say "$1: skip ($2)"; }

# ways_ready: the wrappers, one `runc` per way, and the policy.
ways_ready () {
  local runc way prog
  runc=$(command -v runc) || return 1
  mkdir -p "$OUT/state" "$OUT/sysfs" || return 1
  cat > "$OUT/policy.json" <<JSON
{
  "state_dir": "$OUT/state",
  "sysfs_root": "$OUT/sysfs",
  "runtime": "$runc",
  "hcas": { "mlx5_0": { "subnet": "198.18.250.0/24", "pool": "198.18.250.100-198.18.250.199" } }
}
JSON
  for way in "${WAYS[@]}"; do
    case $way in
      runc) prog=$runc ;;
      roce-runtime | roce-runtime-engine) prog=$BUILD/$way ;;
      *) say "unknown way $way"; return 1 ;;
    esac
    [ -x "$prog" ] || { say "no $prog (make all)"; return 1; }
    mkdir -p "$OUT/bin/$way"
    # ROOT_ARG: --root for runtime-tools, which passes none.
    printf '#!/bin/sh\nROCE_HOOK_CONFIG=%s exec %s ${WRAP_ROOT:+--root "$WRAP_ROOT"} "$@"\n' \
      "$OUT/policy.json" "$prog" > "$OUT/bin/$way/runc"
    chmod +x "$OUT/bin/$way/runc"
  done
}

# run_runtime_tools: every validation/*.t, the ways one after the other for
# each file (the host changes least between them).
run_runtime_tools () {
  local src=$CACHE/runtime-tools/src t name way dir
  for t in "$src"/validation/*/*.t; do
    name=$(basename "$t" .t)
    chosen "$name" || continue
    for way in "${WAYS[@]}"; do
      dir=$OUT/runtime-tools/$way
      mkdir -p "$dir/root"
      (cd "$src" && WRAP_ROOT=$dir/root RUNTIME=$OUT/bin/$way/runc \
        nice -n "$NICE" timeout "$FILE_TIMEOUT" "$t" > "$dir/$name.tap" 2> "$dir/$name.err")
      echo $? > "$dir/$name.rc"
    done
    printf '.'
  done
  echo
}

# run_runc_bats: every tests/integration/*.bats under a pseudo-terminal.
run_runc_bats () {
  local it=$CACHE/runc/src/tests/integration f name way dir
  for f in "$it"/*.bats; do
    name=$(basename "$f" .bats)
    chosen "$name" || continue
    for way in "${WAYS[@]}"; do
      dir=$OUT/runc/$way
      mkdir -p "$dir"
      (cd "$it" && RUNC=$OUT/bin/$way/runc BATS_FILE=$f BATS_OUT=$dir/$name.tap BATS_ERR=$dir/$name.err \
        nice -n "$NICE" timeout "$FILE_TIMEOUT" script -qec \
        'exec bats --tap --show-output-of-passing-tests "$BATS_FILE" > "$BATS_OUT" 2> "$BATS_ERR"' \
        /dev/null < /dev/null > /dev/null 2>&1)
      echo $? > "$dir/$name.rc"
    done
    printf '.'
  done
  echo
}

main () {
  local s rc=0 missing
  [ $# -gt 0 ] || set -- runtime-tools runc
  if [ "$(id -u)" -ne 0 ]; then
    for s in "$@"; do skip "$s" "needs root"; done
    return 0
  fi
  ways_ready || return 1
  for s in "$@"; do
    if [ ! -f "$CACHE/$s.ready" ]; then
      skip "$s" "$(cat "$CACHE/$s.reason" 2>/dev/null || echo "not in $CACHE: make conformance-fetch")"
      continue
    fi
    missing=""
    for c in go jq python3 $([ "$s" = runc ] && echo bats script gcc); do
      command -v "$c" > /dev/null || missing+=" $c"
    done
    [ -z "$missing" ] || { skip "$s" "needs$missing"; continue; }
    rm -rf "${OUT:?}/$s"
    say "$s: ${WAYS[*]} (one dot a file)"
    case $s in
      runtime-tools) run_runtime_tools ;;
      runc) run_runc_bats ;;
      *) say "unknown suite $s"; return 2 ;;
    esac
    python3 "$HERE/compare.py" "$s" "$OUT/$s" "${WAYS[@]}" || rc=1
  done
  return $rc
}

# A mount namespace of its own: what the suites mount goes with it.
if [ -z "${ROCE_CONFORMANCE_NS:-}" ] && [ "$(id -u)" -eq 0 ]; then
  ROCE_CONFORMANCE_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
main "$@"
