# SPDX-License-Identifier: Apache-2.0
# Devices, memlock and CAP_IPC_LOCK through real runc: what the container sees.
# roce-suite: each-runtime test_selected_hca_node_and_rdma_cm_only test_two_hcas_in_annotation_order
# roce-suite: each-runtime test_memlock_is_the_policys
# roce-suite: each-runtime test_another_hcas_node_never_appears_with_createRuntime
# roce-suite: each-runtime test_a_later_failure_rolls_the_mounts_back
# roce-suite: each-runtime test_no_dev_tmpfs_puts_the_node_in_the_images_dev
# roce-suite: each-runtime test_a_container_in_the_hosts_mount_namespace_is_refused
# roce-suite: memcheck test_selected_hca_node_and_rdma_cm_only
# roce-suite: memcheck test_the_hcas_node_among_many_found_from_the_hca_or_by_the_scan
# roce-suite: memcheck test_the_container_can_open_its_nodes_and_no_other
# roce-suite: memcheck test_another_hcas_node_never_appears_with_createRuntime
# roce-suite: memcheck test_memlock_the_hook_cannot_raise_is_refused
# roce-suite: memcheck test_a_later_failure_rolls_the_mounts_back
# roce-suite: memcheck test_a_rails_file_refused_takes_the_nodes_back
# roce-suite: memcheck test_no_dev_tmpfs_puts_the_node_in_the_images_dev
# roce-suite: memcheck test_devices_undo_leaves_nothing
# roce-suite: valgrind test_selected_hca_node_and_rdma_cm_only
# roce-suite: valgrind test_another_hcas_node_never_appears_with_createRuntime
# roce-suite: valgrind test_a_later_failure_rolls_the_mounts_back
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/devices.sh"

test_selected_hca_node_and_rdma_cm_only () {
  dev_host
  local id b=$T/b
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_1" CMD="$NODE_CMD" make_bundle "$b" "$POLICY"
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  # 231:193 is uverbs1 (e7:c1), rdma_cm is 10:58 (a:3a); no uverbs0.
  assert_eq "/dev/infiniband/rdma_cm character special file a:3a
/dev/infiniband/uverbs1 character special file e7:c1" "$(cat "$T/$id.out")" "nodes in the container"
  # On the container's /dev tmpfs: the image's /dev is untouched.
  [ -z "$(ls -A "$b/rootfs/dev")" ] || fail "the image's /dev changed: $(ls -A "$b/rootfs/dev")"
  assert_file_contains "$T/hook.log" "devices: /dev/infiniband/uverbs1 (231:193), /dev/infiniband/rdma_cm (10:58)"
}

# The HCA's node is found from the HCA (its PCI function lists its uverbs
# device) among many others; where that entry is missing or is not the
# HCA's, by the scan of every uverbs device, as libibverbs finds them.
test_the_hcas_node_among_many_found_from_the_hca_or_by_the_scan () {
  dev_host
  local i id
  for ((i = 2; i < 40; i++)); do fake_hca "mlx5_$i" "$i" "vf$i"; done
  ANNOTATIONS="roce.io/hca=mlx5_1" CMD="$NODE_CMD" make_bundle "$T/b" "$POLICY"
  for how in direct scan decoy; do
    case $how in
      scan) rm -rf "$FAKE_SYSFS/class/infiniband/mlx5_1/device/infiniband_verbs" ;;
      # The PCI function lists another HCA's device: not taken, the scan finds it.
      decoy) mkdir -p "$FAKE_SYSFS/class/infiniband/mlx5_1/device/infiniband_verbs/uverbs7" ;;
    esac
    id=$(new_id)
    run_container "$id" "$T/b" || fail "$how: refused: $(cat "$T/$id.err")"
    assert_eq "/dev/infiniband/rdma_cm character special file a:3a
/dev/infiniband/uverbs1 character special file e7:c1" "$(cat "$T/$id.out")" "nodes in the container ($how)"
  done
}

test_two_hcas_in_annotation_order () {
  dev_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_1,mlx5_0" CMD="$NODE_CMD" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "/dev/infiniband/rdma_cm character special file a:3a
/dev/infiniband/uverbs0 character special file e7:c0
/dev/infiniband/uverbs1 character special file e7:c1" "$(cat "$T/$id.out")" "nodes in the container"
  assert_file_contains "$T/hook.log" "devices: /dev/infiniband/uverbs1 (231:193), /dev/infiniband/uverbs0 (231:192), /dev/infiniband/rdma_cm (10:58)"
}

test_no_rdma_cm_on_the_host_means_none_in_the_container () {
  dev_host
  rm -rf "$FAKE_SYSFS/class/misc/rdma_cm"
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD="$NODE_CMD" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "/dev/infiniband/uverbs0 character special file e7:c0" "$(cat "$T/$id.out")" "nodes"
}

# ENXIO: the device cgroup let the open through to the kernel, which has no
# driver for 231:x here.  EPERM would be the cgroup.  The control is a node of
# another HCA that the spec itself bind-mounts: the cgroup refuses it.
test_the_container_can_open_its_nodes_and_no_other () {
  dev_host
  local id b=$T/b
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" \
    CMD='for n in /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm /other; do dd if=$n of=/dev/null count=1 2>&1 | head -1; done' \
    make_bundle "$b" "$POLICY"
  bundle_add_mount "$b" '{"destination": "/other", "type": "bind", "source": "/dev/infiniband/uverbs1", "options": ["bind"]}'
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  if ! has_device_cgroup; then
    # crun runs here with cgroups disabled: no device cgroup refuses anything.
    assert_eq "dd: can't open '/dev/infiniband/uverbs0': No such device or address
dd: can't open '/dev/infiniband/rdma_cm': No such device
dd: can't open '/other': No such device or address" "$(cat "$T/$id.out")" "opens in the container"
    return 0
  fi
  assert_eq "dd: can't open '/dev/infiniband/uverbs0': No such device or address
dd: can't open '/dev/infiniband/rdma_cm': No such device
dd: can't open '/other': Operation not permitted" "$(cat "$T/$id.out")" "opens in the container"
  assert_file_contains "$T/hook.log" "device cgroup: devices.allow c 231:192 rw, devices.allow c 10:58 rw"
}

# The shim's path: the spec allows the nodes already; the hook adds nothing.
test_nodes_the_spec_allows_get_no_extra_rule () {
  dev_host
  local id b=$T/b
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='dd if=/dev/infiniband/uverbs0 of=/dev/null count=1 2>&1 | head -1' \
    make_bundle "$b" "$POLICY"
  bundle_set_devices "$b" '[{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 231, "minor": 192, "access": "rw"}, {"allow": true, "type": "c", "major": 10, "minor": 58, "access": "rwm"}]'
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "dd: can't open '/dev/infiniband/uverbs0': No such device or address" "$(cat "$T/$id.out")" "open"
  assert_file_contains "$T/hook.log" "device cgroup: nothing to add"
}

test_another_hcas_node_never_appears_with_createRuntime () {
  dev_host
  local id
  id=$(new_id)
  HOOK_STAGE=createRuntime ANNOTATIONS="roce.io/hca=mlx5_0" CMD="$NODE_CMD" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_not_contains "$(cat "$T/$id.out")" "uverbs1" "nodes"
  assert_contains "$(cat "$T/$id.out")" "/dev/infiniband/uverbs0 character special file e7:c0" "nodes"
  assert_file_contains "$T/hook.log" "createRuntime: pid"
}

test_memlock_is_the_policys () {
  dev_host
  POLICY_MEMLOCK=4194304 write_policy "$POLICY" warn "mlx5_0 $NIC0 10"
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='grep "Max locked memory" /proc/self/limits' make_bundle "$T/b" "$POLICY"
  [ "$(($(ulimit -Hl) * 1024))" != 4194304 ] || skip "the hard limit is already 4194304"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "Max locked memory 4194304 4194304 bytes" "$(tr -s ' ' < "$T/$id.out" | sed 's/ *$//')" "limits"
}

test_memlock_the_hook_cannot_raise_is_refused () {
  dev_host
  [ "$(ulimit -Hl)" != unlimited ] || skip "the hard memlock limit is unlimited here"
  local hard id rc=0
  hard=$(($(ulimit -Hl) * 1024))
  POLICY_MEMLOCK='"unlimited"' write_policy "$POLICY" warn "mlx5_0 $NIC0 10"
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  one_hook_line "$id"
  assert_file_contains "$T/$id.err" "roce-hook: $id: RLIMIT_MEMLOCK of the container: unlimited (the policy's memlock) vs at most $hard, the hard limit the runtime gave it (raising it needs CAP_SYS_RESOURCE) (fix: run the container runtime with CAP_SYS_RESOURCE and a high enough hard limit, or set memlock in $POLICY to at most $hard)"
  assert_not_contains "$(cat "$T/$id.out")" "started"
}

test_a_lower_spec_memlock_is_refused_because_runc_applies_it_later () {
  dev_host
  POLICY_MEMLOCK=4194304 write_policy "$POLICY" warn "mlx5_0 $NIC0 10"
  local id rc=0
  id=$(new_id)
  RLIMITS_JSON='[{"type":"RLIMIT_MEMLOCK","hard":65536,"soft":65536}]' ANNOTATIONS="roce.io/hca=mlx5_0" \
    make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  one_hook_line "$id"
  assert_file_contains "$T/$id.err" "roce-hook: $id: RLIMIT_MEMLOCK of the container: 4194304 (the policy's memlock) vs soft 65536, hard 65536 from config.json process.rlimits, which the runtime applies after this hook (fix: drop the container's memlock ulimit or set it to 4194304 (--ulimit memlock=4194304))"
}

# A spec value at or above the policy's is the runtime's to apply (after the
# hook): the container sees the spec's value, not the policy's.
test_a_higher_spec_memlock_is_left_to_the_runtime () {
  dev_host
  POLICY_MEMLOCK=4194304 write_policy "$POLICY" warn "mlx5_0 $NIC0 10"
  local id hard
  hard=$(($(ulimit -Hl) * 1024))
  [ "$hard" -gt 4194304 ] || skip "the hard limit is too low"
  id=$(new_id)
  RLIMITS_JSON="[{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":$hard,\"soft\":$hard}]" ANNOTATIONS="roce.io/hca=mlx5_0" \
    CMD='grep "Max locked memory" /proc/self/limits' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "Max locked memory $hard $hard bytes" "$(tr -s ' ' < "$T/$id.out" | sed 's/ *$//')" "limits"
  assert_file_contains "$T/hook.log" "RLIMIT_MEMLOCK $hard (from config.json, applied by the runtime)"
}

test_missing_cap_ipc_lock_is_a_warning_naming_the_fix () {
  dev_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"
  assert_file_contains "$T/hook.log" "warning $id: CAP_IPC_LOCK: in the container's bounding, permitted and effective capabilities vs missing from bounding, permitted, effective (fix: --cap-add IPC_LOCK"
  assert_file_contains "$T/hook.log" "securityContext.capabilities.add"
  id=$(new_id)
  : > "$T/hook.log"
  CAPS_EXTRA=CAP_IPC_LOCK ANNOTATIONS="roce.io/hca=mlx5_0" CMD='grep CapEff /proc/self/status' make_bundle "$T/b2" "$POLICY"
  run_container "$id" "$T/b2" || fail "refused: $(cat "$T/$id.err")"
  assert_not_contains "$(cat "$T/hook.log")" "CAP_IPC_LOCK" "hook log"
  # Bit 14 (0x4000) is CAP_IPC_LOCK: it really is in the effective set.
  [ $((0x$(awk '{print $2}' "$T/$id.out") & 0x4000)) -ne 0 ] || fail "no CAP_IPC_LOCK in $(cat "$T/$id.out")"
}

test_an_hca_whose_node_is_gone_is_refused () {
  dev_host
  # Known to the policy, but its node is gone from /dev: not listed (as libibverbs drops it).
  rm -f /dev/infiniband/uverbs1
  local id rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0,mlx5_1" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  one_hook_line "$id"
  assert_file_contains "$T/$id.err" "roce-hook: $id: HCA mlx5_1: an RDMA device with a uverbs node (the host has mlx5_0) vs not listed (fix: check the HCA's driver, \`ibv_devices\` and /dev/infiniband/uverbs* on the host, or remove mlx5_1 from $POLICY)"
}

test_a_host_node_with_other_numbers_is_refused () {
  dev_host
  rm -f /dev/infiniband/uverbs0
  mknod -m 0666 /dev/infiniband/uverbs0 c 231 200
  local id rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  one_hook_line "$id"
  assert_file_contains "$T/$id.err" "roce-hook: $id: host node /dev/infiniband/uverbs0: a char device 231:192 (as sysfs says) vs a char device 231:200 (fix: recreate the node (udevadm trigger) or check sysfs_root in $POLICY)"
}

# Without a /dev tmpfs the nodes go into the image's own /dev; a failure on the
# second node takes the first one's mount and file back out.
test_a_later_failure_rolls_the_mounts_back () {
  dev_host
  local id b=$T/b rc=0 before
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$b" "$POLICY"
  bundle_drop_dev_tmpfs "$b"
  mkdir -p "$b/rootfs/dev/infiniband"
  mkfifo "$b/rootfs/dev/infiniband/rdma_cm"
  before=$(host_digest /dev/infiniband)
  run_container "$id" "$b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  one_hook_line "$id"
  assert_file_contains "$T/$id.err" "roce-hook: $id: \`/dev/infiniband/rdma_cm\` in the container's rootfs: a device node, a regular file or nothing vs a fifo (fix: remove that path from the container image)"
  assert_eq "rdma_cm" "$(ls "$b/rootfs/dev/infiniband")" "the image's /dev/infiniband after the refusal"
  assert_eq "fifo 644 0" "$(stat -c '%F %a %s' "$b/rootfs/dev/infiniband/rdma_cm")" "the fifo"
  assert_eq "$before" "$(host_digest /dev/infiniband)" "the host's /dev/infiniband and mounts"
}

# The rails file is made in the same entry into the container's mount
# namespace as the nodes' mounts: when it cannot be (the image has a
# directory at /dev/roce/rails), the nodes' mounts and mount points made in
# that entry go again, and the image is as it was.
test_a_rails_file_refused_takes_the_nodes_back () {
  dev_host
  local id b=$T/b rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$b" "$POLICY"
  bundle_drop_dev_tmpfs "$b"
  mkdir -p "$b/rootfs/dev/roce/rails"
  run_container "$id" "$b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  one_hook_line "$id"
  assert_file_contains "$T/$id.err" "roce-hook: $id: /dev/roce/rails in the container: absent, or a file roce-hook may replace vs a directory that cannot be replaced (fix: remove it from the image)"
  # (runc itself makes /dev/null and the like in an image's /dev.)
  [ ! -e "$b/rootfs/dev/infiniband" ] || fail "the image keeps $(cd "$b/rootfs" && find dev/infiniband)"
  assert_eq "./dev/roce ./dev/roce/rails" "$(cd "$b/rootfs" && find ./dev/roce | sort | tr '\n' ' ' | sed 's/ $//')" "the image's /dev/roce"
  assert_eq "" "$(grep -F "$b/rootfs" /proc/self/mountinfo)" "mounts under the rootfs"
}

test_no_dev_tmpfs_puts_the_node_in_the_images_dev () {
  dev_host
  local id b=$T/b
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD="$NODE_CMD" make_bundle "$b" "$POLICY"
  bundle_drop_dev_tmpfs "$b"
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "/dev/infiniband/rdma_cm character special file a:3a
/dev/infiniband/uverbs0 character special file e7:c0" "$(cat "$T/$id.out")" "nodes"
  # What stays in the image: empty mount points, no device node.
  assert_eq "regular empty file 0
regular empty file 0" "$(stat -c '%F %s' "$b/rootfs/dev/infiniband/"* )" "mount points left in the image"
}

# devices_undo (a later step failed) on a running container: from inside,
# the nodes, their mounts, the device cgroup rule and the memlock limit are
# as they were before devices_setup.  The container has pivoted already: the
# hook finds its rootfs as "/" of its mount namespace.
test_devices_undo_leaves_nothing () {
  dev_host
  POLICY_MEMLOCK=4194304 write_policy "$POLICY" warn "mlx5_0 $NIC0 10"
  local id b=$T/b hard cg before restored
  hard=$(($(ulimit -Hl) * 1024))
  # The hook lowered the hard limit to the policy's; raising it back needs
  # CAP_SYS_RESOURCE, which this machine lacks: then it says so in the log.
  restored=$hard
  [ $((0x$(sed -n 's/^CapEff:\t//p' /proc/self/status) >> 24 & 1)) -eq 1 ] || restored=4194304
  [ "$hard" != 4194304 ] || skip "the hard limit is already 4194304"
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 60' make_bundle "$b" "$POLICY"
  probe_running "$id" "$b"
  cg=/sys/fs/cgroup/devices$(sed -n 's/^[0-9]*:devices://p' "/proc/$PID/cgroup")
  before=none
  ! has_device_cgroup || before=$(cat "$cg/devices.list")
  "$BUILD/helpers/devices-probe" "$POLICY" "$T/$id.state" -- \
    "$OCI_RUNTIME" "${RUNTIME_OPTS[@]}" exec "$id" sh -c "$PROBE_CHECK" > "$T/probe.out" 2>&1 ||
    fail "probe: $(cat "$T/probe.out")"
  assert_eq "== after setup
rdma_cm
uverbs0
dd: can't open '/dev/infiniband/uverbs0': No such device or address
2
Max locked memory 4194304 4194304 bytes
== after undo
ls: /dev/infiniband: No such file or directory
dd: can't open '/dev/infiniband/uverbs0': No such file or directory
0
Max locked memory $restored $restored bytes" "$(cat "$T/probe.out")" "the container's view"
  ! has_device_cgroup || assert_eq "$before" "$(cat "$cg/devices.list")" "devices.list after the undo"
  [ "$restored" = "$hard" ] || assert_file_contains "$T/hook.log" "could not restore RLIMIT_MEMLOCK $hard/$hard of process $PID: Operation not permitted"
}

# Without a mount namespace of its own the container shares the host's: a
# bind mount there would outlive it, on the host.  (runc itself refuses such a
# spec with masked paths; the hook is run here against a process that has
# every namespace the spec asks for but a mount namespace.)
test_a_container_in_the_hosts_mount_namespace_is_refused () {
  dev_host
  local id rc=0 i
  id=$(new_id)
  HOOKS=0 NAMESPACES_JSON='[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"}]' \
    make_bundle "$T/b" "$POLICY"
  unshare -n -p -i -u --fork --kill-child sleep 120 </dev/null >/dev/null 2>&1 &
  FR_WAIT=$!
  defer kill -KILL "$FR_WAIT"
  for i in $(seq 100); do
    FR_PID=$(tr -d ' \n' < "/proc/$FR_WAIT/task/$FR_WAIT/children" 2>/dev/null || true)
    [ -n "$FR_PID" ] && break
    sleep 0.05
  done
  [ -n "$FR_PID" ] || fail "no process"
  defer kill -KILL "$FR_PID"
  hook_prestart "$id" "$T/b" "$FR_PID" || rc=$?
  [ "$rc" -ne 0 ] || fail "the hook accepted it"
  assert_eq "roce-hook: $id: mount namespace of the container: one of its own vs the host's (fix: give the container a mount namespace (linux.namespaces))" \
    "$(cat "$T/$id.err")" "the refusal"
  ! grep -qF "$T/b" /proc/self/mountinfo || fail "a mount under the bundle on the host: $(grep -F "$T/b" /proc/self/mountinfo)"
  [ ! -e "$T/b/rootfs/dev/infiniband" ] || fail "the hook made /dev/infiniband in the image"
}

run_tests
