#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The QoS gate's cost on this machine: the host probe of one netdev (DCB
# netlink, ECN sysfs, MTU over rtnetlink, the ethtool ioctl), the pure verdict,
# and a whole `roce-hook check` of one HCA.  Needs root (a veth pair); makes
# one and removes it.  Run: sudo contrib/bench/qos.sh (after make).
set -eu
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
BUILD=$ROCE_BUILD
N=${N:-2000}
bench_veth
mkdir -p "$T/sys/class/net/$nic/ecn/roce_np/enable" "$T/sys/class/net/$nic/ecn/roce_rp/enable" \
         "$T/sys/class/infiniband/mlx5_0/ports/1/gids"
echo 1 > "$T/sys/class/net/$nic/ecn/roce_np/enable/3"
echo 1 > "$T/sys/class/net/$nic/ecn/roce_rp/enable/3"

echo "== qos probe + verdict ($N iterations, veth $nic: DCB answers EOPNOTSUPP)"
"$BUILD/helpers/qosbench" "$nic" "$T/sys" "$N"

cat > "$T/p.json" <<JSON
{"sysfs_root": "$T/sys", "hcas": {"mlx5_0": {"netdev": "$nic",
 "subnet": "198.18.0.0/24", "pool": "198.18.0.10-198.18.0.20"}}}
JSON
runs=200
start=$(date +%s%N)
for _ in $(seq $runs); do "$BUILD/roce-hook" --config "$T/p.json" check >/dev/null || true; done
end=$(date +%s%N)
echo "== roce-hook check, one HCA: $(( (end - start) / runs / 1000 )) us per run (mean of $runs, process start included)"
