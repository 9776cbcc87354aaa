# SPDX-License-Identifier: Apache-2.0
# The Docker suite (docker.sh) on Debian unstable's Docker 28.5.2 (docker.io
# and docker-cli, the runtime matrix: tests/helpers/matrix.sh), its dockerd
# starting Debian unstable's containerd 2.1.9 (docker.io 28 wants
# containerd >= 1.7; unstable pairs it with 2.1): the containers ask with
# `docker run --annotation roce.io/hca=...`, and CDI devices (`--device
# roce.io/hca=mlx5_0`, the CDI feature on).  make check runs the annotation
# and the CDI tests; make check-all the whole suite.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/matrix.sh"
matrix_cell ROCE_CONTAINERD_BIN containerd-2.1.9 test_annotation_activation_gives_everything \
  test_cdi_device_activates_the_whole_container || return 0
matrix_cell ROCE_DOCKER_BIN docker-28.5.2 || return 0
source "$(dirname "${BASH_SOURCE[0]}")/docker.sh"
run_tests
