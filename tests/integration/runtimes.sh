# SPDX-License-Identifier: Apache-2.0
# roce-runtime (the shim) under runc, containerd and Podman; Podman with the
# hooks.d files; the contrib/ snippets are valid.
# roce-suite: each-runtime test_shim_leaves_an_unannotated_bundle_byte_for_byte
# roce-suite: each-runtime test_shim_gives_an_annotated_runc_container_everything
# roce-suite: each-runtime test_shim_create_then_delete_releases_through_the_poststop_hook
# roce-suite: each-runtime test_shim_takes_the_network_back_when_the_runtime_fails
# roce-suite: each-runtime test_shim_refusal_goes_to_runc_json_log_and_runs_nothing
# roce-suite: each-runtime test_shim_passes_a_signal_on_and_ends_as_the_runtime_did
# roce-suite: memcheck test_shim_leaves_an_unannotated_bundle_byte_for_byte
# roce-suite: memcheck test_shim_front_runs_plain_calls_itself_and_hands_the_rest_to_its_engine
# roce-suite: memcheck test_shim_gives_an_annotated_runc_container_everything
# roce-suite: memcheck test_shim_run_returns_releasing_and_the_same_id_again_keeps_its_own
# roce-suite: memcheck test_shim_create_then_delete_releases_through_the_poststop_hook
# roce-suite: memcheck test_gc_sweeps_the_shim_record_of_a_container_whose_bundle_is_gone
# roce-suite: memcheck test_shim_takes_the_network_back_when_the_runtime_fails
# roce-suite: memcheck test_shim_refusal_goes_to_runc_json_log_and_runs_nothing
# roce-suite: memcheck test_cdi_spec_lists_each_policy_hca
# roce-suite: memcheck test_shim_replaces_what_a_killed_shim_left_in_the_bundle
# roce-suite: valgrind test_shim_front_runs_plain_calls_itself_and_hands_the_rest_to_its_engine
# roce-suite: valgrind test_shim_gives_an_annotated_runc_container_everything
# roce-suite: valgrind test_gc_sweeps_the_shim_record_of_a_container_whose_bundle_is_gone
# roce-suite: valgrind test_cdi_spec_lists_each_policy_hca
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/runtimes.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"

# What the container reports about itself, one fact a line.
SHOW='grep CapEff /proc/self/status; grep "locked memory" /proc/self/limits;
for n in /dev/infiniband/*; do stat -c "node %n %t:%T" "$n"; done;
env | grep ^NCCL_ | sort;
dd if=/dev/infiniband/uverbs0 of=/dev/null count=1 2>&1 | grep -m1 -i "can.t open\|device\|permitted";
echo "links $(ip -o link | cut -d: -f2 | tr -d " " | sort | tr "\n" " ")";
ip -o link show lo | grep -q "[<,]UP[,>]" && echo lo-up || echo lo-down;
grep -v "^#" /dev/roce/rails | sed "s/^/rails /";
echo x 2>/dev/null >> /dev/roce/rails || echo rails-ro'

# assert_rdma_container OUTFILE: what an annotated container must see.
assert_rdma_container () {
  local out=$1 capeff
  capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' "$out")
  [ -n "$capeff" ] || fail "no CapEff in: $(cat "$out")"
  [ $(( (16#$capeff >> 14) & 1 )) = 1 ] || fail "CAP_IPC_LOCK not in CapEff $capeff"
  assert_file_contains "$out" "$MEMLOCK"
  grep "locked memory" "$out" | grep -q "$MEMLOCK *$MEMLOCK" || fail "memlock: $(grep locked "$out")"
  assert_file_contains "$out" "node /dev/infiniband/uverbs0 e7:c0"
  assert_file_contains "$out" "node /dev/infiniband/rdma_cm a:3a"
  grep -q "uverbs1" "$out" && fail "another HCA's node is visible: $(cat "$out")"
  assert_file_contains "$out" "NCCL_IB_HCA=mlx5_0"
  assert_file_contains "$out" "NCCL_IB_TC=106"
  assert_file_contains "$out" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  # ENXIO: the device cgroup let the open through; only the driver is missing.
  assert_file_contains "$out" "No such device or address"
  assert_file_contains "$out" "links lo roce0"
  # lo is up, as in a namespace the runtime makes (the shim makes its own).
  assert_file_contains "$out" "lo-up"
  # The spec carries the devices and their cgroup rules, and the shim made
  # the network before the runtime ran: no hook ran to start it.
  assert_file_contains "$T/hook.log" "start (roce-runtime): HCAs mlx5_0, the network made before the runtime"
  grep -q "createRuntime: pid\|prestart: pid" "$T/hook.log" && fail "a hook ran at start: $(cat "$T/hook.log")"
  # The rails file, bind-mounted read-only from the shim's record directory.
  assert_file_contains "$out" "rails mlx5_0 roce0 198.18.10.100 24"
  assert_file_contains "$out" "rails-ro"
  true
}

test_shim_leaves_an_unannotated_bundle_byte_for_byte () {
  setup_host
  local id
  id=$(new_id)
  HOOKS=0 CMD='echo plain' make_bundle "$T/b" "$POLICY"
  local before
  before=$(sha256sum < "$T/b/config.json")
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim run failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  assert_file_contains "$T/out" "plain"
  assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "config.json checksum"
}

# roce-runtime is a front (linked against musl: no glibc start-up) that
# runs the runtime itself for a call that needs nothing of the engine, and
# hands every other call to roce-runtime-engine beside it.  Alone, without
# its engine: a plain container runs; an annotated one, and a call for an id
# with a record, are refused saying what is missing, and nothing runs.
test_shim_front_runs_plain_calls_itself_and_hands_the_rest_to_its_engine () {
  setup_host
  local id sd
  id=$(new_id)
  mkdir -p "$T/solo"
  cp "$BUILD/roce-runtime" "$T/solo/roce-runtime"
  HOOKS=0 CMD='echo plain' make_bundle "$T/plain" "$POLICY"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$SHOW make_bundle "$T/ann" "$POLICY"
  local before
  before=$(sha256sum < "$T/ann/config.json")
  runtime_opts
  ROCE_HOOK_CONFIG=$POLICY "$T/solo/roce-runtime" "${RUNTIME_OPTS[@]}" run --bundle "$T/plain" "$id" \
    </dev/null >"$T/out" 2>"$T/err" || fail "plain run through the front alone failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  assert_file_contains "$T/out" "plain"
  local msg="roce-runtime: the engine: an executable roce-runtime-engine beside roce-runtime vs No such file or directory (fix: install roce-hook's programs together, e.g. make install)"
  if ROCE_HOOK_CONFIG=$POLICY "$T/solo/roce-runtime" "${RUNTIME_OPTS[@]}" run --bundle "$T/ann" "$id-a" \
    </dev/null >"$T/out" 2>"$T/err"; then
    fail "an annotated run through the front alone ran"
  fi
  assert_eq "$msg" "$(cat "$T/err")" "the front's refusal"
  runtime state "$id-a" >/dev/null 2>&1 && fail "a container $id-a exists"
  assert_eq "$before" "$(sha256sum < "$T/ann/config.json")" "config.json checksum"
  assert_eq 0 "$("$HOOK" --config "$POLICY" leases --json | jq ".leases | length")" "leases held"
  # A record of the id: a delete is the engine's (it removes the record).
  sd=$(jq -r .state_dir "$POLICY")
  mkdir -p -m 0700 "$sd/shim"
  echo '{}' > "$sd/shim/$id-r.json"
  if ROCE_HOOK_CONFIG=$POLICY "$T/solo/roce-runtime" "${RUNTIME_OPTS[@]}" delete "$id-r" 2>"$T/err"; then
    fail "a delete with a record went past the engine"
  fi
  assert_eq "$msg" "$(cat "$T/err")" "the front's refusal of a delete with a record"
  # With the engine beside it, that delete removes the record.
  ROCE_HOOK_CONFIG=$POLICY "$SHIM" "${RUNTIME_OPTS[@]}" delete "$id-r" 2>/dev/null || true
  [ ! -e "$sd/shim/$id-r.json" ] || fail "the engine left the record of $id-r"
}

test_shim_gives_an_annotated_runc_container_everything () {
  setup_host
  local id
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$SHOW make_bundle "$T/b" "$POLICY"
  local before
  before=$(sha256sum < "$T/b/config.json")
  # No --bundle: the bundle is the working directory, as runc's default.
  runtime_opts
  (cd "$T/b" && "$SHIM" "${RUNTIME_OPTS[@]}" run "$id") </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim run failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  assert_rdma_container "$T/out"
  # The network was the shim's to make, the release too (a foreground run):
  # the runtime joined the namespace by path and ran no hook of ours.
  # Once the run is over config.json is the caller's again, byte for byte
  # (the shim's named an fd of its own: another process may have its pid by
  # the next run of the bundle), and nothing of the shim's is beside it.
  assert_file_contains "$T/hook.log" "the network made before the runtime"
  # The seed's checks of the spec the runtime got ran (while it ran).
  assert_file_contains "$T/hook.log" "check(s) not as the seed's recipe wants (never refused)"
  assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "config.json checksum after the run"
  assert_eq "config.json rootfs" "$(ls -A "$T/b" | tr '\n' ' ' | sed 's/ $//')" "the bundle after the run"
  # A second run of the same bundle through the shim: a network of its own.
  (cd "$T/b" && "$SHIM" "${RUNTIME_OPTS[@]}" run "$id-2") </dev/null >"$T/out2" 2>"$T/err" ||
    fail "second shim run failed: $(cat "$T/err")"
  defer runtime delete -f "$id-2"
  assert_file_contains "$T/out2" "links lo roce0"
  assert_eq "" "$(held_addresses)" "leases after the run"
  [ -z "$(ls "$T/state/shim")" ] || fail "the shim left $(ls "$T/state/shim")"
}

# After a foreground run the release goes on in a process the shim leaves
# behind: from the moment the run returns `leases` says "releasing", never
# "in use" by the container that ended, and a container of the same id
# started at once keeps what it got (the release goes by the namespace).
test_shim_run_returns_releasing_and_the_same_id_again_keeps_its_own () {
  setup_host
  need_cmd jq
  local id pid addr states
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=true make_bundle "$T/b" "$POLICY"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 30' make_bundle "$T/b2" "$POLICY"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim run failed: $(cat "$T/err")"
  states=$("$HOOK" --config "$POLICY" leases --json | jq -r '.leases[] | "\(.address) \(.state)"')
  case $states in
    "" | "198.18.10.100 releasing") ;;
    *) fail "leases right after the run: $states" ;;
  esac
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b2" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim create of the same id failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  leases_settled "$POLICY" >/dev/null
  pid=$(container_pid "$id")
  addr=$(ns_addr "$pid" roce0)
  [ -n "$addr" ] || fail "the second container has no address on roce0"
  assert_eq "${addr%/*} in use $id" \
    "$(hook_leases --json | jq -r '.leases[] | "\(.address) \(.state) \(.containers | join(","))"')" \
    "the leases once the first run's release is done"
}

# A create (containerd's way): the shim makes the network and waits for the
# runtime; the hook beside the shim releases at delete, as poststop.
test_shim_create_then_delete_releases_through_the_poststop_hook () {
  setup_host
  local id
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD="$SHOW" make_bundle "$T/b" "$POLICY"
  local before
  before=$(sha256sum < "$T/b/config.json")
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim create failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  # The runtime had the shim's spec; the bundle has the caller's again.
  assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "config.json checksum after create"
  assert_eq "config.json rootfs" "$(ls -A "$T/b" | tr '\n' ' ' | sed 's/ $//')" "the bundle after create"
  assert_eq "198.18.10.100" "$(held_addresses)" "leases while created"
  local pid
  pid=$(container_pid "$id")
  assert_eq "198.18.10.100/24" "$(ns_addr "$pid" roce0)" "roce0 of the created container"
  # The rails file is the container's (a bind mount it holds), no longer
  # the host's.
  nsenter -t "$pid" -m cat /dev/roce/rails > "$T/rails" 2>&1 || fail "rails file: $(cat "$T/rails")"
  assert_file_contains "$T/rails" "mlx5_0 roce0 198.18.10.100 24"
  [ -z "$(ls "$T/state/shim" | grep rails)" ] || fail "the rails file stayed on the host"
  runtime start "$id" || fail "start failed"
  stopped () { runtime state "$id" 2>/dev/null | grep -q '"status": *"stopped"'; }
  wait_for 30 "the container to stop" stopped
  "$SHIM" "${RUNTIME_OPTS[@]}" delete "$id" >/dev/null 2>"$T/err" || fail "delete failed: $(cat "$T/err")"
  assert_eq "" "$(held_addresses)" "leases after the delete"
  [ -z "$(ls "$T/state/shim")" ] || fail "the shim left $(ls "$T/state/shim")"
}

# A container whose delete never came through the shim (the runtime
# deleted it alone, the bundle removed after): gc sweeps the shim's record
# and rails file of it, and keeps the record of a container whose bundle is
# there.
test_gc_sweeps_the_shim_record_of_a_container_whose_bundle_is_gone () {
  setup_host
  local a b out
  a=$(new_id) b=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD="sleep 60" make_bundle "$T/ba" "$POLICY"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD="sleep 60" make_bundle "$T/bb" "$POLICY"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/ba" "$a" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim create $a: $(cat "$T/err")"
  defer runtime delete -f "$a"
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/bb" "$b" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim create $b: $(cat "$T/err")"
  defer runtime delete -f "$b"
  [ -f "$T/state/shim/$a.json" ] || fail "no record of $a after create: $(ls "$T/state/shim")"
  runtime delete -f "$a" >/dev/null 2>&1 || fail "runtime delete $a"
  rm -rf "$T/ba"
  out=$("$HOOK" --config "$POLICY" gc) || fail "gc: $out" # wait-ok: runc alone deleted it (HOOKS=0): no poststop, no reaper
  assert_contains "$out" "gc: removed the shim's record of $a: its bundle $T/ba is gone" "gc"
  [ ! -e "$T/state/shim/$a.json" ] || fail "gc left the record of $a"
  [ ! -e "$T/state/shim/$a.rails" ] || fail "gc left the rails file of $a"
  [ -f "$T/state/shim/$b.json" ] || fail "gc removed the record of $b, whose bundle is there"
  assert_not_contains "$out" "$b" "gc on the live container"
}

# gc in a container of its own (the DaemonSet's) does not see containerd's
# or CRI-O's bundle directories: ENOENT there says nothing, and the record
# of a live container stays.  Seen through the host's init (/proc/1/root,
# gc with the host's pids) the bundle is found; with neither view, gc keeps
# the record and says why.  A record of an earlier boot goes.
test_gc_keeps_the_record_of_a_bundle_it_cannot_see () {
  setup_host
  local a out
  a=$(new_id)
  mkdir -p "$T/run"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD="sleep 60" make_bundle "$T/run/ba" "$POLICY"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/run/ba" "$a" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim create $a: $(cat "$T/err")"
  defer runtime delete -f "$a"
  # Its own /run over the runtime's: a mount namespace of gc's.
  out=$(unshare -m --propagation private sh -c 'mount -t tmpfs none "$1" && exec "$2" --config "$3" gc' \
    sh "$T/run" "$HOOK" "$POLICY" 2>&1) || fail "gc: $out"
  [ -f "$T/state/shim/$a.json" ] || fail "gc (its own mount namespace) removed the record of live $a: $out"
  assert_not_contains "$out" "removed the shim's record" "gc in its own mount namespace"
  # ... and its own pids: no view shows the runtime's directory.
  out=$(unshare -m -p -f --mount-proc --propagation private \
    sh -c 'mount -t tmpfs none "$1" && exec "$2" --config "$3" gc' sh "$T/run" "$HOOK" "$POLICY" 2>&1) ||
    fail "gc: $out"
  [ -f "$T/state/shim/$a.json" ] || fail "gc (its own pids) removed the record of live $a: $out"
  assert_contains "$out" "gc: kept 1 shim record(s) whose bundle directory is not visible here nor through the host's init (the first: $T/run/ba)" "gc with no view"
  # A record of another boot: no container outlives its boot.
  jq '.boot = "00000000-0000-4000-8000-000000000000"' "$T/state/shim/$a.json" > "$T/rec" &&
    cat "$T/rec" > "$T/state/shim/$a.json"
  out=$("$HOOK" --config "$POLICY" gc) || fail "gc: $out"
  assert_contains "$out" "gc: removed the shim's record of $a: its bundle $T/run/ba is gone" "a record of another boot"
}

# The runtime fails after the shim made the network: nothing is left.
test_shim_takes_the_network_back_when_the_runtime_fails () {
  setup_host
  local id rc=0
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='true' make_bundle "$T/b" "$POLICY"
  # A process the runtime cannot start: it fails once the namespaces exist.
  sed -i 's|"args": \["/bin/sh"|"args": ["/no/such/program"|' "$T/b/config.json"
  grep -q /no/such/program "$T/b/config.json" || fail "fixture: args not replaced"
  local before
  before=$(sha256sum < "$T/b/config.json")
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "the run of a missing program succeeded"
  assert_eq "" "$(held_addresses)" "leases after the failed run"
  assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "config.json after the failed run"
  # A runtime the policy names but the node lacks: found only once the
  # network is made, which goes again, and config.json is the caller's.
  sed 's|"runtime": "[^"]*"|"runtime": "/nonexistent/runc"|' "$POLICY" > "$T/policy-nort.json"
  grep -q /nonexistent/runc "$T/policy-nort.json" || fail "fixture: runtime not replaced"
  rc=0
  ROCE_HOOK_CONFIG=$T/policy-nort.json "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" \
    </dev/null >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "a run without its runtime succeeded"
  assert_file_contains "$T/err" "/nonexistent/runc"
  assert_eq "" "$(held_addresses)" "leases after the run without a runtime"
  assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "config.json after the run without a runtime"
  assert_eq "config.json rootfs" "$(ls -A "$T/b" | tr '\n' ' ' | sed 's/ $//')" "the bundle after it"
  # A create refused by the runtime itself (an id it already has).
  cp -a "$T/b" "$T/b2"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 30' make_bundle "$T/b" "$POLICY"
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim create failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  assert_eq "198.18.10.100" "$(held_addresses)" "leases of the created container"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 30' make_bundle "$T/b3" "$POLICY"
  rc=0
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b3" "$id" </dev/null >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "a second create of $id succeeded"
  # The first container keeps its address and its interface; the refused
  # one's bundle is the caller's again.
  assert_eq "198.18.10.100" "$(held_addresses)" "leases after the refused create"
  assert_not_contains "$(cat "$T/b3/config.json")" '"path":"/proc/'
  assert_not_contains "$(cat "$T/b3/config.json")" "CAP_IPC_LOCK"
  assert_eq "198.18.10.100/24" "$(ns_addr "$(container_pid "$id")" roce0)" "roce0 of the first container"
}

test_shim_refusal_goes_to_runc_json_log_and_runs_nothing () {
  setup_host
  local id rc=0
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_9" CMD='echo ran' make_bundle "$T/b" "$POLICY"
  cp "$T/b/config.json" "$T/config.before"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" --log "$T/log.json" --log-format json create --bundle "$T/b" "$id" \
    </dev/null >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "the shim accepted an unlisted HCA"
  assert_file_contains "$T/err" "roce-runtime: $id: annotation roce.io/hca: an HCA the node policy lists (mlx5_0, mlx5_1) vs 'mlx5_9'"
  assert_file_contains "$T/log.json" "{\"level\":\"error\",\"msg\":\"roce-runtime: $id: annotation roce.io/hca:"
  assert_file_contains "$T/log.json" "\"time\":\""
  runtime state "$id" >/dev/null 2>&1 && fail "the runtime was run"
  cmp -s "$T/b/config.json" "$T/config.before" || fail "config.json changed on refusal"
}

# same_outcome_as_the_runtime SHIM ID BUNDLE: runs BUNDLE with the runtime itself, then
# through SHIM, and fails unless both end with the same status, standard
# output and standard error (what differs run to run aside: runc's log
# time="...", which a second may pass between the two runs, and [pid]s).
same_outcome_as_the_runtime () {
  local shim=$1 id=$2 b=$3 rc_rt=0 rc_shim=0
  runtime_opts
  timeout 60 "$OCI_RUNTIME" "${RUNTIME_OPTS[@]}" run --bundle "$b" "$id" </dev/null \
    >"$T/rt.out" 2>"$T/rt.err" || rc_rt=$?
  runtime delete -f "$id" >/dev/null 2>&1 || true
  timeout 60 "$shim" "${RUNTIME_OPTS[@]}" run --bundle "$b" "$id" </dev/null \
    >"$T/shim.out" 2>"$T/shim.err" || rc_shim=$?
  runtime delete -f "$id" >/dev/null 2>&1 || true
  assert_eq "$rc_rt" "$rc_shim" "exit status through ${shim##*/} ($b)"
  assert_eq "$(cat "$T/rt.out")" "$(cat "$T/shim.out")" "stdout through ${shim##*/} ($b)"
  local times='s/\[[0-9]*\]//; s/^time="[^"]*" //'
  assert_eq "$(sed "$times" "$T/rt.err")" "$(sed "$times" "$T/shim.err")" \
    "stderr through ${shim##*/} ($b)"
}

# A config.json the shim may not edit or cannot look at (#45), through the
# front and through the engine called directly: an annotated spec behind a
# symlink (in the bundle or out of it, naming an HCA the policy lists or
# not) is refused in one line and nothing runs; a plain one behind a link
# runs as under the runtime alone; a FIFO is refused at once (never opened:
# an open would wait for a writer); what the runtime cannot read either (a
# dangling link, a directory) gets the runtime's own error and status.
test_shim_config_json_behind_a_link_a_fifo_or_unreadable () {
  setup_host
  local shim id rc line sum
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_9" CMD='echo ran' make_bundle "$T/out" "$POLICY"
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo ran' make_bundle "$T/in" "$POLICY"
  HOOKS=0 CMD='echo plain' make_bundle "$T/plain" "$POLICY"
  mkdir "$T/elsewhere"
  mv "$T/out/config.json" "$T/elsewhere/annotated.json"
  ln -s "$T/elsewhere/annotated.json" "$T/out/config.json"
  mv "$T/in/config.json" "$T/in/spec.json"
  ln -s spec.json "$T/in/config.json"
  mv "$T/plain/config.json" "$T/elsewhere/plain.json"
  ln -s "$T/elsewhere/plain.json" "$T/plain/config.json"
  HOOKS=0 CMD='echo ran' make_bundle "$T/fifo" "$POLICY"
  rm "$T/fifo/config.json"
  mkfifo "$T/fifo/config.json"
  HOOKS=0 CMD='echo ran' make_bundle "$T/dangling" "$POLICY"
  rm "$T/dangling/config.json"
  ln -s "$T/elsewhere/none.json" "$T/dangling/config.json"
  HOOKS=0 CMD='echo ran' make_bundle "$T/dir" "$POLICY"
  rm "$T/dir/config.json"
  mkdir "$T/dir/config.json"
  sum=$(cat "$T"/elsewhere/*.json "$T/in/spec.json" | sha256sum)
  runtime_opts
  for shim in "$SHIM" "$BUILD/roce-runtime-engine"; do
    id=$(new_id)
    for b in out in; do
      rc=0
      "$shim" "${RUNTIME_OPTS[@]}" run --bundle "$T/$b" "$id" </dev/null >"$T/o" 2>"$T/e" || rc=$?
      [ "$rc" -ne 0 ] || fail "${shim##*/}: the annotated spec behind a link in $b ran: $(cat "$T/o")"
      line="roce-runtime: $id: \`$T/$b/config.json\`: a regular file in the bundle vs a symlink (fix: write the spec into the bundle as a regular file)"
      assert_eq "$line" "$(cat "$T/e")" "${shim##*/}: the refusal of $b"
      assert_eq "" "$(cat "$T/o")" "${shim##*/}: the container's output"
      runtime state "$id" >/dev/null 2>&1 && fail "${shim##*/}: the runtime was run for $b"
      [ -L "$T/$b/config.json" ] || fail "${shim##*/}: config.json of $b is no longer a link"
    done
    assert_eq "" "$(held_addresses)" "${shim##*/}: leases after the refusals"
    rc=0
    timeout 20 "$shim" "${RUNTIME_OPTS[@]}" run --bundle "$T/fifo" "$id" </dev/null >"$T/o" 2>"$T/e" || rc=$?
    [ "$rc" -ne 124 ] || fail "${shim##*/}: waited on the FIFO"
    [ "$rc" -ne 0 ] || fail "${shim##*/}: a FIFO config.json ran"
    line="roce-runtime: $id: \`$T/fifo/config.json\`: a regular file vs a fifo (fix: write the spec into the bundle as a regular file)"
    assert_eq "$line" "$(cat "$T/e")" "${shim##*/}: the refusal of the FIFO"
    same_outcome_as_the_runtime "$shim" "$id" "$T/plain"
    assert_eq "plain" "$(cat "$T/shim.out")" "${shim##*/}: the plain spec behind a link"
    same_outcome_as_the_runtime "$shim" "$id" "$T/dangling"
    same_outcome_as_the_runtime "$shim" "$id" "$T/dir"
    [ -s "$T/shim.err" ] || fail "${shim##*/}: no error from the runtime for a directory config.json"
  done
  assert_eq "$sum" "$(cat "$T"/elsewhere/*.json "$T/in/spec.json" | sha256sum)" "the specs behind the links"
}

# ROCE_HCA= (empty) and no annotation asks nothing (roce-runtime(8)): the
# spec runs as under the runtime alone, config.json byte for byte, through
# the front and the engine.
test_shim_runs_an_empty_roce_hca_as_no_request () {
  setup_host
  local shim id before
  HOOKS=0 ENV="ROCE_HCA=
ROCE_IP=198.18.10.150" CMD='echo "hca=[$ROCE_HCA]"; ls /dev/infiniband 2>&1 | head -1; env | grep -c ^NCCL_ || true' \
    make_bundle "$T/b" "$POLICY"
  before=$(sha256sum < "$T/b/config.json")
  for shim in "$SHIM" "$BUILD/roce-runtime-engine"; do
    id=$(new_id)
    same_outcome_as_the_runtime "$shim" "$id" "$T/b"
    assert_file_contains "$T/shim.out" "hca=[]"
    assert_file_contains "$T/shim.out" "No such file or directory"
    assert_eq "$before" "$(sha256sum < "$T/b/config.json")" "${shim##*/}: config.json checksum"
  done
  assert_eq "" "$(held_addresses)" "leases"
}

test_shim_refuses_an_image_whose_dev_is_a_symlink () {
  setup_host
  local id rc=0 before
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo ran' make_bundle "$T/b" "$POLICY"
  rm -rf "$T/b/rootfs/dev"
  mkdir "$T/victim"
  ln -s "$T/victim" "$T/b/rootfs/dev"
  before=$(ls -la "$T/victim")
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  assert_file_contains "$T/err" "roce-runtime: $id: the image's /dev: a directory vs a symlink"
  assert_eq "$before" "$(ls -la "$T/victim")" "the link's target"
  runtime state "$id" >/dev/null 2>&1 && fail "the runtime was run"
  true
}

test_containerd_ctr_run_through_the_shim () {
  setup_host
  containerd_start
  make_rootfs "$T/rootfs"
  local id
  id=$(new_id)
  timeout 60 "${CTR[@]}" run --rm --rootfs --runc-binary "$SHIM" --annotation roce.io/hca=mlx5_0 \
    "$T/rootfs" "$id" /bin/sh -c "$SHOW" >"$T/out" 2>"$T/err" || fail "ctr run failed: $(cat "$T/err")"
  assert_rdma_container "$T/out"
}

test_podman_with_the_hooks_d_files () {
  setup_host
  podman_env
  hooks_dir "$T/hooks" "$POLICY"
  make_rootfs "$T/rootfs"
  timeout 60 "${PODMAN[@]}" run --rm "${PODMAN_RUN[@]}" --hooks-dir "$T/hooks" --network none \
    --annotation roce.io/hca=mlx5_0 --rootfs "$T/rootfs" /bin/sh -c 'echo podman-ran' \
    >"$T/out" 2>"$T/err" || fail "podman run failed: $(cat "$T/err")"
  assert_file_contains "$T/out" "podman-ran"
  assert_file_contains "$T/hook.log" "prestart: pid"
  # A refusal reaches the user through Podman.
  local rc=0
  timeout 60 "${PODMAN[@]}" run --rm "${PODMAN_RUN[@]}" --hooks-dir "$T/hooks" --network none \
    --annotation roce.io/hca=mlx5_9 --rootfs "$T/rootfs" /bin/sh -c 'echo should-not-run' \
    >"$T/out2" 2>"$T/err2" || rc=$?
  [ "$rc" -ne 0 ] || fail "podman started a container with an unlisted HCA"
  local line="annotation roce.io/hca: an HCA the node policy lists (mlx5_0, mlx5_1) vs 'mlx5_9'"
  if [ "$OCI_RUNTIME" = runc ]; then
    assert_file_contains "$T/err2" "$line"
  else
    # Podman shows only the last line of crun's JSON log, crun's own
    # "error executing hook"; the hook's line is in its log and syslog.
    assert_file_contains "$T/err2" "error executing hook \`$HOOK\`"
    assert_file_contains "$T/hook.log" "$line"
  fi
  assert_not_contains "$(cat "$T/out2")" "should-not-run"
  # Without the annotation the hooks do not fire at all.
  : > "$T/hook.log"
  timeout 60 "${PODMAN[@]}" run --rm "${PODMAN_RUN[@]}" --hooks-dir "$T/hooks" --network none \
    --rootfs "$T/rootfs" /bin/sh -c 'echo plain' >"$T/out3" 2>&1 || fail "plain podman run: $(cat "$T/out3")"
  [ ! -s "$T/hook.log" ] || fail "the hook ran for an unannotated container"
}

test_podman_with_the_shim_as_runtime () {
  setup_host
  podman_env
  make_rootfs "$T/rootfs"
  # Podman runs its runtime with an environment of its own: the policy path
  # goes in through a wrapper (on a node it is /etc/roce-hook/config.json),
  # registered as a runtime in containers.conf (tests/helpers/runtimes.sh).
  timeout 60 "${PODMAN[@]}" run --rm "${PODMAN_CG[@]}" --runtime "$PODMAN_SHIM" --network none \
    --annotation roce.io/hca=mlx5_0 --rootfs "$T/rootfs" /bin/sh -c "$SHOW" \
    >"$T/out" 2>"$T/err" || fail "podman run failed: $(cat "$T/err")"
  assert_rdma_container "$T/out"
}

test_cdi_spec_lists_each_policy_hca () {
  setup_host
  "$HOOK" --config "$POLICY" cdi --output "$T/roce.json" || fail "cdi failed"
  "$HOOK" --config "$POLICY" cdi > "$T/stdout.json" || fail "cdi to stdout failed"
  cmp -s "$T/roce.json" "$T/stdout.json" || fail "--output and stdout differ"
  python3 - "$T/roce.json" "$(realpath "$BUILD/roce-hook")" "$(realpath "$POLICY")" <<'PY' || fail "CDI spec: $(cat "$T/roce.json")"
import json, sys
s = json.load(open(sys.argv[1]))
# The lowest version the fields need (no annotations, no hostPath, names
# that start with a letter): consumers reject versions newer than they know.
assert s["cdiVersion"] == "0.3.0", s["cdiVersion"]
assert s["kind"] == "roce.io/hca"
devs = {d["name"]: d["containerEdits"] for d in s["devices"]}
assert set(devs) == {"mlx5_0", "mlx5_1"}, devs
n0 = devs["mlx5_0"]["deviceNodes"]
assert n0 == [{"path": "/dev/infiniband/uverbs0", "type": "c", "major": 231, "minor": 192, "permissions": "rw"}], n0
assert devs["mlx5_1"]["deviceNodes"][0]["minor"] == 193
assert "NCCL_IB_HCA=mlx5_0" in devs["mlx5_0"]["env"]
assert "NCCL_IB_ADDR_RANGE=198.18.11.0/24" in devs["mlx5_1"]["env"]
# Each device names itself to the hooks, by its policy index.
assert "ROCE_CDI_HCA_0=mlx5_0" in devs["mlx5_0"]["env"], devs["mlx5_0"]["env"]
assert "ROCE_CDI_HCA_1=mlx5_1" in devs["mlx5_1"]["env"], devs["mlx5_1"]["env"]
common = s["containerEdits"]
assert common["deviceNodes"][0]["path"] == "/dev/infiniband/rdma_cm" and common["deviceNodes"][0]["major"] == 10
assert "NCCL_IB_TC=106" in common["env"]
# The spec's hooks: roce-hook --cdi with the policy the spec was made from,
# at createRuntime and poststop; the build's roce-hook by its real path.
hooks = [(h["hookName"], h["path"], h["args"]) for h in common["hooks"]]
want = [(st, sys.argv[2], ["roce-hook", "--config", sys.argv[3], "--cdi", st]) for st in ("createRuntime", "poststop")]
assert hooks == want, (hooks, want)
PY
  # An HCA that libibverbs does not list: no spec, a clear error, no file.
  sed -i 's/"mlx5_1": {/"mlx5_7": {/' "$POLICY"
  local rc=0
  "$HOOK" --config "$POLICY" cdi --output "$T/bad.json" 2>"$T/err" || rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_file_contains "$T/err" "mlx5_7"
  [ ! -e "$T/bad.json" ] || fail "a partial spec was written"
  ls -A "$T" | grep -q '^\.bad.json' && fail "a temp file was left"
  true
}

# shim_run_show ID: a foreground run of $T/b (CMD=$SHOW) through the shim;
# the container saw roce0 and its rails file.
shim_run_show () {
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$1" </dev/null >"$T/out" 2>"$T/err" ||
    fail "shim run failed: $(cat "$T/err")"
  defer runtime delete -f "$1"
  assert_file_contains "$T/out" "links lo roce0"
  assert_file_contains "$T/out" "rails mlx5_0 roce0 198.18.10.100 24"
}

# A spec that runs roce-hook itself (Podman's hooks.d with the shim as its
# runtime, a bundle written with the hook): the hook makes the network, and
# the shim adds no second start hook (which once refused the container: the
# rails file the first one bound was in its way).
test_shim_leaves_the_start_to_a_hook_the_spec_has () {
  setup_host
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD="$SHOW" make_bundle "$T/b" "$POLICY"
  shim_run_show "$id"
  assert_file_contains "$T/hook.log" "prestart: pid"
  assert_not_contains "$(cat "$T/b/config.json")" "createRuntime"
  assert_eq "" "$(held_addresses)" "leases after the run"
}

# A foreground run through the shim: a signal sent to the shim reaches the
# container (through the runtime), the shim ends with the runtime's status,
# and the container's address is released.
test_shim_passes_a_signal_on_and_ends_as_the_runtime_did () {
  setup_host
  local id rc=0 pid
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" \
    CMD='trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done' \
    make_bundle "$T/b" "$POLICY"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$T/b" "$id" </dev/null >"$T/out" 2>"$T/err" &
  pid=$!
  assert_log_eventually "$T/out" "ready" 60
  assert_eq "198.18.10.100" "$(held_addresses)" "leases while it runs"
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  defer runtime delete -f "$id"
  assert_eq 7 "$rc" "the shim's exit status"
  assert_file_contains "$T/out" "got-term"
  assert_eq "" "$(held_addresses)" "leases after the run"
}

# What a shim killed before it put config.json back leaves in the bundle (a
# /proc/<pid>/fd/<n> network path, the rails mount of a file gone): the
# next run through the shim makes a network of its own and joins no fd of
# whoever has that pid now; afterwards neither is in config.json.
test_shim_replaces_what_a_killed_shim_left_in_the_bundle () {
  setup_host
  local id
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD="$SHOW" make_bundle "$T/b" "$POLICY"
  # pid 1's fd 0 exists: were it joined, the runtime would fail on it.
  jq '(.linux.namespaces[] | select(.type == "network")) += {"path": "/proc/1/fd/0"}
      | .mounts += [{"destination": "/dev/roce/rails", "type": "bind", "source": "/nonexistent/x.rails",
                     "options": ["bind", "ro"]}]' "$T/b/config.json" > "$T/c.json"
  mv "$T/c.json" "$T/b/config.json"
  shim_run_show "$id"
  # The caller's config.json comes back without what the killed shim left.
  assert_not_contains "$(cat "$T/b/config.json")" '/proc/1/fd/0'
  assert_not_contains "$(cat "$T/b/config.json")" 'nonexistent'
  assert_not_contains "$(cat "$T/b/config.json")" '"destination":"/dev/roce/rails"'
  assert_file_contains "$T/b/config.json" '"roce.io/hca":"mlx5_0"'
  assert_not_contains "$(cat "$T/b/config.json")" "CAP_IPC_LOCK"
  assert_eq "config.json rootfs" "$(ls -A "$T/b" | tr '\n' ' ' | sed 's/ $//')" "the bundle after the run"
  assert_eq "" "$(held_addresses)" "leases after the run"
}

run_tests
