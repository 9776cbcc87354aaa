#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An IPv6 start beside an IPv4 one, in one run, on the fake host of the
# tests (a veth end as the NIC, one HCA, qos.mode off, fabric defaults):
# the hook's prestart run directly (as a runtime runs it) against a live
# container's namespaces (`runc create`, no hooks), a fresh container for
# each, with the rail IPv4 (198.18.10.0/24), IPv6 (2001:2:0:10::/64) and
# dual-stack, the three interleaved round by round (their order turning),
# an empty program's spawn beside each.  Wall and CPU (wait4's rusage),
# medians, and the IPv6 start's CPU over the IPv4 one's (the spawn's
# subtracted), round by round, with its 95% interval: on a loaded machine
# the wall clock measures the others' work as much as the hook's.  Then one start of each under strace: the netlink messages it
# sends (a netlink socket's sendmsg/sendto, one request each) and the
# other sockets' sends, which explain the difference.
# Usage: sudo contrib/bench/ipv6.sh [N]   (N rounds, default 40)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin ipv6 40 "$@"
# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"
# shellcheck source=paired.bash
source "$ROOT/contrib/bench/paired.bash"

net6_host 1 dual
sed -i "s|\"state_dir\": \"[^\"]*\"|\"state_dir\": \"$T/state\"|" "$POLICY"
jq '.hcas.mlx5_0 |= del(.subnet6, .pool6, .gateway6, .routes6)' "$POLICY" > "$T/p4.json"
jq '.hcas.mlx5_0 |= (del(.gateway, .routes, .subnet6, .pool6, .gateway6, .routes6)
      + { subnet: .subnet6, pool: .pool6, gateway: .gateway6, routes: .routes6 })' "$POLICY" > "$T/p6.json"
cp "$POLICY" "$T/pd.json"
bench_empty ipv6
bench_cpu ipv6
# The hook as a node runs it: a copy (a rebuild meanwhile leaves it be).
install -m 0755 "$HOOK" "$T/roce-hook" && HOOK=$T/roce-hook
runtime_opts
# shellcheck disable=SC2034 # one_start (common.bash) runs it
RT=("$OCI_RUNTIME" "${RUNTIME_OPTS[@]}")
HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 600' make_bundle "$T/ann" "$POLICY"

order=(4 6 d)
for ((i = 0; i < N; i++)); do
  for ((k = 0; k < 3; k++)); do f=${order[$(((i + k) % 3))]}; one_start "$f" "$T/p$f.json"; done
done
[ -z "$(held_addresses)" ] || { echo "bench/ipv6: leases left: $(held_addresses)" >&2; exit 1; }

# The sends of one start of each family: strace's record of every
# sendmsg/sendto, each told by its socket's family (the fd's line in
# strace -yy: NETLINK, or an INET6/PACKET socket of the NS/NA messages).
sends () { # FAMILY: "<netlink sends> <other sends>" (strace follows $T/cpu to the hook)
  local f=$1
  : > "$T/$f-strace"
  one_start "s$f" "$T/p$f.json" strace -f -qq -yy -e trace=sendmsg,sendto -o "$T/$f-strace"
  awk '/NETLINK/ {n++; next} /send/ {o++} END {printf "%d %d", n, o}' "$T/$f-strace"
}
read -r nl4 o4 <<<"$(sends 4)"
read -r nl6 o6 <<<"$(sends 6)"
read -r nld od <<<"$(sends d)"

med () { median_us "$1" | awk '{printf "%.2f", $1 / 1000}'; }
own () { awk -v a="$(median_us "$1")" -v b="$(median_us "$2")" 'BEGIN {printf "%.2f", (a - b) / 1000}'; }
n=$T/n
printf 'roce-hook IPv6 start beside IPv4: %d rounds, interleaved, ms (%s, %s cores, load %s)\n' \
  "$N" "$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-40s %8s %8s %10s %16s\n' "prestart, 1 HCA" "wall" "own" "CPU own" "netlink/other"
for f in 4 6 d; do
  case $f in 4) name="IPv4 rail"; s="$nl4/$o4" ;; 6) name="IPv6 rail"; s="$nl6/$o6" ;; d) name="dual-stack rail"; s="$nld/$od" ;; esac
  printf '  %-40s %8s %8s %10s %16s\n' "$name" "$(med "$n-$f-start")" "$(own "$n-$f-start" "$n-$f-spawn")" \
    "$(own "$n-$f-cpu" "$n-$f-cpuspawn")" "$s"
done
printf '  %-40s %8s\n' "empty program (the spawn)" "$(med "$n-4-spawn")"
printf '  %-40s %s\n' "IPv6 / IPv4, own CPU (round by round)" "$(ratio_ci "$n-6-cpu" "$n-4-cpu" "$(median_us "$n-4-cpuspawn")")"
printf '  %-40s %s\n' "IPv6 - IPv4, CPU (round by round)" "$(paired "$n-6-cpu" "$n-4-cpu") ms ($(paired_ci "$n-6-cpu" "$n-4-cpu"))"
printf '  %-40s %s\n' "dual - IPv4, CPU (round by round)" "$(paired "$n-d-cpu" "$n-4-cpu") ms ($(paired_ci "$n-d-cpu" "$n-4-cpu"))"
