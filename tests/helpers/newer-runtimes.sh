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

# mirror_line: "URI KEYRING" of the machine's Debian mirror: the apt
# source whose suites include this release's own (bookworm here), from
# deb822 .sources files or sources.list lines.
mirror_line () {
  local codename uri="" key="" f
  if [ -n "${ROCE_DEBIAN_MIRROR:-}" ]; then
    echo "$ROCE_DEBIAN_MIRROR ${ROCE_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}"
    return 0
  fi
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 1
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    read -r uri key < <(awk -v c="$codename" '
      function flush() { if (ok && uri != "") { print uri, key; found = 1; exit } ok = 0; uri = ""; key = "" }
      /^#/ { next }
      /^[ \t]*$/ { flush(); next }
      tolower($1) == "types:" { deb = 0; for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "signed-by:" { key = $2 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == c) ok = 1 }
      END { if (!found) flush() }' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      read -r uri key < <(awk -v c="$codename" '
        $1 != "deb" { next }
        { k = ""; i = 2
          if ($2 ~ /^\[/) { for (; i <= NF; i++) { if ($i ~ /signed-by=/) { k = $i; sub(/.*signed-by=/, "", k); sub(/\]$/, "", k) } if ($i ~ /\]$/) { i++; break } } }
          if ($(i + 1) == c) { print $i, k; exit } }' "$f")
      [ -n "$uri" ] && break
    done
  fi
  [ -n "$uri" ] || return 1
  echo "$uri ${key:-/usr/share/keyrings/debian-archive-keyring.gpg}"
}

# The private apt: its state under $CACHE/apt, its sources the suites the
# sets name.
APT_DIR=$CACHE/apt
apt_opts () {
  APT_OPTS=(-o "Dir::State=$APT_DIR/state" -o "Dir::State::Lists=$APT_DIR/state/lists"
    -o "Dir::State::status=$APT_DIR/state/status" -o "Dir::Cache=$APT_DIR/cache"
    -o "Dir::Cache::pkgcache=$APT_DIR/cache/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$APT_DIR/cache/srcpkgcache.bin"
    -o "Dir::Etc::sourcelist=$APT_DIR/sources.list" -o "Dir::Etc::sourceparts=$APT_DIR/sources.list.d"
    -o "Dir::Etc::preferences=$APT_DIR/preferences" -o "Dir::Etc::preferencesparts=$APT_DIR/preferences.d"
    -o "APT::Sandbox::User=root" -o "Acquire::http::Timeout=20" -o "Acquire::Retries=1"
    -o "Debug::NoLocking=1" -q)
}

apt_setup () {
  local uri key s suites=""
  read -r uri key < <(mirror_line) || true
  [ -n "${uri:-}" ] || { echo "no Debian mirror in /etc/apt (sources for this release's suite) and no ROCE_DEBIAN_MIRROR"; return 1; }
  mkdir -p "$APT_DIR/state/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/sources.list.d" \
    "$APT_DIR/preferences.d" "$CACHE/debs"
  for s in "${SETS[@]}"; do
    read -r _ s _ <<<"$s"
    case " $suites " in *" $s "*) ;; *) suites+=" $s" ;; esac
  done
  for s in $suites; do echo "deb [signed-by=$key] $uri $s main"; done > "$APT_DIR/sources.list"
  : > "$APT_DIR/state/status"
  apt_opts
  # One update a run; its lists stay for the next missing set.
  # (apt-get update says a failed fetch with a warning and exit 0.)
  if ! apt-get "${APT_OPTS[@]}" update > "$APT_DIR/update.log" 2>&1 ||
     grep -q -E '^(E:|W: Failed to fetch|W: Some index files failed)' "$APT_DIR/update.log"; then
    echo "apt-get update from $uri: $(grep -m1 -E '^(E|W):' "$APT_DIR/update.log" | cut -c1-160)"
    return 1
  fi
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
