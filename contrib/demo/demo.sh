#!/usr/bin/env bash
# make demo: a simulated RoCE host (a veth NIC with MTU 9000, a fake mlx5 HCA
# that real libibverbs lists, /dev/infiniband on a private tmpfs) and real
# runc containers started through roce-hook.  Leaves nothing behind.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}
if [ "$(id -u)" -ne 0 ]; then
  echo "demo: needs root (sudo make demo)" >&2
  exit 1
fi
if [ "${1:-}" != --inside ]; then
  exec unshare -m --propagation private "$0" --inside
fi

# shellcheck source=../../tests/helpers/lib.sh
source "$ROOT/tests/helpers/lib.sh"
fakehost_private_dev
T=$(mktemp -d /tmp/roce-demo.XXXXXX)
trap '_run_deferred; rm -rf "$T"' EXIT
fail () { echo "demo: $*" >&2; exit 1; }
skip () { echo "demo: $*" >&2; exit 1; }

say () { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "simulated host"
NIC=$(fake_nic 9000)
fake_hca mlx5_0 0 "$NIC"
fake_rdma_cm
POLICY=$T/policy.json
write_policy "$POLICY" warn "mlx5_0 $NIC 10"
echo "NIC $NIC (veth, MTU $(cat /sys/class/net/"$NIC"/mtu)); HCAs libibverbs lists:"
SYSFS_PATH=$FAKE_SYSFS "$ROCE_BUILD/helpers/lsibv" | sed 's/^/  /'
echo "policy $POLICY:"
sed 's/^/  /' "$POLICY"

show='echo "interfaces:"; ip -o addr | sed "s/^/  /";
echo "routes:"; ip route | sed "s/^/  /";
echo "/dev/infiniband:"; ls -l /dev/infiniband 2>&1 | sed "s/^/  /";
echo "memlock: $(grep "locked memory" /proc/self/limits)";
echo "CapEff: $(grep CapEff /proc/self/status)";
echo "NCCL: $(env | grep ^NCCL_ | tr "\n" " ")"'

say "a container annotated roce.io/hca=mlx5_0, started by runc through roce-hook"
id=demo-$(rand_hex 3)
ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$show make_bundle "$T/a" "$POLICY"
if run_container "$id" "$T/a"; then
  sed 's/^/  /' "$T/$id.out"
else
  echo "  refused: $(cat "$T/$id.err")"
fi

say "a container annotated roce.io/hca=mlx5_7 (not in the policy): refused"
id=demo-$(rand_hex 3)
ANNOTATIONS="roce.io/hca=mlx5_7" CMD='echo should not run' make_bundle "$T/b" "$POLICY"
run_container "$id" "$T/b" || true
grep -o 'roce-hook: [^\\]*' "$T/$id.err" | sed 's/^/  /'

say "what the hook logged ($T/hook.log)"
sed 's/^/  /' "$T/hook.log" 2>/dev/null
echo
