#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device step's cost, on the fake host of the tests, against a running
# runc container: devices_setup() (libibverbs listing, host node checks, the
# bind mounts in a child that enters the container's mount namespace, the
# device cgroup rule, prlimit) and devices_undo(), timed inside the process
# (tests/helpers/devices-probe --time).  Once with runc's cgroup v1 devices
# controller (this host), once with cgroup v2, where the runtime's BPF device
# program is rebuilt and swapped.
# Usage: sudo contrib/bench/devices.sh [N]   (N rounds of each, default 30)
# shellcheck source=common.bash
source "$(dirname "$0")/common.bash"
bench_begin devices 30 "$@"

# shellcheck source=../../tests/helpers/devices.sh
source "$ROOT/tests/helpers/devices.sh"
OCI_RUNTIME=runc
[ -x "$BUILD/helpers/devices-probe" ] || { echo "bench/devices: build the helpers first (make bench does)" >&2; exit 1; }

skip () { echo "bench/devices: $*" >&2; exit 1; }
fail () { echo "bench/devices: $*" >&2; exit 1; }
dev_host
# The limit the container already has: prlimit then changes nothing that a
# later round could not set again without CAP_SYS_RESOURCE.
POLICY_MEMLOCK=$(($(ulimit -Hl) * 1024))
[ "$(ulimit -Hl)" = unlimited ] && POLICY_MEMLOCK='"unlimited"'
write_policy "$POLICY" warn "mlx5_0 $NIC0 10"

# stats FILE COLUMN: "median / p90" in ms.
stats () {
  awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR]=$1} END {
    m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)];
    printf "%7.3f / %7.3f", m / 1000, p / 1000 }'
}

round () { # NAME
  local id=bench-dev-$1
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 120' make_bundle "$T/$1" "$POLICY"
  probe_running "$id" "$T/$1"
  "$BUILD/helpers/devices-probe" "$POLICY" "$T/$id.state" --time "$N" > "$T/$1.times" ||
    fail "devices-probe ($1) failed"
  runtime delete -f "$id" >/dev/null 2>&1
  printf '%-34s %s    %s\n' "$2" "$(stats "$T/$1.times" 1)" "$(stats "$T/$1.times" 2)"
}

echo "devices step, $N rounds (ms, median / p90)   setup                undo"
round v1 "cgroup v1 (devices.allow)"
mount -t cgroup2 none /sys/fs/cgroup
defer umount -l /sys/fs/cgroup
round v2 "cgroup v2 (BPF program swapped)"
