# SPDX-License-Identifier: Apache-2.0
# The switch's LLDP on real links: a test "switch" (a network namespace at
# the far end of the fake NIC's veth) sends LLDPDUs built from two real
# switch captures and variants of them (tests/helpers/lldp-frames.py);
# `roce-hook lldp` hears them on the NIC, keeps the record, and check and
# the start gate give their verdicts from it.  The switch side counts the
# frames it receives: the listener sends none.
# roce-suite: once
# roce-suite: memcheck test_listen_hears_the_captures_and_sends_nothing test_gate_verdicts
# roce-suite: valgrind test_listen_hears_the_captures_and_sends_nothing
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/qos.sh"

FRAMES=$(cd "$(dirname "${BASH_SOURCE[0]}")/../helpers" && pwd)/lldp-frames.py

setup_switch () { # QOS_MODE QOS_SWITCH
  need_root
  need_cmd python3
  need_cmd jq
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  POLICY=$T/policy.json
  write_policy "$T/p0.json" "${1:-warn}" "mlx5_0 $NIC 10"
  jq --arg s "${2:-enforce}" '.qos.switch = $s' "$T/p0.json" > "$POLICY"
  SW=rsw$(rand_hex 3)
  PEER=rp${NIC#rh}
  ip netns add "$SW" || fail "netns $SW"
  defer ip netns del "$SW"
  ip link set "$PEER" netns "$SW" && ip -n "$SW" link set "$PEER" up || fail "the switch's port"
  RECORD=$T/state/lldp/$NIC.json
}

send () { ip netns exec "$SW" python3 "$FRAMES" send "$PEER" "$@" || fail "send $*"; }

# The listener's packet socket on the NIC: its inode's line in
# /proc/net/packet (Iface is the NIC's index), the receive queue in Rmem.
lldp_socket_bound () { awk -v i="$(cat "/sys/class/net/$NIC/ifindex")" '$5 == i' /proc/net/packet | grep -q .; }
# Every frame the NIC received (N at least) read off the listener's socket.
lldp_drained () { # N
  [ "$(cat "/sys/class/net/$NIC/statistics/rx_packets")" -ge "$1" ] &&
    [ -z "$(awk -v i="$(cat "/sys/class/net/$NIC/ifindex")" '$5 == i && $7 != 0' /proc/net/packet)" ]
}

# Counts 0x88CC frames the switch's port receives for SECONDS, into FILE.
switch_counts () { # SECONDS FILE
  ip netns exec "$SW" python3 "$FRAMES" count "$PEER" "$1" > "$2" &
  COUNTER=$!
  defer kill "$COUNTER"
}

start_watch () {
  "$HOOK" --config "$POLICY" lldp --watch > "$T/watch.out" 2>&1 &
  WATCH=$!
  defer kill "$WATCH"
  wait_for 10 "lldp --watch's socket on $NIC" lldp_socket_bound
  kill -0 "$WATCH" 2>/dev/null || fail "lldp --watch exited: $(cat "$T/watch.out")"
}

# Sends NAME and waits until the record holds it.
record_holds () { [ -f "$RECORD" ] && [ "$(jq -r .frame "$RECORD" 2>/dev/null)" = "$1" ]; }
hear () { # NAME
  local want
  want=$(python3 "$FRAMES" hex "$1")
  # A record is replaced at most once a second: the frame waits for its turn.
  send "$1"
  wait_for 20 "the record to hold $1 ($(cat "$T/watch.out" 2>/dev/null | tail -1))" record_holds "$want"
}

# "STATUS BLOCKING" of a switch check in check --json.
verdict () { # CHECK
  "$HOOK" --config "$POLICY" check --json 2>/dev/null |
    jq -r --arg c "$1" '.hcas[0].checks[] | select(.check == $c) | "\(.status) \(.blocking) \(.found)"'
}

test_listen_hears_the_captures_and_sends_nothing () {
  setup_switch
  local out rc=0
  switch_counts 4 "$T/count"
  # The sender ready first (a python start-up can take seconds on a busy
  # host), the frames sent once the listener's socket is there.
  ip netns exec "$SW" python3 "$FRAMES" send-on "$T/go" "$PEER" onyx-sn3700 garbage aruba-8100 &
  local sender=$!
  defer kill "$sender"
  wait_for 30 "the switch's sender ready" test -e "$T/go.ready"
  local before after
  before=$(date +%s)
  "$HOOK" --config "$POLICY" lldp --listen 3 > "$T/listen.out" 2>&1 &
  local pid=$!
  wait_for 10 "lldp --listen's socket on $NIC" lldp_socket_bound
  touch "$T/go"
  wait "$sender" || fail "the sender failed"
  wait "$pid" || rc=$?
  after=$(date +%s)
  out=$(cat "$T/listen.out")
  assert_eq 0 "$rc" "exit status: $out"
  assert_eq "$NIC: 8100 1/1/19: PFC on 3; APP 0 DSCP entries, UDP 4791 -> none; MFS 9198; prio->tc 0,0,0,1,0,2,0,0; TTL 120 (2 frame(s), 1 refused; record $RECORD)" \
    "$out" "listen's line"
  assert_eq "$NIC" "$(jq -r .netdev "$RECORD")" "record netdev"
  assert_eq "120 8100 1/1/19" "$(jq -r '"\(.ttl) \(.switch)"' "$RECORD")" "record ttl and switch"
  # Heard while it listened: between the listener's start and its end (a
  # fixed "within 5 s of now" counted the 3 s it listens on, and ran out
  # on a loaded host or under valgrind).
  local heard
  heard=$(jq -r .heard "$RECORD")
  [ "$heard" -ge "$before" ] && [ "$heard" -le "$after" ] ||
    fail "heard $heard, not while it listened ($before to $after)"
  assert_eq "$(python3 "$FRAMES" hex aruba-8100)" "$(jq -r .frame "$RECORD")" "the last good frame kept"
  wait "$COUNTER"
  assert_eq 0 "$(cat "$T/count")" "frames the switch received from the host"
}

test_listen_says_when_nothing_is_heard () {
  setup_switch
  local out rc=0
  out=$("$HOOK" --config "$POLICY" lldp --listen 1 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status"
  assert_contains "$out" "roce-hook: lldp: $NIC: an LLDP frame from the switch within 1 s vs none (fix: enable LLDP on the switch port; a NIC firmware LLDP agent can swallow the frames"
  [ ! -e "$RECORD" ] || fail "a record without a frame"
  rc=0
  out=$("$HOOK" --config "$POLICY" lldp --listen 0 2>&1) || rc=$?
  assert_eq 2 "$rc" "--listen 0"
  rc=0
  out=$("$HOOK" --config "$POLICY" lldp 2>&1) || rc=$?
  assert_eq 2 "$rc" "neither --watch nor --listen"
}

test_check_verdicts_for_each_frame () {
  setup_switch warn enforce
  switch_counts 30 "$T/count"
  start_watch
  assert_eq "UNKNOWN false not heard: no LLDP frame heard on $NIC" "$(verdict switch-pfc)" "before any frame"

  # How long ago: no more than the time since the frame was sent (a fixed
  # "0 to 3 s" ran out on a loaded host).
  local sent=$SECONDS lldp ago
  hear onyx-sn3700
  lldp=$(verdict switch-lldp)
  ago=$(sed -En 's/^OK false anc-dx-t1 Eth1\/1, heard ([0-9]+) s ago \(TTL 120\)$/\1/p' <<<"$lldp")
  [ -n "$ago" ] && [ "$ago" -le $((SECONDS - sent + 1)) ] || fail "onyx: lldp: $lldp ($((SECONDS - sent)) s since the frame was sent)"
  assert_eq "OK false PFC on 3 (IEEE 802.1Qaz, willing 0, 8 classes)" "$(verdict switch-pfc)" "onyx: pfc"
  assert_eq "UNKNOWN false not advertised (no DSCP entries; UDP 4791 -> priority 3)" "$(verdict switch-dscp)" "onyx: dscp"
  assert_eq "UNKNOWN false not advertised (no 802.3 maximum frame size TLV)" "$(verdict switch-mfs)" "onyx: mfs"
  assert_eq "OK false TC3, alone" "$(verdict switch-tc)" "onyx: tc"
  local table
  table=$("$HOOK" --config "$POLICY" check 2>&1) || true
  assert_contains "$table" "Switch port of mlx5_0 ($NIC): anc-dx-t1 Eth1/1, heard "
  assert_contains "$(printf '%s\n' "$table" | awk '$3 == "switch-lldp"' | tr -s ' ')" "mlx5_0 $NIC switch-lldp OK no anc-dx-t1 Eth1/1, heard"

  # Refused by the decoder: the record keeps the last good frame.
  local rx
  rx=$(cat "/sys/class/net/$NIC/statistics/rx_packets")
  send garbage
  wait_for 10 "the garbage frame read by the listener" lldp_drained $((rx + 1))
  assert_eq "OK false PFC on 3 (IEEE 802.1Qaz, willing 0, 8 classes)" "$(verdict switch-pfc)" "garbage"

  hear pfc4
  assert_eq "FAIL true PFC on 4 (IEEE 802.1Qaz, willing 0, 8 classes)" "$(verdict switch-pfc)" "pfc4"
  hear no-pfc
  assert_eq "UNKNOWN false not advertised (no IEEE or CEE PFC TLV in the switch's LLDP)" "$(verdict switch-pfc)" "no-pfc"
  hear mfs1518
  assert_eq "FAIL true 1518: frames of MTU 9000 are dropped at the switch" "$(verdict switch-mfs)" "mfs1518"
  assert_eq "OK false TC1, alone" "$(verdict switch-tc)" "mfs1518 (Aruba): tc"
  hear aruba-8100
  assert_eq "OK false 9198" "$(verdict switch-mfs)" "aruba: mfs"
  hear dscp26-0
  assert_eq "FAIL true DSCP 26 -> priority 0" "$(verdict switch-dscp)" "dscp26-0"
  hear dscp26-3
  assert_eq "OK false DSCP 26 -> priority 3" "$(verdict switch-dscp)" "dscp26-3"
  hear cee-only
  assert_eq "OK false PFC on 3 (CEE DCBX, feature enabled)" "$(verdict switch-pfc)" "cee-only"
  assert_eq "UNKNOWN false not advertised (no ETS TLV)" "$(verdict switch-tc)" "cee-only: tc"
  hear ttl0
  assert_contains "$(verdict switch-lldp)" "UNKNOWN false anc-dx-t1 Eth1/1: the switch withdrew its LLDP information"
  assert_contains "$(verdict switch-pfc)" "UNKNOWN false not heard: the switch withdrew"

  kill "$WATCH"
  wait "$COUNTER" 2>/dev/null || true
  assert_eq 0 "$(cat "$T/count")" "frames the switch received from the host"
}

# check --nfd: the labels a pod's node affinity asks for, replaced
# atomically; metrics: the switch verdicts and the frame's age.
test_nfd_labels_and_metrics () {
  setup_switch warn enforce
  POLICY_MIN_MTU=1500 write_policy "$T/p0.json" warn "mlx5_0 $NIC 10"
  jq '.qos.switch = "enforce"' "$T/p0.json" > "$POLICY"
  fake_gid mlx5_0 1 2 "0000:0000:0000:0000:0000:ffff:c612:0a05" "RoCE v2" "$NIC"
  start_watch
  local nfd=$T/features.d/roce-hook rc=0
  mkdir -p "$T/features.d"
  "$HOOK" --config "$POLICY" check --nfd "$nfd" > /dev/null 2>&1 || rc=$?
  assert_eq 1 "$rc" "check's exit status (the veth has no DCB)"
  assert_eq "# roce-hook check --nfd: policy $POLICY
roce.io/ready=false
roce.io/lossless=false
roce.io/switch-pfc=unknown
roce.io/ipv4=true
roce.io/ipv6=false
roce.io/hca.mlx5_0=true
roce.io/hca.mlx5_0.family=ipv4
roce.io/gid-room=0" "$(cat "$nfd")" "labels with nothing heard"
  hear onyx-sn3700
  "$HOOK" --config "$POLICY" check --nfd "$nfd" > /dev/null 2>&1 || true
  assert_contains "$(cat "$nfd")" "roce.io/switch-pfc=ok"
  hear pfc4
  "$HOOK" --config "$POLICY" check --nfd "$nfd" > /dev/null 2>&1 || true
  assert_contains "$(cat "$nfd")" "roce.io/switch-pfc=fail"
  [ -z "$(find "$T/features.d" -name '.*')" ] || fail "a temporary file left: $(ls -a "$T/features.d")"

  local out
  out=$("$HOOK" --config "$POLICY" metrics) || fail "metrics: $out"
  assert_contains "$out" "roce_gate_check{hca=\"mlx5_0\",netdev=\"$NIC\",check=\"switch-pfc\"} 0"
  assert_contains "$out" "roce_gate_check{hca=\"mlx5_0\",netdev=\"$NIC\",check=\"switch-lldp\"} 1"
  assert_contains "$out" "roce_switch_lldp_ttl_seconds{hca=\"mlx5_0\",netdev=\"$NIC\",switch=\"anc-dx-t1 Eth1/1\"} 120"
  printf '%s\n' "$out" | grep -Eq "^roce_switch_lldp_age_seconds\{hca=\"mlx5_0\",netdev=\"$NIC\",switch=\"anc-dx-t1 Eth1/1\"\} [0-5]$" ||
    fail "no frame age: $out"
  if command -v promtool >/dev/null; then
    printf '%s\n' "$out" | promtool check metrics >/dev/null 2>&1 || fail "promtool: $(printf '%s\n' "$out" | promtool check metrics 2>&1)"
  fi
}

# check --probe: full-MTU DF echoes from where a container's traffic on the
# rail starts: a macvlan of the probe's own on the NIC, a pool address, the
# rail's routes.  The NIC has no address of the host's (common with
# macvlan).  The switch netns routes to a far host over a 1500-MTU link: the
# hop that cuts it is named; a switch port whose MTU is 1500 drops silently,
# and that is said too.
probe_row () { # [ARG...]: "STATUS BLOCKING FOUND" of check --probe's path-mtu row
  "$HOOK" --config "$POLICY" check --probe --json "$@" 2>"$T/probe.err" |
    jq -r '.hcas[0].checks[] | select(.check == "path-mtu") | "\(.status) \(.blocking) \(.found)"'
}
probe_what () {
  "$HOOK" --config "$POLICY" check --probe --json 2>/dev/null |
    jq -r '.hcas[0].checks[] | select(.check == "path-mtu") | .what'
}
# The row as the table shows it (--wide: FOUND in full).
probe_text_row () { "$HOOK" --config "$POLICY" check --probe --wide 2>&1 | grep -E '(^| )path-mtu ' || true; }
# What the probe may leave on the host: the NIC's unicast filter (a macvlan
# adds its MAC there while it lives, in whatever namespace), the leases.
nic_fdb () { bridge fdb show dev "$NIC" | sort; }
no_lease_left () { [ "$(leases_settled "$POLICY" | jq '.leases | length')" = 0 ]; }
nothing_left () { # FDB_BEFORE WHAT
  assert_eq "$1" "$(nic_fdb)" "$2: the NIC's unicast filter (a macvlan left)"
  no_lease_left || fail "$2: a lease left: $("$HOOK" --config "$POLICY" leases)"
  assert_eq "" "$(ip -4 -o addr show dev "$NIC")" "$2: an address on the NIC"
}

test_probe_names_the_hop_that_cuts_jumbo_frames () {
  setup_switch
  need_cmd bridge
  local far=rfar$(rand_hex 3) fl=rf$(rand_hex 3) fr=rg$(rand_hex 3) fdb what
  assert_eq "" "$(ip -4 -o addr show dev "$NIC")" "no host address on the NIC"
  ip -n "$SW" addr add 198.18.10.254/24 dev "$PEER"
  ip netns exec "$SW" sysctl -qw net.ipv4.ip_forward=1
  ip netns add "$far" || fail "netns $far"
  defer ip netns del "$far"
  ip -n "$SW" link add "$fl" mtu 1500 type veth peer name "$fr" mtu 1500 netns "$far" || fail "far link"
  ip -n "$SW" addr add 198.18.11.254/24 dev "$fl" && ip -n "$SW" link set "$fl" up
  ip -n "$far" addr add 198.18.11.2/24 dev "$fr" && ip -n "$far" link set "$fr" up
  ip -n "$far" route add default via 198.18.11.254
  fdb=$(nic_fdb)

  # The far host is reached as a container reaches it: through the rail's
  # routes.  Without them a container has no way there, and neither has the
  # probe (bound to its macvlan, it asks the link itself: nobody answers).
  jq '.hcas.mlx5_0.gateway = "198.18.10.254" | .hcas.mlx5_0.probe = "198.18.11.2"' "$POLICY" > "$T/p1.json"
  mv "$T/p1.json" "$POLICY"
  assert_eq "UNKNOWN false no answer from 198.18.11.2 at any size (ICMP blocked, or no host)" "$(probe_row)" "no route"
  jq '.hcas.mlx5_0.routes = ["198.18.11.0/24"]' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  assert_eq "FAIL false 198.18.10.254 cut it: fragmentation needed, next-hop MTU 1500" "$(probe_row)" "1500 hop"
  what=$(probe_what)
  [[ $what =~ ^path\ MTU\ from\ 198\.18\.10\.1[0-9][0-9]\ \(a\ macvlan\ on\ $NIC\)\ to\ 198\.18\.11\.2$ ]] ||
    fail "what: $what"
  assert_contains "$(probe_text_row)" "198.18.10.254 cut it: fragmentation needed, next-hop MTU 1500" "the table's row"
  nothing_left "$fdb" "after a cut"

  # To the gateway: 9000 end to end.
  jq 'del(.hcas.mlx5_0.probe)' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  assert_eq "OK false MTU 9000 end to end (8972 bytes echoed back whole)" "$(probe_row)" "to the gateway"
  nothing_left "$fdb" "after an answer"

  # The switch's port at 1500: big frames vanish, small ones pass.
  ip -n "$SW" link set "$PEER" mtu 1500
  assert_eq "FAIL false no answer at MTU 9000, answers at 84 bytes: a hop drops large frames silently" \
    "$(probe_row)" "silent drop"
  nothing_left "$fdb" "after a silent drop"
  # Without --probe there is no such row.
  assert_eq "" "$("$HOOK" --config "$POLICY" check --json 2>/dev/null |
    jq -r '.hcas[0].checks[] | select(.check == "path-mtu") | .status')" "no probe by default"
}

# A host address on the NIC changes nothing: the echoes still leave from a
# pool address on a macvlan, as a container's would.
test_probe_ignores_the_hosts_own_address () {
  setup_switch
  ip addr add 198.18.10.1/24 dev "$NIC" || fail "host address"
  ip -n "$SW" addr add 198.18.10.254/24 dev "$PEER"
  jq '.hcas.mlx5_0.gateway = "198.18.10.254"' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  assert_eq "OK false MTU 9000 end to end (8972 bytes echoed back whole)" "$(probe_row)" "verdict"
  local what
  what=$(probe_what)
  [[ $what =~ ^path\ MTU\ from\ 198\.18\.10\.1[0-9][0-9]\ \(a\ macvlan\ on\ $NIC\)\ to\ 198\.18\.10\.254$ ]] ||
    fail "what: $what"
}

# The probe leaves nothing: not when it ends, not when the rail cannot be
# made (its one pool address answered for on the link: a container would
# be refused it too), not when it is killed on the way (its namespace, held
# by its fd alone, and the macvlan in it go with it; the lease it leaves is
# a dead namespace's, taken back at once by the next that wants it).
test_probe_leaves_nothing_behind () {
  setup_switch
  need_cmd bridge
  local fdb pid ns
  ip -n "$SW" addr add 198.18.10.254/24 dev "$PEER"
  jq '.hcas.mlx5_0.gateway = "198.18.10.254" | .hcas.mlx5_0.pool = "198.18.10.100-198.18.10.100"
      | .fabric.dad_probe_ms = 300' "$POLICY" > "$T/p1.json"
  mv "$T/p1.json" "$POLICY"
  fdb=$(nic_fdb)

  # The rail cannot be made: the address is another host's.
  ip -n "$SW" addr add 198.18.10.100/24 dev "$PEER"
  assert_contains "$(probe_row)" "UNKNOWN false not probed: no rail for a container: address 198.18.10.100 of mlx5_0 on $NIC: no other host on the link answering for it (RFC 5227 probe) vs in use by MAC " "refused rail"
  nothing_left "$fdb" "after a refused rail"
  ip -n "$SW" addr del 198.18.10.100/24 dev "$PEER"

  # Killed while it waits for an answer that never comes.
  ip netns exec "$SW" sysctl -qw net.ipv4.icmp_echo_ignore_all=1
  "$HOOK" --config "$POLICY" check --probe --json > /dev/null 2>&1 &
  pid=$!
  defer kill -9 "$pid"
  probe_holds () {
    "$HOOK" --config "$POLICY" leases --json 2>/dev/null |
      jq -e --arg o "check-probe-$pid" '.leases[] | select(.owner == $o and .address == "198.18.10.100")' >/dev/null
  }
  wait_for 10 "the probe's lease" probe_holds
  # Its macvlan up (its MAC on the NIC's list): the probe waits for echoes.
  # Killed before, its namespace could die with the macvlan never up, and
  # the NIC's list would not show when the kernel has let it go.
  probe_up () { [ "$(nic_fdb)" != "$fdb" ]; }
  wait_for 10 "the probe's macvlan up" probe_up
  ns=$(readlink "/proc/$pid/fd/"* 2>/dev/null | grep '^net:' | sort -u | grep -v "$(readlink /proc/self/ns/net)" || true)
  [ -n "$ns" ] || fail "no namespace of the probe's own among its fds"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  probe_gone () { [ "$(nic_fdb)" = "$fdb" ]; }
  # The kernel tears a dead namespace down in a workqueue of its own: the
  # reaper's bound, not 5 s.
  wait_for "$LEASE_SETTLE_S" "the probe's macvlan to go with its namespace" probe_gone
  if find /proc/[0-9]*/fd /proc/[0-9]*/ns -maxdepth 1 -lname "$(sed 's/[][]/\\&/g' <<<"$ns")" 2>/dev/null |
    grep -q .; then
    fail "its namespace $ns is still held"
  fi
  # The lease of a dead namespace blocks nobody: the next probe gets the
  # pool's one address at once.
  ip netns exec "$SW" sysctl -qw net.ipv4.icmp_echo_ignore_all=0
  assert_eq "OK false MTU 9000 end to end (8972 bytes echoed back whole)" "$(probe_row)" "after the kill"
  nothing_left "$fdb" "after a killed probe and the next"
}

# fabric.mtu_probe_ms: the same probe at start, from the container's address.
test_start_probe_from_the_container () {
  setup_switch warn off
  local id b=$T/b
  ip -n "$SW" addr add 198.18.10.254/24 dev "$PEER"
  jq '.hcas.mlx5_0.gateway = "198.18.10.254" | .fabric.mtu_probe_ms = 1000' "$POLICY" > "$T/p1.json"
  mv "$T/p1.json" "$POLICY"
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$b" "$POLICY"
  id=$(new_id)
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err")"
  grep -Eq "$id: path MTU from 198\.18\.10\.[0-9]+ \(roce0\) to 198\.18\.10\.254: MTU 9000 end to end" "$T/hook.log" ||
    fail "no probe line: $(grep "$id" "$T/hook.log")"
  ip -n "$SW" link set "$PEER" mtu 1500
  id=$(new_id)
  run_container "$id" "$b" || fail "refused under warn: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: mtu probe (warn): path MTU from"
  assert_file_contains "$T/hook.log" "to 198.18.10.254: MTU 9000 end to end vs no answer at MTU 9000, answers at 84 bytes: a hop drops large frames silently"
}

# An off-path host on the rail forges the start probe's verdict: "fragmentation
# needed" for every echo id, quoting the echo a predictable prober sends
# (tests/helpers/icmp-forge.c).  The gateway ignores pings, so the truth is
# "not proven"; a forged "cut at 1500" would refuse the start under enforce.
test_forged_frag_needed_never_decides_the_probe () {
  setup_switch warn off
  local id b=$T/b fpid
  ip -n "$SW" addr add 198.18.10.254/24 dev "$PEER"
  ip netns exec "$SW" sysctl -qw net.ipv4.icmp_echo_ignore_all=1
  jq '.hcas.mlx5_0.gateway = "198.18.10.254" | .fabric.mtu_probe_ms = 1000' "$POLICY" > "$T/p1.json"
  mv "$T/p1.json" "$POLICY"
  ANNOTATIONS=$'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' CMD='echo started' make_bundle "$b" "$POLICY"
  ip netns exec "$SW" "$BUILD/helpers/icmp-forge" 198.18.10.254 198.18.10.150 198.18.10.254 9000 \
    2>"$T/forge.err" &
  fpid=$!
  defer kill "$fpid"
  id=$(new_id)
  run_container "$id" "$b" || fail "refused under warn: $(cat "$T/$id.err")"
  kill "$fpid"
  wait_for 5 "the forger's count" grep -q forged "$T/forge.err"
  if grep -q "$id: mtu probe (warn)" "$T/hook.log"; then
    fail "a forged verdict: $(grep "$id: mtu probe" "$T/hook.log") ($(cat "$T/forge.err"))"
  fi
  assert_file_contains "$T/hook.log" "$id: path MTU from 198.18.10.150 (roce0) to 198.18.10.254: not proven: no answer at any size"
}

# An IPv6-only rail (2001:2:0:10::/64, its gateway ::1 on the switch's
# port): the start probe's echoes are ICMPv6, from the container's address.
rail6 () { # JQ: the policy's mlx5_0 made IPv6-only, JQ applied after
  jq '.hcas.mlx5_0 |= (del(.subnet, .pool) + { subnet: "2001:2:0:10::/64",
        pool: "2001:2:0:10::100-2001:2:0:10::1ff", gateway: "2001:2:0:10::1" })
      | .fabric.mtu_probe_ms = 1000 | '"$1" "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY" ||
    fail "policy: $1"
  ip -n "$SW" addr add 2001:2:0:10::1/64 dev "$PEER" nodad || fail "the gateway's address"
}
# What the switch and far namespaces saw (their nonzero ICMPv6 and IPv6
# drop counters, their neighbors), for a probe line that was not what a
# test wanted: a failure says where the echoes or the answers went.
probe6_evidence () { # NETNS...
  local ns
  for ns in "$@"; do
    printf '%s: %s; neighbors: %s. ' "$ns" \
      "$(ip netns exec "$ns" awk '$2 != 0 && $1 ~ /^(Icmp6(In|Out)(Echos|EchoReplies|PktTooBigs|NeighborSolicits|NeighborAdvertisements|Errors)|Ip6(In|Out)(Discards|NoRoutes)|Ip6InTooBigErrors)$/ { printf "%s %s ", $1, $2 }' /proc/net/snmp6)" \
      "$(ip -n "$ns" -6 neigh show | tr '\n' ';')"
  done
}
probe6_line () { grep "$1: .*path MTU from 2001:2:0:10::1[0-9a-f][0-9a-f] (roce0) to" "$T/hook.log"; }
# Starts a container of bundle $T/b under warn and sets LINE to its probe's line.
start6 () {
  local id
  id=$(new_id)
  run_container "$id" "$T/b" || fail "refused under warn: $(cat "$T/$id.err")"
  LINE=$(probe6_line "$id") || fail "no probe line: $(grep "$id" "$T/hook.log")"
  LINE=${LINE#*"$id: "}
}

# Through a router whose far link takes 1500: its "packet too big" names
# it in the start's warn line and check --probe's row.  To the router
# itself: 9000 end to end.  The switch's port at
# 1500: large echoes vanish, small ones pass.
test_start_probe6_names_the_hop_that_cuts_jumbo_frames () {
  setup_switch warn off
  need_cmd jq
  local far=rfar$(rand_hex 3) fl=rf$(rand_hex 3) fr=rg$(rand_hex 3) line
  ip netns exec "$SW" sysctl -qw net.ipv6.conf.all.forwarding=1
  ip netns add "$far" || fail "netns $far"
  defer ip netns del "$far"
  ip -n "$SW" link add "$fl" mtu 1500 type veth peer name "$fr" mtu 1500 netns "$far" || fail "far link"
  ip -n "$SW" addr add 2001:2:0:11::1/64 dev "$fl" nodad && ip -n "$SW" link set "$fl" up
  ip -n "$far" addr add 2001:2:0:11::2/64 dev "$fr" nodad && ip -n "$far" link set "$fr" up
  ip -n "$far" route add default via 2001:2:0:11::1
  rail6 '.hcas.mlx5_0.probe = "2001:2:0:11::2" | .hcas.mlx5_0.routes = ["2001:2:0:11::/64"]'
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"

  start6
  [[ $LINE == "mtu probe (warn): path MTU from 2001:2:0:10::1"*" (roce0) to 2001:2:0:11::2: MTU 9000 end to end vs 2001:2:0:10::1 cut it: packet too big, MTU 1500" ]] ||
    fail "warn line: $LINE ($(probe6_evidence "$SW" "$far"))"

  # check --probe's row says the same (qos.mode enforce would refuse the
  # start with that line, the warn line's "vs": this host's fake NIC has no
  # DCB, whose check refuses first under enforce).
  assert_eq "FAIL false 2001:2:0:10::1 cut it: packet too big, MTU 1500" "$(probe_row)" "check --probe"
  line=$(probe_what)
  [[ $line =~ ^path\ MTU\ from\ 2001:2:0:10::1[0-9a-f]{2}\ \(a\ macvlan\ on\ $NIC\)\ to\ 2001:2:0:11::2$ ]] ||
    fail "what: $line"

  # To the router itself: nothing cuts it.
  jq 'del(.hcas.mlx5_0.probe)' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  start6
  [[ $LINE == "path MTU from 2001:2:0:10::1"*" (roce0) to 2001:2:0:10::1: MTU 9000 end to end" ]] ||
    fail "ok line: $LINE ($(probe6_evidence "$SW" "$far"))"
  assert_eq "OK false MTU 9000 end to end (8952 bytes echoed back whole)" "$(probe_row)" "check --probe"

  # The switch's port at 1500: the router never sees the large echoes.
  ip -n "$SW" link set "$PEER" mtu 1500
  start6
  [[ $LINE == "mtu probe (warn): path MTU from"*" to 2001:2:0:10::1: MTU 9000 end to end vs no answer at MTU 9000, answers at 104 bytes: a hop drops large frames silently" ]] ||
    fail "silent line: $LINE ($(probe6_evidence "$SW" "$far"))"
}

# A path whose answer comes after the full-size round's time (a slow hop,
# a first hop found only on neighbor discovery's retry): the answer to a
# full-size echo that arrives while the small echoes are out is the
# verdict, not "no answer at any size" nor a silent drop.  The gateway's
# kernel ignores pings; tests/helpers/icmp6-forge.py late answers the first
# full-size echo once it sees a small one, and no small one.
test_start_probe6_counts_an_answer_that_comes_late () {
  setup_switch warn off
  need_cmd jq
  local late mode want
  rail6 '.fabric.mtu_probe_ms = 2000'
  ip netns exec "$SW" sysctl -qw net.ipv6.icmp.echo_ignore_all=1
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  for mode in reply cut; do
    ip netns exec "$SW" python3 "$(dirname "$FRAMES")/icmp6-forge.py" late "$PEER" 2001:2:0:10::1 "$mode" \
      2>"$T/late-$mode.err" &
    late=$!
    defer kill "$late"
    wait_for 10 "the late answerer's socket" grep -q ready "$T/late-$mode.err"
    start6
    kill "$late"
    wait_for 5 "the late answerer's count" grep -q "answered" "$T/late-$mode.err"
    assert_file_contains "$T/late-$mode.err" "answered 1"
    case $mode in
      reply) want="path MTU from 2001:2:0:10::1"*" (roce0) to 2001:2:0:10::1: MTU 9000 end to end" ;;
      cut) want="mtu probe (warn): path MTU from 2001:2:0:10::1"*" (roce0) to 2001:2:0:10::1: MTU 9000 end to end vs 2001:2:0:10::1 cut it: packet too big, MTU 1500" ;;
    esac
    # shellcheck disable=SC2053 # $want is a pattern
    [[ $LINE == $want ]] || fail "$mode late: $LINE ($(probe6_evidence "$SW"))"
  done
}

# A host on the rail that sees the echoes forges the IPv6 verdict
# (tests/helpers/icmp6-forge.py): a reply with the echo's every byte from
# another address than the probed peer's, and a "packet too big" quoting the
# echo as another host's.  The peer ignores pings: the truth is "not
# proven"; a forged reply would pass it, a forged cut fail it (and refuse
# the start under enforce).
test_forged_packet_too_big_never_decides_the_probe6 () {
  setup_switch warn off
  need_cmd jq
  local id b=$T/b fpid
  rail6 '.'
  ip -n "$SW" addr add 2001:2:0:10::2/64 dev "$PEER" nodad || fail "the forger's address"
  ip netns exec "$SW" sysctl -qw net.ipv6.icmp.echo_ignore_all=1
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$b" "$POLICY"
  ip netns exec "$SW" python3 "$(dirname "$FRAMES")/icmp6-forge.py" "$PEER" 2001:2:0:10::1 \
    2001:2:0:10::2 2001:2:0:10::1 2>"$T/forge.err" &
  fpid=$!
  defer kill "$fpid"
  wait_for 10 "the forger's socket" grep -q ready "$T/forge.err"
  id=$(new_id)
  run_container "$id" "$b" || fail "refused: $(cat "$T/$id.err") ($(tail -1 "$T/forge.err"))"
  wait_for 5 "the forger's count" grep -q "forged [1-9]" "$T/forge.err"
  kill "$fpid"
  if grep -q "$id: .*MTU 9000 end to end" "$T/hook.log"; then
    fail "a forged verdict: $(probe6_line "$id") ($(tr "\n" " " < "$T/forge.err"))"
  fi
  assert_file_contains "$T/hook.log" "to 2001:2:0:10::1: not proven: no answer at any size"
  probe6_line "$id" > /dev/null || fail "no probe line: $(grep "$id" "$T/hook.log")"
}

# The start gate reads the record (never waits for a frame).
test_gate_verdicts () {
  setup_switch warn enforce
  start_watch
  local id b=$T/b
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$b" "$POLICY"

  # Nothing heard: UNKNOWN never refuses, even under qos.switch enforce.
  id=$(new_id)
  run_container "$id" "$b" || fail "refused with nothing heard: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos UNKNOWN switch-pfc: PFC on priority 3 at the switch port of $NIC (mlx5_0): advertised by the switch over LLDP vs not heard: no LLDP frame heard on $NIC"

  hear onyx-sn3700
  id=$(new_id)
  run_container "$id" "$b" || fail "refused with the switch right: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"

  hear pfc4
  id=$(new_id)
  if run_container "$id" "$b"; then fail "started with the switch's PFC on 4 under qos.switch enforce"; fi
  assert_file_contains "$T/$id.err" "roce-hook: $id: PFC on priority 3 at switch port anc-dx-t1 Eth1/1 ($NIC, mlx5_0): enabled on priority 3 vs PFC on 4 (IEEE 802.1Qaz, willing 0, 8 classes) (fix: enable PFC on priority 3 on the switch port, forced on (NX-OS 'priority-flow-control mode on', not auto))"
  [ "$(grep -o 'roce-hook:' "$T/$id.err" | wc -l)" = 1 ] || fail "not one hook line: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos gate (qos.switch enforce): refusing the start"

  hear ttl0
  id=$(new_id)
  run_container "$id" "$b" || fail "refused after TTL 0: $(cat "$T/$id.err")"

  # qos.switch warn: the same mismatch starts, logged.
  hear mfs1518
  jq '.qos.switch = "warn"' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  id=$(new_id)
  run_container "$id" "$b" || fail "refused under qos.switch warn: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos FAIL switch-mfs: maximum frame size at switch port 8100 1/1/19 ($NIC, mlx5_0): at least 9018 (MTU 9000 + 18) vs 1518"
}

run_tests
