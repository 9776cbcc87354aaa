# SPDX-License-Identifier: Apache-2.0
# Cluster addressing's fencing: each way two nodes could hand
# out one address, as a test; the faults of a lost answer and a member cut
# mid-transaction, through tests/helpers/fault-proxy.py; a quick storm of
# fresh nodes against a pool with 2,000 blocks held.  Simulated nodes on
# this machine (a node name and a state_dir each), etcd on 127.0.0.1.
# Runs once, under runc only.
# roce-suite: once
# roce-suite: memcheck test_a_state_dir_from_another_machine_gets_a_new_node_id
# roce-suite: memcheck test_lost_claim_answer_is_adopted_by_gc
# roce-suite: memcheck test_max_blocks_caps_claims_and_the_reserve
# roce-suite: memcheck test_a_hostile_member_cannot_hold_gc
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"
# shellcheck source=../helpers/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/cluster.sh"
cluster_suite cluster_fencing || return 0

BLOCKS_B64=$(b64_prefix /roce-hook/blocks/)

# Item 1: a node whose liveness lapsed (it went quiet: no gc) may have had
# its blocks released and claimed by another node; when it comes back with
# its state_dir intact it checks them against etcd before it uses one.
test_a_lapsed_node_checks_its_blocks_before_using_them () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local pa pb a1 blk a2 out
  pa=$(node_policy fa '.cluster.liveness_ttl_s = 10') pb=$(node_policy fb)
  start_direct "$pa" fa-1 || fail "fa-1: $(cat "$T/out-fa-1")"
  a1=$(lease_of "$pa" fa-1) blk=$(block_of "$a1")
  out=$("$HOOK" --config "$pb" blocks release --node fa 2>&1) && fail "fa's blocks released while it lives: $out"
  # fa goes quiet; its record lapses with its etcd lease (10 s).
  wait_for 20 "fa's liveness record to lapse with its TTL" \
    eval '[ -z "$(etcdctl_all get --prefix /roce-hook/nodes/fa --keys-only | grep -x /roce-hook/nodes/fa)" ]'
  out=$("$HOOK" --config "$pb" blocks release --node fa) || fail "release of a lapsed node: $out"
  assert_contains "$out" "blocks release: freed 1 of 1 blocks of node fa" "release"
  start_direct "$pb" fb-1 "$(addr_plus "$blk" 7)" || fail "fb-1 in the freed block: $(cat "$T/out-fb-1")"
  # fa comes back: its held block is fb's now; it takes another.
  start_direct "$pa" fa-2 || fail "fa-2: $(cat "$T/out-fa-2")"
  a2=$(lease_of "$pa" fa-2)
  [ "$(block_of "$a2")" != "$blk" ] || fail "fa handed out $a2 from $blk, fb's block now"
  in_block_of "$a2" fa || fail "$a2 is not in a block of fa: $(etcd_blocks)"
  assert_eq "" "$("$HOOK" --config "$pa" blocks --json | jq -r --arg b "$blk" '.blocks[] | select(.first == $b) | .first')" "fa's store after the check"
  assert_eq "$blk fb" "$(etcd_blocks | grep "^$blk ")" "the block's holder in etcd"
}

# After a reboot a node's liveness file is of another boot: the held blocks
# are checked against etcd before one is used, even within the record's
# TTL.  An operator forced fa's block away while fa lived (--force, the
# risk it names) and fb took it; fa, rebooted, hands out nothing from it.
# (The reboot is the file as the previous boot left it: another boot id.)
test_a_rebooted_node_checks_its_blocks_before_using_them () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local pa pb a1 blk a2 out f
  pa=$(node_policy fa) pb=$(node_policy fb)
  start_direct "$pa" fa-1 || fail "fa-1: $(cat "$T/out-fa-1")"
  a1=$(lease_of "$pa" fa-1) blk=$(block_of "$a1")
  out=$("$HOOK" --config "$pb" blocks release --node fa --force) || fail "forced release: $out"
  assert_contains "$out" "blocks release: freed 1 of 1 blocks of node fa" "forced release"
  start_direct "$pb" fb-1 "$(addr_plus "$blk" 7)" || fail "fb-1 in the freed block: $(cat "$T/out-fb-1")"
  f=$T/state-fa/liveness.json
  jq -e '.fresh_until > now' "$f" >/dev/null || fail "fa's liveness file is not fresh: $(cat "$f")"
  jq -c '.boot = "00000000-0000-4000-8000-000000000000"' "$f" > "$f.new" && mv "$f.new" "$f"
  start_direct "$pa" fa-2 || fail "fa-2: $(cat "$T/out-fa-2")"
  a2=$(lease_of "$pa" fa-2)
  [ "$(block_of "$a2")" != "$blk" ] || fail "fa handed out $a2 from $blk, fb's block now"
  in_block_of "$a2" fa || fail "$a2 is not in a block of fa: $(etcd_blocks)"
  assert_eq "$blk fb" "$(etcd_blocks | grep "^$blk ")" "the block's holder in etcd"
}

# A state_dir restored or cloned onto another machine (another machine-id,
# bound over /etc/machine-id in this test's mount namespace) is not that
# machine's: a new node id, and while the first machine lives under the
# same name the clone is refused in one line, with nothing handed out.
test_a_state_dir_from_another_machine_gets_a_new_node_id () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p a1 id1 id2 out
  p=$(node_policy mc)
  start_direct "$p" mc-1 || fail "mc-1: $(cat "$T/out-mc-1")"
  a1=$(lease_of "$p" mc-1)
  id1=$(cut -d' ' -f1 "$T/state-mc/node.id")
  printf '%s\n' 0123456789abcdef0123456789abcdef > "$T/other-machine-id"
  mount --bind "$T/other-machine-id" /etc/machine-id || fail "bind the other machine-id"
  defer umount /etc/machine-id
  start_direct "$p" mc-2 && fail "the clone started while the first machine lives"
  assert_eq 1 "$(wc -l < "$T/out-mc-2")" "lines printed"
  id2=$(cut -d' ' -f1 "$T/state-mc/node.id")
  [ "$id2" != "$id1" ] || fail "the clone kept the node id $id1"
  assert_eq "$id2 0123456789abcdef0123456789abcdef" "$(cat "$T/state-mc/node.id")" "the clone's node.id"
  out=$(cat "$T/out-mc-2")
  assert_contains "$out" "node name mc (cluster.node): this machine's (node id $id2) vs another machine's, alive (node id $id1)" "the refusal"
  assert_eq "$a1" "$(node_addresses "$p")" "the clone's leases (the first start's only)"
  assert_eq "$(block_of "$a1") mc" "$(etcd_blocks)" "blocks in etcd"
  # The first machine is gone: its record lapsed (deleted here as the lease
  # would), and an operator freed its blocks.  The clone starts, on a block
  # of its own id: it neither uses nor writes back the old id's.
  etcdctl_all del /roce-hook/nodes/mc > /dev/null || fail "the record's lapse"
  out=$("$HOOK" --config "$(node_policy ops)" blocks release --node mc) || fail "release: $out"
  assert_contains "$out" "freed 1 of 1 blocks of node mc" "the release"
  start_direct "$p" mc-3 || fail "mc-3 once the first machine is gone: $(cat "$T/out-mc-3")"
  etcdctl_all get --prefix /roce-hook/ > "$T/etcd.txt"
  ! grep -q "$id1" "$T/etcd.txt" || fail "the old id is back in etcd: $(grep "$id1" "$T/etcd.txt")"
  in_block_of "$(lease_of "$p" mc-3)" mc || fail "mc-3 is not in a block of mc: $(etcd_blocks)"
  grep -q "$id2" "$T/etcd.txt" || fail "no block of the clone's id: $(cat "$T/etcd.txt")"
  assert_file_contains "$T/hook.log" "held in this state_dir under another node id"
}

# Item 3: two machines with one node name (here: two state_dirs, each with
# its own node id) do not share blocks: the second is refused in one line.
test_two_machines_with_one_name_refused () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p1 p2 a1 out
  p1=$(node_policy twin)
  jq --arg st "$T/state-twin2" '.state_dir = $st' "$p1" > "$T/twin2.json"
  p2=$T/twin2.json
  start_direct "$p1" t-1 || fail "t-1: $(cat "$T/out-t-1")"
  a1=$(lease_of "$p1" t-1)
  start_direct "$p2" t-2 && fail "a second machine named twin started"
  assert_eq 1 "$(wc -l < "$T/out-t-2")" "lines printed"
  out=$(cat "$T/out-t-2")
  assert_contains "$out" "roce-hook: t-2: node name twin (cluster.node): this machine's (node id $(cut -d' ' -f1 "$T/state-twin2/node.id")) vs another machine's, alive (node id $(cut -d' ' -f1 "$T/state-twin/node.id"))" "the refusal"
  assert_contains "$out" "(fix: give each machine its own cluster.node" "the refusal"
  start_direct "$p2" t-3 "$(addr_plus "$a1" 3)" && fail "the second twin took an address in the first one's block"
  assert_eq "" "$(node_addresses "$p2")" "the second twin's leases"
  assert_eq "$(block_of "$a1") twin" "$(etcd_blocks)" "blocks in etcd"
}

# Item 5: a store that lost its blocks (blocks.json moved aside, as its own
# refusal suggests) while etcd gives the node a full block and one with
# room: a start still succeeds, and gc adopts both (the full one too).
test_adoption_goes_on_past_a_full_block () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p i out
  p=$(node_policy ad '.cluster.block = 4')
  for i in 0 1 2 3; do
    start_direct "$p" "ad-$i" "198.18.21.$i" || fail "ad-$i: $(cat "$T/out-ad-$i")"
  done
  start_direct "$p" ad-4 198.18.21.4 || fail "ad-4: $(cat "$T/out-ad-4")"
  assert_eq 2 "$("$HOOK" --config "$p" blocks --json | jq '.blocks | length')" "blocks held"
  mv "$T/state-ad/blocks.json" "$T/state-ad/blocks.json.bad"
  start_direct "$p" ad-5 || fail "a start after the store lost its blocks: $(cat "$T/out-ad-5")"
  out=$("$HOOK" --config "$p" gc) || fail "gc: $out"
  # Both come back, the full one too: by gc ("adopted block ...: etcd names
  # this node"), or already by ad-5's own claim when the offset its node id
  # chose fell on one of them ("claimed by this node before").
  local held
  held=" $("$HOOK" --config "$p" blocks --json | jq -r '.blocks[].first' | tr '\n' ' ')"
  assert_contains "$held" " 198.18.21.0 " "the blocks held after the start and gc (gc: $out)"
  assert_contains "$held" " 198.18.21.4 " "the blocks held after the start and gc (gc: $out)"
  grep -q "198.18.21.0: adopted, claimed by this node before" "$T/hook.log" ||
    assert_contains "$out" "adopted block 198.18.21.0-198.18.21.3 of 198.18.20.0/23: etcd names this node" "gc adopting the full block"
  assert_eq "$(etcd_blocks | grep -c ' ad$')" "$("$HOOK" --config "$p" blocks --json | jq '.blocks | length')" "the store agrees with etcd"
  assert_eq "" "$( (node_addresses "$p") | sort | uniq -d)" "addresses held twice"
}

# Item 6: cluster.max_blocks caps a node's blocks, roce.io/ip claims and
# gc's reserve included; the refusal names it.
test_max_blocks_caps_claims_and_the_reserve () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p out
  p=$(node_policy cap '.cluster.max_blocks = 2 | .cluster.reserve = 100')
  start_direct "$p" cap-1 198.18.21.20 || fail "cap-1: $(cat "$T/out-cap-1")"
  start_direct "$p" cap-2 198.18.21.40 || fail "cap-2: $(cat "$T/out-cap-2")"
  start_direct "$p" cap-3 198.18.21.60 && fail "a third block claimed past cluster.max_blocks 2"
  assert_eq 1 "$(wc -l < "$T/out-cap-3")" "lines printed"
  assert_contains "$(cat "$T/out-cap-3")" "roce-hook: cap-3: address blocks of mlx5_0: at most 2 blocks per node (cluster.max_blocks) vs 2 held, no free address in them (fix: stop containers of this node, or raise cluster.max_blocks" "the refusal"
  out=$("$HOOK" --config "$p" gc) || fail "gc: $out"
  assert_contains "$out" "gc: node cap holds 2 blocks" "gc's reserve under the cap"
  assert_eq 2 "$(etcd_blocks | grep -c ' cap$')" "cap's blocks in etcd"
  # The default: CLUSTER_ADDRS_PER_HCA (128) addresses for the one HCA, in
  # blocks of 16: 8.
  p=$(node_policy dflt '.cluster.reserve = 1000')
  out=$("$HOOK" --config "$p" gc) || fail "gc: $out"
  assert_contains "$out" "gc: node dflt holds 8 blocks" "the default cap"
}

# Item 7: the endpoint each call tries first is spread (it was always the
# first: every process of every node on one member).
test_first_endpoint_spread () {
  cluster_host
  etcd_cluster 3
  local p i seen
  p=$(node_policy spread)
  seen=$(for i in $(seq 1 24); do "$HOOK" --config "$p" check 2>/dev/null | sed -n "s/.*etcd $ETCD_VERSION answered at \(http[^ ]*\).*/\1/p"; done | sort -u | wc -l)
  [ "$seen" -ge 2 ] || fail "24 checks were all answered by one member"
}

# roce.io/ip cannot drain the pool: an address outside the node's blocks
# claims a block for itself alone (nothing else is given from it), at most
# cluster.max_static_blocks (2) per node, each given back by the next gc as
# soon as it is empty, release_after_s or not.  A tenant cycling short
# containers with addresses in free blocks holds two blocks a node at most,
# for one gc period at most.
test_static_addresses_hold_few_blocks_briefly () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p out a f1=198.18.21.16 f2=198.18.21.48 f3=198.18.21.80
  p=$(node_policy st '.cluster.release_after_s = 600')
  start_direct "$p" st-1 "$(addr_plus $f1 3)" || fail "st-1: $(cat "$T/out-st-1")"
  start_direct "$p" st-2 "$(addr_plus $f2 3)" || fail "st-2: $(cat "$T/out-st-2")"
  start_direct "$p" st-3 "$(addr_plus $f3 3)" && fail "a third block claimed for roce.io/ip: $(etcd_blocks)"
  assert_eq "roce-hook: st-3: address 198.18.21.83 of mlx5_0 (roce.io/ip): at most 2 block(s) per node claimed for roce.io/ip addresses outside its blocks (cluster.max_static_blocks) vs 2 held for other containers' roce.io/ip (fix: pick an address in a block this node holds (roce-hook blocks), omit roce.io/ip, or wait for those containers to stop)" \
    "$(cat "$T/out-st-3")" "the refusal"
  # A dynamic address comes from a block of the node's own.
  start_direct "$p" st-4 || fail "st-4: $(cat "$T/out-st-4")"
  a=$(lease_of "$p" st-4)
  case $(block_of "$a") in $f1 | $f2) fail "a dynamic address ($a) from a block claimed for roce.io/ip" ;; esac
  kill_ns_processes_gone "$p"
  out=$("$HOOK" --config "$p" gc) || fail "gc: $out"
  assert_contains "$out" "released block $f1-$(addr_plus $f1 15) of 198.18.20.0/23: wholly free" "gc"
  assert_contains "$out" "released block $f2-$(addr_plus $f2 15) of 198.18.20.0/23: wholly free" "gc"
  assert_eq "$(block_of "$a") st" "$(etcd_blocks)" "blocks in etcd after gc (the node's own waits release_after_s)"
}

# The node id binds a state_dir to one machine through /etc/machine-id: a
# process that cannot see it (a container without the host's) makes no id
# and refuses, in one line; an id recorded without a machine id (as such a
# gc left it) is this machine's no more than a clone's: a new id is made,
# and the blocks of the old one are not used.
test_a_node_id_without_a_machine_id_is_never_accepted () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p out rc=0 old sd
  p=$(node_policy mi)
  sd=$T/state-mi
  : > "$T/empty-machine-id"
  out=$(unshare -m --propagation private sh -c 'mount --bind "$1" /etc/machine-id && exec "$2" --config "$3" gc' \
    sh "$T/empty-machine-id" "$HOOK" "$p" 2>&1) || rc=$?
  [ "$rc" != 0 ] || fail "gc made a node id without the machine's: $(cat "$sd/node.id" 2>&1)"
  assert_contains "$out" "the node id of the cluster's fencing: this machine's id in /etc/machine-id (32 hex digits) vs /etc/machine-id empty (fix: mount the host's /etc/machine-id in this container, read-only" "gc without the machine id"
  [ ! -e "$sd/node.id" ] || fail "node.id written: $(cat "$sd/node.id")"
  # An id recorded without a machine id, and a block of it in the store.
  old=$(rand_hex 16)
  mkdir -p "$sd" && printf '%s \n' "$old" > "$sd/node.id"
  start_direct "$p" mi-1 || fail "mi-1: $(cat "$T/out-mi-1")"
  assert_eq "$(cat /etc/machine-id)" "$(cut -d' ' -f2 "$sd/node.id")" "the machine id recorded"
  [ "$(cut -d' ' -f1 "$sd/node.id")" != "$old" ] || fail "the id recorded without a machine id was kept"
  assert_contains "$(etcdctl_all get --prefix /roce-hook/blocks/ --print-value-only)" "\"id\":\"$(cut -d' ' -f1 "$sd/node.id")\"" "mi's block under its new id"
}

# Fault: the answer of a claim is lost (etcd applied it).  The start is
# refused; the next gc adopts the block (its intent says so); no address
# twice, nothing leaked.
test_lost_claim_answer_is_adopted_by_gc () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p q out a
  proxy_start "${ETCD_URLS[0]}"
  p=$(proxied_policy lc '.cluster.etcd.timeout_ms = 1500')
  # The subnet's geometry set (as a first claim of the cluster leaves it),
  # so that the first transaction of lc is the claim that succeeds.
  etcdctl_all put /roce-hook/geometry/198.18.20.0_23 '{"block":16}' >/dev/null || fail "etcdctl put"
  q=$(node_policy other)
  echo "drop requestPut\":\{\"key\":\"$BLOCKS_B64" > "$PROXY_RULES"
  start_direct "$p" lc-1 && fail "a start whose claim's answer was lost"
  assert_contains "$(cat "$PROXY_LOG")" "dropped /v3/kv/txn" "the proxy's log"
  assert_eq 1 "$(wc -l < "$T/out-lc-1")" "lines printed"
  assert_contains "$(cat "$T/out-lc-1")" "roce-hook: lc-1: address block of mlx5_0 (198.18.20.0/23) in etcd, needed for a new address: etcd: " "the refusal"
  assert_eq "" "$(node_addresses "$p")" "leases after the refusal"
  assert_eq 1 "$(etcd_blocks | grep -c ' lc$')" "the block etcd applied ($(cat "$PROXY_LOG"; cat "$T/out-lc-1"))"
  out=$("$HOOK" --config "$p" gc) || fail "gc: $out"
  assert_contains "$out" "adopted block $(etcd_blocks | awk '/ lc$/ {print $1}')-" "gc"
  assert_eq 1 "$("$HOOK" --config "$p" blocks --json | jq '.blocks | length')" "lc's store after gc"
  start_direct "$p" lc-2 || fail "lc-2: $(cat "$T/out-lc-2")"
  a=$(lease_of "$p" lc-2)
  in_block_of "$a" lc || fail "$a is not in lc's block"
  assert_eq 1 "$(etcd_blocks | grep -c ' lc$')" "lc's blocks in etcd (none leaked)"
  # Another node never gets that block.
  start_direct "$q" o-1 "$(addr_plus "$(block_of "$a")" 9)" && fail "another node took lc's block"
  true
}

# Fault: gc gives a free block back and the answer of the delete is lost.
# The node stopped using the block before it asked etcd; the next gc
# finishes the release; another node may then take it.
test_lost_gc_delete_answer () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p q out blk
  proxy_start "${ETCD_URLS[0]}"
  p=$(proxied_policy lg '.cluster.etcd.timeout_ms = 1500')
  start_direct "$p" lg-1 || fail "lg-1: $(cat "$T/out-lg-1")"
  blk=$(block_of "$(lease_of "$p" lg-1)")
  kill_ns_processes_gone "$p"
  echo "drop requestDeleteRange\":\{\"key\":\"$BLOCKS_B64" > "$PROXY_RULES"
  out=$("$HOOK" --config "$p" gc 2>&1) && fail "gc whose delete's answer was lost: $out"
  assert_contains "$(cat "$PROXY_LOG")" "dropped /v3/kv/txn" "the proxy's log"
  assert_eq "" "$(etcd_blocks)" "blocks in etcd (the delete was applied)"
  assert_eq 0 "$("$HOOK" --config "$p" blocks --json | jq '.blocks | length')" "lg's store: the block was dropped before etcd was asked"
  q=$(node_policy other)
  start_direct "$q" o-1 "$(addr_plus "$blk" 3)" || fail "another node in the freed block: $(cat "$T/out-o-1")"
  start_direct "$p" lg-2 || fail "lg-2: $(cat "$T/out-lg-2")"
  [ "$(block_of "$(lease_of "$p" lg-2)")" != "$blk" ] || fail "lg handed out an address of the block it gave back"
  out=$("$HOOK" --config "$p" gc) || fail "gc: $out"
  assert_contains "$out" "released block $blk-$(addr_plus "$blk" 15) of 198.18.20.0/23: etcd no longer named this node" "the next gc finishing the release"
  assert_eq "$blk other" "$(etcd_blocks | grep "^$blk ")" "the block's holder"
  [ -z "$(ls "$T/state-lg/intents" 2>/dev/null)" ] || fail "intents left: $(ls "$T/state-lg/intents")"
}

# Fault: a member is cut off mid-transaction (the claim applied through it,
# its answer never sent, every later connection refused).  The start goes
# on at the next member and finds the block already its own.
test_member_cut_mid_transaction () {
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local p k a hit=0
  proxy_start "${ETCD_URLS[0]}"
  local real=("${ETCD_URLS[@]}")
  # Until a start went through the proxy (the first endpoint is spread:
  # each round, 2 in 3), 20 rounds at most.
  for ((k = 1; k <= 20 && hit == 0; k++)); do
    : > "$PROXY_LOG"
    echo "cut-after requestPut\":\{\"key\":\"$BLOCKS_B64" > "$PROXY_RULES"
    # The proxy twice: the first endpoint is spread, two of three tries hit it.
    ETCD_URLS=("$PROXY_URL" "$PROXY_URL" "${real[1]}")
    p=$(node_policy "cut$k" '.cluster.etcd.timeout_ms = 3000')
    ETCD_URLS=("${real[@]}")
    start_direct "$p" "cut$k-1" || fail "cut$k-1: $(cat "$T/out-cut$k-1")"
    a=$(lease_of "$p" "cut$k-1")
    in_block_of "$a" "cut$k" || fail "$a is not in a block of cut$k: $(etcd_blocks)"
    assert_eq 1 "$(etcd_blocks | grep -c " cut$k$")" "cut$k's blocks (none leaked)"
    if grep -q '^cut-after /v3/kv/txn' "$PROXY_LOG"; then hit=$((hit + 1)); fi
    # The proxy stays cut: a new one for the next round.
    proxy_start "${real[0]}"
  done
  [ "$hit" -ge 1 ] || fail "no start went through the proxy in 20 tries"
  assert_eq "" "$(etcd_blocks | awk '{print $1}' | uniq -d)" "blocks claimed twice"
}

# gc gives an empty block back (out of the store first, then out of etcd)
# while a start of the same node asks for an address in it (roce.io/ip,
# which a tenant may retry): etcd orders the two.  The start takes the block
# back by writing it again at the revision it read; gc's delete, at the
# revision the store knew, then no longer matches.  The node uses the
# block only while etcd gives it to the node; another node never gets it.
# gc's answers come 1 s late through the proxy (in production: gc's
# round trips).
test_gc_release_and_an_adoption_are_ordered_by_etcd () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p pg q blk a gcpid
  proxy_start "${ETCD_URLS[0]}"
  p=$(node_policy ra)
  jq --arg u "$PROXY_URL" '.cluster.etcd.endpoints = [$u] | .cluster.etcd.timeout_ms = 8000' "$p" > "$T/ra-gc.json"
  pg=$T/ra-gc.json
  start_direct "$p" ra-1 || fail "ra-1: $(cat "$T/out-ra-1")"
  blk=$(block_of "$(lease_of "$p" ra-1)")
  kill_ns_processes_gone "$p"
  echo "delay 1000" > "$PROXY_RULES"
  "$HOOK" --config "$pg" gc > "$T/gc.out" 2>&1 &
  gcpid=$!
  wait_for 20 "gc to give the block up in the store" \
    eval '[ "$("$HOOK" --config "$p" blocks --json | jq ".blocks | length")" = 0 ]'
  a=$(addr_plus "$blk" 5)
  start_direct "$p" ra-2 "$a" || fail "ra-2 in its own block: $(cat "$T/out-ra-2")"
  wait "$gcpid" || fail "gc: $(cat "$T/gc.out")"
  assert_eq "$a" "$(lease_of "$p" ra-2)" "ra-2's address"
  in_block_of "$a" ra || fail "ra hands out $a while etcd gives $blk to nobody: $(cat "$T/gc.out"); etcd: $(etcd_blocks)"
  # Either order is sound, and says so: the start's adoption first (gc keeps
  # the block; the usual order, gc's answers a second late), or on a host
  # so loaded that the start took longer, gc's delete first (the start then
  # claimed the block afresh).  What must hold whatever the order is above
  # and below: ra's address lies in a block etcd gives ra, and no one else's.
  case "$(cat "$T/gc.out")" in
    *"kept block $blk-$(addr_plus "$blk" 15) of 198.18.20.0/23: a start of this node took it back before etcd was asked"*) ;;
    *"released block $blk-$(addr_plus "$blk" 15) of 198.18.20.0/23: wholly free"*) ;;
    *) fail "gc neither kept nor released $blk: $(cat "$T/gc.out")" ;;
  esac
  q=$(node_policy rb)
  start_direct "$q" rb-1 "$(addr_plus "$blk" 9)" && fail "another node took $blk while ra uses it"
  true
}

# A faulty or hostile member: the node's index listed as a page that says
# "more" and never moves on, then with a key shorter than the prefix asked.
# gc ends within its budget with the answer's fault named (it paged for ever
# before, and read past the short key), and the next gc renews the node.
test_a_hostile_member_cannot_hold_gc () {
  cluster_host
  etcd_cluster 1
  defer kill_ns_processes
  direct_bundle
  local p out rc t0 ms end_b64
  proxy_start "${ETCD_URLS[0]}"
  p=$(proxied_policy hm '.cluster.etcd.timeout_ms = 1500')
  start_direct "$p" hm-1 || fail "hm-1: $(cat "$T/out-hm-1")"
  # The listing's range end: the same on every page.
  end_b64=$(b64_prefix /roce-hook/nodes/hm/blocks0)
  printf '{"header":{"revision":"7"},"kvs":[{"key":"%s","value":"%s","mod_revision":"5"}],"more":true,"count":"2"}' \
    "$(printf /roce-hook/nodes/hm/blocks/198.18.20.0_23/198.18.20.16 | base64 -w0)" "$(printf '{}' | base64 -w0)" > "$T/loop.json"
  printf '{"header":{"revision":"7"},"kvs":[{"key":"%s","value":"%s"}],"count":"1"}' \
    "$(printf /r | base64 -w0)" "$(printf '{}' | base64 -w0)" > "$T/short.json"
  for answer in loop short; do
    echo "answer \"range_end\":\"$end_b64 $T/$answer.json" > "$PROXY_RULES"
    t0=$(date +%s%N) rc=0
    out=$(timeout 20 "$HOOK" --config "$p" gc 2>&1) || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    [ "$rc" != 124 ] || fail "gc still paging after 20 s ($answer)"
    [ "$rc" != 0 ] || fail "gc took the $answer answer: $out"
    ! timing_holds || [ "$ms" -lt 6000 ] || fail "gc took $ms ms on the $answer answer (budget 1500 ms an operation)"
    assert_contains "$out" "etcd answer: kvs: a key outside the range asked" "gc on the $answer answer"
    assert_contains "$(cat "$PROXY_LOG")" "answered /v3/kv/range" "the proxy's log"
  done
  : > "$PROXY_RULES"
  out=$("$HOOK" --config "$p" gc) || fail "gc with the member mended: $out"
  assert_contains "$out" "gc: node hm holds 1 blocks" "gc with the member mended"
}

# A quick storm: 2,000 blocks held by others in a /16 of blocks of 4, then
# 32 fresh nodes (own state_dirs) start at once: all started, no address
# or block twice.  (Fleet sizes and timings: contrib/bench/cluster.sh.)
test_quick_storm_32_nodes_2000_held () {
  SUBNET=198.18.0.0/16 POOL=198.18.21.0-198.18.255.254
  cluster_host
  etcd_cluster 3
  defer kill_ns_processes
  direct_bundle
  local i bg=() failed=0 all
  python3 - "${ETCD_URLS[0]}" 2000 <<'PY' || fail "filling etcd"
import base64, json, sys, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
b = lambda s: base64.b64encode(s.encode()).decode()
ops = []
for i in range(n):
    f = 4 * (i * 7 % 16384)
    key = "/roce-hook/blocks/198.18.0.0_16/198.18.%d.%d" % (f // 256, f % 256)
    val = json.dumps({"node": "old-%d" % (i // 2), "since": 1, "size": 4}, separators=(",", ":"))
    ops.append({"requestPut": {"key": b(key), "value": b(val)}})
ops.append({"requestPut": {"key": b("/roce-hook/geometry/198.18.0.0_16"), "value": b('{"block":4}')}})
for k in range(0, len(ops), 100):
    req = urllib.request.Request(url + "/v3/kv/txn", json.dumps({"success": ops[k:k + 100]}).encode())
    assert json.load(urllib.request.urlopen(req)).get("succeeded")
PY
  for i in $(seq 1 32); do
    node_policy "s$i" '.cluster.block = 4 | .cluster.etcd.timeout_ms = 10000' >/dev/null
  done
  for i in $(seq 1 32); do
    start_direct "$T/s$i.json" "st-$i" & bg+=($!)
  done
  for i in "${!bg[@]}"; do wait "${bg[$i]}" || failed=$((failed + 1)); done
  for i in $(seq 1 32); do [ -s "$T/out-st-$i" ] && echo "st-$i: $(cat "$T/out-st-$i")"; done
  assert_eq 0 "$failed" "failed starts"
  all=$(for i in $(seq 1 32); do lease_of "$T/s$i.json" "st-$i"; done)
  assert_eq 32 "$(grep -c . <<<"$all")" "addresses"
  assert_eq "" "$(sort <<<"$all" | uniq -d)" "addresses held twice"
  assert_eq 2032 "$(etcdctl_all get --prefix /roce-hook/blocks/ --keys-only | grep -c .)" "blocks in etcd"
  # blocks --all reads them in pages of 1,000.
  assert_eq 2032 "$("$HOOK" --config "$T/s1.json" blocks --all --json | jq '.blocks | length')" "blocks --all"
}

# A matrix file (tests/integration/cluster_fencing-etcd-*.sh) runs the tests under its
# own name.
[ -n "${ROCE_MATRIX:-}" ] && return 0
run_tests
