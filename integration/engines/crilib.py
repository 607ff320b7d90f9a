"""containerd's CRI plugin, and a small CRI client that sends what the
kubelet sends (no kubelet is packaged for Debian 12).

The client is generated at test time from the CRI v1 api.proto (cri/api.proto,
kubernetes/cri-api without the gogoproto lines): with Debian's
python3-grpc-tools (`python3 -m grpc_tools.protoc --python_out
--grpc_python_out`, its RuntimeServiceStub/ImageServiceStub), or, where that
package is missing, `protoc --python_out` plus a grpcio `channel.unary_unary`
for every unary method, built from the generated descriptors.
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import enginelib as el

PROTO_DIR = el.ENGINES_DIR / "cri"
K8S_NS = "k8s.io"  # containerd namespace of the CRI plugin
CRI_PLUGIN = "io.containerd.grpc.v1.cri"

_api = None


def api_modules():
    """(api_pb2, api_pb2_grpc or None), generated once per process (the
    protobuf descriptor pool refuses a second api.proto)."""
    global _api
    if _api is None:
        gen = Path(tempfile.mkdtemp(prefix="cmt-cri-gen-"))
        try:
            use_tools = importlib.util.find_spec("grpc_tools") is not None and not os.environ.get("COMET_CRI_PROTOC")
            if use_tools:
                el.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={gen}",
                        f"--grpc_python_out={gen}", "api.proto"], check=True, timeout=60)
            else:
                el.run(["protoc", f"-I{PROTO_DIR}", f"--python_out={gen}", "api.proto"], check=True, timeout=60)
            mods = []
            for name in ("api_pb2", "api_pb2_grpc") if use_tools else ("api_pb2",):
                # api_pb2_grpc does `import api_pb2`: register it under that name
                spec = importlib.util.spec_from_file_location(name, gen / f"{name}.py")
                mod = importlib.util.module_from_spec(spec)
                sys.modules[name] = mod
                spec.loader.exec_module(mod)
                mods.append(mod)
        finally:
            shutil.rmtree(gen, ignore_errors=True)
        _api = (mods[0], mods[1] if len(mods) > 1 else None)
    return _api


class CRIError(Exception):
    def __init__(self, method: str, code, details: str):
        super().__init__(f"{method}: {code}: {details}")
        self.method, self.code, self.details = method, code, details


class CRIClient:
    """client.call("RunPodSandbox", {"config": {...}, "runtime_handler": "comet"})
    -> the response as a dict (proto field names)."""

    def __init__(self, sock: Path, timeout: float = 60):
        import grpc
        from google.protobuf import json_format

        self._grpc = grpc
        self._jf = json_format
        self.pb, pb_grpc = api_modules()
        self.channel = grpc.insecure_channel(f"unix://{sock}")
        self.timeout = timeout
        self._methods = {}
        for svc_name in ("RuntimeService", "ImageService"):
            svc = self.pb.DESCRIPTOR.services_by_name[svc_name]
            stub = getattr(pb_grpc, f"{svc_name}Stub")(self.channel) if pb_grpc else None
            for m in svc.methods:
                if m.client_streaming or m.server_streaming:
                    continue
                req = getattr(self.pb, m.input_type.name)
                resp = getattr(self.pb, m.output_type.name)
                if stub is not None:
                    fn = getattr(stub, m.name)
                else:
                    fn = self.channel.unary_unary(f"/{svc.full_name}/{m.name}", request_serializer=req.SerializeToString,
                                                  response_deserializer=resp.FromString)
                self._methods[m.name] = (fn, req)

    def call(self, method: str, request: dict | None = None, timeout: float | None = None) -> dict:
        fn, req_cls = self._methods[method]
        req = self._jf.ParseDict(request or {}, req_cls())
        try:
            resp = fn(req, timeout=timeout or self.timeout)
        except self._grpc.RpcError as e:
            raise CRIError(method, e.code(), e.details()) from None
        return self._jf.MessageToDict(resp, preserving_proto_field_name=True, including_default_value_fields=True)

    def close(self) -> None:
        self.channel.close()


# ---------------------------------------------------------------- CNI
#: a CNI plugin that gives the pod an eth0 (one end of a veth pair whose
#: other end stays in the pod's netns too): nothing on the host's network
CNI_PLUGIN = r"""#!/bin/sh
# comet engines suite: eth0 for a pod, without touching the host's network.
cfg=$(cat)
ver=$(printf '%s' "$cfg" | sed -n 's/.*"cniVersion" *: *"\([^"]*\)".*/\1/p')
case "$CNI_COMMAND" in
VERSION)
  echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}' ;;
ADD)
  if ! err=$(nsenter --net="$CNI_NETNS" sh -c 'ip link add "$1" type veth peer name "$1"p &&
      ip addr add 192.0.2.10/24 dev "$1" && ip link set "$1"p up && ip link set "$1" up' sh "$CNI_IFNAME" 2>&1); then
    printf '{"cniVersion":"%s","code":999,"msg":"veth in netns failed","details":"%s"}\n' "$ver" "$err"
    exit 1
  fi
  printf '{"cniVersion":"%s","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"address":"192.0.2.10/24","interface":0}]}\n' \
    "$ver" "$CNI_IFNAME" "$CNI_NETNS" ;;
DEL|CHECK|GC|STATUS)
  exit 0 ;;  # the veth pair dies with the netns
*)
  exit 0 ;;
esac
"""

CNI_CONF = {"cniVersion": "1.0.0", "name": "comet-engines", "plugins": [{"type": "comet-engines-veth"}]}


def write_cni(workdir: Path) -> tuple[Path, Path]:
    bindir, confdir = workdir / "cni" / "bin", workdir / "cni" / "conf"
    bindir.mkdir(parents=True)
    confdir.mkdir(parents=True)
    (bindir / "comet-engines-veth").write_text(CNI_PLUGIN)
    (bindir / "comet-engines-veth").chmod(0o755)
    os.symlink("/usr/lib/cni/loopback", bindir / "loopback")  # containernetworking-plugins (podman's dependency)
    (confdir / "10-comet-engines.conflist").write_text(json.dumps(CNI_CONF, indent=2))
    return bindir, confdir


# ---------------------------------------------------------------- kubelet-like pod
#: what the kubelet sends by default (DefaultProcMount)
MASKED = ["/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
          "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"]
READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
POD_NS = {"network": "POD", "pid": "CONTAINER", "ipc": "POD"}


class Pod:
    """One pod, driven as the kubelet drives it."""

    def __init__(self, cri: CRIClient, workdir: Path, pod: dict, handler: str, cgroup_root: str,
                 image_map: dict[str, str]):
        self.cri = cri
        md = pod["metadata"]
        self.name = md["name"]
        self.namespace = md.get("namespace", "default")
        self.uid = secrets.token_hex(16)
        self.pod = pod
        self.handler = handler
        self.image_map = image_map
        self.log_dir = workdir / "pods" / f"{self.namespace}_{self.name}_{self.uid}"
        self.log_dir.mkdir(parents=True)
        self.cgroup_parent = f"{cgroup_root}/besteffort/pod{self.uid}"
        self.labels = {"io.kubernetes.pod.name": self.name, "io.kubernetes.pod.namespace": self.namespace,
                       "io.kubernetes.pod.uid": self.uid}
        annotations = dict(md.get("annotations") or {})
        annotations.update({"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": "2025-01-01T00:00:00Z"})
        self.sandbox_config = {
            "metadata": {"name": self.name, "uid": self.uid, "namespace": self.namespace, "attempt": 0},
            "hostname": self.name,
            "log_directory": str(self.log_dir),
            "dns_config": {"servers": ["127.0.0.53"], "searches": [f"{self.namespace}.svc.cluster.local"],
                           "options": ["ndots:5"]},
            "labels": self.labels,
            "annotations": annotations,
            "linux": {"cgroup_parent": self.cgroup_parent,
                      "security_context": {"namespace_options": POD_NS}},
        }
        self.id: str | None = None
        self.containers: dict[str, str] = {}

    def run(self, timeout: float = 60) -> str:
        r = self.cri.call("RunPodSandbox", {"config": self.sandbox_config, "runtime_handler": self.handler},
                          timeout=timeout)
        self.id = r["pod_sandbox_id"]
        return self.id

    def container_config(self, spec: dict, annotations: dict | None = None) -> dict:
        name = spec["name"]
        cdir = self.log_dir / name
        cdir.mkdir(exist_ok=True)
        term = self.log_dir / f"termination-{name}"
        term.touch()
        sc = spec.get("securityContext") or {}
        seccomp = (sc.get("seccompProfile") or {}).get("type", "Unconfined")
        ann = {"io.kubernetes.container.hash": secrets.token_hex(4), "io.kubernetes.container.restartCount": "0",
               "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
               "io.kubernetes.container.terminationMessagePolicy": "File",
               "io.kubernetes.pod.terminationGracePeriod": "30"}
        ann.update(annotations or {})
        image = self.image_map.get(spec["image"], spec["image"])
        return {
            "metadata": {"name": name, "attempt": 0},
            "image": {"image": image},
            "command": spec.get("command", []),
            "args": spec.get("args", []),
            "envs": [{"key": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
                     {"key": "KUBERNETES_SERVICE_PORT", "value": "443"}],
            "mounts": [{"container_path": "/dev/termination-log", "host_path": str(term)}],
            "labels": {**self.labels, "io.kubernetes.container.name": name},
            "annotations": ann,
            "log_path": f"{name}/0.log",
            "linux": {
                "resources": {"cpu_period": 100000, "cpu_shares": 2, "oom_score_adj": 1000},
                "security_context": {
                    "namespace_options": POD_NS,
                    "seccomp": {"profile_type": "RuntimeDefault" if seccomp == "RuntimeDefault" else "Unconfined"},
                    "masked_paths": MASKED,
                    "readonly_paths": READONLY,
                },
            },
        }

    def start_container(self, spec: dict, annotations: dict | None = None) -> str:
        r = self.cri.call("CreateContainer", {"pod_sandbox_id": self.id, "config": self.container_config(spec, annotations),
                                              "sandbox_config": self.sandbox_config})
        cid = r["container_id"]
        self.containers[spec["name"]] = cid
        self.cri.call("StartContainer", {"container_id": cid})
        return cid

    def status(self, cid: str) -> dict:
        return self.cri.call("ContainerStatus", {"container_id": cid})["status"]

    def wait_exited(self, cid: str, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            st = self.status(cid)
            if st["state"] == "CONTAINER_EXITED":
                return st
            if time.monotonic() > deadline:
                raise AssertionError(f"container {cid} did not exit: {st}")
            time.sleep(0.01)

    def exec_sync(self, cid: str, cmd: list[str], timeout: int = 10) -> tuple[int, str, str]:
        r = self.cri.call("ExecSync", {"container_id": cid, "cmd": cmd, "timeout": timeout}, timeout=timeout + 30)
        import base64
        return (r["exit_code"], base64.b64decode(r["stdout"]).decode(errors="replace"),
                base64.b64decode(r["stderr"]).decode(errors="replace"))

    def log(self, name: str) -> str:
        p = self.log_dir / name / "0.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def teardown(self) -> None:
        """StopContainer/RemoveContainer every container, then
        StopPodSandbox/RemovePodSandbox, as the kubelet does."""
        for cid in self.containers.values():
            self.cri.call("StopContainer", {"container_id": cid, "timeout": 10})
            self.cri.call("RemoveContainer", {"container_id": cid})
        self.containers.clear()
        if self.id:
            self.cri.call("StopPodSandbox", {"pod_sandbox_id": self.id})
            self.cri.call("RemovePodSandbox", {"pod_sandbox_id": self.id})
            self.id = None


def remove_cgroup_tree(rel: str) -> None:
    """What the kubelet does for its pod cgroups: rmdir them (every hierarchy)."""
    for hier in Path("/sys/fs/cgroup").iterdir():
        p = hier / rel.lstrip("/")
        if p.is_dir():
            el.rmdir_cgroup(str(p))


# ---------------------------------------------------------------- the daemon
class CRIContainerd:
    """containerd with the doc's runtime handlers (containerd-1.x.toml), the
    comet handler pointed at `binary` with Root `root`, a private CNI."""

    def __init__(self, workdir: Path, images: el.Images, binary: Path, root: Path):
        self.dir = workdir
        base = el.snippet_toml("containerd-1.x.toml")
        comet = base["plugins"][CRI_PLUGIN]["containerd"]["runtimes"]["comet"]
        assert comet["options"] == {"BinaryName": el.DOC_BINARY, "Root": el.DOC_K8S_ROOT}, comet
        comet["options"] = {"BinaryName": str(binary), "Root": str(root)}
        bindir, confdir = write_cni(workdir)
        extra = {"plugins": {CRI_PLUGIN: {
            "sandbox_image": el.PAUSE_IMAGE,
            "netns_mounts_under_state_dir": True,
            "stream_server_address": "127.0.0.1",
            "cni": {"bin_dir": str(bindir), "conf_dir": str(confdir)},
        }}}
        self.cd = el.Containerd(workdir, extra=extra, base=base)
        self.cd.start()
        for tar in (images.bb_oci, images.pause_oci):
            self.cd.ctr("images", "import", tar, namespace=K8S_NS, check=True, timeout=120)
        self.cri = CRIClient(self.cd.sock)
        self.wait_ready()

    def wait_ready(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                st = self.cri.call("Status", {}, timeout=5)
                conds = {c["type"]: c["status"] for c in st["status"]["conditions"]}
                imgs = [self.cri.call("ImageStatus", {"image": {"image": i}}, timeout=5)["image"]
                        for i in (el.BB_IMAGE, el.PAUSE_IMAGE)]
                if conds.get("RuntimeReady") and conds.get("NetworkReady") and all(i.get("id") for i in imgs):
                    return
                last = (conds, imgs)
            except CRIError as e:
                last = e
            time.sleep(0.1)
        raise RuntimeError(f"CRI not ready in {timeout}s: {last}\n{self.cd.daemon.log_tail()}")

    def remove_everything(self) -> list[str]:
        """Stop and remove every container and sandbox still known; returns
        what was left (a leak to report)."""
        left = []
        for c in self.cri.call("ListContainers", {})["containers"]:
            left.append(f"container {c['id']}")
            self.cri.call("StopContainer", {"container_id": c["id"], "timeout": 0})
            self.cri.call("RemoveContainer", {"container_id": c["id"]})
        for s in self.cri.call("ListPodSandbox", {})["items"]:
            left.append(f"sandbox {s['id']}")
            self.cri.call("StopPodSandbox", {"pod_sandbox_id": s["id"]})
            self.cri.call("RemovePodSandbox", {"pod_sandbox_id": s["id"]})
        return left

    def stop(self) -> list[str]:
        """Stop the daemon; returns the shims that outlived it (killed)."""
        shims = self.cd.shim_pids()
        self.cri.close()
        self.cd.stop()
        alive = [p for p in shims if el.pid_alive(p)]
        return [el.describe(p) for p in alive]
