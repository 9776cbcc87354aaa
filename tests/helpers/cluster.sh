# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers of the cluster tests and benchmark (sourced after lib.sh and
# net.sh): a multi-member etcd on 127.0.0.1 ports, simulated nodes (a node
# name and a state_dir each, the same rail subnet), and direct hook starts
# against processes in namespaces of their own.

SUBNET=198.18.20.0/23
POOL=198.18.20.2-198.18.21.254
export ETCDCTL_API=3

# etcd and etcdctl: Debian 12's, or another version's (the runtime matrix,
# tests/helpers/matrix.sh: ROCE_ETCD_BIN); the version etcd answers with.
# shellcheck source=matrix.sh
source "$(dirname "${BASH_SOURCE[0]}")/matrix.sh"
runtime_bin ROCE_ETCD_BIN etcd etcdctl
ETCD_SKIP=$RUNTIME_BIN_SKIP
ETCD_VERSION=$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')

# cluster_suite NAME: whether a cluster suite runs in this pass.  It runs
# once, under runc (it is about etcd, not the runtime); under another
# runtime it prints its skip line and fails, and the suite returns.
cluster_suite () {
  [ "$OCI_RUNTIME" = runc ] && return 0
  echo "skip    $OCI_RUNTIME:$1 (runs once, under runc: it is about etcd, not the runtime)"
  echo "0 0 1" >> "$RESULTS"
  return 1
}

# ---- etcd ---------------------------------------------------------------------

# port_block: the first of 8 loopback TCP ports nothing listens on, below the
# kernel's ephemeral range (ip_local_port_range: a port there may be any
# connection's local end at the moment a member binds it).
port_block () {
  local lo base k used
  read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range || lo=32768
  # A range that starts low leaves no room below it: 20000-32767 then,
  # each block checked against what is open.
  [ "$lo" -gt 21000 ] 2>/dev/null || lo=32768
  # Files that run side by side (tests/run-integration) take their ports
  # from ranges of their own, one an eighth of the whole, by job slot.
  local first=20000 span=$((lo - 20000))
  if [ -n "${ROCE_JOB_SLOT:-}" ]; then
    span=$((span / 8))
    first=$((20000 + (ROCE_JOB_SLOT % 8) * span))
  fi
  used=$(ss -Htan 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
  for ((k = 0; k < 50; k++)); do
    base=$((first + (SRANDOM % ((span - 8) / 8)) * 8))
    grep -qxE "$base|$((base + 1))|$((base + 2))|$((base + 3))|$((base + 4))|$((base + 5))|$((base + 6))|$((base + 7))" \
      <<<"$used" || { echo "$base"; return 0; }
  done
  fail "no free block of 8 ports below $lo"
}

# etcd_cluster N: N members on 127.0.0.1; client URLs in $ETCD_URLS (array),
# pids in $ETCD_PIDS, names etcd0.., data under $T/etcd<i>.
etcd_cluster () {
  local n=${1:-3} i base cluster=""
  [ -z "$ETCD_SKIP" ] || skip "$ETCD_SKIP"
  need_cmd etcd
  need_cmd etcdctl
  base=$(port_block) && [ -n "$base" ] || fail "no free block of 8 ports for etcd"
  ETCD_URLS=() ETCD_PIDS=() ETCD_PEERS=()
  for ((i = 0; i < n; i++)); do
    ETCD_URLS+=("http://127.0.0.1:$((base + 2 * i))")
    ETCD_PEERS+=("http://127.0.0.1:$((base + 2 * i + 1))")
    cluster+="${cluster:+,}etcd$i=${ETCD_PEERS[$i]}"
  done
  ETCD_INITIAL=$cluster
  ETCD_TOKEN=rt-$(rand_hex 4)
  for ((i = 0; i < n; i++)); do
    etcd_start "$i"
  done
  etcd_wait_healthy "${ETCD_URLS[@]}"
}

# etcd_start I: (re)starts member I with its data dir.
etcd_start () {
  local i=$1
  etcd --name "etcd$i" --data-dir "$T/etcd$i" --log-level error --logger zap \
    --heartbeat-interval 50 --election-timeout 500 \
    --listen-client-urls "${ETCD_URLS[$i]}" --advertise-client-urls "${ETCD_URLS[$i]}" \
    --listen-peer-urls "${ETCD_PEERS[$i]}" --initial-advertise-peer-urls "${ETCD_PEERS[$i]}" \
    --initial-cluster "$ETCD_INITIAL" --initial-cluster-state new \
    --initial-cluster-token "$ETCD_TOKEN" >>"$T/etcd$i.log" 2>&1 &
  ETCD_PIDS[$i]=$!
  defer "kill ${ETCD_PIDS[$i]} 2>/dev/null; wait ${ETCD_PIDS[$i]} 2>/dev/null; true"
}

etcd_stop () { # I
  kill "${ETCD_PIDS[$1]}" || fail "etcd$1 was not running"
  wait "${ETCD_PIDS[$1]}" 2>/dev/null || true
}

etcd_wait_healthy () { # URL...
  local i k eps
  eps=$(IFS=,; echo "$*")
  for ((i = 0; i < 150; i++)); do
    etcdctl --endpoints "$eps" --dial-timeout 1s --command-timeout 2s endpoint health >/dev/null 2>&1 && return 0
    # A member waited for that exited (its port taken, a bad flag) never
    # gets healthy.
    for k in "${!ETCD_PIDS[@]}"; do
      case ",$eps," in *",${ETCD_URLS[$k]},"*) ;; *) continue ;; esac
      kill -0 "${ETCD_PIDS[$k]}" 2>/dev/null ||
        fail "etcd$k exited: $(tail -n 5 "$T/etcd$k.log" 2>/dev/null)"
    done
    sleep 0.1
  done
  fail "etcd not healthy at $eps: $(tail -q -n 5 "$T"/etcd*.log 2>/dev/null)"
}

# The index of the leader, through the API (POST /v3/maintenance/status).
etcd_leader () {
  local i st leader=""
  for i in "${!ETCD_URLS[@]}"; do
    st=$(curl -s -m 2 -X POST -d '{}' "${ETCD_URLS[$i]}/v3/maintenance/status") || continue
    leader=$(jq -r '.leader' <<<"$st")
    break
  done
  [ -n "$leader" ] || fail "no member answered the status call"
  for i in "${!ETCD_URLS[@]}"; do
    st=$(curl -s -m 2 -X POST -d '{}' "${ETCD_URLS[$i]}/v3/maintenance/status") || continue
    [ "$(jq -r '.header.member_id' <<<"$st")" = "$leader" ] && { echo "$i"; return 0; }
  done
  fail "leader $leader not found"
}

# Every block key in etcd: "<first address> <node>" lines, sorted.
etcd_blocks () {
  local eps
  eps=$(IFS=,; echo "${ETCD_URLS[*]}")
  etcdctl --endpoints "$eps" get --prefix /roce-hook/blocks/ |
    paste - - | sed -n 's|^/roce-hook/blocks/[^/]*/\([0-9.]*\)\t{"node":"\([^"]*\)".*|\1 \2|p' | sort -V
}

# The first address of the block of 16 of ADDR (the tests' cluster.block).
block_of () { # ADDR
  local o1 o2 o3 o4
  IFS=. read -r o1 o2 o3 o4 <<<"${1%/*}"
  echo "$o1.$o2.$o3.$((o4 / 16 * 16))"
}

# The address N after ADDR (within its /24).
addr_plus () { # ADDR N
  local o1 o2 o3 o4
  IFS=. read -r o1 o2 o3 o4 <<<"${1%/*}"
  echo "$o1.$o2.$o3.$((o4 + $2))"
}

# Whether ADDR lies in a block etcd gives NODE.
in_block_of () { # ADDR NODE
  etcd_blocks | grep -qx "$(block_of "$1") $2"
}

# A block of the pool nobody holds (the last such), its first address.
free_block () {
  local held f
  held=$(etcd_blocks | awk '{print $1}')
  for f in 198.18.21.{224,208,192,176,160,144,128,112,96,80,64,48,32,16}; do
    grep -qx "$f" <<<"$held" || { echo "$f"; return 0; }
  done
  fail "no free block"
}

etcdctl_all () {
  local eps
  eps=$(IFS=,; echo "${ETCD_URLS[*]}")
  etcdctl --endpoints "$eps" "$@"
}

# proxied_policy NAME [JQ]: node_policy of a node whose one etcd endpoint is
# the fault proxy (proxy_start first): p=$(proxied_policy NAME ...).
proxied_policy () {
  local ETCD_URLS=("$PROXY_URL")
  node_policy "$@"
}

# proxy_start UPSTREAM_URL: tests/helpers/fault-proxy.py in front of one
# member; its URL in $PROXY_URL, its rules in $PROXY_RULES (written by the
# test), what it did in $PROXY_LOG.
proxy_start () {
  local up=${1##*:} p
  need_cmd python3
  p=$(port_block) && [ -n "$p" ] || fail "no free block of ports for the proxy"
  PROXY_RULES=$T/proxy.rules PROXY_LOG=$T/proxy.log
  : > "$PROXY_RULES"
  python3 "$(dirname "${BASH_SOURCE[0]}")/fault-proxy.py" "$p" "$up" "$PROXY_RULES" "$PROXY_LOG" &
  local pid=$!
  defer "kill $pid 2>/dev/null; wait $pid 2>/dev/null; true"
  # A python start-up takes seconds on a busy host: until it says it
  # listens, a start through it would find nothing there (5 s of tries,
  # and on without it, was the python-listener flake again).
  wait_for 30 "the fault proxy on port $p (its log: $PROXY_LOG)" grep -q listening "$PROXY_LOG"
  PROXY_URL=http://127.0.0.1:$p
}

# The base64 of a key's start, as it opens the key's field in a body.
b64_prefix () { # TEXT (a length divisible by 3)
  printf '%s' "$1" | base64 -w0
}

# ---- nodes ----------------------------------------------------------------------

# cluster_host: one fake NIC and HCA mlx5_0 on it (as net_host), the rail
# subnet $SUBNET with pool $POOL.
cluster_host () {
  need_root
  need_cmd jq
  need_cmd curl
  need_cmd "$OCI_RUNTIME"
  net_host 1
  NODE_BASE=$T/policy.json
  jq --arg s "$SUBNET" --arg p "$POOL" \
    '.hcas.mlx5_0.subnet = $s | .hcas.mlx5_0.pool = $p | .hcas.mlx5_0.gateway = "198.18.20.1"
     | .hcas.mlx5_0.routes = []' \
    "$NODE_BASE" > "$T/p.tmp" && mv "$T/p.tmp" "$NODE_BASE"
}

# node_policy NODE [JQ]: $T/NODE.json, the same policy with a state_dir of
# its own and `cluster` naming NODE and the etcd members; JQ edits it more.
node_policy () {
  local node=$1 extra=${2:-.} eps
  eps=$(printf '%s\n' "${ETCD_URLS[@]}" | jq -R . | jq -s .)
  jq --arg n "$node" --arg st "$T/state-$node" --argjson eps "$eps" \
    ".state_dir = \$st | .cluster = {node: \$n, etcd: {endpoints: \$eps, timeout_ms: 3000},
      block: 16, reserve: 0, release_after_s: 0} | $extra" "$NODE_BASE" > "$T/$node.json" ||
    fail "policy of $node"
  echo "$T/$node.json"
}

# A process in network and mount namespaces of its own, as a container's
# init before its prestart hook, with a /dev tmpfs of its own on the
# bundle's rootfs (as runtimes give each container): prints its pid.  It
# dies with the test.
ns_process () { # [BUNDLE]
  local dev=${1:-$T/db}/rootfs/dev
  unshare -n -m --propagation private sh -c 'mount -t tmpfs -o mode=0755 roce-dev "$1" && exec sleep 600' _ "$dev" \
    </dev/null >/dev/null 2>&1 &
  local pid=$! i
  echo "$pid" >> "$T/ns-pids"
  for ((i = 0; i < 200; i++)); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" != "$(command -v unshare)" ] &&
      [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.01
  done
  echo "$pid"
}

ns_processes_gone () {
  local p
  [ -f "$T/ns-pids" ] || return 0
  while read -r p; do pid_gone "$p" || return 1; done < "$T/ns-pids"
  return 0
}

kill_ns_processes () {
  [ -f "$T/ns-pids" ] || return 0
  local p
  while read -r p; do kill -9 "$p" 2>/dev/null || true; done < "$T/ns-pids"
}

# kill_ns_processes_gone POLICY: kill_ns_processes, then waits (for
# LEASE_SETTLE_S at most, the reaper's own bound) until the kernel has let
# go of the namespaces POLICY's leases were in: their ids (the holders'
# nsid) gone from `ip netns list-id`, which is what gc waits for before it
# releases a lease.  The kernel tears a dead namespace down in its own
# time (a workqueue of its own: seconds on a loaded host): a fixed sleep,
# and then a fixed 10 s, raced it.
kill_ns_processes_gone () {
  local sd ids
  sd=$(jq -r .state_dir "$1")
  ids=$(cat "$sd"/holders/* 2>/dev/null | jq -r 'select(.nsid != null and .nsid >= 0) | .nsid' | sort -u)
  kill_ns_processes
  # No id recorded (a kernel that gave none): the processes gone is all
  # there is to wait for.
  [ -n "$ids" ] || { wait_for 10 "the namespaces' processes gone" ns_processes_gone; return 0; }
  ns_ids_gone () {
    local n
    for n in $ids; do ip netns list-id | grep -q "^nsid $n " && return 1; done
    return 0
  }
  wait_for "$LEASE_SETTLE_S" "the namespaces of $1 (ids ${ids//$'\n'/ }) let go by the kernel after their processes were killed" ns_ids_gone
}

# direct_bundle: the bundle the direct starts name (network + mount
# namespaces of their own, as ns_process has).
direct_bundle () {
  NAMESPACES_JSON='[{"type":"network"},{"type":"mount"}]' net_bundle "$T/db"
}

# start_direct POLICY ID [IP]: the hook's prestart for a fresh ns_process;
# output in $T/out-ID.  Prints nothing; returns the hook's status.
start_direct () {
  local policy=$1 id=$2 ip=${3:-} pid rc=0 b=$T/db
  if [ -n "$ip" ]; then
    b=$T/db-$id
    NAMESPACES_JSON='[{"type":"network"},{"type":"mount"}]' net_bundle "$b" $'roce.io/hca=mlx5_0\nroce.io/ip='"$ip"
  fi
  pid=$(ns_process "$b")
  local t0
  t0=$(date +%s%N)
  oci_state "$id" "$pid" "$b" | "$HOOK" --config "$policy" prestart >"$T/out-$id" 2>&1 || rc=$?
  # The hook's own time (ms), without the namespace's making.
  echo $((($(date +%s%N) - t0) / 1000000)) > "$T/ms-$id"
  return $rc
}

# refused_within_timeout ID TIMEOUT_MS BASE_ID: the start ID ended within
# its etcd timeout, give or take what a start refused at once (BASE_ID, no
# etcd wait at all) took on this host now, and a second.
refused_within_timeout () {
  local ms base
  ms=$(cat "$T/ms-$1") base=$(cat "$T/ms-$3")
  echo "$1 refused after $ms ms; a start refused at once: $base ms"
  timing_holds || return 0
  [ "$ms" -lt $(($2 + base + 1000)) ] || fail "the refusal took $ms ms (timeout_ms $2; a refusal at once $base ms)"
}

# The addresses a node's store holds, one a line.
node_addresses () { # POLICY
  leases_settled "$1" | jq -r '.leases[].address'
}

# The address of a direct start (the lease of its container id).
lease_of () { # POLICY ID
  leases_settled "$1" | jq -r --arg id "$2" '.leases[] | select(.owner == $id) | .address'
}

