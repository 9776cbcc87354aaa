# SPDX-License-Identifier: Apache-2.0
# The foundation: the fake host works, the hook stays out of unannotated
# containers, and refuses a bad annotation with one clear line through runc.
# roce-suite: each-runtime
# roce-suite: memcheck
# roce-suite: valgrind test_hook_command_line test_unlisted_hca_is_refused_with_one_line
# roce-suite: valgrind test_malformed_annotations_are_refused
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"

test_fake_host_is_listed_by_real_libibverbs () {
  one_hca_host
  fake_hca mlx5_1 1 "$NIC"
  local out
  out=$(SYSFS_PATH=$FAKE_SYSFS "$BUILD/helpers/lsibv") || fail "lsibv failed: $out"
  assert_contains "$out" "mlx5_0 uverbs0 $FAKE_SYSFS/class/infiniband/mlx5_0"
  assert_contains "$out" "mlx5_1 uverbs1 $FAKE_SYSFS/class/infiniband/mlx5_1"
  [ "$(stat -c '%t:%T' /dev/infiniband/uverbs1)" = "e7:c1" ] || fail "uverbs1 is not 231:193"
  # The fake nodes live on the private /dev, not on the host's devtmpfs.
  [ "$(stat -c %d /dev/infiniband)" != "$(stat -c %d "$ROCE_HOSTDEV")" ] ||
    fail "/dev/infiniband is on the host's /dev"
  assert_eq "9000" "$(cat /sys/class/net/"$NIC"/mtu)" "NIC MTU"
}

# On an RDMA node the host has /dev/infiniband with real nodes: the harness
# never writes there.  A host like that is made here: a /dev of its own with
# uverbs0 and rdma_cm, and the harness's private /dev built over it.
test_the_harness_never_touches_the_hosts_rdma_nodes () {
  need_root
  local host=$T/hostdev
  mkdir -p "$host"
  unshare -m --propagation private bash -c '
    set -e
    mount -t tmpfs roce-fakehostdev /dev
    mkdir /dev/infiniband
    mknod /dev/infiniband/uverbs0 c 231 192
    mknod /dev/infiniband/rdma_cm c 10 58
    echo marker > /dev/infiniband/.marker
    before=$(ls -la --time-style=full-iso /dev/infiniband | sha256sum)
    ROCE_HOSTDEV=$1
    source "$2/tests/helpers/lib.sh"
    T=$(mktemp -d /tmp/roce-nested.XXXXXX)
    fakehost_private_dev
    NIC=$(fake_nic 9000)
    fake_hca mlx5_0 0 "$NIC"
    fake_hca mlx5_1 1 "$NIC"
    fake_rdma_cm
    [ "$(stat -c %d /dev/infiniband)" != "$(stat -c %d "$ROCE_HOSTDEV/infiniband")" ] || exit 3
    _run_deferred
    umount -l /dev/infiniband /dev
    rm -rf "$T"
    [ "$(ls -la --time-style=full-iso "$ROCE_HOSTDEV/infiniband" | sha256sum)" = "$before" ] || exit 4
    [ "$(cat "$ROCE_HOSTDEV/infiniband/.marker")" = marker ] || exit 5
    [ "$(stat -c %t:%T "$ROCE_HOSTDEV/infiniband/uverbs0")" = e7:c0 ] || exit 6
  ' _ "$host" "$ROOT" >"$T/out" 2>&1 || fail "the host's /dev/infiniband changed (status $?): $(tail -5 "$T/out")"
}

test_unannotated_container_starts_untouched () {
  one_hca_host
  # Even a policy that would refuse every annotated start must not matter.
  echo '{"hcas": {}, "bogus": 1}' > "$POLICY"
  local id b=$T/bundle
  id=$(new_id)
  CMD='ip -o link | cut -d: -f2 | tr -d " " | sort | tr "\n" " "; ls /dev/infiniband 2>&1 | head -1' \
    make_bundle "$b" "$POLICY"
  cp "$b/config.json" "$T/config.before"
  run_container "$id" "$b" || fail "runc run failed: $(cat "$T/$id.err")"
  assert_eq "lo " "$(head -1 "$T/$id.out" | sed 's/ls:.*//')" "links in the container"
  assert_contains "$(cat "$T/$id.out")" "No such file or directory" "/dev/infiniband in the container"
  cmp -s "$b/config.json" "$T/config.before" || fail "config.json changed"
  [ ! -e "$T/state" ] || fail "the hook created its state dir for an unannotated container"
  [ ! -s "$T/hook.log" ] || fail "the hook logged for an unannotated container: $(cat "$T/hook.log")"
  [ ! -s "$T/$id.err" ] || fail "stderr not empty: $(cat "$T/$id.err")"
}

test_unlisted_hca_is_refused_with_one_line () {
  one_hca_host
  local id b=$T/bundle rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_9" CMD='echo started' make_bundle "$b" "$POLICY"
  run_container "$id" "$b" || rc=$?
  [ "$rc" -ne 0 ] || fail "the container started"
  local line="roce-hook: $id: annotation roce.io/hca: an HCA the node policy lists (mlx5_0) vs 'mlx5_9' (fix: use one of mlx5_0, or ask the node admin to add it to $POLICY)"
  assert_file_contains "$T/$id.err" "$line"
  [ "$(grep -c 'roce-hook:' "$T/$id.err")" = 1 ] || fail "more than one hook line: $(cat "$T/$id.err")"
  assert_not_contains "$(cat "$T/$id.out")" "started" "container output"
  assert_file_contains "$T/hook.log" "$id: prestart refused: annotation roce.io/hca"
  runtime state "$id" >/dev/null 2>&1 && fail "the refused container still exists"
  true
}

test_malformed_annotations_are_refused () {
  one_hca_host
  local cases=(
    "roce.io/hca=mlx5_0,|remove the empty item"
    "roce.io/hca=mlx5_0,mlx5_0|each HCA once"
    $'roce.io/hca=mlx5_0\nroce.io/ip=192.168.100.105/0|an IPv4 or IPv6 address vs \'192.168.100.105/0\''
    $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.7|an address in mlx5_0\'s pool 198.18.10.100-198.18.10.199 vs \'198.18.10.7\''
    $'roce.io/hca=mlx5_0\nroce.io/ip=::1|an address in mlx5_0\'s pool 198.18.10.100-198.18.10.199 vs \'::1\''
    $'roce.io/hca=mlx5_0\x01|annotation roce.io/hca: printable text vs \'mlx5_0\\'
  )
  local c ann msg id rc
  for c in "${cases[@]}"; do
    ann=${c%%|*} msg=${c#*|}
    id=$(new_id) rc=0
    rm -rf "$T/b"
    ANNOTATIONS=$ann make_bundle "$T/b" "$POLICY"
    run_container "$id" "$T/b" || rc=$?
    [ "$rc" -ne 0 ] || fail "[$ann] started"
    assert_file_contains "$T/$id.err" "roce-hook: $id: annotation roce.io/"
    assert_file_contains "$T/$id.err" "$msg"
  done
}

test_policy_errors_refuse_annotated_starts_naming_the_key () {
  one_hca_host
  sed -i 's/"ifname_prefix"/"ifname_prefx"/' "$POLICY"
  local id rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started with a broken policy"
  assert_file_contains "$T/$id.err" "roce-hook: $id: policy $POLICY: ifname_prefx: unknown key"
}

test_valid_annotation_passes_validation () {
  one_hca_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"
  assert_file_contains "$T/hook.log" "$id: prestart: pid "
  assert_file_contains "$T/hook.log" "HCAs mlx5_0"
  assert_file_contains "$T/hook.log" "$id: poststop"
}

test_hook_command_line () {
  local out rc=0
  out=$("$HOOK" version) || fail "version failed"
  assert_contains "$out" "roce-hook 0."
  out=$("$HOOK" frobnicate 2>&1) || rc=$?
  assert_eq 2 "$rc" "exit status of an unknown command"
  assert_contains "$out" "unknown command"
  rc=0
  # A state that is not JSON and never names our annotation is not ours.
  out=$(echo '{"id":"x"' | "$HOOK" --config /nonexistent prestart 2>&1) || rc=$?
  assert_eq 0 "$rc" "exit status for a broken state without roce.io/hca"
  assert_eq "" "$out" "output for a broken state without roce.io/hca"
  rc=0
  out=$(echo '{"id":"x","annotations":{"roce.io/hca":"mlx5_0"},' | "$HOOK" --config /nonexistent prestart 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status for a broken state that asks for RoCE"
  assert_contains "$out" "roce-hook: x: OCI state: not valid JSON"
  rc=0
  out=$(echo '{"id":"c9","bundle":"/nonexistent","pid":1,"annotations":{}}' |
        ROCE_HOOK_CONFIG=/nonexistent "$HOOK" prestart 2>&1) || rc=$?
  assert_eq 0 "$rc" "unannotated state: exit status"
  assert_eq "" "$out" "unannotated state: output"
  rc=0
  out=$(echo '{"id":"c9","bundle":"/nonexistent","pid":1,"annotations":{"roce.io/hca":"x"}}' |
        ROCE_HOOK_CONFIG=/nonexistent/p.json "$HOOK" createRuntime 2>&1) || rc=$?
  assert_eq 1 "$rc" "annotated state, missing policy"
  assert_contains "$out" "roce-hook: c9: policy: open \`/nonexistent/p.json\`: No such file or directory"
}

run_tests
