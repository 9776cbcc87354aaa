# The Kubernetes deployment: roce-runtime when the runtime it chains to is
# gone (state, kill and delete still answered), and the DaemonSet's
# install/sync/cleanup program (contrib/k8s/install.sh) against a fake host
# root, file by file.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
[ "$OCI_RUNTIME" = runc ] || return 0

# The GPU operator's runtime under /usr/local/nvidia/toolkit is a candidate
# of the policy; uninstalled (the operator removed, a node re-imaged), a
# running container must still be stoppable: state, kill and delete reach
# runc, while a create is refused in one line and runs nothing.
test_shim_with_its_chained_runtime_missing_still_answers_state_kill_delete () {
  need_root
  need_cmd runc
  local id policy tk out i
  id=$(new_id)
  tk=$T/toolkit/nvidia-container-runtime
  mkdir -p "$T/toolkit"
  cp "$(command -v runc)" "$tk"
  policy=$T/policy.json
  write_policy "$T/p0.json" warn
  jq --arg tk "$tk" '.runtime = [$tk, "/nonexistent/nvidia-container-runtime"]' "$T/p0.json" > "$policy"
  export ROCE_HOOK_CONFIG=$policy
  "$HOOK" --config "$policy" check > "$T/check" 2>&1 || true
  assert_file_contains "$T/check" "runtime (roce-runtime): $tk (policy runtime, candidate 1 of 2)"
  HOOKS=0 CMD='sleep 100' make_bundle "$T/b" "$policy"
  runtime_opts
  "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b" "$id" </dev/null >/dev/null 2>"$T/err" ||
    fail "create through the shim failed: $(cat "$T/err")"
  defer runtime delete -f "$id"
  "$SHIM" "${RUNTIME_OPTS[@]}" start "$id" 2>"$T/err" || fail "start failed: $(cat "$T/err")"

  rm -f "$tk"
  "$HOOK" --config "$policy" check > "$T/check" 2>&1 || true
  assert_file_contains "$T/check" "runtime (roce-runtime): none: create and run are refused: policy runtime: one of \`$tk\`, \`/nonexistent/nvidia-container-runtime\` installed vs none of them"
  assert_file_contains "$T/check" "state, kill, delete go to $(command -v runc)"
  "$HOOK" --config "$policy" check --json > "$T/check.json" 2>/dev/null || true
  assert_eq "none $(command -v runc)" "$(jq -r '.runtime | "\(.source) \(.other_calls)"' "$T/check.json")" "check --json runtime"

  out=$("$SHIM" "${RUNTIME_OPTS[@]}" state "$id" 2>"$T/err") || fail "state without the chained runtime: $(cat "$T/err")"
  assert_eq running "$(jq -r .status <<<"$out")" "state"
  "$SHIM" "${RUNTIME_OPTS[@]}" kill "$id" KILL 2>"$T/err" || fail "kill without the chained runtime: $(cat "$T/err")"
  for ((i = 0; i < 100; i++)); do
    [ "$("$SHIM" "${RUNTIME_OPTS[@]}" state "$id" 2>/dev/null | jq -r .status)" = stopped ] && break
    sleep 0.05
  done
  [ "$i" -lt 100 ] || fail "the container did not stop after kill"
  "$SHIM" "${RUNTIME_OPTS[@]}" delete "$id" 2>"$T/err" || fail "delete without the chained runtime: $(cat "$T/err")"
  runtime state "$id" >/dev/null 2>&1 && fail "$id still exists after delete"

  # A create is refused: the policy's runtime (GPUs, say) is not there.
  if "$SHIM" "${RUNTIME_OPTS[@]}" create --bundle "$T/b" "$id-2" </dev/null >/dev/null 2>"$T/err"; then
    runtime delete -f "$id-2" >/dev/null 2>&1
    fail "a create ran without the policy's runtime"
  fi
  assert_eq 1 "$(wc -l < "$T/err")" "lines of the refusal"
  assert_file_contains "$T/err" "roce-runtime: $id-2: policy runtime: one of \`$tk\`, \`/nonexistent/nvidia-container-runtime\` installed vs none of them (fix: "
  runtime state "$id-2" >/dev/null 2>&1 && fail "$id-2 exists after a refused create"
  true
}

run_tests
