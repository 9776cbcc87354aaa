# SPDX-License-Identifier: Apache-2.0
# The rest of the seed's `docker run` through roce-runtime: RLIMIT_STACK,
# a /dev/shm of the policy's size and NCCL_IB_SL, read from inside the
# container; a user's own values kept; and, without the shim, the hook's
# log of what it could not set.
# roce-suite: each-runtime test_shim_gives_stack_shm_and_sl
# roce-suite: memcheck
# roce-suite: valgrind test_shim_gives_stack_shm_and_sl
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"

SHOW='grep "Max stack size" /proc/self/limits; grep " /dev/shm " /proc/mounts;
env | grep ^NCCL_IB_SL=; echo done'

setup_seed () {
  one_hca_host
  export ROCE_HOOK_CONFIG=$POLICY
}

shim_run () { # ID BUNDLE
  runtime_opts
  defer runtime delete -f "$1"
  timeout 60 "$SHIM" "${RUNTIME_OPTS[@]}" run --bundle "$2" "$1" </dev/null >"$T/$1.out" 2>"$T/$1.err" ||
    fail "shim run failed: $(cat "$T/$1.err")"
}

test_shim_gives_stack_shm_and_sl () {
  setup_seed
  local id
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$SHOW make_bundle "$T/b" "$POLICY"
  shim_run "$id" "$T/b"
  local out=$T/$id.out
  assert_file_contains "$out" "done"
  # The seed's --ulimit stack=67108864: soft and hard.
  grep "Max stack size" "$out" | grep -q "67108864 *67108864 *bytes" || fail "stack: $(cat "$out")"
  # The policy's default 1 GiB (the runtimes' 64 MiB was raised).
  grep " /dev/shm " "$out" | grep -q "size=1048576k" || fail "/dev/shm: $(cat "$out")"
  assert_file_contains "$out" "NCCL_IB_SL=3"
  # Through the shim nothing is left for the hook to report.
  assert_not_contains "$(cat "$T/hook.log")" "seed WARN stack" "the hook's log"
  assert_not_contains "$(cat "$T/hook.log")" "seed WARN shm" "the hook's log"
  assert_not_contains "$(cat "$T/hook.log")" "nccl-sl" "the hook's log"
  # What no spec edit can give (no GPU driver, no rdma_cm here) is logged.
  assert_file_contains "$T/hook.log" "seed WARN gpudirect: GPUDirect RDMA for the host"
  assert_file_contains "$T/hook.log" "seed: 3 of 5 check(s) not as the seed's recipe wants (never refused)"
}

test_shim_keeps_the_users_own_values () {
  setup_seed
  local id
  id=$(new_id)
  HOOKS=0 ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$SHOW ENV="NCCL_IB_SL=5" \
    RLIMITS_JSON='[{"type":"RLIMIT_STACK","hard":16777216,"soft":16777216}]' make_bundle "$T/b" "$POLICY"
  sed -i 's/"mode=1777","size=65536k"/"mode=1777","size=131072k"/' "$T/b/config.json"
  grep -q 'size=131072k' "$T/b/config.json" || fail "the bundle's /dev/shm was not edited"
  shim_run "$id" "$T/b"
  local out=$T/$id.out
  grep "Max stack size" "$out" | grep -q "16777216 *16777216 *bytes" || fail "stack: $(cat "$out")"
  grep " /dev/shm " "$out" | grep -q "size=131072k" || fail "/dev/shm: $(cat "$out")"
  assert_file_contains "$out" "NCCL_IB_SL=5"
  # The hook checks the user's SL against the policy (qos.mode warn: logged).
  assert_file_contains "$T/hook.log" "qos FAIL nccl-sl (blocking): NCCL_IB_SL in the container's env: 3 (the PFC priority) vs '5'"
  assert_file_contains "$T/hook.log" "seed WARN stack: RLIMIT_STACK of the container: at least 64 MiB"
  assert_file_contains "$T/hook.log" "seed WARN shm: /dev/shm of the container: a tmpfs of at least 1024 MiB (the policy's shm_size) vs 128 MiB"
}

test_hook_alone_logs_what_it_cannot_set () {
  setup_seed
  local id
  id=$(new_id)
  local cm=$T/configfs/rdma_cm/mlx5_0/ports/1
  mkdir -p "$cm"
  echo 0 > "$cm/default_roce_tos"
  echo "IB/RoCE v1" > "$cm/default_roce_mode"
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD=$SHOW make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "run: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "done"
  assert_file_contains "$T/hook.log" "seed WARN stack: RLIMIT_STACK of the container: at least 64 MiB (the policy's stack, as the seed's --ulimit stack) vs not set"
  assert_file_contains "$T/hook.log" "vs 64 MiB, the runtimes' default: NCCL's shared-memory transport fails in it (fix: --shm-size=1073741824, or start it through roce-runtime)"
  assert_file_contains "$T/hook.log" "seed WARN nccl-sl-unset: NCCL_IB_SL in the container's env: 3"
  assert_file_contains "$T/hook.log" "seed WARN rdma-cm-tos: rdma_cm default RoCE ToS of mlx5_0 port 1: 104 (DSCP 26 << 2), for UCX, MPI and perftest vs 0 (DSCP 0) (fix: roce-hook qos apply --only rdma-cm)"
  assert_file_contains "$T/hook.log" "seed WARN rdma-cm-mode: rdma_cm default RoCE mode of mlx5_0 port 1: 'RoCE v2' (routable, DSCP-classified) vs 'IB/RoCE v1'"
  assert_file_contains "$T/hook.log" "seed: 6 of 6 check(s) not as the seed's recipe wants (never refused)"
}

run_tests
