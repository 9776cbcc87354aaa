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
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"

# containerd's runc shim, CRI and runc: the suite runs once, under runc.
CRI_SKIP=""
[ "$OCI_RUNTIME" = runc ] || CRI_SKIP="the CRI path runs once, with runc as containerd's runtime (OCI_RUNTIME=$OCI_RUNTIME)"
# Another containerd than Debian 12's: ROCE_CONTAINERD_BIN (the matrix,
# tests/helpers/matrix.sh).  Its major version picks the configuration's.
runtime_bin ROCE_CONTAINERD_BIN containerd ctr containerd-shim-runc-v2
CRI_SKIP=${CRI_SKIP:-$RUNTIME_BIN_SKIP}
CTD_VERSION=$(containerd --version 2>/dev/null | awk '{ sub(/^v/, "", $3); print $3 }')
CTD_MAJOR=${CTD_VERSION%%.*}
PY=/usr/bin/python3 # Debian's, with python3-grpcio (the first python3 on PATH may lack it)
IMAGE=localhost/cri-pause:1

cri_needs () {
  [ -z "$CRI_SKIP" ] || skip "$CRI_SKIP"
  need_root
  need_cmd containerd
  need_cmd ctr
  need_cmd umoci
  need_cmd skopeo
  [ -x /usr/lib/cni/bridge ] || skip "needs containernetworking-plugins (/usr/lib/cni/bridge)"
  "$PY" -c 'import grpc, grpc_tools' 2>/dev/null || skip "needs python3-grpcio and python3-grpc-tools"
}

# memlock at the current hard limit: raising it needs CAP_SYS_RESOURCE,
# which this machine lacks.
hard_memlock_bytes () {
  local kb
  kb=$(ulimit -H -l)
  [ "$kb" = unlimited ] && echo 67108864 || echo $((kb * 1024))
}

# The image, built once per file from busybox with umoci and skopeo (no
# registry): a docker-archive tagged $IMAGE, the pod sandbox's image and the
# app containers'.
CRI_CACHE=$(mktemp -d /tmp/roce-cri-cache.XXXXXX)
cri_image () {
  local a=$CRI_CACHE/image.tar l=$CRI_CACHE/layout b=$CRI_CACHE/bundle
  [ -s "$a" ] && { echo "$a"; return 0; }
  umoci init --layout "$l" >&2 && umoci new --image "$l:1" >&2 &&
    umoci unpack --image "$l:1" "$b" >&2 || fail "umoci: new image"
  make_rootfs "$b/rootfs"
  umoci repack --image "$l:1" "$b" >&2 &&
    umoci config --image "$l:1" --config.entrypoint /bin/sleep --config.cmd 3600 \
      --config.env PATH=/bin >&2 || fail "umoci: repack"
  skopeo copy -q "oci:$l:1" "docker-archive:$a:$IMAGE" >&2 || fail "skopeo: docker-archive"
  echo "$a"
}

# The host: two fake HCAs, rdma_cm, and $POLICY (qos.mode warn: veths have
# no DCB), with a memlock this machine can grant.
cri_host () {
  cri_needs
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  fake_rdma_cm
  POLICY=$T/policy.json
  # Half the hard limit: below what the runtime hands down (8 MiB here), so
  # a process that got the policy's value is told apart from one that did not.
  MEMLOCK=$(( $(hard_memlock_bytes) / 2 ))
  POLICY_MEMLOCK=$MEMLOCK write_policy "$POLICY" warn "mlx5_0 $NIC 10"
  # containerd hands its environment to its shims, and they to runc (here
  # roce-runtime): the policy path travels that way.
  export ROCE_HOOK_CONFIG=$POLICY
}

# cri_config_paths DIR VERSION: a config's first lines: every path and
# socket under DIR (containerd's root, state, sockets, the opt plugin's).
cri_config_paths () {
  local c=$1
  echo "version = $2"
  # containerd 2.x's default config has an empty imports list.
  [ "$2" -lt 3 ] || echo "imports = []"
  cat <<TOML
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[debug]
  address = "$c/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
TOML
}

# The node's containerd config.toml, as a node of containerd 1.6 or 1.7
# has it (version 2, the CRI plugin io.containerd.grpc.v1.cri), with
# everything under DIR.
cri_config_v2 () {
  local c=$1
  cri_config_paths "$c" 2
  cat <<TOML
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  # The VM's root lacks CAP_SYS_RESOURCE: CRI's -998 for sandboxes is refused.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "$T/cni/net.d"
  max_conf_num = 1
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = "$(command -v runc)"
  Root = "$c/runc"
  SystemdCgroup = false
TOML
}

# The same for containerd 2.x, as its `containerd config default` writes
# it (version 3: the CRI's images, runtime and server plugins apart; NRI on
# by default, here off: its socket would be the host's /var/run/nri; CDI on,
# its specs read from the test's own directory).
cri_config_v3 () {
  local c=$1
  cri_config_paths "$c" 3
  cat <<TOML
[plugins."io.containerd.nri.v1.nri"]
  disable = true
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$IMAGE"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  enable_cdi = true
  cdi_spec_dirs = ["$T/cdi"]
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = "$T/cni/net.d"
  max_conf_num = 1
[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "$(command -v runc)"
  Root = "$c/runc"
  SystemdCgroup = false
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
}

# cri_start: a containerd with the CRI plugin, everything under $T: config,
# root, state, sockets, runc's state, the pods' network namespaces (under
# the state dir), the CNI configuration (a bridge on 198.19.254.0/24) and
# the host-local IPAM store; stopped when the test ends.  Sets CRI (the
# client's command line) and CTR.
cri_start () {
  local c=$T/containerd id
  id=$(rand_hex 3)
  CNI_NET=roce-it-$id
  CNI_BRIDGE=rcb$id
  CGROUP_PARENT=/roce-it-$id
  mkdir -p "$c" "$T/cni/net.d" "$T/logs"
  cat > "$T/cni/net.d/10-roce-it.conflist" <<JSON
{ "cniVersion": "0.4.0", "name": "$CNI_NET",
  "plugins": [ { "type": "bridge", "bridge": "$CNI_BRIDGE", "isGateway": false, "ipMasq": false,
                 "ipam": { "type": "host-local", "dataDir": "$T/cni/ipam",
                           "ranges": [[{ "subnet": "198.19.254.0/24" }]] } } ] }
JSON
  defer ip link del "$CNI_BRIDGE"
  # libcni (1.6) keeps its cache in /var/lib/cni/results, not configurable.
  defer "rm -f /var/lib/cni/results/$CNI_NET-*; rmdir /var/lib/cni/results /var/lib/cni"
  # Pod cgroups (cgroupfs) outlive RemovePodSandbox: the kubelet removes them.
  defer "for d in /sys/fs/cgroup/*$CGROUP_PARENT /sys/fs/cgroup$CGROUP_PARENT; do find \"\$d\" -depth -type d -exec rmdir {} + ; done"
  mkdir -p "$c/etc-containerd" "$T/cdi"
  {
    if [ "${CTD_MAJOR:-1}" -ge 2 ]; then cri_config_v3 "$c"; else cri_config_v2 "$c"; fi
  } > "$c/etc-containerd/config.toml"
  # The handler as the DaemonSet installs it: contrib/k8s/install.sh's
  # drop-in (imports in config.toml; for 1.x the CRI section in force copied
  # into it), in the version this containerd reads, which install.sh asks
  # it; only the binary's directory and runc's state directory differ here.
  ROCE_HOST_ROOT=/ ROCE_CONTAINERD=containerd ROCE_CONTAINERD_DIR="$c/etc-containerd" ROCE_RESTART=none \
    ROCE_BIN_DIR="$(dirname "$SHIM")" ROCE_RUNC_ROOT="$c/runc-roce" \
    "$ROOT/contrib/k8s/install.sh" handler >"$c/install.log" 2>&1 || fail "install.sh handler: $(cat "$c/install.log")"
  [ -f "$c/etc-containerd/conf.d/zz-roce-hook.toml" ] || fail "no drop-in: $(cat "$c/install.log")"
  # In the version this containerd reads: 3 for 2.x, whose CRI runtime
  # plugin is io.containerd.cri.v1.runtime; 2 for 1.6 and 1.7.
  if [ "${CTD_MAJOR:-1}" -ge 2 ]; then
    assert_file_contains "$c/etc-containerd/conf.d/zz-roce-hook.toml" "version = 3"
    assert_file_contains "$c/etc-containerd/conf.d/zz-roce-hook.toml" '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.roce]'
  else
    assert_file_contains "$c/etc-containerd/conf.d/zz-roce-hook.toml" "version = 2"
    assert_file_contains "$c/etc-containerd/conf.d/zz-roce-hook.toml" '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.roce]'
  fi
  grep -q "^imports = \[\"$c/etc-containerd/conf.d/\*.toml\"\(, \)\?\]" "$c/etc-containerd/config.toml" ||
    fail "config.toml does not import the drop-in: $(cat "$c/etc-containerd/config.toml")"
  ln -s "$c/etc-containerd/config.toml" "$c/config.toml"
  # Should a test fail half-way: what containerd left running (the shims
  # and their containers, by the pid files under $T) goes after it.
  defer "for f in $c/state/io.containerd.runtime.v2.task/k8s.io/*/init.pid $c/state/io.containerd.runtime.v2.task/k8s.io/*/shim.pid; do [ -f \"\$f\" ] && kill -9 \$(cat \"\$f\"); done; sleep 0.2"
  containerd --config "$c/config.toml" >"$c/log" 2>&1 &
  local pid=$!
  defer "kill $pid; wait $pid"
  CTR=(ctr --address "$c/containerd.sock" --namespace k8s.io)
  mkdir -p "$T/gen"
  "$PY" -m grpc_tools.protoc -I "$ROOT/tests/helpers" --python_out="$T/gen" --grpc_python_out="$T/gen" \
    cri.proto || fail "protoc: cri.proto"
  CRI=("$PY" "$ROOT/tests/helpers/cri.py" "$c/containerd.sock" "$T/gen")
  local i
  for i in $(seq 100); do
    "${CRI[@]}" version >/dev/null 2>&1 && break
    [ "$i" = 100 ] && fail "containerd's CRI did not answer: $(tail -5 "$c/log")"
    sleep 0.1
  done
  "${CTR[@]}" images import "$(cri_image)" >/dev/null 2>"$T/import.err" ||
    fail "ctr images import: $(cat "$T/import.err")"
  # The pods still there when the test ends are removed, as the kubelet would.
  touch "$T/pods"
  defer "for p in \$(cat $T/pods); do ${CRI[*]} rmp \$p; done"
}

# cri_runp POD_JSON: RunPodSandbox; prints the pod's id.
cri_runp () {
  local pod
  pod=$("${CRI[@]}" runp "$1") || return 1
  echo "$pod" >> "$T/pods"
  echo "$pod"
}

# cri_run POD_ID POD_JSON CTR_JSON: CreateContainer and StartContainer;
# prints the container's id.
cri_run () {
  local id
  id=$("${CRI[@]}" create "$1" "$2" "$3") || return 1
  "${CRI[@]}" start "$id" || return 1
  echo "$id"
}

# pod_json FILE NAME NAMESPACE HANDLER [ANNOTATION...]: a pod as the kubelet
# describes it.
pod_json () {
  local f=$1 name=$2 ns=$3 handler=$4 uid ann="" kv
  shift 4
  uid=$(cat /proc/sys/kernel/random/uuid)
  for kv in "$@"; do ann+="${ann:+,}$(_json_str "${kv%%=*}"):$(_json_str "${kv#*=}")"; done
  mkdir -p "$T/logs/$uid"
  cat > "$f" <<JSON
{ "name": "$name", "namespace": "$ns", "uid": "$uid", "handler": "$handler",
  "log_directory": "$T/logs/$uid", "cgroup_parent": "$CGROUP_PARENT/pod$uid",
  "annotations": {$ann} }
JSON
}

# ctr_json FILE NAME SCRIPT [ENV=V...]: an app container of $IMAGE running
# sh -c SCRIPT; CDI_DEVICES (space separated) its CRI CDI devices, as the
# kubelet sends a device plugin's.
ctr_json () {
  local f=$1 name=$2 script=$3 env="" kv cdi="" d
  shift 3
  for kv in "$@"; do env+="${env:+,}$(_json_str "${kv%%=*}"):$(_json_str "${kv#*=}")"; done
  for d in ${CDI_DEVICES:-}; do cdi+="${cdi:+,}$(_json_str "$d")"; done
  cat > "$f" <<JSON
{ "name": "$name", "image": "$IMAGE", "command": ["/bin/sh", "-c", $(_json_str "$script")],
  "env": {$env}, "cdi_devices": [$cdi] }
JSON
}

# What a process reports about itself, one fact a line.
SHOW='grep CapEff /proc/self/status; grep "locked memory" /proc/self/limits;
for n in /dev/infiniband/*; do stat -c "node %n %t:%T" "$n"; done;
env | grep ^NCCL_ | sort;
dd if=/dev/infiniband/uverbs0 of=/dev/null count=1 2>&1 | grep -m1 -i "can.t open\|device\|permitted";
ip -o -4 addr show | awk "{print \"addr\", \$2, \$4}";
echo "links $(ls /sys/class/net | sort | tr "\n" " ")"'

# The app: records what its own process got, then waits to be stopped.
APP="($SHOW) > /tmp/self 2>&1; trap 'exit 0' TERM; sleep 3600 & wait"


leases_json () { leases_settled "$POLICY"; }
held_addresses () {
  leases_json | "$PY" -c 'import json,sys; print(" ".join(l["address"] for l in json.load(sys.stdin)["leases"]))'
}
lease_field () { # FIELD: of the only lease
  leases_json | "$PY" -c 'import json,sys; l=json.load(sys.stdin)["leases"]; assert len(l)==1, l; v=l[0][sys.argv[1]]; print(",".join(v) if isinstance(v, list) else v)' "$1"
}

# app_self ID FILE: what the app container's own process recorded at start.
app_self () {
  local i
  for i in $(seq 50); do
    "${CRI[@]}" exec "$1" cat /tmp/self > "$2" 2>/dev/null && grep -q '^links' "$2" && return 0
    sleep 0.1
  done
  fail "the app container $1 recorded nothing: $(cat "$2")"
}

# assert_rdma FILE WHO: what an annotated pod's process must have.
assert_rdma () {
  local out=$1 who=$2 capeff
  capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' "$out")
  [ -n "$capeff" ] || fail "$who: no CapEff in: $(cat "$out")"
  [ $(( (16#$capeff >> 14) & 1 )) = 1 ] || fail "$who: CAP_IPC_LOCK not in CapEff $capeff"
  grep "locked memory" "$out" | grep -q "$MEMLOCK *$MEMLOCK" || fail "$who: memlock: $(grep locked "$out") (policy $MEMLOCK)"
  assert_file_contains "$out" "node /dev/infiniband/uverbs0 e7:c0"
  assert_file_contains "$out" "node /dev/infiniband/rdma_cm a:3a"
  assert_file_contains "$out" "NCCL_IB_HCA=mlx5_0"
  assert_file_contains "$out" "NCCL_IB_TC=106"
  assert_file_contains "$out" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  # ENXIO: the device cgroup let the open through; only the driver is missing.
  assert_file_contains "$out" "No such device or address"
  assert_file_contains "$out" "addr roce0 198.18.10.100/24"
  # The CNI network's eth0, and one RoCE interface, not two.
  assert_file_contains "$out" "links eth0 lo roce0 "
}

# Nothing of the pod is left: no lease, no record of the shim, no pinned
# network namespace, no macvlan on the NIC.
assert_pod_gone () {
  assert_eq "" "$(held_addresses)" "leases after the pod went"
  assert_eq "" "$(ls -A "$T/state/shim" 2>/dev/null)" "the shim's records"
  # No pinned network namespace, rootfs or shm of the pod is mounted.
  assert_eq "" "$(grep " $T/" /proc/self/mountinfo)" "mounts under the test's containerd"
  assert_eq "" "$(ip -o link show type macvlan | grep "@$NIC:")" "macvlans on the NIC"
}

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
