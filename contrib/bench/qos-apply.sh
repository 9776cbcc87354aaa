#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `roce-hook qos apply` on this machine: a dry run and a run with nothing to
# change (the common case on a node already set up, e.g. from a DaemonSet
# loop) of one HCA's ECN and rdma_cm items on a fake sysfs/configfs tree,
# process start included.  Needs root (a veth pair); makes one and removes
# it.  Run: sudo contrib/bench/qos-apply.sh [RUNS] (after make).
set -eu
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
BUILD=$ROCE_BUILD
runs=${1:-200}
[ "$runs" -ge 50 ] || runs=200
bench_veth
mkdir -p "$T/sys/class/net/$nic/ecn/roce_np/enable" "$T/sys/class/net/$nic/ecn/roce_rp/enable" \
         "$T/sys/class/infiniband/mlx5_0/ports/1/gids" "$T/cfg/rdma_cm/mlx5_0/ports/1"
echo 0 > "$T/sys/class/net/$nic/ecn/roce_np/enable/3"
echo 0 > "$T/sys/class/net/$nic/ecn/roce_rp/enable/3"
echo 0 > "$T/cfg/rdma_cm/mlx5_0/ports/1/default_roce_tos"
echo "IB/RoCE v1" > "$T/cfg/rdma_cm/mlx5_0/ports/1/default_roce_mode"
cat > "$T/p.json" <<JSON
{"sysfs_root": "$T/sys", "configfs_root": "$T/cfg", "hcas": {"mlx5_0": {"netdev": "$nic",
 "subnet": "198.18.0.0/24", "pool": "198.18.0.10-198.18.0.20"}}}
JSON

time_it () { # LABEL ARGS...
  local label=$1 start end
  shift
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do "$BUILD/roce-hook" --config "$T/p.json" qos apply "$@" >/dev/null; done
  end=$(date +%s%N)
  echo "== qos apply $label: $(( (end - start) / runs / 1000 )) us per run (mean of $runs)"
}
time_it "--dry-run (4 changes planned)" --dry-run --only ecn,rdma-cm
"$BUILD/roce-hook" --config "$T/p.json" qos apply --only ecn,rdma-cm >/dev/null
time_it "with nothing to change" --only ecn,rdma-cm
