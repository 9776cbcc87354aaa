# SPDX-License-Identifier: Apache-2.0
# The cluster fencing suite (cluster_fencing.sh) against Debian unstable's
# etcd 3.5.30 (the runtime matrix: tests/helpers/matrix.sh).  make
# check-all runs it; make check's budget has no room for it.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"
matrix_cell ROCE_ETCD_BIN etcd-3.5.30 || return 0
source "$(dirname "${BASH_SOURCE[0]}")/cluster_fencing.sh"
run_tests
