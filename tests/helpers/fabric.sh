# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers of the fabric tests (sourced after lib.sh and net.sh).

# policy_fabric JSON: the policy's `fabric` object.
policy_fabric () {
  sed -i "s|^  \"hcas\": {|  \"fabric\": $1,\n  \"hcas\": {|" "$POLICY"
  grep -q '"fabric"' "$POLICY" || fail "policy without fabric: $(cat "$POLICY")"
}

# peer_ns NIC ADDR/PREFIX [EXTRA_ADDR]: the NIC's "switch" end (its veth
# peer) moved into a network namespace of its own holding ADDR (the rail's
# gateway or another host), and EXTRA_ADDR/32 on its loopback (a routed
# destination).  Prints the namespace's name.
peer_ns () {
  local nic=$1 addr=$2 extra=${3:-} name peer
  name=rq$(rand_hex 3) peer=rp${nic#rh}
  ip netns add "$name" || fail "ip netns add $name"
  defer ip netns del "$name"
  ip link set "$peer" netns "$name" || fail "move $peer"
  ip netns exec "$name" sh -c "ip link set lo up && ip addr add $addr dev $peer && ip link set $peer up" ||
    fail "address $addr in $name"
  if [ -n "$extra" ]; then
    ip netns exec "$name" ip addr add "$extra/32" dev lo || fail "address $extra in $name"
  fi
  echo "$name"
}

# The ICMP echo requests a namespace has received.
in_echos () {
  ip netns exec "$1" awk '/^Icmp:/ { if (c) { print $c; exit } for (i = 1; i <= NF; i++) if ($i == "InEchos") c = i }' /proc/net/snmp
}

# gid_table HCA SIZE: port 1 of the fake HCA gets SIZE slots; the ones
# past those fake_hca wrote are empty (the zero GID, as the kernel prints).
gid_table () {
  local d=$FAKE_SYSFS/class/infiniband/$1/ports/1 i
  for ((i = 1; i < $2; i++)); do
    [ -e "$d/gids/$i" ] || echo "0000:0000:0000:0000:0000:0000:0000:0000" > "$d/gids/$i"
  done
}

# gid_v4 ADDR: the IPv4-mapped GID as sysfs prints it.
gid_v4 () {
  local IFS=.
  # shellcheck disable=SC2086
  set -- $1
  printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}

# gid_put HCA INDEX GID TYPE NDEV: one GID entry, attributes first (the
# hook reads the GID, then its type and netdev).
gid_put () {
  local d=$FAKE_SYSFS/class/infiniband/$1/ports/1
  echo "$4" > "$d/gid_attrs/types/$2"
  echo "$5" > "$d/gid_attrs/ndevs/$2"
  echo "$3" > "$d/gids/$2.new" && mv "$d/gids/$2.new" "$d/gids/$2"
}

# fake_gid_kernel HCA: plays the kernel's roce_gid_mgmt in the background:
# once the lease store holds an address of HCA, its v1 and v2 GIDs appear on
# port 1 (at the first two empty slots), with the interface as their netdev.
fake_gid_kernel () {
  local hca=$1
  (
    local i addr ifname d=$FAKE_SYSFS/class/infiniband/$hca/ports/1 free=()
    for ((i = 0; i < 500; i++)); do
      addr=$(jq -r --arg h "$hca" '.. | objects | select(.hca? == $h and .address?) |
        "\(.address) \(.ifname)"' "$T"/state/holders/[!.]* 2>/dev/null | head -1)
      [ -n "$addr" ] && break
      sleep 0.01
    done
    [ -n "$addr" ] || exit 1
    read -r addr ifname <<<"$addr"
    for f in $(ls "$d/gids" | sort -n); do
      [ "$(cat "$d/gids/$f")" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && free+=("$f")
    done
    sleep 0.05 # wait-ok: the fake kernel lags, as the real one does (the fixture, not a wait)
    gid_put "$hca" "${free[0]}" "$(gid_v4 "$addr")" "IB/RoCE v1" "$ifname"
    gid_put "$hca" "${free[1]}" "$(gid_v4 "$addr")" "RoCE v2" "$ifname"
  ) &
  defer kill "$!"
}
