#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A CRI client for tests/integration/cri.sh: the kubelet's calls, one per run.

    cri.py SOCKET GEN_DIR COMMAND ARGS...

GEN_DIR holds the stubs generated from tests/helpers/cri.proto (grpc_tools,
at test time).  Pod and container configs are JSON files:
  pod:       {"name", "namespace", "uid", "annotations", "labels",
              "log_directory", "cgroup_parent", "handler"}
  container: {"name", "image", "command", "args", "env": {K: V},
              "annotations", "labels", "cdi_devices": [NAME],
              "capabilities": ["IPC_LOCK", ...]}
Commands: version | runp POD | create POD_ID POD CTR | start ID | stop ID [T]
| rm ID | stopp POD_ID... | rmp POD_ID... | rmp-all | inspectp POD_ID | exec ID CMD...
| startpod POD CTR: RunPodSandbox, CreateContainer, StartContainer, timed;
  prints "<pod id> <container id> <ms>" (contrib/bench/nri.sh)
| crowd N POD CTR: N pods at once (threads), each POD with its name suffixed
  -<i> and a uid of its own, each with one container CTR started; prints
  "<i> <pod id> <container id>" or "<i> error <method>: <code>: <details>"
  a line, in order, exit 1 when one failed.
A CRI error is printed as "cri: METHOD: CODE: DETAILS" on stderr, exit 1.
`serve` runs the commands of stdin's lines, one Python for them all.
"""
import json
import sys
import time


def pod_config(pb, path):
    p = json.load(open(path))
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=p["name"], uid=p["uid"], namespace=p["namespace"]),
        hostname=p.get("hostname", p["name"]),
        log_directory=p.get("log_directory", ""),
        labels=p.get("labels", {}),
        annotations=p.get("annotations", {}),
        linux=pb.LinuxPodSandboxConfig(cgroup_parent=p.get("cgroup_parent", "")),
    ), p.get("handler", "")


def container_config(pb, path):
    c = json.load(open(path))
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=c["name"]),
        image=pb.ImageSpec(image=c["image"]),
        command=c.get("command", []),
        args=c.get("args", []),
        envs=[pb.KeyValue(key=k, value=v) for k, v in c.get("env", {}).items()],
        labels=c.get("labels", {}),
        annotations=c.get("annotations", {}),
        log_path=c.get("log_path", c["name"] + ".log"),
        CDI_devices=[pb.CDIDevice(name=n) for n in c.get("cdi_devices", [])],
        linux=pb.LinuxContainerConfig(security_context=pb.LinuxContainerSecurityContext(
            capabilities=pb.Capability(add_capabilities=c.get("capabilities", [])))),
    )


def each(ids, call):
    """call(id) for every id, the others still done when one fails; the
    last failure raised."""
    failed = None
    for i in ids:
        try:
            call(i)
        except Exception as e:  # grpc.RpcError
            failed = e
    if failed is not None:
        raise failed


def crowd(pb, rt, n, pod_path, ctr_path):
    import threading
    import uuid
    base, handler = pod_config(pb, pod_path)
    cconf = container_config(pb, ctr_path)
    out = [None] * n

    def one(i):
        conf = pb.PodSandboxConfig()
        conf.CopyFrom(base)
        conf.metadata.name = "%s-%d" % (base.metadata.name, i)
        conf.metadata.uid = str(uuid.uuid4())
        if base.log_directory:
            conf.log_directory = base.log_directory + "-%d" % i
        if base.linux.cgroup_parent:
            conf.linux.cgroup_parent = base.linux.cgroup_parent + "-%d" % i
        method = "RunPodSandbox"
        try:
            pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=conf, runtime_handler=handler),
                                   timeout=120).pod_sandbox_id
            method = "CreateContainer"
            ctr = rt.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=pod, config=cconf, sandbox_config=conf), timeout=120).container_id
            method = "StartContainer"
            rt.StartContainer(pb.StartContainerRequest(container_id=ctr), timeout=120)
            out[i] = "%d %s %s" % (i, pod, ctr)
        except Exception as e:  # grpc.RpcError
            code = e.code().name if hasattr(e, "code") else "?"
            details = e.details() if hasattr(e, "details") else str(e)
            out[i] = "%d error %s: %s: %s" % (i, method, code, details)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("\n".join(out))
    return 1 if any(" error " in line for line in out) else 0


def main(argv):
    sock, gen, cmd, args = argv[1], argv[2], argv[3], argv[4:]
    sys.path.insert(0, gen)
    import grpc
    import cri_pb2 as pb
    import cri_pb2_grpc as pbg

    channel = grpc.insecure_channel("unix://" + sock)
    rt = pbg.RuntimeServiceStub(channel)
    method = cmd
    try:
        if cmd == "version":
            method = "Version"
            r = rt.Version(pb.VersionRequest(version="v1"), timeout=10)
            print(r.runtime_name, r.runtime_version, r.runtime_api_version)
        elif cmd == "runp":
            method = "RunPodSandbox"
            config, handler = pod_config(pb, args[0])
            r = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=config, runtime_handler=handler),
                                 timeout=120)
            print(r.pod_sandbox_id)
        elif cmd == "create":
            method = "CreateContainer"
            config, _ = pod_config(pb, args[1])
            r = rt.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=args[0], config=container_config(pb, args[2]),
                sandbox_config=config), timeout=120)
            print(r.container_id)
        elif cmd == "start":
            method = "StartContainer"
            rt.StartContainer(pb.StartContainerRequest(container_id=args[0]), timeout=120)
        elif cmd == "stop":
            method = "StopContainer"
            t = int(args[1]) if len(args) > 1 else 0
            rt.StopContainer(pb.StopContainerRequest(container_id=args[0], timeout=t),
                             timeout=120 + t)
        elif cmd == "rm":
            method = "RemoveContainer"
            rt.RemoveContainer(pb.RemoveContainerRequest(container_id=args[0]), timeout=120)
        elif cmd == "stopp":
            method = "StopPodSandbox"
            each(args, lambda pod: rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod),
                                                     timeout=120))
        elif cmd == "rmp":
            method = "RemovePodSandbox"
            each(args, lambda pod: rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod),
                                                       timeout=120))
        elif cmd == "rmp-all":
            method = "ListPodSandbox"
            pods = [p.id for p in rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items]
            method = "RemovePodSandbox"
            each(pods, lambda pod: rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod),
                                                       timeout=120))
        elif cmd == "startpod":
            config, handler = pod_config(pb, args[0])
            t0 = time.monotonic()
            method = "RunPodSandbox"
            pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=config, runtime_handler=handler),
                                   timeout=120).pod_sandbox_id
            method = "CreateContainer"
            ctr = rt.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=pod, config=container_config(pb, args[1]), sandbox_config=config),
                timeout=120).container_id
            method = "StartContainer"
            rt.StartContainer(pb.StartContainerRequest(container_id=ctr), timeout=120)
            print("%s %s %.3f" % (pod, ctr, (time.monotonic() - t0) * 1000))
        elif cmd == "crowd":
            method = "crowd"
            return crowd(pb, rt, int(args[0]), args[1], args[2])
        elif cmd == "inspectp":
            method = "PodSandboxStatus"
            r = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=args[0], verbose=True),
                                    timeout=30)
            info = {k: json.loads(v) for k, v in r.info.items()}
            print(json.dumps({"state": pb.PodSandboxState.Name(r.status.state),
                              "ip": r.status.network.ip, "info": info}))
        elif cmd == "exec":
            method = "ExecSync"
            r = rt.ExecSync(pb.ExecSyncRequest(container_id=args[0], cmd=args[1:], timeout=60),
                            timeout=90)
            sys.stdout.buffer.write(r.stdout)
            sys.stderr.buffer.write(r.stderr)
            return r.exit_code
        else:
            print("cri: unknown command " + cmd, file=sys.stderr)
            return 2
    except grpc.RpcError as e:
        print("cri: %s: %s: %s" % (method, e.code().name, e.details()), file=sys.stderr)
        return 1
    return 0


def serve(argv):
    """cri.py SOCKET GEN_DIR serve: one command a line on stdin, a JSON
    array of its arguments; one answer a line on stdout, "RC OUT ERR" with
    OUT and ERR in base64 ("-" when empty).  The tests' client without a
    Python start-up (and gRPC's import) at every call."""
    import base64
    import io
    real_out, real_err = sys.stdout, sys.stderr

    def b64(stream):
        data = stream.buffer.getvalue() if hasattr(stream.buffer, "getvalue") else b""
        return base64.b64encode(data).decode() if data else "-"

    for line in sys.stdin:
        if not line.strip():
            continue
        out = io.TextIOWrapper(io.BytesIO(), write_through=True)
        err = io.TextIOWrapper(io.BytesIO(), write_through=True)
        sys.stdout, sys.stderr = out, err
        try:
            rc = main(argv[:3] + json.loads(line))
        except Exception as e:  # a bug of this client, said as a failure
            print("cri: %s" % e, file=sys.stderr)
            rc = 2
        finally:
            sys.stdout, sys.stderr = real_out, real_err
        real_out.write("%d %s %s\n" % (rc, b64(out), b64(err)))
        real_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv) if len(sys.argv) > 3 and sys.argv[3] == "serve" else main(sys.argv))
