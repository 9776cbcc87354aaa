#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The runtime matrix's package cache: the runtimes GPU clusters run now,
# newer than Debian 12's, fetched by name and version from Debian's own
# suites and unpacked into a cache directory, never installed.
#
#   newer-runtimes.sh fetch          every set below into the cache (make runtimes-cache)
#   newer-runtimes.sh dir SET        the set's bin directory (containerd-2.1.9, ...);
#                                    exit 1 with the reason on stderr when it is not there
#   newer-runtimes.sh list           each set and where it is, or why not
#
# How: `apt-get download NAME=VERSION` with an apt state of its own (a
# sources list naming that suite, its own lists, cache and status under the
# cache directory: -o Dir::State, Dir::Cache, Dir::Etc::sourcelist, ...),
# then `dpkg-deb -x`.  The host's apt state and packages are never touched.
# The mirror is the machine's own (its /etc/apt sources: the entry for its
# release's suite), or ROCE_DEBIAN_MIRROR.  A warm cache costs no network;
# a version the mirror lacks (or no network at all) is said, recorded, and
# never fails the caller: the matrix's tests skip with that reason.
#
# ROCE_RUNTIMES_CACHE: the cache (default /var/cache/roce-hook/runtimes).
set -u
CACHE=${ROCE_RUNTIMES_CACHE:-/var/cache/roce-hook/runtimes}

# The sets: SET SUITE PACKAGE=UPSTREAM_VERSION...  A set's programs are
# every file of its packages' usr/bin and usr/sbin.
SETS=(
  "containerd-2.1.9 sid containerd=2.1.9"
  "containerd-1.7.24 trixie containerd=1.7.24"
  "docker-28.5.2 sid docker.io=28.5.2 docker-cli=28.5.2"
  "etcd-3.5.30 sid etcd-server=3.5.30 etcd-client=3.5.30"
)

say () { printf 'runtimes-cache: %s\n' "$*"; }

# The private apt: its state under $CACHE/apt, its sources the suites the
# sets name (tests/helpers/private-apt.sh).
APT_DIR=$CACHE/apt
# shellcheck source=tests/helpers/private-apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/private-apt.sh"

apt_setup () {
  local s suites=()
  mkdir -p "$CACHE/debs"
  for s in "${SETS[@]}"; do
    read -r _ s _ <<<"$s"
    case " ${suites[*]} " in *" deb $s "*) ;; *) suites+=("deb $s") ;; esac
  done
  # One update a run; its lists stay for the next missing set.
  apt_private_setup "${suites[@]}"
}

# full_version PACKAGE UPSTREAM SUITE: the suite's Debian version of
# PACKAGE whose upstream part is UPSTREAM (2.1.9 -> 2.1.9+ds1-5).
full_version () {
  apt-cache "${APT_OPTS[@]}" madison "$1" 2>/dev/null |
    awk -F'|' -v u="$2" -v s="$3" '{ gsub(/ /, "", $2) }
      index($2, u) == 1 && substr($2, length(u) + 1, 1) ~ /^[-+~]$/ && $3 ~ (" " s "/") { print $2; exit }'
}

# fetch_set "SET SUITE PKG=VER...": downloads and unpacks the set into
# $CACHE/SET/root, links its programs in $CACHE/SET/bin; the reason in
# $CACHE/SET/missing when it cannot.
fetch_set () {
  local set suite pkgs pv p v full deb d why="" got=()
  read -r set suite pkgs <<<"$1"
  d=$CACHE/$set
  rm -rf "$d.new"
  mkdir -p "$d.new/root" "$d.new/bin"
  for pv in $pkgs; do
    p=${pv%%=*} v=${pv#*=}
    full=$(full_version "$p" "$v" "$suite")
    [ -n "$full" ] || { why="$p $v: not in Debian $suite on the mirror ($(apt-cache "${APT_OPTS[@]}" madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); printf "%s%s", n++ ? ", " : "has ", $2}'))"; break; }
    ( cd "$CACHE/debs" && apt-get "${APT_OPTS[@]}" download "$p=$full" ) > "$d.new/download.log" 2>&1 ||
      { why="apt-get download $p=$full: $(grep -m1 -E '^(E|W):' "$d.new/download.log" | cut -c1-160)"; break; }
    deb=$(ls "$CACHE"/debs/"${p}_${full/*:/}"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] && dpkg-deb -x "$deb" "$d.new/root" || { why="dpkg-deb -x $deb failed"; break; }
    got+=("$p=$full")
  done
  if [ -z "$why" ]; then
    for f in "$d.new"/root/usr/bin/* "$d.new"/root/usr/sbin/*; do
      [ -e "$f" ] || [ -L "$f" ] || continue
      ln -s "../root/${f#"$d.new/root/"}" "$d.new/bin/${f##*/}"
    done
    printf '%s\n' "${got[@]}" > "$d.new/packages"
    rm -rf "$d" "$d.missing"
    mv "$d.new" "$d"
    rm -f "$CACHE"/debs/*.deb
    say "$set: $(tr '\n' ' ' < "$d/packages")in $d/bin"
  else
    rm -rf "$d.new"
    echo "$why" > "$d.missing"
    say "$set: not fetched: $why"
  fi
}

fetch () {
  local s set missing=() why
  for s in "${SETS[@]}"; do
    read -r set _ <<<"$s"
    [ -s "$CACHE/$set/packages" ] && [ -d "$CACHE/$set/bin" ] || missing+=("$s")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if [ "$(id -u)" -ne 0 ] && ! mkdir -p "$CACHE" 2>/dev/null; then
    say "not fetched: $CACHE not writable (make runtimes-cache as root, or ROCE_RUNTIMES_CACHE=DIR)"
    return 0
  fi
  mkdir -p "$CACHE" || { say "not fetched: cannot make $CACHE"; return 0; }
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    { say "not fetched: needs apt-get and dpkg-deb (a Debian machine)"; return 0; }
  # One fetcher at a time (worktrees and CI share the cache).
  exec 9>"$CACHE/.lock"
  flock -w 600 9 || { say "not fetched: $CACHE/.lock held for 10 minutes"; return 0; }
  if ! why=$(apt_setup); then
    for s in "${missing[@]}"; do read -r set _ <<<"$s"; echo "$why" > "$CACHE/$set.missing"; done
    say "not fetched: $why"
    return 0
  fi
  apt_opts
  for s in "${missing[@]}"; do fetch_set "$s"; done
  # Every set there: the private apt's lists and caches (some 180 MB) go.
  ls "$CACHE"/*.missing >/dev/null 2>&1 || rm -rf "$APT_DIR"
  return 0
}

# dir SET: the set's bin directory, or why not (exit 1).
dir () {
  if [ -s "$CACHE/$1/packages" ] && [ -d "$CACHE/$1/bin" ]; then
    echo "$CACHE/$1/bin"
  elif [ -s "$CACHE/$1.missing" ]; then
    echo "$1 not in $CACHE: $(cat "$CACHE/$1.missing")" >&2
    return 1
  else
    echo "$1 not in $CACHE (make runtimes-cache fetches it)" >&2
    return 1
  fi
}

case ${1:-fetch} in
  fetch) fetch ;;
  dir) dir "${2:?usage: newer-runtimes.sh dir SET}" ;;
  list)
    for s in "${SETS[@]}"; do
      read -r set _ <<<"$s"
      if d=$(dir "$set" 2>&1); then echo "$set $(tr '\n' ' ' < "$CACHE/$set/packages")$d"; else echo "$set missing: $d"; fi
    done ;;
  *) echo "usage: newer-runtimes.sh fetch|dir SET|list" >&2; exit 2 ;;
esac
