# SPDX-License-Identifier: Apache-2.0
# The Kubernetes deployment: roce-runtime when the runtime it chains to is
# gone (state, kill and delete still answered), and the DaemonSet's
# install/sync/cleanup program (contrib/k8s/install.sh) against a fake host
# root, file by file.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
[ "$OCI_RUNTIME" = runc ] || return 0

# The GPU operator's runtime under /usr/local/nvidia/toolkit is a candidate
# of the policy; uninstalled (the operator removed, a node re-imaged), a
# running container must still be stoppable: state, kill and delete reach
# runc, while a create is refused in one line and runs nothing.
test_shim_with_its_chained_runtime_missing_still_answers_state_kill_delete () {
  need_root
  need_cmd runc
  local id policy tk out
  id=$(new_id)
  tk=$T/toolkit/nvidia-container-runtime
  mkdir -p "$T/toolkit"
  cp "$(command -v runc)" "$tk"
  policy=$T/policy.json
  write_policy "$T/p0.json" warn
  jq --arg tk "$tk" '.runtime = [$tk, "/nonexistent/nvidia-container-runtime"]' "$T/p0.json" > "$policy"
  export ROCE_HOOK_CONFIG=$policy
  "$HOOK" --config "$policy" check > "$T/check" 2>&1 || true
  assert_file_contains "$T/check" "runtime (roce-runtime): $tk (policy runtime, candidate 1 of 2)"
  HOOKS=0 CMD='sleep 100' make_bundle "$T/b" "$policy"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b" "$id" </dev/null >/dev/null 2>"$T/err" ||
    fail "create through the shim failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  "$SHIM" "${RUNTIME_OPTS[@]}" start "$id" 2>"$T/err" || fail "start failed: $(cat "$T/err")"

  rm -f "$tk"
  "$HOOK" --config "$policy" check > "$T/check" 2>&1 || true
  assert_file_contains "$T/check" "runtime (roce-runtime): none: create and run are refused: policy runtime: one of \`$tk\`, \`/nonexistent/nvidia-container-runtime\` installed vs none of them"
  assert_file_contains "$T/check" "state, kill, delete go to $(command -v runc)"
  "$HOOK" --config "$policy" check --json > "$T/check.json" 2>/dev/null || true
  assert_eq "none $(command -v runc)" "$(jq -r '.runtime | "\(.source) \(.other_calls)"' "$T/check.json")" "check --json runtime"

  out=$("$SHIM" "${RUNTIME_OPTS[@]}" state "$id" 2>"$T/err") || fail "state without the chained runtime: $(cat "$T/err")"
  assert_eq running "$(jq -r .status <<<"$out")" "state"
  "$SHIM" "${RUNTIME_OPTS[@]}" kill "$id" KILL 2>"$T/err" || fail "kill without the chained runtime: $(cat "$T/err")"
  shim_says_stopped () { [ "$("$SHIM" "${RUNTIME_OPTS[@]}" state "$id" 2>/dev/null | jq -r .status)" = stopped ]; }
  wait_for 30 "the container to stop after kill" shim_says_stopped
  "$SHIM" "${RUNTIME_OPTS[@]}" delete "$id" 2>"$T/err" || fail "delete without the chained runtime: $(cat "$T/err")"
  runtime state "$id" >/dev/null 2>&1 && fail "$id still exists after delete"

  # A create is refused: the policy's runtime (GPUs, say) is not there.
  if "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b" "$id-2" </dev/null >/dev/null 2>"$T/err"; then
    runtime delete -f "$id-2" >/dev/null 2>&1
    fail "a create ran without the policy's runtime"
  fi
  assert_eq 1 "$(wc -l < "$T/err")" "lines of the refusal"
  assert_file_contains "$T/err" "roce-runtime: $id-2: policy runtime: one of \`$tk\`, \`/nonexistent/nvidia-container-runtime\` installed vs none of them (fix: "
  runtime state "$id-2" >/dev/null 2>&1 && fail "$id-2 exists after a refused create"
  true
}

# ---- contrib/k8s/install.sh against a fake host root ------------------------------

INSTALL=$ROOT/contrib/k8s/install.sh

# A node as the DaemonSet finds it: containerd 1.x's config.toml with its
# own CRI settings and an NVIDIA runtime, a lease store in the layout, and
# the image's files (the build's programs, config/hooks.d), the ConfigMap
# (a policy with ${NODE_NAME}) and the etcd Secret.
fake_node () {
  need_cmd jq
  H=$T/host
  IMG=$T/img
  mkdir -p "$H/etc/containerd" "$H/var/lib/roce-hook/holders" "$H/usr/local/bin" "$IMG/hooks.d" \
    "$T/cm" "$T/tls"
  cp "$BUILD/roce-hook" "$BUILD/roce-hook-engine" "$BUILD/roce-runtime" "$BUILD/roce-runtime-engine" "$IMG/"
  cp "$ROOT"/config/hooks.d/*.json "$IMG/hooks.d/"
  cat > "$H/etc/containerd/config.toml" <<'TOML'
version = 2
root = "/var/lib/containerd"

[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = "registry.k8s.io/pause:3.9"
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
  SystemdCgroup = true
TOML
  cp "$H/etc/containerd/config.toml" "$T/config.toml.orig"
  write_policy "$T/p0.json" warn
  # The policy's state_dir and sysfs_root as the DaemonSet mounts them: the
  # node's own at the same paths (check --nfd reads the node's files).
  mkdir -p "$H$T" "$T/state"
  ln -s "$T/state" "$H$T/state"
  ln -s "$T/sys" "$H$T/sys"
  jq '.cluster = { "node": "${NODE_NAME}", "etcd": { "endpoints": ["http://127.0.0.1:9"], "timeout_ms": 200 },
                   "block": 16, "reserve": 0 }' "$T/p0.json" > "$T/cm/config.json"
  printf 'ca-1\n' > "$T/tls/ca.pem"; printf 'cert-1\n' > "$T/tls/cert.pem"; printf 'key-1\n' > "$T/tls/key.pem"
  export ROCE_HOST_ROOT=$H ROCE_SRC=$IMG ROCE_POLICY_SRC=$T/cm/config.json ROCE_TLS_SRC=$T/tls \
    NODE_NAME=gpu-node-17 ROCE_RESTART_CMD="echo restart >> $T/restarts"
}

# mode_of PATH: octal mode.
mode_of () { stat -c %a "$1"; }

# What the DaemonSet leaves on the node, file by file.
assert_installed () {
  local p
  for p in roce-hook roce-hook-engine roce-runtime roce-runtime-engine; do
    cmp -s "$IMG/$p" "$H/usr/local/bin/$p" || fail "$p: not the image's"
    assert_eq 755 "$(mode_of "$H/usr/local/bin/$p")" "mode of $p"
  done
  for p in "$IMG"/hooks.d/*.json; do
    cmp -s "$p" "$H/usr/share/containers/oci/hooks.d/$(basename "$p")" || fail "hooks.d/$(basename "$p") missing or not the image's"
  done
  assert_eq 644 "$(mode_of "$H/etc/roce-hook/config.json")" "mode of config.json"
  assert_eq gpu-node-17 "$(jq -r .cluster.node "$H/etc/roce-hook/config.json")" "cluster.node installed"
  assert_eq "$(jq -S 'del(.cluster.node)' "$ROCE_POLICY_SRC")" "$(jq -S 'del(.cluster.node)' "$H/etc/roce-hook/config.json")" "the policy but its node"
  [ -L "$H/etc/roce-hook/etcd" ] || fail "etc/roce-hook/etcd is not a symlink to the certificates' directory"
  assert_eq 700 "$(mode_of "$H/etc/roce-hook/etcd/")" "mode of the etcd directory"
  assert_eq 600 "$(mode_of "$H/etc/roce-hook/etcd/key.pem")" "mode of key.pem"
  assert_eq 644 "$(mode_of "$H/etc/roce-hook/etcd/cert.pem")" "mode of cert.pem"
  cmp -s "$ROCE_TLS_SRC/key.pem" "$H/etc/roce-hook/etcd/key.pem" || fail "key.pem is not the Secret's"
  assert_file_contains "$H/etc/containerd/config.toml" 'imports = ["/etc/containerd/conf.d/*.toml"] # roce-hook'
  assert_file_contains "$H/etc/containerd/conf.d/zz-roce-hook.toml" 'BinaryName = "/usr/local/bin/roce-runtime"'
  # roce-hook check --nfd's labels (not the fallback's ready alone).
  local nfd=$H/etc/kubernetes/node-feature-discovery/features.d/roce-hook
  grep -q '^roce.io/ready=\(true\|false\)$' "$nfd" && grep -q '^roce.io/lossless=' "$nfd" ||
    fail "no roce.io/ready and lossless labels: $(cat "$nfd" 2>&1)"
}

# containerd itself reads the node's config with the drop-in: every setting
# and runtime it had, and the roce handler.
assert_containerd_merges () {
  command -v containerd >/dev/null || return 0
  sed "s|/etc/containerd/conf.d|$H/etc/containerd/conf.d|" "$H/etc/containerd/config.toml" > "$T/ctd.toml"
  containerd --config "$T/ctd.toml" config dump > "$T/dump" 2>&1 || fail "containerd rejects the node's config: $(tail -3 "$T/dump")"
  assert_file_contains "$T/dump" "restrict_oom_score_adj = true"
  assert_file_contains "$T/dump" 'default_runtime_name = "nvidia"'
  assert_file_contains "$T/dump" 'BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"'
  assert_file_contains "$T/dump" '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]'
  assert_file_contains "$T/dump" 'BinaryName = "/usr/local/bin/roce-runtime"'
  assert_file_contains "$T/dump" 'pod_annotations = ["roce.io/*"]'
  for r in "$@"; do assert_file_contains "$T/dump" "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.$r]"; done
  awk '/runtimes.roce.options\]/{f=1} f && /SystemdCgroup/{print; exit}' "$T/dump" | grep -q true ||
    fail "the roce handler's SystemdCgroup is not runc's (true)"
}

# Programs replaced while a runtime calls them: every call finds the old
# program or the new one, never a missing, half-written or unexecutable one.
test_install_is_atomic_file_by_file_under_a_concurrent_state () {
  need_root
  fake_node
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  assert_installed
  assert_containerd_merges nvidia
  assert_eq 1 "$(wc -l < "$T/restarts")" "containerd restarts after the first install"
  assert_file_contains "$T/log" "programs: roce-hook none -> 0.1.0 in /usr/local/bin"
  # Nothing changed: nothing rewritten, no restart.
  local ino
  ino=$(stat -c %i "$H/usr/local/bin/roce-runtime")
  "$INSTALL" install > "$T/log" 2>&1 || fail "second install failed: $(cat "$T/log")"
  assert_eq "$ino" "$(stat -c %i "$H/usr/local/bin/roce-runtime")" "roce-runtime rewritten though unchanged"
  assert_eq 1 "$(wc -l < "$T/restarts")" "containerd restarts after an install with nothing new"

  # Two builds, installed in turn while roce-runtime (the front and the
  # engine) answers `state` in a loop.
  cp -r "$IMG" "$T/img-b"
  local p
  for p in roce-hook roce-hook-engine roce-runtime roce-runtime-engine; do
    printf 'build-b' >> "$T/img-b/$p"
  done
  # The callers' policy chains to /bin/true: a call costs little more than
  # its exec, so that many fall inside each replacement.
  jq '.runtime = "/bin/true"' "$H/etc/roce-hook/config.json" > "$T/caller.json"
  export ROCE_HOOK_CONFIG=$T/caller.json
  (
    end=$((SECONDS + 600))
    while [ ! -e "$T/stop" ] && [ $SECONDS -lt $end ]; do
      for p in roce-runtime roce-runtime-engine roce-hook; do
        rc=0
        if [ $p = roce-hook ]; then
          "$H/usr/local/bin/$p" version >/dev/null 2>"$T/st.err" || rc=$?
        else
          "$H/usr/local/bin/$p" --root "$T/rs" state no-such-ctr >/dev/null 2>"$T/st.err" || rc=$?
        fi
        if [ $rc -ge 126 ] || grep -q "Text file busy\|Permission denied\|No such file or directory\|Exec format" "$T/st.err"; then
          echo "$p rc=$rc $(head -1 "$T/st.err")" >> "$T/bad"
        fi
        echo . >> "$T/calls"
      done
    done
  ) &
  local caller=$!
  defer kill "$caller"
  local i r
  r=$(rounds 10 3)
  for ((i = 0; i < r; i++)); do
    ROCE_SRC=$T/img-b "$INSTALL" install > "$T/log" 2>&1 || fail "install b failed: $(cat "$T/log")"
    "$INSTALL" install > "$T/log" 2>&1 || fail "install a failed: $(cat "$T/log")"
  done
  touch "$T/stop"
  wait "$caller" || true
  [ ! -s "$T/bad" ] || fail "a call during the install failed: $(sort "$T/bad" | uniq -c | head -3)"
  [ "$(wc -l < "$T/calls")" -ge $((30 * r)) ] || fail "too few concurrent calls: $(wc -l < "$T/calls") in $r rounds"
  assert_installed
  # No temporary file is left beside anything.
  [ -z "$(find "$H" -name '*.roce-new*')" ] || fail "left: $(find "$H" -name '*.roce-new*')"
}

# The ConfigMap and the Secret change while the DaemonSet runs: the node
# gets them without a restart of the pod; a policy the hook refuses is said
# in one line and the one in force stays; another runtime added to
# containerd's config reaches the drop-in; on SIGTERM (the DaemonSet
# deleted) the node is as it was.
test_sync_follows_its_sources_and_cleans_up_on_term () {
  need_root
  fake_node
  ROCE_SYNC_INTERVAL=0.2 ROCE_NFD_EVERY=1 ROCE_CLEANUP_ON_TERM=1 "$INSTALL" sync > "$T/log" 2>&1 &
  local pid=$!
  defer kill "$pid"
  # The sync's next pass (every 0.2 s here; seconds on a loaded host): lib.sh's
  # wait_for, not a 10 s loop of its own under the same name.
  synced () { wait_for 30 "the sync: $1 (its log: $T/log)" eval "$1"; }
  synced '[ -f "$H/etc/containerd/conf.d/zz-roce-hook.toml" ]'
  assert_installed
  # The ConfigMap changes (a kubelet swaps the projected file).
  jq '.qos.mode = "off"' "$T/cm/config.json" > "$T/cm/.new" && mv "$T/cm/.new" "$T/cm/config.json"
  synced '[ "$(jq -r .qos.mode "$H/etc/roce-hook/config.json")" = off ]'
  assert_eq gpu-node-17 "$(jq -r .cluster.node "$H/etc/roce-hook/config.json")" "cluster.node after the sync"
  # A policy the hook refuses: said once a sync, the one in force stays.
  jq '.qos.mode = "strict"' "$T/cm/config.json" > "$T/cm/.new" && mv "$T/cm/.new" "$T/cm/config.json"
  synced 'grep -q "policy from .*: one roce-hook accepts vs" "$T/log"'
  assert_file_contains "$T/log" "qos.mode: 'strict' is not one of 'enforce', 'warn', 'off' (fix: correct the ConfigMap; the policy in force stays)"
  assert_eq off "$(jq -r .qos.mode "$H/etc/roce-hook/config.json")" "the policy in force"
  # The Secret is renewed: the three files change at once.
  local old
  old=$(readlink "$H/etc/roce-hook/etcd")
  printf 'cert-2\n' > "$T/tls/cert.pem"; printf 'key-2\n' > "$T/tls/key.pem"
  synced '[ "$(cat "$H/etc/roce-hook/etcd/key.pem")" = key-2 ]'
  assert_eq cert-2 "$(cat "$H/etc/roce-hook/etcd/cert.pem")" "cert.pem with key.pem"
  [ ! -e "$H/etc/roce-hook/$old" ] || fail "the old certificates' directory $old stayed"
  # The GPU operator adds a runtime to containerd's config.
  printf '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n' \
    >> "$H/etc/containerd/config.toml"
  cp "$H/etc/containerd/config.toml" "$T/config.toml.kata"
  synced 'grep -q runtimes.kata "$H/etc/containerd/conf.d/zz-roce-hook.toml"'
  assert_containerd_merges nvidia kata
  # The DaemonSet is deleted.
  kill -TERM "$pid"
  wait "$pid" || fail "the sync's cleanup failed: $(tail -3 "$T/log")"
  local left
  left=$(cd "$H" && find . -path ./var/lib/roce-hook -prune -o -type f -print | sort | tr '\n' ' ')
  assert_eq "./etc/containerd/config.toml " "$left" "files left on the node"
  sed '/^imports = /d' "$T/config.toml.kata" | cmp -s - "$H/etc/containerd/config.toml" ||
    fail "config.toml is not as it was: $(diff "$T/config.toml.kata" "$H/etc/containerd/config.toml")"
  [ -d "$H/var/lib/roce-hook/holders" ] || fail "the cleanup removed the lease store"
  grep -c restart "$T/restarts" | grep -qv '^[01]$' || fail "containerd not restarted after the cleanup"
}

# A container still running through roce-runtime: its shim will call it to
# kill and delete, so the cleanup keeps the programs (and says so in one
# line) but removes every reference to them.
test_cleanup_keeps_the_programs_a_running_container_needs () {
  need_root
  fake_node
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  local task=$H/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc123
  mkdir -p "$task"
  echo '{"type_url":"containerd.runc.v1.Options","value":{"binary_name":"/usr/local/bin/roce-runtime"}}' > "$task/options.json"
  local rc=0
  "$INSTALL" cleanup > "$T/log" 2>"$T/err" || rc=$?
  assert_eq 1 "$rc" "exit status of a cleanup with a container left"
  assert_eq 1 "$(wc -l < "$T/err")" "lines of the refusal"
  assert_file_contains "$T/err" "roce-hook-install: cleanup: no container running through /usr/local/bin/roce-runtime vs abc123 (fix: delete those pods"
  [ -z "$(ls "$H/usr/share/containers/oci/hooks.d")" ] || fail "hooks.d files left"
  [ ! -e "$H/etc/containerd/conf.d/zz-roce-hook.toml" ] || fail "the handler's drop-in stayed"
  [ -x "$H/usr/local/bin/roce-runtime" ] && [ -x "$H/usr/local/bin/roce-runtime-engine" ] && [ -x "$H/usr/local/bin/roce-hook" ] ||
    fail "a program the container needs was removed"
  rm -rf "$task"
  "$INSTALL" cleanup > "$T/log" 2>&1 || fail "cleanup failed: $(cat "$T/log")"
  [ -z "$(ls "$H/usr/local/bin")" ] || fail "programs left: $(ls "$H/usr/local/bin")"
  cmp -s "$T/config.toml.orig" "$H/etc/containerd/config.toml" || fail "config.toml is not as it was"
}

# A roce-hook without check --nfd (an older image): roce.io/ready from
# check's exit status alone; the cleanup removes the label.
test_labels_fall_back_to_checks_status_without_nfd () {
  need_root
  fake_node
  mkdir -p "$T/old"
  cp "$IMG/roce-hook" "$T/old/roce-hook.real"
  cp "$IMG/roce-hook-engine" "$T/old/roce-hook-engine"
  # The older roce-hook's check: no --nfd option (usage, exit 2).
  printf '#!/bin/sh
for a; do [ "$a" = --nfd ] && { echo "roce-hook: unknown option --nfd" >&2; exit 2; }; done
exec %s "$@"
' \
    "$T/old/roce-hook.real" > "$IMG/roce-hook"
  chmod 755 "$IMG/roce-hook"
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  local nfd=$H/etc/kubernetes/node-feature-discovery/features.d/roce-hook rc=0
  "$T/old/roce-hook.real" --config "$H/etc/roce-hook/config.json" check > /dev/null 2>&1 || rc=$?
  local want=false
  [ $rc = 0 ] && want=true
  assert_eq "roce.io/ready=$want" "$(grep -v '^#' "$nfd")" "the fallback's label (check exit $rc)"
  "$INSTALL" cleanup > "$T/log" 2>&1 || fail "cleanup failed: $(cat "$T/log")"
  [ ! -e "$nfd" ] || fail "the label file stayed"
}

# The labels follow the switch the node heard: check --nfd reads the LLDP
# record in the node's state_dir (the listener's), never a state_dir of the
# container's own; seen from one, the labels say not ready, and why.
test_labels_follow_the_switch_the_node_heard () {
  need_root
  fake_node
  local nic nfd=$H/etc/kubernetes/node-feature-discovery/features.d/roce-hook
  nic=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$nic"
  write_policy "$T/p1.json" warn "mlx5_0 $nic 10"
  jq '.qos.switch = "enforce" | .cluster = { "node": "${NODE_NAME}", "etcd": { "endpoints": ["http://127.0.0.1:9"], "timeout_ms": 200 }, "block": 16, "reserve": 0 }' \
    "$T/p1.json" > "$T/cm/config.json"
  # The node's state_dir, not this container's: the record of its switch
  # port advertising PFC on 4 only.
  rm "$H$T/state"
  mkdir -p "$H$T/state/lldp"
  printf '{"version":1,"netdev":"%s","heard":%s,"frame":"%s"}\n' "$nic" "$(date +%s)" \
    "$(python3 "$ROOT/tests/helpers/lldp-frames.py" hex pfc4)" > "$H$T/state/lldp/$nic.json"
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  assert_file_contains "$nfd" "# roce-hook check not run: $T/state here is not the node's"
  assert_file_contains "$nfd" "roce.io/ready=false"
  assert_file_contains "$T/log" "roce-hook-install: NFD labels: check on the node's files vs $T/state here is not the node's"
  # Mounted at the same path, as the DaemonSet does: the switch's verdict.
  mount --bind "$H$T/state" "$T/state" || fail "bind mount"
  defer umount "$T/state"
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  assert_eq "roce.io/ready=false
roce.io/lossless=false
roce.io/switch-pfc=fail" "$(grep -E '^roce.io/(ready|lossless|switch-pfc)=' "$nfd")" "the labels"
  # ... as the node's own check says.
  assert_eq FAIL "$("$HOOK" --config "$H/etc/roce-hook/config.json" check --json 2>/dev/null |
    jq -r '.hcas[0].checks[] | select(.check == "switch-pfc") | .status')" "check on the node"
  # The DaemonSet's containers that label (install, sync) mount the node's
  # state_dir at the shipped policy's path.
  assert_eq "install sync" "$(python3 - "$ROOT/contrib/k8s/roce-hook.yaml" <<'PY'
import json, sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
cm = next(d for d in docs if d and d["kind"] == "ConfigMap")
sd = json.loads(cm["data"]["config.json"].replace("${NODE_NAME}", "n").replace("${ETCD_SERVICE_IP}", "1.2.3.4"))["state_dir"]
ds = next(d for d in docs if d and d["kind"] == "DaemonSet")["spec"]["template"]["spec"]
vols = {v["name"]: v for v in ds["volumes"]}
print(" ".join(c["name"] for c in ds["initContainers"] + ds["containers"]
               if c["name"] in ("install", "sync") and any(
                   m["mountPath"] == sd and vols[m["name"]].get("hostPath", {}).get("path") == sd
                   for m in c.get("volumeMounts", []))))
PY
)" "containers mounting the node's state_dir"
}

# The DaemonSet's gc (the first of the node's cluster code to run, before
# any RoCE pod) sees the host's /etc/machine-id: without it no node id is
# made (docs/cluster.md, fencing).
test_gc_sees_the_hosts_machine_id () {
  need_cmd python3
  assert_eq "/etc/machine-id File True" "$(python3 - "$ROOT/contrib/k8s/roce-hook.yaml" <<'PY'
import sys, yaml
ds = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet")
spec = ds["spec"]["template"]["spec"]
vols = {v["name"]: v for v in spec["volumes"]}
gc = next(c for c in spec["containers"] if c["name"] == "gc")
m = next((m for m in gc["volumeMounts"] if m["mountPath"] == "/etc/machine-id"), None)
hp = vols[m["name"]]["hostPath"] if m else {}
print(hp.get("path"), hp.get("type"), m.get("readOnly") if m else None)
PY
)" "the gc container's /etc/machine-id"
}

# A roce-hook that cannot read the node's lease store is not installed.
test_install_refuses_a_downgrade_across_the_lease_store_format () {
  need_root
  fake_node
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  find "$H" -printf '%p %i %s\n' | sort > "$T/before"
  # A release before the store's layout reads only leases.json (format 1).
  printf '#!/bin/sh\necho roce-hook 0.0.9\n' > "$IMG/roce-hook"
  local rc=0
  "$INSTALL" install > "$T/log" 2>"$T/err" || rc=$?
  assert_eq 1 "$rc" "exit status"
  assert_eq "roce-hook-install: install roce-hook 0.0.9 over $H/var/lib/roce-hook: a lease store it reads (format 1-1) vs format 2 (fix: install a roce-hook that reads format 2, or drain the node and remove /var/lib/roce-hook)" \
    "$(cat "$T/err")" "the refusal"
  find "$H" -printf '%p %i %s\n' | sort | diff "$T/before" - > "$T/diff" || fail "the host changed: $(head -5 "$T/diff")"
  # A store holding IPv6 leases (format 3, which it says in its format
  # file): a release that reads up to format 2 is refused.
  echo 3 > "$H/var/lib/roce-hook/format"
  printf '#!/bin/sh\necho roce-hook 0.2.0\necho "lease store format 2 (reads 1-2)"\n' > "$IMG/roce-hook"
  rc=0
  "$INSTALL" install > "$T/log" 2>"$T/err" || rc=$?
  assert_eq 1 "$rc" "exit status of a format-2 release over format 3"
  assert_eq "roce-hook-install: install roce-hook 0.2.0 over $H/var/lib/roce-hook: a lease store it reads (format 1-2) vs format 3 (fix: install a roce-hook that reads format 3, or drain the node and remove /var/lib/roce-hook)" \
    "$(cat "$T/err")" "the refusal of a downgrade across format 3"
  # This build reads it; a store of a format after this build's is refused.
  cp "$BUILD/roce-hook" "$IMG/roce-hook"
  "$INSTALL" install > "$T/log" 2>&1 || fail "install over format 3: $(cat "$T/log")"
  echo 4 > "$H/var/lib/roce-hook/format"
  rc=0
  "$INSTALL" install > "$T/log" 2>"$T/err" || rc=$?
  assert_eq 1 "$rc" "exit status over format 4"
  assert_file_contains "$T/err" "a lease store it reads (format 1-3) vs format 4"
}

# RKE2 and k3s regenerate config.toml: the handler goes into the template,
# after the base they generate; the cleanup removes the template it made.
test_k3s_gets_the_handler_in_its_template () {
  need_root
  fake_node
  rm -rf "$H/etc/containerd"
  mkdir -p "$H/var/lib/rancher/k3s/agent/etc/containerd"
  "$INSTALL" install > "$T/log" 2>&1 || fail "install failed: $(cat "$T/log")"
  local tmpl=$H/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl
  assert_eq '{{ template "base" . }}' "$(sed -n 2p "$tmpl")" "the template's base"
  assert_file_contains "$tmpl" '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.roce.options]'
  assert_file_contains "$tmpl" 'BinaryName = "/usr/local/bin/roce-runtime"'
  assert_eq 1 "$(wc -l < "$T/restarts")" "k3s restarts"
  [ ! -e "$H/etc/containerd" ] || fail "a containerd config was made on a k3s node"
  "$INSTALL" cleanup > "$T/log" 2>&1 || fail "cleanup failed: $(cat "$T/log")"
  [ ! -e "$tmpl" ] || fail "the template stayed"
}

# The shipped policy and etcd manifest together, as far as this machine
# goes: the certificates from contrib/k8s/etcd-certs.sh, an etcd started
# with etcd.yaml's TLS flags (client and peer certificates required), its
# health on the plain metrics port (the probes'), the ConfigMap's policy
# rendered and installed by install.sh with the client certificate from
# the Secret, and `roce-hook check` reaching etcd through it.
test_the_shipped_policy_reaches_a_tls_etcd_from_the_cert_step () {
  need_root
  need_cmd etcd
  need_cmd curl
  need_cmd python3
  python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
  source "$(dirname "${BASH_SOURCE[0]}")/../helpers/cluster.sh"
  fake_node
  "$ROOT/contrib/k8s/etcd-certs.sh" "$T/certs" > "$T/certs.log" 2>&1 || fail "etcd-certs.sh: $(cat "$T/certs.log")"
  local base e
  base=$(port_block)
  e=$T/certs/etcd
  etcd --name roce-etcd-0 --data-dir "$T/etcd" --log-level error --logger zap \
    --initial-cluster "roce-etcd-0=https://127.0.0.1:$((base + 1))" --initial-cluster-state new \
    --listen-client-urls "https://127.0.0.1:$base" --advertise-client-urls "https://127.0.0.1:$base" \
    --listen-peer-urls "https://127.0.0.1:$((base + 1))" --initial-advertise-peer-urls "https://127.0.0.1:$((base + 1))" \
    --listen-metrics-urls "http://127.0.0.1:$((base + 2))" \
    --client-cert-auth --trusted-ca-file "$e/ca.pem" --cert-file "$e/server.pem" --key-file "$e/server-key.pem" \
    --peer-client-cert-auth --peer-trusted-ca-file "$e/ca.pem" --peer-cert-file "$e/peer.pem" \
    --peer-key-file "$e/peer-key.pem" > "$T/etcd.log" 2>&1 &
  local pid=$!
  defer "kill $pid; wait $pid"
  metrics_healthy () { curl -sf "http://127.0.0.1:$((base + 2))/health" 2>/dev/null | grep -q '"health":"true"'; }
  wait_for 30 "etcd's /health on the metrics port (its log: $T/etcd.log)" metrics_healthy
  # The client port asks for a certificate: a probe there could not pass.
  curl -s --cacert "$e/ca.pem" "https://127.0.0.1:$base/health" > /dev/null 2>&1 &&
    fail "etcd answered a client without a certificate"
  # The ConfigMap's policy, with this machine's fake host in place of /sys
  # and /var/lib, and etcd's port here.
  python3 - "$ROOT/contrib/k8s/roce-hook.yaml" > "$T/cm/config.json" <<'PY'
import sys, yaml
cm = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap"][0]
print(cm["data"]["config.json"])
PY
  jq --arg sd "$T/state" --arg sys "$(jq -r .sysfs_root "$T/p0.json")" --arg port "$base" \
    '.state_dir = $sd | .sysfs_root = $sys | .cluster.etcd.endpoints |= map(sub(":2379$"; ":" + $port))' \
    "$T/cm/config.json" > "$T/cm/p" && mv "$T/cm/p" "$T/cm/config.json"
  cp "$T/certs/roce-hook/"*.pem "$T/tls/"
  ROCE_ETCD_SERVICE=127.0.0.1 "$INSTALL" install > "$T/log" 2>&1 || fail "install: $(cat "$T/log")"
  assert_eq "https://127.0.0.1:$base" "$(jq -r '.cluster.etcd.endpoints[0]' "$H/etc/roce-hook/config.json")" "the endpoint rendered"
  # The certificates where the policy says, on this fake host's root.
  sed "s|\"/etc/roce-hook/|\"$H/etc/roce-hook/|g" "$H/etc/roce-hook/config.json" > "$T/node.json"
  "$HOOK" --config "$T/node.json" check > "$T/check" 2>&1 || true
  assert_file_contains "$T/check" "addressing: cluster, node gpu-node-17, blocks of 16, reserve 4, 0 blocks held; etcd https://127.0.0.1:$base (TLS, client certificate): etcd 3.4"

  # The engine as the image ships it (contrib/k8s/bundle-engine.sh): its
  # glibc, loader, libcurl and libibverbs beside it.  With the host's
  # libc.so.6, libcurl.so.4 and libibverbs.so.1 made empty (a private mount
  # namespace), it still reaches etcd over TLS; the build's engine cannot
  # even start there.
  need_cmd patchelf
  [ -x /bin/busybox ] || skip "needs busybox-static"
  "$ROOT/contrib/k8s/bundle-engine.sh" "$BUILD" "$T/bundle" "$T/bundle/lib" > "$T/bundle.log" 2>&1 ||
    fail "bundle-engine.sh: $(cat "$T/bundle.log")"
  local masks="" l
  for l in libc.so.6 libcurl.so.4 libibverbs.so.1; do
    masks="$masks $(readlink -f "$(/sbin/ldconfig -p | awk -v n="$l" '$1 == n { print $NF; exit }')")"
  done
  unshare -m /bin/busybox sh -c '
    e=$1 p=$2 plain=$3; shift 3
    for l in "$@"; do /bin/busybox mount --bind /dev/null "$l" || exit 9; done
    "$plain" version > /dev/null 2>&1 && { echo "the build engine ran without the host libc"; exit 8; }
    exec "$e" --config "$p" check' sh "$T/bundle/roce-hook-engine" "$T/node.json" "$BUILD/roce-hook-engine" $masks \
    > "$T/check-bundled" 2>&1 || true
  assert_file_contains "$T/check-bundled" "(TLS, client certificate): etcd 3.4"
}

# Every manifest against Kubernetes' schemas, offline (no API server here):
# contrib/k8s/schema (npm's kubernetes-models and @kubernetes/client-node's
# field lists, installed by contrib/deps.sh) run in a network namespace with
# no network at all.
test_manifests_match_the_kubernetes_schemas_offline () {
  need_cmd node
  local v=$ROOT/contrib/k8s/schema
  [ -d "$v/node_modules/kubernetes-models" ] || skip "needs contrib/k8s/schema's packages (make deps)"
  local n
  n=$(cat "$ROOT"/contrib/k8s/*.yaml | grep -c '^kind:')
  unshare -n node "$v/validate.mjs" "$ROOT"/contrib/k8s/*.yaml > "$T/out" 2>&1 || fail "$(cat "$T/out")"
  assert_eq "no schema: MPIJob (kubeflow.org/v2beta1)
manifests: $((n - 1)) valid, 0 invalid, 1 without a schema" "$(cat "$T/out")" "the schema check"
  # It refuses what the API server would: a wrong type, a missing field.
  sed 's|command: \["/opt/roce-hook/install.sh", "sync"\]|command: [8]|' \
    "$ROOT/contrib/k8s/roce-hook.yaml" > "$T/bad.yaml"
  sed -i '/^kind: RuntimeClass/,/^---/{s/^handler: roce$//}; s/^  failurePolicy: Fail$/  failurePolcy: Fail/' "$T/bad.yaml"
  if unshare -n node "$v/validate.mjs" "$T/bad.yaml" > "$T/out" 2>&1; then
    fail "a broken manifest passed: $(cat "$T/out")"
  fi
  assert_file_contains "$T/out" "bad.yaml: DaemonSet roce-hook: data/spec/template/spec/containers/0/command/0 must be string"
  assert_file_contains "$T/out" "bad.yaml: RuntimeClass roce: data must have required property handler"
  # A field the API does not know (kubectl apply --validate=strict refuses it).
  assert_file_contains "$T/out" "bad.yaml: ValidatingAdmissionPolicy roce-needs-runtimeclass: unknown field /spec/failurePolcy"
  assert_file_contains "$T/out" "manifests: "
}

# etcd.yaml's start script: three members bootstrap; one loses its volume,
# restarts, and rejoins (removed and added again, as `existing`) with the
# data the others have.  Members on 127.0.0.2-4 under the names the
# StatefulSet gives them (an /etc/hosts of the test's own mount namespace),
# with etcd-certs.sh's certificates, client and peer TLS.
test_an_etcd_member_that_lost_its_volume_rejoins () {
  need_root
  need_cmd etcd
  need_cmd etcdctl
  need_cmd curl
  python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
  local i a peers=roce-etcd-peer.roce-system.svc.cluster.local
  for i in 2 3 4; do
    ss -Htln | awk '{print $4}' | grep -qE "^(127\.0\.0\.$i|0\.0\.0\.0|\*|\[::\]):(2379|2380|2381)$" &&
      skip "ports 2379-2381 of 127.0.0.$i are taken"
  done
  python3 - "$ROOT/contrib/k8s/etcd.yaml" > "$T/run.sh" <<'PY'
import sys, yaml
cm = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap"][0]
print(cm["data"]["run.sh"])
PY
  "$ROOT/contrib/k8s/etcd-certs.sh" "$T/certs" > /dev/null 2>&1 || fail "etcd-certs.sh"
  { cat /etc/hosts; for i in 0 1 2; do echo "127.0.0.$((i + 2)) roce-etcd-$i.$peers"; done; } > "$T/hosts"
  mount --bind "$T/hosts" /etc/hosts
  defer umount /etc/hosts
  for i in 0 1 2; do mkdir -p "$T/m$i/var/lib" && cp -r "$T/certs/etcd" "$T/m$i/tls"; done
  start_member () {
    HOSTNAME=roce-etcd-$1 REPLICAS=3 ETCDCTL_API=3 ROCE_ETCD_LISTEN=127.0.0.$(($1 + 2)) ROCE_ETCD_DIR=$T/m$1 \
      TMPDIR=$T/m$1 sh "$T/run.sh" >> "$T/m$1.log" 2>&1 &
    echo $! > "$T/m$1.pid"
    defer "kill \$(cat $T/m$1.pid) 2>/dev/null; true"
  }
  healthy () { curl -sf "http://127.0.0.$(($1 + 2)):2381/health" 2>/dev/null | grep -q '"health":"true"'; }
  for i in 0 1 2; do start_member $i; done
  for a in $(seq 150); do healthy 0 && healthy 1 && healthy 2 && break; sleep 0.2; done
  healthy 0 && healthy 1 && healthy 2 || fail "bootstrap: $(tail -3 "$T/m0.log" "$T/m1.log")"
  local ctl=(etcdctl --cacert "$T/certs/etcd/ca.pem" --cert "$T/certs/etcd/client.pem" --key "$T/certs/etcd/client-key.pem")
  ETCDCTL_API=3 "${ctl[@]}" --endpoints "https://roce-etcd-0.$peers:2379" put /roce-hook/blocks/x node-a > /dev/null ||
    fail "put"
  # Member 1 loses its volume.
  kill "$(cat "$T/m1.pid")"
  wait_for 20 "member 1 to exit before its data goes" pid_gone "$(cat "$T/m1.pid")"
  rm -rf "$T/m1/var/lib/etcd"
  start_member 1
  for a in $(seq 150); do healthy 1 && break; sleep 0.2; done
  healthy 1 || fail "member 1 did not rejoin: $(tail -5 "$T/m1.log")"
  assert_file_contains "$T/m1.log" "roce-etcd: roce-etcd-1: rejoining: its data is gone"
  assert_eq "node-a" "$(ETCDCTL_API=3 "${ctl[@]}" --endpoints "https://roce-etcd-1.$peers:2379" get --consistency=s --print-value-only /roce-hook/blocks/x)" \
    "the key read from the rejoined member's own data"
  assert_eq 3 "$(ETCDCTL_API=3 "${ctl[@]}" --endpoints "https://roce-etcd-0.$peers:2379" member list | grep -c ', started, roce-etcd-')" \
    "started members"
}

# The metrics container as the DaemonSet runs it: no capability at all, no
# new privileges, the lease store read-only, and the policy the install
# step rendered into its emptyDir.  The raw ConfigMap (cluster.node still
# "${NODE_NAME}") is what it used to read: refused, no file written.
test_metrics_unprivileged_on_the_rendered_policy () {
  need_root
  need_cmd setpriv
  fake_node
  mkdir -p "$T/copy" "$T/textfile" "$H/var/lib/roce-hook"
  ROCE_POLICY_COPY=$T/copy/config.json "$INSTALL" install > "$T/log" 2>&1 || fail "install: $(cat "$T/log")"
  assert_eq gpu-node-17 "$(jq -r .cluster.node "$T/copy/config.json")" "the metrics container's policy"
  local sd
  sd=$(jq -r .state_dir "$T/copy/config.json")
  mkdir -p "$sd"
  # As the container: read-only state, every capability gone, no_new_privs.
  metrics_as_container () {
    unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
      exec setpriv --inh-caps=-all --bounding-set=-all --no-new-privs "$2" --config "$3" metrics --output "$4"' \
      sh "$sd" "$HOOK" "$1" "$T/textfile/roce-hook.prom"
  }
  if metrics_as_container "$T/cm/config.json" > "$T/raw.out" 2>&1; then
    fail "metrics accepted the raw ConfigMap's \${NODE_NAME}"
  fi
  assert_file_contains "$T/raw.out" "cluster.node: expected a node name"
  [ ! -e "$T/textfile/roce-hook.prom" ] || fail "a textfile from the raw ConfigMap"
  metrics_as_container "$T/copy/config.json" > "$T/out" 2>&1 || fail "metrics as the container: $(cat "$T/out")"
  grep -q "^roce_" "$T/textfile/roce-hook.prom" || fail "no roce_ metric: $(head -5 "$T/textfile/roce-hook.prom")"
}

run_tests
