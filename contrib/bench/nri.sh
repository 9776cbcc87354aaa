#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The NRI path beside the shim's and beside the kernel's floor, in one run,
# on the tests' fake host (a veth end as the NIC, one HCA, qos.mode off)
# with Debian unstable's containerd 2.1.9 from the runtime cache (make
# runtimes-cache; said and skipped without it):
#
#   a RoCE pod's start through the CRI (RunPodSandbox, CreateContainer,
#     StartContainer: the wall time the kubelet waits), on runc with
#     `roce-hook nri` on containerd's NRI socket, and on the `roce` handler
#     (roce-runtime, the hook) with no plugin connected;
#   the plugin's own CPU per RoCE container: its process's run time
#     (/proc/<pid>/schedstat) across one such start (RunPodSandbox,
#     CreateContainer, PostStartContainer: the network, the lease, the
#     rails file, the adjustment), and across the start of a pod that did
#     not ask (the same three requests read and answered, nothing done:
#     NRI's own cost);
#   the floor (contrib/bench/floor.c): the kernel work of an annotated start
#     and nothing else, on a fresh runc container, and the exec'd hook's own
#     annotated prestart on another, as start.sh times them (wait4's rusage,
#     an empty program's subtracted);
#   the plugin's own floor: floor.c's and NRI's messages alone, summed
#     round by round, and the plugin's CPU per RoCE container over it.
# The rounds are interleaved, their order turning; a figure is the median of
# the rounds (its 95% CI in parentheses), a ratio the median of the rounds'
# ratios.
# Usage: sudo contrib/bench/nri.sh [N]   (N rounds, default 20, at least 12)
#   NRI_BASELINE=/other/roce-hook: that build's plugin in the same rounds
#   (its pod start and its CPU per container beside this build's).
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin nri 20 "$@"
[ "$N" -ge 12 ] 2>/dev/null || N=12
# shellcheck source=../../tests/helpers/net.sh
source "$ROOT/tests/helpers/net.sh"

if ! ROCE_CONTAINERD_BIN=$("$ROOT/tests/helpers/newer-runtimes.sh" dir containerd-2.1.9 2>&1); then
  echo "bench/nri: skipped: containerd 2.1.9 is not in the runtime cache: $ROCE_CONTAINERD_BIN"
  exit 0
fi
export ROCE_CONTAINERD_BIN
# shellcheck source=../../tests/helpers/cri.sh
source "$ROOT/tests/helpers/cri.sh"
if ! (cri_needs) 2>"$T/skip"; then
  echo "bench/nri: skipped: $(sed 's/.*SKIP: //' "$T/skip")"
  exit 0
fi

# The programs as a node runs them: installed copies (start.sh says why).
mkdir -p "$T/bin"
for b in roce-hook roce-hook-engine roce-runtime roce-runtime-engine; do
  install -m 0755 "$ROCE_BUILD/$b" "$T/bin/$b"
done
HOOK=$T/bin/roce-hook
SHIM=$T/bin/roce-runtime
BASE=${NRI_BASELINE:-}
if [ -n "$BASE" ]; then
  mkdir -p "$T/base"
  for b in roce-hook roce-hook-engine; do
    install -m 0755 "$(dirname "$BASE")/$b" "$T/base/$b" || { echo "bench/nri: NRI_BASELINE: no $b beside $BASE" >&2; exit 1; }
  done
fi

cri_host
# qos off, as start.sh's; the lease store where a node keeps it.
sed -i 's|"mode": "warn"|"mode": "off"|' "$POLICY"
bench_state_dir
bench_empty nri
bench_cpu nri
bench_floor nri
# shellcheck source=paired.bash
source "$ROOT/contrib/bench/paired.bash"
runtime_opts
RT=("$OCI_RUNTIME" "${RUNTIME_OPTS[@]}")
HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 600' make_bundle "$T/ann" "$POLICY"

# One containerd: the `roce` handler (install.sh's drop-in) and NRI on a
# socket of its own; a plugin connected for the NRI pods alone.
NRI_SOCK=$T/nri.sock
CRI_NRI_SOCK=$NRI_SOCK cri_start
plugin="" plugin_bin=""
plugin_on () { # BINARY
  [ "$plugin_bin" = "$1" ] && return 0
  plugin_off
  local n
  touch "$T/nri.log"
  n=$(grep -c "configured by containerd" "$T/nri.log" || true)
  "$1" --config "$POLICY" nri --socket "$NRI_SOCK" >>"$T/nri.log" 2>&1 &
  plugin=$! plugin_bin=$1
  defer "kill $plugin"
  configured () { [ "$(grep -c "configured by containerd" "$T/nri.log" || true)" -gt "$n" ]; }
  wait_for 10 "the plugin's registration" configured
}
plugin_off () {
  [ -n "$plugin" ] || return 0
  kill "$plugin" && wait "$plugin"
  plugin="" plugin_bin=""
}
# The plugin's run time so far (µs): schedstat's first field, ns on the CPU
# (the plugin is one thread).
plugin_cpu () { awk '{ printf "%d", $1 / 1000 }' "/proc/$plugin/schedstat"; }

CTR_CAPS=IPC_LOCK ctr_json "$T/app.json" app "trap 'exit 0' TERM; sleep 3600 & wait"
one_pod () { # TAG: a RoCE pod started (timed) and removed
  local out c0=0 c1 handler=runc ann=roce.io/hca=mlx5_0
  case $1 in
    plain) plugin_on "$HOOK"; ann=app=plain ;;
    nri) plugin_on "$HOOK" ;;
    base) plugin_on "$T/base/roce-hook" ;;
    shim) plugin_off; handler=roce ;;
  esac
  pod_json "$T/pod.json" "bench-$(rand_hex 3)" default "$handler" "$ann"
  [ -z "$plugin" ] || c0=$(plugin_cpu)
  out=$("${CRI[@]}" startpod "$T/pod.json" "$T/app.json") || { echo "bench/nri: $1: $out" >&2; exit 1; }
  if [ -n "$plugin" ]; then c1=$(plugin_cpu); echo $((c1 - c0)) >> "$T/$1-cpu"; fi
  echo "$out" | awk '{ printf "%d\n", $3 * 1000 }' >> "$T/$1-wall"
  "${CRI[@]}" rmp "$(echo "$out" | cut -d' ' -f1)" || { echo "bench/nri: $1: RemovePodSandbox" >&2; exit 1; }
}

variants=(nri plain shim h1)
[ -n "$BASE" ] && variants+=(base)
[ -n "$FLOOR" ] && variants+=(floor)
for v in "${variants[@]}"; do : > "$T/$v-wall"; : > "$T/$v-cpu"; done
echo "bench/nri: $N rounds of ${variants[*]} (a few minutes)" >&2
load0=$(cut -d' ' -f1 /proc/loadavg)
for ((i = 0; i < N; i++)); do
  order=("${variants[@]:$((i % ${#variants[@]}))}" "${variants[@]:0:$((i % ${#variants[@]}))}")
  for v in "${order[@]}"; do
    case $v in
      nri | plain | base | shim) one_pod "$v" ;;
      h1) one_start h1 "$POLICY" ;;
      floor) one_floor ;;
    esac
  done
done
plugin_off
load1=$(cut -d' ' -f1 /proc/loadavg)

cpu_own h1
if [ -n "$FLOOR" ]; then cpu_own floor; else : > "$T/n-floor-own"; fi
row () { printf '  %-56s %-24s %s\n' "$1" "$2" "$3"; }
printf 'roce-hook NRI benchmark: %d interleaved rounds, medians in ms, their 95%% CI in () (%s, %s cores, load average %s at the start, %s at the end)\n' \
  "$N" "$(uname -r)" "$(nproc)" "$load0" "$load1"
row "figure" "ms" "ratio / goal"
row "RoCE pod start through NRI (runc, the plugin), wall" "$(median_ci "$T/nri-wall" 0)" "$(ratio_ci "$T/nri-wall" "$T/shim-wall" 0) the shim's"
row "RoCE pod start through the shim (roce handler), wall" "$(median_ci "$T/shim-wall" 0)" ""
row "the floor (floor.c): the kernel's work of a start, CPU" "$(median_ci "$T/n-floor-own" 0)" ""
row "the exec'd hook's annotated prestart, own CPU" "$(median_ci "$T/n-h1-own" 0)" "$(ratio_ci "$T/n-h1-own" "$T/n-floor-own" 0) the floor"
row "the plugin's own CPU per RoCE container" "$(median_ci "$T/nri-cpu" 0)" "$(ratio_ci "$T/nri-cpu" "$T/n-floor-own" 0) the floor (goal <= 1.5x)"
row "  the same for a pod without RoCE (NRI's messages alone)" "$(median_ci "$T/plain-cpu" 0)" "$(ratio_ci "$T/plain-cpu" "$T/n-floor-own" 0) the floor"
paste "$T/nri-cpu" "$T/plain-cpu" | awk '{print $1 - $2}' > "$T/nri-work"
row "  the RoCE container's over that pod's" "$(median_ci "$T/nri-work" 0)" "$(ratio_ci "$T/nri-work" "$T/n-floor-own" 0) the floor"
# A plugin's own floor: the kernel's work of the start and the runtime's
# three messages read and answered, which no plugin can do without (the
# goal of 1.5x floor.c leaves for everything else what that sum leaves).
paste "$T/n-floor-own" "$T/plain-cpu" | awk 'NF == 2 {print $1 + $2}' > "$T/nri-floor"
row "the plugin's floor: floor.c and NRI's messages alone" "$(median_ci "$T/nri-floor" 0)" "$(ratio_ci "$T/nri-floor" "$T/n-floor-own" 0) the floor"
row "  the plugin per RoCE container over its floor" "" "$(ratio_ci "$T/nri-cpu" "$T/nri-floor" 0)"
if [ -n "$BASE" ]; then
  row "  NRI_BASELINE's plugin, CPU per RoCE container" "$(median_ci "$T/base-cpu" 0)" "$(ratio_ci "$T/base-cpu" "$T/n-floor-own" 0) the floor"
  row "  this build's over NRI_BASELINE's, CPU" "" "$(ratio_ci "$T/nri-cpu" "$T/base-cpu" 0)"
  row "  NRI_BASELINE's pod start, wall" "$(median_ci "$T/base-wall" 0)" "$(ratio_ci "$T/base-wall" "$T/shim-wall" 0) the shim's"
fi
