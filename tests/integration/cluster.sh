# SPDX-License-Identifier: Apache-2.0
# Cluster addressing through etcd: simulated nodes on this machine (a node
# name and a state_dir each, the same rail subnet), a three-member etcd on
# 127.0.0.1 ports started (and stopped, by pid) by each test.
#
# Most starts call the hook directly against a process in network and mount
# namespaces of its own (as a runtime's init before its prestart hook); some
# go through real runc.  Runs once, under runc only.
# roce-suite: once
# roce-suite: memcheck test_two_nodes_through_runc_get_different_addresses
# roce-suite: memcheck test_gc_returns_free_blocks_and_release_frees_a_dead_node
# roce-suite: memcheck test_quorum_lost_refuses_only_starts_that_need_a_block
# roce-suite: valgrind test_two_nodes_through_runc_get_different_addresses
# roce-suite: valgrind test_gc_returns_free_blocks_and_release_frees_a_dead_node
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"
# shellcheck source=../helpers/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/cluster.sh"
cluster_suite cluster || return 0

# ---- tests ------------------------------------------------------------------------

# The blocks of 16 that $POOL (a-b, within one /16) spans.
pool_blocks () {
  local a b
  a=$(cut -d- -f1 <<<"$POOL" | awk -F. '{print $3 * 256 + $4}')
  b=$(cut -d- -f2 <<<"$POOL" | awk -F. '{print $3 * 256 + $4}')
  echo $(( (b / 16) - (a / 16) + 1 ))
}

# The issue's report, through real runc: the same policy on two nodes.
# Node-local, both containers get the pool's first address; with `cluster`
# they get two different ones, from blocks etcd gives each node.
test_two_nodes_through_runc_get_different_addresses () {
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  local a b na nb pa pb out
  # Without cluster: the defect, as it was (and still is, by design).
  # (Random MACs: on this one machine the two "nodes" share a NIC, and the
  # same address's derived MAC cannot be on it twice.)
  jq --arg st "$T/local-a" '.state_dir = $st | .fabric.mac_prefix = ""' "$NODE_BASE" > "$T/local-a.json"
  jq --arg st "$T/local-b" '.state_dir = $st | .fabric.mac_prefix = ""' "$NODE_BASE" > "$T/local-b.json"
  a=$(new_id) b=$(new_id)
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD="sleep 60" make_bundle "$T/la" "$T/local-a.json"
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD="sleep 60" make_bundle "$T/lb" "$T/local-b.json"
  start_container "$a" "$T/la" || fail "local a: $(cat "$T/$a.err")"
  start_container "$b" "$T/lb" || fail "local b: $(cat "$T/$b.err")"
  assert_eq "$(ns_addr "$(container_pid "$a")" roce0)" "$(ns_addr "$(container_pid "$b")" roce0)" \
    "node-local stores on two nodes (the same first address)"
  runtime delete -f "$a"; runtime delete -f "$b"

  pa=$(node_policy node-a) pb=$(node_policy node-b)
  a=$(new_id) b=$(new_id)
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD="sleep 60" make_bundle "$T/ca" "$pa"
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD="sleep 60" make_bundle "$T/cb" "$pb"
  start_container "$a" "$T/ca" || fail "cluster a: $(cat "$T/$a.err")"
  start_container "$b" "$T/cb" || fail "cluster b: $(cat "$T/$b.err")"
  na=$(ns_addr "$(container_pid "$a")" roce0) nb=$(ns_addr "$(container_pid "$b")" roce0)
  # Each node's first container: the first address of a block etcd gives
  # that node (where in the pool: spread by the node's id).
  [ "$na" != "$nb" ] || fail "the same address on two nodes: $na"
  in_block_of "$na" node-a || fail "$na is not in a block of node-a: $(etcd_blocks)"
  in_block_of "$nb" node-b || fail "$nb is not in a block of node-b: $(etcd_blocks)"
  assert_eq 2 "$(etcd_blocks | wc -l)" "blocks in etcd"
  out=$("$HOOK" --config "$pa" blocks) || fail "blocks: $out"
  assert_contains "$out" "$(printf '%-20s %-18s %-31s %-5s' node-a 198.18.20.0/23 "$(block_of "$na")-$(addr_plus "$(block_of "$na")" 15)" 1)" "node-a's blocks"
  out=$("$HOOK" --config "$pb" blocks --all --json) || fail "blocks --all: $out"
  assert_eq "$(printf '%s\n' "node-a $(block_of "$na") null" "node-b $(block_of "$nb") 1" | sort -k2V)" \
    "$(jq -r '.blocks[] | "\(.node) \(.first) \(.held)"' <<<"$out")" "blocks --all"
  # The cluster's room and each node's use of it, for the block alert
  # (contrib/prometheus): the pool's blocks on every node, one held each.
  out=$("$HOOK" --config "$pa" metrics) || fail "metrics: $out"
  assert_contains "$out" "roce_cluster_blocks_held{hca=\"mlx5_0\"} 1" "node-a's blocks metric"
  assert_contains "$out" "roce_cluster_pool_blocks{hca=\"mlx5_0\"} $(pool_blocks)" "the pool's blocks"
  out=$("$HOOK" --config "$pb" metrics) || fail "metrics: $out"
  assert_contains "$out" "roce_cluster_blocks_held{hca=\"mlx5_0\"} 1" "node-b's blocks metric"
  out=$("$HOOK" --config "$pa" check) || true
  assert_contains "$out" "addressing: cluster, node node-a, blocks of 16, reserve 0, 1 blocks held; etcd $(IFS=,; echo "${ETCD_URLS[*]}"): etcd $ETCD_VERSION answered at http://127.0.0.1:" "check"
  assert_contains "$("$HOOK" --config "$T/local-a.json" check)" "addressing: node-local (no \`cluster\` in the policy)" "check of a node-local policy"
  # The second container of node-a: inside its held block, no etcd call;
  # the hook (confined: seccomp and capabilities) reached etcd for the first.
  local c
  c=$(new_id)
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD='ip -o -4 addr show roce0' make_bundle "$T/cc" "$pa"
  run_container "$c" "$T/cc" || fail "cluster c: $(cat "$T/$c.err")"
  assert_file_contains "$T/$c.out" "inet $(addr_plus "$na" 1)/23"
  assert_file_contains "$T/hook.log" "claimed block $(block_of "$na")-$(addr_plus "$(block_of "$na")" 15) of mlx5_0 for node node-a"
  # A static roce-hook handed the two claims to roce-hook-engine, and did
  # the start inside the held block itself.
  if hook_is_static; then
    assert_eq 2 "$(grep -c "roce-hook-engine goes on with the start" "$T/hook.log")" "starts handed over"
  fi
  # Poststop gives the address back to the node's block, not to etcd.
  runtime delete -f "$a"
  assert_eq "" "$(node_addresses "$pa")" "node-a's leases after its containers stopped"
  assert_eq "$(printf '%s\n' "$(block_of "$na") node-a" "$(block_of "$nb") node-b" | sort -V)" "$(etcd_blocks)" "blocks stay held after poststop"
}

# 200 starts over four nodes (64 in make check), many at once, with the etcd
# leader killed in the middle: every start succeeds, and no address is held
# twice, neither across the nodes' stores nor outside the blocks etcd gives
# their node.
test_200_starts_over_four_nodes_with_the_leader_killed () {
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local nodes=(n1 n2 n3 n4) pol=() i k failed=0 leader r
  for i in 0 1 2 3; do pol[$i]=$(node_policy "${nodes[$i]}" '.cluster.etcd.timeout_ms = 5000'); done
  # 25 rounds (8 in make check) of 8 starts at once (two per node), the
  # leader killed half way.
  r=$(rounds 25 8)
  for ((k = 0; k < r; k++)); do
    if [ "$k" = $((r / 2)) ]; then
      leader=$(etcd_leader)
      etcd_stop "$leader"
      echo "killed the leader etcd$leader after $((k * 8)) starts"
    fi
    local bg=()
    for i in 0 1 2 3; do
      start_direct "${pol[$i]}" "s$k-$i-a" & bg+=($!)
      start_direct "${pol[$i]}" "s$k-$i-b" & bg+=($!)
    done
    wait "${bg[@]}" || true
    for i in 0 1 2 3; do
      for id in "s$k-$i-a" "s$k-$i-b"; do
        if [ -s "$T/out-$id" ]; then failed=$((failed + 1)); echo "$id: $(cat "$T/out-$id")"; fi
      done
    done
  done
  assert_eq 0 "$failed" "failed starts"
  local all held=0
  all=$(for i in 0 1 2 3; do node_addresses "${pol[$i]}"; done)
  held=$(wc -l <<<"$all")
  assert_eq $((r * 8)) "$held" "leases across the four nodes"
  assert_eq "" "$(sort <<<"$all" | uniq -d)" "addresses held twice"
  # Each node's addresses lie in blocks etcd names it for; no block twice.
  local blocks
  blocks=$(etcd_blocks)
  assert_eq "" "$(awk '{print $1}' <<<"$blocks" | uniq -d)" "blocks claimed twice"
  for i in 0 1 2 3; do
    local a f
    for a in $(node_addresses "${pol[$i]}"); do
      IFS=. read -r o1 o2 o3 o4 <<<"$a"
      f="$o1.$o2.$o3.$((o4 / 16 * 16))"
      grep -qx "$f ${nodes[$i]}" <<<"$blocks" || fail "$a of ${nodes[$i]} is not in a block etcd gives ${nodes[$i]} ($blocks)"
    done
  done
  # The stores agree with etcd.
  for i in 0 1 2 3; do
    assert_eq "$(grep -c " ${nodes[$i]}$" <<<"$blocks")" \
      "$("$HOOK" --config "${pol[$i]}" blocks --json | jq '.blocks | length')" "${nodes[$i]}'s blocks"
  done
}

# Quorum lost (two of three members stopped): starts inside held blocks go
# on; a start that needs a new block is refused with the one line; once
# the members are back it succeeds.
test_quorum_lost_refuses_only_starts_that_need_a_block () {
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local pa pb t0 t1
  pa=$(node_policy qa) pb=$(node_policy qb '.cluster.etcd.timeout_ms = 1500')
  start_direct "$pa" qa-1 || fail "qa-1: $(cat "$T/out-qa-1")"
  etcd_stop 1
  etcd_stop 2
  # The 13 other addresses of qa's block (.2-.15), no etcd needed.
  for i in $(seq 2 14); do
    start_direct "$pa" "qa-$i" || fail "qa-$i inside a held block, without quorum: $(cat "$T/out-qa-$i")"
  done
  assert_eq 14 "$(node_addresses "$pa" | wc -l)" "qa's leases"
  start_direct "$pb" qb-1 && fail "a new block claimed without quorum"
  assert_eq 1 "$(wc -l < "$T/out-qb-1")" "lines printed"
  assert_file_contains "$T/out-qb-1" "roce-hook: qb-1: address block of mlx5_0 (198.18.20.0/23) in etcd, needed for a new address: etcd: an answer within 1500 ms (cluster.etcd.timeout_ms) from one of 3 endpoint(s) vs http://127.0.0.1:"
  assert_file_contains "$T/out-qb-1" "(fix: check that etcd runs and has quorum"
  # A start that needs a new block with no etcd at all (a port nothing
  # listens on): refused at once.
  start_direct "$(node_policy qc '.cluster.etcd.endpoints = ["http://127.0.0.1:9"]')" qc-1 &&
    fail "a new block claimed with no etcd"
  refused_within_timeout qb-1 1500 qc-1
  assert_eq "" "$(node_addresses "$pb")" "qb's leases after the refusal"
  etcd_start 1
  etcd_start 2
  etcd_wait_healthy "${ETCD_URLS[@]}"
  start_direct "$pb" qb-2 || fail "qb-2 after quorum came back: $(cat "$T/out-qb-2")"
  in_block_of "$(lease_of "$pb" qb-2)" qb || fail "qb's first address $(lease_of "$pb" qb-2) is not in its block"
}

# A static roce.io/ip: in a block this node holds, or a free block it then
# claims; another node's block is refused naming that node.
# roce-hook is linked statically: it cannot load libcurl, and a start that
# needs a new block goes on in roce-hook-engine.  Without the engine beside
# it, that start is refused in one line and leaves nothing; a start inside a
# block the node holds needs no etcd, and the static program does it alone.
test_static_hook_alone_refuses_only_a_start_that_needs_a_block () {
  hook_is_static || skip "roce-hook is linked dynamically in this build (it loads libcurl itself)"
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local pol out
  pol=$(node_policy node-a)
  mkdir -p "$T/alone"
  cp "$HOOK" "$T/alone/roce-hook"
  HOOK=$T/alone/roce-hook start_direct "$pol" s1 && fail "a start that needs a block, without the engine"
  assert_eq "roce-hook: s1: address block of mlx5_0 (198.18.20.0/23) in etcd, needed for a new address: roce-hook-engine (roce-hook linked dynamically: it loads libibverbs and libcurl): beside roce-hook, executable vs $T/alone/roce-hook-engine: No such file or directory (fix: install both programs (make install, or the DaemonSet's image))" \
    "$(cat "$T/out-s1")" "the refusal"
  assert_eq "" "$(node_addresses "$pol")" "leases after the refusal"
  assert_eq "" "$(etcd_blocks)" "blocks in etcd after the refusal"
  start_direct "$pol" s2 || fail "a start through the installed pair: $(cat "$T/out-s2")"
  in_block_of "$(lease_of "$pol" s2)" node-a || fail "the engine's start: $(lease_of "$pol" s2)"
  HOOK=$T/alone/roce-hook start_direct "$pol" s3 || fail "a start inside the held block, alone: $(cat "$T/out-s3")"
  assert_eq "$(addr_plus "$(lease_of "$pol" s2)" 1)" "$(lease_of "$pol" s3)" "the static program's own start"
  out=$("$T/alone/roce-hook" --config "$pol" check 2>&1) && fail "check without the engine: $out"
  assert_contains "$out" "roce-hook: check: roce-hook-engine (roce-hook linked dynamically: it loads libibverbs and libcurl): beside roce-hook, executable vs" "check without the engine"
}

test_static_address_in_another_nodes_block_refused () {
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local pa pb sa1 fb pbig
  pa=$(node_policy sa) pb=$(node_policy sb)
  start_direct "$pa" sa-1 || fail "sa-1: $(cat "$T/out-sa-1")"
  sa1=$(lease_of "$pa" sa-1)
  start_direct "$pb" sb-1 "$(addr_plus "$(block_of "$sa1")" 5)" && fail "an address in sa's block given to sb"
  assert_file_contains "$T/out-sb-1" "roce-hook: sb-1: address $(addr_plus "$(block_of "$sa1")" 5) of mlx5_0: an address in a block node sb holds, or in a free block vs block $(block_of "$sa1")-$(addr_plus "$(block_of "$sa1")" 15) held by node sa since "
  assert_file_contains "$T/out-sb-1" "(fix: pick an address in a block of this node (roce-hook blocks), or omit roce.io/ip to get a free one)"
  assert_eq 1 "$(wc -l < "$T/out-sb-1")" "lines printed"
  fb=$(free_block)
  start_direct "$pb" sb-2 "$(addr_plus "$fb" 4)" || fail "a static address in a free block: $(cat "$T/out-sb-2")"
  assert_eq "$(addr_plus "$fb" 4)" "$(lease_of "$pb" sb-2)" "sb's static address"
  start_direct "$pa" sa-2 "$(addr_plus "$(block_of "$sa1")" 9)" || fail "a static address in sa's own block: $(cat "$T/out-sa-2")"
  assert_eq "$(printf '%s\n' "$(block_of "$sa1") sa" "$fb sb" | sort -V)" "$(etcd_blocks)" "blocks in etcd"
  # A node whose policy cuts blocks of 64: the subnet's
  # geometry says 16; its claim is refused in the same transaction, and no
  # key of another size is written.
  pbig=$(node_policy big '.cluster.block = 64')
  start_direct "$pbig" big-1 && fail "a block of 64 claimed among blocks of 16"
  assert_eq 'roce-hook: big-1: cluster.block: blocks of 64, as every node of the cluster cuts them vs /roce-hook/geometry/198.18.20.0_23 says {"block":16} (fix: give every node the same cluster.block (another size needs another cluster.etcd.prefix or another subnet))' \
    "$(cat "$T/out-big-1")" "the refusal"
  start_direct "$pbig" big-2 198.18.20.130 && fail "a static address in a block of 64"
  assert_file_contains "$T/out-big-2" "cluster.block: blocks of 64, as every node of the cluster cuts them vs"
  assert_eq "" "$(etcd_blocks | grep ' big$')" "blocks of node big"
}

# gc keeps the reserve and gives back wholly free blocks (deleting the key
# only while it names this node); `blocks release` frees a dead node's.
test_gc_returns_free_blocks_and_release_frees_a_dead_node () {
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local pa pb out i
  pa=$(node_policy ga '.cluster.reserve = 20') pb=$(node_policy gb)
  out=$("$HOOK" --config "$pa" gc) || fail "gc: $out"
  assert_eq 2 "$(grep -c '^claimed block 198\.18\.2[01]\.[0-9]*-198\.18\.2[01]\.[0-9]* of 198.18.20.0/23 (reserve)$' <<<"$out")" "gc's reserve claims: $out"
  assert_contains "$out" "gc: node ga holds 2 blocks (" "gc"
  assert_contains "$out" "claimed 2, released 0" "gc"
  # 20 starts: the reserve makes them local; one more block at the next gc.
  for i in $(seq 1 20); do start_direct "$pa" "ga-$i" || fail "ga-$i: $(cat "$T/out-ga-$i")"; done
  out=$("$HOOK" --config "$pa" gc) || fail "gc: $out"
  assert_contains "$out" "holds 3 blocks" "gc refilling the reserve"
  assert_contains "$out" "claimed 1, released 0" "gc refilling the reserve"
  # The containers go: their namespaces die, gc releases the leases, then
  # gives back what the reserve does not need.
  kill_ns_processes_gone "$pa"
  jq '.cluster.reserve = 0' "$pa" > "$T/p.tmp" && mv "$T/p.tmp" "$pa"
  out=$("$HOOK" --config "$pa" gc) || fail "gc: $out"
  assert_contains "$out" "gc: released 20 leases, 0 held" "gc"
  assert_eq 3 "$(grep -c '^released block .* of 198.18.20.0/23: wholly free$' <<<"$out")" "blocks given back: $out"
  assert_contains "$out" "released 3" "gc"
  assert_eq "" "$(etcd_blocks | grep ' ga$')" "ga's blocks in etcd"
  assert_contains "$("$HOOK" --config "$pa" blocks)" "no address blocks held (node ga)" "blocks"

  # gb holds blocks; while its liveness record lives, another node cannot
  # free them unless forced.
  start_direct "$pb" gb-1 || fail "gb-1: $(cat "$T/out-gb-1")"
  start_direct "$pb" gb-2 "$(addr_plus "$(free_block)" 2)" || fail "gb-2: $(cat "$T/out-gb-2")"
  assert_eq 2 "$(etcd_blocks | grep -c ' gb$')" "gb's blocks"
  out=$("$HOOK" --config "$pb" blocks release --node gb 2>&1) && fail "a node released its own blocks"
  assert_contains "$out" "roce-hook: blocks: blocks release --node: a node that is gone for good vs this node" "own node"
  out=$("$HOOK" --config "$pa" blocks release --node gb 2>&1) && fail "the blocks of a live node released: $out"
  assert_contains "$out" "roce-hook: blocks: blocks release --node gb: a node whose liveness record lapsed vs node gb alive: its liveness record /roce-hook/nodes/gb lives" "a live node's release"
  assert_contains "$out" "(fix: stop roce-hook on that node for good and wait for the record to lapse; --force frees" "a live node's release"
  assert_eq 2 "$(etcd_blocks | grep -c ' gb$')" "gb's blocks after the refused release"
  # gb dies: its record lapses (deleted here as its lease's expiry would).
  etcdctl_all del /roce-hook/nodes/gb >/dev/null || fail "etcdctl del"
  out=$("$HOOK" --config "$pa" blocks release --node gb) || fail "release: $out"
  assert_eq 2 "$(grep -c '^released block .* of 198.18.20.0/23 of node gb (held since ' <<<"$out")" "release: $out"
  assert_contains "$out" "blocks release: freed 2 of 2 blocks of node gb" "release"
  assert_eq "" "$(etcd_blocks)" "blocks in etcd"
}

# An IPv6 /64 pool in blocks of 16 (2^60 of them): two nodes through runc
# get addresses from blocks etcd gives each, keyed with every group in full;
# a static address in the other node's block is refused naming it; gc
# gives the blocks back once their containers are gone (the pool is never
# walked: its blocks are found by arithmetic).
test_ipv6_pool_in_blocks_over_two_nodes () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  local pa pb a b c na nb out key
  jq '.hcas.mlx5_0 = (.hcas.mlx5_0 | del(.gateway, .routes))
      | .hcas.mlx5_0.subnet = "2001:2:0:20::/64" | .hcas.mlx5_0.pool = "2001:2:0:20::/64"' \
    "$NODE_BASE" > "$T/p.tmp" && mv "$T/p.tmp" "$NODE_BASE"
  pa=$(node_policy n6a) pb=$(node_policy n6b)
  a=$(new_id) b=$(new_id)
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD="sleep 60" make_bundle "$T/ca" "$pa"
  ANNOTATIONS=roce.io/hca=mlx5_0 CMD="sleep 60" make_bundle "$T/cb" "$pb"
  start_container "$a" "$T/ca" || fail "cluster a: $(cat "$T/$a.err")"
  start_container "$b" "$T/cb" || fail "cluster b: $(cat "$T/$b.err")"
  na=$(node_addresses "$pa") nb=$(node_addresses "$pb")
  [ -n "$na" ] && [ -n "$nb" ] || fail "no leases: '$na' '$nb'"
  [ "$na" != "$nb" ] || fail "the same address on two nodes: $na"
  assert_eq "$na/64 global" "$(ns_addr6 "$(container_pid "$a")" roce0)" "a's address in its namespace"
  # Each in a block of its node: the block's key, every group in full.
  out=$(etcdctl_all get --prefix /roce-hook/blocks/ | paste - -)
  for x in "$na n6a" "$nb n6b"; do
    read -r addr node <<<"$x"
    key=$(ip6_full "$addr")
    key=${key%?}0 # the block of 16 it lies in: its last hex digit 0
    assert_contains "$out" "/roce-hook/blocks/2001:0002:0000:0020:0000:0000:0000:0000_64/$key	{\"node\":\"$node\"" "the block of $addr"
  done
  assert_eq 2 "$(wc -l <<<"$out")" "blocks in etcd"
  out=$("$HOOK" --config "$pa" blocks) || fail "blocks: $out"
  assert_contains "$out" "2001:2:0:20::/64" "blocks"
  # A static address in node b's block, asked on node a: refused, naming it.
  c=$(new_id)
  # (nb is the first of its block: its last hex digit 0.)
  ANNOTATIONS=$'roce.io/hca=mlx5_0\nroce.io/ip='"${nb%?}1" \
    CMD="echo started" make_bundle "$T/cc" "$pa"
  run_container "$c" "$T/cc" && fail "a static address in another node's block started"
  assert_file_contains "$T/$c.err" "held by node n6b"
  [ "$(grep -c 'roce-hook:' "$T/$c.err")" = 1 ] || fail "more than one line: $(cat "$T/$c.err")"
  # The containers go; gc releases the leases and gives the blocks back,
  # once each poststop's reaper has done with them (a lease its reaper is
  # still releasing holds its block: a gc at once could find it in use).
  runtime delete -f "$a"; runtime delete -f "$b"
  leases_settled "$pa" >/dev/null
  leases_settled "$pb" >/dev/null
  out=$("$HOOK" --config "$pa" gc) || fail "gc: $out"
  assert_contains "$out" "of 2001:2:0:20::/64: wholly free" "gc of node a"
  "$HOOK" --config "$pb" gc >/dev/null || fail "gc of node b"
  assert_eq "" "$(etcdctl_all get --prefix /roce-hook/blocks/ --keys-only)" "blocks in etcd after gc"
}

# TLS with certificates the test makes; a wrong CA is a clear refusal.
test_tls_client_certificates_and_a_wrong_ca () {
  cluster_host
  need_cmd openssl
  defer kill_ns_processes
  direct_bundle
  local d=$T/pki p url pol out
  mkdir -p "$d"
  ( cd "$d"
    for ca in ca other; do
      openssl req -x509 -newkey rsa:2048 -nodes -keyout $ca.key -out $ca.pem -days 1 -subj "/CN=roce-test-$ca" 2>/dev/null
    done
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=etcd" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile ext 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=roce-hook" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > cext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1 -extfile cext 2>/dev/null
    chmod 600 ./*.key ) || fail "openssl"
  p=$(port_block) && [ -n "$p" ] || fail "no free block of ports"
  url=https://127.0.0.1:$p
  etcd --name tls --data-dir "$T/etcd-tls" --log-level error --logger zap \
    --listen-client-urls "$url" --advertise-client-urls "$url" \
    --listen-peer-urls "http://127.0.0.1:$((p + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((p + 1))" \
    --initial-cluster "tls=http://127.0.0.1:$((p + 1))" \
    --cert-file "$d/server.pem" --key-file "$d/server.key" --client-cert-auth --trusted-ca-file "$d/ca.pem" \
    >"$T/etcd-tls.log" 2>&1 &
  local epid=$!
  defer "kill $epid; wait $epid 2>/dev/null; true"
  tls_healthy () {
    etcdctl --endpoints "$url" --cacert "$d/ca.pem" --cert "$d/client.pem" --key "$d/client.key" \
      endpoint health >/dev/null 2>&1
  }
  wait_for 30 "etcd over TLS to answer (its log: $T/etcd-tls.log)" tls_healthy
  ETCD_URLS=("$url")
  pol=$(node_policy tn ".cluster.etcd.cacert = \"$d/ca.pem\" | .cluster.etcd.cert = \"$d/client.pem\" | .cluster.etcd.key = \"$d/client.key\"")
  start_direct "$pol" tls-1 || fail "a start over TLS: $(cat "$T/out-tls-1")"
  assert_eq "$(block_of "$(lease_of "$pol" tls-1)")" "$("$HOOK" --config "$pol" blocks --json | jq -r '.blocks[0].first')" "the address over TLS, in tn's block"
  out=$("$HOOK" --config "$pol" blocks --all) || fail "blocks --all over TLS: $out"
  assert_contains "$out" "tn " "blocks --all over TLS"
  # A wrong CA: the server's certificate is not trusted.
  pol=$(node_policy tw ".cluster.etcd.cacert = \"$d/other.pem\" | .cluster.etcd.cert = \"$d/client.pem\" | .cluster.etcd.key = \"$d/client.key\"")
  start_direct "$pol" tls-2 && fail "a start with a wrong CA"
  assert_eq 1 "$(wc -l < "$T/out-tls-2")" "lines printed"
  assert_file_contains "$T/out-tls-2" "roce-hook: tls-2: address block of mlx5_0 (198.18.20.0/23) in etcd, needed for a new address: etcd: an answer within 3000 ms (cluster.etcd.timeout_ms) from one of 1 endpoint(s) vs $url: SSL peer certificate or SSH remote key was not OK"
  # No client certificate: etcd refuses the handshake.
  pol=$(node_policy tc ".cluster.etcd.cacert = \"$d/ca.pem\"")
  start_direct "$pol" tls-3 && fail "a start without a client certificate"
  assert_file_contains "$T/out-tls-3" "roce-hook: tls-3: address block of mlx5_0 (198.18.20.0/23) in etcd"
}

# A hung endpoint (it accepts, never answers) holds a start no longer than
# timeout_ms, and the next endpoint still gets its turn.
test_hung_endpoint_bounded_by_timeout () {
  cluster_host
  need_cmd python3
  defer kill_ns_processes
  direct_bundle
  local p pol
  p=$(port_block) && [ -n "$p" ] || fail "no free block of ports"
  python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); time.sleep(600)' "$p" &
  local hung=$!
  defer "kill $hung"
  wait_for 10 "the hung listener on port $p" port_listens "$p"
  ETCD_URLS=("http://127.0.0.1:$p")
  pol=$(node_policy hung '.cluster.etcd.timeout_ms = 800')
  start_direct "$pol" hung-1 && fail "a start through a hung endpoint"
  start_direct "$(node_policy hung0 '.cluster.etcd.endpoints = ["http://127.0.0.1:9"]')" hung-0 &&
    fail "a start with no etcd"
  refused_within_timeout hung-1 800 hung-0
  assert_file_contains "$T/out-hung-1" "etcd: an answer within 800 ms (cluster.etcd.timeout_ms) from one of 1 endpoint(s) vs http://127.0.0.1:$p: Timeout was reached"
  # A hung member first, a live one second: the start succeeds within the budget.
  etcd_cluster 1
  ETCD_URLS=("http://127.0.0.1:$p" "${ETCD_URLS[0]}")
  pol=$(node_policy hung2 '.cluster.etcd.timeout_ms = 2000')
  start_direct "$pol" hung-2 || fail "a hung member then a live one: $(cat "$T/out-hung-2")"
}

# A matrix file (tests/integration/cluster-etcd-*.sh) runs the tests under its
# own name.
[ -n "${ROCE_MATRIX:-}" ] && return 0
run_tests
