#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The network's cost, on the fake host of the tests (a veth end as the NIC,
# MTU 9000), through real runc:
#   - the hook's own time (its process, exec included) for an annotated
#     start, its poststop, and an unannotated start;
#   - the wall time of `runc run -d` (create + hooks + start) with and
#     without the annotation, and the difference;
#   - beside it, Debian's CNI `macvlan` plugin with `host-local` IPAM doing
#     the same ADD (mode bridge, MTU 9000, an address from a pool, one route)
#     into a network namespace, and its DEL.
# Usage: sudo contrib/bench/net.sh [N]   (N runs of each, default 30)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin net 30 "$@"

# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
CNI_DIR=${CNI_DIR:-/usr/lib/cni}
[ -x "$CNI_DIR/macvlan" ] && [ -x "$CNI_DIR/host-local" ] ||
  { echo "bench/net: needs containernetworking-plugins ($CNI_DIR/macvlan)" >&2; exit 1; }

net_host 1

# The hook, timed from the inside of the runtime's call (fork/exec included).
REAL_HOOK=$HOOK
cat > "$T/timed-hook" <<EOF
#!/bin/bash
s=\${EPOCHREALTIME/./}
"$REAL_HOOK" "\$@"
rc=\$?
e=\${EPOCHREALTIME/./}
echo "\${@: -1} \$((e - s)) \$(cat "$T/kind" 2>/dev/null)" >> "$T/hook-times"
exit \$rc
EOF
chmod +x "$T/timed-hook"
HOOK=$T/timed-hook net_bundle "$T/ann" roce.io/hca=mlx5_0 'sleep 60'
HOOK=$T/timed-hook ANNOTATIONS="" CMD='sleep 60' make_bundle "$T/plain" "$POLICY"

: > "$T/run-plain"; : > "$T/run-ann"; : > "$T/del-plain"; : > "$T/del-ann"
for ((i = 0; i < N; i++)); do
  for kind in plain ann; do
    id=bench-$kind-$i
    echo "$kind" > "$T/kind"
    s=$(now_us)
    runtime run -d --bundle "$T/$kind" "$id" </dev/null >/dev/null 2>"$T/err" ||
      { echo "bench/net: runc run ($kind) failed: $(cat "$T/err")" >&2; exit 1; }
    e=$(now_us)
    echo $((e - s)) >> "$T/run-$kind"
    s=$(now_us)
    runtime delete -f "$id" >/dev/null 2>&1
    e=$(now_us)
    echo $((e - s)) >> "$T/del-$kind"
  done
done
[ -z "$(held_addresses)" ] || { echo "bench/net: leases left: $(held_addresses)" >&2; exit 1; }
awk '$1 == "prestart" && $3 == "ann" {print $2}' "$T/hook-times" > "$T/hook-start"
awk '$1 == "poststop" && $3 == "ann" {print $2}' "$T/hook-times" > "$T/hook-stop"
awk '$1 == "prestart" && $3 == "plain" {print $2}' "$T/hook-times" > "$T/hook-plain"

# CNI: the same ADD into a fresh network namespace each time.
cni_json
: > "$T/cni-add"; : > "$T/cni-del"
for ((i = 0; i < N; i++)); do
  ns=rb$(rand_hex 3)
  ip netns add "$ns"
  cni () {
    CNI_COMMAND=$1 CNI_CONTAINERID=$ns CNI_NETNS=/run/netns/$ns CNI_IFNAME=roce0 \
      CNI_PATH=$CNI_DIR "$CNI_DIR/macvlan" < "$T/cni.json" > "$T/cni.out" 2>&1
  }
  s=$(now_us)
  cni ADD || { echo "bench/net: CNI ADD failed: $(cat "$T/cni.out")" >&2; ip netns del "$ns"; exit 1; }
  e=$(now_us)
  echo $((e - s)) >> "$T/cni-add"
  [ "$i" -gt 0 ] || ip netns exec "$ns" ip -o -4 addr show roce0 | grep -q "198.18.10.100/24" ||
    { echo "bench/net: CNI ADD made no roce0 198.18.10.100" >&2; ip netns del "$ns"; exit 1; }
  s=$(now_us)
  cni DEL || true
  e=$(now_us)
  echo $((e - s)) >> "$T/cni-del"
  ip netns del "$ns"
done

added=$(( $(median_us "$T/run-ann") - $(median_us "$T/run-plain") ))
printf 'roce-hook network benchmark: %d runs each, median / p90 in ms (%s, %s cores)\n' \
  "$N" "$(uname -r)" "$(nproc)"
printf '  %-52s %s\n' "hook, annotated start (prestart, 1 HCA)" "$(stats "$T/hook-start")"
printf '  %-52s %s\n' "hook, annotated poststop" "$(stats "$T/hook-stop")"
printf '  %-52s %s\n' "hook, unannotated start" "$(stats "$T/hook-plain")"
printf '  %-52s %s\n' "runc run -d, unannotated (hooks registered)" "$(stats "$T/run-plain")"
printf '  %-52s %s\n' "runc run -d, annotated" "$(stats "$T/run-ann")"
printf '  %-52s %7.2f\n' "added by the annotation (difference of medians)" "$(awk -v a="$added" 'BEGIN {print a / 1000}')"
printf '  %-52s %s\n' "runc delete -f, unannotated" "$(stats "$T/del-plain")"
printf '  %-52s %s\n' "runc delete -f, annotated" "$(stats "$T/del-ann")"
printf '  %-52s %s\n' "CNI macvlan + host-local, ADD" "$(stats "$T/cni-add")"
printf '  %-52s %s\n' "CNI macvlan + host-local, DEL" "$(stats "$T/cni-del")"
