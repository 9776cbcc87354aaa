# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Harness pieces for the device tests (sourced after lib.sh).

# dev_host: two fake HCAs (mlx5_0 -> uverbs0, mlx5_1 -> uverbs1), each on its
# own fake NIC, and rdma_cm (10:58); $POLICY lists both HCAs.
dev_host () {
  need_root
  need_cmd "$OCI_RUNTIME"
  NIC0=$(fake_nic 9000)
  NIC1=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC0"
  fake_hca mlx5_1 1 "$NIC1"
  fake_rdma_cm
  POLICY=$T/policy.json
  write_policy "$POLICY" warn "mlx5_0 $NIC0 10" "mlx5_1 $NIC1 11"
}

# bundle_add_mount BUNDLE JSON: one more entry at the start of the spec's mounts.
bundle_add_mount () {
  sed -i "s|^  \"mounts\": \[|  \"mounts\": [\n    $2,|" "$1/config.json"
  grep -qF -- "$2" "$1/config.json" || fail "could not add a mount to $1/config.json"
}

# bundle_drop_dev_tmpfs BUNDLE: no tmpfs on /dev; the image's own /dev is used.
bundle_drop_dev_tmpfs () {
  sed -i '/"destination": "\/dev", "type": "tmpfs"/d' "$1/config.json"
  ! grep -q '"destination": "/dev", "type": "tmpfs"' "$1/config.json" || fail "tmpfs /dev still there"
}

# bundle_set_devices BUNDLE JSON: replaces linux.resources.devices.
bundle_set_devices () {
  sed -i "s|\"devices\": \[{\"allow\": false, \"access\": \"rwm\"}\]|\"devices\": $2|" "$1/config.json"
  grep -qF -- "$2" "$1/config.json" || fail "could not set the device rules of $1"
}

# host_digest PATH...: what a path looks like from the host: every entry below
# it (type, mode, size, mtime, link target) and the content of regular files.
host_digest () {
  local p
  for p in "$@"; do
    if [ -d "$p" ] && [ ! -L "$p" ]; then
      find "$p" -xdev -maxdepth 2 -printf '%y %m %s %T@ %p -> %l\n' 2>/dev/null | LC_ALL=C sort
      find "$p" -xdev -maxdepth 2 -type f -size -64k -print0 2>/dev/null | LC_ALL=C sort -z |
        xargs -0 -r md5sum 2>/dev/null
    else
      stat -c '%F %a %s %Y %N' "$p" 2>&1
    fi
  done
  # No mount of ours anywhere in the host's (the test's) namespace.
  grep -cE 'uverbs|rdma_cm|/victim' /proc/self/mountinfo || true
}

# one_hook_line ID: the runtime's stderr holds exactly one roce-hook line.
one_hook_line () {
  local n
  n=$(grep -c "roce-hook: $1: " "$T/$1.err" || true)
  [ "$n" = 1 ] || fail "expected one roce-hook line, found $n: $(cat "$T/$1.err")"
}

# node_seen ID PATH: "char e7:c0" as the container saw it (CMD prints it).
NODE_CMD='for n in /dev/infiniband/*; do printf "%s %s\n" "$n" "$(stat -c "%F %t:%T" "$n")"; done'

# fake_runtime BUNDLE: a process that holds what runc holds when it runs the
# prestart hooks: new mount, network, pid, ipc and uts namespaces (as the
# bundle asks), the rootfs bind-mounted on itself, a proc on <rootfs>/proc,
# no pivot_root yet.  Sets FR_PID (the "container" process) and FR_WAIT (the
# unshare process to wait for).  For /dev cases that runc itself cannot take
# (runc 1.1.5 writes its /dev/fd... symlinks through an image's /dev
# symlink, onto the host, before any hook runs).
fake_runtime () {
  local r=$1/rootfs i
  : > "$T/fr.ready"
  unshare -m -n -p -i -u --fork --kill-child --propagation private sh -c \
    'mount --bind "$1" "$1" && mount -t proc proc "$1/proc" && echo ready > "$2" && exec sleep 120' \
    _ "$r" "$T/fr.ready" </dev/null >/dev/null 2>&1 &
  FR_WAIT=$!
  # unshare --fork ignores SIGTERM, and the namespace's init ignores what it
  # has no handler for: SIGKILL it is.
  defer kill -KILL "$FR_WAIT"
  for i in $(seq 100); do
    [ -s "$T/fr.ready" ] && break
    sleep 0.05
  done
  [ -s "$T/fr.ready" ] || fail "the fake runtime did not start"
  FR_PID=$(tr -d ' \n' < "/proc/$FR_WAIT/task/$FR_WAIT/children")
  [ -n "$FR_PID" ] || fail "the fake runtime has no child"
  defer kill -KILL "$FR_PID"
}

# hook_prestart ID BUNDLE PID [WRAPPER...]: runs the hook as a runtime would;
# stderr in $T/ID.err, status returned.
hook_prestart () {
  local id=$1 b=$2 pid=$3 rc=0
  shift 3
  # A runtime's state carries the spec's annotations: the spec says so too.
  if [ -f "$b/config.json" ] && ! grep -qF '"roce.io/hca"' "$b/config.json"; then
    jq -c '.annotations["roce.io/hca"] = "mlx5_0"' "$b/config.json" > "$b/config.json.new" &&
      mv "$b/config.json.new" "$b/config.json"
  fi
  printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%s,"bundle":"%s","annotations":{"roce.io/hca":"mlx5_0"}}' \
    "$id" "$pid" "$b" | "$@" "$HOOK" --config "$POLICY" prestart 2>"$T/$id.err" || rc=$?
  return $rc
}

# probe_running ID BUNDLE: starts the container (no hook, `sleep`), writes its
# OCI state to $T/ID.state and sets PID.
probe_running () {
  local id=$1 b=$2
  start_container "$id" "$b" || fail "start: $(cat "$T/$id.err")"
  runtime state "$id" > "$T/$id.state" || fail "runc state"
  PID=$(container_pid "$id")
  [ -n "$PID" ] || fail "no pid for $id"
}

# PROBE_CHECK: what a container sees of its RDMA access (run with runc exec).
PROBE_CHECK='ls /dev/infiniband 2>&1; dd if=/dev/infiniband/uverbs0 of=/dev/null count=1 2>&1 | head -1; grep -c infiniband /proc/self/mountinfo; grep "Max locked" /proc/1/limits | tr -s " " | sed "s/ *\$//"'
