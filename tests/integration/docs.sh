# SPDX-License-Identifier: Apache-2.0
# The documents: the man pages render without a warning and name every
# command roce-hook has, `make install` puts them where man finds them (and
# `make uninstall` takes them away), every relative link in the markdown
# files resolves, and no file names a document outside the repository.
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

run_tests
