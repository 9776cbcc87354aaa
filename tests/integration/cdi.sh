# SPDX-License-Identifier: Apache-2.0
# CDI as a whole activation path: the spec `roce-hook cdi` writes, taken by
# a real consumer, Debian 12's Podman 4.3 (`--device roce.io/hca=mlx5_0`;
# it reads /etc/cdi and /var/run/cdi only: each test puts a tmpfs of its own
# on /run/cdi, in its file's private mount namespace).  A container that
# requests a device gets what an annotated one gets: roce0 with its address,
# its uverbs node and rdma_cm, the policy's memlock, the NCCL variables; the
# spec's hooks (roce-hook --cdi at createRuntime and poststop) do the start
# and the release.  Docker 28's --device and containerd 2.1's CDIDevices
# take the same spec in docker.sh and cri.sh (the runtime matrix).
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/runtimes.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"

# What the container reports about itself, one fact a line.
SHOW='grep "locked memory" /proc/self/limits;
for n in /dev/infiniband/*; do stat -c "node %n %t:%T" "$n"; done;
env | grep -E "^(NCCL_|ROCE_)" | sort;
ip -o -4 addr show | awk "{print \"addr\", \$2, \$4}";
echo "links $(ls /sys/class/net | sort | tr "\n" " ")"'

# cdi_host: the fake host (two HCAs), a memlock below what the runtime hands
# down (so the policy's is seen), the spec on a tmpfs at /run/cdi, Podman.
cdi_host () {
  MEMLOCK=$(( $(hard_memlock_bytes) / 2 )) setup_host
  MEMLOCK=$(( $(hard_memlock_bytes) / 2 ))
  podman_env
  make_rootfs "$T/rootfs"
  local made=0
  [ -d /run/cdi ] || { mkdir /run/cdi && made=1; }
  [ "$made" = 1 ] && defer rmdir /run/cdi
  mount -t tmpfs -o mode=0755 roce-cdi /run/cdi || fail "tmpfs on /run/cdi"
  defer umount /run/cdi
  "$HOOK" --config "$POLICY" cdi --output /run/cdi/roce.json || fail "cdi failed"
}

# cdi_run OUT ERR PODMAN_ARGS...: podman run --rm of the rootfs with $SHOW.
cdi_run () {
  local out=$1 err=$2
  shift 2
  timeout 60 "${PODMAN[@]}" run --rm "${PODMAN_RUN[@]}" --network none "$@" \
    --rootfs "$T/rootfs" /bin/sh -c "$SHOW" >"$out" 2>"$err"
}

test_cdi_device_gives_a_podman_container_everything () {
  cdi_host
  cdi_run "$T/out" "$T/err" --device roce.io/hca=mlx5_0 || fail "podman run --device roce.io/hca=mlx5_0: $(cat "$T/err")"
  cat "$T/out"
  assert_file_contains "$T/out" "addr roce0 198.18.10.100/24"
  assert_file_contains "$T/out" "links lo roce0 "
  assert_file_contains "$T/out" "node /dev/infiniband/uverbs0 e7:c0"
  assert_file_contains "$T/out" "node /dev/infiniband/rdma_cm a:3a"
  grep -q uverbs1 "$T/out" && fail "the other HCA's node is visible: $(cat "$T/out")"
  grep "locked memory" "$T/out" | grep -q "$MEMLOCK *$MEMLOCK" || fail "memlock: $(grep locked "$T/out") (policy $MEMLOCK)"
  assert_file_contains "$T/out" "NCCL_IB_HCA=mlx5_0"
  assert_file_contains "$T/out" "NCCL_IB_TC=106"
  assert_file_contains "$T/out" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  assert_file_contains "$T/out" "ROCE_CDI_HCA_0=mlx5_0"
  # The spec's hooks did it: createRuntime made it, poststop released it
  # (through its reaper, once the kernel let the namespace go: the listing
  # waits for that before the log is read).
  assert_file_contains "$T/hook.log" "createRuntime: pid"
  assert_eq "" "$(held_addresses)" "leases after the run"
  assert_file_contains "$T/hook.log" "released 198.18.10.100 (mlx5_0)"
  # A container without the device, the spec there: nothing of ours.
  : > "$T/hook.log"
  cdi_run "$T/out2" "$T/err2" || fail "plain podman run: $(cat "$T/err2")"
  assert_file_contains "$T/out2" "links lo "
  grep -q "roce0\|^node \|^NCCL_\|^ROCE_" "$T/out2" && fail "RoCE bits without the device: $(cat "$T/out2")"
  [ ! -s "$T/hook.log" ] || fail "the hook ran for a container without the device: $(cat "$T/hook.log")"
}

# Two devices, asked in the other order: the rails in the policy's order
# (Podman applies a request's devices in an order of its own), each with
# its address and node.
test_cdi_two_devices_get_two_rails_in_policy_order () {
  cdi_host
  cdi_run "$T/out" "$T/err" --device roce.io/hca=mlx5_1 --device roce.io/hca=mlx5_0 ||
    fail "podman run with two devices: $(cat "$T/err")"
  cat "$T/out"
  assert_file_contains "$T/out" "addr roce0 198.18.10.100/24"
  assert_file_contains "$T/out" "addr roce1 198.18.11.100/24"
  assert_file_contains "$T/out" "node /dev/infiniband/uverbs0 e7:c0"
  assert_file_contains "$T/out" "node /dev/infiniband/uverbs1 e7:c1"
  assert_file_contains "$T/out" "links lo roce0 roce1 "
  assert_eq "" "$(held_addresses)" "leases after the run"
}

# An annotation or ROCE_HCA that disagrees with the CDI request: refused in
# one line, naming neither value; nothing held.  Agreeing: started.
test_cdi_request_beside_a_disagreeing_annotation_or_env_is_refused () {
  cdi_host
  local rc=0
  cdi_run "$T/out" "$T/err" --device roce.io/hca=mlx5_0 --annotation roce.io/hca=mlx5_1 || rc=$?
  [ "$rc" != 0 ] || fail "started with roce.io/hca=mlx5_1 beside the device mlx5_0: $(cat "$T/out")"
  assert_file_contains "$T/err" "annotation roce.io/hca beside the CDI devices roce.io/hca: the same HCAs, or only one of the two vs other HCAs (fix: ask for the HCAs one way: the CDI devices alone, or the same ones in both)"
  assert_eq 1 "$(grep -c "roce-hook: " "$T/err")" "lines of ours in podman's error"
  rc=0
  cdi_run "$T/out" "$T/err" --device roce.io/hca=mlx5_0 -e ROCE_HCA=mlx5_0,mlx5_1 || rc=$?
  [ "$rc" != 0 ] || fail "started with ROCE_HCA=mlx5_0,mlx5_1 beside the device mlx5_0"
  assert_file_contains "$T/err" "environment variable ROCE_HCA beside the CDI devices roce.io/hca: the same HCAs, or only one of the two vs other HCAs"
  assert_eq "" "$(held_addresses)" "leases after the refusals"
  cdi_run "$T/out" "$T/err" --device roce.io/hca=mlx5_0 --annotation roce.io/hca=mlx5_0 ||
    fail "the same HCA in both was refused: $(cat "$T/err")"
  assert_file_contains "$T/out" "addr roce0 198.18.10.100/24"
}

# The tenant rules of an annotated container: a policy that opens its HCAs
# to a Kubernetes namespace only refuses a Podman container's request.
test_cdi_request_meets_the_tenant_rules () {
  cdi_host
  jq '.default_tenants = ["ml-team"]' "$POLICY" > "$T/p" && mv "$T/p" "$POLICY"
  local rc=0
  cdi_run "$T/out" "$T/err" --device roce.io/hca=mlx5_0 || rc=$?
  [ "$rc" != 0 ] || fail "a container outside ml-team got mlx5_0"
  assert_file_contains "$T/err" "use of HCA mlx5_0 (policy rule default_tenants): a namespace in [ml-team] vs "
  assert_eq "" "$(held_addresses)" "leases after the refusal"
}

run_tests
