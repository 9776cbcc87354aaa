# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Fake-host pieces for the QoS gate and `roce-hook check`: what this machine
# cannot have (MLNX_OFED's per-priority ECN files, GID table entries, the
# ib_core module parameter), as files in the test's fake sysfs tree.  DCB
# itself is never faked: the veth NIC answers EOPNOTSUPP like any netdev
# without DCB.

# fake_ecn NETDEV roce_np|roce_rp PRIO VALUE  (VALUE "" = the empty read
# MLNX_OFED gives when its firmware query fails)
fake_ecn () {
  fake_sysfs
  local d=$FAKE_SYSFS/class/net/$1/ecn/$2/enable
  mkdir -p "$d"
  printf '%s' "$4" > "$d/$3"
  [ -z "$4" ] || echo >> "$d/$3"
}

# fake_gid HCA PORT INDEX GID TYPE NDEV
fake_gid () {
  fake_sysfs
  local p=$FAKE_SYSFS/class/infiniband/$1/ports/$2
  mkdir -p "$p/gids" "$p/gid_attrs/types" "$p/gid_attrs/ndevs"
  echo "$4" > "$p/gids/$3"
  echo "$5" > "$p/gid_attrs/types/$3"
  echo "$6" > "$p/gid_attrs/ndevs/$3"
}

# fake_netns_mode Y|N: ib_core's netns_mode module parameter.
fake_netns_mode () {
  fake_sysfs
  mkdir -p "$FAKE_SYSFS/module/ib_core/parameters"
  echo "$1" > "$FAKE_SYSFS/module/ib_core/parameters/netns_mode"
}

# The one refusal line a user sees for a NIC without DCB under enforce.
qos_no_dcb_line () { # ID NIC POLICY
  printf "roce-hook: %s: PFC on priority 3 of %s (mlx5_0): enabled vs DCB not supported by this netdev (EOPNOTSUPP): the host cannot prove it is lossless (fix: set hcas.mlx5_0.netdev in %s to the HCA's DCB-capable PF netdev, or set qos.mode to 'warn' there to run on an unproven fabric)" "$1" "$2" "$3"
}

# The table row of CHECK for HCA, columns squeezed to single spaces.
check_row () { # OUTPUT HCA CHECK
  printf '%s\n' "$1" | awk -v h="$2" -v c="$3" '$1 == h && $3 == c' | tr -s ' '
}

# No macvlan (or anything else) was made on the NIC.
# (The veth peer rp<id>@rh<id> is the fake NIC's own other end.)
assert_nic_untouched () { # NIC
  local uppers
  uppers=$(ip -o link show | grep "@$1:" | grep -v "^[0-9]*: rp${1#rh}@" || true)
  [ -z "$uppers" ] || fail "links on $1 after a refusal: $uppers"
}
