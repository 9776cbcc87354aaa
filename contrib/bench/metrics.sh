#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `roce-hook metrics` on a large fake host: 8 HCAs (each on a veth, so the
# QoS probe and the ethtool ioctl are real), 256-entry GID tables, every
# hw_counter and port counter file, and a lease store of 500 leases (500
# pods, one rail each), then of 500 pods on all 8 rails (4000 leases).
# Goal: well under 50 ms per run, process start included.
# Needs root (8 veth pairs; all removed on exit).  Run: sudo contrib/bench/metrics.sh [RUNS]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${ROCE_BUILD:-$ROOT/build}
RUNS=${1:-30}
[ "$(id -u)" -eq 0 ] || { echo "metrics bench: needs root (veth pairs)"; exit 0; }
T=$(mktemp -d /tmp/roce-bench.XXXXXX)
id=$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
NICS=()
cleanup () {
  local n
  for n in "${NICS[@]}"; do ip link del "$n" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT

HCAS=8
S=$T/sys
mkdir -p "$T/state"
{
  printf '{"state_dir": "%s", "sysfs_root": "%s", "qos": {"mode": "warn"}, "hcas": {' "$T/state" "$S"
  for i in $(seq 0 $((HCAS - 1))); do
    nic=rm$id$i
    ip link add "$nic" mtu 9000 type veth peer name "rn$id$i" mtu 9000
    NICS+=("$nic")
    [ "$i" -gt 0 ] && printf ','
    printf '"mlx5_%d": {"netdev": "%s", "subnet": "198.18.%d.0/22", "pool": "198.18.%d.10-198.18.%d.250"}' \
      "$i" "$nic" $((i * 4)) $((i * 4)) $((i * 4 + 3))
    p=$S/class/infiniband/mlx5_$i/ports/1
    mkdir -p "$p/hw_counters" "$p/counters" "$p/gids"
    for c in np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled rp_cnp_ignored out_of_sequence \
             packet_seq_err local_ack_timeout_err roce_adp_retrans; do
      echo $((RANDOM * 1000)) > "$p/hw_counters/$c"
    done
    for c in port_xmit_data port_rcv_data port_xmit_packets port_rcv_packets port_rcv_errors \
             port_xmit_discards port_xmit_wait link_downed symbol_error; do
      echo $((RANDOM * 1000)) > "$p/counters/$c"
    done
    for g in $(seq 0 255); do
      if [ "$g" -lt 200 ]; then
        printf '0000:0000:0000:0000:0000:ffff:c612:%04x\n' "$g"
      else
        echo 0000:0000:0000:0000:0000:0000:0000:0000
      fi > "$p/gids/$g"
    done
  done
  printf '}}\n'
} > "$T/policy.json"

# leases.json (the single-file store of earlier versions, which hook/ipam/lease_store.c still reads): PODS holders, RAILS addresses each.
store () { # PODS RAILS
  local pods=$1 rails=$2
  awk -v pods="$pods" -v rails="$rails" -v hcas="$HCAS" 'BEGIN {
    printf "{\"version\":1,\"holders\":["
    for (h = 0; h < pods; h++) {
      printf "%s{\"netns\":{\"boot_id\":\"bench\",\"dev\":4,\"ino\":%d,\"cookie\":%d},", h ? "," : "", 4026532000 + h, h + 1
      printf "\"owner\":\"pod-%04d\",\"containers\":[\"pod-%04d\",\"app-%04d\"],\"since\":1700000000,\"leases\":[", h, h, h
      for (r = 0; r < rails; r++) {
        hca = rails == 1 ? h % hcas : r
        n = rails == 1 ? int(h / hcas) : h
        printf "%s{\"hca\":\"mlx5_%d\",\"address\":\"198.18.%d.%d\",\"ifname\":\"roce%d\"}", r ? "," : "", hca, hca * 4 + int((n + 10) / 256), (n + 10) % 256, r
      }
      printf "]}"
    }
    printf "]}\n"
  }' > "$T/state/leases.json"
}

run () { # LABEL
  local label=$1 start end lines
  "$BUILD/roce-hook" --config "$T/policy.json" metrics > "$T/out" || { echo "metrics failed"; exit 1; }
  lines=$(grep -vc '^#' "$T/out")
  if command -v promtool >/dev/null; then
    promtool check metrics < "$T/out" || { echo "promtool rejects the output"; exit 1; }
  fi
  start=$(date +%s%N)
  for _ in $(seq "$RUNS"); do "$BUILD/roce-hook" --config "$T/policy.json" metrics --output "$T/roce.prom"; done
  end=$(date +%s%N)
  printf '%-48s %6d samples  %6.2f ms per run (mean of %d, goal < 50 ms)\n' "$label" "$lines" \
    "$(awk -v d=$((end - start)) -v n="$RUNS" 'BEGIN { print d / n / 1000000 }')" "$RUNS"
}

store 500 1
run "8 HCAs, 500 leases (500 pods x 1 rail)"
store 500 8
run "8 HCAs, 4000 leases (500 pods x 8 rails)"
