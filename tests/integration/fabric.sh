# SPDX-License-Identifier: Apache-2.0
# Fabric-correct networking: per-rail routing tables and rules,
# ARP/devconf hygiene, IPv6 link-local off, the MAC derived from the
# address, the RFC 5227 probe, the RoCE v2 GID waited for and recorded.
# roce-suite: each-runtime test_pod_member_gets_the_rails_file_with_the_pods_gid
# roce-suite: memcheck test_two_rails_with_the_same_destination_get_their_own_tables
# roce-suite: memcheck test_duplicate_address_probe_refuses_a_taken_address
# roce-suite: memcheck test_gid_found_is_recorded_and_listed
# roce-suite: memcheck test_pod_member_gets_the_rails_file_with_the_pods_gid
# roce-suite: memcheck test_rails_file_never_follows_a_symlink_out_of_the_rootfs
# roce-suite: memcheck test_gid_table_full_is_a_finding
# roce-suite: valgrind test_gid_found_is_recorded_and_listed
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/fabric.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/devices.sh"

# Both rails route the same remote range, each through its own gateway.
same_destination_host () {
  net_host 2
  sed -i 's|"routes": \["198.19.1[01].0/24"\]|"routes": ["198.19.0.0/16"]|' "$POLICY"
  [ "$(grep -c '"198.19.0.0/16"' "$POLICY")" = 2 ] || fail "policy: $(cat "$POLICY")"
}

test_two_rails_with_the_same_destination_get_their_own_tables () {
  same_destination_host
  local id b=$T/b out
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0,mlx5_1 'sleep 60'
  start_container "$id" "$b" || fail "start refused: $(cat "$T/$id.err")"
  out=$(runtime exec "$id" ip rule) || fail "ip rule: $out"
  assert_contains "$out" "100:	from 198.18.10.100 lookup 100" "rules"
  assert_contains "$out" "101:	from 198.18.11.100 lookup 101" "rules"
  out=$(runtime exec "$id" ip route show table 100)
  assert_contains "$out" "198.18.10.0/24 dev roce0 scope link" "table 100"
  assert_contains "$out" "src 198.18.10.100" "table 100"
  assert_contains "$out" "198.19.0.0/16 via 198.18.10.1 dev roce0" "table 100"
  assert_not_contains "$out" "roce1" "table 100"
  out=$(runtime exec "$id" ip route show table 101)
  assert_contains "$out" "198.18.11.0/24 dev roce1 scope link" "table 101"
  assert_contains "$out" "src 198.18.11.100" "table 101"
  assert_contains "$out" "198.19.0.0/16 via 198.18.11.1 dev roce1" "table 101"
  assert_not_contains "$out" "roce0" "table 101"
  # The main table keeps only the subnets.
  out=$(runtime exec "$id" ip route)
  assert_contains "$out" "198.18.10.0/24 dev roce0" "main table"
  assert_contains "$out" "198.18.11.0/24 dev roce1" "main table"
  assert_not_contains "$out" "198.19." "main table"
  assert_not_contains "$out" "default" "main table"
  # The rails file lists both (no GID verified: gid_check follows qos.mode off).
  out=$(runtime exec "$id" cat /dev/roce/rails)
  assert_contains "$out" "mlx5_0 roce0 198.18.10.100 24 - - v2 ${NICS[0]}" "rails file"
  assert_contains "$out" "mlx5_1 roce1 198.18.11.100 24 - - v2 ${NICS[1]}" "rails file"
}

test_traffic_from_each_address_leaves_on_its_own_rail () {
  same_destination_host
  local id b=$T/b p0 p1 e0 e1
  # Each NIC's switch side: the rail's gateway, and 198.19.0.1, a host of
  # the routed range that both rails reach.
  p0=$(peer_ns "${NICS[0]}" 198.18.10.1/24 198.19.0.1)
  p1=$(peer_ns "${NICS[1]}" 198.18.11.1/24 198.19.0.1)
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0,mlx5_1 'sleep 60'
  start_container "$id" "$b" || fail "start refused: $(cat "$T/$id.err")"
  e0=$(in_echos "$p0") e1=$(in_echos "$p1")
  runtime exec "$id" ping -c 3 -W 2 -I 198.18.10.100 198.19.0.1 >/dev/null || fail "ping from rail 0"
  assert_eq "$((e0 + 3)) $e1" "$(in_echos "$p0") $(in_echos "$p1")" "echos at the rails' switches after rail 0's ping"
  runtime exec "$id" ping -c 2 -W 2 -I 198.18.11.100 198.19.0.1 >/dev/null || fail "ping from rail 1"
  assert_eq "$((e0 + 3)) $((e1 + 2))" "$(in_echos "$p0") $(in_echos "$p1")" "echos after rail 1's ping"
}

test_devconf_reads_back_and_no_link_local_by_default () {
  net_host 2
  # Both rails in one subnet (pools apart): ARP and rp_filter go loose.
  sed -i 's|"subnet": "198.18.11.0/24", "pool": "198.18.11.100-198.18.11.199", "gateway": "198.18.11.1", "routes": \["198.19.11.0/24"\]|"subnet": "198.18.10.0/24", "pool": "198.18.10.200-198.18.10.250"|' "$POLICY"
  grep -q '198.18.10.200' "$POLICY" || fail "policy: $(cat "$POLICY")"
  local id b=$T/b out
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0,mlx5_1 'sleep 60'
  start_container "$id" "$b" || fail "start refused: $(cat "$T/$id.err")"
  out=$(runtime exec "$id" sh -c 'for i in roce0 roce1; do cd /proc/sys/net/ipv4/conf/$i;
     echo "$i $(cat arp_notify) $(cat arp_ignore) $(cat arp_announce) $(cat rp_filter)"; done;
     ip -6 addr show; cat /proc/sys/net/ipv6/conf/roce0/addr_gen_mode') || fail "exec: $out"
  assert_contains "$out" "roce0 1 1 2 2" "roce0's arp_notify arp_ignore arp_announce rp_filter"
  assert_contains "$out" "roce1 1 1 2 2" "roce1's"
  assert_not_contains "$out" "fe80" "IPv6 addresses"
  assert_contains "$out" "$(printf '\n1')" "addr_gen_mode (1: none)"

  # One rail alone: only arp_notify; link-local on where the policy asks.
  policy_fabric '{ "ipv6_link_local": true, "arp_ignore": 8 }'
  id=$(new_id)
  net_bundle "$T/c" roce.io/hca=mlx5_0 'sleep 60'
  start_container "$id" "$T/c" || fail "start refused: $(cat "$T/$id.err")"
  out=$(runtime exec "$id" sh -c 'cd /proc/sys/net/ipv4/conf/roce0;
     echo "roce0 $(cat arp_notify) $(cat arp_ignore) $(cat arp_announce) $(cat rp_filter)"; sleep 1; ip -6 addr show dev roce0') || fail "exec: $out"
  assert_contains "$out" "roce0 1 8 0 " "roce0's devconf, one rail, arp_ignore 8 from the policy"
  assert_contains "$out" "inet6 fe80::" "IPv6 link-local (fabric.ipv6_link_local)"
}

test_same_address_gets_the_same_mac () {
  net_host 1
  local id b=$T/b m1 m2
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0 'cat /sys/class/net/roce0/address'
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  m1=$(cat "$T/$id.out")
  runtime delete -f "$id"
  assert_eq "" "$(held_addresses)" "leases after the first"
  id=$(new_id)
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  m2=$(cat "$T/$id.out")
  # 02:ce (the default fabric.mac_prefix), then 198.18.10.100.
  assert_eq "02:ce:c6:12:0a:64" "$m1" "MAC of 198.18.10.100"
  assert_eq "$m1" "$m2" "MAC on the second start"
}

test_duplicate_address_probe_refuses_a_taken_address () {
  net_host 1
  policy_fabric '{ "dad_probe_ms": 300 }'
  local id b=$T/b p mac out
  # Another host on the rail already holds the first pool address.
  p=$(peer_ns "$NIC" 198.18.10.100/24)
  mac=$(ip netns exec "$p" cat "/sys/class/net/rp${NIC#rh}/address")
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0 'true'
  run_container "$id" "$b" && fail "started on a taken address"
  out=$(cat "$T/$id.err")
  assert_contains "$out" "address 198.18.10.100 of mlx5_0 on $NIC: no other host on the link answering for it (RFC 5227 probe) vs in use by MAC $mac (fix: " "refusal"
  assert_eq "" "$(held_addresses)" "leases after the refusal"
  # A free address passes the probe.
  ip netns exec "$p" ip addr del 198.18.10.100/24 dev "rp${NIC#rh}"
  ip netns exec "$p" ip addr add 198.18.10.1/24 dev "rp${NIC#rh}"
  id=$(new_id)
  net_bundle "$T/c" roce.io/hca=mlx5_0 'ping -c 1 -W 2 198.18.10.1'
  run_container "$id" "$T/c" || fail "refused a free address: $(cat "$T/$id.err")"
}

test_gid_found_is_recorded_and_listed () {
  need_cmd jq
  net_host 1
  gid_table mlx5_0 16
  # The hook's wait for the GIDs ends once they are there: its bound is
  # only the fake kernel's (a background job, a jq run a try) worst case on
  # a loaded host, not a time under test (10 s, the policy's largest).
  policy_fabric '{ "gid_check": "enforce", "gid_wait_ms": 10000 }'
  fake_gid_kernel mlx5_0
  local id b=$T/b out
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0 'sleep 60'
  start_container "$id" "$b" || fail "start refused: $(cat "$T/$id.err")"
  out=$(hook_leases --json)
  # Index 0 is the default GID; the kernel put v1 at 1 and v2 at 2.
  assert_eq "2" "$(echo "$out" | jq '.leases[0].gid_index')" "gid_index in leases --json"
  assert_file_contains "$T/hook.log" "gid: roce0 198.18.10.100 is RoCE v2 GID index 2 of mlx5_0 port 1"
  # The container's rails file names it; nobody in there can change it.
  out=$(runtime exec "$id" cat /dev/roce/rails) || fail "rails file: $out"
  assert_contains "$out" "# hca ifname address prefix gid_port gid_index roce netdev" "rails file"
  assert_contains "$out" "mlx5_0 roce0 198.18.10.100 24 1 2 v2 $NIC" "rails file"
  runtime exec "$id" sh -c 'echo x > /dev/roce/rails' 2>/dev/null && fail "the rails file is writable"
  out=$(runtime exec "$id" stat -c '%a %U' /dev/roce/rails)
  assert_eq "444 root" "$out" "the rails file's mode"
}

test_pod_member_gets_the_rails_file_with_the_pods_gid () {
  need_cmd jq
  net_host 1
  gid_table mlx5_0 16
  policy_fabric '{ "gid_check": "enforce", "gid_wait_ms": 10000 }'
  fake_gid_kernel mlx5_0
  local ns a b out
  ns=$(pinned_netns)
  a=$(new_id) b=$(new_id)
  NETNS_PATH=$ns net_bundle "$T/a" roce.io/hca=mlx5_0 'sleep 60'
  start_container "$a" "$T/a" || fail "sandbox refused: $(cat "$T/$a.err")"
  # The app container joins the sandbox's network: same address, same GID.
  NETNS_PATH=$ns net_bundle "$T/b" roce.io/hca=mlx5_0 'cat /dev/roce/rails'
  run_container "$b" "$T/b" || fail "app refused: $(cat "$T/$b.err")"
  assert_file_contains "$T/$b.out" "mlx5_0 roce0 198.18.10.100 24 1 2 v2 $NIC"
}

# An image without a /dev tmpfs, whose /dev/roce/rails or /dev/roce is a
# symlink out of the rootfs: the file lands inside the rootfs (the link
# itself is replaced), never on the host.
test_rails_file_never_follows_a_symlink_out_of_the_rootfs () {
  net_host 1
  local id b out
  mkdir -p "$T/victim"
  echo host > "$T/victim/rails"
  b=$T/link-file
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0 'cat /dev/roce/rails'
  bundle_drop_dev_tmpfs "$b"
  mkdir -p "$b/rootfs/dev/roce" && ln -s "$T/victim/rails" "$b/rootfs/dev/roce/rails"
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "mlx5_0 roce0 198.18.10.100 24 - - v2 $NIC"
  assert_eq "host" "$(cat "$T/victim/rails")" "the symlink's target on the host"
  runtime delete -f "$id"
  # Its reaper gives .100 back before the next start expects it.
  assert_eq "" "$(held_addresses)" "leases once the first container is deleted"

  b=$T/link-dir
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0 'cat /etc/rails'
  bundle_drop_dev_tmpfs "$b"
  ln -s /etc "$b/rootfs/dev/roce"
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "mlx5_0 roce0 198.18.10.100 24 - - v2 $NIC"
  [ ! -e /etc/rails ] || fail "a rails file landed in the host's /etc"
}

test_gid_table_full_is_a_finding () {
  need_cmd jq
  net_host 1
  gid_table mlx5_0 4
  gid_put mlx5_0 1 "$(gid_v4 198.18.10.250)" "IB/RoCE v1" eth9
  gid_put mlx5_0 2 "$(gid_v4 198.18.10.250)" "RoCE v2" eth9
  gid_put mlx5_0 3 "$(gid_v4 198.18.10.251)" "RoCE v2" eth8
  policy_fabric '{ "gid_check": "enforce" }'
  local id b=$T/b out
  id=$(new_id)
  net_bundle "$b" roce.io/hca=mlx5_0 'true'
  run_container "$id" "$b" && fail "started with a full GID table"
  out=$(cat "$T/$id.err")
  assert_contains "$out" "RoCE GID table of mlx5_0 port 1: 2 free entries (v1 and v2 of the container's address) vs 4 of 4 used (fix: " "refusal"
  assert_eq "" "$(held_addresses)" "leases after the refusal"
  out=$("$HOOK" --config "$POLICY" check 2>&1) || true
  assert_contains "$out" "GID table of mlx5_0 port 1: 4 of 4 used (room for 0 more container addresses)" "check"
  assert_eq "4 4" "$("$HOOK" --config "$POLICY" check --json | jq -r '.hcas[0].gid_tables[0] | "\(.size) \(.used)"')" "check --json"
  # Under warn: it starts, and the log says why it may not work.
  sed -i 's|"gid_check": "enforce"|"gid_check": "warn"|' "$POLICY"
  id=$(new_id)
  run_container "$id" "$b" || fail "warn refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "gid check (warn): RoCE GID table of mlx5_0 port 1: 2 free entries"
}

test_gid_missing_is_a_finding () {
  net_host 1
  gid_table mlx5_0 16
  policy_fabric '{ "gid_check": "enforce", "gid_wait_ms": 100 }'
  local id b=$T/b out ns
  # A pod sandbox's namespace outlives the refusal: nothing may stay in it.
  ns=$(pinned_netns)
  id=$(new_id)
  NETNS_PATH=$ns net_bundle "$b" roce.io/hca=mlx5_0 'true'
  run_container "$id" "$b" && fail "started without its GID"
  out=$(cat "$T/$id.err")
  assert_contains "$out" "RoCE v2 GID of 198.18.10.100 (roce0) on mlx5_0: an entry $(gid_v4 198.18.10.100) on roce0 within 100 ms vs none (fix: check that $NIC is the RoCE netdev of mlx5_0" "refusal"
  assert_eq "" "$(held_addresses)" "leases after the refusal"
  out=$(ip netns exec "$(basename "$ns")" sh -c 'ip rule; ip route show table 100; ip -o link')
  assert_not_contains "$out" "lookup 100" "rules left in the pod's namespace"
  assert_not_contains "$out" "roce0" "links and routes left in the pod's namespace"
}

run_tests
