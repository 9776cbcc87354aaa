# SPDX-License-Identifier: Apache-2.0
# The cluster suite (cluster.sh) against Debian unstable's etcd 3.5.30
# (etcd-server and etcd-client, the runtime matrix: tests/helpers/matrix.sh).
# make check runs the two nodes through runc; make check-all the whole suite.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"
matrix_cell ROCE_ETCD_BIN etcd-3.5.30 test_two_nodes_through_runc_get_different_addresses || return 0
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"
run_tests
