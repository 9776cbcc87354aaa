# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The runtime matrix: the CRI, Docker and cluster suites run against
# another version of their runtime, named by a directory of its programs.
#
#   ROCE_CONTAINERD_BIN  containerd, ctr, containerd-shim-runc-v2 (cri.sh;
#                        docker.sh's dockerd starts that containerd)
#   ROCE_DOCKER_BIN      dockerd, docker (docker.sh)
#   ROCE_ETCD_BIN        etcd, etcdctl (cluster.sh, cluster_fencing.sh)
#
# Unset, a suite runs Debian 12's (the programs on PATH).  The matrix's
# files (tests/integration/<suite>-<runtime>-<version>.sh) set them from
# the package cache (tests/helpers/newer-runtimes.sh) and run the suite
# under their own name; by hand:
#   ROCE_ETCD_BIN=$(tests/helpers/newer-runtimes.sh dir etcd-3.5.30) \
#     tests/run-integration tests/integration/cluster.sh

# runtime_bin VAR PROGRAM...: when $VAR names a directory, PATH starts
# with it; RUNTIME_BIN_SKIP says what is missing when it lacks a PROGRAM
# (empty when all are there, or VAR is unset).
runtime_bin () {
  local var=$1 dir p
  shift
  RUNTIME_BIN_SKIP=""
  dir=${!var:-}
  [ -n "$dir" ] || return 0
  for p in "$@"; do
    [ -x "$dir/$p" ] || { RUNTIME_BIN_SKIP="$var=$dir has no $p"; return 0; }
  done
  case ":$PATH:" in *":$dir:"*) ;; *) PATH=$dir:$PATH ;; esac
  export PATH
}

# matrix_cell VAR SET TEST...: in a matrix file, VAR names the cached
# SET's programs (newer-runtimes.sh dir SET); when the set is not in the
# cache, the file is one skip with the cache's reason and the caller
# returns.  The TESTs are make check's share of the file (its budget);
# make check-all (ROCE_SCOPE=all) runs them all.  No TEST: make check runs
# none of the file and says so.  Returns 1 when the file runs nothing.
matrix_cell () {
  local var=$1 set=$2 dir why name
  shift 2
  name=$(basename "${BASH_SOURCE[1]}" .sh)
  if ! dir=$("$ROOT/tests/helpers/newer-runtimes.sh" dir "$set" 2>&1); then
    why=$dir
    echo "skip    $name ($why)"
    echo "0 0 1" >> "$RESULTS"
    return 1
  fi
  printf -v "$var" '%s' "$dir"
  export "${var?}"
  if [ "${ROCE_SCOPE:-}" != all ] && [ -z "${ROCE_TEST_ONLY:-}" ]; then
    if [ $# -eq 0 ]; then
      echo "skip    $name (make check-all runs this file: make check's budget)"
      echo "0 0 1" >> "$RESULTS"
      return 1
    fi
    ROCE_TEST_ONLY="$*"
    export ROCE_TEST_ONLY
  fi
  # The suite sourced after this defines its tests and returns; the
  # matrix file runs them under its own name.
  ROCE_MATRIX=1
  return 0
}
