#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The lease store lock's hold time (nothing slow runs while
# leases.lock is held), read from log_file, where every hold is a line
# ("lease store ...: lock held X ms"), across:
#   - quiet: annotated starts and stops through runc's hooks, gc between;
#   - a crowd: 100 processes holding 19,000 fds each (what a root container
#     with a large nofile limit can make), the same starts, stops and gc,
#     with a holder the kernel cannot be asked about (no namespace id, as an
#     earlier version wrote it) that gc and a start asking for its address
#     scan for (outside the lock, at most GC_SCAN_MS / NETNS_SCAN_MS);
#   - an attack: a non-root, non-dumpable process swapping an fd between a
#     held namespace and a FIFO (tests/helpers/fifo-swap), starts asking
#     for the address it holds (refused), other starts, gc.
# Also gc's wall time in each (its scan runs outside the lock, bounded).
# Usage: sudo contrib/bench/lock.sh [N]   (N starts per phase, default 30)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin lock 30 "$@"

# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
SWAP=$BUILD/helpers/fifo-swap
[ -x "$SWAP" ] || { echo "bench/lock: needs $SWAP (make the helpers)" >&2; exit 1; }

net_host 1
jq '.lock_timeout_ms = 5000' "$POLICY" > "$POLICY.new" && mv "$POLICY.new" "$POLICY"
net_bundle "$T/ann" roce.io/hca=mlx5_0 'sleep 60'
net_bundle "$T/clash" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' true

touch "$T/hook.log"
# The holds logged since line FROM of log_file, in ms, one a line.
holds () { tail -n +"$1" "$T/hook.log" | sed -n 's/.*lock held \([0-9.]*\) ms.*/\1/p'; }
# stats: "n, median / p99 / max" of the ms values on stdin.
stats () {
  sort -n | awk '{v[NR]=$1} END {
    if (NR == 0) { print "n/a"; exit }
    printf "%5d  %8.3f / %8.3f / %8.3f", NR, v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.999)], v[NR] }'
}

# phase NAME: N starts and stops (a gc every 5), the holds and gc's times.
phase () {
  local name=$1 from i id s e
  from=$(($(wc -l < "$T/hook.log") + 1))
  : > "$T/gc-$name"
  for ((i = 0; i < N; i++)); do
    id=bench-$name-$i
    runtime run -d --bundle "$T/ann" "$id" </dev/null >/dev/null 2>"$T/err" ||
      { echo "bench/lock: start ($name) failed: $(cat "$T/err")" >&2; exit 1; }
    if [ -n "${CLASH2:-}" ]; then
      runtime run --bundle "$T/clash2" "$id-c" </dev/null >/dev/null 2>&1 &&
        { echo "bench/lock: a start took the address of a running container" >&2; exit 1; }
      runtime delete -f "$id-c" >/dev/null 2>&1
    fi
    if [ -n "${CLASH:-}" ]; then
      runtime run --bundle "$T/clash" "$id-c" </dev/null >/dev/null 2>&1 &&
        { echo "bench/lock: a start took the address the attacker's namespace holds" >&2; exit 1; }
      runtime delete -f "$id-c" >/dev/null 2>&1
    fi
    runtime delete -f "$id" >/dev/null 2>&1
    if ((i % 5 == 4)); then
      s=$(now_us)
      "$HOOK" --config "$POLICY" gc >/dev/null || { echo "bench/lock: gc failed" >&2; exit 1; }
      e=$(now_us)
      echo "$(( (e - s) / 1000 ))" >> "$T/gc-$name"
    fi
  done
  holds "$from" > "$T/holds-$name"
}

phase quiet

# The crowd: 100 processes, 19,000 fds each (the hard nofile limit here is
# 20,000), held until the end.
python3 - "$T/crowd-ready" <<'PY' &
import os, sys, time, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
per = min(19000, hard - 64)
fd = os.open("/dev/null", os.O_RDONLY)
kids = []
for _ in range(100):
    pid = os.fork()
    if pid == 0:
        for _ in range(per):
            os.dup(fd)
        time.sleep(3600)
        os._exit(0)
    kids.append(pid)
open(sys.argv[1], "w").close()
try:
    time.sleep(3600)
finally:
    for k in kids:
        os.kill(k, 9)
PY
CROWD=$!
defer "pkill -9 -P $CROWD; kill -9 $CROWD"
for ((i = 0; i < 600; i++)); do [ -e "$T/crowd-ready" ] && break; sleep 0.1; done
sleep 2 # the children's dups
fds=$(ls "/proc/$(pgrep -P "$CROWD" | head -1)/fd" | wc -l)
[ "$fds" -gt 10000 ] || { echo "bench/lock: the crowd has $fds fds a process" >&2; exit 1; }
# A holder the kernel cannot be asked about (written by an earlier version,
# without the namespace's id): gc and a colliding start scan for it, outside
# the lock, through the crowd.
net_bundle "$T/legacy" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.160' 'sleep 600'
runtime run -d --bundle "$T/legacy" legacy </dev/null >/dev/null 2>"$T/err" ||
  { echo "bench/lock: legacy container: $(cat "$T/err")" >&2; exit 1; }
defer "runtime delete -f legacy"
for f in "$T"/state/holders/*; do
  grep -q '"198.18.10.160"' "$f" && jq -c 'del(.nsid)' "$f" > "$f.x" && mv "$f.x" "$f"
done
grep -l '"nsid"' "$T"/state/holders/* | xargs -r grep -l '"198.18.10.160"' | grep -q . &&
  { echo "bench/lock: the legacy holder still has its nsid" >&2; exit 1; }
net_bundle "$T/clash2" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.160' true
CLASH2=1 phase crowd
runtime delete -f legacy >/dev/null 2>&1
{ pkill -9 -P "$CROWD"; kill -9 "$CROWD"; wait "$CROWD"; } 2>/dev/null

# The attack: a container's namespace held by the attacker after its stop.
runtime run -d --bundle "$T/clash" held >/dev/null 2>"$T/err" || true
sed -i 's|"true"\]|"sleep 60"]|' "$T/clash/config.json"
runtime delete -f held >/dev/null 2>&1
runtime run -d --bundle "$T/clash" held </dev/null >/dev/null 2>"$T/err" ||
  { echo "bench/lock: the attacker's container: $(cat "$T/err")" >&2; exit 1; }
mkfifo -m 0600 "$T/fifo"
"$SWAP" "/proc/$(container_pid held)/ns/net" "$T/fifo" 65534 "$T/swap-ready" </dev/null >/dev/null 2>&1 &
ATTACKER=$!
defer "kill -9 $ATTACKER"
for ((i = 0; i < 100; i++)); do [ -e "$T/swap-ready" ] && break; sleep 0.02; done
runtime delete -f held >/dev/null 2>&1
sed -i 's|"sleep 60"\]|"true"]|' "$T/clash/config.json"
CLASH=1 phase attack
{ kill -9 "$ATTACKER"; wait "$ATTACKER"; } 2>/dev/null

printf 'roce-hook lease store lock: hold time, ms: count, median / p99 / max (%s, %s cores)\n' \
  "$(uname -r)" "$(nproc)"
printf '  %-58s %s\n' "quiet: $N starts and stops, $((N / 5)) gc" "$(stats < "$T/holds-quiet")"
printf '  %-58s %s\n' "crowd of 100 x 19,000 fds, $N colliding starts refused" "$(stats < "$T/holds-crowd")"
printf '  %-58s %s\n' "fifo-swap attack, $N colliding starts refused: the same" "$(stats < "$T/holds-attack")"
printf '  %-58s %s\n' "longest hold of all" "$(cat "$T"/holds-* | stats | awk '{print $NF}') ms"
printf 'gc wall time, ms: count, median / p99 / max\n'
for p in quiet crowd attack; do
  printf '  %-58s %s\n' "$p" "$(stats < "$T/gc-$p")"
done
