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
for k in ("DaemonSet", "ConfigMap", "RuntimeClass", "Pod", "Job"):
    assert k in kinds, "missing " + k
ds = kinds["DaemonSet"][0]
init = ds["spec"]["template"]["spec"]["initContainers"][0]
script = " ".join(init["args"])
for must in ("/host/usr/local/bin/roce-hook", "/host/usr/local/bin/roce-runtime",
             "/host/usr/local/bin/roce-runtime-engine", "/host/usr/local/bin/roce-hook-engine",
             "/host/etc/roce-hook/config.json", "oci/hooks.d"):
    assert must in script, must
gc = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "gc"][0]
assert "gc" in " ".join(gc["args"]) and ds["spec"]["template"]["spec"]["hostPID"] is True
assert any(m["mountPath"] == "/var/lib/roce-hook" for m in gc["volumeMounts"])
assert kinds["Pod"][0]["metadata"]["annotations"]["roce.io/hca"]
job = kinds["Job"][0]["spec"]["template"]
assert job["metadata"]["annotations"]["roce.io/hca"]
assert "all_reduce_perf" in " ".join(job["spec"]["containers"][0]["args"])
open(os.path.join(t, "cm.json"), "w").write(kinds["ConfigMap"][0]["data"]["config.json"])
# Cluster addressing: cluster.node from the downward API, the etcd TLS secret
# installed on the host, gc on the installed policy, an example etcd.
env = {e["name"]: e for e in init.get("env", [])}
assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
assert "${NODE_NAME}" in kinds["ConfigMap"][0]["data"]["config.json"] and "NODE_NAME" in script
assert "/host/etc/roce-hook/etcd" in script and "/etc/roce-hook/config.json gc" in " ".join(gc["args"])
sts = [s for s in kinds.get("StatefulSet", []) if s["metadata"]["name"] == "etcd"][0]
assert sts["spec"]["replicas"] == 3
PY
  # As the install step does: the node's name in cluster.node.
  sed -i 's/${NODE_NAME}/gpu-node-17/' "$T/cm.json"
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
  grep -q 'tests/run-check --unit-only' "$ROOT/Makefile" || fail "make unit does not use the runner"
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
