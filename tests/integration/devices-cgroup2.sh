# SPDX-License-Identifier: Apache-2.0
# The device cgroup on cgroup v2, where runc guards devices with a BPF program.
# This host is hybrid (runc uses the v1 devices controller); each test puts a
# plain cgroup2 mount over /sys/fs/cgroup in the file's private namespace, so
# runc builds its v2 device program as on a unified host.
# roce-suite: memcheck test_v2_the_container_can_open_its_nodes_and_no_other
# roce-suite: memcheck test_v2_undo_puts_the_runtimes_program_back
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/devices.sh"

use_cgroup2 () {
  [ "$OCI_RUNTIME" = runc ] || skip "runc builds the v2 device program here; $OCI_RUNTIME runs with cgroups disabled"
  mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || skip "cannot mount cgroup2"
  defer umount -l /sys/fs/cgroup
  [ -e /sys/fs/cgroup/cgroup.controllers ] || fail "no cgroup2 at /sys/fs/cgroup"
}

v2_bundle () { # BUNDLE CMD: mlx5_0, plus the host's uverbs1 bind-mounted at /other by the spec
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$2 make_bundle "$1" "$POLICY"
  bundle_add_mount "$1" '{"destination": "/other", "type": "bind", "source": "/dev/infiniband/uverbs1", "options": ["bind"]}'
}

OPEN_ALL='for n in /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm /other; do dd if=$n of=/dev/null count=1 2>&1 | head -1; done'

# ENXIO for the selected nodes (the program let them through); EPERM for a
# node of another HCA: the runtime's own rules still apply to everything else.
test_v2_the_container_can_open_its_nodes_and_no_other () {
  dev_host
  use_cgroup2
  local id
  id=$(new_id)
  v2_bundle "$T/b" "grep ^0:: /proc/self/cgroup; $OPEN_ALL"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "0::/$id
dd: can't open '/dev/infiniband/uverbs0': No such device or address
dd: can't open '/dev/infiniband/rdma_cm': No such device
dd: can't open '/other': Operation not permitted" "$(cat "$T/$id.out")" "the container's view"
  assert_file_contains "$T/hook.log" "device cgroup: 1 device program(s) extended"
}

# Without the hook's rule the same open is refused: the test can tell.
test_v2_without_the_hook_the_program_refuses () {
  dev_host
  use_cgroup2
  local id
  id=$(new_id)
  HOOKS=0 v2_bundle "$T/b" 'dd if=/other of=/dev/null count=1 2>&1 | head -1'
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "dd: can't open '/other': Operation not permitted" "$(cat "$T/$id.out")" "open"
}

test_v2_nodes_the_spec_allows_leave_the_program_alone () {
  dev_host
  use_cgroup2
  local id
  id=$(new_id)
  v2_bundle "$T/b" "$OPEN_ALL"
  bundle_set_devices "$T/b" '[{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 231, "minor": 192, "access": "rw"}, {"allow": true, "type": "c", "major": 10, "minor": 58, "access": "rw"}]'
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_contains "$(cat "$T/$id.out")" "'/dev/infiniband/uverbs0': No such device or address"
  assert_contains "$(cat "$T/$id.out")" "'/other': Operation not permitted"
  assert_file_contains "$T/hook.log" "device cgroup: nothing to add"
}

# devices_undo on a running container: the runtime's own program is back
# (same program id), and uverbs0 is refused again (the spec bind-mounts it at
# /other0 so that it is still there to open after the undo).
test_v2_undo_puts_the_runtimes_program_back () {
  dev_host
  use_cgroup2
  local id b=$T/b cg before
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 60' make_bundle "$b" "$POLICY"
  bundle_add_mount "$b" '{"destination": "/other0", "type": "bind", "source": "/dev/infiniband/uverbs0", "options": ["bind"]}'
  probe_running "$id" "$b"
  cg=/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$PID/cgroup")
  before=$("$BUILD/helpers/bpfprogs" "$cg") || fail "bpfprogs"
  [ "$(echo "$before" | wc -l)" = 1 ] || fail "expected one device program, found: $before"
  "$BUILD/helpers/devices-probe" "$POLICY" "$T/$id.state" -- sh -c \
    "$BUILD/helpers/bpfprogs $cg; $OCI_RUNTIME ${RUNTIME_OPTS[*]} exec $id dd if=/other0 of=/dev/null count=1 2>&1 | head -1" \
    > "$T/probe.out" 2>&1 || fail "probe: $(cat "$T/probe.out")"
  local after_setup
  after_setup=$(sed -n '2p' "$T/probe.out")
  [ -n "$after_setup" ] && [ "$after_setup" != "$before" ] || fail "the program was not replaced: $(cat "$T/probe.out")"
  assert_eq "== after setup
$after_setup
dd: can't open '/other0': No such device or address
== after undo
$before
dd: can't open '/other0': Operation not permitted" "$(cat "$T/probe.out")" "probe"
  assert_eq "$before" "$("$BUILD/helpers/bpfprogs" "$cg")" "device programs after the undo"
}

run_tests
