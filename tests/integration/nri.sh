# SPDX-License-Identifier: Apache-2.0
# The NRI path: pods through containerd 2.1.9's CRI (the runtime matrix's
# package, make runtimes-cache) on plain runc, with `roce-hook nri`
# connected to containerd's NRI socket and its guard beside it: no shim, no
# RuntimeClass, no runtime handler.  The kubelet's calls come from
# tests/helpers/cri.py; the node is tests/helpers/cri.sh's (everything
# under $T), with NRI on a socket of its own.
# make check runs a RoCE pod's life (the QoS refusal included), the plugin
# down, hung and back, and the guard as an OCI hook (matrix_cell's list below: some
# tens of seconds); make check-all also the crowd with the refusals in
# time and containerd 1.7's NRI switched on.  make valgrind runs the
# plugin itself under memcheck through a pod's life and its restarts and
# Synchronize (a leak a request would pile up in the long-running plugin),
# and the guard hook: 84 s.
# roce-suite: once
# roce-suite: memcheck test_nri_roce_pod_gets_rdma_other_pods_nothing test_nri_guard_hook_through_runc
# roce-suite: valgrind test_nri_guard_hook_through_runc test_nri_roce_pod_gets_rdma_other_pods_nothing test_nri_fail_closed_while_the_plugin_is_down_or_slow
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
# shellcheck source=../helpers/matrix.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"
# containerd 2.1.9 from the runtime matrix's cache (make runtimes-cache):
# NRI is containerd 2.x's, on by default.  Not in the cache: one skip.
matrix_cell ROCE_CONTAINERD_BIN containerd-2.1.9 test_nri_roce_pod_gets_rdma_other_pods_nothing \
  test_nri_fail_closed_while_the_plugin_is_down_or_slow test_nri_guard_hook_through_runc || return 0
# shellcheck source=../helpers/cri.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/cri.sh"
# shellcheck source=../helpers/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/cluster.sh"

# nri_node: the fake host, and containerd 2.1.9 with NRI on a socket under
# $T (no plugin of its own to start), the runtime's 2 s plugin timeout.
nri_node () {
  cri_host
  NRI_SOCK=$T/nri.sock
  CRI_HANDLER=0 CRI_NRI_SOCK=$NRI_SOCK cri_start
}

# nri_start [--guard]: the plugin (or its guard) on containerd's NRI
# socket, its log in $T/nri.log ($T/guard.log), registered and configured
# when this returns; NRI_PID (GUARD_PID).
nri_start () {
  local log=$T/nri.log pid n
  [ "${1:-}" = --guard ] && log=$T/guard.log
  touch "$log"
  n=$(grep -c "configured by containerd" "$log" || true)
  "$HOOK" --config "$POLICY" nri --socket "$NRI_SOCK" "$@" >>"$log" 2>&1 &
  pid=$!
  defer "kill $pid; wait $pid"
  if [ "${1:-}" = --guard ]; then GUARD_PID=$pid; else NRI_PID=$pid; fi
  configured () { [ "$(grep -c "configured by containerd" "$1" || true)" -gt "$2" ]; }
  wait_for 10 "the NRI plugin's registration ($log)" configured "$log" "$n"
}

nri_stop () { # PID
  kill "$1" && wait "$1" || true
}

# ctr_spec ID: the spec containerd stored for a container (what exec'd
# processes are made from).
ctr_spec () {
  "${CTR[@]}" containers info "$1" | "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["Spec"]))'
}

# The one line the kubelet shows for a refusal: the CRI error, one line.
assert_one_line () { # FILE
  assert_eq 1 "$(wc -l < "$1")" "lines of the CRI error ($(cat "$1"))"
}

test_nri_roce_pod_gets_rdma_other_pods_nothing () {
  nri_node
  nri_start
  nri_start --guard
  # The guard holds no capability (its DaemonSet container drops them all).
  assert_eq 0000000000000000 "$(awk '/^CapPrm:/ {print $2}' "/proc/$GUARD_PID/status")" "the guard's permitted capabilities"
  local web webapp pod app app2
  # A pod that did not ask: started as runc starts it, nothing added.
  pod_json "$T/web.json" web default runc
  web=$(cri_runp "$T/web.json") || fail "RunPodSandbox of a pod without RoCE"
  ctr_json "$T/webapp.json" app "$APP"
  webapp=$(cri_run "$web" "$T/web.json" "$T/webapp.json") || fail "a container without RoCE"
  app_self "$webapp" "$T/web.self"
  assert_file_contains "$T/web.self" "links eth0 lo "
  grep -q "^node \|^NCCL_\|roce0" "$T/web.self" && fail "RoCE bits in a pod without RoCE: $(cat "$T/web.self")"
  ctr_spec "$webapp" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
assert not any(k.startswith("roce.io/") for k in s.get("annotations", {})), s["annotations"]
assert not any(r["type"] == "RLIMIT_MEMLOCK" for r in s["process"].get("rlimits", [])), s["process"]
assert not any(e.startswith("NCCL_") for e in s["process"]["env"]), s["process"]["env"]
assert not any(m["destination"] == "/dev/roce/rails" for m in s["mounts"])
' || fail "the spec of a container without RoCE was adjusted"

  # A RoCE pod: the network at RunPodSandbox, each container its devices,
  # limits, variables and rails file, its exec'd processes too.
  pod_json "$T/pod.json" trainer default runc roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  assert_file_contains "$T/nri.log" "$pod: network: roce0 198.18.10.100/24 on $NIC"
  CTR_CAPS=IPC_LOCK ctr_json "$T/app.json" app "$APP"
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container did not start"
  app_self "$app" "$T/app.self"
  assert_rdma "$T/app.self" "the app's own process"
  "${CRI[@]}" exec "$app" sh -c "$SHOW" > "$T/app.exec" || fail "ExecSync failed"
  assert_rdma "$T/app.exec" "a process exec'd in the app"
  assert_contains "$("${CRI[@]}" exec "$app" cat /dev/roce/rails)" "mlx5_0 roce0 198.18.10.100 24 " "the rails file"
  assert_file_contains "$T/nri.log" "$app: network: joined net:["
  assert_eq "198.18.10.100" "$(held_addresses)" "one lease for the pod"
  assert_eq "$pod" "$(lease_field owner)" "the lease's owner"

  # A container without CAP_IPC_LOCK (NRI cannot add it): RoCE all the
  # same, and the log and check say what it lacks.  Its env sets a traffic
  # class the gate finds lossy (qos.mode warn: a finding, not a refusal):
  # created a moment after its sandbox, it still passes the gate of its own.
  ctr_json "$T/app2.json" app2 "$APP" NCCL_IB_TC=96
  app2=$(cri_run "$pod" "$T/pod.json" "$T/app2.json") || fail "the second app container did not start"
  assert_file_contains "$T/nri.log" "$app2: qos FAIL nccl-tc (blocking): NCCL_IB_TC in the container's env"
  app_self "$app2" "$T/app2.self"
  assert_file_contains "$T/app2.self" "NCCL_IB_HCA=mlx5_0"
  assert_file_contains "$T/app2.self" "addr roce0 198.18.10.100/24"
  grep "locked memory" "$T/app2.self" | grep -q "$MEMLOCK *$MEMLOCK" || fail "app2's memlock: $(cat "$T/app2.self")"
  wait_for 10 "the plugin's line on app2's CAP_IPC_LOCK" grep -q "CAP_IPC_LOCK of container app2 of pod default/trainer: in its capabilities vs missing" "$T/nri.log"
  "$HOOK" --config "$POLICY" check --wide > "$T/check.out" 2>&1 || true
  assert_file_contains "$T/check.out" "nri-ipc-lock"
  assert_file_contains "$T/check.out" "container app2 ($app2)"

  # The kubelet's order: the containers stop and go, then the pod; its
  # stop takes the network down and releases the lease.
  "${CRI[@]}" stop "$app" 10 && "${CRI[@]}" stop "$app2" 10 || fail "StopContainer"
  "${CRI[@]}" rm "$app" && "${CRI[@]}" rm "$app2" || fail "RemoveContainer"
  assert_eq "198.18.10.100" "$(held_addresses)" "the pod's lease once its apps went"
  "${CRI[@]}" stopp "$pod" || fail "StopPodSandbox"
  assert_eq "" "$(held_addresses)" "the lease once the pod stopped"
  assert_file_contains "$T/nri.log" "$pod: released 198.18.10.100 (mlx5_0)"
  assert_file_contains "$T/nri.log" "$pod: network: pod sandbox stopped: roce0 removed"
  "${CRI[@]}" rmp "$pod" "$web" || fail "RemovePodSandbox"
  assert_eq "" "$(ls "$T/state/nri" | grep '\.rails$')" "rails files after the pod went"
  assert_pod_gone

  # The host's QoS wrong (no DCB on this NIC) under qos.mode enforce: the
  # plugin reads the changed policy, and a RoCE pod's container is refused
  # with the gate's one line; nothing is held, nothing made in the pod.
  jq '.qos.mode = "enforce"' "$POLICY" > "$POLICY.new" && mv "$POLICY.new" "$POLICY"
  pod_json "$T/lossy.json" lossy default runc roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/lossy.json") || fail "RunPodSandbox of a pod whose containers are to be refused"
  "${CRI[@]}" create "$pod" "$T/lossy.json" "$T/app.json" >/dev/null 2>"$T/lossy.err" &&
    fail "a RoCE container started on a host whose PFC is not on"
  assert_file_contains "$T/lossy.err" "rpc error: code = FailedPrecondition desc = roce-hook: "
  assert_file_contains "$T/lossy.err" ": PFC on priority 3 of $NIC (mlx5_0): enabled vs DCB not supported"
  assert_one_line "$T/lossy.err"
  assert_eq "" "$(held_addresses)" "leases after the QoS refusal"
  assert_file_contains "$T/nri.log" "RunPodSandbox default/lossy: PFC on priority 3 of $NIC (mlx5_0): enabled vs DCB not supported"
  "${CRI[@]}" rmp "$pod" || fail "RemovePodSandbox of the refused pod"
}

test_nri_fail_closed_while_the_plugin_is_down_or_slow () {
  nri_node
  nri_start
  nri_start --guard
  local a a1 b b1 c c1 t0 ms
  pod_json "$T/a.json" a default runc roce.io/hca=mlx5_0
  a=$(cri_runp "$T/a.json") || fail "RunPodSandbox of a"
  CTR_CAPS=IPC_LOCK ctr_json "$T/app.json" app "$APP"
  a1=$(cri_run "$a" "$T/a.json" "$T/app.json") || fail "a's container"
  assert_eq "198.18.10.100" "$(held_addresses)" "a's lease"

  # The plugin down: a RoCE pod's container is refused (by the guard, in
  # one line), a pod that did not ask starts.
  nri_stop "$NRI_PID"
  pod_json "$T/b.json" b default runc roce.io/hca=mlx5_0
  b=$(cri_runp "$T/b.json") || fail "RunPodSandbox of b (its sandbox needs no plugin)"
  "${CRI[@]}" create "$b" "$T/b.json" "$T/app.json" >/dev/null 2>"$T/b.err" &&
    fail "a RoCE pod's container started without the plugin"
  assert_file_contains "$T/b.err" ": the RoCE pod's container: prepared by roce-hook's NRI plugin vs not prepared (fix: the NRI plugin roce-hook is down, restarting or too slow for the runtime's timeout"
  assert_one_line "$T/b.err"
  pod_json "$T/c.json" c default runc
  c=$(cri_runp "$T/c.json") || fail "RunPodSandbox of a pod without RoCE, plugin down"
  c1=$(cri_run "$c" "$T/c.json" "$T/app.json") || fail "a container without RoCE, plugin down"

  # Back: Synchronize takes up a's network and lease, makes b's.
  nri_start
  wait_for 10 "Synchronize's take-up" grep -q "$a: Synchronize: pod default/a taken up: 198.18.10.100 (mlx5_0)" "$T/nri.log"

  # b's network comes after a's line, in the same answer (seconds of it
  # under valgrind).
  wait_for 10 "Synchronize making b's network" grep -q "$b: Synchronize: pod default/b had no network: made" "$T/nri.log"
  b1=$(cri_run "$b" "$T/b.json" "$T/app.json") || fail "b's container once the plugin is back"
  app_self "$b1" "$T/b1.self"
  assert_rdma "$T/b1.self" "b's container" 198.18.10.101

  # Slow: a plugin that does not answer is dropped by containerd after its
  # 2 s, and the container refused, not started without RoCE.
  kill -STOP "$NRI_PID"
  CTR_CAPS=IPC_LOCK ctr_json "$T/app2.json" app2 "$APP"
  t0=$(date +%s%N)
  "${CRI[@]}" create "$a" "$T/a.json" "$T/app2.json" >/dev/null 2>"$T/a2.err" &&
    fail "a RoCE pod's container started while the plugin hung"
  ms=$((($(date +%s%N) - t0) / 1000000))
  kill -CONT "$NRI_PID"
  assert_file_contains "$T/a2.err" ": the RoCE pod's container: prepared by roce-hook's NRI plugin vs not prepared"
  [ "$ms" -lt 15000 ] || fail "the refusal took $ms ms"
  # Its answer went nowhere (containerd closed the connection): it
  # connects again by itself, and is configured and synchronized anew.
  configured_thrice () { [ "$(grep -c "configured by containerd" "$T/nri.log")" -ge 3 ]; }
  wait_for 15 "the plugin's new connection" configured_thrice
  # Its Synchronize's summary, the second of the two pods (the first
  # reconnection's was the first).
  synchronized_twice () { [ "$(grep -c "Synchronize: 2 RoCE pod(s)" "$T/nri.log")" -ge 2 ]; }
  wait_for 10 "the new connection's Synchronize" synchronized_twice
  CTR_CAPS=IPC_LOCK ctr_json "$T/app3.json" app3 "$APP"
  "${CRI[@]}" create "$a" "$T/a.json" "$T/app3.json" >/dev/null || fail "a's container once the plugin answers again"

  # Their removal releases what Synchronize took up.
  "${CRI[@]}" rmp "$a" "$b" "$c" || fail "RemovePodSandbox"
  assert_eq "" "$(held_addresses)" "leases after the pods went"
  assert_file_contains "$T/nri.log" "$a: released 198.18.10.100 (mlx5_0)"
}

# Many pods at once, each its own address; then refusals in one line, each
# within the runtime's timeout: the tenant rule, and a cluster block claim
# that etcd does not answer in time (a hung endpoint; the policy's etcd
# timeout longer than NRI's).
test_nri_many_pods_at_once_and_refusals_in_time () {
  nri_node
  "$PY" - "$POLICY" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["default_tenants"] = ["default"]
json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
  nri_start
  nri_start --guard
  local n pod p hung t0 ms
  n=$(rounds 12 4)
  pod_json "$T/pod.json" crowd default runc roce.io/hca=mlx5_0
  CTR_CAPS=IPC_LOCK ctr_json "$T/app.json" app "$APP"
  "${CRI[@]}" crowd "$n" "$T/pod.json" "$T/app.json" > "$T/crowd" 2>&1 || fail "a pod of the crowd: $(grep error "$T/crowd")"
  assert_eq "$n" "$(held_addresses | wc -w)" "leases of $n pods"
  assert_eq "$n" "$(held_addresses | tr ' ' '\n' | sort -u | wc -l)" "distinct addresses of $n pods"
  # Every container has its pod's address on roce0, and its devices.
  while read -r i pod ctr; do
    "${CRI[@]}" exec "$ctr" sh -c "$SHOW" > "$T/self.$i" || fail "ExecSync in pod $i"
    assert_file_contains "$T/self.$i" "node /dev/infiniband/uverbs0 e7:c0"
    grep -q "^addr roce0 198.18.10.1[0-9][0-9]/24" "$T/self.$i" || fail "pod $i: $(cat "$T/self.$i")"
  done < "$T/crowd"
  # shellcheck disable=SC2046
  "${CRI[@]}" rmp $(awk '{print $2}' "$T/crowd") || fail "RemovePodSandbox of the crowd"
  assert_eq "" "$(held_addresses)" "leases after the crowd went"

  # A pod of another namespace: refused at its containers' create (a
  # sandbox refused at NRI's RunPodSandbox would run on in containerd 2.1:
  # containerd#13355).
  pod_json "$T/web.json" intruder web runc roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/web.json") || fail "RunPodSandbox of a pod whose containers are to be refused"
  "${CRI[@]}" create "$pod" "$T/web.json" "$T/app.json" >/dev/null 2>"$T/web.err" &&
    fail "a pod of namespace web got mlx5_0"
  assert_file_contains "$T/web.err" ": use of HCA mlx5_0 (policy rule default_tenants): a namespace in [default] vs namespace 'web' (fix: ask the node admin to add it to default_tenants in $POLICY)"
  assert_file_contains "$T/web.err" "rpc error: code = FailedPrecondition desc = roce-hook: "
  assert_one_line "$T/web.err"
  assert_file_contains "$T/nri.log" "RunPodSandbox web/intruder: use of HCA mlx5_0 (policy rule default_tenants)"
  assert_eq "" "$(held_addresses)" "leases after the refusal"

  # `cluster` with an etcd that accepts and never answers; its timeout_ms
  # (10 s) is longer than the runtime gives: the claim gets what is left,
  # and the refusal comes in time (the plugin read the policy again).
  p=$(port_block) && [ -n "$p" ] || fail "no free port"
  "$PY" -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); time.sleep(600)' "$p" &
  hung=$!
  defer "kill $hung"
  wait_for 10 "the hung listener on port $p" port_listens "$p"
  "$PY" - "$POLICY" "$p" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["cluster"] = {"node": "n1", "etcd": {"endpoints": ["http://127.0.0.1:%s" % sys.argv[2]],
                "timeout_ms": 10000}, "block": 16, "reserve": 0, "release_after_s": 0}
json.dump(p, open(sys.argv[1] + ".new", "w"), indent=2)
PY
  mv "$POLICY.new" "$POLICY"
  pod_json "$T/ml.json" trainer default runc roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/ml.json") || fail "RunPodSandbox through a hung etcd"
  t0=$(date +%s%N)
  "${CRI[@]}" create "$pod" "$T/ml.json" "$T/app.json" >/dev/null 2>"$T/ml.err" &&
    fail "a claim through a hung etcd"
  ms=$((($(date +%s%N) - t0) / 1000000))
  assert_file_contains "$T/ml.err" "the answer's time (1750 ms of the runtime's NRI request timeout 2000 ms) ran out: address block of mlx5_0 (198.18.10.0/24) in etcd, needed for a new address: etcd: an answer within "
  assert_one_line "$T/ml.err"
  [ "$ms" -lt 6000 ] || fail "the refusal took $ms ms (the runtime's timeout is 2 s)"
  # The plugin answered it: containerd did not drop it for a timeout.
  grep -q "closing plugin" "$T/containerd/log" && fail "containerd dropped the plugin: $(grep 'closing plugin' "$T/containerd/log")"
  assert_eq "" "$(held_addresses)" "leases after the refused claim"
}

# The guard as an OCI hook (CRI-O's hooks.d in NRI mode,
# contrib/crio/roce-hook-nri-guard.json), through runc: a container asking
# for RoCE without the plugin's mark naming it is refused in one line,
# with it runs (a mark naming another container: tests/unit/test_nri.c),
# and one that did not ask is never refused.
test_nri_guard_hook_through_runc () {
  need_root
  need_cmd "$OCI_RUNTIME"
  local id rc
  guard_bundle () { # DIR ANNOTATIONS
    ANNOTATIONS=$2 HOOKS=0 make_bundle "$1" /nonexistent
    jq --arg h "$HOOK" '.hooks = {prestart: [{path: $h, args: ["roce-hook", "nri", "--guard-hook"], timeout: 10}]}' \
      "$1/config.json" > "$1/c.json" && mv "$1/c.json" "$1/config.json"
  }
  id=$(new_id)
  guard_bundle "$T/b1" "roce.io/hca=mlx5_0"
  rc=0
  run_container "$id" "$T/b1" || rc=$?
  [ "$rc" -ne 0 ] || fail "a RoCE container the plugin did not prepare ran"
  assert_file_contains "$T/$id.err" "roce-hook: $id: the RoCE pod's container: prepared by roce-hook's NRI plugin vs not prepared (fix: the NRI plugin roce-hook is down, restarting or too slow for the runtime's timeout"
  id=$(new_id)
  guard_bundle "$T/b2" "roce.io/hca=mlx5_0
roce.io/nri-prepared=$id"
  run_container "$id" "$T/b2" || fail "a RoCE container the plugin marked: $(cat "$T/$id.err")"
  id=$(new_id)
  guard_bundle "$T/b4" ""
  run_container "$id" "$T/b4" || fail "a container without RoCE: $(cat "$T/$id.err")"
}

# containerd 1.7 has NRI off: install.sh (ROCE_MODE=nri) switches it on
# with a drop-in of its own, which containerd 1.7.24 reads (config dump:
# the NRI section in force, socket kept, disable false), and its cleanup
# takes out again, config.toml as it was; containerd 2.1.9 has it on with
# no drop-in at all.
test_nri_switched_on_for_containerd_1_7_and_on_by_default_in_2_1 () {
  need_root
  local d17 H=$T/host cfg before
  d17=$("$ROOT/tests/helpers/newer-runtimes.sh" dir containerd-1.7.24 2>&1) ||
    skip "containerd-1.7.24 is not in the runtime cache: $d17 (make runtimes-cache)"
  cfg=$H/etc/containerd/config.toml
  mkdir -p "$H/etc/containerd"
  cat > "$cfg" <<TOML
version = 2
root = "$T/c17/root"
state = "$T/c17/state"
[plugins."io.containerd.nri.v1.nri"]
  socket_path = "$T/c17/nri.sock"
TOML
  before=$(cat "$cfg")
  # (1.7 dumps its tables with double quotes, 2.x with single ones.)
  nri_section () { awk '/^ *\[/ { p = index($0, "io.containerd.nri.v1.nri") > 0; if (p) print; next } p' "$1"; }
  "$d17/containerd" --config "$cfg" config dump > "$T/dump0" 2>&1 || fail "containerd 1.7 config dump: $(cat "$T/dump0")"
  assert_contains "$(nri_section "$T/dump0")" "disable = true" "containerd 1.7's NRI of its own"
  ROCE_HOST_ROOT=$H ROCE_CONTAINERD=containerd ROCE_RESTART=none ROCE_MODE=nri \
    ROCE_CONTAINERD_VERSION="$("$d17/containerd" --version | awk '{ print $3 }')" \
    "$ROOT/contrib/k8s/install.sh" nri > "$T/install.out" 2>&1 || fail "install.sh nri: $(cat "$T/install.out")"
  assert_file_contains "$T/install.out" "containerd 1.x: NRI switched on in /etc/containerd/conf.d/zz-roce-hook-nri.toml"
  # containerd reads the import relative to the real /etc: dump the host's
  # config with its import made absolute under $H.
  sed "s|\"/etc/containerd/conf.d/\*.toml\"|\"$H/etc/containerd/conf.d/*.toml\"|" "$cfg" > "$T/dump.toml"
  "$d17/containerd" --config "$T/dump.toml" config dump > "$T/dump17" 2>&1 || fail "containerd 1.7 config dump: $(cat "$T/dump17")"
  assert_contains "$(nri_section "$T/dump17")" "disable = false" "containerd 1.7's NRI with the drop-in"
  assert_contains "$(nri_section "$T/dump17")" "socket_path = \"$T/c17/nri.sock\"" "the node's own NRI setting kept"
  # Again: nothing to change.
  ROCE_HOST_ROOT=$H ROCE_CONTAINERD=containerd ROCE_RESTART=none ROCE_MODE=nri \
    ROCE_CONTAINERD_VERSION=1.7.24 "$ROOT/contrib/k8s/install.sh" nri > "$T/install2.out" 2>&1 || fail "again: $(cat "$T/install2.out")"
  assert_eq "" "$(cat "$T/install2.out")" "a second install's lines"
  # containerd 2.1.9's own default: on, with no drop-in.
  printf 'version = 3\nroot = "%s"\nstate = "%s"\n' "$T/c21/root" "$T/c21/state" > "$T/c21.toml"
  "$ROCE_CONTAINERD_BIN/containerd" --config "$T/c21.toml" config dump > "$T/dump21" 2>&1 || fail "containerd 2.1 config dump: $(cat "$T/dump21")"
  assert_contains "$(nri_section "$T/dump21")" "disable = false" "containerd 2.1's NRI by default"
  ROCE_HOST_ROOT=$H ROCE_CONTAINERD=containerd ROCE_RESTART=none ROCE_MODE=nri ROCE_CONTAINERD_VERSION=2.1.9 \
    "$ROOT/contrib/k8s/install.sh" nri > "$T/install21.out" 2>&1 || fail "$(cat "$T/install21.out")"
  # The cleanup takes the drop-in and the import out: config.toml as it was.
  mkdir -p "$T/src"
  ROCE_HOST_ROOT=$H ROCE_CONTAINERD=containerd ROCE_RESTART=none ROCE_MODE=nri ROCE_SRC="$T/src" \
    ROCE_NFD_FILE= "$ROOT/contrib/k8s/install.sh" cleanup > "$T/cleanup.out" 2>&1 || fail "cleanup: $(cat "$T/cleanup.out")"
  [ ! -e "$H/etc/containerd/conf.d/zz-roce-hook-nri.toml" ] || fail "the NRI drop-in after the cleanup"
  assert_eq "$before" "$(cat "$cfg")" "config.toml after the cleanup"
}

run_tests
rm -rf "$CRI_CACHE"
