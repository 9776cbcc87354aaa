# SPDX-License-Identifier: Apache-2.0
# Hostile input: tenants outside their rights, and malformed state, bundles,
# config.json and annotations.  Each is a clean one-line refusal that leaves
# the host as it was.
# roce-suite: each-runtime test_bad_annotations_through_runc
# roce-suite: memcheck
# roce-suite: valgrind test_bad_state_and_bundles_directly
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"

# host_snapshot FILE: what a refusal must leave unchanged.
host_snapshot () {
  {
    # Only what hangs off our NIC: other tests run beside this one.
    echo "links:"; ip -o link show | awk -F': ' '{print $2}' | grep -F "@$NIC" | sort
    echo "mounts:"; awk '{print $2}' /proc/self/mounts | sort
    echo "state:"; find "$T/state" 2>/dev/null | sort
  } > "$1"
}

assert_host_unchanged () {
  host_snapshot "$T/after"
  diff -u "$T/before" "$T/after" >&2 || fail "the refusal left something behind"
}

test_tenant_outside_the_hca_list_is_refused_naming_the_rule () {
  one_hca_host
  sed -i 's|"pool": "198.18.10.100-198.18.10.199" }|"pool": "198.18.10.100-198.18.10.199", "tenants": ["team-a"] }|' "$POLICY"
  assert_file_contains "$POLICY" '"tenants": ["team-a"]'
  host_snapshot "$T/before"
  local id rc=0
  id=$(new_id)
  ANNOTATIONS=$'roce.io/hca=mlx5_0\nio.kubernetes.pod.namespace=team-c' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started"
  assert_file_contains "$T/$id.err" "roce-hook: $id: use of HCA mlx5_0 (policy rule hcas.mlx5_0.tenants): a namespace in [team-a] vs namespace 'team-c'"
  assert_host_unchanged
  # The allowed tenant starts.
  id=$(new_id)
  rm -rf "$T/b"
  ANNOTATIONS=$'roce.io/hca=mlx5_0\nio.kubernetes.pod.namespace=team-a' CMD='echo ok-team-a' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "team-a refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "ok-team-a"
}

test_tenant_cannot_pick_netdev_or_switch_qos_off () {
  one_hca_host
  host_snapshot "$T/before"
  local a id rc
  for a in "roce.io/netdev=eth0" "roce.io/qos=off" "roce.io/pool=198.18.0.0/16"; do
    id=$(new_id) rc=0
    rm -rf "$T/b"
    ANNOTATIONS=$'roce.io/hca=mlx5_0\n'"$a" make_bundle "$T/b" "$POLICY"
    run_container "$id" "$T/b" || rc=$?
    [ "$rc" -ne 0 ] || fail "[$a] started"
    assert_file_contains "$T/$id.err" "roce-hook: $id: annotation ${a%%=*}: only roce.io/hca and roce.io/ip vs an unknown roce.io/ key"
  done
  assert_host_unchanged
}

test_bad_annotations_through_runc () {
  one_hca_host
  host_snapshot "$T/before"
  local hcas
  hcas=$(printf 'mlx5_0%.0s,' $(seq 10000))
  local cases=(
    "roce.io/hca=${hcas%,}|annotation roce.io/hca: at most 4096 bytes vs 69999 bytes"
    $'roce.io/hca=mlx5_0\nroce.io/ip=198.18.10.105/0|an IPv4 or IPv6 address vs \'198.18.10.105/0\''
    $'roce.io/hca=mlx5_0\nroce.io/ip=::1|vs \'::1\''
    $'roce.io/hca=mlx5_0\nroce.io/ip=1e9|vs \'1e9\''
    $'roce.io/hca=mlx5_0\x1b[31m|annotation roce.io/hca: printable text'
  )
  local c id rc
  for c in "${cases[@]}"; do
    id=$(new_id) rc=0
    rm -rf "$T/b"
    ANNOTATIONS=${c%%|*} make_bundle "$T/b" "$POLICY"
    run_container "$id" "$T/b" || rc=$?
    [ "$rc" -ne 0 ] || fail "[${c:0:40}] started"
    assert_file_contains "$T/$id.err" "roce-hook: $id: "
    assert_file_contains "$T/$id.err" "${c#*|}"
    grep -q $'\x1b' "$T/$id.err" && fail "a control character reached the user's terminal"
  done
  assert_host_unchanged
}

# hook_direct STATE_JSON: runs the hook as a runtime would, output in $T/hd.
hook_direct () {
  local rc=0
  printf '%s' "$1" | "$HOOK" --config "$POLICY" prestart >"$T/hd" 2>&1 || rc=$?
  return $rc
}

test_bad_state_and_bundles_directly () {
  one_hca_host
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$T/b" "$POLICY"
  host_snapshot "$T/before"
  local ann='"annotations":{"roce.io/hca":"mlx5_0"}'

  # Oversized state.
  # Oversized state: not ours without the annotation, refused with it.
  { printf '{"id":"big","pid":1,"bundle":"%s",%s,"pad":"' "$T/b" "$ann"
    head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' ' '; printf '"}'; } > "$T/big"
  "$HOOK" --config "$POLICY" prestart < "$T/big" >"$T/hd" 2>&1 && fail "oversized state accepted"
  assert_file_contains "$T/hd" "roce-hook: big: OCI state: larger than 1048576 bytes"
  head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' ' ' > "$T/big"
  "$HOOK" --config "$POLICY" prestart < "$T/big" >"$T/hd" 2>&1 || fail "a blank state (no annotation) refused"

  # A pid that is not the container's: a host process in the host's namespaces.
  sleep 30 & local victim=$!
  defer "kill $victim"
  hook_direct "{\"id\":\"c1\",\"pid\":$victim,\"bundle\":\"$T/b\",$ann}" && fail "a host pid accepted"
  assert_file_contains "$T/hd" "roce-hook: c1: OCI state pid: a process in a new network namespace vs pid $victim, in the host's"

  # A pid that does not exist.
  hook_direct "{\"id\":\"c2\",\"pid\":999999999,\"bundle\":\"$T/b\",$ann}" && fail "a dead pid accepted"
  assert_file_contains "$T/hd" "roce-hook: c2: container process 999999999: No such process"

  # A bundle path that is a symlink.
  ln -s "$T/b" "$T/link"
  hook_direct "{\"id\":\"c3\",\"pid\":$victim,\"bundle\":\"$T/link\",$ann}" && fail "a symlinked bundle accepted"
  assert_file_contains "$T/hd" "roce-hook: c3: OCI state bundle: a directory vs a symlink"

  # config.json that is not JSON.
  mkdir "$T/nb" && echo '{"root": ' > "$T/nb/config.json"
  hook_direct "{\"id\":\"c4\",\"pid\":$victim,\"bundle\":\"$T/nb\",$ann}" && fail "broken config.json accepted"
  assert_file_contains "$T/hd" "roce-hook: c4: reading the bundle: config.json: not valid JSON"

  # config.json that is a symlink.
  mkdir "$T/sb" && ln -s "$T/b/config.json" "$T/sb/config.json"
  hook_direct "{\"id\":\"c5\",\"pid\":$victim,\"bundle\":\"$T/sb\",$ann}" && fail "symlinked config.json accepted"
  assert_file_contains "$T/hd" "roce-hook: c5: reading the bundle: open \`$T/sb/config.json\`"

  # Wrong types and ids.
  hook_direct "{\"id\":\"../../etc\",\"pid\":1,\"bundle\":\"$T/b\",$ann}" && fail "a path id accepted"
  assert_file_contains "$T/hd" "OCI state: id: not a valid container id"
  hook_direct "{\"id\":\"c6\",\"pid\":\"1\",\"bundle\":\"$T/b\",$ann}" && fail "a string pid accepted"
  assert_file_contains "$T/hd" "roce-hook: c6: OCI state: pid: expected a process id"
  [ "$(wc -l < "$T/hd")" = 1 ] || fail "more than one line: $(cat "$T/hd")"

  # JSON no runtime writes, around a state whose bundle asks (the state
  # itself without annotations, as runc's is when config.json has them):
  # a comment before it, a second document, trailing bytes.  Refused by the
  # strict read, never passed as "not asked".
  local st="{\"id\":\"c7\",\"pid\":$victim,\"bundle\":\"$T/b\"}" form
  for form in "/* x */ $st" "// x
$st" "$st {}" "$st garbage"; do
    hook_direct "$form" && fail "a state with bytes no runtime writes passed: $form"
    assert_file_contains "$T/hd" "roce-hook: "
    assert_file_contains "$T/hd" "OCI state"
    [ "$(wc -l < "$T/hd")" = 1 ] || fail "more than one line: $(cat "$T/hd")"
  done
  # The same forms around a state whose bundle does not ask: untouched.
  mkdir "$T/plain" && jq 'del(.annotations)' "$T/b/config.json" > "$T/plain/config.json"
  st="{\"id\":\"c8\",\"pid\":$victim,\"bundle\":\"$T/plain\"}"
  for form in "/* x */ $st" "$st {}"; do
    hook_direct "$form" || fail "a state not asking for RoCE was refused: $(cat "$T/hd")"
    [ ! -s "$T/hd" ] || fail "a state not asking for RoCE printed: $(cat "$T/hd")"
  done
  assert_host_unchanged
}

# A value carried raw in a message (the network namespace
# path of config.json; an annotation), with a backslash and an ESC byte:
# the line is escaped once, where it is printed, so a backslash in it is
# always an escape's (the tenant's own reads \x5c) and no raw ESC reaches
# the reader.  Before, the path's backslash and its ESC both read \x1b.
test_values_with_a_backslash_print_unambiguously () {
  one_hca_host
  local ann='"annotations":{"roce.io/hca":"mlx5_0"}' victim
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$T/b" "$POLICY"
  jq --arg p "$T/ns\\x1b"$'\e[31m' \
    '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
    "$T/b/config.json" > "$T/cfg" && mv "$T/cfg" "$T/b/config.json"
  sleep 30 & victim=$!
  defer "kill $victim"
  hook_direct "{\"id\":\"c1\",\"pid\":$victim,\"bundle\":\"$T/b\",$ann}" && fail "accepted: $(cat "$T/hd")"
  assert_file_contains "$T/hd" "roce-hook: c1: "
  assert_file_contains "$T/hd" "\`$T/ns\\x5cx1b\\x1b[31m\`: No such file or directory"
  ! grep -q $'\e' "$T/hd" || fail "a raw ESC reached the reader: $(cat -v "$T/hd")"

  # An annotation, in the state as a runtime hands it over (runc would
  # quote the hook's line again inside its own message).
  ANNOTATIONS="roce.io/hca=mlx5_0" make_bundle "$T/b2" "$POLICY"
  hook_direct "$(jq -cn --arg v "mlx5_0\\x1b"$'\e[31m' --arg b "$T/b2" --argjson pid "$victim" \
    '{id: "c2", pid: $pid, bundle: $b, annotations: {"roce.io/hca": $v}}')" && fail "accepted: $(cat "$T/hd")"
  assert_file_contains "$T/hd" "roce-hook: c2: annotation roce.io/hca: printable text vs 'mlx5_0\\x5cx1b\\x1b[31m'"
  ! grep -q $'\e' "$T/hd" || fail "a raw ESC reached the reader: $(cat -v "$T/hd")"
}

run_tests
