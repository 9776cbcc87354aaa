#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conformance suites' sources, as Debian 12 packages them, fetched from
# the machine's Debian mirror and built once into a cache, so that
# tests/conformance/run.sh needs no network:
#
#   runtime-tools  the OCI runtime-tools validation suite (validation/*/*.t
#                  and runtimetest) from Debian's source package
#                  golang-github-opencontainers-runtime-tools (0.9.0+git
#                  20220423.g0105384), built with Debian's Go 1.19 against
#                  the Go libraries Debian packages (GOPATH mode on
#                  /usr/share/gocode, no module proxy); tap-go, which Debian
#                  does not package, from the source's vendor/ when it has
#                  one, else the suite is skipped with that reason
#   runc           runc's bats integration tests from Debian's source
#                  package of the runc installed here (1.1.5+ds1), its
#                  helpers (recvtty, sd-helper, seccompagent) built the same
#                  way, and the images the tests would download made here:
#                  testdata/busybox-<arch>.tar.xz from Debian's
#                  busybox-static, testdata/debian-<arch>.tar.xz the same
#                  plus libc-bin's static ldconfig (hooks.bats runs
#                  ldconfig, nothing else of Debian)
#
#   fetch.sh [runtime-tools|runc]...   (both without an argument)
#
# How: `apt-get source NAME=VERSION` with an apt state of its own
# (tests/helpers/private-apt.sh: a deb-src list for this release's suites
# on the machine's own mirror, its lists and caches under $CACHE/apt), then
# dpkg-source -x with Debian's patches; the host's apt state is never
# touched.  What the build needs is installed by make deps
# (contrib/deps.sh).  A warm cache is a no-op and costs no network; a suite
# that cannot be fetched or built records why in $CACHE/<name>.reason
# (run.sh skips it with that reason) and never fails the caller.
#
# ROCE_CONFORMANCE_CACHE: the cache (default /var/cache/roce-hook/conformance).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${ROCE_CONFORMANCE_CACHE:-/var/cache/roce-hook/conformance}
APT_DIR=$CACHE/apt
# shellcheck source=tests/helpers/private-apt.sh
. "$HERE/../helpers/private-apt.sh"

say () { printf 'conformance-fetch: %s\n' "$*"; }

# no NAME REASON: NAME cannot be run here, and why (run.sh says it).
no () {
  printf '%s\n' "$2" > "$CACHE/$1.reason"
  rm -f "$CACHE/$1.ready"
  say "$1: $2"
  return 1
}

# go_env: Debian's Go, offline: GOPATH mode on Debian's Go libraries
# (/usr/share/gocode/src) and a GOPATH of ours holding the source itself.
go_env () {
  export GO111MODULE=off GOFLAGS='' GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOENV=off
  export GOCACHE=$CACHE/go/build GOPATH=$1:/usr/share/gocode
}

# unpack_quilt DIR ORIG DEBIAN: a source package of format 3.0 (quilt)
# unpacked into DIR, its debian/patches/series applied.
unpack_quilt () {
  local dir=$1 p
  rm -rf "$dir"
  mkdir -p "$dir" && tar -C "$dir" --strip-components=1 -xf "$2" && tar -C "$dir" -xf "$3" || return 1
  [ -f "$dir/debian/patches/series" ] || return 0
  while read -r p _; do
    case $p in '' | '#'*) continue ;; esac
    patch -s -p1 -d "$dir" < "$dir/debian/patches/$p" || return 1
  done < "$dir/debian/patches/series"
}

APT_READY=""
# source_dir NAME PACKAGE[=VERSION] [SUITE...]: Debian's source of PACKAGE
# (that VERSION; else each SUITE's in turn, the first the mirror serves
# whole) unpacked with Debian's patches into $CACHE/NAME/src; the
# version in $CACHE/NAME/version.  apt-get has checked each file it
# downloaded against the suite's signed Sources index; without the .dsc
# (a mirror may lack one file of a source) the tarballs are unpacked and
# debian/patches/series applied as dpkg-source would.
source_dir () {
  local name=$1 pkg=$2 d=$CACHE/$1 why="" s codename orig deb dsc
  shift 2
  [ $# -gt 0 ] || set -- ""
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || { no "$name" "no VERSION_CODENAME in /etc/os-release"; return 1; }
  if [ -z "$APT_READY" ]; then
    # This release's suites, and the next one's for a source this one's
    # pool no longer serves.
    if ! why=$(apt_private_setup "deb-src $codename" "deb-src $codename-updates" \
      "deb-src ${ROCE_CONFORMANCE_NEXT_SUITE:-trixie}"); then
      no "$name" "$why"
      return 1
    fi
    APT_READY=1
  fi
  apt_opts
  for s in "$@"; do
    rm -rf "$d"
    mkdir -p "$d/dl"
    (cd "$d/dl" && apt-get "${APT_OPTS[@]}" source --download-only "$pkg${s:+/$s}") > "$d/source.log" 2>&1
    dsc=$(ls "$d"/dl/*.dsc 2>/dev/null | head -1)
    orig=$(ls "$d"/dl/*.orig.tar.* 2>/dev/null | head -1)
    deb=$(ls "$d"/dl/*.debian.tar.* 2>/dev/null | head -1)
    if [ -n "$dsc" ] && [ -n "$orig" ] && dpkg-source --no-check -x "$dsc" "$d/src" >> "$d/source.log" 2>&1; then
      break
    elif [ -n "$orig" ] && [ -n "$deb" ]; then
      unpack_quilt "$d/src" "$orig" "$deb" >> "$d/source.log" 2>&1 && break
    fi
    why="apt-get source $pkg${s:+/$s}: $(grep -m1 -E '^(E|W):' "$d/source.log" | cut -c1-160)"
    rm -rf "$d/src"
  done
  [ -d "$d/src" ] || { no "$name" "${why:-apt-get source $pkg: nothing fetched}"; return 1; }
  basename "$deb" | sed -n 's/^[^_]*_\(.*\)\.debian\.tar\..*/\1/p' > "$d/version"
  [ -s "$d/version" ] || sed -n 's/^Version: //p' "$dsc" > "$d/version"
  rm -rf "$d/dl"
  say "$name: Debian's ${pkg%%=*} $(cat "$d/version")"
}

# in_gopath NAME IMPORT: moves $CACHE/NAME/src to IMPORT's place in a GOPATH
# of its own ($CACHE/NAME/go), src left as a link to it; that GOPATH on
# stdout.
in_gopath () {
  local d=$CACHE/$1 gp=$CACHE/$1/go
  mkdir -p "$gp/src/$(dirname "$2")" || return 1
  mv "$d/src" "$gp/src/$2" && ln -s "go/src/$2" "$d/src" || return 1
  echo "$gp"
}

# rootfs DIR [EXTRA...]: a busybox-static root file system laid out as the
# images the suites would download (/bin/<applet> for every applet,
# /etc/passwd and group, an empty /lib), with the host files EXTRA at their
# own paths.
rootfs () {
  local root=$1 a f
  shift
  mkdir -p "$root"/{bin,dev,etc,home,lib,root,tmp,usr/bin,usr/lib,usr/sbin,var} || return 1
  chmod 0755 "$root" && chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox" || return 1
  for a in $(/bin/busybox --list); do
    [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
  done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
    'bin:x:2:2:bin:/bin:/bin/false' 'sys:x:3:3:sys:/dev:/bin/false' \
    'nobody:x:65534:65534:nobody:/home:/bin/false' > "$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'bin:x:2:' 'sys:x:3:' 'tty:x:5:' \
    'nogroup:x:65534:' > "$root/etc/group"
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")" && cp "$f" "$root$f" || return 1
  done
}

# image OUT COMPRESSOR [EXTRA...]: rootfs packed into the tarball OUT.
image () {
  local out=$1 z=$2 root
  shift 2
  root=$(mktemp -d "$CACHE/image.XXXXXX") || return 1
  rootfs "$root" "$@" && tar -C "$root" --owner=0 --group=0 "$z" -cf "$out" . || { rm -rf "$root"; return 1; }
  rm -rf "$root"
}

# go_build GOPATH DIR ARGS...: go build in DIR (under GOPATH) at low
# priority, offline.
go_build () {
  local gp=$1 dir=$2
  shift 2
  (go_env "$gp" && cd "$dir" && nice -n 10 go build "$@")
}

fetch_runtime_tools () {
  local d=$CACHE/runtime-tools gp dir t pkgs=() v
  [ -f "$d.ready" ] && return 0
  source_dir runtime-tools golang-github-opencontainers-runtime-tools "$(. /etc/os-release && echo "$VERSION_CODENAME")" \
    "${ROCE_CONFORMANCE_NEXT_SUITE:-trixie}" || return 1
  [ -f "$d/src/rootfs-$(go env GOARCH).tar.gz" ] || { no runtime-tools "its source has no rootfs-$(go env GOARCH).tar.gz"; return 1; }
  gp=$(in_gopath runtime-tools github.com/opencontainers/runtime-tools) || { no runtime-tools "cannot lay out its GOPATH"; return 1; }
  dir=$gp/src/github.com/opencontainers/runtime-tools
  # The suite's TAP writer at tap-go's import path (Debian has no tap-go).
  mkdir -p "$gp/src/github.com/mndrix/tap-go" && cp "$HERE/tap/tap.go" "$gp/src/github.com/mndrix/tap-go/" || return 1
  v=$(cat "$d/version")
  say "runtime-tools: building runtimetest and validation/*/*.t (go $(go env GOVERSION 2>/dev/null))"
  for t in "$dir"/validation/*/*.go; do
    case $t in */util/*) continue ;; esac
    pkgs+=("./validation/$(basename "$(dirname "$t")")")
  done
  if ! { go_build "$gp" "$dir" -tags "netgo osusergo" -ldflags "-extldflags -static -X main.version=$v" \
           -o runtimetest ./cmd/runtimetest &&
         mkdir -p "$d/bin" && go_build "$gp" "$dir" -o "$d/bin/" "${pkgs[@]}"; } > "$d/build.log" 2>&1; then
    no runtime-tools "the build failed: $(grep -m1 -v '^#' "$d/build.log")"
    return 1
  fi
  for t in "${pkgs[@]}"; do
    t=${t##*/}
    mv "$d/bin/$t" "$dir/validation/$t/$t.t" || { no runtime-tools "no $t built"; return 1; }
  done
  rm -rf "${d:?}/bin"
  echo "$v" > "$d.ready"
  rm -f "$d.reason"
  say "runtime-tools: ${#pkgs[@]} validation programs in $dir/validation"
}

fetch_runc () {
  local d=$CACHE/runc gp dir c arch ver
  [ -f "$d.ready" ] && return 0
  [ -x /bin/busybox ] || { no runc "needs /bin/busybox (Debian's busybox-static)"; return 1; }
  [ -x /sbin/ldconfig ] || { no runc "needs /sbin/ldconfig (Debian's libc-bin)"; return 1; }
  # The tests of the runc under test: its own package's version.
  ver=$(dpkg-query -W -f='${Version}' runc 2>/dev/null) || { no runc "runc is not installed (make deps)"; return 1; }
  source_dir runc "runc=$ver" || return 1
  gp=$(in_gopath runc github.com/opencontainers/runc) || { no runc "cannot lay out its GOPATH"; return 1; }
  dir=$gp/src/github.com/opencontainers/runc
  say "runc: building recvtty, sd-helper, seccompagent (go $(go env GOVERSION 2>/dev/null))"
  : > "$d/build.log"
  for c in recvtty sd-helper seccompagent; do
    if ! go_build "$gp" "$dir" -tags seccomp -o "contrib/cmd/$c/$c" "./contrib/cmd/$c" >> "$d/build.log" 2>&1; then
      no runc "the build of $c failed: $(grep -m1 -v '^#' "$d/build.log")"
      return 1
    fi
  done
  say "runc: the busybox and debian images from busybox-static"
  arch=$(go env GOARCH)
  image "$dir/tests/integration/testdata/busybox-$arch.tar.xz" -J &&
    image "$dir/tests/integration/testdata/debian-$arch.tar.xz" -J /sbin/ldconfig /etc/ld.so.conf ||
    { no runc "cannot make the images"; return 1; }
  echo "$ver" > "$d.ready"
  rm -f "$d.reason"
}

mkdir -p "$CACHE" || exit 1
command -v apt-get > /dev/null && command -v dpkg-source > /dev/null ||
  { say "needs apt-get and dpkg-source (a Debian machine; make deps)"; exit 0; }
command -v go > /dev/null || { say "needs go (sh contrib/deps.sh conformance)"; exit 0; }
# One fetcher at a time (worktrees share the cache).
exec 9> "$CACHE/.lock"
flock -w 1200 9 || { say "$CACHE/.lock held for 20 minutes"; exit 0; }
[ $# -gt 0 ] || set -- runtime-tools runc
for s in "$@"; do
  case $s in
    runtime-tools) fetch_runtime_tools ;;
    runc) fetch_runc ;;
    *) say "unknown suite $s (runtime-tools, runc)"; exit 2 ;;
  esac
done
# Every suite there: the private apt's lists (tens of MB) go.
ls "$CACHE"/*.reason > /dev/null 2>&1 || rm -rf "$APT_DIR"
exit 0
