# SPDX-License-Identifier: Apache-2.0
# `roce-hook qos apply` on the fake host: its NIC is a veth, which has no DCB
# (the kernel answers EOPNOTSUPP), so a full apply is refused naming it with
# nothing changed, and an apply limited to what this host has (--only
# ecn,rdma-cm) changes the fake ECN sysfs and rdma_cm configfs files, once.
# Then `check`'s GPUDirect and rdma_cm rows on fake sysfs module trees.
# Nothing here depends on the runtime: under another one the file is skipped.
# roce-suite: once
# roce-suite: memcheck test_only_ecn_and_rdma_cm_changes_the_files_once
# roce-suite: memcheck test_apply_runs_with_net_admin_alone_under_its_filter
# roce-suite: memcheck test_links_out_of_the_roots_and_loose_roots_are_refused
# roce-suite: valgrind test_only_ecn_and_rdma_cm_changes_the_files_once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/qos.sh"

setup_apply () {
  need_root
  [ "$OCI_RUNTIME" = runc ] || skip "qos apply runs no container: tested once, under runc"
  NIC=$(fake_nic 9000)
  fake_hca mlx5_0 0 "$NIC"
  POLICY=$T/policy.json
  write_policy "$POLICY" enforce "mlx5_0 $NIC 10"
  fake_ecn "$NIC" roce_np 3 0
  fake_ecn "$NIC" roce_rp 3 1
  # rdma_cm's configfs group for the HCA, as `mkdir` on configfs makes it.
  CM=$T/configfs/rdma_cm/mlx5_0/ports/1
  mkdir -p "$CM"
  echo 0 > "$CM/default_roce_tos"
  echo "IB/RoCE v1" > "$CM/default_roce_mode"
}

# Every file qos apply may write, with its content: what "nothing changed"
# compares.
snapshot () {
  (cd "$T" && find sys/class/net configfs -type f | sort | while read -r f; do
    printf '%s=%s\n' "$f" "$(cat "$f")"; done)
}

apply_row () { # OUTPUT ITEM -> the row, columns squeezed
  printf '%s\n' "$1" | awk -v i="$2" '$3 == i' | tr -s ' '
}

test_full_apply_is_refused_naming_the_netdev_with_nothing_changed () {
  setup_apply
  local before out rc=0
  before=$(snapshot)
  out=$("$HOOK" --config "$POLICY" qos apply 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status of a refused apply"
  assert_eq 1 "$(printf '%s\n' "$out" | grep -c .)" "lines printed"
  assert_contains "$out" "roce-hook: qos apply: DCB of $NIC (mlx5_0): a netdev whose driver speaks DCB netlink vs $NIC has no DCB (EOPNOTSUPP); nothing was changed (fix: set hcas.mlx5_0.netdev in $POLICY to the HCA's DCB-capable PF netdev, or apply the rest alone: --only ecn,rdma-cm)"
  assert_eq "$before" "$(snapshot)" "the ECN and configfs files"
  # The dry run shows the whole plan: the DCB items marked, the rest
  # planned; then the same refusal, one line on stderr, and exit 1.
  rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --dry-run 2>"$T/dry.err") || rc=$?
  assert_eq 1 "$rc" "exit status of a dry run that cannot be applied"
  assert_eq "mlx5_0 $NIC pfc - on 3 cannot apply: no DCB (EOPNOTSUPP)" "$(apply_row "$out" pfc)" "pfc (dry run)"
  assert_eq "mlx5_0 $NIC dscp - trust dscp, DSCP 26 -> priority 3 cannot apply: no DCB (EOPNOTSUPP)" \
    "$(apply_row "$out" dscp)" "dscp (dry run)"
  assert_eq "mlx5_0 $NIC ecn-np disabled (0) enabled (1) would set" "$(apply_row "$out" ecn-np)" "ecn-np (dry run)"
  assert_contains "$(apply_row "$out" rdma-cm-tos)" "would set" "rdma-cm-tos (dry run)"
  assert_contains "$out" "qos apply --dry-run: 3 change(s) would be made, 2 item(s) cannot be applied here; nothing was changed"
  assert_eq 1 "$(grep -c . "$T/dry.err")" "lines on stderr"
  assert_file_contains "$T/dry.err" "roce-hook: qos apply: DCB of $NIC (mlx5_0): a netdev whose driver speaks DCB netlink vs $NIC has no DCB (EOPNOTSUPP)"
  assert_eq "$before" "$(snapshot)" "the files after the dry run"
}

test_only_ecn_and_rdma_cm_changes_the_files_once () {
  setup_apply
  local before out rc=0
  before=$(snapshot)
  out=$("$HOOK" --config "$POLICY" qos apply --dry-run --only ecn,rdma-cm) ||
    fail "dry run: $out"
  assert_eq "$before" "$(snapshot)" "the files after --dry-run"
  assert_eq "mlx5_0 $NIC ecn-np disabled (0) enabled (1) would set" "$(apply_row "$out" ecn-np)" "ecn-np (dry run)"
  assert_contains "$out" "qos apply --dry-run: 3 change(s) would be made; nothing was changed"

  out=$("$HOOK" --config "$POLICY" qos apply --only ecn,rdma-cm) || fail "apply: $out"
  assert_contains "$(printf '%s\n' "$out" | head -1)" "HCA"
  assert_eq "mlx5_0 $NIC ecn-np disabled (0) enabled (1) set" "$(apply_row "$out" ecn-np)" "ecn-np"
  assert_eq "mlx5_0 $NIC ecn-rp enabled (1) enabled (1) none (already so)" "$(apply_row "$out" ecn-rp)" "ecn-rp"
  assert_eq "mlx5_0 $NIC rdma-cm-tos port 1: 0 (DSCP 0) port 1: 104 (DSCP 26) set" "$(apply_row "$out" rdma-cm-tos)" "tos"
  assert_eq "mlx5_0 $NIC rdma-cm-mode port 1: IB/RoCE v1 port 1: RoCE v2 set" "$(apply_row "$out" rdma-cm-mode)" "mode"
  assert_contains "$out" "qos apply: 3 change(s) made"
  assert_eq 1 "$(cat "$FAKE_SYSFS/class/net/$NIC/ecn/roce_np/enable/3")" "ECN NP file"
  assert_eq 1 "$(cat "$FAKE_SYSFS/class/net/$NIC/ecn/roce_rp/enable/3")" "ECN RP file"
  assert_eq 104 "$(cat "$CM/default_roce_tos")" "default_roce_tos"
  assert_eq "RoCE v2" "$(cat "$CM/default_roce_mode")" "default_roce_mode"
  assert_file_contains "$T/hook.log" "qos apply: ecn-np of $NIC (mlx5_0): disabled (0) -> enabled (1)"

  # A second run changes nothing, and says so.
  local after
  after=$(snapshot)
  out=$("$HOOK" --config "$POLICY" qos apply --only ecn,rdma-cm) || fail "second apply: $out"
  assert_contains "$out" "qos apply: nothing to change: the host already matches the policy"
  assert_not_contains "$out" " set" "second run's actions"
  assert_eq "$after" "$(snapshot)" "the files after the second run"
  # check now finds ECN and rdma_cm as the policy wants.
  out=$("$HOOK" --config "$POLICY" check --wide 2>&1) || true
  assert_eq "mlx5_0 $NIC ecn-np OK no enabled (1) enabled (1) -" "$(check_row "$out" mlx5_0 ecn-np)" "check ecn-np"
  assert_contains "$(check_row "$out" mlx5_0 rdma-cm-tos)" "rdma-cm-tos OK no 104 (DSCP 26 << 2), for UCX, MPI and perftest 104 (DSCP 26) -"
  assert_contains "$(check_row "$out" mlx5_0 rdma-cm-mode)" "rdma-cm-mode OK no"
}

test_apply_skips_ecn_the_driver_lacks_and_refuses_without_rdma_cm () {
  setup_apply
  rm -rf "$FAKE_SYSFS/class/net/$NIC/ecn" "$T/configfs"
  local out rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --only ecn) || fail "apply: $out"
  assert_contains "$(apply_row "$out" ecn-np)" "skip: the driver exposes no $FAKE_SYSFS/class/net/$NIC/ecn/roce_np/enable/3"
  assert_contains "$out" "qos apply: nothing to change"
  out=$("$HOOK" --config "$POLICY" qos apply --only rdma-cm 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status without rdma_cm"
  assert_contains "$out" "roce-hook: qos apply: rdma_cm defaults of mlx5_0: rdma_cm in configfs vs no $T/configfs/rdma_cm; nothing was changed (fix: modprobe rdma_cm"
}

# The dry run shows the whole plan whatever the host lacks: each item
# applicable or not, and why (no DCB, no rdma_cm in configfs, no PFC stall
# tunable, an unreadable ECN file), then the first refusal, one line.
test_dry_run_plans_every_item_whatever_is_missing () {
  setup_apply
  local out rc=0 before
  rm -rf "$T/configfs/rdma_cm"
  chmod 000 "$FAKE_SYSFS/class/net/$NIC/ecn/roce_rp/enable/3"
  jq '.qos.pfc_stall_prevention = "auto"' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  before=$(snapshot)
  out=$("$HOOK" --config "$POLICY" qos apply --dry-run 2>"$T/dry.err") || rc=$?
  assert_eq 1 "$rc" "exit status of a dry run that cannot be applied"
  assert_eq "mlx5_0 $NIC pfc - on 3 cannot apply: no DCB (EOPNOTSUPP)" "$(apply_row "$out" pfc)" "pfc"
  assert_eq "mlx5_0 $NIC ecn-np disabled (0) enabled (1) would set" "$(apply_row "$out" ecn-np)" "ecn-np"
  assert_contains "$(apply_row "$out" ecn-rp)" "ecn-rp - enabled (1) cannot apply: $FAKE_SYSFS/class/net/$NIC/ecn/roce_rp/enable/3: " "ecn-rp"
  assert_contains "$(apply_row "$out" pfc-stall)" "pfc-stall - auto cannot apply: $NIC: " "pfc-stall"
  assert_eq "mlx5_0 $NIC rdma-cm-tos - port 1: 104 (DSCP 26) cannot apply: no $T/configfs/rdma_cm (modprobe rdma_cm)" \
    "$(apply_row "$out" rdma-cm-tos)" "rdma-cm-tos"
  assert_eq "mlx5_0 $NIC rdma-cm-mode - port 1: RoCE v2 cannot apply: no $T/configfs/rdma_cm (modprobe rdma_cm)" \
    "$(apply_row "$out" rdma-cm-mode)" "rdma-cm-mode"
  assert_contains "$out" "qos apply --dry-run: 1 change(s) would be made, 6 item(s) cannot be applied here; nothing was changed"
  assert_eq 1 "$(grep -c . "$T/dry.err")" "lines on stderr"
  assert_file_contains "$T/dry.err" "roce-hook: qos apply: DCB of $NIC (mlx5_0): "
  assert_eq "$before" "$(snapshot 2>/dev/null)" "the files after the dry run"
  # An HCA whose netdev cannot be found: each of its items, and why.
  jq 'del(.hcas.mlx5_0.netdev)' "$POLICY" > "$T/p1.json" && mv "$T/p1.json" "$POLICY"
  rm -rf "$FAKE_SYSFS/class/infiniband/mlx5_0/device/net" "$FAKE_SYSFS/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0"
  rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --dry-run 2>"$T/dry.err") || rc=$?
  assert_eq 1 "$rc" "exit status without the netdev"
  assert_eq 7 "$(printf '%s\n' "$out" | grep -c "^mlx5_0 *- .*cannot apply: ")" "rows without the netdev: $out"
  assert_eq 1 "$(grep -c . "$T/dry.err")" "lines on stderr without the netdev"
}

# A failed apply leaves the host as it was: the rdma_cm group it made
# (mkdir) is removed again, after the ECN change before it is put back.
test_a_failed_apply_removes_the_rdma_cm_group_it_made () {
  setup_apply
  rm -rf "$T/configfs/rdma_cm/mlx5_0"
  local before dirs out rc=0
  before=$(snapshot)
  dirs=$(find "$T/configfs" | sort)
  # configfs makes the ports of a new group itself; a plain directory does
  # not, so the write after the mkdir fails, and the command says which.
  out=$("$HOOK" --config "$POLICY" qos apply --only ecn,rdma-cm 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status"
  [ ! -e "$T/configfs/rdma_cm/mlx5_0" ] || fail "the group made by the failed apply is still there"
  assert_eq "$dirs" "$(find "$T/configfs" | sort)" "the configfs tree after the failed apply"
  assert_eq "$before" "$(snapshot)" "the ECN and configfs files after the failed apply"
  assert_contains "$out" "roce-hook: qos apply: rdma-cm-tos of $NIC (mlx5_0), the earlier changes put back: open \`$T/configfs/rdma_cm/mlx5_0/ports/1/default_roce_tos\` for writing: No such file or directory"
  assert_eq "mlx5_0 $NIC ecn-np disabled (0) enabled (1) not set" "$(apply_row "$out" ecn-np)" "ecn-np row"
  assert_file_contains "$T/hook.log" "qos apply: removed $T/configfs/rdma_cm/mlx5_0, made by this run"
  assert_file_contains "$T/hook.log" "qos apply: put back ecn-np of $NIC"
}

# The hook as it runs: held in the open of its log_file (a FIFO nobody reads
# yet) after it confined itself, its /proc status shows the profile.
# $T/confined.status: its CapPrm CapEff NoNewPrivs Seccomp.
confined_run () { # ARGS...
  local fifo=$T/log.fifo pol=$T/policy-fifo.json pid st="" rc=0
  rm -f "$fifo"
  mkfifo "$fifo"
  sed "s|\"log_file\": \"[^\"]*\"|\"log_file\": \"$fifo\"|" "$POLICY" > "$pol"
  "$HOOK" --config "$pol" "$@" > "$T/confined.out" 2>&1 &
  pid=$!
  # Seccomp comes last in its confinement: once it shows, all of it is in place.
  for _ in $(seq 200); do
    st=$(cat "/proc/$pid/status" 2>/dev/null) || break
    printf '%s\n' "$st" | grep -q '^Seccomp:[[:space:]]*2' && break
    sleep 0.05
  done
  printf '%s\n' "$st" | awk '/^(CapPrm|CapEff|NoNewPrivs|Seccomp):/ {printf "%s ", $2}' > "$T/confined.status"
  # Reading the FIFO lets the hook go on (timeout: should it never open it).
  timeout 30 cat "$fifo" > "$T/confined.log" || true
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || fail "$* exited $rc: $(cat "$T/confined.out")"
}

test_apply_runs_with_net_admin_alone_under_its_filter () {
  setup_apply
  [ -z "${ROCE_VALGRIND:-}" ] || skip "valgrind's own process status"
  local prm want got
  prm=$(sed -n 's/^CapPrm:[[:space:]]*//p' /proc/self/status)
  # CAP_NET_ADMIN (bit 12) if this shell has it: nothing else.
  want=$(printf '%016x' $(( 16#$prm & (1 << 12) )))
  confined_run qos apply --only ecn
  got=$(cat "$T/confined.status")
  assert_eq "$want $want 1 2 " "$got" "CapPrm CapEff NoNewPrivs Seccomp of qos apply"
  assert_contains "$(cat "$T/confined.out")" "qos apply: 1 change(s) made"
  assert_eq 1 "$(cat "$FAKE_SYSFS/class/net/$NIC/ecn/roce_np/enable/3")" "ECN NP file"
  assert_contains "$(cat "$T/confined.log")" "qos apply: ecn-np of $NIC (mlx5_0): disabled (0) -> enabled (1)"
  # The dry run is a query: no capability effective, none but the query's
  # CAP_SYS_PTRACE (bit 19) permitted.
  echo 0 > "$FAKE_SYSFS/class/net/$NIC/ecn/roce_np/enable/3"
  want=$(printf '%016x' $(( 16#$prm & (1 << 19) )))
  confined_run qos apply --dry-run --only ecn
  got=$(cat "$T/confined.status")
  assert_eq "$want 0000000000000000 1 2 " "$got" "CapPrm CapEff NoNewPrivs Seccomp of the dry run"
  assert_contains "$(cat "$T/confined.out")" "1 change(s) would be made; nothing was changed"
  assert_eq 0 "$(cat "$FAKE_SYSFS/class/net/$NIC/ecn/roce_np/enable/3")" "ECN NP file after the dry run"
}

test_bad_arguments () {
  setup_apply
  local out rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --only ecn,bogus 2>&1) || rc=$?
  assert_eq 2 "$rc" "unknown item"
  assert_contains "$out" "'bogus' is not an item (pfc, dscp, ecn, pfc-stall, rdma-cm)"
  rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --hca mlx5_7 2>&1) || rc=$?
  assert_eq 2 "$rc" "unknown --hca"
  assert_contains "$out" "--hca 'mlx5_7': not an HCA of $POLICY (it lists mlx5_0)"
  rc=0
  out=$("$HOOK" --config "$POLICY" qos frobnicate 2>&1) || rc=$?
  assert_eq 2 "$rc" "unknown qos verb"
  assert_contains "$out" "usage: roce-hook [--config F] qos apply"
}

# ---- GPUDirect readiness in check ----------------------------------------------

gdr_row () { # -> the gpudirect row of check
  local out
  out=$("$HOOK" --config "$POLICY" check --wide 2>&1) || true
  check_row "$out" mlx5_0 gpudirect
}

fake_module () { # NAME [VERSION [TAINT]]
  mkdir -p "$FAKE_SYSFS/module/$1"
  [ -z "${2:-}" ] || echo "$2" > "$FAKE_SYSFS/module/$1/version"
  [ -z "${3:-}" ] || echo "$3" > "$FAKE_SYSFS/module/$1/taint"
}

test_check_reports_gpudirect_readiness_from_the_module_tree () {
  setup_apply
  local row
  row=$(gdr_row)
  assert_contains "$row" "mlx5_0 $NIC gpudirect WARN no nvidia_peermem loaded, or dma-buf"
  assert_contains "$row" "no NVIDIA driver loaded (no module/nvidia)"
  assert_contains "$row" "modprobe nvidia_peermem"
  fake_module nvidia 535.104.05 PO
  row=$(gdr_row)
  assert_contains "$row" "gpudirect WARN"
  assert_contains "$row" "neither nvidia_peermem loaded nor dma-buf (the proprietary NVIDIA module exports no dma-buf)"
  fake_module nvidia_peermem
  row=$(gdr_row)
  assert_contains "$row" "gpudirect OK no"
  assert_contains "$row" "peer memory: nvidia_peermem loaded"
  rm -rf "$FAKE_SYSFS/module/nvidia_peermem"
  fake_module nvidia 535.104.05 O
  row=$(gdr_row)
  assert_contains "$row" "gpudirect OK no"
  assert_contains "$row" "dma-buf: kernel $(uname -r), NVIDIA open kernel module 535.104.05"
  fake_module nvidia 470.82.01 O
  assert_contains "$(gdr_row)" "NVIDIA driver 470.82.01 is older than R515"
}

# What qos apply writes stays beneath sysfs_root and configfs_root: a link
# inside either tree that leads out of it is refused naming it, and the file
# outside is untouched; a root that is neither the filesystem it names nor a
# tree of root's alone is refused before anything is read.
test_links_out_of_the_roots_and_loose_roots_are_refused () {
  setup_apply
  local out rc=0 ecn=$FAKE_SYSFS/class/net/$NIC/ecn
  mkdir -p "$T/outside/enable" && echo 0 > "$T/outside/enable/3"
  rm -rf "$ecn/roce_np" && ln -s "$T/outside" "$ecn/roce_np"
  # A failed apply shows its table (nothing set) and fails in one line.
  out=$("$HOOK" --config "$POLICY" qos apply --only ecn 2>"$T/link.err") || rc=$?
  assert_eq 1 "$rc" "exit status with ecn/roce_np linked out of sysfs_root"
  assert_eq "mlx5_0 $NIC ecn-np disabled (0) enabled (1) not set" "$(apply_row "$out" ecn-np)" "ecn-np row"
  assert_eq 1 "$(grep -c . "$T/link.err")" "lines on stderr: $(cat "$T/link.err")"
  assert_file_contains "$T/link.err" "leads out of \`$FAKE_SYSFS\` (a link); nothing written there"
  # The same without openat2 (kernels before 5.6, valgrind): the fallback
  # checks where the kernel says the file it opened is.
  rc=0
  out=$("$BUILD/helpers/enosys" "$HOOK" --config "$POLICY" qos apply --only ecn 2>"$T/link.err") || rc=$?
  assert_eq 1 "$rc" "exit status without openat2"
  assert_file_contains "$T/link.err" "leads out of \`$FAKE_SYSFS\` (a link); nothing written there"
  assert_eq 0 "$(cat "$T/outside/enable/3")" "the file outside sysfs_root, without openat2"
  assert_eq 0 "$(cat "$T/outside/enable/3")" "the file outside sysfs_root"
  # The same for the rdma_cm group's attribute files.
  mkdir -p "$T/outside-cm" && echo 0 > "$T/outside-cm/default_roce_tos" && echo "IB/RoCE v1" > "$T/outside-cm/default_roce_mode"
  rm -rf "$CM" && ln -s "$T/outside-cm" "$CM"
  rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --only rdma-cm 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status with the rdma_cm port linked out of configfs_root: $out"
  assert_eq 0 "$(cat "$T/outside-cm/default_roce_tos")" "the tos file outside configfs_root"
  # A root others may write: refused, naming the key.
  chmod o+w "$FAKE_SYSFS"
  rc=0
  out=$("$HOOK" --config "$POLICY" qos apply --dry-run --only ecn 2>&1) || rc=$?
  chmod o-w "$FAKE_SYSFS"
  assert_eq 1 "$rc" "exit status with a world-writable sysfs_root"
  assert_contains "$out" "roce-hook: qos apply: sysfs_root \`$FAKE_SYSFS\`: sysfs, or a tree owned by root and writable by no one else vs a directory of uid 0, mode"
}

run_tests
