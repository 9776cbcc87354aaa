#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make demo: a simulated RoCE host (a veth NIC with MTU 9000, a fake mlx5 HCA
# that real libibverbs lists, /dev/infiniband on a private tmpfs) and real
# runc containers started through roce-hook.  Leaves nothing behind.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export ROCE_BUILD=${ROCE_BUILD:-$ROOT/build}
# shellcheck source=../../tests/helpers/privns.sh
source "$ROOT/tests/helpers/privns.sh"
roce_in_private_ns demo "$0"
# shellcheck source=../../tests/helpers/qos.sh
source "$ROOT/tests/helpers/qos.sh"
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

# What MLNX_OFED would show on such a host: ECN on for priority 3 (NP), off
# (RP), and the RoCE v2 GID of the NIC's address.
fake_ecn "$NIC" roce_np 3 1
fake_ecn "$NIC" roce_rp 3 0
fake_gid mlx5_0 1 3 0000:0000:0000:0000:0000:ffff:c612:0a01 "RoCE v2" "$NIC"
fake_netns_mode Y

say "roce-hook check: is this host ready for lossless RDMA?"
"$ROCE_BUILD/roce-hook" --config "$POLICY" check | sed 's/^/  /'
echo "  (exit status ${PIPESTATUS[0]}: 1 = a finding would refuse containers under enforce)"

say "under qos.mode=enforce an annotated container is refused: a veth has no DCB"
sed 's/"mode": "warn"/"mode": "enforce"/' "$POLICY" > "$T/enforce.json"
id=demo-$(rand_hex 3)
ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo should not run' make_bundle "$T/e" "$T/enforce.json"
run_container "$id" "$T/e" || true
grep -o 'roce-hook: [^\\]*' "$T/$id.err" | sed 's/^/  /'

say "under qos.mode=warn it starts, and the findings go to the log"

say "two containers annotated roce.io/hca=mlx5_0, started by runc through roce-hook"
a=demo-a-$(rand_hex 3)
ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 30' make_bundle "$T/a" "$POLICY"
# What the containers before it held is given back first: a gets .100.
leases_settled "$POLICY" >/dev/null
start_container "$a" "$T/a" || fail "start: $(cat "$T/$a.err")"
b=demo-b-$(rand_hex 3)
ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$show'; echo "ping the other container over roce0:";
  ping -c1 -W2 198.18.10.100 | sed -n "2p"' make_bundle "$T/b2" "$POLICY"
if run_container "$b" "$T/b2"; then
  echo "container $b sees:"
  sed 's/^/  /' "$T/$b.out"
else
  echo "  refused: $(cat "$T/$b.err")"
fi

say "roce-hook leases (while $a runs)"
"$ROCE_BUILD/roce-hook" --config "$POLICY" leases | sed 's/^/  /'
runtime delete -f "$a" >/dev/null 2>&1

say "the same container through roce-runtime (the shim that containerd and Docker use)"
id=demo-s-$(rand_hex 3)
HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$show make_bundle "$T/s" "$POLICY"
runtime_opts
if ROCE_HOOK_CONFIG=$POLICY "$ROCE_BUILD/roce-runtime" "${RUNTIME_OPTS[@]}" run --bundle "$T/s" "$id" \
     </dev/null >"$T/$id.out" 2>"$T/$id.err"; then
  sed 's/^/  /' "$T/$id.out"
  echo "  (CapEff now holds CAP_IPC_LOCK, bit 14; the NCCL defaults came from the policy)"
else
  echo "  refused: $(cat "$T/$id.err")"
fi
runtime delete -f "$id" >/dev/null 2>&1

say "a container annotated roce.io/hca=mlx5_7 (not in the policy): refused"
id=demo-$(rand_hex 3)
ANNOTATIONS="roce.io/hca=mlx5_7" CMD='echo should not run' make_bundle "$T/b" "$POLICY"
run_container "$id" "$T/b" || true
grep -o 'roce-hook: [^\\]*' "$T/$id.err" | sed 's/^/  /'

say "roce-hook leases after both stopped"
"$ROCE_BUILD/roce-hook" --config "$POLICY" leases | sed 's/^/  /'

say "what the hook logged ($T/hook.log)"
sed 's/^/  /' "$T/hook.log" 2>/dev/null
echo
