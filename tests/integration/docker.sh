# SPDX-License-Identifier: Apache-2.0
# Docker, the runtime of the seed's own recipe, end to end: Debian's
# dockerd 20.10 (docker.io) started by this file with roce-runtime as the
# runtime `roce` of contrib/docker/daemon.json, an image imported from a
# busybox rootfs, Debian's docker client.  Docker 20.10 passes no
# annotation (no `docker run --annotation`, no label in the spec): the
# containers ask with ROCE_HCA / ROCE_IP in their environment.  Docker 24
# and later (the runtime matrix's Docker 28, docker-28.sh: ROCE_DOCKER_BIN,
# its dockerd starting the containerd of ROCE_CONTAINERD_BIN) ask with
# `docker run --annotation roce.io/hca=...`, the environment kept beside.
#
# One dockerd for the file (about a second to start), everything under one
# directory: data-root, exec-root, socket, pidfile, containerd namespaces
# of its own; no iptables, no default bridge, vfs storage.  Stopped by its
# pidfile when the file ends, passed or failed.  The host is the tests'
# fake one (two HCAs on veth ends, rdma_cm, /dev/infiniband on this file's
# tmpfs); dockerd's environment carries ROCE_HOOK_CONFIG to the runtime.
# DK_DEBUG=DIR keeps a copy of that directory (logs, policy, state).
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"

DOCKER_BIN=/usr/bin/docker # Debian's client (the first docker on PATH may not be)
DOCKERD_BIN=/usr/sbin/dockerd
IMAGE=roce-bb:local
DK_SKIP=""
[ "$OCI_RUNTIME" = runc ] || DK_SKIP="the Docker path runs once, with runc as the real runtime (OCI_RUNTIME=$OCI_RUNTIME)"
[ "$(id -u)" -eq 0 ] || DK_SKIP=${DK_SKIP:-needs root}
# Another Docker than Debian 12's (the matrix, tests/helpers/matrix.sh), and
# the containerd its dockerd starts (the first on PATH).
runtime_bin ROCE_CONTAINERD_BIN containerd containerd-shim-runc-v2
DK_SKIP=${DK_SKIP:-$RUNTIME_BIN_SKIP}
runtime_bin ROCE_DOCKER_BIN dockerd docker
DK_SKIP=${DK_SKIP:-$RUNTIME_BIN_SKIP}
if [ -n "${ROCE_DOCKER_BIN:-}" ]; then DOCKER_BIN=$ROCE_DOCKER_BIN/docker DOCKERD_BIN=$ROCE_DOCKER_BIN/dockerd; fi
[ -x "$DOCKERD_BIN" ] && [ -x "$DOCKER_BIN" ] || DK_SKIP=${DK_SKIP:-"needs Debian's docker.io ($DOCKERD_BIN, $DOCKER_BIN)"}
command -v jq >/dev/null || DK_SKIP=${DK_SKIP:-needs jq}
[ -x /bin/busybox ] || DK_SKIP=${DK_SKIP:-needs busybox-static}

# ---- the file's dockerd and host ---------------------------------------------

DK=""
dk_teardown () {
  local pid i
  [ -n "$DK" ] && [ -d "$DK" ] || return 0
  if [ -s "$DK/docker.pid" ]; then
    pid=$(cat "$DK/docker.pid")
    "$DOCKER_BIN" -H "unix://$DK/docker.sock" ps -aq 2>/dev/null |
      xargs -r "$DOCKER_BIN" -H "unix://$DK/docker.sock" rm -f >/dev/null 2>&1
    kill "$pid" 2>/dev/null
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  [ -n "${DK_DEBUG:-}" ] && cp -r "$DK" "$DK_DEBUG"
  T=$DK _run_deferred
  # dockerd unmounts what it mounted; anything left under the directory
  # (a failed stop) goes before the directory does.
  grep -o " $DK/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$DK"
}

# Starts dockerd once; on any failure DK_SKIP says exactly what failed.
dk_setup () {
  local T i cfg
  DK=$(mktemp -d /tmp/roce-docker.XXXXXX)
  T=$DK
  trap dk_teardown EXIT
  NIC0=$(fake_nic 9000)
  NIC1=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC0"
  fake_hca mlx5_1 1 "$NIC1"
  fake_rdma_cm
  # memlock below the hard limit (raising it needs CAP_SYS_RESOURCE, which a
  # test host may lack), and below what a container gets without us, to
  # tell the two apart.
  local hard
  hard=$(ulimit -H -l)
  [ "$hard" = unlimited ] && MEMLOCK=33554432 || MEMLOCK=$((hard * 1024 / 2))
  POLICY=$DK/policy.json
  POLICY_MEMLOCK=$MEMLOCK write_policy "$POLICY" warn "mlx5_0 $NIC0 10" "mlx5_1 $NIC1 11"
  # The real runtime: runc behind a recorder of the config.json it gets
  # (the byte-for-byte test compares it with what Docker wrote).
  mkdir -p "$DK/seen"
  cat > "$DK/runc-rec" <<EOF
#!/bin/sh
# roce-runtime's real runtime here: copies the bundle's config.json at create.
b=""; id=""; prev=""; cmd=""
for a in "\$@"; do
  case "\$prev" in --bundle|-b) b=\$a ;; esac
  case "\$a" in --bundle=*) b=\${a#--bundle=} ;; esac
  if [ -n "\$cmd" ] && [ -z "\$id" ]; then case "\$a" in -*) ;; *) case "\$prev" in --bundle|-b|--pid-file|--console-socket) ;; *) id=\$a ;; esac ;; esac; fi
  case "\$a" in create|run) [ -z "\$cmd" ] && cmd=\$a ;; esac
  prev=\$a
done
[ -n "\$cmd" ] && [ -n "\$b" ] && [ -n "\$id" ] && cp "\$b/config.json" "$DK/seen/\$id.after" 2>/dev/null
exec $(command -v runc) "\$@"
EOF
  # In front of roce-runtime, the runtime `roce-spy`: copies config.json as
  # Docker wrote it.
  sed -e "s|\.after|.before|" -e "s|^exec .*|exec $SHIM \"\$@\"|" "$DK/runc-rec" > "$DK/roce-spy"
  chmod +x "$DK/runc-rec" "$DK/roce-spy"
  sed -i "s|\"runtime\": \"[^\"]*\"|\"runtime\": \"$DK/runc-rec\"|" "$POLICY"
  # contrib/docker/daemon.json as written, its path the build's.
  cfg=$DK/daemon.json
  jq --arg p "$SHIM" '.runtimes.roce.path = $p' "$ROOT/contrib/docker/daemon.json" > "$cfg" ||
    { DK_SKIP="contrib/docker/daemon.json: not JSON jq can read"; return 1; }
  jq -e '.runtimes.roce.path' "$ROOT/contrib/docker/daemon.json" >/dev/null ||
    { DK_SKIP="contrib/docker/daemon.json has no runtimes.roce.path"; return 1; }
  # Docker 25 and later take CDI devices (`--device roce.io/hca=mlx5_0`):
  # the CDI feature on, the specs from a directory of the file's, where
  # roce-hook cdi writes this policy's.
  local cdi=()
  DK_DAEMON_MAJOR=$("$DOCKERD_BIN" --version | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')
  if [ "${DK_DAEMON_MAJOR:-0}" -ge 25 ]; then
    mkdir -p "$DK/cdi"
    "$HOOK" --config "$POLICY" cdi --output "$DK/cdi/roce.json" 2>"$DK/cdi.err" ||
      { DK_SKIP="roce-hook cdi: $(head -1 "$DK/cdi.err")"; return 1; }
    jq '.features.cdi = true' "$cfg" > "$cfg.new" && mv "$cfg.new" "$cfg"
    cdi=(--cdi-spec-dir "$DK/cdi")
  fi
  mkdir -p "$DK/data" "$DK/exec"
  ROCE_HOOK_CONFIG=$POLICY "$DOCKERD_BIN" --config-file "$cfg" "${cdi[@]}" \
    --data-root "$DK/data" --exec-root "$DK/exec" -H "unix://$DK/docker.sock" \
    --pidfile "$DK/docker.pid" --iptables=false --ip6tables=false --bridge=none \
    --storage-driver=vfs --containerd-namespace "roce-it-$(rand_hex 3)" \
    --containerd-plugins-namespace "roce-itp-$(rand_hex 3)" \
    --add-runtime "roce-spy=$DK/roce-spy" > "$DK/dockerd.log" 2>&1 &
  echo $! > "$DK/dockerd.child"
  for i in $(seq 150); do
    "$DOCKER_BIN" -H "unix://$DK/docker.sock" version >/dev/null 2>&1 && break
    kill -0 "$(cat "$DK/dockerd.child")" 2>/dev/null ||
      { DK_SKIP="dockerd exited at start: $(tail -1 "$DK/dockerd.log" | cut -c1-200)"; return 1; }
    sleep 0.1
  done
  "$DOCKER_BIN" -H "unix://$DK/docker.sock" version >/dev/null 2>&1 ||
    { DK_SKIP="dockerd did not answer in 15 s: $(tail -1 "$DK/dockerd.log" | cut -c1-200)"; return 1; }
  # The image: the tests' busybox rootfs, imported (no registry).
  make_rootfs "$DK/rootfs" >/dev/null
  tar -C "$DK/rootfs" -c . | "$DOCKER_BIN" -H "unix://$DK/docker.sock" import \
    -c 'ENV PATH=/bin' -c 'CMD ["sh"]' - "$IMAGE" >/dev/null 2>"$DK/import.err" ||
    { DK_SKIP="docker import: $(head -1 "$DK/import.err")"; return 1; }
  "$DOCKER_BIN" -H "unix://$DK/docker.sock" run --rm --network none "$IMAGE" true 2>"$DK/plain.err" ||
    { DK_SKIP="dockerd cannot run a plain container here: $(tail -1 "$DK/plain.err" | cut -c1-200)"; return 1; }
  DK_VERSION=$("$DOCKER_BIN" -H "unix://$DK/docker.sock" version --format '{{.Server.Version}}' 2>/dev/null)
  return 0
}

[ -z "$DK_SKIP" ] && dk_setup

dk () { "$DOCKER_BIN" -H "unix://$DK/docker.sock" "$@"; }
dk_needs () { [ -z "$DK_SKIP" ] || skip "$DK_SKIP"; }
# Docker 24 and later pass `docker run --annotation` into the spec.
DK_MAJOR=${DK_VERSION:-0}
DK_MAJOR=${DK_MAJOR%%.*}
has_annotations () { [ "$DK_MAJOR" -ge 24 ]; }
# ask HCA [IP]: the run flags that ask for RoCE, as a user of this Docker
# does: annotations from Docker 24, the environment before it.  ASKED_BY
# is what a refusal names.
if has_annotations; then ASKED_BY=annotation; else ASKED_BY=env; fi
ask () {
  if [ "$ASKED_BY" = annotation ]; then
    echo "--annotation roce.io/hca=$1${2:+ --annotation roce.io/ip=$2}"
  else
    echo "-e ROCE_HCA=$1${2:+ -e ROCE_IP=$2}"
  fi
}
leases () { "$HOOK" --config "$POLICY" leases; }
# Every test leaves no lease and no container behind.
dk_clean_end () {
  defer 'dk ps -aq | xargs -r '"$DOCKER_BIN"' -H unix://'"$DK"'/docker.sock rm -f'
}
# A container's roce0 address (a.b.c.d/len), from inside it.
roce0_of () { dk exec "$1" ip -4 -o addr show dev roce0 | awk '{print $4}'; }
# Polls until `roce-hook leases` has (or, with !, has not) $1.
lease_wait () {
  local want=1 i
  [ "$1" = "!" ] && { want=0; shift; }
  for i in $(seq "${2:-100}"); do
    if leases | grep -qF -- "$1"; then [ $want = 1 ] && return 0; else [ $want = 0 ] && return 0; fi
    sleep 0.1
  done
  return 1
}
# Known limit (the release's liveness rule, not the shim's): dockerd
# removes its sandbox's pin of the container's namespace
# ($exec_root/netns/<id>) only after the runtime's delete, which runs the
# poststop; a release that still sees the pin (a loaded host, a Docker
# network, the last exit of a --restart container) leaves the lease to gc
# (or to the next start, which takes a dead holder's address back), and gc
# releases it once dockerd has let the namespace go.  Waits for the
# release, 2 s alone, then with gc beside it (10 s); says which it was.
released_or_gc () {
  local i
  lease_wait ! "$1" 20 && return 0
  echo "    note: $1 left to gc (dockerd still pinned the namespace at poststop)"
  for i in $(seq 50); do
    "$HOOK" --config "$POLICY" gc >/dev/null 2>&1 || true
    lease_wait ! "$1" 2 && return 0
  done
  return 1
}
# No lease of the test's HCAs is left (released, or by gc as above).
no_leases () {
  released_or_gc "198.18.1" || fail "leases left behind: $(leases)"
}

# ---- the tests -----------------------------------------------------------------

# `docker run --runtime roce` with ASK...: roce0 with its address, only
# mlx5_0's uverbs node and rdma_cm, CAP_IPC_LOCK, the policy's memlock, the
# NCCL variables; released when the container ends.
run_gives_everything () {
  local out cap
  out=$(dk run --rm --runtime roce --network none "$@" "$IMAGE" sh -c '
    ip -4 -o addr show dev roce0 | awk "{print \"addr\", \$4}"
    echo "links $(ls /sys/class/net | sort | tr "\n" " ")"
    echo "ib $(ls /dev/infiniband | sort | tr "\n" " ")"
    grep CapEff /proc/self/status
    echo "memlock $(ulimit -l)"
    env | grep ^NCCL_ | sort') || fail "docker run: $out"
  echo "$out"
  assert_contains "$out" "addr 198.18.10." "roce0's address"
  assert_contains "$(echo "$out" | grep '^addr')" "/24" "roce0's prefix"
  assert_eq "links lo roce0 " "$(echo "$out" | grep '^links')" "interfaces"
  assert_eq "ib rdma_cm uverbs0 " "$(echo "$out" | grep '^ib')" "/dev/infiniband"
  cap=$(echo "$out" | awk '/^CapEff/ {print $2}')
  [ $(( 0x$cap >> 14 & 1 )) = 1 ] || fail "CAP_IPC_LOCK not effective: $cap"
  assert_eq "memlock $((MEMLOCK / 1024))" "$(echo "$out" | grep '^memlock')" "ulimit -l"
  assert_contains "$out" "NCCL_IB_HCA=mlx5_0"
  assert_contains "$out" "NCCL_IB_TC=106"
  assert_contains "$out" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  no_leases
}

# Docker before 24: `-e ROCE_HCA=mlx5_0` (kept on later Dockers).
test_env_activation_gives_everything () {
  dk_needs
  run_gives_everything -e ROCE_HCA=mlx5_0
}

# Docker 24 and later: `--annotation roce.io/hca=mlx5_0`, no environment.
test_annotation_activation_gives_everything () {
  dk_needs
  has_annotations || skip "Docker $DK_VERSION has no docker run --annotation (Docker 24 and later; the environment's test covers it)"
  run_gives_everything --annotation roce.io/hca=mlx5_0
  # The spec runc got carries the annotation, and no ROCE_HCA stood for it.
  local id
  dk_clean_end
  id=$(dk create --runtime roce-spy --network none --annotation roce.io/hca=mlx5_0 "$IMAGE" true) || fail "docker create"
  dk start -a "$id" >/dev/null || fail "docker start"
  assert_eq '"mlx5_0"' "$(jq -c '.annotations."roce.io/hca"' "$DK/seen/$id.before")" "the annotation as Docker wrote it"
  assert_eq 0 "$(jq '[.process.env[] | select(startswith("ROCE_"))] | length' "$DK/seen/$id.after")" "ROCE_ variables"
  no_leases
}

# Docker 24 and later: the environment beside an annotation must say the
# same thing (one line, values not shown); saying the same starts.
test_env_beside_a_disagreeing_annotation_is_refused () {
  dk_needs
  has_annotations || skip "Docker $DK_VERSION has no docker run --annotation (Docker 24 and later)"
  local rc=0
  dk run --rm --runtime roce --network none --annotation roce.io/hca=mlx5_0 -e ROCE_HCA=mlx5_1 "$IMAGE" true \
    2>"$T/err" || rc=$?
  [ "$rc" != 0 ] || fail "ROCE_HCA=mlx5_1 beside roce.io/hca=mlx5_0 was not refused"
  assert_file_contains "$T/err" "environment variable ROCE_HCA beside annotation roce.io/hca: the same value, or only one of the two vs two different values (fix: drop the environment variables or make them equal to the annotations)"
  assert_not_contains "$(cat "$T/err")" "mlx5_1" "the refusal (a tenant's value)"
  dk run --rm --runtime roce --network none --annotation roce.io/hca=mlx5_0 -e ROCE_HCA=mlx5_0 "$IMAGE" \
    ip -4 -o addr show dev roce0 >"$T/out" 2>&1 || fail "the same value in both was refused: $(cat "$T/out")"
  assert_file_contains "$T/out" "198.18.10."
  no_leases
}

# Docker 25 and later with the CDI feature: `--device roce.io/hca=mlx5_0`
# through Docker's own runtime (runc), no --runtime roce: the spec's hooks
# give the container what an annotated one gets (roce0 and its address,
# only its uverbs node and rdma_cm, the policy's memlock, the NCCL
# variables), and release it.  CDI adds no capability: CAP_IPC_LOCK is the
# user's to ask for here (or roce-runtime's).
test_cdi_device_activates_the_whole_container () {
  dk_needs
  [ "${DK_DAEMON_MAJOR:-0}" -ge 25 ] || skip "Docker $DK_VERSION has no CDI devices (Docker 25 and later)"
  local out
  out=$(dk run --rm --network none --device roce.io/hca=mlx5_0 "$IMAGE" sh -c '
    ip -4 -o addr show dev roce0 | awk "{print \"addr\", \$4}"
    echo "links $(ls /sys/class/net | sort | tr "\n" " ")"
    echo "ib $(ls /dev/infiniband | sort | tr "\n" " ")"
    echo "memlock $(ulimit -l)"
    env | grep -E "^(NCCL_|ROCE_)" | sort') || fail "docker run --device roce.io/hca=mlx5_0: $out"
  echo "$out"
  assert_contains "$out" "addr 198.18.10." "roce0's address"
  assert_eq "links lo roce0 " "$(echo "$out" | grep '^links')" "interfaces"
  assert_eq "ib rdma_cm uverbs0 " "$(echo "$out" | grep '^ib')" "/dev/infiniband"
  assert_eq "memlock $((MEMLOCK / 1024))" "$(echo "$out" | grep '^memlock')" "ulimit -l"
  assert_contains "$out" "NCCL_IB_HCA=mlx5_0"
  assert_contains "$out" "NCCL_IB_TC=106"
  assert_contains "$out" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  assert_contains "$out" "ROCE_CDI_HCA_0=mlx5_0"
  grep -q "createRuntime: pid" "$DK/hook.log" || fail "the CDI spec's hook did not run: $(tail -5 "$DK/hook.log")"
  no_leases
  # An annotation that disagrees: refused in one line on docker run's stderr.
  local rc=0
  dk run --rm --network none --device roce.io/hca=mlx5_0 --annotation roce.io/hca=mlx5_1 "$IMAGE" true \
    2>"$T/err" || rc=$?
  [ "$rc" != 0 ] || fail "a CDI request beside a disagreeing annotation started"
  assert_file_contains "$T/err" "roce-hook: "
  assert_file_contains "$T/err" "annotation roce.io/hca beside the CDI devices roce.io/hca: the same HCAs, or only one of the two vs other HCAs"
  no_leases
}

# The same container without ROCE_HCA through the same runtime gets none of
# it (the control).
test_without_env_nothing_is_added () {
  dk_needs
  local out
  out=$(dk run --rm --runtime roce --network none "$IMAGE" sh -c '
    echo "links $(ls /sys/class/net | sort | tr "\n" " ")"; ls /dev/infiniband 2>&1 | head -1
    env | grep -c ^NCCL_ || true') || fail "docker run: $out"
  assert_contains "$out" "links lo "
  assert_not_contains "$out" "roce0"
  assert_not_contains "$out" "uverbs"
  assert_eq 0 "$(echo "$out" | tail -1)" "NCCL variables"
}

# The config.json of a container that did not ask reaches runc byte for
# byte as Docker wrote it (the runtime roce-spy copies it before
# roce-runtime, runc's recorder after); one that asks reaches it edited.
test_unannotated_config_untouched_byte_for_byte () {
  dk_needs
  local id
  dk_clean_end
  id=$(dk create --runtime roce-spy --network none -e FOO=bar "$IMAGE" true) || fail "docker create"
  dk start -a "$id" >/dev/null || fail "docker start"
  [ -s "$DK/seen/$id.before" ] || fail "roce-spy saw no config.json"
  [ -s "$DK/seen/$id.after" ] || fail "runc saw no config.json"
  cmp "$DK/seen/$id.before" "$DK/seen/$id.after" || fail "config.json changed on its way to runc"
  id=$(dk create --runtime roce-spy --network none $(ask mlx5_0) "$IMAGE" true) || fail "docker create"
  dk start -a "$id" >/dev/null || fail "docker start (asking)"
  ! cmp -s "$DK/seen/$id.before" "$DK/seen/$id.after" || fail "the control: an asking container's config.json was not edited"
  assert_eq '"mlx5_0"' "$(jq -c '.annotations."roce.io/hca"' "$DK/seen/$id.after")" "the annotation (or the one ROCE_HCA stands for)"
  no_leases
}

# The seed's own flags beside ours: it works, and the spec runc gets has
# nothing twice (devices, capabilities, rlimits, /dev/shm, NCCL variables).
test_seeds_flags_beside_ours_nothing_twice () {
  dk_needs
  local id out f hardb
  dk_clean_end
  # memlock=-1:-1 as the seed has it: roce-runtime sets the policy's value
  # over it (unlimited needs CAP_SYS_RESOURCE, which a test host may lack).
  id=$(dk create --runtime roce-spy --network none $(ask mlx5_0) \
    --cap-add IPC_LOCK --ulimit memlock=-1:-1 --ulimit stack=67108864 \
    --device /dev/infiniband/uverbs0 --device /dev/infiniband/rdma_cm -v /dev/shm:/dev/shm \
    -e NCCL_IB_HCA=mlx5_0 -e NCCL_IB_TC=106 "$IMAGE" sh -c '
      ls /dev/infiniband | tr "\n" " "; echo
      echo "memlock $(ulimit -l) stack $(ulimit -s)"
      env | grep ^NCCL_ | sort | tr "\n" " "; echo
      ip -4 -o addr show dev roce0 | awk "{print \$4}"') || fail "docker create"
  out=$(dk start -a "$id") || fail "docker start: $out $(tail -3 "$DK/dockerd.log")"
  echo "$out"
  assert_contains "$out" "rdma_cm uverbs0 " "/dev/infiniband"
  assert_not_contains "$out" "uverbs1"
  assert_contains "$out" "memlock $((MEMLOCK / 1024)) stack 65536"
  assert_contains "$out" "NCCL_IB_HCA=mlx5_0 "
  assert_contains "$out" "NCCL_IB_TC=106 "
  assert_contains "$out" "198.18.10."
  f=$DK/seen/$id.after
  [ -s "$f" ] || fail "runc saw no config.json"
  for q in '[.linux.devices[]?.path] | group_by(.) | map(select(length > 1))' \
           '[.process.rlimits[].type] | group_by(.) | map(select(length > 1))' \
           '[.process.capabilities.effective[]] | group_by(.) | map(select(length > 1))' \
           '[.process.capabilities.bounding[]] | group_by(.) | map(select(length > 1))' \
           '[.mounts[].destination] | group_by(.) | map(select(length > 1))' \
           '[.process.env[] | split("=")[0]] | group_by(.) | map(select(length > 1))' \
           '[.linux.resources.devices[] | select(.allow) | "\(.type) \(.major):\(.minor)"] | group_by(.) | map(select(length > 1))'; do
    # None but Docker's own (Docker 28 lists its default device rules twice).
    assert_eq "$(jq -c "$q" "$DK/seen/$id.before")" "$(jq -c "$q" "$f")" "duplicates ($q)"
  done
  assert_eq 1 "$(jq '[.linux.devices[] | select(.path == "/dev/infiniband/uverbs0")] | length' "$f")" "uverbs0 entries"
  assert_eq 1 "$(jq '[.process.capabilities.effective[] | select(. == "CAP_IPC_LOCK")] | length' "$f")" "CAP_IPC_LOCK"
  hardb=$(jq '.process.rlimits[] | select(.type == "RLIMIT_MEMLOCK") | .hard' "$f")
  assert_eq "$MEMLOCK" "$hardb" "RLIMIT_MEMLOCK in the spec"
  no_leases
}

# Docker's own network stays: a user-defined bridge (its own subnet in
# 198.18.0.0/15) gives eth0 and the default route, roce0 comes beside it.
test_docker_network_kept_roce0_beside () {
  dk_needs
  local net out br
  net=roce-it-$(rand_hex 3) br=rb$(rand_hex 3)
  dk network create --driver bridge --subnet 198.18.201.0/24 --gateway 198.18.201.1 \
    -o "com.docker.network.bridge.name=$br" "$net" >/dev/null || fail "docker network create"
  defer "$DOCKER_BIN -H unix://$DK/docker.sock network rm $net"
  out=$(dk run --rm --runtime roce --network "$net" $(ask mlx5_0) "$IMAGE" sh -c '
    ip -4 -o addr show | awk "{print \$2, \$4}"; ip route | grep ^default') || fail "docker run: $out"
  echo "$out"
  assert_contains "$out" "eth0 198.18.201." "Docker's address"
  assert_contains "$out" "roce0 198.18.10." "roce0"
  assert_contains "$out" "default via 198.18.201.1 dev eth0" "the default route"
  no_leases
}

# `--network container:A`: the spec names A's namespace by path, so the
# network is the hook's (createRuntime), not the shim's; the hook reads the
# annotations roce-runtime wrote from ROCE_HCA, and makes roce0 in A's
# namespace, where both see it.
test_joined_namespace_goes_through_the_hook () {
  dk_needs
  local a b out
  dk_clean_end
  a=$(dk run -d --network none "$IMAGE" sleep 60) || fail "run a"
  out=$(dk run --rm --runtime roce --network "container:$a" $(ask mlx5_0) "$IMAGE" sh -c '
    ip -4 -o addr show dev roce0 | awk "{print \$4}"; ls /dev/infiniband | tr "\n" " "') ||
    fail "docker run --network container: $out $(tail -3 "$DK/dockerd.log")"
  echo "$out"
  assert_contains "$out" "198.18.10." "roce0 in the joined namespace"
  assert_contains "$out" "rdma_cm uverbs0 " "/dev/infiniband"
  grep -q "createRuntime" "$DK/hook.log" || fail "the hook did not make the network: $(tail -5 "$DK/hook.log")"
  assert_contains "$(dk exec "$a" ip -4 -o addr show dev roce0)" "198.18.10." "roce0 seen from a"
  dk rm -f "$a" >/dev/null
  no_leases
}

# Two containers reach each other over roce0 (macvlans on one parent).
test_two_containers_ping_over_roce0 () {
  dk_needs
  local a b ipa out
  dk_clean_end
  a=$(dk run -d --runtime roce --network none $(ask mlx5_0) "$IMAGE" sleep 60) || fail "run a"
  b=$(dk run -d --runtime roce --network none $(ask mlx5_0) "$IMAGE" sleep 60) || fail "run b"
  ipa=$(roce0_of "$a")
  [ -n "$ipa" ] || fail "a has no roce0"
  [ "$ipa" != "$(roce0_of "$b")" ] || fail "a and b share $ipa"
  out=$(dk exec "$b" ping -c 2 -W 2 "${ipa%/*}" 2>&1) || fail "b cannot ping a (${ipa%/*}): $out"
  assert_contains "$out" "2 packets received"
  dk rm -f "$a" "$b" >/dev/null
  no_leases
}

# docker stop / start / restart / rm -f: released at each stop, the same
# static address taken again at each start.
test_stop_start_restart_rm_release_and_retake () {
  dk_needs
  local c ip=198.18.10.150
  dk_clean_end
  c=$(dk run -d --runtime roce --network none $(ask mlx5_0 $ip) "$IMAGE" sleep 600) || fail "run"
  assert_eq "$ip/24" "$(roce0_of "$c")" "roce0 at run"
  lease_wait "$ip" || fail "no lease of $ip: $(leases)"
  # `docker exec` (runc exec --process F, built from the spec Docker kept):
  # the same memlock and NCCL variables as the container's first process.
  assert_eq "$((MEMLOCK / 1024)) NCCL_IB_HCA=mlx5_0" \
    "$(dk exec "$c" sh -c 'echo "$(ulimit -l) $(env | grep ^NCCL_IB_HCA=)"')" "docker exec's process"
  dk stop -t 1 "$c" >/dev/null || fail "docker stop"
  released_or_gc "$ip" || fail "$ip still held after docker stop: $(leases)"
  dk start "$c" >/dev/null || fail "docker start: $(tail -2 "$DK/dockerd.log")"
  assert_eq "$ip/24" "$(roce0_of "$c")" "roce0 after docker start"
  dk restart -t 1 "$c" >/dev/null || fail "docker restart: $(tail -2 "$DK/dockerd.log")"
  assert_eq "$ip/24" "$(roce0_of "$c")" "roce0 after docker restart"
  lease_wait "$ip" || fail "no lease of $ip after restart: $(leases)"
  dk rm -f "$c" >/dev/null || fail "docker rm -f"
  released_or_gc "$ip" || fail "$ip still held after docker rm -f: $(leases)"
  no_leases
}

# --restart policies: dockerd starts the container again by itself; each
# start has roce0 at the static address, and the lease goes with the last.
test_restart_policies_release_and_retake () {
  dk_needs
  local c ip=198.18.10.152 n i
  dk_clean_end
  mkdir -p "$T/out"
  c=$(dk run -d --runtime roce --network none --restart on-failure:2 -v "$T/out:/out" \
    $(ask mlx5_0 $ip) "$IMAGE" \
    sh -c 'ip -4 -o addr show dev roce0 | awk "{print \$4}" >> /out/log; exit 3') || fail "run"
  restarted_twice () { [ "$(dk inspect -f '{{.State.Status}} {{.RestartCount}}' "$c")" = "exited 2" ]; }
  wait_for 60 "three runs under --restart on-failure:2" restarted_twice
  assert_eq "exited 2" "$(dk inspect -f '{{.State.Status}} {{.RestartCount}}' "$c")" "after on-failure:2"
  n=$(grep -c "^$ip/24$" "$T/out/log" || true)
  assert_eq 3 "$n" "starts with roce0 at $ip ($(cat "$T/out/log"))"
  released_or_gc "$ip" || fail "$ip held after the last exit: $(leases)"
  dk rm -f "$c" >/dev/null
  : > "$T/out/log"
  c=$(dk run -d --runtime roce --network none --restart always -v "$T/out:/out" \
    $(ask mlx5_0 $ip) "$IMAGE" \
    sh -c 'ip -4 -o addr show dev roce0 | awk "{print \$4}" >> /out/log; sleep 0.2') || fail "run always"
  three_starts () { [ "$(grep -c "^$ip/24$" "$T/out/log" || true)" -ge 3 ]; }
  wait_for 60 "three starts under --restart always" three_starts
  dk rm -f "$c" >/dev/null
  released_or_gc "$ip" || fail "$ip held after docker rm -f: $(leases)"
  no_leases
}

# The seed's launcher: `docker run --rm` of a worker with a fixed address,
# again at once, 20 times (6 in make check): 20 starts.
test_rm_fixed_ip_20_back_to_back () {
  dk_needs
  local i ok=0 ip=198.18.10.151 errs="" n
  n=$(rounds 20 6)
  for i in $(seq "$n"); do
    if dk run --rm --runtime roce --network none $(ask mlx5_0 $ip) "$IMAGE" \
        sh -c "ip -4 -o addr show dev roce0 | grep -q ' $ip/24 '" 2>"$T/err"; then
      ok=$((ok + 1))
    else
      errs="$errs | $(tail -1 "$T/err")"
    fi
  done
  assert_eq "$n" "$ok" "starts of $n (refusals:$errs)"
  no_leases
}

# A refusal: docker run's stderr carries our one line, dockerd's log too;
# the tenant's control bytes arrive escaped; nothing is left behind.
test_refusal_reaches_docker_run_and_dockerd_log () {
  dk_needs
  local rc=0 line hf hk ik wh wi
  # As this Docker's users ask: annotations (24 and later), else the environment.
  if [ "$ASKED_BY" = annotation ]; then
    hf=--annotation hk=roce.io/hca ik=roce.io/ip wh="annotation roce.io/hca" wi="annotation roce.io/ip"
  else
    hf=-e hk=ROCE_HCA ik=ROCE_IP wh="environment variable ROCE_HCA" wi="environment variable ROCE_IP"
  fi
  dk run --rm --runtime roce --network none "$hf" "$hk=mlx5_9" "$IMAGE" true 2>"$T/err" || rc=$?
  [ "$rc" != 0 ] || fail "an unknown HCA was not refused"
  cat "$T/err"
  line="$wh: an HCA the node policy lists (mlx5_0, mlx5_1) vs 'mlx5_9' (fix: use one of mlx5_0, mlx5_1, or ask the node admin to add it to $POLICY)"
  # The shim's one line, "roce-runtime: <container id>: <what>: ...",
  # inside Docker's "OCI runtime create failed: ...: unknown." wrapping.
  grep -qE "OCI runtime create failed: roce-runtime: [0-9a-f]{64}: $wh: " "$T/err" ||
    fail "docker run's stderr lacks our line: $(cat "$T/err")"
  assert_file_contains "$T/err" "$line"
  grep -qF -- "$line" "$DK/dockerd.log" || fail "dockerd's log lacks the refusal"
  rc=0
  dk run --rm --runtime roce --network none "$hf" "$hk=mlx5_0$(printf '\033')[2J" "$IMAGE" true 2>"$T/err2" || rc=$?
  [ "$rc" != 0 ] || fail "a control byte in $hk was not refused"
  # Escaped once, by the parser (\x1b); the line shows it as it is.
  assert_file_contains "$T/err2" "$wh: printable text vs 'mlx5_0\\x1b[2J'"
  ! grep -q "$(printf '\033')" "$T/err2" "$DK/dockerd.log" || fail "a raw escape byte reached stderr or dockerd's log"
  rc=0
  dk run --rm --runtime roce --network none "$hf" "$hk=mlx5_0" "$hf" "$ik=198.18.99.5" "$IMAGE" true 2>"$T/err3" || rc=$?
  [ "$rc" != 0 ] || fail "an address outside the pool was not refused"
  assert_file_contains "$T/err3" "$wi: an address in mlx5_0's pool 198.18.10.100-198.18.10.199 vs '198.18.99.5'"
  [ "$(dk ps -aq | wc -l)" = 0 ] || fail "a refused container is left: $(dk ps -a)"
  no_leases
  [ -z "$(ip -o link show | grep -E 'roce[0-9]')" ] || fail "an interface left on the host"
}

# A matrix file (tests/integration/docker-28.sh) runs the tests under its
# own name.
[ -n "${ROCE_MATRIX:-}" ] && return 0
run_tests
