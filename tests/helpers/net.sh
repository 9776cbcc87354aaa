# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers of the network tests (sourced after lib.sh).

# net_host [N]: N fake NICs (MTU 9000) in $NICS (and $NIC, the first), HCAs
# mlx5_0..mlx5_<N-1> on them, and $POLICY: HCA i has subnet 198.18.1<i>.0/24,
# pool .100-.$NET_POOL_LAST (199), gateway .1 and the route 198.19.1<i>.0/24.
# QoS is off: these tests are about the network only.
net_host () {
  local n=${1:-1} i specs=()
  need_root
  need_cmd "$OCI_RUNTIME"
  need_cmd nsenter
  NICS=()
  for ((i = 0; i < n; i++)); do
    NICS+=("$(fake_nic 9000)")
    fake_hca "mlx5_$i" "$i" "${NICS[$i]}"
    specs+=("mlx5_$i ${NICS[$i]} 1$i")
  done
  NIC=${NICS[0]}
  POLICY=$T/policy.json
  write_policy "$POLICY" off "${specs[@]}"
  local last=${NET_POOL_LAST:-199}
  for ((i = 0; i < n; i++)); do
    sed -i "s|\"pool\": \"198.18.1$i.100-198.18.1$i.199\" }|\"pool\": \"198.18.1$i.100-198.18.1$i.$last\", \"gateway\": \"198.18.1$i.1\", \"routes\": [\"198.19.1$i.0/24\"] }|" "$POLICY"
  done
  grep -q '"gateway": "198.18.10.1"' "$POLICY" || fail "policy not extended: $(cat "$POLICY")"
}

# net6_host [N] [dual]: net_host's NICs and HCAs with IPv6 rails: HCA i has
# subnet 2001:2:0:1<i>::/64, pool ::100-::$NET6_POOL_LAST (1ff), gateway
# ::1 and the route 2001:2:1:1<i>::/64 (the IPv6 benchmarking range).  With
# `dual`, its IPv4 keys stay and those are subnet6, pool6, gateway6 and
# routes6: a dual-stack rail.
net6_host () {
  local n=${1:-1} dual=${2:-} i sfx="" last=${NET6_POOL_LAST:-1ff}
  need_cmd jq
  net_host "$n"
  [ "$dual" = dual ] && sfx=6
  for ((i = 0; i < n; i++)); do
    jq --arg h "mlx5_$i" --arg p "2001:2:0:1$i" --arg r "2001:2:1:1$i" --arg s "$sfx" \
       --arg last "$last" --argjson dual "$([ "$dual" = dual ] && echo true || echo false)" '
      .hcas[$h] |= ((if $dual then . else del(.gateway, .routes) end) + {
        ("subnet" + $s): ($p + "::/64"), ("pool" + $s): ($p + "::100-" + $p + "::" + $last),
        ("gateway" + $s): ($p + "::1"), ("routes" + $s): [$r + "::/64"] })' "$POLICY" > "$POLICY.new" &&
      mv "$POLICY.new" "$POLICY" || fail "policy not made IPv6: $(cat "$POLICY")"
  done
  grep -q '"2001:2:0:10::/64"' "$POLICY" || fail "policy without IPv6: $(cat "$POLICY")"
}

# ip6_full ADDR: an IPv6 address with its eight groups in full
# ("2001:0002:0000:0010:0000:0000:0000:0100"), as sysfs and the etcd keys
# spell it.
ip6_full () {
  local a=$1 head tail h=() t=() out=() x i
  if [[ $a == *::* ]]; then head=${a%%::*} tail=${a#*::}; else head=$a tail=; fi
  [ -n "$head" ] && IFS=: read -ra h <<<"$head"
  [ -n "$tail" ] && IFS=: read -ra t <<<"$tail"
  out=("${h[@]}")
  for ((i = ${#h[@]} + ${#t[@]}; i < 8; i++)); do out+=(0); done
  out+=("${t[@]}")
  for x in "${out[@]}"; do printf '%04x\n' "0x$x"; done | paste -sd:
}

# ns_addr6 PID IF: the global IPv6 addresses/prefix of IF in PID's network
# namespace, with their flags (tentative, dadfailed), one a line.
ns_addr6 () {
  nsenter -t "$1" -n ip -o -6 addr show dev "$2" 2>/dev/null |
    awk '{ f = ""; for (i = 5; i <= NF; i++) if ($i ~ /^(tentative|dadfailed|optimistic)$/) f = f " " $i; print $4 " " $6 f }'
}

# net_bundle DIR [ANNOTATIONS] [CMD]: a bundle asking for the HCAs.
net_bundle () {
  ANNOTATIONS=${2:-roce.io/hca=mlx5_0} CMD=${3:-sleep 60} make_bundle "$1" "$POLICY"
}

# The IPv4 address/prefix of IF in the network namespace of PID (host tools,
# inside the container's namespace).
ns_addr () { # PID IF
  nsenter -t "$1" -n ip -o -4 addr show dev "$2" 2>/dev/null | awk '{print $4}'
}

# The listing once no lease is being released (leases_settled).
hook_leases () {
  leases_settled "$POLICY" >/dev/null 2>&1
  "$HOOK" --config "$POLICY" leases "$@"
}

# gc_until TEXT: gc, again every 0.1 s until its output has TEXT, for the
# bound of the reaper's own wait (LEASE_SETTLE_S: a deadline, not a count of
# tries), and prints the last output.  A namespace whose last holder has
# just gone may stay a moment longer (the kernel frees a socket made in it
# one RCU grace period later, and tears the namespace down in a workqueue
# of its own: seconds on a loaded host), and gc releases only what the
# kernel has let go.
gc_until () {
  local want=$1 out end=$((SECONDS + LEASE_SETTLE_S))
  while :; do
    out=$("$HOOK" --config "$POLICY" gc) || { printf '%s\n' "$out"; return 1; }
    case $out in *"$want"*) break ;; esac
    [ "$SECONDS" -lt "$end" ] || break
    sleep 0.1
  done
  printf '%s\n' "$out"
}

# The addresses the store holds, sorted, one a line.
held_addresses () {
  hook_leases --json | sed -n 's/.*"address": "\([0-9a-f.:]*\)".*/\1/p' | sort
}

# A private network namespace pinned by a bind mount, as a pod sandbox's is:
# prints its path.
pinned_netns () {
  local name=rn$(rand_hex 3)
  ip netns add "$name" || fail "ip netns add $name"
  defer ip netns del "$name"
  echo "/run/netns/$name"
}

# The OCI state runc would give the hook, for a process PID.
oci_state () { # ID PID BUNDLE
  printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%s,"bundle":"%s"}' "$1" "$2" "$3"
}

# A process in a network namespace of its own, as a container's init before
# its prestart hooks: prints its pid.
netns_process () {
  unshare -n sleep 120 </dev/null >/dev/null 2>&1 &
  local pid=$!
  defer kill -9 "$pid"
  # Wait until it has its own namespace.
  local i
  for ((i = 0; i < 100; i++)); do
    [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] &&
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" != "$(command -v unshare)" ] && break
    sleep 0.02
  done
  echo "$pid"
}

# dead_store DIR N PARENT_IFINDEX: a lease store at DIR of N holders of this
# boot whose network namespaces are gone (inodes and namespace ids nothing
# has), in the layout a start writes: a file per holder hard-linked from
# addrs/ and containers/, the namespace's id, the macvlan's parent and MAC;
# addresses from 198.18.16.10 on.  What a node keeps after its containers
# died without a poststop (gc's work: contrib/bench/gc.sh).
dead_store () {
  rm -rf "$1"
  mkdir -p "$1"
  python3 - "$2" "$1" "$(cat /proc/sys/kernel/random/boot_id)" "$3" <<'PY'
import json, os, sys
n, d, boot, parent = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
for sub in ("holders", "addrs", "containers"):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
dev = os.stat("/proc/self/ns/net").st_dev
for i in range(n):
    a = ((198 << 24) | (18 << 16) | (16 << 8)) + 10 + i
    ip = "%d.%d.%d.%d" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255)
    ino = 4026600000 + i
    key = "%s_%d_%d" % (boot, dev, ino)
    mac = "02:ce:%02x:%02x:%02x:%02x" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255)
    h = {"netns": {"boot_id": boot, "dev": dev, "ino": ino, "cookie": 900000 + i},
         "owner": "dead-%d" % i, "containers": ["dead-%d" % i], "since": 1700000000,
         "nsid": 100000 + i,
         "leases": [{"hca": "mlx5_0", "address": ip, "ifname": "roce0",
                     "link": {"parent": parent, "mac": mac}}]}
    with open(os.path.join(d, "holders", key), "w") as f:
        json.dump(h, f, separators=(",", ":"))
    os.link(os.path.join(d, "holders", key), os.path.join(d, "addrs", ip))
    os.link(os.path.join(d, "holders", key), os.path.join(d, "containers", "dead-%d" % i))
PY
}
