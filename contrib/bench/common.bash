# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# What the benchmark scripts share (sourced; not a benchmark of its own):
#
#   source "$(dirname "$0")/common.bash"
#   bench_begin NAME DEFAULT_N "$@"
#
# sets ROOT and ROCE_BUILD when sourced; bench_begin sets N (the script's
# first argument, else BENCH_N, else DEFAULT_N) and re-runs the script as
# root in a private mount namespace with the tests' harness loaded
# (tests/helpers/privns.sh: the fake host's /dev, $T, defer), then the
# helpers below set up what most scripts run on.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}

bench_begin () { # NAME DEFAULT_N [N]
  N=${3:-${BENCH_N:-$2}}
  # shellcheck source=../../tests/helpers/privns.sh
  source "$ROOT/tests/helpers/privns.sh"
  roce_in_private_ns "bench-$1" "$0" "$N"
}

# bench_host MODE: the fake NIC (MTU 9000) carrying mlx5_0, rdma_cm, and
# $POLICY (qos.mode MODE) with 198.18.10.0/24 for it.
bench_host () {
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  fake_rdma_cm
  POLICY=$T/policy.json
  write_policy "$POLICY" "$1" "mlx5_0 $NIC 10"
}

# bench_state_dir: $POLICY's lease store where a node keeps it
# (state_dir /var/lib/roce-hook), not in $T: /tmp may sit in another block
# group of the disk (on this VM an inode made under /tmp costs 0.3 ms,
# under /var/lib 0.03).  $SD is its directory, removed at the end.
bench_state_dir () {
  SD=$(mktemp -d /var/lib/roce-bench.XXXXXX)
  defer "rm -rf $SD"
  sed -i "s|\"state_dir\": \"[^\"]*\"|\"state_dir\": \"$SD/state\"|" "$POLICY"
}

# bench_empty NAME: $T/empty, an empty C program (libc only, as the hook
# is one): the spawn a figure subtracts.
bench_empty () {
  printf 'int main (void) { return 0; }\n' > "$T/empty.c"
  cc -O2 -o "$T/empty" "$T/empty.c" || { echo "bench/$1: needs cc" >&2; exit 1; }
}

# bench_veth: a veth pair ($nic, its peer rq<id>, MTU 9000) and $T, both
# removed on exit: for the scripts that run no container (no private
# namespace, no harness).
bench_veth () {
  id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  nic=rb$id
  T=$(mktemp -d /tmp/roce-bench.XXXXXX)
  trap 'ip link del "$nic" 2>/dev/null || true; rm -rf "$T"' EXIT
  ip link add "$nic" mtu 9000 type veth peer name "rq$id" mtu 9000
}

# cni_json: $T/cni.json, Debian's CNI macvlan plugin with host-local IPAM
# doing what the hook does for a container (mode bridge on $NIC, MTU 9000,
# an address of 198.18.10.100-199, one route), its data in $T/cni.
cni_json () {
  mkdir -p "$T/cni"
  cat > "$T/cni.json" <<EOF
{"cniVersion": "1.0.0", "name": "roce-bench", "type": "macvlan", "master": "$NIC",
 "mode": "bridge", "mtu": 9000,
 "ipam": {"type": "host-local", "dataDir": "$T/cni",
          "ranges": [[{"subnet": "198.18.10.0/24", "rangeStart": "198.18.10.100",
                       "rangeEnd": "198.18.10.199", "gateway": "198.18.10.1"}]],
          "routes": [{"dst": "198.19.10.0/24"}]}}
EOF
}

now_us () { local t=${EPOCHREALTIME/./}; echo "$t"; }

# stats FILE: "median / p90" in ms of the microsecond values in FILE.
stats () {
  sort -n "$1" | awk '{v[NR]=$1} END {
    if (NR == 0) { print "n/a"; exit }
    m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)];
    printf "%7.2f / %7.2f", m / 1000, p / 1000 }'
}
# median_us FILE: the median of its microsecond values.
median_us () { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
