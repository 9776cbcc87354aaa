# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# roce_in_private_ns NAME SCRIPT ARGS...: for the demo and the benchmarks.
# Outside, re-runs SCRIPT (as root) in a private mount namespace and exits
# with its status, removing the host /dev mount point afterwards.  Inside,
# loads the harness, builds the private /dev of the fake host and a temp dir
# $T, both undone when the script ends.
roce_in_private_ns () {
  local name=$1
  shift
  if [ -z "${_ROCE_PRIVATE_NS:-}" ]; then
    [ "$(id -u)" -eq 0 ] || { echo "$name: needs root (sudo)" >&2; exit 1; }
    ROCE_HOSTDEV=$(mktemp -d /tmp/roce-hostdev.XXXXXX)
    export ROCE_HOSTDEV
    _ROCE_PRIVATE_NS=1 unshare -m --propagation private bash "$@"
    local rc=$?
    rmdir "$ROCE_HOSTDEV"
    exit $rc
  fi
  # shellcheck source=lib.sh
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  fakehost_private_dev
  T=$(mktemp -d "/tmp/roce-$name.XXXXXX")
  trap '_run_deferred; rm -rf "$T"' EXIT
}
