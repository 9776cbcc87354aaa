# SPDX-License-Identifier: Apache-2.0
# The network: a macvlan per HCA inside the container's network namespace,
# addresses from the lease store, pods, rollback, crash safety.
# roce-suite: each-runtime test_macvlan_in_the_container test_two_containers_reach_each_other
# roce-suite: each-runtime test_pod_second_container_joins_the_network
# roce-suite: each-runtime test_failure_after_the_first_interface_rolls_back
# roce-suite: each-runtime test_the_reaper_releases_once_the_namespace_is_gone
# roce-suite: each-runtime test_killed_hook_then_gc_leaves_nothing test_host_network_is_refused
# roce-suite: each-runtime test_poststop_is_idempotent_and_quiet_for_the_gone
# roce-suite: memcheck test_leases_read_as_a_reaper_ends_never_says_stopped
# roce-suite: memcheck test_macvlan_in_the_container test_static_address_and_a_clash_refused
# roce-suite: memcheck test_exhausted_pool_is_refused_naming_the_pool
# roce-suite: memcheck test_multi_rail_two_hcas_two_nics test_pod_second_container_joins_the_network
# roce-suite: memcheck test_the_reaper_releases_once_the_namespace_is_gone
# roce-suite: memcheck test_failure_after_the_first_interface_rolls_back test_64_parallel_starts
# roce-suite: memcheck test_killed_hook_then_gc_leaves_nothing
# roce-suite: memcheck test_store_of_an_earlier_version_is_upgraded_with_its_leases
# roce-suite: memcheck test_an_unreadable_holder_file_blocks_only_itself
# roce-suite: memcheck test_poststop_is_idempotent_and_quiet_for_the_gone
# roce-suite: valgrind test_macvlan_in_the_container test_pod_second_container_joins_the_network
# roce-suite: valgrind test_killed_hook_then_gc_leaves_nothing
# roce-suite: valgrind test_store_of_an_earlier_version_is_upgraded_with_its_leases
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/net.sh"

test_macvlan_in_the_container () {
  net_host 1
  local id b=$T/b out
  id=$(new_id)
  net_bundle "$b"
  start_container "$id" "$b" || fail "start refused: $(cat "$T/$id.err")"
  out=$(runtime exec "$id" sh -c 'ip -o -4 addr show roce0; cd /sys/class/net/roce0 &&
        echo "mtu=$(cat mtu) state=$(cat operstate) iflink=$(cat iflink) mac=$(cat address)";
        ip route; ip route show table 100; ls /sys/class/net | tr "\n" " "') || fail "exec: $out"
  assert_contains "$out" "inet 198.18.10.100/24" "roce0 in the container"
  assert_contains "$out" "mtu=9000 state=up iflink=$(cat /sys/class/net/"$NIC"/ifindex) " "roce0"
  assert_not_contains "$out" "mac=$(cat /sys/class/net/"$NIC"/address)" "roce0's MAC (its own, not the parent's)"
  assert_contains "$out" "198.18.10.0/24 dev roce0" "the subnet's route"
  # The policy's routes are in the rail's own table (fabric.route_table).
  assert_contains "$out" "198.19.10.0/24 via 198.18.10.1 dev roce0" "the policy's route (table 100)"
  assert_not_contains "$out" "default" "routes"
  assert_contains "$out" "lo roce0 " "interfaces"
  # Mode bridge, on the NIC: the host's view of the same link.
  out=$(nsenter -t "$(container_pid "$id")" -n ip -d link show roce0)
  assert_contains "$out" "macvlan mode bridge" "roce0 details"
  # Nothing was made on the host side.
  ip link show roce0 >/dev/null 2>&1 && fail "roce0 exists on the host"
  assert_eq "198.18.10.100" "$(held_addresses)" "leases"
  assert_contains "$(hook_leases)" "mlx5_0     198.18.10.100   roce0" "leases table"
  assert_contains "$(hook_leases)" " $id" "leases table"
  runtime delete -f "$id" || fail "delete"
  assert_eq "" "$(held_addresses)" "leases after poststop"
  assert_file_contains "$T/hook.log" "$id: released 198.18.10.100 (mlx5_0)"
}

test_two_containers_reach_each_other () {
  net_host 1
  local a b rc=0
  a=$(new_id) b=$(new_id)
  net_bundle "$T/a"
  start_container "$a" "$T/a" || fail "start a: $(cat "$T/$a.err")"
  net_bundle "$T/b" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0; ping -c1 -W2 198.18.10.100'
  run_container "$b" "$T/b" || rc=$?
  [ "$rc" -eq 0 ] || fail "b could not reach a (rc $rc): $(cat "$T/$b.out" "$T/$b.err")"
  assert_file_contains "$T/$b.out" "inet 198.18.10.101/24"
  assert_file_contains "$T/$b.out" "1 packets received"
  assert_eq "198.18.10.100" "$(held_addresses)" "leases once b stopped"
}

test_static_address_and_a_clash_refused () {
  net_host 1
  local a b c rc=0
  a=$(new_id) b=$(new_id) c=$(new_id)
  net_bundle "$T/a" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150'
  start_container "$a" "$T/a" || fail "start a: $(cat "$T/$a.err")"
  assert_eq "198.18.10.150/24" "$(ns_addr "$(container_pid "$a")" roce0)" "a's static address"

  net_bundle "$T/b" $'roce.io/hca=mlx5_0\nroce.io/ip=mlx5_0=198.18.10.150' 'echo started'
  run_container "$b" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "b started with a's address"
  assert_file_contains "$T/$b.err" "roce-hook: $b: address 198.18.10.150 of mlx5_0: an address no running container holds vs held by container $a since "
  assert_file_contains "$T/$b.err" "(fix: pick another address in 198.18.10.100-198.18.10.199, or omit roce.io/ip to get a free one)"
  [ "$(grep -c 'roce-hook:' "$T/$b.err")" = 1 ] || fail "more than one line: $(cat "$T/$b.err")"
  assert_not_contains "$(cat "$T/$b.out")" "started" "b's output"
  assert_eq "198.18.10.150" "$(held_addresses)" "leases"

  # Once a is gone the address is free again.
  runtime delete -f "$a"
  net_bundle "$T/c" $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.150' 'ip -o -4 addr show roce0'
  run_container "$c" "$T/c" || fail "c refused: $(cat "$T/$c.err")"
  assert_file_contains "$T/$c.out" "inet 198.18.10.150/24"
}

test_exhausted_pool_is_refused_naming_the_pool () {
  NET_POOL_LAST=101 net_host 1
  local a b c rc=0
  a=$(new_id) b=$(new_id) c=$(new_id)
  net_bundle "$T/a"
  net_bundle "$T/b"
  start_container "$a" "$T/a" || fail "start a: $(cat "$T/$a.err")"
  start_container "$b" "$T/b" || fail "start b: $(cat "$T/$b.err")"
  net_bundle "$T/c" roce.io/hca=mlx5_0 'echo started'
  run_container "$c" "$T/c" || rc=$?
  [ "$rc" -ne 0 ] || fail "c started with the pool exhausted"
  assert_file_contains "$T/$c.err" "roce-hook: $c: address pool of mlx5_0: a free address in 198.18.10.100-198.18.10.101 vs all 2 held (fix: stop a container that holds one (roce-hook leases lists them), or widen hcas.mlx5_0.pool in the node policy)"
  assert_eq "198.18.10.100 198.18.10.101" "$(held_addresses | tr '\n' ' ' | sed 's/ $//')" "leases"
}

test_multi_rail_two_hcas_two_nics () {
  net_host 2
  local id out
  # The netdevs come from sysfs (class/infiniband/<hca>/device/net/) here.
  sed -i 's/"netdev": "[^"]*", //' "$POLICY"
  assert_not_contains "$(cat "$POLICY")" "netdev" "policy"
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0,mlx5_1 'for i in roce0 roce1; do
      echo "$i $(ip -o -4 addr show $i | awk "{print \$4}") $(cat /sys/class/net/$i/iflink) $(cat /sys/class/net/$i/mtu)"; done'
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  out=$(cat "$T/$id.out")
  assert_contains "$out" "roce0 198.18.10.100/24 $(cat /sys/class/net/"${NICS[0]}"/ifindex) 9000" "roce0"
  assert_contains "$out" "roce1 198.18.11.100/24 $(cat /sys/class/net/"${NICS[1]}"/ifindex) 9000" "roce1"
}

test_pod_second_container_joins_the_network () {
  net_host 1
  local sb app pid out
  sb=$(new_id) app=$(new_id)
  net_bundle "$T/sb" $'roce.io/hca=mlx5_0\nio.kubernetes.cri.container-type=sandbox'
  start_container "$sb" "$T/sb" || fail "sandbox: $(cat "$T/$sb.err")"
  pid=$(container_pid "$sb")
  NETNS_PATH=/proc/$pid/ns/net net_bundle "$T/app" $'roce.io/hca=mlx5_0\nio.kubernetes.cri.container-type=container'
  start_container "$app" "$T/app" || fail "app: $(cat "$T/$app.err")"
  out=$(runtime exec "$app" sh -c 'ip -o -4 addr show | grep roce; ls /sys/class/net | tr "\n" " "')
  assert_contains "$out" "inet 198.18.10.100/24" "the app sees the pod's roce0"
  assert_contains "$out" "lo roce0 " "interfaces (no second macvlan)"
  assert_eq "198.18.10.100" "$(held_addresses)" "one lease for the pod"
  assert_contains "$(hook_leases)" "$sb,$app" "holders"
  assert_file_contains "$T/hook.log" "$app: network: joined net:["

  # The app stops: the pod's network and lease stay.
  runtime delete -f "$app"
  assert_eq "198.18.10.100/24" "$(ns_addr "$pid" roce0)" "the pod's roce0 after the app stopped"
  assert_eq "198.18.10.100" "$(held_addresses)" "the pod's lease after the app stopped"
  # The sandbox stops: the namespace is gone, so is the lease.
  runtime delete -f "$sb"
  assert_eq "" "$(held_addresses)" "leases once the pod is gone"
}

test_pod_member_asking_for_more_than_the_pod_has_is_refused () {
  net_host 2
  local sb app rc=0
  sb=$(new_id) app=$(new_id)
  net_bundle "$T/sb"
  start_container "$sb" "$T/sb" || fail "sandbox: $(cat "$T/$sb.err")"
  NETNS_PATH=/proc/$(container_pid "$sb")/ns/net net_bundle "$T/app" roce.io/hca=mlx5_0,mlx5_1 'echo started'
  run_container "$app" "$T/app" || rc=$?
  [ "$rc" -ne 0 ] || fail "the app started"
  assert_file_contains "$T/$app.err" "roce-hook: $app: network namespace shared with container $sb: roce.io/hca within the HCAs it has (mlx5_0) vs mlx5_1 (fix: give every container of a pod the same roce.io/hca)"
  assert_eq "198.18.10.100" "$(held_addresses)" "the pod's lease"
  assert_contains "$(hook_leases)" " $sb" "holders"
  assert_not_contains "$(hook_leases)" "$app" "holders"
  assert_eq "198.18.10.100/24" "$(ns_addr "$(container_pid "$sb")" roce0)" "the pod's roce0"
}

test_missing_netdev_is_refused_before_anything () {
  net_host 1
  local id rc=0
  sed -i "s/\"netdev\": \"$NIC\"/\"netdev\": \"rhgone0\"/" "$POLICY"
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0 'echo started'
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  assert_file_contains "$T/$id.err" "roce-hook: $id: netdev rhgone0 of HCA mlx5_0: an interface on the host vs none (fix: check the NIC, or set hcas.mlx5_0.netdev in $POLICY)"
  [ ! -e "$T/state" ] || fail "the lease store was touched: $(ls -la "$T/state")"
}

test_pinned_pod_netns_keeps_its_lease_until_it_is_gone () {
  net_host 1
  local ns id out
  ns=$(pinned_netns)
  # The sandbox's namespace already has a default route of its own.
  local v=rv$(rand_hex 3)
  ip link add "$v" type veth peer name eth0 netns "$(basename "$ns")" || fail "veth"
  defer ip link del "$v"
  ip netns exec "$(basename "$ns")" sh -c 'ip addr add 198.18.200.2/24 dev eth0 && ip link set eth0 up &&
     ip route add default via 198.18.200.1' || fail "default route"
  local before
  before=$(ip netns exec "$(basename "$ns")" ip route show default)
  assert_contains "$before" "default via 198.18.200.1 dev eth0" "the default route before"
  id=$(new_id)
  NETNS_PATH=$ns net_bundle "$T/b" roce.io/hca=mlx5_0 'ip route; ip route show table 100'
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "default via 198.18.200.1 dev eth0"
  assert_file_contains "$T/$id.out" "198.19.10.0/24 via 198.18.10.1 dev roce0"
  out=$(ip netns exec "$(basename "$ns")" ip route show default)
  assert_eq "$before" "$out" "the default route"
  # The container stopped, the pinned namespace (and roce0 in it) lives on.
  assert_contains "$(ip netns exec "$(basename "$ns")" ip -o -4 addr show roce0)" "198.18.10.100/24"
  assert_contains "$(hook_leases)" "$id (stopped)" "leases"
  assert_eq "gc: released 0 leases, 1 held" "$("$HOOK" --config "$POLICY" gc)" "gc while the pod lives"
  ip netns del "$(basename "$ns")"
  out=$(gc_until ", 0 held")
  assert_contains "$out" "released 198.18.10.100 (mlx5_0, roce0) of $id (stopped)"
  assert_contains "$out" "gc: released 1 leases, 0 held"
  assert_eq "" "$(held_addresses)" "leases after gc"
}

# gc_keeps_until_killed PID: gc keeps the one lease while PID holds its
# namespace, and releases it once PID is killed (a socket or fd it held is
# freed one grace period later, hence gc_until).
gc_keeps_until_killed () {
  local out
  assert_eq "gc: released 0 leases, 1 held" "$("$HOOK" --config "$POLICY" gc)" "gc while it is held"
  kill -9 "$1"
  wait "$1" 2>/dev/null || true
  out=$(gc_until ", 0 held")
  assert_contains "$out" "gc: released 1 leases, 0 held" "gc once it is let go"
}

test_namespace_held_only_by_an_fd_keeps_its_lease () {
  net_host 1
  local id pin
  id=$(new_id)
  net_bundle "$T/b"
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  # Something (a network manager) keeps the namespace open: the fd is
  # opened here, before the fork, so the pin is in place before the delete.
  local cpid
  cpid=$(container_pid "$id")
  exec 7<"/proc/$cpid/ns/net" || fail "open the namespace"
  sleep 120 </dev/null >/dev/null 2>&1 &
  pin=$!
  exec 7<&-
  defer kill -9 "$pin"
  runtime delete -f "$id"
  assert_contains "$(hook_leases)" "$id (stopped)" "leases while the namespace is held"
  gc_keeps_until_killed "$pin"
}

# A socket made in the namespace and kept by a process elsewhere holds the
# namespace (and roce0 with its address in it) as surely as an fd, but no
# /proc entry shows it: the kernel's word decides, and the lease stays.
test_namespace_held_only_by_a_socket_made_in_it_keeps_its_lease () {
  net_host 1
  need_cmd python3
  local id pin cpid
  id=$(new_id)
  net_bundle "$T/b"
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  cpid=$(container_pid "$id")
  python3 - "$cpid" "$T/sock-ready" >/dev/null 2>"$T/sock.err" <<'PY' &
import ctypes, os, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
own = os.open("/proc/self/ns/net", os.O_RDONLY)
ns = os.open("/proc/%s/ns/net" % sys.argv[1], os.O_RDONLY)
if libc.setns(ns, CLONE_NEWNET) != 0:
    sys.exit("setns: %d" % ctypes.get_errno())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if libc.setns(own, CLONE_NEWNET) != 0:
    sys.exit("setns back: %d" % ctypes.get_errno())
os.close(ns)
os.close(own)
open(sys.argv[2], "w").close()
time.sleep(300)
PY
  pin=$!
  defer kill -9 "$pin"
  for _ in $(seq 50); do [ -e "$T/sock-ready" ] && break; sleep 0.1; done
  [ -e "$T/sock-ready" ] || fail "no socket in the namespace: $(cat "$T/sock.err")"
  # The holder is in the host's namespace and has no fd on the namespace.
  assert_eq "$(readlink /proc/self/ns/net)" "$(readlink "/proc/$pin/ns/net")" "the holder's own namespace"
  ! ls -l "/proc/$pin/fd" | grep -q 'net:\[' || fail "the holder has a namespace fd"
  runtime delete -f "$id"
  assert_contains "$(hook_leases)" "$id (stopped)" "leases while a socket holds the namespace"
  assert_file_contains "$T/hook.log" "network: $id stays"
  gc_keeps_until_killed "$pin"
}

# A bundle whose prestart hook the runtime runs (before the pivot, as
# valgrind's missing open_tree needs) and whose poststop the test runs.
prestart_only_bundle () {
  net_bundle "$1"
  jq 'del(.hooks.poststop)' "$1/config.json" > "$1/config.tmp" && mv "$1/config.tmp" "$1/config.json" ||
    fail "bundle without poststop"
}

# A container's stop does not wait for the kernel to let its namespace go:
# a reaper the hook leaves behind waits for that and releases the lease,
# with no gc.  Held at its start (a pause point of the test build), it is
# what `leases` shows; let go once the namespace has died, it releases.
test_the_reaper_releases_once_the_namespace_is_gone () {
  net_host 1
  local pid id rc=0 i out t0 t1
  id=$(new_id)
  prestart_only_bundle "$T/b"
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  pid=$(container_pid "$id")
  assert_eq "198.18.10.100/24" "$(ns_addr "$pid" roce0)" "roce0"
  # The namespace lives (its process does): poststop hands it over.
  t0=${EPOCHREALTIME/./}
  oci_state "$id" "$pid" "$T/b" | ROCE_TEST_PAUSE=reap ROCE_TEST_PAUSE_DIR=$T \
    "$BUILD/helpers/roce-hook-test" --config "$POLICY" poststop 2>"$T/post.err" || rc=$?
  t1=${EPOCHREALTIME/./}
  assert_eq 0 "$rc" "poststop: $(cat "$T/post.err")"
  assert_eq "" "$(cat "$T/post.err")" "poststop's output"
  for ((i = 0; i < 500; i++)); do [ -e "$T/reap.reached" ] && break; sleep 0.02; done
  [ -e "$T/reap.reached" ] || fail "no reaper"
  # It outlives the stage with gc's confinement, not the stage's: gc's
  # permitted capabilities, and gc's filter on top of the stage's.
  local rp
  rp=$(sed -n 's/.*still exists: .*(pid \([0-9]*\) waits for that)$/\1/p' "$T/hook.log" | tail -1)
  [ -n "$rp" ] || fail "the reaper's pid is not in the log: $(cat "$T/hook.log")"
  assert_eq 0000000000283000 "$(awk '/^CapPrm/ {print $2}' "/proc/$rp/status")" "the reaper's permitted capabilities"
  local own
  own=$(awk '/^Seccomp_filters:/ {print $2}' /proc/self/status)
  assert_eq "2 $((${own:-0} + 2))" "$(awk '/^Seccomp:/ {m = $2} /^Seccomp_filters:/ {f = $2} END {print m, f}' "/proc/$rp/status")" \
    "the reaper's seccomp mode and filters (the stage's and gc's on the test's $own)"
  # Poststop returned while its reaper waits (it is held for 30 s here).
  ! timing_holds || [ $((t1 - t0)) -lt 10000000 ] || fail "poststop waited for its reaper: $((t1 - t0)) us"
  out=$("$HOOK" --config "$POLICY" leases)
  assert_contains "$out" "198.18.10.100   roce0" "leases while the reaper waits"
  assert_contains "$out" "$id (releasing)" "leases while the reaper waits"
  assert_contains "$("$HOOK" --config "$POLICY" leases --json)" '"state": "releasing"' "leases --json"
  # gc leaves a live namespace's lease, and the reaper's mark, alone.
  assert_eq "gc: released 0 leases, 1 held" "$("$HOOK" --config "$POLICY" gc)" "gc while it lives" # wait-ok: gc beside a reaper held at its pause point is the behaviour
  assert_contains "$("$HOOK" --config "$POLICY" leases)" "$id (releasing)" "the mark after gc"
  runtime delete -f "$id"
  touch "$T/reap.go"
  out=$(leases_settled "$POLICY")
  assert_not_contains "$out" "198.18.10.100" "leases once the namespace is gone"
  assert_file_contains "$T/hook.log" "released 198.18.10.100 (mlx5_0)"
  # The reaper removes its mark just after its commit (the lease is seen
  # gone a moment before): waited for, within the settle bound.
  local i
  for ((i = 0; i < LEASE_SETTLE_S * 50; i++)); do
    [ -n "$(ls -A "$T/state/reaping" 2>/dev/null)" ] || break
    sleep 0.02
  done
  [ -z "$(ls -A "$T/state/reaping" 2>/dev/null)" ] || fail "marks left: $(ls -A "$T/state/reaping")"
}

# started_then_poststop [VAR=VALUE...]: a container on a host of one NIC
# (the caller's id and pid set), then the test build's poststop on it with
# that environment, while the container lives: its reaper is left waiting.
started_then_poststop () {
  local rc=0
  net_host 1
  id=$(new_id)
  prestart_only_bundle "$T/b"
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  pid=$(container_pid "$id")
  oci_state "$id" "$pid" "$T/b" | env "$@" \
    "$BUILD/helpers/roce-hook-test" --config "$POLICY" poststop 2>"$T/post.err" || rc=$?
  assert_eq 0 "$rc" "poststop: $(cat "$T/post.err")"
}

# `leases` reads the store without its lock, then looks at the reapers'
# marks: a reaper that releases in between (commits, removes its mark) is
# never shown as having left its lease "stopped" for gc.
test_leases_read_as_a_reaper_ends_never_says_stopped () {
  local pid id rc=0 i lister
  mkdir "$T/p1"
  started_then_poststop ROCE_TEST_PAUSE=reap ROCE_TEST_PAUSE_DIR="$T/p1"
  for ((i = 0; i < 500; i++)); do [ -e "$T/p1/reap.reached" ] && break; sleep 0.02; done
  [ -e "$T/p1/reap.reached" ] || fail "no reaper"
  mkdir "$T/p2"
  # The lister has read the holder (no container, its reaper's mark held).
  ROCE_TEST_PAUSE=leases-read ROCE_TEST_PAUSE_DIR=$T/p2 \
    "$BUILD/helpers/roce-hook-test" --config "$POLICY" leases --json >"$T/list.out" 2>"$T/list.err" &
  lister=$!
  defer "kill $lister"
  for ((i = 0; i < 500; i++)); do [ -e "$T/p2/leases-read.reached" ] && break; sleep 0.02; done
  [ -e "$T/p2/leases-read.reached" ] || fail "the lister never read the store: $(cat "$T/list.err")"
  # The reaper releases and removes its mark; then the lister goes on.
  runtime delete -f "$id"
  touch "$T/p1/reap.go"
  assert_not_contains "$(leases_settled "$POLICY")" "198.18.10.100" "leases once the reaper released"
  for ((i = 0; i < LEASE_SETTLE_S * 50; i++)); do
    [ -n "$(ls -A "$T/state/reaping" 2>/dev/null)" ] || break
    sleep 0.02
  done
  [ -z "$(ls -A "$T/state/reaping" 2>/dev/null)" ] || fail "marks left: $(ls -A "$T/state/reaping")"
  touch "$T/p2/leases-read.go"
  rc=0
  wait "$lister" || rc=$?
  assert_eq 0 "$rc" "leases: $(cat "$T/list.err")"
  assert_eq "" "$(jq -r '.leases[] | "\(.address) \(.state)"' "$T/list.out")" \
    "what the lister says of a holder released while it looked"
}

# A node's state removed with everything it held (the state_dir wiped, a
# tmpfs gone) is not brought back by a release that comes late: neither
# the reaper that was waiting for the namespace (it logs that the
# state_dir is gone) nor a poststop (silent, as for a container that held
# nothing) nor gc makes the state_dir again.
test_a_release_after_the_state_dir_is_gone_makes_nothing () {
  local pid id rc=0 first
  mkdir "$T/p1"
  started_then_poststop ROCE_TEST_PAUSE=reap ROCE_TEST_PAUSE_DIR="$T/p1"
  wait_for 10 "the reaper" test -e "$T/p1/reap.reached"
  first=$id
  runtime delete -f "$id"
  # A second container, stopped after the state is gone.
  id=$(new_id)
  start_container "$id" "$T/b" || fail "start: $(cat "$T/$id.err")"
  pid=$(container_pid "$id")
  rm -rf "$T/state"
  touch "$T/p1/reap.go"
  assert_log_eventually "$T/hook.log" "network: $first: state_dir \`$T/state\`: gone, and with it what it held"
  oci_state "$id" "$pid" "$T/b" | "$BUILD/helpers/roce-hook-test" --config "$POLICY" poststop \
    2>"$T/post2.err" || rc=$?
  assert_eq 0 "$rc" "poststop with the state gone: $(cat "$T/post2.err")"
  assert_eq "" "$(cat "$T/post2.err")" "what the poststop printed with the state gone"
  runtime delete -f "$id"
  assert_eq "gc: released 0 leases, 0 held" "$("$HOOK" --config "$POLICY" gc 2>&1)" "gc with the state gone" # wait-ok: no store, no reaper
  [ ! -e "$T/state" ] || fail "a release made the state_dir again: $(find "$T/state" | head -5 | tr '\n' ' ')"
}

# A reaper killed before it could release (an OOM kill, a node shutting
# down) loses nothing: its lease shows as stopped, and gc releases it and
# removes its mark once the namespace is gone.
test_a_killed_reaper_leaves_its_lease_to_gc () {
  local pid id rc=0 i out
  started_then_poststop ROCE_TEST_CRASH=reap
  out=$(hook_leases)
  assert_contains "$out" "$id (stopped)" "leases after the reaper was killed"
  [ -n "$(ls -A "$T/state/reaping" 2>/dev/null)" ] || fail "no mark left by the killed reaper"
  runtime delete -f "$id"
  out=$(gc_until ", 0 held") || fail "gc: $out"
  assert_contains "$out" "gc: released 1 leases, 0 held" "gc"
  [ -z "$(ls -A "$T/state/reaping" 2>/dev/null)" ] || fail "gc left marks: $(ls "$T/state/reaping")"
  assert_eq "" "$(held_addresses)" "leases after gc"
}

# A runtime that is a child subreaper and waits for its hooks through
# SIGCHLD (crun) must hear of the hook's end although the reaper finished
# first (here the hook is held, by a pause point of the test build, until
# its reaper has released the lease): the reaper is the runtime's child,
# alive, and outlives that runtime, so the runtime is never told of both in
# one signal.
test_a_reaper_done_before_its_hook_does_not_hold_the_runtime () {
  net_host 1
  local id ns t0 t1 i rc=0
  id=$(new_id)
  ns=$(pinned_netns)
  HOOK=$BUILD/helpers/roce-hook-test NETNS_PATH=$ns net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  # The hook pauses once its reaper is started, the reaper before its first
  # look at the namespace (which a pin still held then ends: a live holder).
  jq --arg d "$T" '.hooks.poststop[0].env = ["ROCE_TEST_PAUSE=reaper-started,reap", "ROCE_TEST_PAUSE_DIR=" + $d]' \
    "$T/b/config.json" > "$T/b/c.json" && mv "$T/b/c.json" "$T/b/config.json" || fail "poststop env"
  t0=${EPOCHREALTIME/./}
  run_container "$id" "$T/b" &
  local run=$!
  defer "kill $run"
  wait_for 10 "the reaper started and paused" test -e "$T/reaper-started.reached" -a -e "$T/reap.reached"
  # The namespace goes: the reaper releases the lease while the hook waits.
  ip netns del "$(basename "$ns")"
  touch "$T/reap.go"
  wait_for 10 "the reaper's release" grep -q "released 198.18.10.100" "$T/hook.log"
  assert_file_contains "$T/hook.log" "released 198.18.10.100 (mlx5_0)"
  touch "$T/reaper-started.go"
  wait "$run" || rc=$?
  t1=${EPOCHREALTIME/./}
  assert_eq 0 "$rc" "run: $(cat "$T/$id.err")"
  assert_eq "" "$(cat "$T/$id.err")" "the runtime's stderr"
  ! timing_holds || [ $((t1 - t0)) -lt 20000000 ] || fail "the runtime waited for its poststop: $((t1 - t0)) us"
  assert_eq "" "$(held_addresses)" "leases"
}

# A poststop that finds the namespace still there leaves the release to a
# reaper that is the runtime's child, as the hook is (CLONE_PARENT): one
# process, never an orphan of the hook's, alive while that runtime lives; the
# lease goes once the namespace has.  (Before, a middle process forked it
# and exited: the reaper was orphaned to whoever reaps for the node.)  The
# runtime here is a shell that runs the hook and lives on, as `runc delete`
# and `crun delete` run poststop without being a subreaper.
test_the_reaper_is_the_runtimes_child () {
  net_host 1
  local id ns pid st rpid sh
  id=$(new_id)
  ns=$(pinned_netns)
  HOOKS=0 NETNS_PATH=$ns net_bundle "$T/b" roce.io/hca=mlx5_0 'sleep 60'
  runtime create --bundle "$T/b" "$id" </dev/null >/dev/null 2>"$T/err" || fail "create: $(cat "$T/err")"
  defer "runtime delete -f $id"
  pid=$(container_pid "$id")
  st=$T/state.json
  printf '{"ociVersion":"1.0.2","id":"%s","status":"created","pid":%s,"bundle":"%s","annotations":{"roce.io/hca":"mlx5_0"}}' \
    "$id" "$pid" "$T/b" > "$st"
  "$HOOK" --config "$POLICY" prestart < "$st" || fail "prestart"
  runtime delete -f "$id"
  # The pin goes as soon as the hook has returned: the reaper hears of the
  # namespace's end while it listens (a pin it finds would keep the lease).
  # The runtime lives on until the test has seen the release (runtime.go),
  # not for a fixed time: a release slower than that time (the kernel's
  # teardown on a loaded host) found the reaper already gone with it.
  bash -c '"$1" --config "$2" poststop < "$3"; ip netns del "$5"; echo $$ > "$4"
    end=$((SECONDS + 120)); while [ ! -e "$6" ] && [ "$SECONDS" -lt "$end" ]; do sleep 0.02; done' \
    _ "$HOOK" "$POLICY" "$st" "$T/runtime.pid" "$(basename "$ns")" "$T/runtime.go" &
  sh=$!
  defer "kill $sh 2>/dev/null"
  wait_for 20 "the runtime's poststop" test -s "$T/runtime.pid"
  rpid=$(sed -n 's/.*(pid \([0-9]*\) waits for that).*/\1/p' "$T/hook.log" | tail -1)
  [ -n "$rpid" ] || fail "no reaper: $(cat "$T/hook.log")"
  assert_eq "$(cat "$T/runtime.pid")" "$(awk '/^PPid:/ {print $2}' "/proc/$rpid/status" 2>/dev/null)" \
    "the reaper's parent: the runtime that ran the hook"
  assert_log_eventually "$T/hook.log" "released 198.18.10.100 (mlx5_0)"
  pid_gone "$rpid" && fail "the reaper ended before its runtime"
  touch "$T/runtime.go"
  wait "$sh"
  wait_for 5 "the reaper to end with its runtime" pid_gone "$rpid"
  assert_eq "" "$(held_addresses)" "leases"
}

# The kernel deletes a dead namespace's interfaces a few ms after it forgets
# the namespace, and an interface may outlive it elsewhere (here moved by
# hand into another namespace, up, with its address): while the interface
# is up on the NIC the address stays leased, so the next container never
# gets an address the fabric still reaches.  Once it is gone, gc frees it.
test_an_interface_still_up_keeps_its_address () {
  net_host 1
  local a b apid ns name out
  a=$(new_id) b=$(new_id)
  ns=$(pinned_netns)
  name=$(basename "$ns")
  net_bundle "$T/a"
  start_container "$a" "$T/a" || fail "start: $(cat "$T/$a.err")"
  apid=$(container_pid "$a")
  nsenter -t "$apid" -n ip link set roce0 netns "$name" || fail "move roce0"
  ip -n "$name" link set roce0 up && ip -n "$name" addr add 198.18.10.100/24 dev roce0 || fail "roce0 up"
  runtime delete -f "$a"
  out=$(hook_leases)
  assert_contains "$out" "198.18.10.100   roce0" "the lease of the stopped container"
  assert_contains "$out" "$a (stopped)" "the lease of the stopped container"
  assert_file_contains "$T/hook.log" "its interfaces are still up"
  net_bundle "$T/b" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0'
  run_container "$b" "$T/b" || fail "start: $(cat "$T/$b.err")"
  assert_file_contains "$T/$b.out" "inet 198.18.10.101/24"
  leases_settled "$POLICY" >/dev/null
  assert_eq "gc: released 0 leases, 1 held" "$("$HOOK" --config "$POLICY" gc)" "gc while it is up"
  ip -n "$name" link del roce0
  out=$(gc_until ", 0 held") || fail "gc: $out"
  assert_contains "$out" "released 198.18.10.100 (mlx5_0, roce0) of $a (stopped)" "gc"
}

test_failure_after_the_first_interface_rolls_back () {
  net_host 2
  local ns name id rc=0
  ns=$(pinned_netns)
  name=$(basename "$ns")
  # roce1 is taken in the pod's namespace: roce0 is made, then roce1 fails.
  local v=rv$(rand_hex 3)
  ip link add "$v" type veth peer name roce1 netns "$name" || fail "veth"
  defer ip link del "$v"
  id=$(new_id)
  NETNS_PATH=$ns net_bundle "$T/b" roce.io/hca=mlx5_0,mlx5_1 'echo started'
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  assert_file_contains "$T/$id.err" "roce-hook: $id: interface roce1 in the container: absent vs already present (fix: "
  assert_eq "" "$(ip netns exec "$name" sh -c 'ip -o link show roce0 2>/dev/null')" "roce0 after the rollback"
  assert_contains "$(ip netns exec "$name" ip -d -o link show roce1)" "veth" "the namespace's own roce1"
  assert_eq "" "$(held_addresses)" "leases after the rollback"
}

test_host_network_is_refused () {
  net_host 1
  local id rc=0
  id=$(new_id)
  # The test's own shell lives in the runtime's (the host's) namespace.
  NETNS_PATH=/proc/$$/ns/net net_bundle "$T/b" roce.io/hca=mlx5_0 'echo started'
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started in the host's network namespace"
  assert_file_contains "$T/$id.err" "roce-hook: $id: network namespace of the container: one of its own vs the host's (fix: "
  ip link show roce0 >/dev/null 2>&1 && fail "roce0 on the host"
  assert_eq "" "$(held_addresses)" "leases"
}

# 64 containers at once: 64 distinct addresses, every one on the container's
# roce0, and none left once they all stopped.
test_64_parallel_starts () {
  net_host 1
  local n i ids=() pids=()
  n=$(rounds 64 24)
  # Under memcheck a start holds the store's lock some hundred ms: the
  # last of 64 waits longer than the default 10 s (the hooks' own timeout
  # is 120 s there too).
  if [ -n "${ROCE_VALGRIND:-}" ]; then
    jq '.lock_timeout_ms = 120000' "$POLICY" > "$POLICY.new" && mv "$POLICY.new" "$POLICY"
  fi
  net_bundle "$T/b0" roce.io/hca=mlx5_0 'sleep 120'
  for ((i = 1; i <= n; i++)); do
    mkdir -p "$T/b$i"
    sed "s|\"path\": \"rootfs\"|\"path\": \"$T/b0/rootfs\"|" "$T/b0/config.json" > "$T/b$i/config.json"
    ids+=("$(new_id)")
    defer runtime delete -f "${ids[$((i - 1))]}"
  done
  runtime_opts
  for ((i = 1; i <= n; i++)); do
    timeout 120 "$OCI_RUNTIME" "${RUNTIME_OPTS[@]}" run -d --bundle "$T/b$i" "${ids[$((i - 1))]}" \
      </dev/null >"$T/run$i.out" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}" || fail "start $((i + 1)): $(cat "$T/run$((i + 1)).out")"
  done
  local seen=() a
  for ((i = 0; i < n; i++)); do
    a=$(ns_addr "$(container_pid "${ids[$i]}")" roce0)
    [ -n "$a" ] || fail "${ids[$i]} has no roce0 address"
    seen+=("${a%/24}")
  done
  local dups
  dups=$(printf '%s\n' "${seen[@]}" | sort | uniq -d)
  [ -z "$dups" ] || fail "addresses held twice: $dups"
  assert_eq "$(printf '%s\n' "${seen[@]}" | sort)" "$(held_addresses)" "the store vs the containers"
  pids=()
  for ((i = 0; i < n; i++)); do
    runtime delete -f "${ids[$i]}" >/dev/null 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do wait "${pids[$i]}" || true; done
  assert_eq "" "$(held_addresses)" "leases after all stopped"
}

# The hook SIGKILLed mid-way (before the rename of the store, after the lease,
# after the first link): the store stays readable, no address is held twice,
# and gc releases what the dead container held once its namespace is gone.
test_killed_hook_then_gc_leaves_nothing () {
  net_host 1
  local point pid id rc out other
  # The hook is run by hand on a process that has only its own network
  # namespace: the spec says so, or the hook would refuse the pid.
  NAMESPACES_JSON='[{"type":"network"}]' net_bundle "$T/b"
  for point in store-write lease link; do
    pid=$(netns_process)
    id=crash-$point
    rc=0
    oci_state "$id" "$pid" "$T/b" | ROCE_TEST_CRASH=$point "$BUILD/helpers/roce-hook-test" --config "$POLICY" prestart || rc=$?
    assert_eq 137 "$rc" "exit status of the hook killed at $point"
    out=$(hook_leases --json) || fail "store unreadable after a kill at $point: $out"
    if [ "$point" = store-write ]; then
      assert_eq "" "$(held_addresses)" "leases after a kill before the rename"
    else
      assert_eq "198.18.10.100" "$(held_addresses)" "leases after a kill at $point"
      assert_contains "$(hook_leases)" "$id" "holder"
    fi
    # Another container meanwhile gets an address nobody holds.
    other=$(new_id)
    net_bundle "$T/o-$point" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0'
    run_container "$other" "$T/o-$point" || fail "start after the kill: $(cat "$T/$other.err")"
    if [ "$point" = store-write ]; then
      assert_file_contains "$T/$other.out" "inet 198.18.10.100/24"
    else
      assert_file_contains "$T/$other.out" "inet 198.18.10.101/24"
    fi
    # gc keeps a lease whose namespace lives, releases it once it is gone
    # (the other container's own lease is its reaper's).
    leases_settled "$POLICY" >/dev/null
    assert_contains "$("$HOOK" --config "$POLICY" gc)" "gc: released 0 leases"
    kill -9 "$pid"
    for ((i = 0; i < 100; i++)); do [ -e "/proc/$pid/ns/net" ] || break; sleep 0.02; done
    out=$(gc_until ", 0 held") || fail "gc failed: $out"
    assert_contains "$out" "gc: released" "gc"
    assert_eq "" "$(held_addresses)" "leases after gc (killed at $point)"
  done
}

# A node upgraded with a container running: the store of the earlier version
# (one leases.json) is moved into the per-holder layout by the next start;
# nothing is lost: the running container keeps its address, the new one gets
# another, and each one's stop releases its own.
test_store_of_an_earlier_version_is_upgraded_with_its_leases () {
  net_host 1
  local a b
  a=$(new_id)
  b=$(new_id)
  net_bundle "$T/a"
  start_container "$a" "$T/a" || fail "refused: $(cat "$T/$a.err")"
  assert_eq "198.18.10.100" "$(held_addresses)" "lease of the first"
  # The earlier version's store: the same holders, in one file.
  python3 - "$T/state" <<'PY' || fail "could not write the old store"
import json, os, shutil, sys
d = sys.argv[1]
hs = [json.load(open(os.path.join(d, "holders", f))) for f in os.listdir(os.path.join(d, "holders")) if not f.startswith(".")]
json.dump({"version": 1, "holders": hs}, open(os.path.join(d, "leases.json"), "w"))
for sub in ("holders", "addrs", "containers"):
    shutil.rmtree(os.path.join(d, sub))
PY
  assert_eq "198.18.10.100" "$(held_addresses)" "the old store read as it is"
  net_bundle "$T/b" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0'
  run_container "$b" "$T/b" || fail "start after the upgrade: $(cat "$T/$b.err")"
  assert_file_contains "$T/$b.out" "inet 198.18.10.101/24"
  [ ! -e "$T/state/leases.json" ] || fail "leases.json left after the move"
  assert_eq "198.18.10.100" "$(held_addresses)" "after the second's life"
  runtime delete -f "$a" >/dev/null 2>&1
  assert_eq "" "$(held_addresses)" "after the first's stop"
}

# A holder file torn by a power loss in this boot (its writer's machine, or a
# hand edit): the starts of other containers go on, and `leases` names the
# file with a fix instead of guessing.
test_an_unreadable_holder_file_blocks_only_itself () {
  net_host 1
  local id key
  id=$(new_id)
  mkdir -p "$T/state/holders"
  key="$(cat /proc/sys/kernel/random/boot_id)_4_4026599999"
  printf '{"netns":{"boot_id":' > "$T/state/holders/$key"
  net_bundle "$T/b" roce.io/hca=mlx5_0 'ip -o -4 addr show roce0'
  run_container "$id" "$T/b" || fail "a start refused for another holder's file: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "inet 198.18.10.100/24"
  local out rc=0
  out=$(hook_leases 2>&1) || rc=$?
  [ "$rc" -ne 0 ] || fail "leases read a torn store: $out"
  assert_contains "$out" "holders/$key\`: a holder this version reads vs " "leases"
  assert_contains "$out" "(fix: " "leases"
  assert_eq 1 "$(printf '%s\n' "$out" | wc -l)" "one line"
}

test_poststop_is_idempotent_and_quiet_for_the_gone () {
  net_host 1
  local id rc=0 out
  id=$(new_id)
  net_bundle "$T/b" roce.io/hca=mlx5_0 'true'
  run_container "$id" "$T/b" || fail "refused: $(cat "$T/$id.err")"
  for i in 1 2; do
    out=$(printf '{"ociVersion":"1.0.2","id":"%s","status":"stopped","bundle":"%s"}' "$id" "$T/b" |
          "$HOOK" --config "$POLICY" poststop 2>&1) || rc=$?
    assert_eq 0 "$rc" "poststop $i of a gone container"
    assert_eq "" "$out" "poststop $i output"
  done
  assert_eq "" "$(held_addresses)" "leases"
}

run_tests
