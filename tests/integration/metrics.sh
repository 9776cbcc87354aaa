# SPDX-License-Identifier: Apache-2.0
# `roce-hook metrics` on the fake host: a veth NIC (its real ethtool
# statistics through the ioctl; no DCB, no PFC counters), fake hw_counters
# and port counters, real runc containers for the per-lease gauge.  The output
# must pass `promtool check metrics` and hold the values written; --output
# must be atomic; absent counter files are comments, not errors.  Also the
# contrib/ pieces: alert rules (promtool check/test rules), the Grafana
# dashboard, the DaemonSet's textfile loop.
# roce-suite: once
# roce-suite: memcheck test_output_parses_and_holds_the_values_written
# roce-suite: memcheck test_per_lease_gauge_of_a_running_container
# roce-suite: memcheck test_a_hostile_container_id_stays_in_its_label
# roce-suite: valgrind test_output_parses_and_holds_the_values_written
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"

# Nothing here depends on the runtime (one runc container gives a lease).
only_runc () {
  [ "$OCI_RUNTIME" = runc ] ||
    skip "metrics tests nothing runtime-specific: they run under OCI_RUNTIME=runc only"
}

metrics_host () {
  only_runc
  need_root
  need_cmd promtool
  NIC=$(fake_nic "${1:-9000}")
  fake_hca mlx5_0 0 "$NIC"
  POLICY=$T/policy.json
  write_policy "$POLICY" warn "mlx5_0 $NIC 10"
}

metrics () { # args... -> $T/m.out, $T/m.err; returns the status
  "$HOOK" --config "$POLICY" metrics "$@" >"$T/m.out" 2>"$T/m.err"
}

promtool_ok () { # FILE
  promtool check metrics <"$1" >"$T/promtool.out" 2>&1 ||
    fail "promtool check metrics: $(cat "$T/promtool.out")"
}

# The value of the sample line that starts with $1 (name and labels; through
# the environment: awk -v would undo the backslashes).
value_of () {
  K=$1 awk 'index($0, ENVIRON["K"] " ") == 1 { print substr($0, length(ENVIRON["K"]) + 2) }' "$T/m.out"
}

assert_value () { # SERIES VALUE
  local v
  v=$(value_of "$1")
  [ "$v" = "$2" ] || fail "$1: expected '$2', found '$v' in: $(cat "$T/m.out")"
}

test_output_parses_and_holds_the_values_written () {
  metrics_host
  fake_counters mlx5_0 1 hw_counters np_cnp_sent=1234 rp_cnp_handled=77 \
    np_ecn_marked_roce_packets=5 out_of_sequence=3 local_ack_timeout_err=0 roce_adp_retrans=18446744073709551615
  fake_counters mlx5_0 1 counters port_xmit_data=100 port_rcv_packets=42
  metrics || fail "metrics failed: $(cat "$T/m.err")"
  [ ! -s "$T/m.err" ] || fail "stderr: $(cat "$T/m.err")"
  promtool_ok "$T/m.out"
  local p='hca="mlx5_0",port="1"' n="hca=\"mlx5_0\",netdev=\"$NIC\""
  assert_value "roce_np_cnp_sent_total{$p}" 1234
  assert_value "roce_rp_cnp_handled_total{$p}" 77
  assert_value "roce_np_ecn_marked_roce_packets_total{$p}" 5
  assert_value "roce_out_of_sequence_total{$p}" 3
  assert_value "roce_local_ack_timeout_err_total{$p}" 0
  assert_value "roce_adp_retrans_total{$p}" 18446744073709551615
  assert_value "roce_port_transmit_bytes_total{$p}" 400
  assert_value "roce_port_receive_packets_total{$p}" 42
  assert_file_contains "$T/m.out" "# TYPE roce_np_cnp_sent_total counter"
  assert_file_contains "$T/m.out" "# HELP roce_np_cnp_sent_total "
  # The gate on a veth: the MTU reads right, DCB cannot be read (EOPNOTSUPP).
  assert_value "roce_gate_check{$n,check=\"mtu\"}" 1
  assert_value "roce_gate_check{$n,check=\"pfc\"}" -1
  assert_value "roce_gate_check{$n,check=\"dscp\"}" -1
  assert_value "roce_gate_check{$n,check=\"ecn-np\"}" -1
  assert_value "roce_gate_blocking_findings{$n}" 2
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0: the gate refuses containers under qos.mode enforce (roce-hook check --hca mlx5_0 lists every finding); the first: PFC on priority 3 of $NIC (mlx5_0): enabled vs DCB not supported"
  assert_value 'roce_policy_info{qos_mode="warn",pfc_priority="3",dscp="26",ecn="warn-unknown"}' 1
  # The veth's real ethtool statistics, read with the ioctl: as many as
  # ethtool(8) lists, none of them a PFC counter.
  need_cmd ethtool
  local count
  count=$(ethtool -S "$NIC" | grep -c '^ *[a-z0-9_]*: ')
  [ "$count" -gt 0 ] || fail "ethtool -S $NIC lists nothing"
  assert_value "roce_ethtool_statistics{$n}" "$count"
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0: $NIC: no PFC pause counters (rx_prio<N>_pause) among its $count ethtool statistics"
  if grep -q '^roce_pfc_pause_frames_total' "$T/m.out"; then fail "PFC pauses on a veth"; fi
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0: $NIC: no PFC stall prevention value"
  if grep -q '^roce_pfc_stall_prevention_seconds' "$T/m.out"; then fail "a stall value on a veth"; fi
  # Pool and GID table (fake_hca: one default GID at index 0).
  assert_value 'roce_pool_addresses{hca="mlx5_0"}' 100
  assert_value 'roce_pool_addresses_held{hca="mlx5_0"}' 0
  assert_value "roce_gid_table_entries{$p}" 1
  assert_value "roce_gid_table_entries_used{$p}" 1
  assert_value 'roce_lease_store_readable' 1
}

test_a_low_mtu_fails_the_mtu_check () {
  metrics_host 1500
  metrics || fail "metrics failed: $(cat "$T/m.err")"
  promtool_ok "$T/m.out"
  assert_value "roce_gate_check{hca=\"mlx5_0\",netdev=\"$NIC\",check=\"mtu\"}" 0
  assert_value "roce_gate_blocking_findings{hca=\"mlx5_0\",netdev=\"$NIC\"}" 3
  assert_file_contains "$T/m.out" "the first: MTU of $NIC (mlx5_0): at least 9000 (the container's macvlan inherits it) vs 1500"
}

test_absent_counter_files_are_comments_not_errors () {
  metrics_host
  # Port 1 has no hw_counters or counters (as the fake host and upstream
  # kernels); port 2 has a garbage file and one it does not know.
  fake_counters mlx5_0 2 hw_counters np_cnp_sent=N/A vendor_thing=5
  mkdir -p "$FAKE_SYSFS/class/infiniband/mlx5_0/ports/2/gids"
  metrics || fail "metrics failed on absent counters: $(cat "$T/m.err")"
  [ ! -s "$T/m.err" ] || fail "stderr: $(cat "$T/m.err")"
  promtool_ok "$T/m.out"
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0 port 1: no hw_counters ($FAKE_SYSFS/class/infiniband/mlx5_0/ports/1/hw_counters: No such file or directory): the RoCE congestion counters are absent"
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0 port 1: no counters ("
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0 port 2: np_cnp_sent left out: $FAKE_SYSFS/class/infiniband/mlx5_0/ports/2/hw_counters/np_cnp_sent: not a counter"
  assert_file_contains "$T/m.out" "# roce-hook: mlx5_0 port 2: none of the counters this exports is in $FAKE_SYSFS/class/infiniband/mlx5_0/ports/2/hw_counters"
  if grep -q '^roce_np_cnp_sent_total\|^roce_port_' "$T/m.out"; then
    fail "counters without files: $(grep '^roce_np\|^roce_port_' "$T/m.out")"
  fi
  assert_value 'roce_gid_table_entries{hca="mlx5_0",port="2"}' 0
  # Every comment is one line of printable text.
  if LC_ALL=C grep -n '[^[:print:]]' "$T/m.out"; then fail "unprintable bytes in the output"; fi
}

test_per_lease_gauge_of_a_running_container () {
  metrics_host
  need_cmd runc
  local id
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='sleep 60' make_bundle "$T/b" "$POLICY"
  start_container "$id" "$T/b" || fail "start refused: $(cat "$T/$id.err")"
  metrics || fail "metrics failed: $(cat "$T/m.err")"
  promtool_ok "$T/m.out"
  assert_value "roce_lease{hca=\"mlx5_0\",address=\"198.18.10.100\",ifname=\"roce0\",container=\"$id\"}" 1
  assert_value 'roce_pool_addresses_held{hca="mlx5_0"}' 1
  [ "$(grep -c '^roce_lease{' "$T/m.out")" = 1 ] || fail "not one lease: $(grep '^roce_lease' "$T/m.out")"
  # Gone with the container (poststop releases it).
  runtime delete -f "$id" >/dev/null 2>&1 || fail "delete $id"
  leases_settled "$POLICY" >/dev/null
  metrics || fail "metrics failed: $(cat "$T/m.err")"
  if grep -q '^roce_lease{' "$T/m.out"; then fail "a lease after delete: $(grep '^roce_lease' "$T/m.out")"; fi
  assert_value 'roce_pool_addresses_held{hca="mlx5_0"}' 0
}

test_a_hostile_container_id_stays_in_its_label () {
  metrics_host
  mkdir -p "$T/state"
  # A store (root's own file) naming containers a tenant could have named:
  # a quote, a backslash, braces, a space; and a stopped holder.
  cat >"$T/state/leases.json" <<'JSON'
{"version":1,"holders":[
 {"netns":{"boot_id":"b","dev":4,"ino":4026532999,"cookie":7},"owner":"x",
  "containers":["evil\"} 1 roce_pool_addresses 0 \\","plain-1"],"since":1700000000,
  "leases":[{"hca":"mlx5_0","address":"198.18.10.150","ifname":"roce0"}]},
 {"netns":{"boot_id":"b","dev":4,"ino":4026533000,"cookie":8},"owner":"stopped-2",
  "containers":[],"since":1700000000,
  "leases":[{"hca":"mlx5_0","address":"198.18.10.151","ifname":"roce0"}]}]}
JSON
  # (A newline or control byte is refused by the store itself.)
  metrics || fail "metrics failed: $(cat "$T/m.err")"
  assert_value 'roce_lease_store_readable' 1
  promtool_ok "$T/m.out"
  assert_value 'roce_lease{hca="mlx5_0",address="198.18.10.150",ifname="roce0",container="evil\"} 1 roce_pool_addresses 0 \\"}' 1
  assert_value 'roce_lease{hca="mlx5_0",address="198.18.10.150",ifname="roce0",container="plain-1"}' 1
  assert_value 'roce_lease{hca="mlx5_0",address="198.18.10.151",ifname="roce0",container="stopped-2"}' 0
  assert_value 'roce_pool_addresses_held{hca="mlx5_0"}' 2
  [ "$(grep -c '^roce_pool_addresses ' "$T/m.out")" = 0 ] || fail "the id made a sample of its own"
  [ "$(grep -c '^roce_lease{' "$T/m.out")" = 3 ] || fail "lease lines: $(grep '^roce_lease' "$T/m.out")"
}

test_output_is_replaced_atomically () {
  metrics_host
  fake_counters mlx5_0 1 hw_counters np_cnp_sent=1
  mkdir -p "$T/textfile"
  local f=$T/textfile/roce-hook.prom ref bad=0 reads=0 c wpid
  metrics --output "$f" || fail "metrics --output: $(cat "$T/m.err")"
  [ ! -s "$T/m.out" ] || fail "--output also wrote to stdout"
  promtool_ok "$f"
  ref=$(<"$f")
  assert_contains "$ref" 'roce_np_cnp_sent_total{hca="mlx5_0",port="1"} 1'
  # The writer replaces the file 150 times while a reader keeps reading it:
  # the reader sees the whole file every time, never a part.
  ( for _ in $(seq 150); do
      "$HOOK" --config "$POLICY" metrics --output "$f" || exit 1
    done ) &
  wpid=$!
  defer kill "$wpid"
  while kill -0 "$wpid" 2>/dev/null; do
    c=$(<"$f")
    reads=$((reads + 1))
    [ "$c" = "$ref" ] || bad=$((bad + 1))
  done
  wait "$wpid" || fail "a metrics --output run failed"
  [ "$reads" -gt 10 ] || fail "the reader read only $reads times"
  [ "$bad" = 0 ] || fail "$bad of $reads reads saw a partial or different file"
  assert_eq "roce-hook.prom" "$(ls -A "$T/textfile")" "the textfile directory (no temporary left)"
  # A missing directory: one line, exit 2, nothing written.
  local rc=0
  metrics --output "$T/nodir/roce.prom" || rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_eq 1 "$(wc -l <"$T/m.err")" "stderr lines"
  assert_contains "$(cat "$T/m.err")" "roce-hook: metrics: create \`$T/nodir/.roce.prom.roce-"
}

test_hca_option_and_its_refusal () {
  metrics_host
  local nic2 rc=0
  nic2=$(fake_nic 9000)
  fake_hca mlx5_1 1 "$nic2"
  write_policy "$POLICY" warn "mlx5_0 $NIC 10" "mlx5_1 $nic2 11"
  metrics --hca mlx5_1 || fail "metrics --hca: $(cat "$T/m.err")"
  promtool_ok "$T/m.out"
  assert_value 'roce_pool_addresses{hca="mlx5_1"}' 100
  if grep -q 'hca="mlx5_0"' "$T/m.out"; then fail "--hca mlx5_1 shows mlx5_0"; fi
  metrics --hca mlx5_9 || rc=$?
  assert_eq 2 "$rc" "exit status of an unknown --hca"
  assert_eq "roce-hook: metrics: --hca: an HCA of the policy vs 'mlx5_9' (fix: pick one of mlx5_0, mlx5_1)" \
    "$(cat "$T/m.err")" "the refusal"
  [ ! -s "$T/m.out" ] || fail "output on a refusal"
  rc=0
  metrics --bogus || rc=$?
  assert_eq 2 "$rc" "exit status of an unknown option"
}

test_alert_rules_dashboard_and_daemonset () {
  only_runc
  need_cmd promtool
  need_cmd jq
  local d=$ROOT/contrib
  promtool check rules "$d/prometheus/roce-alerts.yml" >"$T/rules.out" 2>&1 ||
    fail "promtool check rules: $(cat "$T/rules.out")"
  # Each alert is fired by the test series (the file names every one).
  (cd "$d/prometheus" && promtool test rules roce-alerts-test.yml) >"$T/test.out" 2>&1 ||
    fail "promtool test rules: $(cat "$T/test.out")"
  local a
  for a in $(sed -n 's/^ *- alert: //p' "$d/prometheus/roce-alerts.yml"); do
    grep -q "alertname: $a\$" "$d/prometheus/roce-alerts-test.yml" || fail "no test for $a"
  done
  # The dashboard: valid JSON, the panels the issue lists, and every query a
  # valid PromQL expression (promtool parses them as recording rules).
  jq -e . "$d/grafana/roce-dashboard.json" >/dev/null || fail "the dashboard is not JSON"
  local titles
  titles=$(jq -r '.panels[].title' "$d/grafana/roce-dashboard.json")
  for a in "PFC pause frames per priority" "Congestion notifications (CNPs) and ECN marks" \
           "Gate verdicts" "Address pool use" "GID table use" "Leases: container to rail"; do
    assert_contains "$titles" "$a" "dashboard panels"
  done
  { echo 'groups:'; echo '  - name: dashboard'; echo '    rules:'
    jq -r '.panels[].targets[]?.expr' "$d/grafana/roce-dashboard.json" |
      sed 's/\$__rate_interval/5m/g; s/\$instance/.*/g; s/\$hca/.*/g' |
      awk '{ gsub(/\x27/, "\x27\x27"); printf "      - record: roce:dashboard:%d\n        expr: \x27%s\x27\n", NR, $0 }'
  } >"$T/dash-rules.yml"
  promtool check rules "$T/dash-rules.yml" >"$T/dash.out" 2>&1 || fail "dashboard PromQL: $(cat "$T/dash.out")"
  # The DaemonSet writes the textfile collector's file on a hostPath.
  need_cmd python3
  python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
  python3 - "$d/k8s/roce-hook.yaml" <<'PY' || fail "the DaemonSet has no metrics loop"
import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
spec = ds["spec"]["template"]["spec"]
c = [c for c in spec["containers"] if c["name"] == "metrics"][0]
script = " ".join(c["args"])
assert " metrics " in script and "--output /textfile/roce-hook.prom" in script, script
mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/textfile"][0]
vol = [v for v in spec["volumes"] if v["name"] == mount["name"]][0]
assert vol["hostPath"]["path"] == "/var/lib/node_exporter/textfile_collector", vol
assert spec["hostNetwork"] is True
PY
}

run_tests
