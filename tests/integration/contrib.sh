# SPDX-License-Identifier: Apache-2.0
# The snippets in contrib/ and config/ are valid: the YAML parses and carries what an
# operator needs, the policies are ones the hook accepts, containerd takes its config.
# roce-suite: once
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
# Nothing here starts a container: once, under the default runtime, is enough.
[ "$OCI_RUNTIME" = runc ] || return 0

test_contrib_snippets_are_valid () {
  need_cmd python3
  python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
  python3 - "$ROOT/contrib/k8s" "$T" <<'PY' || fail "YAML check failed"
import json, os, sys, yaml
d, t = sys.argv[1], sys.argv[2]
kinds = {}
for f in sorted(os.listdir(d)):
    if not f.endswith(".yaml"):
        continue
    for doc in yaml.safe_load_all(open(os.path.join(d, f))):
        assert isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc, f
        kinds.setdefault(doc["kind"], []).append(doc)
for k in ("DaemonSet", "ConfigMap", "RuntimeClass", "Pod", "MPIJob", "ValidatingAdmissionPolicy",
          "ValidatingAdmissionPolicyBinding", "StatefulSet", "PodDisruptionBudget", "CronJob"):
    assert k in kinds, "missing " + k
ds = kinds["DaemonSet"][0]
spec = ds["spec"]["template"]["spec"]
init = spec["initContainers"][0]
assert init["command"] == ["/opt/roce-hook/install.sh", "install"], init["command"]
assert spec["automountServiceAccountToken"] is False
ctr = {c["name"]: c for c in spec["containers"]}
assert ctr["sync"]["command"] == ["/opt/roce-hook/install.sh", "sync"]
sync_env = {e["name"]: e for e in ctr["sync"]["env"]}
assert sync_env["ROCE_CLEANUP_ON_TERM"]["value"] == "1"
assert sync_env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
# gc: the installed policy, the host's processes.
assert "gc" in " ".join(ctr["gc"]["args"]) and spec["hostPID"] is True
assert "/etc/roce-hook/config.json gc" in " ".join(ctr["gc"]["args"])
assert any(m["mountPath"] == "/var/lib/roce-hook" for m in ctr["gc"]["volumeMounts"])
# metrics: unprivileged, no capability, the rendered policy (not the ConfigMap).
m = ctr["metrics"]
sc = m["securityContext"]
assert sc["privileged"] is False and sc["capabilities"]["drop"] == ["ALL"] and sc["allowPrivilegeEscalation"] is False
assert "--config /run/roce-policy/config.json" in " ".join(m["args"])
assert not any(v["mountPath"] in ("/policy", "/host") for v in m["volumeMounts"])
assert {e["name"]: e["value"] for e in ctr["sync"]["env"] if "value" in e}["ROCE_POLICY_COPY"] == "/run/roce-policy/config.json"
# Placement: the RuntimeClass schedules on the DaemonSet's label.
assert kinds["RuntimeClass"][0]["scheduling"]["nodeSelector"] == {"roce.io/ready": "true"}
vap = kinds["ValidatingAdmissionPolicy"][0]
assert vap["apiVersion"] == "admissionregistration.k8s.io/v1"
assert kinds["ValidatingAdmissionPolicyBinding"][0]["spec"]["validationActions"] == ["Deny"]
assert kinds["Pod"][0]["metadata"]["annotations"]["roce.io/hca"]
mpi = kinds["MPIJob"][0]
assert mpi["apiVersion"] == "kubeflow.org/v2beta1"
worker = mpi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
assert worker["metadata"]["annotations"]["roce.io/hca"] and worker["spec"]["runtimeClassName"] == "roce"
launcher = mpi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
assert "/opt/nccl-tests/build/all_reduce_perf" in launcher["args"]
cm = kinds["ConfigMap"]
pol = [c for c in cm if c["metadata"]["name"] == "roce-hook-policy"][0]["data"]["config.json"]
open(os.path.join(t, "cm.json"), "w").write(pol)
assert "${NODE_NAME}" in pol and "${ETCD_SERVICE_IP}" in pol
# etcd: TLS both ways, probes on the metrics port, no fixed ClusterIP.
sts = [s for s in kinds["StatefulSet"] if s["metadata"]["name"] == "roce-etcd"][0]
assert sts["spec"]["replicas"] == 3
ec = sts["spec"]["template"]["spec"]["containers"][0]
assert ec["readinessProbe"]["httpGet"]["port"] == "metrics"
run = [c for c in cm if c["metadata"]["name"] == "roce-etcd-scripts"][0]["data"]["run.sh"]
for flag in ("--client-cert-auth", "--peer-client-cert-auth", "--listen-metrics-urls \"http://$listen:2381\"",
             "--initial-cluster-state \"$state\""):
    assert flag in run, flag
for svc in kinds["Service"]:
    assert svc["spec"].get("clusterIP") in (None, "None"), svc["metadata"]["name"]
PY
  # As the install step does: the node's name in cluster.node.
  sed -i 's/${NODE_NAME}/gpu-node-17/; s/${ETCD_SERVICE_IP}/10.96.0.50/' "$T/cm.json"
  "$BUILD/helpers/policy-lint" "$T/cm.json" || fail "the ConfigMap's policy is refused"
  "$BUILD/helpers/policy-lint" "$ROOT/config/config.json" || fail "config/config.json is refused"
  python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' \
    "$ROOT"/config/hooks.d/*.json "$ROOT/contrib/docker/daemon.json" || fail "invalid JSON"
  if command -v containerd >/dev/null; then
    containerd --config "$ROOT/contrib/containerd/config.toml" config dump >"$T/dump" 2>&1 ||
      fail "containerd rejects contrib/containerd/config.toml: $(tail -3 "$T/dump")"
    assert_file_contains "$T/dump" "BinaryName = \"/usr/local/bin/roce-runtime\""
  fi
}

# `make unit`'s runner reports the unit tests' own failure (make's /bin/sh
# is dash: no PIPESTATUS, and the pipe into tee hid every failure).
test_make_unit_fails_when_a_unit_test_fails () {
  local rc=0
  make -s -n -C "$ROOT" BUILD="$T/build" unit 2>/dev/null | grep -q 'tests/run-check --unit-only' ||
    fail "make unit does not use the runner"
  mkdir "$T/build"
  printf '#!/bin/sh\necho "[====] Synthesis: Tested: 2 | Passing: 1 | Failing: 1 | Crashing: 0"\nexit 1\n' > "$T/build/unit-tests"
  chmod +x "$T/build/unit-tests"
  ROCE_BUILD=$T/build "$ROOT/tests/run-check" --unit-only >"$T/out" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "the unit runner succeeded although a unit test failed: $(cat "$T/out")"
  assert_file_contains "$T/out" "unit: 1 passed, 1 failed"
  # A crash that prints no synthesis is a failure too.
  printf '#!/bin/sh\nkill -SEGV $$\n' > "$T/build/unit-tests"
  rc=0
  ROCE_BUILD=$T/build "$ROOT/tests/run-check" --unit-only >"$T/out" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "the unit runner succeeded although the unit tests crashed"
}

run_tests
