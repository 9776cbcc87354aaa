# SPDX-License-Identifier: Apache-2.0
# The CRI suite (cri.sh) on Debian 13's containerd 1.7.24 (the runtime
# matrix, tests/helpers/matrix.sh): configuration version 2, as 1.6's.
# make check-all runs it; make check's budget has no room for it.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"
matrix_cell ROCE_CONTAINERD_BIN containerd-1.7.24 || return 0
source "$(dirname "${BASH_SOURCE[0]}")/cri.sh"
run_tests
rm -rf "$CRI_CACHE"
