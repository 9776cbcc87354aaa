#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cluster addressing at fleet scale (claims among many held blocks, storms of
# fresh nodes), on the fake host of
# the tests with a local three-member etcd (127.0.0.1 ports, stopped at the
# end); one rail subnet 198.18.0.0/16 cut in blocks of 4 (16,384 blocks):
#   - one start on a fresh node (a state_dir of its own) that must claim a
#     block, with 100 / 4,000 / 12,000 blocks held by others from the
#     pool's start (as versions that claimed lowest-first left them) and
#     1,000 / 4,000 / 16,000 spread over it;
#   - storms: 24 and 256 fresh nodes starting at once (4,000 held): wall
#     time from the first hook's exec to the last one's end, every start's
#     own wall (p99), duplicates;
#   - the start with a free address in a held block beside node-local
#     (the hook's own time, exec included; goal: within 0.1 ms).
# Starts call the hook directly, as a runtime would, for a process in
# network and mount namespaces of its own (tests/helpers/cluster.sh).
# Usage: sudo contrib/bench/cluster.sh [N]   (N starts of each, default 30)
#   BENCH_ONLY=layout: the rows held from the pool's start alone;
#   HOOK_BASELINE=/other/roce-hook: its claims beside this build's.
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
STORMS=${BENCH_STORMS:-"24 256"}
bench_begin cluster 30 "$@"
# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
# shellcheck source=../../tests/helpers/cluster.sh
source "$ROOT/tests/helpers/cluster.sh"
# The helpers' checks end a benchmark with a message instead of a test.
fail () { echo "bench/cluster: $*" >&2; exit 1; }
skip () { echo "bench/cluster: skipped: $*" >&2; exit 0; }

SUBNET=198.18.0.0/16 POOL=198.18.0.2-198.18.255.254
cluster_host
jq '.hcas.mlx5_0.gateway = "198.18.0.1"' "$NODE_BASE" > "$T/p.tmp" && mv "$T/p.tmp" "$NODE_BASE"
etcd_cluster 3
defer kill_ns_processes
direct_bundle
# Every node of the bench cuts blocks of 4.
bnode () { node_policy "$1" ".cluster.block = 4 | .cluster.etcd.timeout_ms = 10000 ${2:+| $2}"; }

# fill K [start]: blocks held by other nodes ("old-<i>") up to K in all, at
# free places spread over the pool, or (start) the lowest free ones, as
# versions that claimed lowest-first left them (one transaction per 100 keys).
fill () {
  python3 - "${ETCD_URLS[0]}" "$1" "${2:-spread}" <<'PY' || fail "filling etcd to $1"
import base64, json, random, sys, urllib.request
url, want, layout = sys.argv[1], int(sys.argv[2]), sys.argv[3]
b = lambda s: base64.b64encode(s.encode()).decode()
def post(path, body):
    return json.load(urllib.request.urlopen(urllib.request.Request(url + path, json.dumps(body).encode())))
pre = "/roce-hook/blocks/198.18.0.0_16/"
have = set()
key, end = b(pre), b(pre[:-1] + "0")
while True:
    r = post("/v3/kv/range", {"key": key, "range_end": end, "keys_only": True, "limit": "5000"})
    ks = [base64.b64decode(kv["key"]).decode() for kv in r.get("kvs", [])]
    have.update(ks)
    if not r.get("more"):
        break
    key = base64.b64encode(ks[-1].encode() + b"\0").decode()
free = [f for f in range(0, 65536, 4) if pre + "198.18.%d.%d" % (f // 256, f % 256) not in have]
random.seed(28)
if layout != "start":
    random.shuffle(free)
ops = []
for i, f in enumerate(free[:max(0, want - len(have))]):
    val = json.dumps({"node": "old-%d" % (len(have) + i), "since": 1, "size": 4}, separators=(",", ":"))
    ops.append({"requestPut": {"key": b(pre + "198.18.%d.%d" % (f // 256, f % 256)), "value": b(val)}})
ops.append({"requestPut": {"key": b("/roce-hook/geometry/198.18.0.0_16"), "value": b('{"block":4}')}})
for k in range(0, len(ops), 100):
    assert post("/v3/kv/txn", {"success": ops[k:k + 100]}).get("succeeded")
PY
}
held_count () { etcdctl_all get --prefix /roce-hook/blocks/ --keys-only | grep -c .; }

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
timed () { # POLICY ID FILE [HOOK]
  local pid wall cpu rc
  pid=$(ns_process)
  oci_state "$2" "$pid" "$T/db" > "$T/state.json"
  read -r wall cpu rc < <(python3 "$T/run.py" "$T/state.json" "$T/out" "${4:-$HOOK}" --config "$1" prestart)
  [ "$rc" -eq 0 ] || fail "start $2: $(cat "$T/out")"
  echo "$wall" >> "$3"
  echo "$cpu" >> "$3.cpu"
}


p99 () { sort -n "$1" | awk '{v[NR]=$1} END {print v[int(NR * 0.99 + 0.999)]}'; }

# Node-local and cluster-with-a-held-block, alternated (the same load on
# both).  The cluster node claims its blocks ahead with gc (the reserve).
# (Random MACs for the node-local one: both "nodes" share one NIC here, and
# its addresses come from the same pool as the cluster node's, whose MACs
# the addresses derive: the same MAC cannot be on a link twice.)
jq --arg st "$T/state-local" '.state_dir = $st | .fabric.mac_prefix = ""' "$NODE_BASE" > "$T/local.json"
if [ "${BENCH_ONLY:-}" != layout ]; then
held=$(bnode held ".cluster.reserve = $((N + 2)) | .cluster.max_blocks = $((N / 4 + 4))")
"$HOOK" --config "$held" gc > "$T/gc.out" || fail "gc: $(cat "$T/gc.out")"
: > "$T/t-local"; : > "$T/t-held"; : > "$T/t-local.cpu"; : > "$T/t-held.cpu"
for ((i = 0; i < N; i++)); do
  timed "$T/local.json" "l$i" "$T/t-local"
  timed "$held" "h$i" "$T/t-held"
done
kill_ns_processes
: > "$T/ns-pids"
fi

# A claim on a fresh node, with K blocks held by others (spread, or from
# the pool's start: LAYOUT start); the transactions each took (its log
# line's "(try K)") in $T/tries-claim<K><layout>.  With HOOK_BASELINE,
# that build's fresh nodes ("b<K>-<i>") claim beside, one of each in turn
# (which goes first turning), on the same pool: files ...-base.
NC=$((N < 20 ? N : 20))
BASE_HOOK=
if [ -n "${HOOK_BASELINE:-}" ]; then
  mkdir -p "$T/base"
  for b in roce-hook roce-hook-engine; do
    [ -x "$(dirname "$HOOK_BASELINE")/$b" ] && install -m 0755 "$(dirname "$HOOK_BASELINE")/$b" "$T/base/$b"
  done
  BASE_HOOK=$T/base/roce-hook
fi
claims () { # K [LAYOUT]
  local r=$1${2:-} logged
  fill "$1" "${2:-spread}"
  : > "$T/t-claim$r"; : > "$T/t-claim$r.cpu"; : > "$T/t-claim$r-base"; : > "$T/t-claim$r-base.cpu"
  logged=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
  for ((i = 0; i < NC; i++)); do
    if [ -n "$BASE_HOOK" ] && ((i % 2)); then
      timed "$(bnode "b$r-$i")" "b$r-$i" "$T/t-claim$r-base" "$BASE_HOOK"
    fi
    timed "$(bnode "c$r-$i")" "c$r-$i" "$T/t-claim$r"
    if [ -n "$BASE_HOOK" ] && ! ((i % 2)); then
      timed "$(bnode "b$r-$i")" "b$r-$i" "$T/t-claim$r-base" "$BASE_HOOK"
    fi
  done
  tail -c +"$((logged + 1))" "$LOG" > "$T/claims.log"
  sed -n 's/.*claimed block .* for node c[0-9a-z]*-[0-9]* (try \([0-9]*\))$/\1/p' "$T/claims.log" > "$T/tries-claim$r"
  sed -n 's/.*claimed block .* for node b[0-9a-z]*-[0-9]* (try \([0-9]*\))$/\1/p' "$T/claims.log" > "$T/tries-claim$r-base"
  kill_ns_processes
  : > "$T/ns-pids"
  CLAIM_HELD[$r]=$(held_count)
}
# Every block and node record gone: a fresh pool for another layout.
wipe () { etcdctl_all del --prefix /roce-hook/ > /dev/null || fail "etcdctl del"; }
tries () { sort -n "$1" | awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%d / %d / %d", v[int((NR+1)/2)], v[int(NR*0.9+0.999)], v[NR]}'; }

# A storm: C fresh nodes (own state_dirs, processes made first), their
# hooks started at once.
storm () { # C
  local c=$1 i pids=() s e all
  for ((i = 0; i < c; i++)); do
    bnode "st$c-$i" > /dev/null
    pids[$i]=$(ns_process)
    oci_state "st$c-$i" "${pids[$i]}" "$T/db" > "$T/st$c-$i.state"
  done
  : > "$T/t-storm$c"
  local h0 h1 e0 logged
  logged=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
  children_cpu h0
  e0=$(etcd_cpu_us)
  s=${EPOCHREALTIME/./}
  for ((i = 0; i < c; i++)); do
    ( a=${EPOCHREALTIME/./}
      "$HOOK" --config "$T/st$c-$i.json" prestart < "$T/st$c-$i.state" > "$T/out-st$c-$i" 2>&1
      r=$?; b=${EPOCHREALTIME/./}
      echo "$((b - a))" >> "$T/t-storm$c"; exit $r ) &
  done
  STORM_FAILED[$c]=0
  for ((i = 0; i < c; i++)); do wait -n || STORM_FAILED[$c]=$((STORM_FAILED[$c] + 1)); done
  e=${EPOCHREALTIME/./}
  STORM_WALL[$c]=$((e - s))
  children_cpu h1
  STORM_CPU[$c]="$((h1 - h0)) $(($(etcd_cpu_us) - e0))"
  # The transactions each claim took (its log line's "(try K)").
  tail -c +"$((logged + 1))" "$LOG" | sed -n 's/.*claimed block .* for node st[0-9]*-[0-9]* (try \([0-9]*\))$/\1/p' > "$T/tries$c"
  all=$(for ((i = 0; i < c; i++)); do lease_of "$T/st$c-$i.json" "st$c-$i"; done)
  STORM_STARTED[$c]=$(grep -c . <<<"$all")
  STORM_DUPS[$c]=$(sort <<<"$all" | uniq -d | grep -c .)
  # What refused the others, by cause (the text before " vs ").
  cat "$T"/out-st"$c"-* 2>/dev/null | sed 's/^roce-hook: [^:]*: //; s/ vs .*//' | sort | uniq -c | sort -rn | head -3 > "$T/why$c"
  kill_ns_processes
  : > "$T/ns-pids"
}

LOG=$(jq -r .log_file "$NODE_BASE")
# CPU microseconds of this shell's waited children (the storms' hooks, and
# their subshells), and of the etcd members: a storm's CPU over the cores
# is the least wall time its last start can end in.
# (`times` in this shell: in a $(...) it would tell the subshell's own.)
children_cpu () { # VAR
  times > "$T/times"
  printf -v "$1" '%s' "$(sed -n 2p "$T/times" |
    awk '{ split($0, f, /[ ms]+/); print int(((f[1] * 60 + f[2]) + (f[3] * 60 + f[4])) * 1e6) }')"
}
etcd_cpu_us () {
  local p tck sum=0 u sy
  tck=$(getconf CLK_TCK)
  for p in "${ETCD_PIDS[@]}"; do
    read -r u sy < <(awk '{print $14, $15}' "/proc/$p/stat" 2>/dev/null || echo "0 0")
    sum=$((sum + u + sy))
  done
  echo $((sum * 1000000 / tck))
}
declare -A CLAIM_HELD STORM_WALL STORM_STARTED STORM_DUPS STORM_FAILED STORM_CPU
# The layout older versions left (claims lowest-first): 100, 4,000 and
# 12,000 held from the pool's start; then the spread ones.
claims 100 start
claims 4000 start
claims 12000 start
wipe
if [ "${BENCH_ONLY:-}" != layout ]; then
claims 1000
claims 4000
for c in $STORMS; do storm "$c"; done
claims 16000
fi

if [ "${BENCH_ONLY:-}" = layout ]; then
  printf 'roce-hook claims by layout: 198.18.0.0/16 in blocks of 4 (16,384), %d fresh nodes a row%s; wall / CPU median / p90 in ms, transactions p50 / p90 / most (%s, %s cores, etcd %s)\n\n' \
    "$NC" "${BASE_HOOK:+ for each build, interleaved}" "$(uname -r)" "$(nproc)" "$(etcd --version | sed -n 's/^etcd Version: //p')"
  printf '| held from the pool'"'"'s start | this build | %s |\n|---|---|---|\n' "${HOOK_BASELINE:-}"
  for k in 100start 4000start 12000start; do
    printf '| %s | %s (CPU %s), %s | %s |\n' "${k%start}" "$(stats "$T/t-claim$k")" "$(stats "$T/t-claim$k.cpu")" \
      "$(tries "$T/tries-claim$k")" \
      "$([ -s "$T/t-claim$k-base" ] && echo "$(stats "$T/t-claim$k-base") (CPU $(stats "$T/t-claim$k-base.cpu")), $(tries "$T/tries-claim$k-base")")"
  done
  exit 0
fi
diff_us=$(( $(median_us "$T/t-held") - $(median_us "$T/t-local") ))
diff_cpu=$(( $(median_us "$T/t-held.cpu") - $(median_us "$T/t-local.cpu") ))
ms () { awk -v a="$1" 'BEGIN {printf "%.2f", a / 1000}'; }
printf 'roce-hook cluster benchmark: 198.18.0.0/16 in blocks of 4 (16,384), %d starts each, %d fresh nodes per claim row; median / p90 in ms (%s, %s cores, etcd %s, 3 members on loopback)\n\n' \
  "$N" "$NC" "$(uname -r)" "$(nproc)" "$(etcd --version | sed -n 's/^etcd Version: //p')"
printf '| figure | measured | goal |\n|---|---|---|\n'
for k in 100start 4000start 12000start 1000 4000 16000; do
  [ -s "$T/t-claim$k" ] || continue
  printf '| one start on a fresh node that must claim a block, %s held%s (etcd held %s after) | %s (CPU %s), transactions %s | <= 50 ms, flat in the blocks held and their layout |\n' \
    "${k%start}" "$([ "${k%start}" != "$k" ] && echo ' from the pool'"'"'s start')" "${CLAIM_HELD[$k]}" \
    "$(stats "$T/t-claim$k")" "$(stats "$T/t-claim$k.cpu")" "$(tries "$T/tries-claim$k")"
done
for c in $STORMS; do
  printf '| %d fresh nodes starting at once (4,000+ held) | %d of %d started, %d refused, %d duplicates, %s s wall, start p50 / p99 %s / %s ms | all started, distinct, <= %s s wall%s |\n' \
    "$c" "${STORM_STARTED[$c]}" "$c" "${STORM_FAILED[$c]}" "${STORM_DUPS[$c]}" \
    "$(awk -v a="${STORM_WALL[$c]}" 'BEGIN {printf "%.2f", a / 1e6}')" "$(ms "$(median_us "$T/t-storm$c")")" \
    "$(ms "$(p99 "$T/t-storm$c")")" "$([ "$c" -le 24 ] && echo 3 || echo 10)" "$([ "$c" -le 24 ] || echo ', p99 claim <= 1 s')"
done
for c in $STORMS; do
  read -r hc ec <<<"${STORM_CPU[$c]}"
  printf '  storm of %d: CPU of its starts %s s, of etcd %s s; over %s cores, the last start ends %s s after the first at the least; a claim took %s transactions (p50 / p99 / most, of %s claims logged)\n' \
    "$c" "$(awk -v a="$hc" 'BEGIN {printf "%.2f", a / 1e6}')" "$(awk -v a="$ec" 'BEGIN {printf "%.2f", a / 1e6}')" \
    "$(nproc)" "$(awk -v a="$hc" -v b="$ec" -v n="$(nproc)" 'BEGIN {printf "%.2f", (a + b) / n / 1e6}')" \
    "$(sort -n "$T/tries$c" | awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%d / %d / %d", v[int((NR+1)/2)], v[int(NR*0.99+0.999)], v[NR]}')" \
    "$(grep -c . "$T/tries$c")"
done
for c in $STORMS; do
  [ -s "$T/why$c" ] && sed "s/^/  refusals in the storm of $c: /" "$T/why$c"
done
printf '| start, node-local (no cluster) | %s (CPU %s) | |\n' "$(stats "$T/t-local")" "$(stats "$T/t-local.cpu")"
printf '| start, cluster, free address in a held block | %s (CPU %s) | |\n' "$(stats "$T/t-held")" "$(stats "$T/t-held.cpu")"
printf '| difference of medians (wall / CPU) | %s / %s ms | <= 0.10 ms |\n' "$(ms "$diff_us")" "$(ms "$diff_cpu")"
