#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: every benchmark script in contrib/bench/ (each prints its own
# table).  Speed and memory targets live here, not in timed tests.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}
rc=0
for b in "$ROOT"/contrib/bench/*.sh; do
  [ "$(basename "$b")" = bench.sh ] && continue
  echo "== $(basename "$b" .sh)"
  bash "$b" "${BENCH_N:-30}" || rc=1
done
exit $rc
