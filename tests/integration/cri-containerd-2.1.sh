# SPDX-License-Identifier: Apache-2.0
# The CRI suite (cri.sh) on Debian unstable's containerd 2.1.9 (the runtime
# matrix, tests/helpers/matrix.sh): its configuration version 3, NRI and
# CDI on by default, install.sh's version 3 drop-in, a device plugin's CDI
# device.  make check runs a pod through the drop-in and the handler in each
# config version (CDI runs there on Docker 28); make check-all the whole
# suite.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"
matrix_cell ROCE_CONTAINERD_BIN containerd-2.1.9 test_cri_force_removal_of_a_running_pod_leaves_nothing \
  test_cri_handler_in_the_config_version_containerd_reads_and_its_cleanup || return 0
source "$(dirname "${BASH_SOURCE[0]}")/cri.sh"
run_tests
rm -rf "$CRI_CACHE"
