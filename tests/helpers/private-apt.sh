# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# An apt of its own, sourced by the scripts that fetch Debian packages into a
# cache without touching the host's apt state or packages
# (tests/helpers/newer-runtimes.sh, tests/conformance/fetch.sh): its sources
# list, lists, caches and status under APT_DIR (set before calling), the
# mirror the machine's own (the apt source for its release's suite) or
# ROCE_DEBIAN_MIRROR (ROCE_DEBIAN_KEYRING).

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

# apt_opts: APT_OPTS, the options that point apt-get and apt-cache at
# APT_DIR.
apt_opts () {
  APT_OPTS=(-o "Dir::State=$APT_DIR/state" -o "Dir::State::Lists=$APT_DIR/state/lists"
    -o "Dir::State::status=$APT_DIR/state/status" -o "Dir::Cache=$APT_DIR/cache"
    -o "Dir::Cache::pkgcache=$APT_DIR/cache/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$APT_DIR/cache/srcpkgcache.bin"
    -o "Dir::Etc::sourcelist=$APT_DIR/sources.list" -o "Dir::Etc::sourceparts=$APT_DIR/sources.list.d"
    -o "Dir::Etc::preferences=$APT_DIR/preferences" -o "Dir::Etc::preferencesparts=$APT_DIR/preferences.d"
    -o "APT::Sandbox::User=root" -o "Acquire::http::Timeout=20" -o "Acquire::Retries=1"
    -o "Debug::NoLocking=1" -q)
}

# apt_private_setup "TYPE SUITE"...: the private apt's sources (TYPE deb or
# deb-src, each SUITE's main on the mirror), its lists fetched; APT_OPTS
# set.  On failure, the reason on stdout and exit 1.
apt_private_setup () {
  local uri key t s
  read -r uri key < <(mirror_line) || true
  [ -n "${uri:-}" ] || { echo "no Debian mirror in /etc/apt (sources for this release's suite) and no ROCE_DEBIAN_MIRROR"; return 1; }
  mkdir -p "$APT_DIR/state/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/sources.list.d" \
    "$APT_DIR/preferences.d"
  for t in "$@"; do
    read -r t s <<<"$t"
    echo "$t [signed-by=$key] $uri $s main"
  done > "$APT_DIR/sources.list"
  : > "$APT_DIR/state/status"
  apt_opts
  # (apt-get update says a failed fetch with a warning and exit 0.)
  if ! apt-get "${APT_OPTS[@]}" update > "$APT_DIR/update.log" 2>&1 ||
     grep -q -E '^(E:|W: Failed to fetch|W: Some index files failed)' "$APT_DIR/update.log"; then
    echo "apt-get update from $uri: $(grep -m1 -E '^(E|W):' "$APT_DIR/update.log" | cut -c1-160)"
    return 1
  fi
}
