# shellcheck shell=bash
# Harness pieces for the runtime integrations: a private containerd and a
# private Podman, both confined to $T.

# containerd_start: a containerd with its own root, state, socket and config
# under $T; stopped (by pid) when the test ends.  Sets CTR.
containerd_start () {
  need_cmd containerd
  need_cmd ctr
  mkdir -p "$T/containerd"
  cat > "$T/containerd/config.toml" <<TOML
version = 2
root = "$T/containerd/root"
state = "$T/containerd/state"
[grpc]
  address = "$T/containerd/containerd.sock"
[ttrpc]
  address = "$T/containerd/containerd.sock.ttrpc"
[debug]
  address = "$T/containerd/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  disable_cgroup = true
TOML
  containerd --config "$T/containerd/config.toml" >"$T/containerd/log" 2>&1 &
  local pid=$!
  defer "kill $pid; wait $pid"
  CTR=(ctr --address "$T/containerd/containerd.sock" --namespace roce-test)
  local i
  for i in $(seq 50); do
    "${CTR[@]}" version >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "containerd did not start: $(tail -5 "$T/containerd/log")"
}

# podman_env: a Podman confined to $T (vfs storage, cgroupfs, no registries).
# Sets PODMAN.
podman_env () {
  need_cmd podman
  mkdir -p "$T/podman"
  cat > "$T/podman/containers.conf" <<CONF
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$T/podman/events.log"
CONF
  export CONTAINERS_CONF=$T/podman/containers.conf
  PODMAN=(podman --root "$T/podman/root" --runroot "$T/podman/run" --storage-driver vfs
          --cgroup-manager cgroupfs --tmpdir "$T/podman/tmp")
  defer "${PODMAN[*]} rm -af -t0"
}

# hooks_dir DIR POLICY: config/hooks.d with this build's hook and policy.
hooks_dir () {
  local d=$1 policy=$2 f
  mkdir -p "$d"
  for f in "$ROOT"/config/hooks.d/*.json; do
    sed -e "s|\"/usr/local/bin/roce-hook\"|\"$HOOK\"|" \
        -e "s|\"roce-hook\", \"\\(prestart\\|poststop\\)\"|\"roce-hook\", \"--config\", \"$policy\", \"\\1\"|" \
        "$f" > "$d/$(basename "$f")"
  done
}
