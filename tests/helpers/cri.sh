# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The CRI suites' node (tests/integration/cri.sh, nri.sh): a containerd with
# its CRI plugin, everything under $T, driven through tests/helpers/cri.py as
# the kubelet drives it, on the fake RoCE host of lib.sh.  Sourced after
# lib.sh; the containerd is ROCE_CONTAINERD_BIN's when it names one (the
# runtime matrix, tests/helpers/matrix.sh).
#
# cri_start's knobs: CRI_HANDLER=0, no `roce` handler (the NRI suite runs
# its pods on runc); CRI_NRI_SOCK, NRI on (containerd 2.x) with its socket
# there and a plugin directory of its own (else off: its socket would be
# the host's /var/run/nri).
source "$(dirname "${BASH_SOURCE[0]}")/matrix.sh"

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
  # Asked once a file (a second of Python).
  [ -e "$CRI_CACHE/grpc-ok" ] || { "$PY" -c 'import grpc, grpc_tools' 2>/dev/null && touch "$CRI_CACHE/grpc-ok"; } ||
    skip "needs python3-grpcio and python3-grpc-tools"
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
$(cri_nri_toml)
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

# containerd 2.x's NRI section: off, or on with its socket CRI_NRI_SOCK, no
# plugin of its own to start, the runtime's default timeouts.
cri_nri_toml () {
  if [ -z "${CRI_NRI_SOCK:-}" ]; then
    printf '[plugins."io.containerd.nri.v1.nri"]\n  disable = true\n'
    return 0
  fi
  mkdir -p "$T/nri-plugins" "$T/nri-conf.d"
  cat <<TOML
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  disable_connections = false
  socket_path = "$CRI_NRI_SOCK"
  plugin_path = "$T/nri-plugins"
  plugin_config_path = "$T/nri-conf.d"
  plugin_registration_timeout = "5s"
  plugin_request_timeout = "2s"
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
  if [ "${CRI_HANDLER:-1}" = 1 ]; then
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
  fi
  ln -s "$c/etc-containerd/config.toml" "$c/config.toml"
  # Should a test fail half-way: what containerd left running (the shims
  # and their containers, by the pid files under $T) goes after it.
  defer "for f in $c/state/io.containerd.runtime.v2.task/k8s.io/*/init.pid $c/state/io.containerd.runtime.v2.task/k8s.io/*/shim.pid; do [ -f \"\$f\" ] && kill -9 \$(cat \"\$f\"); done; sleep 0.2"
  containerd --config "$c/config.toml" >"$c/log" 2>&1 &
  local pid=$!
  defer "kill $pid; wait $pid"
  CTR=(ctr --address "$c/containerd.sock" --namespace k8s.io)
  # The client's stubs, made once a file (as its image is).
  if [ ! -s "$CRI_CACHE/gen/cri_pb2_grpc.py" ]; then
    mkdir -p "$CRI_CACHE/gen"
    "$PY" -m grpc_tools.protoc -I "$ROOT/tests/helpers" --python_out="$CRI_CACHE/gen" \
      --grpc_python_out="$CRI_CACHE/gen" cri.proto || fail "protoc: cri.proto"
  fi
  cri_serve "$c/containerd.sock"
  CRI=(cri)
  cri_answers () { "${CRI[@]}" version >/dev/null 2>&1; }
  wait_for 20 "containerd's CRI to answer (its log: $c/log)" cri_answers
  "${CTR[@]}" images import "$(cri_image)" >/dev/null 2>"$T/import.err" ||
    fail "ctr images import: $(cat "$T/import.err")"
  # The pods still there when the test ends (a refused one's sandbox too)
  # are removed, as the kubelet would.
  defer "${CRI[*]} rmp-all"
}

# cri_serve SOCKET: cri.py serving commands through two FIFOs under $T, for
# the life of the test; cri ARGS... is then one call of cri.py (its output,
# its error, its exit status) without a Python start-up each (a second of
# CPU on these VMs).  The FIFOs' ends stay open in every subshell.
cri_serve () {
  mkfifo "$T/cri.in" "$T/cri.out"
  "$PY" "$ROOT/tests/helpers/cri.py" "$1" "$CRI_CACHE/gen" serve <"$T/cri.in" >"$T/cri.out" 2>"$T/cri.log" &
  local pid=$!
  exec {CRI_IN}>"$T/cri.in" {CRI_OUT}<"$T/cri.out"
  defer "exec $CRI_IN>&- $CRI_OUT<&-; kill $pid; wait $pid"
}
cri () {
  local a argv="" line rc out err
  for a in "$@"; do argv+="${argv:+,}$(_json_str "$a")"; done
  printf '[%s]\n' "$argv" >&"$CRI_IN"
  IFS= read -r line <&"$CRI_OUT" || { echo "cri: the client is gone: $(cat "$T/cri.log")" >&2; return 2; }
  read -r rc out err <<<"$line"
  [ "$out" = - ] || printf '%s' "$out" | base64 -d
  [ "$err" = - ] || printf '%s' "$err" | base64 -d >&2
  return "$rc"
}

# cri_runp POD_JSON: RunPodSandbox; prints the pod's id.
cri_runp () {
  "${CRI[@]}" runp "$1"
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
# kubelet sends a device plugin's; CTR_CAPS ("IPC_LOCK ...") the
# capabilities its securityContext adds.
ctr_json () {
  local f=$1 name=$2 script=$3 env="" kv cdi="" d caps=""
  shift 3
  for kv in "$@"; do env+="${env:+,}$(_json_str "${kv%%=*}"):$(_json_str "${kv#*=}")"; done
  for d in ${CDI_DEVICES:-}; do cdi+="${cdi:+,}$(_json_str "$d")"; done
  for d in ${CTR_CAPS:-}; do caps+="${caps:+,}$(_json_str "$d")"; done
  cat > "$f" <<JSON
{ "name": "$name", "image": "$IMAGE", "command": ["/bin/sh", "-c", $(_json_str "$script")],
  "env": {$env}, "cdi_devices": [$cdi], "capabilities": [$caps] }
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
  recorded () { "${CRI[@]}" exec "$1" cat /tmp/self > "$2" 2>/dev/null && grep -q '^links' "$2"; }
  wait_for 10 "what the app container $1 recorded" recorded "$1" "$2"
}

# assert_rdma FILE WHO [ADDRESS]: what an annotated pod's process must have
# (its pod's address on roce0: 198.18.10.100, the pool's first, by default).
assert_rdma () {
  local out=$1 who=$2 addr=${3:-198.18.10.100} capeff
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
  assert_file_contains "$out" "addr roce0 $addr/24"
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

