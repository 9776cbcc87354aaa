#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes roce-hook's programs independent of the host's libraries, as the
# NVIDIA container toolkit ships its own: roce-hook, roce-runtime and
# roce-runtime-engine are static; roce-hook-engine (what loads libibverbs
# for `check` and libcurl for etcd) gets the image's glibc, its loader, and
# the libraries it loads, in LIBDIR, named by its PT_INTERP and RUNPATH.  The
# host's glibc, libcurl and libibverbs versions then do not matter.
#   bundle-engine.sh BUILD OUT LIBDIR
# BUILD: make's build/; OUT: where the programs and OUT/lib go (the image's
# /opt/roce-hook); LIBDIR: the absolute path OUT/lib has where the engine
# runs (install.sh puts it at /usr/local/lib/roce-hook on the host, and the
# image links that path to /opt/roce-hook/lib).
# Not bundled: libibverbs' providers (libmlx5 ...), which libibverbs loads
# from the host's provider directory; an old host's provider can fail to
# load (check's `verbs` row then says so); the start path never needs them.
set -eu
[ $# = 3 ] || { echo "usage: bundle-engine.sh BUILD OUT LIBDIR" >&2; exit 2; }
build=$1 out=$2 libdir=$3
command -v patchelf > /dev/null || { echo "bundle-engine: patchelf not found (apt-get install patchelf)" >&2; exit 1; }
mkdir -p "$out/lib"
for p in roce-hook roce-runtime roce-runtime-engine roce-hook-engine; do
  cp "$build/$p" "$out/$p.new"
  mv -f "$out/$p.new" "$out/$p"
done
# Every library the engine and what it dlopens need, by the loader's own
# resolution (ldd), the loader among them.
path_of () { /sbin/ldconfig -p | awk -v n="$1" '$1 == n { print $NF; exit }'; }
libs=$(
  for l in "$build/roce-hook-engine" "$(path_of libibverbs.so.1)" "$(path_of libcurl.so.4)"; do
    [ -n "$l" ] || continue
    echo "$l"
    ldd "$l" | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }'
  done | sort -u
)
interp=
for l in $libs; do
  [ "$l" = "$build/roce-hook-engine" ] && continue
  cp -L "$l" "$out/lib/$(basename "$l")"
  case $(basename "$l") in ld-linux*.so.* | ld64.so.*) interp=$(basename "$l") ;; esac
done
[ -n "$interp" ] || { echo "bundle-engine: no loader among the engine's libraries" >&2; exit 1; }
chmod 0755 "$out/lib/$interp"
patchelf --set-interpreter "$libdir/$interp" --set-rpath "$libdir" "$out/roce-hook-engine"
# The libraries find each other there too (a library's own RUNPATH wins
# over the engine's for its dependencies).
for f in "$out"/lib/*.so*; do
  [ "$(basename "$f")" = "$interp" ] || patchelf --set-rpath "$libdir" "$f" 2>/dev/null || true
done
echo "bundle-engine: $out ($(ls "$out/lib" | wc -l) libraries; loader $libdir/$interp)"
