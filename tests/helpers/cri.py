#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A CRI client for tests/integration/cri.sh: the kubelet's calls, one per run.

    cri.py SOCKET GEN_DIR COMMAND ARGS...

GEN_DIR holds the stubs generated from tests/helpers/cri.proto (grpc_tools,
at test time).  Pod and container configs are JSON files:
  pod:       {"name", "namespace", "uid", "annotations", "labels",
              "log_directory", "cgroup_parent", "handler"}
  container: {"name", "image", "command", "args", "env": {K: V},
              "annotations", "labels", "cdi_devices": [NAME]}
Commands: version | runp POD | create POD_ID POD CTR | start ID | stop ID [T]
| rm ID | stopp POD_ID | rmp POD_ID | inspectp POD_ID | exec ID CMD...
A CRI error is printed as "cri: METHOD: CODE: DETAILS" on stderr, exit 1.
"""
import json
import sys


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
    )


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
            rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=args[0]), timeout=120)
        elif cmd == "rmp":
            method = "RemovePodSandbox"
            rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=args[0]), timeout=120)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv))
