# SPDX-License-Identifier: Apache-2.0
# The Kubernetes node path: pods driven through containerd's CRI plugin (the
# kubelet's gRPC API) with the `roce` runtime handler of
# the drop-in contrib/k8s/install.sh writes (as contrib/containerd/config.toml),
# whose BinaryName is roce-runtime.
#
# What differs from a node, and why (the smallest changes this VM needs):
# restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE, and CRI gives
# sandboxes -998), cgroupfs instead of systemd, the pods' netns pinned under
# the test's state dir instead of /var/run/netns, runc's state under $T, and
# a busybox image (sleep) as the pause image.  Everything else is the
# kubelet's path: CNI, the sandbox, app containers, ExecSync, the
# kubelet's tear-down order and a force removal.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"

# shellcheck source=../helpers/cri.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/cri.sh"

test_cri_pod_gets_rdma_once_and_its_exec_processes_too () {
  cri_host
  cri_start
  local pod app app2
  pod_json "$T/pod.json" trainer default roce roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  ctr_json "$T/app.json" app "$APP"
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container did not start"
  app_self "$app" "$T/app.self"
  assert_rdma "$T/app.self" "the app's own process"
  # kubectl exec: a process containerd builds from the spec it stored.
  "${CRI[@]}" exec "$app" sh -c "$SHOW" > "$T/app.exec" || fail "ExecSync failed"
  assert_rdma "$T/app.exec" "a process exec'd in the app"
  # With the same capabilities as the container's process, it may look at it
  # (ptrace-mode access), as a debugging user does.
  assert_eq "NCCL_IB_HCA=mlx5_0" "$("${CRI[@]}" exec "$app" sh -c 'tr "\0" "\n" < /proc/1/environ | grep ^NCCL_IB_HCA=')" \
    "the app's environment, read by an exec'd process"
  # The sandbox set the network up; the app joined it.
  assert_eq "198.18.10.100" "$(held_addresses)" "one lease for the pod"
  assert_eq "$pod" "$(lease_field owner)" "the lease's owner"
  assert_eq "$pod,$app" "$(lease_field containers)" "the lease's containers"
  assert_file_contains "$T/hook.log" "$pod: network: roce0 198.18.10.100/24 on $NIC"
  assert_file_contains "$T/hook.log" "$app: network: joined net:["
  # A second app container: devices and limits, the pod's roce0, no roce1.
  ctr_json "$T/app2.json" app2 "$APP"
  app2=$(cri_run "$pod" "$T/pod.json" "$T/app2.json") || fail "the second app container did not start"
  app_self "$app2" "$T/app2.self"
  assert_rdma "$T/app2.self" "the second app's own process"
  assert_eq "198.18.10.100" "$(held_addresses)" "one lease for the pod with two apps"
  assert_file_contains "$T/hook.log" "$app2: network: joined net:["
  # The kubelet's order: the containers stop and go, then the pod.
  "${CRI[@]}" stop "$app" 10 && "${CRI[@]}" stop "$app2" 10 || fail "StopContainer"
  "${CRI[@]}" rm "$app" && "${CRI[@]}" rm "$app2" || fail "RemoveContainer"
  assert_eq "198.18.10.100" "$(held_addresses)" "the pod's lease once its apps went"
  "${CRI[@]}" stopp "$pod" || fail "StopPodSandbox"
  # Released at the sandbox's poststop, before CNI DEL: no gc needed.
  assert_eq "" "$(held_addresses)" "the lease once the pod stopped"
  assert_file_contains "$T/hook.log" "$pod: released 198.18.10.100 (mlx5_0)"
  assert_file_contains "$T/hook.log" "$pod: network: pod sandbox stopped: roce0 removed"
  "${CRI[@]}" rmp "$pod" || fail "RemovePodSandbox"
  assert_pod_gone
}

# The tenant rule reads the pod's namespace from the annotation containerd
# itself writes (io.kubernetes.cri.sandbox-namespace): a pod in a namespace
# the policy does not list is refused, and the kubelet's error carries our
# one line.
test_cri_pod_in_a_namespace_the_policy_does_not_allow_is_refused () {
  cri_host
  "$PY" - "$POLICY" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["default_tenants"] = ["ml-team"]
json.dump(p, open(sys.argv[1], "w"), indent=2)
PY
  cri_start
  local rc=0
  pod_json "$T/pod.json" intruder web roce roce.io/hca=mlx5_0
  cri_runp "$T/pod.json" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "RunPodSandbox accepted a pod of namespace web"
  # (containerd 2.x says which sandbox first: failed to start sandbox "<id>": ...)
  grep -qE '^cri: RunPodSandbox: UNKNOWN: (failed to start sandbox "[0-9a-f]{64}": )?failed to create containerd task: failed to create shim task: OCI runtime create failed: roce-runtime: [0-9a-f]{64}: use of HCA' "$T/err" ||
    fail "the CRI error is not containerd's wrapping of our line: $(cat "$T/err")"
  assert_file_contains "$T/err" ": use of HCA mlx5_0 (policy rule default_tenants): a namespace in [ml-team] vs namespace 'web' (fix: ask the node admin to add it to default_tenants in $POLICY)"
  # One line, as the kubelet shows it in the pod's events.
  assert_eq 1 "$(wc -l < "$T/err")" "lines of the CRI error"
  assert_eq "" "$(held_addresses)" "leases"
  [ ! -e "$T/hook.log" ] || fail "the hook ran for a refused pod: $(cat "$T/hook.log")"
  assert_pod_gone
  # The same pod in an allowed namespace starts.
  pod_json "$T/ok.json" trainer ml-team roce roce.io/hca=mlx5_0
  cri_runp "$T/ok.json" >/dev/null || fail "a pod of ml-team was refused"
  assert_eq "198.18.10.100" "$(held_addresses)" "the allowed pod's lease"
}

# A kubelet-style force removal (RemovePodSandbox of a running pod, its app
# still running): containerd stops the app, then the sandbox, and removes
# all; the lease, the interface and the pin go with it.
test_cri_force_removal_of_a_running_pod_leaves_nothing () {
  cri_host
  cri_start
  local pod app
  pod_json "$T/pod.json" trainer default roce roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  ctr_json "$T/app.json" app "$APP"
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container did not start"
  app_self "$app" "$T/app.self"
  assert_eq "198.18.10.100" "$(held_addresses)" "the pod's lease"
  assert_eq "$app.json" "$(ls "$T/state/shim" | grep -F "$app")" "the app's record"
  "${CRI[@]}" rmp "$pod" || fail "RemovePodSandbox"
  assert_pod_gone
  assert_file_contains "$T/hook.log" "$pod: released 198.18.10.100 (mlx5_0)"
}

# A pod on an IPv6 rail through the kubelet's path: the sandbox's roce0
# takes the IPv6 address, the app joins it and gets NCCL's IPv6 family and
# range, and the pod's removal releases it.
test_cri_pod_on_an_ipv6_rail () {
  cri_host
  jq '.hcas.mlx5_0 |= (. + { subnet: "2001:2:0:10::/64", pool: "2001:2:0:10::100-2001:2:0:10::1ff" })' \
    "$POLICY" > "$T/p6.json" && mv "$T/p6.json" "$POLICY" || fail "policy not made IPv6"
  cri_start
  local pod app out
  pod_json "$T/pod.json" trainer default roce roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  ctr_json "$T/app.json" app "$APP"
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container did not start"
  app_self "$app" "$T/app.self"
  assert_file_contains "$T/app.self" "NCCL_IB_ADDR_FAMILY=AF_INET6"
  assert_file_contains "$T/app.self" "NCCL_IB_ADDR_RANGE=2001:2:0:10::/64"
  assert_file_contains "$T/app.self" "links eth0 lo roce0 "
  out=$("${CRI[@]}" exec "$app" grep roce0 /proc/net/if_inet6) || fail "ExecSync failed"
  assert_contains "$out" "20010002000000100000000000000100" "the app's IPv6 address on roce0"
  assert_eq "2001:2:0:10::100" "$(held_addresses)" "one lease for the pod"
  assert_file_contains "$T/hook.log" "$pod: network: roce0 2001:2:0:10::100/64 on $NIC"
  assert_file_contains "$T/hook.log" "$app: network: joined net:["
  "${CRI[@]}" rmp "$pod" || fail "RemovePodSandbox"
  assert_pod_gone
  assert_file_contains "$T/hook.log" "$pod: released 2001:2:0:10::100 (mlx5_0)"
}

# A pod without the annotation, on the same handler: nothing of ours, and
# no state written for it.
test_cri_pod_without_the_annotation_is_untouched () {
  cri_host
  cri_start
  local pod app capeff
  pod_json "$T/pod.json" web default roce
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  ctr_json "$T/app.json" app "$APP"
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container did not start"
  app_self "$app" "$T/app.self"
  "${CRI[@]}" exec "$app" sh -c "$SHOW" > "$T/app.exec" || fail "ExecSync failed"
  for f in "$T/app.self" "$T/app.exec"; do
    capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' "$f")
    [ $(( (16#$capeff >> 14) & 1 )) = 0 ] || fail "CAP_IPC_LOCK in CapEff $capeff of an unannotated pod"
    assert_file_contains "$f" "links eth0 lo "
    grep -q "^node \|^NCCL_\|roce0" "$f" && fail "RoCE bits in an unannotated pod: $(cat "$f")"
  done
  [ ! -e "$T/hook.log" ] || fail "the hook ran: $(cat "$T/hook.log")"
  [ ! -e "$T/state" ] || fail "state written for an unannotated pod: $(ls -R "$T/state")"
  # What install.sh's cleanup reads before it removes roce-runtime: the
  # containers containerd runs through it (their shims will call it to
  # kill and delete them), from containerd's own task bundles.
  local users
  users=$(ROCE_HOST_ROOT=/ ROCE_CONTAINERD_STATE="$T/containerd/state" ROCE_BIN_DIR="$(dirname "$SHIM")" \
    "$ROOT/contrib/k8s/install.sh" users | sort | tr '\n' ' ')
  assert_eq "$(printf '%s\n' "$pod" "$app" | sort | tr '\n' ' ')" "$users" "containers through roce-runtime"
}

# GPU nodes: the policy's `runtime` is NVIDIA's (not in Debian).  A stand-in
# in its place records its argv and the config.json it is handed, then
# execs runc: it proves the chain passes runc's command line through
# unchanged and hands the next runtime our edits next to the GPU request
# (what the device plugin put in the spec), for create and for exec.  It
# cannot prove what NVIDIA's runtime then does with them.
test_cri_gpu_node_chains_to_the_policy_runtime () {
  cri_host
  local standin=$T/nvidia-container-runtime
  cat > "$standin" <<SH
#!/bin/sh
log=$T/standin
echo "\$*" >> \$log.argv
prev=""; id=""
for a in "\$@"; do
  case "\$prev" in
    --bundle) cp "\$a/config.json" "\$log.create.\$(basename "\$a").json" ;;
    --process) cp "\$a" "\$log.exec.json" ;;
  esac
  prev=\$a
done
exec $(command -v runc) "\$@"
SH
  chmod 0755 "$standin"
  sed -i "s|\"runtime\": \"[^\"]*\"|\"runtime\": \"$standin\"|" "$POLICY"
  cri_start
  local pod app
  pod_json "$T/pod.json" trainer default roce roce.io/hca=mlx5_0
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  ctr_json "$T/app.json" app "$APP" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container did not start"
  app_self "$app" "$T/app.self"
  assert_rdma "$T/app.self" "the app's own process, through the chain"
  "${CRI[@]}" exec "$app" sh -c "$SHOW" > "$T/app.exec" || fail "ExecSync failed"
  assert_rdma "$T/app.exec" "an exec'd process, through the chain"
  # runc's own command line, as containerd's shim gave it to roce-runtime.
  assert_file_contains "$T/standin.argv" "--root $T/containerd/runc-roce/k8s.io --log $T/containerd/state/io.containerd.runtime.v2.task/k8s.io/$app/log.json --log-format json create --bundle $T/containerd/state/io.containerd.runtime.v2.task/k8s.io/$app --pid-file $T/containerd/state/io.containerd.runtime.v2.task/k8s.io/$app/init.pid $app"
  grep -q " exec --process .* $app\$" "$T/standin.argv" || fail "no exec in: $(cat "$T/standin.argv")"
  "$PY" - "$T/standin.create.$app.json" "$T/standin.exec.json" "$BUILD/roce-hook" <<'PY' || fail "what the next runtime was handed"
import json, sys
c = json.load(open(sys.argv[1]))
p = c["process"]
env = set(p["env"])
for want in ("NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
             "NCCL_IB_HCA=mlx5_0", "NCCL_IB_TC=106", "NCCL_IB_ADDR_RANGE=198.18.10.0/24"):
    assert want in env, (want, sorted(env))
assert "CAP_IPC_LOCK" in p["capabilities"]["effective"], p["capabilities"]
assert any(r["type"] == "RLIMIT_MEMLOCK" for r in p["rlimits"]), p["rlimits"]
assert any(d["path"] == "/dev/infiniband/uverbs0" for d in c["linux"]["devices"]), c["linux"]["devices"]
assert [h["path"] for h in c["hooks"]["createRuntime"]] == [sys.argv[3]], c["hooks"]
assert c["annotations"]["io.kubernetes.cri.container-type"] == "container"
e = json.load(open(sys.argv[2]))
assert "CAP_IPC_LOCK" in e["capabilities"]["effective"], e["capabilities"]
assert "NVIDIA_VISIBLE_DEVICES=all" in e["env"] and "NCCL_IB_HCA=mlx5_0" in e["env"], e["env"]
PY
}

# A device plugin's CDI device, as the kubelet hands it to containerd 2.x's
# CRI (CDIDevices of the container's config), in a pod with no annotation
# on containerd's own runc: the spec `roce-hook cdi` wrote (CDI is on in
# 2.x, its specs read from the test's directory) gives the app container
# roce0 in the pod's namespace, its node, the memlock and the NCCL
# variables, by the spec's hooks; the lease goes with the pod.
test_cri_cdi_device_of_a_device_plugin_activates_the_container () {
  cri_host
  [ "${CTD_MAJOR:-1}" -ge 2 ] || skip "containerd $CTD_VERSION: the CRI's CDI devices are on by default from 2.0 (the matrix's cri-containerd-2.1 runs this)"
  mkdir -p "$T/cdi"
  "$HOOK" --config "$POLICY" cdi --output "$T/cdi/roce.json" || fail "roce-hook cdi"
  cri_start
  local pod app
  pod_json "$T/pod.json" trainer default ""
  pod=$(cri_runp "$T/pod.json") || fail "RunPodSandbox refused"
  CDI_DEVICES=roce.io/hca=mlx5_0 ctr_json "$T/app.json" app "$APP"
  app=$(cri_run "$pod" "$T/pod.json" "$T/app.json") || fail "the app container with the CDI device did not start"
  app_self "$app" "$T/app.self"
  cat "$T/app.self"
  grep "locked memory" "$T/app.self" | grep -q "$MEMLOCK *$MEMLOCK" || fail "memlock: $(grep locked "$T/app.self") (policy $MEMLOCK)"
  assert_file_contains "$T/app.self" "node /dev/infiniband/uverbs0 e7:c0"
  assert_file_contains "$T/app.self" "node /dev/infiniband/rdma_cm a:3a"
  assert_file_contains "$T/app.self" "NCCL_IB_HCA=mlx5_0"
  assert_file_contains "$T/app.self" "NCCL_IB_TC=106"
  assert_file_contains "$T/app.self" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  assert_file_contains "$T/app.self" "No such device or address"
  assert_file_contains "$T/app.self" "addr roce0 198.18.10.100/24"
  assert_file_contains "$T/app.self" "links eth0 lo roce0 "
  assert_file_contains "$T/hook.log" "$app: createRuntime: pid"
  assert_eq "198.18.10.100" "$(held_addresses)" "the app's lease"
  "${CRI[@]}" stop "$app" 10 && "${CRI[@]}" rm "$app" || fail "StopContainer, RemoveContainer"
  "${CRI[@]}" stopp "$pod" && "${CRI[@]}" rmp "$pod" || fail "StopPodSandbox, RemovePodSandbox"
  # The app's poststop finds the pod's namespace still there (the pod goes
  # after its containers, and nothing of ours runs for a sandbox that asked
  # for nothing): the lease is gc's once the namespace is gone, as on a node
  # where gc runs from a timer.
  wait_for 30 "the app's lease released by gc once the pod went" gc_released
  assert_pod_gone
}
gc_released () {
  "$HOOK" --config "$POLICY" gc >/dev/null 2>&1
  [ -z "$(held_addresses)" ]
}

# The handler in the configuration version the node's containerd reads, and
# gone again after the cleanup: contrib/k8s/install.sh against a host root
# of the test's (its containerd version named, as `containerd --version` on
# the host says it; cri_start has install.sh ask it), with the root config
# of containerd 2.x's `config default` (version 3), Debian's shipped one
# (version 2: the drop-in follows it, as some 2.x releases refuse a higher
# one) and none (install.sh writes one).  This containerd reads
# each as merged (config dump): the handler with roce-runtime, runc kept.
test_cri_handler_in_the_config_version_containerd_reads_and_its_cleanup () {
  cri_needs
  local H=$T/host root want dump plugin
  mkdir -p "$T/img/hooks.d"
  for root in v3 v2 none; do
    [ "$root" != v3 ] || [ "${CTD_MAJOR:-1}" -ge 2 ] || continue
    rm -rf "$H"
    mkdir -p "$H/etc/containerd"
    case $root in
      v3) cri_config_v3 /var/lib/roce-it-unused > "$H/etc/containerd/config.toml" ;;
      v2) printf 'version = 2\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    [plugins."io.containerd.grpc.v1.cri".cni]\n      bin_dir = "/usr/lib/cni"\n' \
            > "$H/etc/containerd/config.toml" ;;
    esac
    [ ! -f "$H/etc/containerd/config.toml" ] || cp "$H/etc/containerd/config.toml" "$T/orig.toml"
    want=2
    [ "${CTD_MAJOR:-1}" -lt 2 ] || [ "$root" = v2 ] || want=3
    ROCE_HOST_ROOT=$H ROCE_SRC=$T/img ROCE_CONTAINERD=containerd ROCE_RESTART=none ROCE_NFD_FILE= \
      ROCE_CONTAINERD_VERSION=$CTD_VERSION "$ROOT/contrib/k8s/install.sh" handler >"$T/install.log" 2>&1 ||
      fail "install.sh handler ($root): $(cat "$T/install.log")"
    assert_file_contains "$H/etc/containerd/conf.d/zz-roce-hook.toml" "version = $want"
    [ "$root" != none ] || assert_file_contains "$H/etc/containerd/config.toml" "version = $want"
    sed "s|/etc/containerd/conf.d|$H/etc/containerd/conf.d|" "$H/etc/containerd/config.toml" > "$T/ctd.toml"
    containerd --config "$T/ctd.toml" config dump > "$T/dump" 2>&1 ||
      fail "containerd $CTD_VERSION rejects the $root root config with the drop-in: $(tail -3 "$T/dump")"
    plugin=io.containerd.grpc.v1.cri
    [ "${CTD_MAJOR:-1}" -lt 2 ] || plugin=io.containerd.cri.v1.runtime
    dump=$(tr "'" '"' < "$T/dump")
    assert_contains "$dump" "[plugins.\"$plugin\".containerd.runtimes.roce.options]" "containerd $CTD_VERSION's config ($root root)"
    assert_contains "$dump" "[plugins.\"$plugin\".containerd.runtimes.runc]" "containerd $CTD_VERSION's config ($root root)"
    assert_contains "$dump" "BinaryName = \"/usr/local/bin/roce-runtime\"" "the handler's binary"
    ROCE_HOST_ROOT=$H ROCE_SRC=$T/img ROCE_CONTAINERD=containerd ROCE_RESTART=none ROCE_NFD_FILE= \
      ROCE_CONTAINERD_VERSION=$CTD_VERSION "$ROOT/contrib/k8s/install.sh" cleanup >"$T/cleanup.log" 2>&1 ||
      fail "install.sh cleanup ($root): $(cat "$T/cleanup.log")"
    [ ! -e "$H/etc/containerd/conf.d/zz-roce-hook.toml" ] || fail "the drop-in stayed ($root root)"
    if [ "$root" = none ]; then
      [ ! -e "$H/etc/containerd/config.toml" ] || fail "the config.toml install.sh made stayed: $(cat "$H/etc/containerd/config.toml")"
    else
      cmp -s "$T/orig.toml" "$H/etc/containerd/config.toml" ||
        fail "config.toml is not as it was ($root root): $(diff "$T/orig.toml" "$H/etc/containerd/config.toml")"
    fi
  done
}

# The same rule at runc's level: a sandbox's poststop releases what it set up
# in the namespace its spec pins, and only that namespace: a pin swapped for
# another namespace (whose roce0 is someone else's) is left alone.
test_sandbox_poststop_touches_only_the_namespace_it_used () {
  [ -z "$CRI_SKIP" ] || skip "$CRI_SKIP"
  one_hca_host
  local name=rn$(rand_hex 3) id pin holder v
  ip netns add "$name" || fail "ip netns add"
  defer ip netns del "$name"
  id=$(new_id)
  NETNS_PATH=/run/netns/$name ANNOTATIONS=$'roce.io/hca=mlx5_0\nio.kubernetes.cri.container-type=sandbox' \
    CMD=true make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  # `runc run` ended with the poststop: the pin lives on, our roce0 in it and
  # the lease do not.
  assert_eq "" "$(held_addresses)" "leases after the sandbox's poststop"
  ip netns exec "$name" ip link show roce0 >/dev/null 2>&1 && fail "roce0 left in the pod's namespace"
  assert_file_contains "$T/hook.log" "$id: network: pod sandbox stopped: roce0 removed"

  # Again, but the pin now names another namespace, with a roce0 of its own.
  id=$(new_id)
  NETNS_PATH=/run/netns/$name ANNOTATIONS=$'roce.io/hca=mlx5_0\nio.kubernetes.cri.container-type=sandbox' \
    CMD='sleep 60' make_bundle "$T/b2" "$POLICY"
  start_container "$id" "$T/b2" || fail "refused: $(cat "$T/$id.err")"
  pin=$(container_pid "$id")
  exec 7<"/proc/$pin/ns/net" || fail "open the namespace"
  sleep 120 </dev/null >/dev/null 2>&1 &
  holder=$!
  exec 7<&-
  defer kill -9 "$holder"
  ip netns del "$name" && ip netns add "$name" || fail "swap the pin"
  v=rv$(rand_hex 3)
  ip link add "$v" type veth peer name roce0 netns "$name" || fail "veth"
  defer ip link del "$v"
  runtime delete -f "$id"
  assert_eq "198.18.10.100" "$(held_addresses)" "the lease of the namespace still held"
  assert_contains "$(ip netns exec "$name" ip -d -o link show roce0)" "veth" "the other namespace's roce0"
}

# A matrix file (tests/integration/cri-containerd-*.sh) runs the tests
# under its own name.
[ -n "${ROCE_MATRIX:-}" ] && return 0
run_tests
rm -rf "$CRI_CACHE"
