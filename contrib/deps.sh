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
python3-grpcio python3-grpc-tools umoci skopeo hyperfine strace curl python3 patchelf
docker.io"
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
