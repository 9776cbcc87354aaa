#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fabric steps' cost (per-rail tables, MACs, GIDs, the RFC 5227 probe): the hook's own prestart time (its
# process, exec included) for a 1-HCA container through real runc on the
# fake host, with each new step off and on:
#   off        route_table 0, random MAC, IPv6 link-local on, gid_check off
#   tables     + the per-rail table and its from-rule
#   mac, no ll + the MAC from the address, addr_gen_mode none
#   gid        + the GID room check, the wait (the GID is there at once, as
#                on a host whose kernel adds it before the hook looks) and
#                its record in the lease store
#   all        every step but the probe (the defaults, gid_check warn)
#   dad 100ms  + the RFC 5227 probe of 100 ms (costs its window by design)
# Usage: sudo contrib/bench/fabric.sh [N]   (N runs of each, default 30)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin fabric 30 "$@"

# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
# shellcheck source=../../tests/helpers/fabric.sh
source "$ROOT/tests/helpers/fabric.sh"

net_host 1
gid_table mlx5_0 64
# The container's GIDs as the kernel has them the moment the address is up.
gid_put mlx5_0 1 "$(gid_v4 198.18.10.100)" "IB/RoCE v1" roce0
gid_put mlx5_0 2 "$(gid_v4 198.18.10.100)" "RoCE v2" roce0

REAL_HOOK=$HOOK
printf '#!/bin/bash\ns=${EPOCHREALTIME/./}\n"%s" "$@"\nrc=$?\ne=${EPOCHREALTIME/./}\n[ "${@: -1}" = prestart ] && echo "$((e - s))" >> "%s"\nexit $rc\n' \
  "$REAL_HOOK" "$T/hook-times" > "$T/timed-hook"
chmod +x "$T/timed-hook"
HOOK=$T/timed-hook net_bundle "$T/b" roce.io/hca=mlx5_0 'sleep 60'

set_fabric () { sed -i '/^  "fabric": /d' "$POLICY"; policy_fabric "$1"; }

NAMES=(off tables "mac, no ll" gid all "dad 100ms")
CONFS=(
  '{ "route_table": 0, "mac_prefix": "", "ipv6_link_local": true, "gid_check": "off" }'
  '{ "route_table": 100, "mac_prefix": "", "ipv6_link_local": true, "gid_check": "off" }'
  '{ "route_table": 100, "ipv6_link_local": false, "gid_check": "off" }'
  '{ "route_table": 100, "ipv6_link_local": false, "gid_check": "warn" }'
  '{ "gid_check": "warn" }'
  '{ "gid_check": "warn", "dad_probe_ms": 100 }'
)
printf 'roce-hook fabric steps: hook prestart, %d runs each, median / p90 in ms (%s, %s cores)\n' \
  "$N" "$(uname -r)" "$(nproc)"
for c in "${!CONFS[@]}"; do
  set_fabric "${CONFS[$c]}"
  : > "$T/hook-times"
  for ((i = 0; i < N; i++)); do
    id=bench-fab-$c-$i
    runtime run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>"$T/err" ||
      { echo "bench/fabric: runc run (${NAMES[$c]}) failed: $(cat "$T/err")" >&2; exit 1; }
    runtime delete -f "$id" >/dev/null 2>&1
  done
  [ -z "$(held_addresses)" ] || { echo "bench/fabric: leases left: $(held_addresses)" >&2; exit 1; }
  printf '  %-14s %s\n' "${NAMES[$c]}" "$(stats "$T/hook-times")"
done
grep -q "is RoCE v2 GID index 2 of mlx5_0" "$T/hook.log" ||
  { echo "bench/fabric: the GID was never found" >&2; exit 1; }
