# SPDX-License-Identifier: Apache-2.0
# No tenant can wedge or stall the node, and a container started
# again at once with its fixed address starts (a static address's restart).
# The attacks themselves: a non-root, non-dumpable process swapping an fd
# between a namespace and a FIFO while the release, gc and a colliding start
# look at it; a sticky world-writable state_dir; a same-id container created
# while a foreground run's shim ends.
# roce-suite: memcheck test_fifo_swap_wedges_neither_release_nor_gc_nor_a_colliding_start
# roce-suite: memcheck test_same_id_container_created_as_a_run_ends_keeps_its_record
# roce-suite: memcheck test_the_release_left_behind_is_confined_and_elsewhere
# roce-suite: memcheck test_twenty_back_to_back_runs_with_a_fixed_address_all_start
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"

SWAP=$BUILD/helpers/fifo-swap
SHIM_TEST=$BUILD/helpers/roce-runtime-test

policy_set () { # JQ-EXPRESSION
  jq "$1" "$POLICY" > "$POLICY.new" && mv "$POLICY.new" "$POLICY"
}

# The attacker: holds the namespace of PID open, as uid 65534 and
# non-dumpable, its fd 3 swapped between that namespace and a FIFO held for
# reading (a plain open of it waits for a writer for ever).
fifo_attacker () { # PID
  [ -x "$SWAP" ] || skip "needs $SWAP (make the helpers)"
  mkfifo -m 0600 "$T/fifo"
  "$SWAP" "/proc/$1/ns/net" "$T/fifo" 65534 "$T/swap-ready" </dev/null >/dev/null 2>"$T/swap.err" &
  ATTACKER=$!
  defer kill -9 "$ATTACKER"
  local i
  for ((i = 0; i < 100; i++)); do [ -e "$T/swap-ready" ] && break; sleep 0.02; done
  [ -e "$T/swap-ready" ] || fail "the attacker did not start: $(cat "$T/swap.err")"
  # It says it is ready before it drops to the tenant's uid.
  wait_for 5 "the attacker as uid 65534" eval '[ "$(stat -c %u "/proc/$ATTACKER")" = 65534 ]'

  grep -q '^Uid:.*65534' "/proc/$ATTACKER/status" || fail "the attacker kept root"
}

# While the attacker swaps: the release (poststop and its reaper) ends, gc
# ends each time and keeps the lease (the namespace is alive: the attacker
# holds it), a start asking for the address is refused at once with the one
# line, and another tenant's start goes on meanwhile.
test_fifo_swap_wedges_neither_release_nor_gc_nor_a_colliding_start () {
  net_host 1
  need_cmd jq
  policy_set '.lock_timeout_ms = 3000'
  local id cpid out i t0 t1 other
  id=$(new_id)
  net_bundle "$T/b" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150'
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  cpid=$(container_pid "$id")
  fifo_attacker "$cpid"
  timeout 20 "$OCI_RUNTIME" --root "$T/runtime-state" delete -f "$id" 2>"$T/del.err" ||
    fail "delete under the attack: $(cat "$T/del.err")"
  # The release left behind ends within its bounds (3 s and a scan's),
  # waited for as long as any reaper (a shorter bound of its own, 10 s,
  # was a time budget a loaded host or memcheck overran).
  out=$(leases_settled "$POLICY")
  assert_not_contains "$out" '"state": "releasing"' "leases $LEASE_SETTLE_S s after the delete"
  assert_contains "$out" '"address": "198.18.10.150"' "the lease of a namespace still held"
  for ((i = 0; i < 10; i++)); do
    out=$(timeout 10 "$HOOK" --config "$POLICY" gc 2>&1) || fail "gc under the attack: rc $?: $out"
    assert_eq "gc: released 0 leases, 1 held" "$out" "gc $i under the attack"
  done
  for ((i = 0; i < 6; i++)); do
    net_bundle "$T/c$i" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' true
    # Another tenant's start, at the same time.
    other=$(new_id)
    net_bundle "$T/o$i" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0'
    t0=$(date +%s%N)
    run_container "$id-c$i" "$T/c$i" && fail "a start took 198.18.10.150 from a live namespace"
    t1=$(date +%s%N)
    local t2 t3
    t2=$(date +%s%N)
    run_container "$other" "$T/o$i" & local bg=$!
    wait "$bg" || fail "another tenant's start was refused: $(cat "$T/$other.err")"
    t3=$(date +%s%N)
    assert_file_contains "$T/$other.out" "roce0"
    out=$(grep 'roce-hook' "$T/$id-c$i.err" | head -1)
    assert_contains "$out" "roce-hook: $id-c$i: address 198.18.10.150 of mlx5_0: an address no running container holds vs held by" "refusal $i"
    # At once: not after the store's lock_timeout_ms (3 s), nor the
    # runtime's: within a plain run's time on this host now, and 2 s.
    ! timing_holds || [ $(( (t1 - t0) / 1000000 )) -lt $(( (t3 - t2) / 1000000 + 2000 )) ] ||
      fail "the refusal took $(( (t1 - t0) / 1000000 )) ms, a plain run $(( (t3 - t2) / 1000000 )) ms"
  done
  kill -0 "$ATTACKER" || fail "the attacker died: $(cat "$T/swap.err")"
}

# A sticky world-writable state_dir (/tmp's kind) is refused in one line
# with the fix: any user could take the store's fixed names first.  A
# container that did not ask for RoCE still runs.
test_sticky_world_writable_state_dir_is_refused () {
  net_host 1
  need_cmd jq
  local id err
  mkdir -m 1777 "$T/sticky"
  chmod 1777 "$T/sticky"
  policy_set ".state_dir = \"$T/sticky\""
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0 true
  run_container "$id" "$T/b" && fail "an annotated start ran with a sticky world-writable state_dir"
  err=$(grep roce-hook "$T/$id.err" | head -1)
  assert_contains "$err" "roce-hook: $id: state_dir \`$T/sticky\`: a directory owned by root, writable by root only vs a directory owned by uid 0, mode 1777 (fix: point state_dir at a directory of its own" "the refusal"
  [ ! -e "$T/sticky/leases.lock" ] || fail "the store made its lock in the sticky state_dir"
  id=$(new_id)
  HOOKS=1 CMD='echo plain' make_bundle "$T/p" "$POLICY"
  run_container "$id" "$T/p" || fail "an unannotated container was refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" plain
}

# A foreground run through the shim ends (its container deleted) and, before
# its shim removes the run's record and rails file, a container of the same
# id is created: that one keeps its own (exec --process gets its NCCL
# variables; its rails file is there).
test_same_id_container_created_as_a_run_ends_keeps_its_record () {
  net_host 1
  [ -x "$SHIM_TEST" ] || skip "needs $SHIM_TEST (make the helpers)"
  local id sd rc shim=$T/bin/roce-runtime
  # The test build of the shim, with roce-hook beside it as installed.
  mkdir "$T/bin"
  cp "$SHIM_TEST" "$shim"
  ln -s "$HOOK" "$T/bin/roce-hook"
  id=$(new_id)
  sd=$(jq -r .state_dir "$POLICY")
  HOOKS=0 ANNOTATIONS=roce.io/hca=mlx5_0 CMD=true make_bundle "$T/run" "$POLICY"
  HOOKS=0 ANNOTATIONS=roce.io/hca=mlx5_0 CMD='sleep 60' make_bundle "$T/new" "$POLICY"
  mkdir "$T/pause"
  runtime_opts
  defer runtime delete -f "$id"
  ROCE_HOOK_CONFIG=$POLICY ROCE_TEST_PAUSE=run-ended ROCE_TEST_PAUSE_DIR=$T/pause \
    "$shim" "${RUNTIME_OPTS[@]}" run --bundle "$T/run" "$id" </dev/null >"$T/run.out" 2>"$T/run.err" &
  local run=$! i
  for ((i = 0; i < 500; i++)); do [ -e "$T/pause/run-ended.reached" ] && break; sleep 0.02; done
  [ -e "$T/pause/run-ended.reached" ] || fail "the run never ended: $(cat "$T/run.err")"
  # The same id created meanwhile, held where its record and rails file are
  # written and the runtime has not mounted the rails file yet.
  mkdir "$T/pause2"
  ROCE_HOOK_CONFIG=$POLICY ROCE_TEST_PAUSE=create-before-runtime ROCE_TEST_PAUSE_DIR=$T/pause2 \
    "$shim" "${RUNTIME_OPTS[@]}" create --bundle "$T/new" "$id" </dev/null >/dev/null 2>"$T/create.err" &
  local create=$!
  for ((i = 0; i < 500; i++)); do [ -e "$T/pause2/create-before-runtime.reached" ] && break; sleep 0.02; done
  [ -e "$T/pause2/create-before-runtime.reached" ] || fail "the create never got there: $(cat "$T/create.err")"
  [ -e "$sd/shim/$id.json" ] || fail "no record after the create"
  [ -e "$sd/shim/$id.rails" ] || fail "no rails file after the create"
  # The run's shim goes on: its own files only go.
  touch "$T/pause/run-ended.go"
  rc=0
  wait "$run" || rc=$?
  assert_eq 0 "$rc" "the run's status ($(cat "$T/run.err"))"
  [ -e "$sd/shim/$id.json" ] || fail "the run's shim removed the new container's record"
  [ -e "$sd/shim/$id.rails" ] || fail "the run's shim removed the new container's rails file"
  touch "$T/pause2/create-before-runtime.go"
  rc=0
  wait "$create" || rc=$?
  assert_eq 0 "$rc" "the same-id create's status ($(cat "$T/create.err"))"
  ROCE_HOOK_CONFIG=$POLICY "$shim" "${RUNTIME_OPTS[@]}" start "$id" 2>"$T/start.err" ||
    fail "start: $(cat "$T/start.err")"
  cat > "$T/p.json" <<'JSON'
{"terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["/bin/sh", "-c", "env; cat /dev/roce/rails"],
 "env": ["PATH=/bin"], "cwd": "/"}
JSON
  ROCE_HOOK_CONFIG=$POLICY "$shim" "${RUNTIME_OPTS[@]}" exec --process "$T/p.json" "$id" \
    </dev/null >"$T/exec.out" 2>"$T/exec.err" || fail "exec: $(cat "$T/exec.err")"
  assert_file_contains "$T/exec.out" "NCCL_IB_HCA=mlx5_0"
  assert_file_contains "$T/exec.out" "mlx5_0 roce0 198.18.10."
}

# An fd-heavy crowd (60 processes of 19,000 fds, what a root container with a
# large nofile limit makes) and a holder the kernel cannot be asked about (no
# namespace id, as an earlier version wrote it): gc scans for it, outside the
# store's lock and for a bounded time, and keeps it; a start asking for its
# address is refused; another start meanwhile is not kept waiting past
# lock_timeout_ms by either.
test_fd_heavy_crowd_keeps_starts_and_gc_within_their_bounds () {
  net_host 1
  need_cmd python3
  policy_set '.lock_timeout_ms = 500'
  local id other i bg
  python3 - "$T/crowd-ready" <<'PY' >/dev/null 2>"$T/crowd.err" &
import os, sys, time, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
per = min(19000, hard - 64)
fd = os.open("/dev/null", os.O_RDONLY)
for _ in range(60):
    if os.fork() == 0:
        for _ in range(per):
            os.dup(fd)
        open(sys.argv[1] + ".%d" % os.getpid(), "w").close()
        time.sleep(600)
        os._exit(0)
time.sleep(600)
PY
  local crowd=$!
  defer "pkill -9 -P $crowd; kill -9 $crowd"
  for ((i = 0; i < 300; i++)); do [ "$(ls "$T" | grep -c crowd-ready)" -ge 60 ] && break; sleep 0.1; done
  [ "$(ls "$T" | grep -c crowd-ready)" -ge 60 ] || fail "the crowd did not form: $(cat "$T/crowd.err")"
  id=$(new_id)
  net_bundle "$T/b" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.160'
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  local f n=0
  for f in "$T"/state/holders/*; do
    grep -q '"198.18.10.160"' "$f" || continue
    jq -c 'del(.nsid)' "$f" > "$f.x" && mv "$f.x" "$f" && n=$((n + 1))
  done
  assert_eq 1 "$n" "holders made legacy"
  for ((i = 0; i < 3; i++)); do
    "$HOOK" --config "$POLICY" gc >"$T/gc.out" 2>&1 &
    bg=$!
    other=$(new_id)
    net_bundle "$T/o$i" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0'
    run_container "$other" "$T/o$i" || fail "a start beside gc among the crowd: $(cat "$T/$other.err")"
    assert_file_contains "$T/$other.out" "roce0"
    timeout 20 tail --pid="$bg" -f /dev/null
    wait "$bg" || fail "gc among the crowd: $(cat "$T/gc.out")"
    # Held: the crowd's legacy holder, and the start beside it while its
    # release is on its way (slow under valgrind; gc may release that one
    # itself once it is gone).  Never the legacy holder's address.
    grep -Eqx 'gc: released [01] leases, [12] held' "$T/gc.out" ||
      fail "gc among the crowd: expected 'gc: released 0 leases, 1 held' (or 2, the start beside it not yet released), found '$(cat "$T/gc.out")'"
    ! grep -q "198.18.10.160" "$T/gc.out" || fail "gc released the running container's address: $(cat "$T/gc.out")"
  done
  net_bundle "$T/c" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.160' true
  run_container "$id-c" "$T/c" && fail "a start took the address of a running container"
  assert_contains "$(grep roce-hook "$T/$id-c.err" | head -1)" "address 198.18.10.160 of mlx5_0: an address no running container holds vs held by container $id"
}

# The process a foreground run through the shim leaves behind to release:
# not in the caller's directory (a bundle on a tmpfs unmounts while it
# lives), gc's capabilities (NET_ADMIN, NET_RAW, SYS_ADMIN for setns,
# SYS_PTRACE for the scan) and a seccomp filter, none of the caller's fds.
test_the_release_left_behind_is_confined_and_elsewhere () {
  net_host 1
  [ -x "$SHIM_TEST" ] || skip "needs $SHIM_TEST (make the helpers)"
  local id shim=$T/bin/roce-runtime pid i rc
  mkdir "$T/bin" "$T/pause" "$T/tmpfs"
  cp "$SHIM_TEST" "$shim"
  ln -s "$HOOK" "$T/bin/roce-hook"
  mount -t tmpfs -o size=64m roce-bundle "$T/tmpfs"
  defer umount -l "$T/tmpfs"
  HOOKS=0 net_bundle "$T/tmpfs/b" roce.io/hca=mlx5_0 true
  id=$(new_id)
  runtime_opts
  defer runtime delete -f "$id"
  rc=0
  (cd "$T/tmpfs/b" && ROCE_HOOK_CONFIG=$POLICY ROCE_TEST_PAUSE=release-confined ROCE_TEST_PAUSE_DIR=$T/pause \
    "$shim" "${RUNTIME_OPTS[@]}" run --bundle . "$id" </dev/null >"$T/run.out" 2>"$T/run.err") || rc=$?
  assert_eq 0 "$rc" "the run ($(cat "$T/run.err"))"
  for ((i = 0; i < 250; i++)); do [ -e "$T/pause/release-confined.reached" ] && break; sleep 0.02; done
  [ -e "$T/pause/release-confined.reached" ] || fail "no release was left behind"
  pid=$(pgrep -f -- "--bundle . $id\$" | head -1)
  [ -n "$pid" ] || fail "the release left behind is not found"
  defer touch "$T/pause/release-confined.go"
  assert_eq / "$(readlink "/proc/$pid/cwd")" "its working directory"
  assert_eq 0000000000283000 "$(awk '/^CapPrm/ {print $2}' "/proc/$pid/status")" "its permitted capabilities"
  assert_eq 2 "$(awk '/^Seccomp:/ {print $2}' "/proc/$pid/status")" "its seccomp mode"
  assert_eq "0 1 2 3" "$(ls "/proc/$pid/fd" | sort -n | head -4 | tr '\n' ' ' | sed 's/ $//')" "its fds (stdio and its mark)"
  umount "$T/tmpfs" || fail "the bundle's tmpfs is busy"
  touch "$T/pause/release-confined.go"
  for ((i = 0; i < 250; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
  kill -0 "$pid" 2>/dev/null && fail "the release did not end"
  assert_not_contains "$(LEASE_SETTLE_S=10 leases_settled "$POLICY")" '"address"' "leases after the release"
}

# A static address's restart: a worker with a fixed address started again at
# once (a job launcher's restart) starts every time, through the shim's
# foreground run (its release goes on in a process left behind) and through
# runc with the hooks (a poststop's reaper).
test_twenty_back_to_back_runs_with_a_fixed_address_all_start () {
  net_host 1
  local id i refused=0 rc n
  n=$(rounds 20 8)
  # Under memcheck the previous run's release takes longer than the
  # default lock_timeout_ms, the bound of the wait for it (the hooks' own
  # timeout is 120 s there too).
  [ -z "${ROCE_VALGRIND:-}" ] || policy_set '.lock_timeout_ms = 60000'
  HOOKS=0 net_bundle "$T/s" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' 'ip -o -4 addr show roce0'
  export ROCE_HOOK_CONFIG=$POLICY
  runtime_opts
  for ((i = 0; i < n; i++)); do
    id=$(new_id)
    rc=0
    timeout 60 "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/s" "$id" </dev/null >"$T/s$i.out" 2>"$T/s$i.err" || rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q "198.18.10.150/24" "$T/s$i.out"; then
      refused=$((refused + 1))
      echo "run $i: rc $rc: $(cat "$T/s$i.err")"
    fi
  done
  assert_eq 0 "$refused" "shim runs of $n refused"
  net_bundle "$T/h" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' 'ip -o -4 addr show roce0'
  for ((i = 0; i < n; i++)); do
    id=$(new_id)
    if ! run_container "$id" "$T/h" || ! grep -q "198.18.10.150/24" "$T/$id.out"; then
      refused=$((refused + 1))
      echo "hook run $i: $(cat "$T/$id.err")"
    fi
  done
  assert_eq 0 "$refused" "runc runs (hooks) of $n refused"
}

# gc of holders whose namespaces are gone (containers that died without a
# poststop) asks the kernel once for all of them, not once a holder: its
# namespace ids and the parent's interface list, a dump each; it reads each
# holder's record once (under the lock only those changed since), and an
# index entry that links to the record it read is not read again.  300
# stale holders, counted with strace.
test_gc_of_stale_holders_asks_the_kernel_once () {
  need_cmd strace
  need_cmd python3
  net_host 1
  local sd n=300 out nl opens
  sd=$(jq -r .state_dir "$POLICY")
  dead_store "$sd" "$n" "$(cat "/sys/class/net/$NIC/ifindex")"
  strace -f -c -o "$T/strace" -e trace=openat,sendto,sendmsg "$HOOK" --config "$POLICY" gc > "$T/gc.out" 2>&1 ||
    fail "gc: $(cat "$T/gc.out")"
  assert_contains "$(cat "$T/gc.out")" "gc: released $n leases, 0 held" "gc"
  [ -z "$(find "$sd/holders" "$sd/addrs" "$sd/containers" -mindepth 1)" ] || fail "files left: $(find "$sd" | head)"
  nl=$(awk '$NF == "sendto" || $NF == "sendmsg" {n += $4} END {print n + 0}' "$T/strace")
  opens=$(awk '$NF == "openat" {print $4}' "$T/strace")
  [ "$nl" -le 10 ] || fail "gc sent $nl netlink requests for $n stale holders (a dump each expected)"
  [ "$opens" -le $((n + 60)) ] || fail "gc opened $opens files for $n stale holders (each record once expected)"
}

run_tests
