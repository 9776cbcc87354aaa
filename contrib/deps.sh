#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages roce-hook's build, tests and demo need.
# A no-op (no apt-get at all) when every one of them is already installed.
set -eu
PKGS="gcc make pkg-config libc6-dev musl-tools
libnl-3-dev libnl-route-3-dev libibverbs-dev ibverbs-providers libyajl-dev libcap-dev libseccomp-dev
libcriterion-dev
runc busybox-static iproute2 util-linux procps jq
crun containerd podman python3-yaml
clang clang-format libclang-rt-14-dev valgrind containernetworking-plugins
etcd-server etcd-client libcurl4-openssl-dev openssl
prometheus ethtool go-md2man groff-base man-db
libprotobuf-c-dev protobuf-c-compiler
python3-grpcio python3-grpc-tools umoci skopeo hyperfine strace curl python3 patchelf
docker.io"
# `deps.sh conformance` (make conformance-fetch): what building the
# conformance suites from Debian's sources needs too (tests/conformance/
# fetch.sh): Go, bats, and the Go libraries the two source packages build
# against (GOPATH mode on /usr/share/gocode); make check needs none of it.
CONFORMANCE_PKGS="golang-go bats dpkg-dev xz-utils bsdutils
golang-github-blang-semver-dev golang-github-google-uuid-dev golang-github-hashicorp-go-multierror-dev
golang-github-mrunalp-fileutils-dev golang-github-opencontainers-specs-dev
golang-github-opencontainers-selinux-dev golang-github-sirupsen-logrus-dev
golang-github-stretchr-testify-dev golang-github-urfave-cli-dev golang-github-xeipuuv-gojsonschema-dev
golang-gocapability-dev golang-golang-x-sys-dev golang-gopkg-yaml.v2-dev
golang-dbus-dev golang-github-checkpoint-restore-go-criu-dev golang-github-cilium-ebpf-dev
golang-github-containerd-console-dev golang-github-coreos-go-systemd-dev
golang-github-cyphar-filepath-securejoin-dev golang-github-docker-go-units-dev golang-github-moby-sys-dev
golang-github-seccomp-libseccomp-golang-dev golang-github-vishvananda-netlink-dev golang-golang-x-net-dev
golang-google-protobuf-dev"
[ "${1:-}" != conformance ] || PKGS="$PKGS $CONFORMANCE_PKGS"
# The manifests' offline schema check (contrib/k8s/schema, npm's
# kubernetes-models): Node.js and npm from Debian where the machine has none.
command -v npm > /dev/null || PKGS="$PKGS nodejs npm"
missing=""
for p in $PKGS; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$st" = "installed" ] || missing="$missing $p"
done
# contrib/k8s/schema's packages, as its package-lock.json pins them; then
# the check runs without the network.
schema=$(dirname "$0")/k8s/schema
npm_deps () {
  [ ! -d "$schema/node_modules/kubernetes-models" ] || [ "$schema/package-lock.json" -nt "$schema/node_modules" ] || return 0
  command -v npm > /dev/null || return 0
  echo "deps: npm ci in $schema"
  (cd "$schema" && npm ci --no-audit --no-fund --loglevel=error) && touch "$schema/node_modules"
}
[ -z "$missing" ] && { npm_deps; exit 0; }
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages:$missing (run make deps as root)" >&2
  exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
npm_deps
