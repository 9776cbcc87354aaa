# SPDX-License-Identifier: Apache-2.0
# IPv6 and dual-stack rails through runc on the fake host: the address on
# the rail's interface with its prefix and never tentative, the RFC 4862
# probe, its RoCE v2 GID, per-rail tables and rules of each family, two
# containers at the full MTU, the leases held and released, the refusals'
# lines, the NCCL variables the shim sets, and what check and its node
# labels say of each family.
# roce-suite: memcheck test_ipv6_rail_in_the_container test_dual_stack_rail_gets_both_families
# roce-suite: memcheck test_ipv6_static_address_clash_and_exhaustion
# roce-suite: valgrind test_ipv6_rail_in_the_container
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/fabric.sh"

# The flags of ADDR's line in /proc/net/if_inet6 (as text inside the
# container: "<32 hex> <ifindex> <prefix> <scope> <flags> <name>").
if_inet6_line () { # TEXT ADDR
  local hex
  hex=$(ip6_full "$2" | tr -d :)
  printf '%s\n' "$1" | awk -v h="$hex" '$1 == h'
}

test_ipv6_rail_in_the_container () {
  net6_host 1
  gid_table mlx5_0 16
  policy_fabric '{ "gid_check": "enforce", "gid_wait_ms": 10000 }'
  fake_gid_kernel mlx5_0
  local id b=$T/b out pid line
  id=$(new_id)
  net_bundle "$b"
  start_container "$id" "$b" || fail "start refused: $(cat "$T/$id.err")"
  pid=$(container_pid "$id")
  # The address with the subnet's prefix, global, neither tentative nor
  # failed: usable by the first instruction.  No link-local beside it.
  assert_eq "2001:2:0:10::100/64 global" "$(ns_addr6 "$pid" roce0)" "roce0's IPv6 addresses"
  out=$(runtime exec "$id" cat /proc/net/if_inet6) || fail "exec: $out"
  line=$(if_inet6_line "$out" 2001:2:0:10::100)
  [ -n "$line" ] || fail "no 2001:2:0:10::100 in the container's /proc/net/if_inet6: $out"
  read -r _ _ plen _ flags _ <<<"$line"
  assert_eq "40" "$plen" "prefix (hex) in /proc/net/if_inet6"
  [ $((0x$flags & 0x40)) -eq 0 ] || fail "tentative (flags $flags): $line"
  assert_not_contains "$out" "fe80" "link-local addresses"
  # The rail's table and rule, in IPv6.
  out=$(nsenter -t "$pid" -n sh -c 'ip -6 route show table 100; ip -6 rule; ip -6 route')
  assert_contains "$out" "2001:2:1:10::/64 via 2001:2:0:10::1 dev roce0" "the policy's route (table 100)"
  assert_contains "$out" "2001:2:0:10::/64 dev roce0" "the subnet's route"
  assert_contains "$out" "from 2001:2:0:10::100 lookup 100" "the rail's rule"
  assert_not_contains "$out" "default" "routes"
  # The MAC from the address's last 32 bits; the MTU of the parent.
  out=$(runtime exec "$id" cat /sys/class/net/roce0/address /sys/class/net/roce0/mtu) || fail "exec: $out"
  assert_eq "02:ce:00:00:01:00 9000" "$(echo $out)" "MAC and MTU"
  # Its own RoCE v2 GID, found and recorded.
  assert_file_contains "$T/hook.log" "gid: roce0 2001:2:0:10::100 is RoCE v2 GID index 2 of mlx5_0 port 1"
  out=$(runtime exec "$id" cat /dev/roce/rails) || fail "rails file: $out"
  assert_contains "$out" "mlx5_0 roce0 2001:2:0:10::100 64 1 2 v2 $NIC" "rails file"
  assert_eq "2" "$(hook_leases --json | jq '.leases[0].gid_index')" "gid_index in leases --json"
  assert_contains "$(hook_leases)" "mlx5_0     2001:2:0:10::100 roce0    2 " "leases table"
  assert_eq "2001:2:0:10::100" "$(held_addresses)" "leases"
  # The store says its format: a release that reads IPv4 stores only is
  # refused over it (contrib/k8s/install.sh).
  assert_eq "3" "$(cat "$T/state/format")" "the store's format"
  runtime delete -f "$id" || fail "delete"
  assert_eq "" "$(held_addresses)" "leases after poststop"
  assert_file_contains "$T/hook.log" "$id: released 2001:2:0:10::100 (mlx5_0)"
}

# Two containers over the rail with ping -6 at the full MTU, don't-fragment:
# 9000 - 40 (IPv6) - 8 (ICMPv6) bytes of payload pass, one more does not.
test_two_containers_ping6_at_the_full_mtu () {
  net6_host 1
  local a b pa pb out
  a=$(new_id) b=$(new_id)
  net_bundle "$T/a"
  net_bundle "$T/b"
  start_container "$a" "$T/a" || fail "start a: $(cat "$T/$a.err")"
  start_container "$b" "$T/b" || fail "start b: $(cat "$T/$b.err")"
  pa=$(container_pid "$a") pb=$(container_pid "$b")
  assert_eq "2001:2:0:10::101/64 global" "$(ns_addr6 "$pb" roce0)" "b's address"
  out=$(nsenter -t "$pb" -n python3 "$ROOT/tests/helpers/ping6-df.py" 2001:2:0:10::100 8952 2>&1) ||
    fail "b could not reach a at 9000 bytes: $out"
  assert_eq "reply 8952 bytes from 2001:2:0:10::100" "$out" "b to a, 9000 bytes, don't fragment"
  out=$(nsenter -t "$pa" -n python3 "$ROOT/tests/helpers/ping6-df.py" 2001:2:0:10::101 8952 2>&1) ||
    fail "a could not reach b at 9000 bytes: $out"
  out=$(nsenter -t "$pb" -n python3 "$ROOT/tests/helpers/ping6-df.py" 2001:2:0:10::100 8953 2>&1) &&
    fail "9001 bytes left roce0 unfragmented: $out"
  assert_eq "message too long, mtu=9000" "$out" "9001 bytes, don't fragment"
  # The container's own ping, from inside.
  out=$(runtime exec "$b" ping -6 -c 1 -W 2 -s 8952 2001:2:0:10::100 2>&1) || fail "ping -6 in b: $out"
  assert_contains "$out" "1 packets received" "ping -6 in b"
}

# RFC 4862's probe: an address another host on the link holds is refused
# naming its MAC; a free one passes, and the container's first instruction
# reaches the gateway (no tentative state left to it).
test_ipv6_duplicate_address_probe () {
  net6_host 1
  policy_fabric '{ "dad_probe_ms": 300 }'
  local id p dev mac out
  p=$(peer_ns "$NIC" 198.18.10.9/24)
  dev=rp${NIC#rh}
  ip netns exec "$p" ip addr add 2001:2:0:10::100/64 dev "$dev" nodad || fail "peer's address"
  mac=$(ip netns exec "$p" cat "/sys/class/net/$dev/address")
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0 'echo started'
  run_container "$id" "$T/b" && fail "started on a taken address"
  out=$(cat "$T/$id.err")
  assert_contains "$out" "roce-hook: $id: address 2001:2:0:10::100 of mlx5_0 on $NIC: no other host on the link answering for it (RFC 4862 probe) vs in use by MAC $mac (fix: find the host with MAC $mac and free 2001:2:0:10::100, or give this container another address (roce.io/ip))" "refusal"
  [ "$(grep -c 'roce-hook:' "$T/$id.err")" = 1 ] || fail "more than one line: $out"
  assert_not_contains "$(cat "$T/$id.out")" "started" "output of the refused container"
  assert_eq "" "$(held_addresses)" "leases after the refusal"
  # The peer becomes the gateway, with a stale entry of the address under
  # another MAC: the address is free, and the hook's unsolicited
  # advertisements (override set) put its MAC there though the container
  # sends nothing.
  ip netns exec "$p" ip addr del 2001:2:0:10::100/64 dev "$dev"
  ip netns exec "$p" ip addr add 2001:2:0:10::1/64 dev "$dev" nodad
  ip netns exec "$p" ip -6 neigh replace 2001:2:0:10::100 lladdr 02:00:00:00:00:99 dev "$dev" nud stale ||
    fail "the peer's stale entry"
  id=$(new_id)
  net_bundle "$T/c" roce.io/hca=mlx5_0 'grep roce0 /proc/net/if_inet6'
  run_container "$id" "$T/c" || fail "refused a free address: $(cat "$T/$id.out" "$T/$id.err")"
  out=$(ip netns exec "$p" ip -6 neigh show 2001:2:0:10::100 dev "$dev")
  assert_contains "$out" "lladdr 02:ce:00:00:01:00" "the peer's neighbor entry after the start"
  # No tentative state: the first instruction reaches the gateway.
  id=$(new_id)
  net_bundle "$T/d" roce.io/hca=mlx5_0 'ping -6 -c 1 -W 2 2001:2:0:10::1'
  run_container "$id" "$T/d" || fail "no reply at once: $(cat "$T/$id.out" "$T/$id.err")"
  assert_file_contains "$T/$id.out" "1 packets received"
}

# One interface, one address of each family: each with its prefix, table,
# rule, lease and GID; roce.io/ip may name one of each.
test_dual_stack_rail_gets_both_families () {
  net6_host 1 dual
  gid_table mlx5_0 16
  policy_fabric '{ "gid_check": "enforce", "gid_wait_ms": 10000 }'
  fake_gid_kernel mlx5_0 2
  local a c pid out
  a=$(new_id) c=$(new_id)
  net_bundle "$T/a"
  start_container "$a" "$T/a" || fail "start refused: $(cat "$T/$a.err")"
  pid=$(container_pid "$a")
  assert_eq "198.18.10.100/24" "$(ns_addr "$pid" roce0)" "roce0's IPv4 address"
  assert_eq "2001:2:0:10::100/64 global" "$(ns_addr6 "$pid" roce0)" "roce0's IPv6 address"
  out=$(nsenter -t "$pid" -n sh -c 'ip rule; ip route show table 100; ip -6 rule; ip -6 route show table 100')
  assert_contains "$out" "from 198.18.10.100 lookup 100" "IPv4 rule"
  assert_contains "$out" "198.19.10.0/24 via 198.18.10.1 dev roce0" "IPv4 route"
  assert_contains "$out" "from 2001:2:0:10::100 lookup 100" "IPv6 rule"
  assert_contains "$out" "2001:2:1:10::/64 via 2001:2:0:10::1 dev roce0" "IPv6 route"
  out=$(runtime exec "$a" cat /dev/roce/rails) || fail "rails file: $out"
  assert_contains "$out" "mlx5_0 roce0 198.18.10.100 24 1 2 v2 $NIC" "rails file (IPv4)"
  assert_contains "$out" "mlx5_0 roce0 2001:2:0:10::100 64 1 4 v2 $NIC" "rails file (IPv6)"
  assert_eq "198.18.10.100 2001:2:0:10::100" "$(held_addresses | tr '\n' ' ' | sed 's/ $//')" "leases"
  # A static address of each family, bare (no fake kernel for its GIDs).
  sed -i 's|"gid_check": "enforce"|"gid_check": "off"|' "$POLICY"
  net_bundle "$T/c" $'roce.io/hca=mlx5_0\nroce.io/ip=2001:2:0:10::150,198.18.10.150' 'sleep 60'
  start_container "$c" "$T/c" || fail "static refused: $(cat "$T/$c.err")"
  pid=$(container_pid "$c")
  assert_eq "198.18.10.150/24" "$(ns_addr "$pid" roce0)" "c's IPv4 address"
  assert_eq "2001:2:0:10::150/64 global" "$(ns_addr6 "$pid" roce0)" "c's IPv6 address"
  runtime delete -f "$a" || fail "delete"
  runtime delete -f "$c" || fail "delete"
  assert_eq "" "$(held_addresses)" "leases after poststop"
  assert_file_contains "$T/hook.log" "$a: released 198.18.10.100 (mlx5_0)"
  assert_file_contains "$T/hook.log" "$a: released 2001:2:0:10::100 (mlx5_0)"
}

test_ipv6_static_address_clash_and_exhaustion () {
  NET6_POOL_LAST=101 net6_host 1
  local a b c d e rc
  a=$(new_id) b=$(new_id) c=$(new_id) d=$(new_id) e=$(new_id)
  net_bundle "$T/a" $'roce.io/hca=mlx5_0\nroce.io/ip=2001:2:0:10::101'
  start_container "$a" "$T/a" || fail "start a: $(cat "$T/$a.err")"
  assert_eq "2001:2:0:10::101/64 global" "$(ns_addr6 "$(container_pid "$a")" roce0)" "a's static address"
  net_bundle "$T/b" $'roce.io/hca=mlx5_0\nroce.io/ip=mlx5_0=2001:2:0:10::101' 'echo started'
  rc=0 && run_container "$b" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "b started with a's address"
  assert_file_contains "$T/$b.err" "roce-hook: $b: address 2001:2:0:10::101 of mlx5_0: an address no running container holds vs held by container $a since "
  assert_file_contains "$T/$b.err" "(fix: pick another address in 2001:2:0:10::100-2001:2:0:10::101, or omit roce.io/ip to get a free one)"
  [ "$(grep -c 'roce-hook:' "$T/$b.err")" = 1 ] || fail "more than one line: $(cat "$T/$b.err")"
  # The pool's other address, then none.
  net_bundle "$T/c"
  start_container "$c" "$T/c" || fail "start c: $(cat "$T/$c.err")"
  net_bundle "$T/d" roce.io/hca=mlx5_0 'echo started'
  rc=0 && run_container "$d" "$T/d" || rc=$?
  [ "$rc" -ne 0 ] || fail "d started with the pool exhausted"
  assert_file_contains "$T/$d.err" "roce-hook: $d: address pool of mlx5_0: a free address in 2001:2:0:10::100-2001:2:0:10::101 vs all 2 held (fix: stop a container that holds one (roce-hook leases lists them), or widen hcas.mlx5_0.pool in the node policy)"
  assert_eq "2001:2:0:10::100 2001:2:0:10::101" "$(held_addresses | tr '\n' ' ' | sed 's/ $//')" "leases"
  # An address of the other family, or outside the pool: refused before
  # anything.
  net_bundle "$T/e" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' 'echo started'
  rc=0 && run_container "$e" "$T/e" || rc=$?
  [ "$rc" -ne 0 ] || fail "e started with an IPv4 address on an IPv6 rail"
  assert_file_contains "$T/$e.err" "roce-hook: $e: annotation roce.io/ip: an address in mlx5_0's pool 2001:2:0:10::100-2001:2:0:10::101 vs '198.18.10.150'"
}

# shim_run BUNDLE: BUNDLE (made with HOOKS=0) run to its end through
# roce-runtime, which execs the runtime under test; its output in $T/out.
shim_run () {
  local id
  id=$(new_id)
  export ROCE_HOOK_CONFIG=$POLICY
  runtime_opts
  defer runtime delete -f "$id"
  "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$1" "$id" </dev/null >"$T/out" 2>"$T/err" ||
    fail "the shim refused: $(cat "$T/err")"
}

# The shim's NCCL variables: an IPv6 rail's range and AF_INET6, so that
# NCCL's GID choice takes the container's IPv6 GID; a dual-stack rail's
# first family, IPv4 (NCCL's default family, left unset).
test_shim_sets_the_nccl_family_and_range () {
  net6_host 1
  HOOKS=0 ANNOTATIONS=roce.io/hca=mlx5_0 CMD='env; grep roce0 /proc/net/if_inet6' make_bundle "$T/b" "$POLICY"
  shim_run "$T/b"
  assert_file_contains "$T/out" "NCCL_IB_ADDR_RANGE=2001:2:0:10::/64"
  assert_file_contains "$T/out" "NCCL_IB_ADDR_FAMILY=AF_INET6"
  assert_file_contains "$T/out" "20010002000000100000000000000100"
}

test_shim_leaves_nccl_on_ipv4_for_a_dual_stack_rail () {
  net6_host 1 dual
  HOOKS=0 ANNOTATIONS=roce.io/hca=mlx5_0 CMD='env' make_bundle "$T/c" "$POLICY"
  shim_run "$T/c"
  assert_file_contains "$T/out" "NCCL_IB_ADDR_RANGE=198.18.10.0/24"
  assert_not_contains "$(cat "$T/out")" "NCCL_IB_ADDR_FAMILY" "env of a dual-stack rail"
}

# check --probe makes the rail a container would get, both addresses of a
# dual-stack one, and sends its ICMP echoes from the IPv4 address to the
# IPv4 gateway; an IPv6-only rail sends ICMPv6 echoes from its IPv6 address
# to its IPv6 gateway.
probe_row6 () { # "STATUS BLOCKING FOUND|WHAT" of check --probe's path-mtu row
  "$HOOK" --config "$POLICY" check --probe --json 2>"$T/probe.err" |
    jq -r '.hcas[0].checks[] | select(.check == "path-mtu") | "\(.status) \(.blocking) \(.found)|\(.what)"'
}

test_check_probe_in_the_rails_family () {
  net6_host 1 dual
  local gw row
  gw=rgw$(rand_hex 3)
  ip netns add "$gw" || fail "netns $gw"
  defer ip netns del "$gw"
  ip link set "rp${NIC#rh}" netns "$gw" && ip -n "$gw" link set "rp${NIC#rh}" up &&
    ip -n "$gw" addr add 198.18.10.1/24 dev "rp${NIC#rh}" || fail "the gateway's port"
  row=$(probe_row6)
  [[ $row =~ ^OK\ false\ MTU\ 9000\ end\ to\ end\ \(8972\ bytes\ echoed\ back\ whole\)\|path\ MTU\ from\ 198\.18\.10\.1[0-9][0-9]\ \(a\ macvlan\ on\ $NIC\)\ to\ 198\.18\.10\.1$ ]] ||
    fail "dual-stack rail's row: $row ($(cat "$T/probe.err"))"
  assert_eq "0" "$("$HOOK" --config "$POLICY" leases --json | jq '.leases | length')" "leases after the probe"
  # The same rail without its IPv4 side.
  jq '.hcas.mlx5_0 |= (del(.gateway, .routes, .subnet6, .pool6, .gateway6, .routes6)
        + { subnet: .subnet6, pool: .pool6, gateway: .gateway6, routes: .routes6 })' "$POLICY" > "$T/p6.json" &&
    mv "$T/p6.json" "$POLICY" || fail "policy"
  ip -n "$gw" addr add 2001:2:0:10::1/64 dev "rp${NIC#rh}" nodad || fail "the gateway's IPv6 address"
  row=$(probe_row6)
  [[ $row =~ ^OK\ false\ MTU\ 9000\ end\ to\ end\ \(8952\ bytes\ echoed\ back\ whole\)\|path\ MTU\ from\ 2001:2:0:10::1[0-9a-f]{2}\ \(a\ macvlan\ on\ $NIC\)\ to\ 2001:2:0:10::1$ ]] ||
    fail "IPv6-only rail's row: $row ($(cat "$T/probe.err"))"
  assert_eq "0" "$("$HOOK" --config "$POLICY" leases --json | jq '.leases | length')" "leases after the IPv6 probe"
}

# check and its node labels speak each family of a rail: the pool of each
# with the addresses held, the room the GID table has for containers of
# the rail (a dual-stack container takes 4 entries: v1 and v2 of each
# address), and NFD labels a pod's affinity asks for a family by.
check_labels () { # the roce.io labels of check --nfd, one a line, sorted
  "$HOOK" --config "$POLICY" check --nfd "$T/labels" >/dev/null 2>&1 || true
  grep -E '^roce.io/(ipv4|ipv6|gid-room|hca\.mlx5_0\.family)=' "$T/labels" | sort | paste -sd' '
}

test_check_and_labels_speak_both_families () {
  net6_host 1 dual
  gid_table mlx5_0 16
  policy_fabric '{ "gid_check": "enforce", "gid_wait_ms": 10000 }'
  fake_gid_kernel mlx5_0 2
  local a out
  a=$(new_id)
  net_bundle "$T/a"
  start_container "$a" "$T/a" || fail "start refused: $(cat "$T/$a.err")"
  out=$("$HOOK" --config "$POLICY" check 2>&1) || true
  assert_contains "$out" "Rail of mlx5_0 (dual-stack): IPv4 198.18.10.0/24, pool 198.18.10.100-198.18.10.199: 100 addresses, 1 held; IPv6 2001:2:0:10::/64, pool 2001:2:0:10::100-2001:2:0:10::1ff: 256 addresses, 1 held" "check's rail line"
  assert_contains "$out" "GID table of mlx5_0 port 1: 5 of 16 used (room for 5 more container addresses: 2 containers of this dual-stack rail, an IPv4 and an IPv6 address each)" "check's GID room"
  assert_eq "dual-stack ipv4 100 1 ipv6 256 1 2" \
    "$("$HOOK" --config "$POLICY" check --json 2>/dev/null | jq -r '.hcas[0] | [.families, (.nets[] | .family, .addresses, .held), .gid_tables[0].room_containers] | join(" ")')" "check --json"
  assert_eq "roce.io/gid-room=2 roce.io/hca.mlx5_0.family=dual-stack roce.io/ipv4=true roce.io/ipv6=true" \
    "$(check_labels)" "labels of a dual-stack rail"
  runtime delete -f "$a" || fail "delete"
  # Its lease released (the poststop's reaper) before check counts them.
  leases_settled "$POLICY" >/dev/null
  # The rail without its IPv4 side: a container takes 2 entries.
  jq '.hcas.mlx5_0 |= (del(.gateway, .routes, .subnet6, .pool6, .gateway6, .routes6)
        + { subnet: .subnet6, pool: .pool6, gateway: .gateway6, routes: .routes6 })' "$POLICY" > "$T/p6.json" &&
    mv "$T/p6.json" "$POLICY" || fail "policy"
  out=$("$HOOK" --config "$POLICY" check 2>&1) || true
  assert_contains "$out" "Rail of mlx5_0 (ipv6): IPv6 2001:2:0:10::/64, pool 2001:2:0:10::100-2001:2:0:10::1ff: 256 addresses, 0 held" "check's rail line"
  assert_eq "roce.io/gid-room=5 roce.io/hca.mlx5_0.family=ipv6 roce.io/ipv4=false roce.io/ipv6=true" \
    "$(check_labels)" "labels of an IPv6 rail"
  # A policy that keeps the link-local address: 2 entries more a container,
  # as the start counts them (11 free entries: 2 containers, not 5).
  jq '.fabric.ipv6_link_local = true' "$POLICY" > "$T/pll.json" && mv "$T/pll.json" "$POLICY" || fail "policy"
  out=$("$HOOK" --config "$POLICY" check 2>&1) || true
  assert_contains "$out" "GID table of mlx5_0 port 1: 5 of 16 used (room for 5 more container addresses: 2 containers of this ipv6 rail, an address and its IPv6 link-local one each)" "check's GID room with link-local addresses"
  assert_eq "roce.io/gid-room=2 roce.io/hca.mlx5_0.family=ipv6 roce.io/ipv4=false roce.io/ipv6=true" \
    "$(check_labels)" "labels of an IPv6 rail with link-local addresses"
  # A kernel without IPv6 (booted with ipv6.disable=1: no /proc/sys/net/ipv6,
  # here hidden under a tmpfs in a mount namespace of the check's own): the
  # ipv6 row fails, the node is not ready and not labelled for IPv6.
  out=$(unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs roce-noipv6 /proc/sys/net &&
        exec "$0" --config "$1" check --wide --nfd "$2"' "$HOOK" "$POLICY" "$T/noipv6.labels" 2>&1) &&
    fail "check passed on a kernel without IPv6: $out"
  assert_contains "$out" "boot without ipv6.disable=1, or take the IPv6 side out of hcas.mlx5_0 in $POLICY" "check's ipv6 row"
  assert_contains "$out" "off (no /proc/sys/net/ipv6)" "check's ipv6 row"
  assert_file_contains "$T/noipv6.labels" "roce.io/ipv6=false"
  assert_file_contains "$T/noipv6.labels" "roce.io/ready=false"
}

# A container whose network namespace has IPv6 off (a sandbox made with
# net.ipv6.conf.{all,default}.disable_ipv6=1) cannot take an IPv6 rail: one
# line says so, and nothing is left on the host or in the namespace.
test_ipv6_rail_refused_where_ipv6_is_off () {
  net6_host 1 dual
  local id ns out
  ns=r6off$(rand_hex 3)
  ip netns add "$ns" || fail "netns $ns"
  defer ip netns del "$ns"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 ||
    fail "sysctl in $ns"
  id=$(new_id)
  NETNS_PATH=/run/netns/$ns net_bundle "$T/b" roce.io/hca=mlx5_0 'echo started'
  run_container "$id" "$T/b" && fail "started on an IPv6 rail with IPv6 off"
  out=$(cat "$T/$id.err")
  assert_contains "$out" "roce-hook: $id: IPv6 in the container's network namespace (mlx5_0's rail is dual-stack): on vs off (net.ipv6.conf.all.disable_ipv6 = 1) (fix: leave IPv6 on in the container (no net.ipv6.conf.all.disable_ipv6 sysctl in its pod or spec), or ask for an HCA whose rail is IPv4 only (roce.io/hca))" "refusal"
  [ "$(grep -c 'roce-hook:' "$T/$id.err")" = 1 ] || fail "more than one line: $out"
  assert_not_contains "$(cat "$T/$id.out")" "started" "output of the refused container"
  assert_eq "" "$(held_addresses)" "leases after the refusal"
  assert_eq "lo" "$(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | paste -sd' ')" "links in the namespace"
  # The spec turning it off (the runtime writes linux.sysctl after the
  # hooks, which would take the address away): refused the same way.
  id=$(new_id)
  net_bundle "$T/c" roce.io/hca=mlx5_0 'echo started'
  jq '.linux.sysctl = { "net/ipv6/conf/default/disable_ipv6": "1" }' "$T/c/config.json" > "$T/c/config.new" &&
    mv "$T/c/config.new" "$T/c/config.json" || fail "sysctl in the spec"
  run_container "$id" "$T/c" && fail "started with the spec turning IPv6 off"
  assert_file_contains "$T/$id.err" "roce-hook: $id: IPv6 in the container's network namespace (mlx5_0's rail is dual-stack): on vs off (net.ipv6.conf.default.disable_ipv6 = 1 in the spec's linux.sysctl) (fix: "
  assert_eq "" "$(held_addresses)" "leases after the second refusal"
  # The rail without its IPv6 side starts in the namespace with IPv6 off.
  jq '.hcas.mlx5_0 |= del(.subnet6, .pool6, .gateway6, .routes6)' "$POLICY" > "$T/p4.json" &&
    mv "$T/p4.json" "$POLICY" || fail "policy"
  id=$(new_id)
  NETNS_PATH=/run/netns/$ns net_bundle "$T/d" roce.io/hca=mlx5_0 'echo started'
  run_container "$id" "$T/d" || fail "an IPv4 rail refused where IPv6 is off: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"
}

run_tests
