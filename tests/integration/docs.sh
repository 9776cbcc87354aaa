# SPDX-License-Identifier: Apache-2.0
# The documents: the man pages render without a warning and name every
# command roce-hook has, `make install` puts them where man finds them (and
# `make uninstall` takes them away), every relative link in the markdown
# files resolves, no file names a document outside the repository, and what
# the documents say of defaults and versions is what the code prints: the
# policy's defaults (roce-hook.json(5) against the parser and check), the
# cdiVersion (against roce-hook cdi), the runtimes tested (docs/runtimes.md
# against the installed programs and newer-runtimes.sh's pins).
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
# Nothing here runs a container: once, under the default runtime.
[ "$OCI_RUNTIME" = runc ] || return 0

# The built pages: one per docs/<name>.<section>.md, newer than its source.
man_pages () {
  local md page
  for md in "$ROOT"/docs/*.[1-8].md; do
    page=$BUILD/man/$(basename "$md" .md)
    [ -f "$page" ] || fail "$(basename "$md") was not built: no $page (make builds build/man/)"
    [ "$page" -nt "$md" ] || [ ! "$md" -nt "$page" ] || fail "$page is older than $md"
    echo "$page"
  done
}

test_man_pages_render_without_warnings () {
  need_cmd groff
  local page n=0
  for page in $(man_pages); do
    groff -t -man -Tutf8 -ww -z "$page" 2>"$T/warn" || fail "groff failed on $page: $(cat "$T/warn")"
    [ ! -s "$T/warn" ] || fail "groff warns on $page: $(head -5 "$T/warn")"
    MANWIDTH=100 man -l "$page" >"$T/text" 2>"$T/err" || fail "man -l $page: $(cat "$T/err")"
    assert_file_contains "$T/text" "NAME"
    assert_file_contains "$T/text" "SEE ALSO"
    n=$((n + 1))
  done
  [ "$n" -ge 3 ] || fail "expected at least roce-hook.8, roce-runtime.8 and roce-hook.json.5, found $n pages"
}

# Every command `roce-hook --help` lists is a term of roce-hook(8)'s COMMANDS.
test_roce_hook_8_names_every_command () {
  need_cmd groff
  local cmds c
  "$HOOK" --help >"$T/help" || fail "roce-hook --help failed"
  cmds=$(sed -n 's/^ *\(usage: \)\{0,1\}roce-hook \(\[--config F\] \)\{0,1\}\([A-Za-z|-]*\).*/\3/p' "$T/help" | tr '|' '\n' | sort -u)
  [ "$(echo "$cmds" | wc -l)" -ge 10 ] || fail "could not read the commands from: $(cat "$T/help")"
  MANWIDTH=200 man -l "$BUILD/man/roce-hook.8" 2>/dev/null |
    sed -n '/^COMMANDS/,/^[A-Z]/p' >"$T/commands"
  for c in $cmds; do
    grep -Eq "^       ([^ ].*, )?$c( |,|\$)" "$T/commands" ||
      fail "roce-hook.8 has no entry for '$c' in COMMANDS (docs/roce-hook.8.md)"
  done
}

test_make_install_puts_the_man_pages_where_man_finds_them () {
  need_cmd man
  local dest=$T/root s
  # What is built, installed as it is (-o all): never a rebuild of the
  # programs other files are running meanwhile.
  make -C "$ROOT" --no-print-directory -s -o all BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr \
    SYSCONFDIR=/etc install >"$T/out" 2>&1 || fail "make install: $(tail -5 "$T/out")"
  for s in man8/roce-hook.8 man8/roce-runtime.8 man5/roce-hook.json.5; do
    [ -f "$dest/usr/share/man/$s" ] || fail "make install did not install $s: $(find "$dest/usr/share/man" 2>&1)"
  done
  MANPATH=$dest/usr/share/man MANWIDTH=100 man roce-hook >"$T/page" 2>"$T/err" ||
    fail "man roce-hook after install: $(cat "$T/err")"
  assert_file_contains "$T/page" "qos apply"
  MANPATH=$dest/usr/share/man MANWIDTH=100 man 5 roce-hook.json >"$T/page5" 2>"$T/err" ||
    fail "man 5 roce-hook.json after install: $(cat "$T/err")"
  assert_file_contains "$T/page5" "pfc_priority"
  make -C "$ROOT" --no-print-directory -s BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr \
    SYSCONFDIR=/etc uninstall >"$T/out" 2>&1 || fail "make uninstall: $(tail -5 "$T/out")"
  [ -z "$(find "$dest/usr/share/man" -type f)" ] ||
    fail "make uninstall left: $(find "$dest/usr/share/man" -type f)"
}

test_every_relative_link_in_the_markdown_resolves () {
  need_cmd python3
  python3 "$ROOT/tests/helpers/doclinks.py" "$ROOT" >"$T/out" 2>&1 || fail "broken links: $(cat "$T/out")"
  # The checker itself finds a broken file link and a broken heading link.
  printf '# A heading\n' >"$T/README.md"
  printf '[a](no-such-file.md) [b](README.md#no-such-heading) [c](README.md#a-heading)\n' >"$T/probe.md"
  ! python3 "$ROOT/tests/helpers/doclinks.py" "$T" "$T/probe.md" >"$T/out2" 2>&1 ||
    fail "the link checker passed broken links"
  assert_file_contains "$T/out2" "no-such-file.md: no such file"
  assert_file_contains "$T/out2" "README.md#no-such-heading: no such heading"
  assert_not_contains "$(cat "$T/out2")" "#a-heading" "a link to a heading that exists"
}

# The repository stands alone: no file points at the documents it was
# written from, which its readers do not have.
test_no_file_names_a_document_outside_the_repository () {
  need_cmd git
  local pat='SPEC[.]md|STYLE[.]md|SPEC ite[m]|shared/researc[h]|research/[a-z]*[.]md|this sandbo[x]'
  if git -C "$ROOT" grep --untracked -nIE "$pat" -- . >"$T/hits" 2>/dev/null; then
    fail "files name documents outside the repository: $(head -5 "$T/hits")"
  fi
  # Nor the project's issue tracker (an upstream project's issue is a public reference).
  git -C "$ROOT" grep --untracked -nIE '(^|[^a-zA-Z])[Ii]ssues? #?[0-9]' -- . 2>/dev/null |
    grep -vE '(containerd|runc|crun|kernel|upstream|GitHub) issue' >"$T/issues" || true
  [ ! -s "$T/issues" ] || fail "files cite the project's issues, which a reader does not have: $(head -5 "$T/issues")"

}

# ---- what the documents say against what the code prints -------------------

# Every default roce-hook.json(5) gives (a key's "(type; default)") is what
# the engine's parser leaves in a policy that names nothing but its HCA and
# an etcd endpoint (policy-lint --effective prints it), and every key the
# parser has is documented; the QoS defaults are also what `check --json`
# reports, and the runtime's what `check` says it runs.
test_the_policy_page_gives_the_defaults_the_parser_applies () {
  need_cmd python3
  need_cmd jq
  local lint=$BUILD/helpers/policy-lint
  [ -x "$lint" ] || fail "no $lint (make builds build/helpers/)"
  echo '{"hcas": {"mlx5_0": {"subnet": "198.18.0.0/24", "pool": "198.18.0.10-198.18.0.20"}}}' >"$T/local.json"
  jq '.cluster = {"etcd": {"endpoints": ["http://127.0.0.1:2379"]}}' "$T/local.json" >"$T/cluster.json"
  "$lint" --effective "$T/cluster.json" >"$T/effective" 2>&1 || fail "policy-lint: $(cat "$T/effective")"
  python3 - "$ROOT/docs/roce-hook.json.5.md" "$T/effective" "$(uname -n)" >"$T/out" 2>&1 <<'PY' ||
import re, sys
page, effective, host = sys.argv[1:4]
got = {}
for line in open(effective):
    k, _, v = line.rstrip("\n").partition(" ")
    got.setdefault(k, v)
# The manual's words for a default that is not a literal, as the helper prints them.
prose = {"found from sysfs": "sysfs", "the gateway": "gateway", "default_tenants": "default_tenants",
         "the host name, from uname": host, "the first of runc, crun on PATH": "none"}
# Sized from other keys by blocks_max (tests/unit/test_cluster.c holds it to the page's rule).
derived = {"cluster.max_blocks"}
prefix = {"TOP LEVEL": "", "QOS": "qos.", "HCAS": "", "FABRIC": "fabric.", "CLUSTER": "cluster."}
section, bad, documented, n = None, [], set(), 0
for line in open(page):
    if line.startswith("# "):
        section = line[2:].strip()
        continue
    m = re.match(r"^((?:\*\*[a-z0-9_.]+\*\*(?:, )?)+) \(([^()]*)\)$", line.rstrip())
    if section not in prefix or not m:
        continue
    keys = [prefix[section] + k for k in re.findall(r"\*\*([a-z0-9_.]+)\*\*", m.group(1))]
    documented.update(keys)
    if "; " not in m.group(2):
        continue  # required, or an object
    d = m.group(2).rsplit("; ", 1)[1].replace("`", "")
    for k in keys:
        if k in derived:
            continue
        n += 1
        if k not in got:
            bad.append(f"{k}: the page gives a default ({d}) for a key the parser does not have")
            continue
        ref = re.fullmatch(r"(?:the )?\*\*([a-z0-9_.]+)\*\*", d)
        want = [got.get(ref.group(1), "?"), ref.group(1)] if ref else [d, d.split(", ")[0], d.split(": ")[0], prose.get(d, "\0")]
        want += [w[1:-1] for w in want if len(w) > 2 and w[0] == w[-1] == '"']
        if got[k] not in want:
            bad.append(f"{k}: the page says {d}, the parser applies {got[k]}")
for k in got:
    if k not in ("hca", "cluster") and k not in documented:
        bad.append(f"{k}: the parser has it, roce-hook.json(5) does not document it")
if n < 40:
    bad.append(f"only {n} defaults read from the page: its '**key** (type; default)' lines changed?")
print("\n".join(bad) if bad else f"{n} defaults agree")
sys.exit(1 if bad else 0)
PY
    fail "roce-hook.json(5) and the parser disagree: $(cat "$T/out")"
  assert_file_contains "$T/out" "defaults agree"
  # The product's own output: check's QoS settings and its runtime line (on
  # an empty sysfs: nothing of the host's is read).
  mkdir -p "$T/sys"
  jq --arg s "$T/sys" '.sysfs_root = $s' "$T/local.json" >"$T/p.json" && mv "$T/p.json" "$T/local.json"
  "$HOOK" --config "$T/local.json" check --json >"$T/check.json" 2>/dev/null || true
  local k
  for k in mode pfc_priority dscp ecn min_mtu; do
    assert_eq "$(sed -n "s/^qos.$k //p" "$T/effective")" "$(jq -r ".qos.$k" "$T/check.json")" "check --json qos.$k"
  done
  "$HOOK" --config "$T/local.json" check >"$T/check" 2>&1 || true
  assert_file_contains "$T/check" "(no policy runtime: the first of runc, crun on PATH)"
  grep -q '^\*\*runtime\*\* (.*; the first of runc, crun on `PATH`)$' "$ROOT/docs/roce-hook.json.5.md" ||
    fail "roce-hook.json(5)'s runtime default is not what check says: the first of runc, crun on PATH"
}

# The cdiVersion the documents give is what `roce-hook cdi` writes: 0.3.0,
# and 0.5.0 once an HCA's name starts with other than a letter.
test_the_documented_cdi_version_is_what_cdi_writes () {
  need_root
  need_cmd jq
  fake_hca mlx5_0 0 rhdocs0
  printf '{"sysfs_root": "%s", "hcas": {"mlx5_0": {"subnet": "198.18.0.0/24", "pool": "198.18.0.10-198.18.0.20"}}}\n' \
    "$FAKE_SYSFS" >"$T/p.json"
  local v3 v5 doc
  v3=$("$HOOK" --config "$T/p.json" cdi | jq -r .cdiVersion) || fail "cdi: $v3"
  fake_hca 0hca 1 rhdocs1
  jq '.hcas["0hca"] = {"subnet": "198.18.1.0/24", "pool": "198.18.1.10-198.18.1.20"}' "$T/p.json" >"$T/p5.json"
  v5=$("$HOOK" --config "$T/p5.json" cdi | jq -r .cdiVersion) || fail "cdi: $v5"
  [ "$v3" != "$v5" ] || fail "cdi wrote $v3 for both policies"
  for doc in docs/roce-hook.8.md docs/operations.md; do
    tr '\n' ' ' <"$ROOT/$doc" | grep -o '`cdiVersion` [0-9.]*[0-9], [^;]*' >"$T/said" ||
      fail "$doc names no cdiVersion"
    grep -q "^\`cdiVersion\` $v3, or $v5 when an HCA's name starts with other than a letter" "$T/said" ||
      fail "$doc says $(cat "$T/said"); roce-hook cdi writes $v3, and $v5 for an HCA named 0hca"
  done
}

# docs/runtimes.md's versions are the ones tested: Debian 12's as the
# installed programs report them, the newer ones as newer-runtimes.sh pins
# them (and no pinned set is left out of the page).
test_the_runtime_versions_in_runtimes_md_are_the_tested_ones () {
  local page=$ROOT/docs/runtimes.md line name ver suite rows
  rows=$(grep -E '^\| [A-Za-z]' "$page" | awk -F'|' '$3 ~ /[0-9]\.[0-9]/ {print $2 "|" $3}')
  [ "$(echo "$rows" | wc -l)" -ge 8 ] || fail "could not read runtimes.md's table: $rows"
  # The newer sets: "containerd-2.1.9 sid ...".
  while read -r name ver suite; do
    case $suite in sid) suite="Debian unstable" ;; trixie) suite="Debian 13" ;; *) fail "unknown suite $suite" ;; esac
    echo "$rows" | grep -qiE "^ *$name[^|]*\|.*$ver \($suite\)" ||
      fail "newer-runtimes.sh pins $name $ver from $suite; runtimes.md's table has: $(echo "$rows" | grep -i "^ *$name")"
  done < <(sed -n 's/^  "\([a-z]*\)-\([0-9.]*\) \([a-z]*\) .*"$/\1 \2 \3/p' "$ROOT/tests/helpers/newer-runtimes.sh")
  echo "$rows" | grep -oE '[0-9][0-9.]*[0-9] \(Debian (unstable|13)\)' | while read -r ver _; do
    grep -q "^  \"[a-z]*-$ver " "$ROOT/tests/helpers/newer-runtimes.sh" ||
      fail "runtimes.md names $ver from a newer suite; tests/helpers/newer-runtimes.sh pins no such set"
  done || exit 1
  # Debian 12's, where the program is installed (make deps installs them).
  local prog want have
  while read -r prog name; do
    command -v "$prog" >/dev/null 2>&1 || continue
    want=$(echo "$rows" | grep -iE "^ *$name *\|" | grep -oE '[0-9][0-9.]*[0-9] \(Debian 12\)' | cut -d' ' -f1 | head -1)
    [ -n "$want" ] || fail "runtimes.md has no Debian 12 version for $name"
    have=$("$prog" --version 2>&1 | head -1)
    [[ "$have" =~ (^|[^0-9.])"$want"($|[^0-9]|\.[0-9]) ]] ||
      fail "runtimes.md says $name $want (Debian 12); $prog --version says: $have"
  done <<'EOF2'
runc runc
crun crun
podman Podman
containerd containerd, CRI
dockerd Docker
etcd etcd \(cluster addressing\)
EOF2
}

run_tests
