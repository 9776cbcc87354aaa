# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Harness pieces for the runtime integrations: a private containerd and a
# private Podman, both confined to $T.

# memlock at the current hard limit: raising it needs CAP_SYS_RESOURCE,
# which this machine lacks.
hard_memlock_bytes () {
  local kb
  kb=$(ulimit -H -l)
  [ "$kb" = unlimited ] && echo 67108864 || echo $((kb * 1024))
}

# setup_host: two fake HCAs (mlx5_0 and mlx5_1 on veth ends), rdma_cm, and
# $POLICY (qos.mode warn: veths have no DCB) with memlock $MEMLOCK (the
# hard limit; MEMLOCK=N before the call sets another).
setup_host () {
  need_root
  need_cmd "$OCI_RUNTIME"
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  NIC2=$(fake_nic 9000)
  fake_hca mlx5_1 1 "$NIC2"
  fake_rdma_cm
  POLICY=$T/policy.json
  MEMLOCK=${MEMLOCK:-$(hard_memlock_bytes)}
  POLICY_MEMLOCK=$MEMLOCK write_policy "$POLICY" warn "mlx5_0 $NIC 10" "mlx5_1 $NIC2 11"
  export ROCE_HOOK_CONFIG=$POLICY
}

# containerd_start: a containerd with its own root, state, socket and config
# under $T; stopped (by pid) when the test ends.  Sets CTR.
containerd_start () {
  need_cmd containerd
  # containerd's runc shim passes runc's flags only: crun would create a
  # cgroup with a BPF device program, which needs a memlock raise this
  # machine refuses (its root lacks CAP_SYS_RESOURCE).
  [ "$OCI_RUNTIME" = runc ] || skip "containerd with $OCI_RUNTIME needs cgroups with a BPF device program, refused on this machine"
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
  ctr_answers () { "${CTR[@]}" version >/dev/null 2>&1; }
  wait_for 30 "containerd to answer (its log: $T/containerd/log)" ctr_answers
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
[engine.runtimes]
roce-runtime = ["$T/podman/roce-runtime"]
CONF
  export CONTAINERS_CONF=$T/podman/containers.conf
  PODMAN=(podman --root "$T/podman/root" --runroot "$T/podman/run" --storage-driver vfs
          --cgroup-manager cgroupfs --tmpdir "$T/podman/tmp")
  # `podman run` options for the runtime under test: crun runs here only
  # without cgroups (its BPF device program needs a memlock raise this
  # machine refuses).
  PODMAN_CG=()
  [ "$OCI_RUNTIME" = crun ] && PODMAN_CG=(--cgroups=disabled)
  PODMAN_RUN=(--runtime "$(command -v "$OCI_RUNTIME")" "${PODMAN_CG[@]}")
  # `--runtime $PODMAN_SHIM`: the shim, with this test's policy.  Podman
  # 4.3 runs without cgroups only a runtime named "crun" (its
  # runtime_supports_nocgroups key is not read yet), so under crun the shim
  # is registered under that name.
  shim_wrapper "$T/podman/roce-runtime" "$POLICY"
  PODMAN_SHIM=roce-runtime
  if [ "$OCI_RUNTIME" = crun ]; then
    printf 'crun = ["%s"]\n' "$T/podman/roce-runtime" >> "$T/podman/containers.conf"
    PODMAN_SHIM=crun
  fi
  defer "${PODMAN[*]} rm -af -t0"
}

# shim_wrapper FILE POLICY: roce-runtime with $ROCE_HOOK_CONFIG set, for
# engines (Podman) that run the runtime with an environment of their own.
shim_wrapper () {
  printf '#!/bin/sh\nROCE_HOOK_CONFIG=%s exec %s "$@"\n' "$2" "$SHIM" > "$1"
  chmod +x "$1"
}

# hooks_dir DIR POLICY: config/hooks.d with this build's hook and policy.
hooks_dir () {
  local d=$1 policy=$2 f
  mkdir -p "$d"
  for f in "$ROOT"/config/hooks.d/*.json; do
    sed -e "s|\"/usr/local/bin/roce-hook\"|\"$HOOK\"|" \
        -e "s#\"roce-hook\", \"\\(prestart\\|poststop\\)\"#\"roce-hook\", \"--config\", \"$policy\", \"\\1\"#" \
        "$f" > "$d/$(basename "$f")"
  done
}
