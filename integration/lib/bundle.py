"""OCI bundles: a busybox + probe rootfs and a config.json built in Python."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

from .config import BUSYBOX, default_config

_applets: list[str] | None = None


def busybox_applets() -> list[str]:
    global _applets
    if _applets is None:
        out = subprocess.run([str(BUSYBOX), "--list"], check=True, capture_output=True, text=True, timeout=10).stdout
        _applets = [a for a in out.split() if a and a != "busybox"]
    return _applets


PASSWD = """root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
"""
GROUP = """root:x:0:
nobody:x:65534:
"""

ALL_CAP_SETS = ("bounding", "effective", "permitted", "inheritable", "ambient")


def make_rootfs(rootfs: Path, probe: Path) -> None:
    rootfs.mkdir(parents=True)
    for d in ("bin", "etc", "proc", "sys", "dev", "tmp", "root", "mnt"):
        (rootfs / d).mkdir()
    os.chmod(rootfs / "tmp", 0o1777)
    shutil.copy2(BUSYBOX, rootfs / "bin" / "busybox")
    for a in busybox_applets():
        link = rootfs / "bin" / a
        if not link.exists():
            os.symlink("busybox", link)
    shutil.copy2(probe, rootfs / "probe")
    os.chmod(rootfs / "probe", 0o755)
    (rootfs / "etc" / "passwd").write_text(PASSWD)
    (rootfs / "etc" / "group").write_text(GROUP)
    (rootfs / "etc" / "hostname").write_text("container\n")


class Bundle:
    """A bundle directory.  `config` is a plain dict, initially `runc spec`'s
    default with two changes that every non-interactive test wants:
    process.terminal=false and process.args=["/probe","info"].  Mutators
    return self so they chain; write() (called by Runtime.create/run) dumps
    config.json."""

    def __init__(self, path: Path, probe: Path, config: dict | None = None):
        self.path = Path(path)
        self.rootfs = self.path / "rootfs"
        make_rootfs(self.rootfs, probe)
        self.config = config if config is not None else default_config()
        if config is None:
            self.config["process"]["terminal"] = False
            self.config["process"]["args"] = ["/probe", "info"]

    # -- output -----------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    def write(self) -> "Bundle":
        self.config_path.write_text(json.dumps(self.config, indent=2))
        return self

    def write_raw(self, text: str) -> "Bundle":
        """Write config.json verbatim (for malformed-input tests); later
        write() calls are suppressed."""
        self.config_path.write_text(text)
        self.write = lambda: self  # type: ignore[method-assign]
        return self

    # -- process ----------------------------------------------------------
    @property
    def process(self) -> dict:
        return self.config["process"]

    @property
    def linux(self) -> dict:
        return self.config.setdefault("linux", {})

    def args(self, *args: str) -> "Bundle":
        self.process["args"] = [str(a) for a in args]
        return self

    def probe(self, *args: str) -> "Bundle":
        return self.args("/probe", *args)

    def sh(self, script: str) -> "Bundle":
        return self.args("/bin/sh", "-c", script)

    def env(self, *items: str, replace: bool = False) -> "Bundle":
        cur = [] if replace else list(self.process.get("env", []))
        for it in items:
            key = it.split("=", 1)[0]
            cur = [e for e in cur if e.split("=", 1)[0] != key]
            cur.append(it)
        self.process["env"] = cur
        return self

    def cwd(self, path: str) -> "Bundle":
        self.process["cwd"] = path
        return self

    def terminal(self, on: bool = True, size: tuple[int, int] | None = None) -> "Bundle":
        self.process["terminal"] = on
        if size is not None:
            self.process["consoleSize"] = {"height": size[0], "width": size[1]}
        return self

    def user(self, uid: int = 0, gid: int = 0, additional_gids: Iterable[int] | None = None,
             umask: int | None = None) -> "Bundle":
        u: dict = {"uid": uid, "gid": gid}
        if additional_gids is not None:
            u["additionalGids"] = list(additional_gids)
        if umask is not None:
            u["umask"] = umask
        self.process["user"] = u
        return self

    def rlimit(self, rtype: str, soft: int, hard: int) -> "Bundle":
        rl = [r for r in self.process.get("rlimits", []) if r["type"] != rtype]
        rl.append({"type": rtype, "soft": soft, "hard": hard})
        self.process["rlimits"] = rl
        return self

    def caps(self, caps: Iterable[str], sets: Iterable[str] = ("bounding", "effective", "permitted")) -> "Bundle":
        """Set the listed capability sets to `caps`; the other sets are
        removed from the config."""
        caps = list(caps)
        sets = list(sets)
        self.process["capabilities"] = {s: list(caps) for s in sets}
        return self

    def no_new_privileges(self, on: bool = True) -> "Bundle":
        self.process["noNewPrivileges"] = on
        return self

    def oom_score_adj(self, v: int) -> "Bundle":
        self.process["oomScoreAdj"] = v
        return self

    # -- root / hostname ----------------------------------------------------
    def readonly(self, on: bool = True) -> "Bundle":
        self.config["root"]["readonly"] = on
        return self

    def hostname(self, name: str | None) -> "Bundle":
        if name is None:
            self.config.pop("hostname", None)
        else:
            self.config["hostname"] = name
        return self

    def domainname(self, name: str) -> "Bundle":
        self.config["domainname"] = name
        return self

    def annotations(self, **ann: str) -> "Bundle":
        self.config.setdefault("annotations", {}).update(ann)
        return self

    # -- mounts ---------------------------------------------------------------
    def add_mount(self, destination: str, type: str | None = None, source: str | None = None,
                  options: Iterable[str] | None = None) -> "Bundle":
        m: dict = {"destination": destination}
        if type is not None:
            m["type"] = type
        if source is not None:
            m["source"] = str(source)
        if options is not None:
            m["options"] = list(options)
        self.config.setdefault("mounts", []).append(m)
        return self

    def bind(self, source, destination: str, *options: str, recursive: bool = False) -> "Bundle":
        return self.add_mount(destination, "bind", str(source), ["rbind" if recursive else "bind", *options])

    def remove_mount(self, destination: str) -> "Bundle":
        self.config["mounts"] = [m for m in self.config.get("mounts", []) if m["destination"] != destination]
        return self

    def mount_for(self, destination: str) -> dict:
        for m in self.config.get("mounts", []):
            if m["destination"] == destination:
                return m
        raise KeyError(destination)

    def masked_paths(self, paths: list[str]) -> "Bundle":
        self.linux["maskedPaths"] = list(paths)
        return self

    def readonly_paths(self, paths: list[str]) -> "Bundle":
        self.linux["readonlyPaths"] = list(paths)
        return self

    def rootfs_propagation(self, prop: str) -> "Bundle":
        self.linux["rootfsPropagation"] = prop
        return self

    # -- namespaces -------------------------------------------------------------
    def namespaces(self, *types: str) -> "Bundle":
        """Replace the namespace list with new namespaces of these types."""
        self.linux["namespaces"] = [{"type": t} for t in types]
        return self

    def add_namespace(self, ntype: str, path: str | None = None) -> "Bundle":
        ns = [n for n in self.linux.get("namespaces", []) if n["type"] != ntype]
        entry = {"type": ntype}
        if path is not None:
            entry["path"] = str(path)
        ns.append(entry)
        self.linux["namespaces"] = ns
        return self

    def remove_namespace(self, ntype: str) -> "Bundle":
        self.linux["namespaces"] = [n for n in self.linux.get("namespaces", []) if n["type"] != ntype]
        return self

    def userns(self, host_uid: int = 100000, host_gid: int = 100000, size: int = 65536) -> "Bundle":
        """Add a user namespace mapping container 0..size-1 to host_uid..;
        chowns the rootfs so that the mapped root owns it."""
        self.add_namespace("user")
        self.linux["uidMappings"] = [{"containerID": 0, "hostID": host_uid, "size": size}]
        self.linux["gidMappings"] = [{"containerID": 0, "hostID": host_gid, "size": size}]
        for dirpath, dirnames, filenames in os.walk(self.rootfs):
            for n in dirnames + filenames + [""]:
                p = os.path.join(dirpath, n) if n else dirpath
                os.lchown(p, host_uid, host_gid)
        os.chmod(self.path, 0o755)
        return self

    # -- misc linux -------------------------------------------------------------
    def hook(self, kind: str, path: str, args: list[str] | None = None, env: list[str] | None = None,
             timeout: int | None = None) -> "Bundle":
        h: dict = {"path": path}
        if args is not None:
            h["args"] = args
        if env is not None:
            h["env"] = env
        if timeout is not None:
            h["timeout"] = timeout
        self.config.setdefault("hooks", {}).setdefault(kind, []).append(h)
        return self

    def seccomp(self, profile: dict | None) -> "Bundle":
        if profile is None:
            self.linux.pop("seccomp", None)
        else:
            self.linux["seccomp"] = profile
        return self

    def sysctl(self, **kv: str) -> "Bundle":
        self.linux.setdefault("sysctl", {}).update({k.replace("__", "."): v for k, v in kv.items()})
        return self

    def sysctls(self, d: dict) -> "Bundle":
        self.linux.setdefault("sysctl", {}).update(d)
        return self

    def cgroups_path(self, path: str) -> "Bundle":
        self.linux["cgroupsPath"] = path
        return self

    def resources(self, **res) -> "Bundle":
        r = self.linux.setdefault("resources", {})
        for k, v in res.items():
            if isinstance(v, dict) and isinstance(r.get(k), dict):
                r[k].update(v)
            else:
                r[k] = v
        return self

    def add_device(self, path: str, dtype: str, major: int, minor: int, mode: int = 0o666,
                   uid: int = 0, gid: int = 0, allow: bool = True) -> "Bundle":
        self.linux.setdefault("devices", []).append(
            {"path": path, "type": dtype, "major": major, "minor": minor, "fileMode": mode, "uid": uid, "gid": gid})
        if allow:
            self.linux.setdefault("resources", {}).setdefault("devices", []).append(
                {"allow": True, "type": dtype, "major": major, "minor": minor, "access": "rwm"})
        return self
