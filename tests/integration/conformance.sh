# SPDX-License-Identifier: Apache-2.0
# roce-runtime is runc, by suites this project did not write: make check's
# short share of `make conformance` (tests/conformance/run.sh, the whole of
# both suites in make check-all), runtime-tools' and runc's own tests run
# with runc and through roce-runtime and compared point by point; and the
# comparison itself fails where it must.  The suites come from make
# conformance-fetch's cache: without it the share is skipped with the
# cache's reason.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
# The suites run runc themselves, and the shim over it: once.
[ "$OCI_RUNTIME" = runc ] || return 0

CONFORMANCE=$ROOT/tests/conformance
CONFORMANCE_CACHE=${ROCE_CONFORMANCE_CACHE:-/var/cache/roce-hook/conformance}

# need_suite NAME: the suite built in the cache, else skip with its reason.
need_suite () {
  [ -f "$CONFORMANCE_CACHE/$1.ready" ] && return 0
  skip "$1 not in $CONFORMANCE_CACHE: $(cat "$CONFORMANCE_CACHE/$1.reason" 2>/dev/null || echo "make conformance-fetch")"
}

# run_share SUITE FILES: those files of SUITE with runc and roce-runtime;
# the comparison's lines in $T/<suite>.log, which must end the same.
run_share () {
  local suite=$1 files=$2 rc=0
  ROCE_CONFORMANCE_OUT=$T/out ROCE_CONFORMANCE_WAYS="runc roce-runtime" ROCE_CONFORMANCE_FILTER=$files \
    ROCE_BUILD=$BUILD "$CONFORMANCE/run.sh" "$suite" > "$T/$suite.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] || fail "run.sh $suite ($files) ended $rc: $(grep -v '^\.*$' "$T/$suite.log" | tail -20)"
  assert_file_contains "$T/$suite.log" "conformance: $suite: roce-runtime as runc"
}

# ok_count SUITE WAY: the points WAY passed, from the comparison's line.
ok_count () {
  sed -n "s/^conformance: $1: [0-9]* files: .*\\b$2 \\([0-9]*\\) ok,.*/\\1/p" "$T/$1.log" | head -1
}

test_runtime_tools_validation_share_passes_through_the_shim_as_with_runc () {
  need_root
  need_suite runtime-tools
  run_share runtime-tools "default hostname"
  local n
  n=$(ok_count runtime-tools runc)
  # default.t alone passes some 270 points with runc: a share that ran.
  [ "${n:-0}" -ge 250 ] || fail "runc passed ${n:-no} points: $(grep 'files:' "$T/runtime-tools.log")"
  [ "$(ok_count runtime-tools roce-runtime)" = "$n" ] || fail "$(grep 'files:' "$T/runtime-tools.log")"
}

test_runc_bats_share_passes_through_the_shim_as_with_runc () {
  need_root
  need_suite runc
  need_cmd bats
  need_cmd script
  run_share runc "kill state"
  local n
  n=$(ok_count runc runc)
  [ "${n:-0}" -ge 2 ] || fail "runc passed ${n:-no} tests: $(grep 'files:' "$T/runc.log")"
  [ "$(ok_count runc roce-runtime)" = "$n" ] || fail "$(grep 'files:' "$T/runc.log")"
}

# fake_run DIR WAY FILE RC TAP: one suite file's result as run.sh leaves it.
fake_run () {
  mkdir -p "$1/$2"
  echo "$4" > "$1/$2/$3.rc"
  printf '%s\n' "$5" > "$1/$2/$3.tap"
}

# The comparison fails on each thing it is there for, and only on those.
test_compare_fails_on_a_lost_point_a_changed_status_and_changed_output () {
  need_cmd python3
  local d=$T/cmp rc
  local base=$'TAP version 13\nok 1 - a\nok 2 - b\n# expect: 1, actual: 1\nok 3 # SKIP c not set\n1..3'
  # The same points, numbered in another order (runtimetest walks Go maps).
  fake_run "$d/same" runc f 0 "$base"
  fake_run "$d/same" shim f 0 $'TAP version 13\nok 1 - b\n# expect: 1, actual: 1\nok 2 - a\nok 3 # SKIP c not set\n1..3'
  python3 "$CONFORMANCE/compare.py" t "$d/same" runc shim > "$T/same.out" || fail "the same results differ: $(cat "$T/same.out")"
  assert_file_contains "$T/same.out" "conformance: t: 1 files: runc 2 ok, 0 not ok, 1 skipped; shim 2 ok, 0 not ok, 1 skipped"
  # A point runc passes and the shim fails.
  fake_run "$d/lost" runc f 0 "$base"
  fake_run "$d/lost" shim f 0 $'TAP version 13\nok 1 - a\nnot ok 2 - b\nok 3 # SKIP c not set\n1..3'
  rc=0; python3 "$CONFORMANCE/compare.py" t "$d/lost" runc shim > "$T/lost.out" || rc=$?
  [ $rc -eq 1 ] || fail "a lost point: exit $rc: $(cat "$T/lost.out")"
  assert_file_contains "$T/lost.out" "conformance: DIFF: t: f: b: ok with runc, not ok through shim"
  # A file that ends with another status.
  fake_run "$d/status" runc f 0 "$base"
  fake_run "$d/status" shim f 1 "$base"
  rc=0; python3 "$CONFORMANCE/compare.py" t "$d/status" runc shim > "$T/status.out" || rc=$?
  [ $rc -eq 1 ] || fail "a changed status: exit $rc: $(cat "$T/status.out")"
  assert_file_contains "$T/status.out" "conformance: DIFF: t: f ends 0 with runc, 1 through shim"
  # A passing point whose output from inside the container changed.
  fake_run "$d/output" runc f 0 "$base"
  fake_run "$d/output" shim f 0 "${base/actual: 1/actual: 2}"
  rc=0; python3 "$CONFORMANCE/compare.py" t "$d/output" runc shim > "$T/output.out" || rc=$?
  [ $rc -eq 1 ] || fail "changed output: exit $rc: $(cat "$T/output.out")"
  assert_file_contains "$T/output.out" "conformance: DIFF: t: f: b: output changed through shim: # expect: 1, actual: 2"
  # A point runc itself fails and the shim passes: said, never a failure.
  fake_run "$d/flaky" runc f 0 "${base/ok 1 - a/not ok 1 - a}"
  fake_run "$d/flaky" shim f 0 "$base"
  python3 "$CONFORMANCE/compare.py" t "$d/flaky" runc shim > "$T/flaky.out" || fail "runc's own failure failed the run: $(cat "$T/flaky.out")"
  assert_file_contains "$T/flaky.out" "conformance: note: t: f: a: not ok with runc, ok through shim (the reference's own failure)"
}

run_tests
