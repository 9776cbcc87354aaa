# SPDX-License-Identifier: Apache-2.0
# The lossless QoS gate through real runc on the fake host (a veth NIC, which
# has no DCB: the kernel answers EOPNOTSUPP), and `roce-hook check`.
# roce-suite: memcheck test_enforce_refuses_a_nic_without_dcb test_warn_starts_and_logs_the_findings
# roce-suite: memcheck test_nccl_ib_tc_96_against_dscp_26_is_caught
# roce-suite: memcheck test_nccl_ib_hca_naming_another_hca_is_caught
# roce-suite: memcheck test_check_table_on_the_fake_host test_check_json_on_the_fake_host
# roce-suite: memcheck test_check_selects_one_hca_and_says_when_it_cannot_run
# roce-suite: valgrind test_enforce_refuses_a_nic_without_dcb test_check_json_on_the_fake_host
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/qos.sh"

setup_qos () { # MODE [NIC_MTU]
  need_root
  need_cmd "$OCI_RUNTIME"
  NIC=$(fake_nic "${2:-9000}")
  fake_hca mlx5_0 0 "$NIC"
  POLICY=$T/policy.json
  write_policy "$POLICY" "$1" "mlx5_0 $NIC 10"
}

one_hook_line () { # ID
  [ "$(grep -c 'roce-hook:' "$T/$1.err")" = 1 ] || fail "not one hook line: $(cat "$T/$1.err")"
}

test_enforce_refuses_a_nic_without_dcb () {
  setup_qos enforce
  local id rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "the container started on a host that cannot prove it is lossless"
  assert_file_contains "$T/$id.err" "$(qos_no_dcb_line "$id" "$NIC" "$POLICY")"
  one_hook_line "$id"
  assert_not_contains "$(cat "$T/$id.out")" "started" "container output"
  # Every finding is in the log, the first one is the refusal.
  assert_file_contains "$T/hook.log" "$id: qos UNKNOWN pfc (blocking): PFC on priority 3 of $NIC (mlx5_0)"
  assert_file_contains "$T/hook.log" "$id: qos UNKNOWN dscp (blocking): DSCP 26 of $NIC (mlx5_0)"
  assert_file_contains "$T/hook.log" "$id: qos UNKNOWN ecn-np: RoCE ECN notification point (NP) on priority 3 of $NIC"
  assert_file_contains "$T/hook.log" "$id: qos gate (enforce): refusing the start: 9 finding(s)"
  assert_file_contains "$T/hook.log" "$id: prestart refused: PFC on priority 3 of $NIC"
  # Refused before anything was made.
  if grep -q "$id: prestart: pid" "$T/hook.log"; then fail "the hook went on after the gate"; fi
  runtime state "$id" >/dev/null 2>&1 && fail "the refused container still exists"
  assert_nic_untouched "$NIC"
}

test_warn_starts_and_logs_the_findings () {
  setup_qos warn
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused under warn: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"
  [ ! -s "$T/$id.err" ] || fail "stderr not empty: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos UNKNOWN pfc (blocking): PFC on priority 3 of $NIC (mlx5_0): enabled vs DCB not supported by this netdev (EOPNOTSUPP)"
  assert_file_contains "$T/hook.log" "$id: qos gate (warn): starting although the host is not proven lossless: 9 finding(s)"
  assert_file_contains "$T/hook.log" "$id: prestart: pid"
}

test_off_probes_nothing () {
  setup_qos off 1500
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" ENV="NCCL_IB_TC=96" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused under off: $(cat "$T/$id.err")"
  assert_file_contains "$T/$id.out" "started"
  assert_file_contains "$T/hook.log" "$id: qos gate: off"
  if grep -q "$id: qos [A-Z]" "$T/hook.log"; then fail "findings under qos.mode off: $(cat "$T/hook.log")"; fi
}

test_parent_mtu_1500_is_refused_under_enforce () {
  setup_qos enforce 1500
  local id rc=0
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started with a 1500 MTU against min_mtu 9000"
  assert_file_contains "$T/$id.err" "roce-hook: $id: MTU of $NIC (mlx5_0): at least 9000 (the container's macvlan inherits it) vs 1500 (fix: ip link set $NIC mtu 9000)"
  one_hook_line "$id"
  assert_file_contains "$T/hook.log" "$id: qos FAIL mtu (blocking)"
  assert_nic_untouched "$NIC"
  # A lower min_mtu lets the MTU pass; the refusal is about PFC again.
  POLICY_MIN_MTU=1500 write_policy "$POLICY" enforce "mlx5_0 $NIC 10"
  id=$(new_id) rc=0
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started without DCB"
  assert_file_contains "$T/$id.err" "$(qos_no_dcb_line "$id" "$NIC" "$POLICY")"
}

test_nccl_ib_tc_96_against_dscp_26_is_caught () {
  setup_qos warn
  local id rc
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" ENV=$'NCCL_IB_TC=96\nNCCL_IB_SL=5' CMD='echo started' make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused under warn: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos FAIL nccl-tc (blocking): NCCL_IB_TC in the container's env: a traffic class whose DSCP (TC >> 2) maps to priority 3, e.g. 106 vs 96 (DSCP 24), but the policy's lossless DSCP is 26 (and the DSCP table of $NIC cannot be read) (fix: NCCL_IB_TC=106 (DSCP 26 << 2 | ECT(0)), or leave it unset)"
  assert_file_contains "$T/hook.log" "$id: qos FAIL nccl-sl (blocking): NCCL_IB_SL in the container's env: 3 (the PFC priority) vs '5' (fix: NCCL_IB_SL=3, or leave it unset)"
  # Under enforce the same container is refused; the log has the env finding.
  write_policy "$POLICY" enforce "mlx5_0 $NIC 10"
  id=$(new_id) rc=0
  run_container "$id" "$T/b" || rc=$?
  [ "$rc" -ne 0 ] || fail "started under enforce"
  assert_file_contains "$T/hook.log" "$id: qos FAIL nccl-tc (blocking)"
  # The right traffic class is not a finding.
  write_policy "$POLICY" warn "mlx5_0 $NIC 10"
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" ENV=$'NCCL_IB_TC=106\nNCCL_IB_HCA=mlx5_0' make_bundle "$T/b2" "$POLICY"
  run_container "$id" "$T/b2" || fail "refused: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos gate (warn)"
  if grep -q "$id: qos FAIL nccl" "$T/hook.log"; then fail "NCCL_IB_TC=106 flagged: $(grep "$id" "$T/hook.log")"; fi
}

test_nccl_ib_hca_naming_another_hca_is_caught () {
  setup_qos warn
  local nic2
  nic2=$(fake_nic 9000)
  fake_hca mlx5_1 1 "$nic2"
  write_policy "$POLICY" warn "mlx5_0 $NIC 10" "mlx5_1 $nic2 11"
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" ENV="NCCL_IB_HCA=mlx5_0,mlx5_1" make_bundle "$T/b" "$POLICY"
  run_container "$id" "$T/b" || fail "refused under warn: $(cat "$T/$id.err")"
  assert_file_contains "$T/hook.log" "$id: qos FAIL nccl-hca (blocking): NCCL_IB_HCA in the container's env: only the selected HCAs (mlx5_0) vs 'mlx5_1', which is not a selected HCA (fix: NCCL_IB_HCA=mlx5_0, or leave it unset)"
}

# ---- roce-hook check ------------------------------------------------------

setup_check () { # NIC_MTU
  setup_qos enforce "${1:-9000}"
  POLICY_ECN=require write_policy "$POLICY" enforce "mlx5_0 $NIC 10"
  fake_ecn "$NIC" roce_np 3 1
  fake_ecn "$NIC" roce_rp 3 0
  fake_gid mlx5_0 1 2 "0000:0000:0000:0000:0000:ffff:c612:0a05" "RoCE v2" "$NIC"
  fake_gid mlx5_0 1 3 "0000:0000:0000:0000:0000:ffff:c612:0a05" "IB/RoCE v1" "$NIC"
  fake_gid mlx5_0 1 4 "0000:0000:0000:0000:0000:0000:0000:0000" "RoCE v2" ""
  fake_netns_mode Y
}

test_check_table_on_the_fake_host () {
  setup_check 1500
  local out rc=0
  out=$("$HOOK" --config "$POLICY" check --wide 2>&1) || rc=$?
  assert_eq 1 "$rc" "check's exit status on a host that blocks"
  printf '%s\n' "$out" | head -1 | grep -q "^roce-hook check: policy $POLICY$" || fail "header: $out"
  assert_contains "$out" "qos: mode enforce, pfc_priority 3, dscp 26, ecn require, min_mtu 9000"
  assert_contains "$out" "RDMA netns mode: shared ($FAKE_SYSFS/module/ib_core/parameters/netns_mode)"
  assert_contains "$out" "HCA     NETDEV    CHECK"
  assert_eq "mlx5_0 $NIC mtu FAIL yes at least 9000 (the container's macvlan inherits it) 1500 ip link set $NIC mtu 9000" \
    "$(check_row "$out" mlx5_0 mtu)" "mtu row"
  assert_contains "$(check_row "$out" mlx5_0 pfc)" "mlx5_0 $NIC pfc UNKNOWN yes enabled DCB not supported by this netdev (EOPNOTSUPP): the host cannot prove it is lossless set hcas.mlx5_0.netdev in $POLICY"
  assert_contains "$(check_row "$out" mlx5_0 dscp)" "dscp UNKNOWN yes trust dscp, DSCP 26 -> priority 3 DCB not supported"
  assert_eq "mlx5_0 $NIC ecn-np OK no enabled (1) enabled (1) -" "$(check_row "$out" mlx5_0 ecn-np)" "ecn-np row"
  assert_eq "mlx5_0 $NIC ecn-rp FAIL yes enabled (1) disabled (0) echo 1 > $FAKE_SYSFS/class/net/$NIC/ecn/roce_rp/enable/3" \
    "$(check_row "$out" mlx5_0 ecn-rp)" "ecn-rp row"
  assert_eq "mlx5_0 $NIC pfc-stall UNKNOWN no on (a timeout stops a PFC storm) not supported by this netdev (EOPNOTSUPP) -" \
    "$(check_row "$out" mlx5_0 pfc-stall)" "pfc-stall row"
  assert_eq "- - rdma-netns OK no shared (containers share each HCA through macvlans) shared -" \
    "$(check_row "$out" - rdma-netns)" "rdma-netns row"
  assert_contains "$out" "DCB of mlx5_0 ($NIC): not supported by this netdev (EOPNOTSUPP)"
  assert_contains "$out" "RoCE v2 GID of mlx5_0: port 1 index 2 0000:0000:0000:0000:0000:ffff:c612:0a05 on $NIC"
  assert_not_contains "$out" "index 3" "a RoCE v1 entry"
  assert_not_contains "$out" "index 4" "an empty entry"
  assert_contains "$out" "result: FAIL: 4 blocking, 1 warning(s), 8 unknown: qos.mode 'enforce' refuses annotated containers on this host"
}

# The default table: 100 columns, FOUND shortened, fixes numbered below it
# (one number for rows that share a fix).
test_check_default_table_fits_100_columns () {
  setup_check 1500
  local out rc=0 long n
  out=$("$HOOK" --config "$POLICY" check 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status"
  printf '%s\n' "$out" | grep -Eq '^HCA +NETDEV +CHECK +STATUS +BLOCKS +FOUND +FIX$' || fail "no header: $out"
  long=$(printf '%s\n' "$out" | sed -n '/^HCA /,/^$/p' | awk 'length($0) > 100' | head -3)
  [ -z "$long" ] || fail "table lines over 100 columns: $long"
  # The fixes too, wrapped (at least one is longer) and joined back to assert whole lines.
  long=$(printf '%s\n' "$out" | sed -n '/^fixes:$/,/^$/p' | awk 'length($0) > 100' | head -3)
  [ -z "$long" ] || fail "fix lines over 100 columns: $long"
  printf '%s\n' "$out" | sed -n '/^fixes:$/,/^$/p' | grep -q '^    [^ ]' || fail "no fix was wrapped: $out"
  out=$(printf '%s\n' "$out" | join_wrapped)
  assert_eq "mlx5_0 $NIC pfc UNKNOWN yes DCB not supported by this netdev [2]" "$(check_row "$out" mlx5_0 pfc)" "pfc row"
  assert_eq "mlx5_0 $NIC dscp UNKNOWN yes DCB not supported by this netdev [2]" "$(check_row "$out" mlx5_0 dscp)" "dscp row"
  assert_eq "mlx5_0 $NIC mtu FAIL yes 1500 [1]" "$(check_row "$out" mlx5_0 mtu)" "mtu row"
  assert_eq "mlx5_0 $NIC ecn-np OK no enabled (1) -" "$(check_row "$out" mlx5_0 ecn-np)" "an OK row"
  assert_contains "$out" "fixes:
[1] mlx5_0 mtu (blocks): ip link set $NIC mtu 9000
[2] mlx5_0 pfc, dscp (blocks): set hcas.mlx5_0.netdev in $POLICY to the HCA's DCB-capable PF netdev"
  # Not heard from the switch: one fix for its five rows, naming the firmware agents.
  assert_eq "mlx5_0 $NIC switch-lldp UNKNOWN no not heard: no LLDP frame heard on $NIC [4]" \
    "$(check_row "$out" mlx5_0 switch-lldp)" "switch-lldp row"
  assert_contains "$out" "[4] mlx5_0 switch-lldp, switch-pfc, switch-dscp, switch-mfs, switch-tc: run 'roce-hook lldp --watch'"
  assert_contains "$out" "i40e 'ethtool --set-priv-flags $NIC disable-fw-lldp on', ice 'ethtool --set-priv-flags $NIC fw-lldp-agent off'"
  n=$(printf '%s\n' "$out" | grep -c '^\[[0-9]*\] ')
  assert_eq "$n" "$(printf '%s\n' "$out" | grep -o '\[[0-9]*\]$' | sort -u | wc -l)" "every number in the table is listed once"
}

test_check_json_on_the_fake_host () {
  setup_check 9000
  need_cmd jq
  local out rc=0 j
  out=$("$HOOK" --config "$POLICY" check --json) || rc=$?
  assert_eq 1 "$rc" "exit status"
  j () { printf '%s' "$out" | jq -r "$1" || fail "jq $1 on: $out"; }
  assert_eq "$POLICY" "$(j .policy)" "policy"
  assert_eq "shared" "$(j .rdma_netns.mode)" "rdma netns mode"
  assert_eq "mlx5_0 $NIC" "$(j '.hcas[0] | "\(.hca) \(.netdev)"')" "hca"
  assert_eq "UNKNOWN true" "$(j '.hcas[0].checks[] | select(.check == "pfc") | "\(.status) \(.blocking)"')" "pfc"
  assert_eq "OK false 9000" "$(j '.hcas[0].checks[] | select(.check == "mtu") | "\(.status) \(.blocking) \(.found)"')" "mtu"
  assert_eq "FAIL echo 1 > $FAKE_SYSFS/class/net/$NIC/ecn/roce_rp/enable/3" \
    "$(j '.hcas[0].checks[] | select(.check == "ecn-rp") | "\(.status) \(.fix)"')" "ecn-rp"
  assert_eq "unsupported Operation not supported (EOPNOTSUPP)" "$(j '.hcas[0].dcb | "\(.state) \(.error)"')" "dcb"
  assert_eq "unsupported null" "$(j '.hcas[0].pfc_stall_prevention_ms | "\(.state) \(.value)"')" "stall"
  assert_eq "ok 9000" "$(j '.hcas[0].mtu | "\(.state) \(.value)"')" "mtu item"
  assert_eq "1" "$(j '.hcas[0].roce_v2_gids | length')" "RoCE v2 GIDs"
  assert_eq "1 2 RoCE v2 $NIC" "$(j '.hcas[0].roce_v2_gids[0] | "\(.port) \(.index) \(.type) \(.netdev)"')" "GID"
  assert_eq "FAIL 3 1" "$(j '.result | "\(.status) \(.blocking) \(.exit)"')" "result"
}

test_check_selects_one_hca_and_says_when_it_cannot_run () {
  setup_check 9000
  local nic2
  nic2=$(fake_nic 9000)
  fake_hca mlx5_1 1 "$nic2"
  POLICY_ECN=require write_policy "$POLICY" enforce "mlx5_0 $NIC 10" "mlx5_1 $nic2 11"
  local out rc=0
  out=$("$HOOK" --config "$POLICY" check --hca mlx5_1 --json) || rc=$?
  assert_eq 1 "$rc" "exit status"
  assert_eq "mlx5_1" "$(printf '%s' "$out" | jq -r '[.hcas[].hca] | join(",")')" "--hca filter"
  rc=0
  out=$("$HOOK" --config "$POLICY" check --hca mlx5_7 2>&1) || rc=$?
  assert_eq 2 "$rc" "unknown --hca"
  assert_contains "$out" "roce-hook: check: --hca 'mlx5_7': not an HCA of $POLICY (it lists mlx5_0, mlx5_1)"
  rc=0
  out=$(ROCE_HOOK_CONFIG=$T/missing.json "$HOOK" check 2>&1) || rc=$?
  assert_eq 2 "$rc" "missing policy"
  assert_contains "$out" "roce-hook: check: policy: open \`$T/missing.json\`: No such file or directory"
  sed -i 's/"min_mtu"/"min_mtus"/' "$POLICY"
  rc=0
  out=$("$HOOK" --config "$POLICY" check 2>&1) || rc=$?
  assert_eq 2 "$rc" "broken policy"
  assert_contains "$out" "qos.min_mtus: unknown key"
  rc=0
  out=$("$HOOK" --config "$POLICY" check --frobnicate 2>&1) || rc=$?
  assert_eq 2 "$rc" "unknown option"
}

run_tests
