# SPDX-License-Identifier: Apache-2.0
# Regression tests for defects found by review that only a real runtime and
# a real host show.  Each failed before its fix.
# roce-suite: memcheck
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"

# An unannotated container whose config.json is odd in every way runc accepts
# (a duplicate key, nesting far deeper than 64, 80,000 annotations) starts
# under the hook and through the shim, promptly, and the shim leaves the file
# byte for byte.
test_an_odd_unannotated_spec_is_never_refused_or_delayed () {
  one_hca_host
  local id deep n=80000 t0 t1 before
  CMD='echo plain' make_bundle "$T/b" "$POLICY"
  deep=$(printf '[%.0s' $(seq 200))1$(printf ']%.0s' $(seq 200))
  python3 - "$T/b/config.json" "$deep" "$n" <<'PY'
import sys
f, deep, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = open(f).read()
ann = ",".join('"example.com/k%d":"v"' % i for i in range(n))
s = s.replace('"annotations": {}', '"annotations": {%s}' % ann)
s = s.replace('"hostname": "roce-test",', '"hostname": "roce-test", "hostname": "roce-test", "x-deep": %s,' % deep)
open(f, "w").write(s)
PY
  assert_file_contains "$T/b/config.json" '"example.com/k79999":"v"'
  # The same spec without the hook: what runc alone takes on this host now.
  mkdir -p "$T/nohook"
  make_rootfs "$T/nohook/rootfs"
  jq -c 'del(.hooks)' "$T/b/config.json" > "$T/nohook/config.json" || fail "jq"
  local t2 t3
  id=$(new_id)
  t2=$(date +%s%N)
  run_container "$id" "$T/nohook" || fail "runc alone refused the odd spec: $(cat "$T/$id.err")"
  t3=$(date +%s%N)
  id=$(new_id)
  t0=$(date +%s%N)
  run_container "$id" "$T/b" || fail "the hook refused an unannotated container: $(cat "$T/$id.err")"
  t1=$(date +%s%N)
  assert_file_contains "$T/$id.out" "plain"
  # Seconds, not a benchmark: the quadratic check took 16 s here; within
  # twice runc's own time and 3 s, whatever the host's load.
  ! timing_holds || [ $(( (t1 - t0) / 1000000 )) -lt $(( 2 * (t3 - t2) / 1000000 + 3000 )) ] ||
    fail "the start took $(( (t1 - t0) / 1000000 )) ms, runc alone $(( (t3 - t2) / 1000000 )) ms"
  before=$(sha256sum < "$T/b/config.json")
  id=$(new_id)
  export ROCE_HOOK_CONFIG=$POLICY # the shim execs the runtime under test
  runtime_opts
  defer runtime delete -f "$id"
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "the shim refused an unannotated container: $(cat "$T/err")"
  assert_file_contains "$T/out" "plain"
  assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "config.json checksum"
}

# `roce.io/hca\u0000x` is another key for runc and Kubernetes: not ours.  A
# NUL inside our value is refused, not cut to the HCAs before it.
test_an_escaped_nul_neither_activates_nor_smuggles () {
  one_hca_host
  local id
  CMD='ip -o link; echo started' make_bundle "$T/b" "$POLICY"
  sed -i 's|"annotations": {}|"annotations": {"roce.io/hca\\u0000x": "mlx5_0"}|' "$T/b/config.json"
  assert_file_contains "$T/b/config.json" 'roce.io/hca\u0000x'
  id=$(new_id)
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"
  assert_not_contains "$(cat "$T/$id.out")" "roce0" "links of a container that did not ask"
  assert_eq "" "$(held_addresses)" "leases"

  rm -rf "$T/b"
  CMD='echo started' make_bundle "$T/b" "$POLICY"
  sed -i 's|"annotations": {}|"annotations": {"roce.io/hca": "mlx5_0\\u0000,mlx5_9"}|' "$T/b/config.json"
  id=$(new_id)
  ! run_container "$id" "$T/b" || fail "started with a NUL in roce.io/hca"
  assert_file_contains "$T/$id.err" "roce-hook: $id: "
  assert_file_contains "$T/$id.err" "NUL"
  [ "$(grep -c 'roce-hook:' "$T/$id.err")" = 1 ] || fail "not one line: $(cat "$T/$id.err")"
}

# Poststop never fails, and does not print a second line after a refusal.
test_poststop_with_a_broken_policy_is_quiet_and_succeeds () {
  one_hca_host
  local id rc=0 out
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  echo '{ broken' > "$POLICY"
  out=$(printf '{"ociVersion":"1.0.2","id":"%s","status":"stopped","bundle":"%s"}' "$id" "$T/b" |
        "$HOOK" --config "$POLICY" poststop 2>&1) || rc=$?
  assert_eq 0 "$rc" "poststop's status"
  assert_eq "" "$out" "poststop's output"
}

# A stopped process holding the store's lock: the start is refused after
# lock_timeout_ms, naming it, instead of hanging until the runtime's timeout.
test_a_stopped_lock_holder_is_named_within_the_timeout () {
  one_hca_host
  need_cmd flock
  sed -i 's|"ifname_prefix"|"lock_timeout_ms": 300,\n  "ifname_prefix"|' "$POLICY"
  mkdir -p "$T/state"
  flock "$T/state/leases.lock" sleep 300 &
  local holder=$! id t0 t1 sleeper
  defer kill -9 "$holder"
  # flock takes the lock, then runs its sleep: the lock is held once it does.
  wait_for 10 "flock's sleep" pgrep -P "$holder" sleep
  sleeper=$(pgrep -P "$holder" sleep)
  kill -STOP "$holder"
  defer kill -9 "$sleeper"
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  t0=$(date +%s%N)
  ! run_container "$id" "$T/b" || fail "started while the lock was held"
  t1=$(date +%s%N)
  assert_file_contains "$T/$id.err" "the lease store lock \`$T/state/leases.lock\`: free within 300 ms vs held by pid"
  assert_file_contains "$T/$id.err" "(fix: "
  ! timing_holds || [ $(( (t1 - t0) / 1000000 )) -lt 10000 ] || fail "waited $(( (t1 - t0) / 1000000 )) ms"
}

# A policy others can write is refused (sshd's StrictModes); a container that
# did not ask for RoCE does not even read it.
test_a_policy_others_can_write_is_refused () {
  one_hca_host
  local id
  chmod 0666 "$POLICY"
  net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  id=$(new_id)
  ! run_container "$id" "$T/b" || fail "started under a world-writable policy"
  assert_file_contains "$T/$id.err" "the policy \`$POLICY\`: owned by root and writable by its owner only vs owner uid 0, mode 0666 (fix: chown root"
  rm -rf "$T/b"
  CMD='echo plain' make_bundle "$T/b" "$POLICY"
  id=$(new_id)
  run_container "$id" "$T/b" || fail "an unannotated container was refused: $(cat "$T/$id.err")"
}

# A pod's namespace pinned only inside another mount namespace (a runtime's
# private one, a systemd unit with PrivateMounts) keeps its lease through
# poststop and gc, wherever they run; it goes once the pin goes.
test_a_pin_in_another_mount_namespace_keeps_the_lease () {
  net_host 1
  need_cmd unshare
  local pinner pin id
  touch "$T/pin"
  unshare -m --propagation private bash -c \
    "unshare --net='$T/pin' true && touch '$T/pinned' && exec sleep 300" &
  pinner=$!
  defer kill -9 "$pinner"
  for _ in $(seq 50); do [ -e "$T/pinned" ] && break; sleep 0.1; done
  [ -e "$T/pinned" ] || fail "no pinned namespace"
  # The host's mount namespace does not see the pin.
  ! grep -q "$T/pin" /proc/self/mountinfo || fail "the pin is visible here"
  pin=/proc/$pinner/root$T/pin
  id=$(new_id)
  NETNS_PATH=$pin net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_eq "198.18.10.100" "$(held_addresses)" "lease after the container's poststop"
  "$HOOK" --config "$POLICY" gc >/dev/null || fail "gc failed"
  assert_eq "198.18.10.100" "$(held_addresses)" "lease after gc"
  kill -9 "$pinner"
  wait "$pinner" 2>/dev/null || true
  gc_until ", 0 held" >/dev/null || fail "gc failed"
  assert_eq "" "$(held_addresses)" "lease after the pin went"
}

# A host directory mounted at /dev/infiniband by the spec: nothing is created
# in it (the start is refused, the directory stays empty).
test_a_host_directory_at_dev_infiniband_is_left_alone () {
  one_hca_host
  fake_rdma_cm
  need_cmd jq
  local id
  mkdir -m 0755 "$T/hostdir"
  net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  jq --arg src "$T/hostdir" '.mounts += [{"destination":"/dev/infiniband","type":"bind","source":$src,"options":["rbind","rw"]}]' \
    "$T/b/config.json" > "$T/c.json" && mv "$T/c.json" "$T/b/config.json"
  id=$(new_id)
  ! run_container "$id" "$T/b" || fail "started"
  assert_file_contains "$T/$id.err" "\`/dev/infiniband\` in the container: on the container's own rootfs or a tmpfs of its own vs a mount from elsewhere"
  assert_eq "" "$(ls -A "$T/hostdir")" "the host directory's content"
  assert_eq "" "$(held_addresses)" "leases after the refusal"
}

# The host's /dev is a devtmpfs, which reports itself as a tmpfs: a spec that
# bind-mounts a host tmpfs (here one mounted in the hook's namespace, as the
# host's /dev is) gets nothing made in it.  With the RDMA nodes already there
# (an RDMA host's /dev) the container starts, without the rails file, which
# would otherwise stay on the host and be shared by every such container.
test_a_host_tmpfs_at_dev_gets_nothing_made_in_it () {
  one_hca_host
  fake_rdma_cm
  need_cmd jq
  local id
  mkdir -m 0755 "$T/hostdev"
  mount -t tmpfs -o mode=0755 roce-hostdev "$T/hostdev" || fail "tmpfs"
  defer umount -l "$T/hostdev"
  mkdir "$T/hostdev/infiniband"
  touch "$T/hostdev/infiniband/uverbs0" "$T/hostdev/infiniband/rdma_cm" "$T/hostdev/null"
  before=$(cd "$T/hostdev" && find . | sort)
  net_bundle "$T/b" roce.io/hca=mlx5_0 'ls /dev/infiniband; ls /dev/roce 2>&1 || true'
  jq --arg src "$T/hostdev" '.mounts = [.mounts[] | select(.destination != "/dev")]
      + [{"destination":"/dev","type":"bind","source":$src,"options":["rbind","rw"]}]' \
    "$T/b/config.json" > "$T/c.json" && mv "$T/c.json" "$T/b/config.json"
  id=$(new_id)
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  # (crun gives a container whose /dev is a bind mount no output here.)
  [ "$OCI_RUNTIME" != runc ] || assert_file_contains "$T/$id.out" "uverbs0"
  assert_file_contains "$T/hook.log" "rails file not published"
  assert_eq "$before" "$(cd "$T/hostdev" && find . | sort)" "the host tmpfs's content"
}

# A container that made a pod's network and is then refused (a later step)
# rolls back only what nobody else uses: a container that joined the network
# meanwhile keeps it, its interface and its lease.  The first start is held
# between the network and the devices (a pause point of the test build)
# while the second joins.
test_a_rollback_keeps_the_network_a_container_joined_meanwhile () {
  net_host 1
  local pid a b apid rc=0 i
  a=$(new_id) b=$(new_id)
  pid=$(netns_process)
  # A's spec lowers memlock below the policy's: refused at the devices step.
  NAMESPACES_JSON='[{"type":"network"}]' RLIMITS_JSON='[{"type":"RLIMIT_MEMLOCK","hard":65536,"soft":65536}]' \
    net_bundle "$T/a"
  oci_state "$a" "$pid" "$T/a" | ROCE_TEST_PAUSE=network-made ROCE_TEST_PAUSE_DIR=$T \
    "$BUILD/helpers/roce-hook-test" --config "$POLICY" prestart 2>"$T/a.err" &
  apid=$!
  defer "kill $apid"
  for ((i = 0; i < 500; i++)); do [ -e "$T/network-made.reached" ] && break; sleep 0.02; done
  [ -e "$T/network-made.reached" ] || fail "the first start never made the network: $(cat "$T/a.err")"
  assert_eq "198.18.10.100/24" "$(ns_addr "$pid" roce0)" "the network the first start made"
  NETNS_PATH=/proc/$pid/ns/net net_bundle "$T/b"
  start_container "$b" "$T/b" || fail "the joiner: $(cat "$T/$b.err")"
  touch "$T/network-made.go"
  wait "$apid" || rc=$?
  assert_eq 1 "$rc" "exit status of the refused first start"
  assert_file_contains "$T/a.err" "roce-hook: $a: RLIMIT_MEMLOCK of the container"
  assert_eq "198.18.10.100/24" "$(ns_addr "$pid" roce0)" "the joiner's roce0 after the rollback"
  assert_eq "198.18.10.100" "$(held_addresses)" "the lease after the rollback"
  assert_contains "$(hook_leases)" "$b" "the holder"
  assert_not_contains "$(hook_leases)" "$a" "the refused container among the holders"
  assert_file_contains "$T/hook.log" "rolling back: the network stays, $b joined it meanwhile"
  # The joiner goes, and with the namespace's last process the lease.
  runtime delete -f "$b"
  kill -9 "$pid"
  for ((i = 0; i < 100; i++)); do [ -e "/proc/$pid" ] || break; sleep 0.02; done
  gc_until ", 0 held" >/dev/null
  assert_eq "" "$(held_addresses)" "leases once the namespace is gone"
}

# Container ids may be 1,024 bytes (the OCI limit the hook takes): the log
# keeps them whole, never cut.
test_a_long_container_id_is_logged_whole () {
  one_hca_host
  local id
  id=c$(head -c 1023 /dev/zero | tr '\0' 'x')
  ANNOTATIONS="roce.io/hca=mlx5_9" make_bundle "$T/b" "$POLICY"
  printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":1,"bundle":"%s","annotations":{"roce.io/hca":"mlx5_9"}}' \
    "$id" "$T/b" | "$HOOK" --config "$POLICY" prestart 2>"$T/err" && fail "an unlisted HCA accepted"
  assert_file_contains "$T/err" "roce-hook: $id: annotation roce.io/hca"
  grep -qF "$id" "$T/hook.log" || fail "the log does not carry the whole id: $(tail -c 300 "$T/hook.log")"
}

run_tests
