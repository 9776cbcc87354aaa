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

# gid_of ADDR: the GID of an address as sysfs prints it: an IPv4 address
# mapped, an IPv6 address itself in full (the kernel's %pI6).
gid_of () {
  case $1 in
    *:*) ip6_full "$1" ;;
    *) gid_v4 "$1" ;;
  esac
}

# fake_gid_kernel HCA [N]: plays the kernel's roce_gid_mgmt in the
# background: once the lease store holds N addresses of HCA (1; a
# dual-stack rail's 2), the v1 and v2 GIDs of each appear on port 1 (at the
# first empty slots, in the store's order), with the interface as their
# netdev.
fake_gid_kernel () {
  local hca=$1 want=${2:-1}
  (
    local k lines=() d=$FAKE_SYSFS/class/infiniband/$hca/ports/1 free=() addr ifname
    # A deadline, not a count of tries (each is a jq run): the start it
    # waits for takes seconds on a loaded host.
    local end=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$end" ]; do
      mapfile -t lines < <(jq -r --arg h "$hca" '.. | objects | select(.hca? == $h and .address?) |
        "\(.address) \(.ifname)"' "$T"/state/holders/[!.]* 2>/dev/null)
      [ "${#lines[@]}" -ge "$want" ] && break
      sleep 0.01
    done
    [ "${#lines[@]}" -ge "$want" ] || exit 1
    for f in $(ls "$d/gids" | sort -n); do
      [ "$(cat "$d/gids/$f")" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && free+=("$f")
    done
    sleep 0.05 # wait-ok: the fake kernel lags, as the real one does (the fixture, not a wait)
    for ((k = 0; k < want; k++)); do
      read -r addr ifname <<<"${lines[$k]}"
      gid_put "$hca" "${free[$((2 * k))]}" "$(gid_of "$addr")" "IB/RoCE v1" "$ifname"
      gid_put "$hca" "${free[$((2 * k + 1))]}" "$(gid_of "$addr")" "RoCE v2" "$ifname"
    done
  ) &
  defer kill "$!"
}
