# SPDX-License-Identifier: Apache-2.0
# roce.io/hca=auto (and ROCE_HCA=auto): the HCAs nearest the container's
# GPUs, through runc with the hook and through roce-runtime, on a fake host
# whose GPUs and HCAs sit in one fake PCI tree shaped like a DGX H100's
# (each GPU and its ConnectX under one PCIe switch on a root port of their
# own; GPU0-1 and their NICs on NUMA node 0, GPU2-3 on node 1: four of its
# eight pairs, tests/unit/test_topo.c says where the shape was published).
# roce-suite: each-runtime test_auto_takes_the_nics_of_the_nvidia_device_nodes
# roce-suite: each-runtime test_auto_through_the_shim_sets_nccl_ib_hca_to_its_choice
# roce-suite: memcheck test_auto_takes_the_nics_of_nvidia_visible_devices test_auto_refusals
# roce-suite: memcheck test_auto_through_the_shim_sets_nccl_ib_hca_to_its_choice
# roce-suite: memcheck test_topo_shows_the_matrix_and_the_choice
# roce-suite: valgrind test_auto_takes_the_nics_of_nvidia_visible_devices
# roce-suite: valgrind test_topo_shows_the_matrix_and_the_choice
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"

# A PCI function at $FAKE_SYSFS/devices/PATH, listed in bus/pci/devices.
topo_fn () { # PATH NUMA
  mkdir -p "$FAKE_SYSFS/devices/$1" "$FAKE_SYSFS/bus/pci/devices"
  echo "$2" > "$FAKE_SYSFS/devices/$1/numa_node"
  ln -sfn "../../../devices/$1" "$FAKE_SYSFS/bus/pci/devices/${1##*/}"
}

# A GPU the nvidia driver lists in $T/proc (the policy's procfs_root).
topo_gpu () { # PATH NUMA MINOR
  local a=${1##*/}
  topo_fn "$1" "$2"
  mkdir -p "$T/proc/driver/nvidia/gpus/$a"
  printf 'Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-%08x-aaaa-bbbb-cccc-ddddeeeeffff\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n' \
    "$3" "$a" "$3" > "$T/proc/driver/nvidia/gpus/$a/information"
}

# fake_hca, its device/ moved into the PCI tree and linked, as sysfs has it.
topo_hca () { # HCA UVERBS_N NETDEV PATH NUMA
  fake_hca "$1" "$2" "$3"
  local d=$FAKE_SYSFS/class/infiniband/$1/device
  mkdir -p "$(dirname "$FAKE_SYSFS/devices/$4")"
  mv "$d" "$FAKE_SYSFS/devices/$4"
  echo "$5" > "$FAKE_SYSFS/devices/$4/numa_node"
  ln -s "../../../devices/$4" "$d"
}

# A pair: the NIC on bus NIC, its GPU on NIC+3, one switch (the DGX H100's
# buses: 0x18/0x1b, 0x40/0x43, 0x9a/0x9d, 0xc0/0xc3).
pair_path () { # NIC_BUS gpu|nic
  local n=$((16#$1)) hb up dn
  hb=$(printf %02x $((n - 3))) up=$(printf %02x $((n - 2))) dn=$(printf %02x $((n - 1)))
  if [ "$2" = gpu ]; then
    printf 'pci0000:%s/0000:%s:01.0/0000:%s:00.0/0000:%s:03.0/0000:%02x:00.0' "$hb" "$hb" "$up" "$dn" $((n + 3))
  else
    printf 'pci0000:%s/0000:%s:01.0/0000:%s:00.0/0000:%s:00.0/0000:%s:00.0' "$hb" "$hb" "$up" "$dn" "$1"
  fi
}

# GPUk (PCI order) has minor 3-k: a minor maps through the information file.
# HCAs mlx5_0 (uverbs0, GPU0's), mlx5_3 (uverbs1, GPU1's), mlx5_6 (uverbs2,
# GPU2's), mlx5_9 (uverbs3, GPU3's); subnets 198.18.10-13.0/24.
topo_host () {
  need_root
  need_cmd "$OCI_RUNTIME"
  need_cmd jq
  local k bus numa
  HCAS=(mlx5_0 mlx5_3 mlx5_6 mlx5_9)
  BUSES=(18 40 9a c0)
  NICS=()
  fake_sysfs
  for k in 0 1 2 3; do
    bus=${BUSES[$k]} numa=$((k / 2))
    NICS[$k]=$(fake_nic 9000)
    topo_gpu "$(pair_path "$bus" gpu)" "$numa" $((3 - k))
    topo_hca "${HCAS[$k]}" "$k" "${NICS[$k]}" "$(pair_path "$bus" nic)" "$numa"
  done
  mkdir -p "$FAKE_SYSFS/devices/system/node/node0" "$FAKE_SYSFS/devices/system/node/node1"
  echo 0 > "$FAKE_SYSFS/devices/system/node/node0/cpulist"
  echo 1 > "$FAKE_SYSFS/devices/system/node/node1/cpulist"
  POLICY=$T/policy.json
  write_policy "$POLICY.in" warn "mlx5_0 ${NICS[0]} 10" "mlx5_3 ${NICS[1]} 11" \
    "mlx5_6 ${NICS[2]} 12" "mlx5_9 ${NICS[3]} 13"
  jq --arg p "$T/proc" '.procfs_root = $p' "$POLICY.in" > "$POLICY"
  chmod 0644 "$POLICY"
}

# What the container reports: its RoCE interfaces and addresses, its RDMA
# and GPU nodes, NCCL_IB_HCA, the rails file.
SHOW='ip -o -4 addr show | awk "/ roce/ {print \$2, \$4}";
for n in /dev/infiniband/* /dev/nvidia*; do [ -e "$n" ] && stat -c "node %n %t:%T" "$n"; done;
env | grep ^NCCL_IB_HCA;
grep -v "^#" /dev/roce/rails | sed "s/^/rails /"'

# Adds linux.devices entries ("c MAJOR MINOR PATH" ...) to BUNDLE's spec.
add_devices () {
  local b=$1 spec type major minor path
  shift
  for spec in "$@"; do
    read -r type major minor path <<<"$spec"
    jq --arg p "$path" --arg t "$type" --argjson M "$major" --argjson m "$minor" \
      '.linux.devices += [{"path": $p, "type": $t, "major": $M, "minor": $m, "fileMode": 438, "uid": 0, "gid": 0}]' \
      "$b/config.json" > "$b/config.new" && mv "$b/config.new" "$b/config.json"
  done
}

test_auto_takes_the_nics_of_nvidia_visible_devices () {
  topo_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=auto" ENV="NVIDIA_VISIBLE_DEVICES=2,1" CMD="$SHOW; echo shown; sleep 60" \
    make_bundle "$T/b" "$POLICY"
  start_container "$id" "$T/b" || fail "run: $(cat "$T/$id.err")"
  wait_for 20 "the container's report" grep -qx shown "$T/$id.out"
  # GPU2 takes mlx5_6, GPU1 mlx5_3: the interfaces in that order.
  assert_file_contains "$T/$id.out" "roce0 198.18.12.100/24"
  assert_file_contains "$T/$id.out" "roce1 198.18.11.100/24"
  assert_file_contains "$T/$id.out" "node /dev/infiniband/uverbs2 e7:c2"
  assert_file_contains "$T/$id.out" "node /dev/infiniband/uverbs1 e7:c1"
  grep -q "uverbs0\|uverbs3\|roce2" "$T/$id.out" && fail "another HCA's: $(cat "$T/$id.out")"
  assert_file_contains "$T/$id.out" "rails mlx5_6 roce0 198.18.12.100 24 - - v2 ${NICS[2]} 0000:9d:00.0"
  assert_file_contains "$T/$id.out" "rails mlx5_3 roce1 198.18.11.100 24 - - v2 ${NICS[1]} 0000:43:00.0"
  assert_file_contains "$T/hook.log" "roce.io/hca=auto: GPUs 0000:9d:00.0,0000:43:00.0: mlx5_6,mlx5_3"
  # leases --json says which GPU each rail serves.
  "$HOOK" --config "$POLICY" leases --json >"$T/leases" || fail "leases: $(cat "$T/leases")"
  assert_eq "mlx5_6 0000:9d:00.0 mlx5_3 0000:43:00.0" \
    "$(jq -r '[.leases[] | "\(.hca) \(.gpus | join(","))"] | join(" ")' "$T/leases")" "leases --json"
}

test_auto_takes_the_nics_of_the_nvidia_device_nodes () {
  topo_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=auto" CMD=$SHOW make_bundle "$T/b" "$POLICY"
  # /dev/nvidia1 is GPU2 (minor 3-2); nvidiactl (255) is no GPU.
  add_devices "$T/b" "c 195 1 /dev/nvidia1" "c 195 255 /dev/nvidiactl"
  run_container "$id" "$T/b" || fail "run: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "roce0 198.18.12.100/24"
  assert_file_contains "$T/$id.out" "node /dev/infiniband/uverbs2 e7:c2"
  assert_file_contains "$T/$id.out" "node /dev/nvidia1 c3:1"
  assert_file_contains "$T/$id.out" "rails mlx5_6 roce0 198.18.12.100 24 - - v2 ${NICS[2]} 0000:9d:00.0"
  grep -q "roce1\|uverbs[013]" "$T/$id.out" && fail "more than GPU2's NIC: $(cat "$T/$id.out")"
  true
}

# Docker's way (no annotations): ROCE_HCA=auto and a GPU by UUID.
test_auto_through_the_shim_sets_nccl_ib_hca_to_its_choice () {
  topo_host
  local id
  id=$(new_id)
  # GPU-00000000-...: minor 0, GPU3 (0000:c3:00.0), mlx5_9's.
  HOOKS=0 ENV="ROCE_HCA=auto
NVIDIA_VISIBLE_DEVICES=GPU-00000000-aaaa-bbbb-cccc-ddddeeeeffff" CMD=$SHOW make_bundle "$T/b" "$POLICY"
  add_devices "$T/b" "c 195 0 /dev/nvidia0"
  runtime_opts
  ROCE_HOOK_CONFIG=$POLICY "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null \
    >"$T/out" 2>"$T/err" || fail "shim run: $(cat "$T/err")"
  defer runtime delete -f "$id"
  assert_file_contains "$T/out" "roce0 198.18.13.100/24"
  assert_file_contains "$T/out" "NCCL_IB_HCA=mlx5_9"
  assert_file_contains "$T/out" "node /dev/infiniband/uverbs3 e7:c3"
  assert_file_contains "$T/out" "node /dev/nvidia0 c3:0"
  assert_file_contains "$T/out" "rails mlx5_9 roce0 198.18.13.100 24 - - v2 ${NICS[3]} 0000:c3:00.0"
  grep -q "roce1\|uverbs[012]" "$T/out" && fail "more than GPU3's NIC: $(cat "$T/out")"
  true
}

# No GPU: the HCAs on the NUMA nodes of the container's cpuset.
test_auto_without_gpus_takes_the_cpusets_numa_node () {
  topo_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=auto" CMD=$SHOW make_bundle "$T/b" "$POLICY"
  jq '.linux.resources.cpu = {"cpus": "1"}' "$T/b/config.json" > "$T/b/c" && mv "$T/b/c" "$T/b/config.json"
  run_container "$id" "$T/b" || fail "run: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "roce0 198.18.12.100/24"
  assert_file_contains "$T/$id.out" "roce1 198.18.13.100/24"
  assert_file_contains "$T/$id.out" "rails mlx5_6 roce0 198.18.12.100 24 - - v2 ${NICS[2]} -"
}

# A Kubernetes pod's container without GPUs (a sidecar; the sandbox too)
# starts, and gets nothing of auto: the pod's GPU containers choose.
test_auto_in_a_pods_gpu_less_container_gives_nothing () {
  topo_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=auto
io.kubernetes.cri.container-type=container
io.kubernetes.pod.namespace=team-a" CMD="$SHOW; ls /dev/infiniband; echo done" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "run: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "done"
  grep -q "roce0\|uverbs\|rails" "$T/$id.out" && fail "a sidecar got RDMA: $(cat "$T/$id.out")"
  assert_file_contains "$T/hook.log" "roce.io/hca=auto: a pod's container without GPUs or a cpuset: nothing for it"
}

# refused ID BUNDLE LINE: the start through runc and the hook fails with
# exactly that line, leaving no lease behind.
refused () {
  local id=$1 b=$2 line=$3
  if run_container "$id" "$b"; then fail "$id started"; fi
  assert_file_contains "$T/$id.err" "roce-hook: $id: $line"
  assert_eq 1 "$(grep -c "roce-hook: $id:" "$T/$id.err")" "refusal lines"
  assert_not_contains "$("$HOOK" --config "$POLICY" leases --json)" "$id" "leases"
}

# shim_refused ID BUNDLE LINE: roce-runtime refuses the create with exactly
# that line on its stderr, before the runtime makes anything.
shim_refused () {
  local id=$1 b=$2 line=$3
  runtime_opts
  if ROCE_HOOK_CONFIG=$POLICY "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$b" "$id" </dev/null \
    >"$T/$id.out" 2>"$T/$id.err"; then
    defer runtime delete -f "$id"
    fail "$id was created"
  fi
  assert_eq "roce-runtime: $id: $line" "$(cat "$T/$id.err")" "the shim's refusal"
  runtime state "$id" >/dev/null 2>&1 && fail "the runtime made $id"
  true
}

test_auto_refusals () {
  topo_host
  local a b c d
  a=$(new_id) b=$(new_id) c=$(new_id) d=$(new_id)
  ANNOTATIONS="roce.io/hca=auto" make_bundle "$T/a" "$POLICY"
  refused "$a" "$T/a" "annotation roce.io/hca=auto: GPUs in the spec (NVIDIA_VISIBLE_DEVICES, /dev/nvidiaN in linux.devices) or a cpuset (linux.resources.cpu.cpus) vs neither (fix: name the HCAs (roce.io/hca=mlx5_0,mlx5_1), or give the container GPUs)"

  HOOKS=0 ANNOTATIONS="roce.io/hca=auto
roce.io/ip=198.18.10.150" ENV="NVIDIA_VISIBLE_DEVICES=0,1" make_bundle "$T/b" "$POLICY"
  shim_refused "$b" "$T/b" "annotation roce.io/ip: a bare address, with roce.io/hca=auto choosing one HCA vs 2 HCAs chosen (mlx5_0,mlx5_3) (fix: name the HCAs in roce.io/hca to give each an address, or omit roce.io/ip to get one from each pool)"

  HOOKS=0 ENV="ROCE_HCA=auto
NVIDIA_VISIBLE_DEVICES=0,$(printf '\033')[2J" make_bundle "$T/c" "$POLICY"
  shim_refused "$c" "$T/c" "environment variable NVIDIA_VISIBLE_DEVICES: printable text vs '0,\\x1b[2J' (fix: remove control characters)"

  # GPU1 gone from sysfs while the driver still lists it.
  rm "$FAKE_SYSFS/bus/pci/devices/0000:43:00.0"
  HOOKS=0 ANNOTATIONS="roce.io/hca=auto" ENV="NVIDIA_VISIBLE_DEVICES=1" make_bundle "$T/d" "$POLICY"
  shim_refused "$d" "$T/d" "PCI position of GPU 1 (0000:43:00.0, GPU of annotation roce.io/hca): $FAKE_SYSFS/bus/pci/devices/0000:43:00.0, a link into $FAKE_SYSFS/devices vs \`$FAKE_SYSFS/bus/pci/devices/0000:43:00.0\`: No such file or directory (fix: the driver lists a GPU that sysfs lacks: check the host, or name the HCAs)"
}

test_topo_shows_the_matrix_and_the_choice () {
  topo_host
  "$HOOK" --config "$POLICY" topo --gpus 1,2 >"$T/out" 2>&1 || fail "topo: $(cat "$T/out")"
  assert_file_contains "$T/out" "GPU1   0000:43:00.0  0     pci0000:3d   GPU-00000002-aaaa-bbbb-cccc-ddddeeeeffff"
  assert_file_contains "$T/out" "mlx5_6  0000:9a:00.0  1     pci0000:97"
  assert_file_contains "$T/out" "GPU1   NODE    PIX     SYS     SYS"
  assert_file_contains "$T/out" "roce.io/hca=auto with NVIDIA_VISIBLE_DEVICES=1,2: mlx5_3 (0000:43:00.0: PIX), mlx5_6 (0000:9d:00.0: PIX)"
  "$HOOK" --config "$POLICY" topo --json >"$T/json" || fail "topo --json"
  assert_eq "PIX NODE SYS pci0000:97" "$(jq -r '"\(.matrix["3"].mlx5_9) \(.matrix["0"].mlx5_3) \(.matrix["0"].mlx5_9) \(.hcas[2].pcie_root)"' "$T/json")" "topo --json"
  # check shows the matrix, and its labels place each HCA for a scheduler.
  "$HOOK" --config "$POLICY" check --nfd "$T/labels" >"$T/check" 2>&1 || true
  assert_file_contains "$T/check" "GPU-NIC topology (what roce.io/hca=auto chooses by; roce-hook topo):"
  assert_file_contains "$T/check" "GPU3   SYS     SYS     NODE    PIX"
  assert_file_contains "$T/labels" "roce.io/hca.mlx5_3.pcie-root=pci0000-3d"
  assert_file_contains "$T/labels" "roce.io/hca.mlx5_3.numa=0"
  assert_file_contains "$T/labels" "roce.io/hca.mlx5_3.gpus=1"
  assert_file_contains "$T/labels" "roce.io/hca.mlx5_3.gpu-class=PIX"
}

run_tests
