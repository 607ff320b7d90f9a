"""Shared machinery of the engine suites: packages, the argv-logging wrapper,
doc snippets, daemons, images and the leak check (see docs/engines.md)."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from lib import config as cfg
from lib.harness import mounts_under, pid_alive, wait_for

ENGINES_DIR = Path(__file__).resolve().parent
REPO_DIR = ENGINES_DIR.parent.parent
DOC = REPO_DIR / "docs" / "engines.md"
RUNTIME = cfg.RUNTIME
IS_RUNC = cfg.IS_RUNC

#: placeholders used in the doc snippets, replaced by the tests
DOC_BINARY = "/usr/local/bin/comet-runtime"
DOC_K8S_ROOT = "/run/comet-runtime-k8s"
DOC_POD_IMAGE = "registry.example/busybox:1.36"

BB_IMAGE = "localhost/comet-bb:test"

#: what comet-runtime keeps in a state root on purpose (docs/events.md)
KEPT_STORES = {".events@", ".flags@"}

#: prefix for containers that would exit at once: keeps them clear of
#: comet-runtime's start race (test_podman.py START_RACE_BUG), which only
#: test_start_of_a_container_that_exits_at_once is about
SETTLE = "sleep 0.2; "
#: the same for a shell under the exec lock (capabilities by annotation),
#: which cannot fork `sleep`: a builtin read that times out on a fresh pty
#: master (no data ever comes)
SETTLE_NOFORK = "read -t 0.2 _ < /dev/ptmx; "
PAUSE_IMAGE = "localhost/comet-pause:test"


# ---------------------------------------------------------------- packages
def _installed(pkg: str) -> bool:
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return p.returncode == 0 and p.stdout.strip() == "install ok installed"


def ensure_packages(*pkgs: str) -> None:
    """apt-get install the Debian packages that are not installed yet."""
    missing = [p for p in pkgs if not _installed(p)]
    if not missing:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", *missing]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:  # stale package lists: refresh once
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"apt-get install {' '.join(missing)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")


# ---------------------------------------------------------------- snippets
_SNIPPET_RE = re.compile(r"<!-- snippet: (\S+) -->\s*\n```[a-z]*\n(.*?)\n```", re.S)


def snippets() -> dict[str, str]:
    return {m.group(1): m.group(2) + "\n" for m in _SNIPPET_RE.finditer(DOC.read_text())}


def snippet(name: str) -> str:
    s = snippets()
    if name not in s:
        raise KeyError(f"no snippet {name!r} in {DOC} (have {sorted(s)})")
    return s[name]


def doc_pack_dir(base: Path | None = None) -> Path:
    """The doc's example pack (snippet engines-example/soyapack.yaml) as a
    directory, with the entrypoint its manifest names."""
    import tempfile
    d = Path(base or tempfile.mkdtemp(prefix="comet-doc-pack-")) / "engines-example"
    d.mkdir(parents=True, exist_ok=True)
    (d / "soyapack.yaml").write_text(snippet("engines-example/soyapack.yaml"))
    (d / "agent.sh").write_text("echo hello from the example pack\n")
    return d


def comet(*args, **kw) -> subprocess.CompletedProcess:
    """The runtime under test (COMET_RUNTIME), as a user would call it."""
    return subprocess.run([str(RUNTIME), *[str(a) for a in args]], capture_output=True, text=True,
                          timeout=kw.pop("timeout", 30), **kw)


def snippet_toml(name: str) -> dict:
    return tomllib.loads(snippet(name))


def merge(base: dict, extra: dict) -> dict:
    """Deep-merge `extra` into a copy of `base` (extra wins on scalars)."""
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")


def to_toml(d: dict, prefix: tuple[str, ...] = ()) -> str:
    """A small TOML writer for nested tables of scalars and scalar lists."""
    lines = []
    if prefix:
        lines.append("[" + ".".join(_toml_key(p) for p in prefix) + "]")
    for k, v in d.items():
        if not isinstance(v, dict):
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    text = "\n".join(lines) + "\n"
    for k, v in d.items():
        if isinstance(v, dict):
            text += "\n" + to_toml(v, prefix + (k,))
    return text


# ---------------------------------------------------------------- wrapper
_WRAPPER = r"""#!/bin/sh
# Written by integration/engines (docs/engines.md "The test wrapper"): log argv,
# keep the bundle's config.json, run the runtime under test, log its status.
log={log}
# pack versions a test flags stay in the suite's directory (docs/events.md "Flags")
export COMET_FLAGS_DIR={dir}/flags
line="$$	call"
for a in "$@"; do line="$line	$a"; done
printf '%s\n' "$line" >> "$log"
verb="" skip=""
for a in "$@"; do
  if [ -n "$skip" ]; then skip=""; continue; fi
  case "$a" in
    --root|--log|--log-format|--criu|--rootless) skip=1 ;;
    -*) ;;
    *) verb=$a; break ;;
  esac
done
bundle="" process="" prev="" last=""
for a in "$@"; do
  case "$prev" in --bundle|-b) bundle=$a ;; --process|-p) process=$a ;; esac
  case "$a" in --bundle=*) bundle=${{a#--bundle=}} ;; --process=*) process=${{a#--process=}} ;; esac
  prev=$a last=$a
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  cp "$bundle/config.json" {configs}/"$last".json
fi
if [ -n "$process" ] && [ -f "$process" ]; then
  cp "$process" {configs}/"$last".exec-$$.json
fi
# test hook (test_podman.py's start race): `start` at idle priority on CPU 0
prefix=""
if [ "$verb" = start ] && [ -e {dir}/slow-start ]; then prefix="taskset -c 0 chrt --idle 0"; fi
$prefix {real} {root_args}"$@"
rc=$?
printf '%s\trc\t%s\n' "$$" "$rc" >> "$log"
exit $rc
"""

GLOBAL_WITH_VALUE = {"--root", "--log", "--log-format", "--criu", "--rootless"}


@dataclass
class Call:
    pid: str
    argv: list[str]
    rc: int | None = None

    @property
    def _split(self) -> tuple[list[str], str, list[str]]:
        i = 0
        glob: list[str] = []
        while i < len(self.argv):
            a = self.argv[i]
            if a.startswith("-"):
                glob.append(a)
                if a in GLOBAL_WITH_VALUE and i + 1 < len(self.argv):
                    glob.append(self.argv[i + 1])
                    i += 1
                i += 1
                continue
            return glob, a, self.argv[i + 1:]
        return glob, "", []

    @property
    def verb(self) -> str:
        return self._split[1]

    @property
    def globals(self) -> list[str]:
        return self._split[0]

    @property
    def args(self) -> list[str]:
        return self._split[2]

    def global_value(self, name: str) -> str | None:
        g = self.globals
        for i, a in enumerate(g):
            if a == name and i + 1 < len(g):
                return g[i + 1]
            if a.startswith(name + "="):
                return a.split("=", 1)[1]
        return None

    @property
    def cid(self) -> str | None:
        """The container id: the first positional argument of kill, the last
        of every other verb."""
        pos = [a for a in self.args if not a.startswith("-")]
        if self.verb in ("kill",):
            # kill [--all] ID [SIGNAL]
            return pos[0] if pos else None
        # options with values (create --bundle X --pid-file Y ID): the id is last
        return self.args[-1] if self.args and not self.args[-1].startswith("-") else None

    def __str__(self) -> str:
        return " ".join(shlex.quote(a) for a in self.argv) + ("" if self.rc is None else f"  -> {self.rc}")


def snapshot_binary(src: Path, dst: Path, timeout: float = 120) -> None:
    """Copy an executable that may be being rebuilt: retry until the copy
    runs `--version`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.access(src, os.X_OK):
                shutil.copy2(src, dst)
                if subprocess.run([str(dst), "--version"], capture_output=True, timeout=20).returncode == 0:
                    return
        except (OSError, subprocess.SubprocessError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{src} did not become a runnable binary within {timeout}s")
        time.sleep(1)


class Wrapper:
    """TMP/bin/comet-runtime: logs every call, then runs (a copy taken now of)
    the runtime under test."""

    def __init__(self, workdir: Path, root: Path | None = None, real: Path = RUNTIME, name: str = "comet-runtime"):
        self.dir = Path(workdir)
        self.bin = self.dir / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.path = self.bin / name
        self.log = self.dir / "calls.log"
        self.configs = self.dir / "configs"
        self.configs.mkdir(exist_ok=True)
        self.root = Path(root) if root else None
        # a private copy of the runtime under test, so that a rebuild during
        # the suite cannot swap the binary (or make it briefly unreadable)
        # between two calls of one container's life
        snap = self.dir / "runtime"
        snap.mkdir(exist_ok=True)
        self.real = snap / Path(real).name
        snapshot_binary(Path(real), self.real)
        root_args = f"--root {shlex.quote(str(root))} " if root else ""
        self.slow_start = self.dir / "slow-start"
        self.path.write_text(_WRAPPER.format(log=shlex.quote(str(self.log)), configs=shlex.quote(str(self.configs)),
                                             dir=shlex.quote(str(self.dir)),
                                             real=shlex.quote(str(self.real)), root_args=root_args))
        self.path.chmod(0o755)
        self.log.touch()

    def calls(self) -> list[Call]:
        calls: list[Call] = []
        open_by_pid: dict[str, Call] = {}
        for line in self.log.read_text(errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[1] == "call":
                c = Call(parts[0], parts[2:])
                calls.append(c)
                open_by_pid[parts[0]] = c
            elif len(parts) == 3 and parts[1] == "rc" and parts[0] in open_by_pid:
                open_by_pid.pop(parts[0]).rc = int(parts[2])
        return calls

    def calls_for(self, cid: str) -> list[Call]:
        return [c for c in self.calls() if c.cid == cid]

    def verbs_for(self, cid: str) -> list[str]:
        return [c.verb for c in self.calls_for(cid)]

    def config_of(self, cid: str) -> dict:
        return json.loads((self.configs / f"{cid}.json").read_text())

    def exec_processes(self, cid: str) -> list[dict]:
        """The --process files of the exec calls for cid, in call order."""
        out = []
        for c in self.calls_for(cid):
            f = self.configs / f"{cid}.exec-{c.pid}.json"
            if c.verb == "exec" and f.exists():
                out.append(json.loads(f.read_text()))
        return out

    def ids(self) -> set[str]:
        return {c.cid for c in self.calls() if c.verb == "create" and c.cid}

    def failures(self) -> list[Call]:
        return [c for c in self.calls() if c.rc not in (0, None)]

    def dump(self, last: int = 40) -> str:
        return "\n".join(str(c) for c in self.calls()[-last:])


def json_log_errors(path: Path) -> list[str]:
    """The msg of every "level":"error" line of a --log-format json log."""
    out = []
    try:
        for line in Path(path).read_text(errors="replace").splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("level") == "error":
                out.append(j.get("msg", ""))
    except FileNotFoundError:
        pass
    return out


# ---------------------------------------------------------------- processes
def run(cmd, timeout: float = 60, check: bool = False, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    try:
        p = subprocess.run([str(c) for c in cmd], timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"timed out after {timeout}s: {shlex.join(map(str, cmd))}\n{e.stdout}\n{e.stderr}")
    if check and p.returncode != 0:
        raise AssertionError(f"failed ({p.returncode}): {shlex.join(map(str, cmd))}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def run_in_pty(cmd, timeout: float = 30, env=None) -> tuple[int, str]:
    """Run cmd with a pseudo-terminal as its stdin/stdout/stderr (for -t);
    returns (exit status, everything it printed)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([str(c) for c in cmd], stdin=slave, stdout=slave, stderr=slave,
                                start_new_session=True, env=env)
    finally:
        os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                proc.wait()
                raise AssertionError(f"timed out in a pty: {cmd}; output so far: {out!r}")
            r, _, _ = select.select([master], [], [], min(left, 0.2))
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the slave side is closed
                    chunk = b""
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                # drain what is left without blocking
                while select.select([master], [], [], 0.05)[0]:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        break
                    out += chunk
                break
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
    return rc, out.decode(errors="replace")


class Daemon:
    """A daemon started by a suite: stopped by its pid (TERM, then KILL)."""

    def __init__(self, argv, log: Path, env=None):
        self.argv = [str(a) for a in argv]
        self.log_path = Path(log)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 10) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except FileNotFoundError:
            return ""


# ---------------------------------------------------------------- cleanup
class Cleanup:
    """LIFO cleanup callbacks; every one runs, errors are collected."""

    def __init__(self):
        self._fns: list[tuple[str, Callable[[], None]]] = []
        self.errors: list[str] = []

    def add(self, what: str, fn: Callable[[], None]) -> None:
        self._fns.append((what, fn))

    def run(self) -> list[str]:
        while self._fns:
            what, fn = self._fns.pop()
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"cleanup {what}: {e!r}")
        return self.errors


def umount_all_under(path: Path) -> None:
    for mp in sorted(mounts_under(path), key=len, reverse=True):
        p = subprocess.run(["umount", mp], capture_output=True, timeout=20)
        if p.returncode != 0:
            subprocess.run(["umount", "-l", mp], capture_output=True, timeout=20)


def remove_tree(path: Path) -> None:
    """rm -rf, but never through a live mount."""
    path = Path(path)
    if not path.exists():
        return
    umount_all_under(path)
    if mounts_under(path):
        raise RuntimeError(f"mounts still under {path}: {mounts_under(path)}")
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------- leak check
#: the engines' global directories: no new entries may be left in them
WATCHED = ["/run/containerd", "/run/containers", "/run/libpod", "/run/netns", "/var/run/netns", "/run/comet-runtime",
           "/run/runc", "/run/crun", "/var/lib/cni", "/etc/cni", "/etc/containers", "/var/lib/containers",
           "/var/lib/containerd", "/opt/containerd", "/var/tmp", "/run/cni"]

#: created by podman / containerd / CNI for themselves whatever the runtime;
#: removed by the suite when the suite created them
ENGINE_OWN = [re.compile(p) for p in (
    r"/etc/cni/net\.d/cni\.lock",
    r"/etc/containers/networks/netavark\.lock",
    r"/var/lib/containers/cache/blob-info-cache-v1\.boltdb",
    r"/var/lib/cni/results",  # dir; must be empty (results are removed at CNI DEL)
    # comet-runtime's own per-boot state, not a container's: the fs events
    # lock and the built-in seccomp filter cache (new only when no suite
    # before this one ran a confined container)
    r"/run/comet-runtime/fswatch\.lock",
    r"/run/comet-runtime/cache/seccomp/[0-9a-f]{64}",
)]


def _listing(paths: Iterable[str], max_depth: int = 6) -> set[str]:
    out: set[str] = set()
    for top in paths:
        top_p = Path(top)
        if not top_p.exists():
            continue
        out.add(str(top_p))
        base = len(top_p.parts)
        for dirpath, dirnames, filenames in os.walk(top_p):
            if len(Path(dirpath).parts) - base >= max_depth:
                dirnames[:] = []
            for n in dirnames + filenames:
                out.add(os.path.join(dirpath, n))
    return out


def _nsfs_mounts() -> set[str]:
    res = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            if parts[sep + 1] == "nsfs":
                res.add(parts[4])
    return res


def _ancestors() -> set[int]:
    pids = set()
    pid = os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def processes_referring_to(prefix: Path, ids: Iterable[str] = ()) -> list[int]:
    """Live processes whose cwd/root/exe is under prefix, whose command line
    names it, or whose cgroup path contains one of the container ids."""
    prefix_s = str(prefix).rstrip("/") + "/"
    ids = [i for i in ids if i]
    skip = _ancestors()
    hits = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in skip:
            continue
        pid = int(d)
        hit = False
        for what in ("cwd", "root", "exe"):
            try:
                t = os.readlink(f"/proc/{pid}/{what}")
            except OSError:
                continue
            if (t + "/").startswith(prefix_s):
                hit = True
        if not hit:
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
                hit = prefix_s[:-1] in cmd
            except OSError:
                pass
        if not hit and ids:
            try:
                cg = open(f"/proc/{pid}/cgroup").read()
                hit = any(i in cg for i in ids)
            except OSError:
                pass
        if hit and pid_alive(pid):
            hits.append(pid)
    return hits


def describe(pid: int) -> str:
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"{pid}: {cmd[:300]}"


def cgroups_matching(ids: Iterable[str], extra_paths: Iterable[str] = (), max_depth: int = 6) -> list[str]:
    """cgroup directories (every hierarchy) whose name contains a container
    id, plus any existing directory at the given cgroup paths."""
    ids = [i for i in ids if i]
    found = []
    root = Path("/sys/fs/cgroup")
    for hier in root.iterdir():
        if not hier.is_dir():
            continue
        base = len(hier.parts)
        for dirpath, dirnames, _ in os.walk(hier):
            if len(Path(dirpath).parts) - base >= max_depth:
                dirnames[:] = []
            for n in dirnames:
                if any(i in n for i in ids):
                    found.append(os.path.join(dirpath, n))
        for p in extra_paths:
            q = hier / p.lstrip("/")
            if q.is_dir():
                found.append(str(q))
    return sorted(set(found))


def rmdir_cgroup(path: str) -> None:
    for dirpath, _, _ in sorted(os.walk(path), key=lambda t: len(t[0]), reverse=True):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


class LeakWatch:
    """Snapshot of the host taken when a suite starts; `problems()` after the
    suite's teardown lists what it left behind."""

    def __init__(self, workdir: Path, watched: Iterable[str] = tuple(WATCHED)):
        self.workdir = Path(workdir)
        self.watched = list(watched)
        self.files_before = _listing(self.watched)
        self.nsfs_before = _nsfs_mounts()
        # cgroup parents the engines create and never remove (podman's
        # libpod_parent, ctr's per-namespace /default): removed when empty
        # and created during the suite
        self.engine_cgroup_parents = ["libpod_parent", "default"]
        self.cgroup_parents_before = {str(p) for n in self.engine_cgroup_parents
                                      for p in Path("/sys/fs/cgroup").glob(f"*/{n}")}
        self.ids: set[str] = set()  # container ids the suite used
        self.cgroup_paths: set[str] = set()  # cgroup parents the suite used
        self.engine_dirs: list[str] = []  # extra directories the suite's engine must leave empty

    def new_files(self) -> list[str]:
        return sorted(_listing(self.watched) - self.files_before)

    def remove_engine_own(self) -> None:
        """Remove what podman/containerd/CNI created for themselves in the
        global directories (lock files, caches, empty directories), when the
        suite created them."""
        new = self.new_files()
        for p in new:
            if any(r.fullmatch(p) for r in ENGINE_OWN) and os.path.isfile(p):
                os.unlink(p)
        for p in sorted(self.new_files(), key=len, reverse=True):
            if os.path.isdir(p) and not os.path.islink(p):
                try:
                    os.rmdir(p)  # only empty directories
                except OSError:
                    pass
        for n in self.engine_cgroup_parents:
            for p in Path("/sys/fs/cgroup").glob(f"*/{n}"):
                if str(p) not in self.cgroup_parents_before:
                    rmdir_cgroup(str(p))

    def wait_for_fswatch_detacher(self, timeout: float = 20) -> None:
        """The runtime's fs-event detacher (comet-fswatch-linger) waits 10 s
        after the last pack container before it detaches its BPF program and
        exits, removing its files in /run/comet-runtime. Give one the suite
        started that long; one still there after it is reported below."""
        def started_here() -> list[str]:
            return [p for p in self.new_files()
                    if re.fullmatch(r"/run/comet-runtime/fswatch-[0-9a-f]+\.(linger|idle)", p)]
        wait_for(lambda: not started_here(), timeout)

    def problems(self) -> list[str]:
        self.wait_for_fswatch_detacher()
        probs = []
        m = mounts_under(self.workdir)
        if m:
            probs.append(f"mounts left under {self.workdir}: {m}")
        ns = sorted(_nsfs_mounts() - self.nsfs_before)
        if ns:
            probs.append(f"network/namespace mounts left: {ns}")
        procs = processes_referring_to(self.workdir, self.ids)
        if procs:
            probs.append("processes left: " + "; ".join(describe(p) for p in procs))
        cgs = cgroups_matching(self.ids, self.cgroup_paths)
        if cgs:
            probs.append(f"cgroups left: {cgs}")
        for d in self.engine_dirs:
            # the runtime's own stores, meant to outlive containers: the kept
            # events and the flags of a --root (docs/events.md)
            left = sorted(set(os.listdir(d)) - KEPT_STORES) if os.path.isdir(d) else []
            if left:
                probs.append(f"state left in {d}: {left}")
        new = self.new_files()
        if new:
            probs.append(f"new files in the engines' global directories: {new}")
        return probs

    def force_clean(self) -> None:
        """After problems() was reported: kill what the suite left (only
        processes referring to its own directory / container ids), remove its
        cgroups and mounts."""
        for p in processes_referring_to(self.workdir, self.ids):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not processes_referring_to(self.workdir, self.ids), 5)
        umount_all_under(self.workdir)
        for cg in cgroups_matching(self.ids, self.cgroup_paths):
            rmdir_cgroup(cg)


def keep_logs(suite: str, workdir: Path) -> None:
    """COMET_ENGINES_LOGS=DIR: keep the suite's wrapper log, the bundles'
    config.json copies and the daemon's log under DIR/<suite>/."""
    dest = os.environ.get("COMET_ENGINES_LOGS")
    if not dest:
        return
    out = Path(dest) / suite
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in ("calls.log", "containerd.log", "configs"):
        src = Path(workdir) / name
        if src.is_dir():
            shutil.copytree(src, out / name)
        elif src.exists():
            shutil.copy2(src, out / name)


def report_leftovers(suite: str, problems: list[str]) -> None:
    """From a module fixture's finalizer (the suite's last test asserts the
    same list; this covers runs where that test did not run)."""
    if problems:
        warnings.warn(f"{suite} suite left things behind (removed now): " + "; ".join(problems))


# ---------------------------------------------------------------- images
@dataclass
class Images:
    dir: Path
    rootfs_tar: Path  # busybox + probe rootfs, for `podman import`
    bb_oci: Path  # oci-archive of BB_IMAGE
    pause_oci: Path  # oci-archive of PAUSE_IMAGE
    names: dict = field(default_factory=lambda: {"bb": BB_IMAGE, "pause": PAUSE_IMAGE})


def podman_base_conf(workdir: Path) -> str:
    """A containers.conf for podman calls that run no container (image import
    / save): cgroupfs, file events, a private network config dir."""
    return to_toml({"engine": {"cgroup_manager": "cgroupfs", "events_logger": "file"},
                    "network": {"network_config_dir": str(workdir / "networks")}})


def podman_argv(workdir: Path) -> list[str]:
    return ["podman", "--root", str(workdir / "storage"), "--runroot", str(workdir / "run"),
            "--tmpdir", str(workdir / "tmp"), "--storage-driver", "overlay"]


def build_images(workdir: Path, probe: Path) -> Images:
    """Busybox (+ probe) and pause images, with no registry: a rootfs tar,
    `podman import` into a throwaway store, `podman save --format oci-archive`."""
    from lib.bundle import make_rootfs

    workdir = Path(workdir)
    rootfs = workdir / "rootfs"
    make_rootfs(rootfs, probe)
    rootfs_tar = workdir / "rootfs.tar"
    run(["tar", "-C", rootfs, "-cf", rootfs_tar, "."], check=True)
    shutil.rmtree(rootfs)

    prootfs = workdir / "pause-rootfs"
    prootfs.mkdir()
    run([os.environ.get("CC", "cc"), "-static", "-O2", "-o", prootfs / "pause", ENGINES_DIR / "pause" / "pause.c"],
        check=True, timeout=120)
    pause_tar = workdir / "pause-rootfs.tar"
    run(["tar", "-C", prootfs, "-cf", pause_tar, "."], check=True)
    shutil.rmtree(prootfs)

    store = workdir / "podman"
    store.mkdir()
    (store / "containers.conf").write_text(podman_base_conf(store))
    env = dict(os.environ, CONTAINERS_CONF=str(store / "containers.conf"))
    p = podman_argv(store)
    try:
        run(p + ["import", "--change", 'CMD ["/bin/sh"]', rootfs_tar, BB_IMAGE], check=True, env=env, timeout=120)
        run(p + ["import", "--change", 'ENTRYPOINT ["/pause"]', pause_tar, PAUSE_IMAGE], check=True, env=env,
            timeout=120)
        bb_oci, pause_oci = workdir / "bb-oci.tar", workdir / "pause-oci.tar"
        run(p + ["save", "--format", "oci-archive", "-o", bb_oci, BB_IMAGE], check=True, env=env, timeout=120)
        run(p + ["save", "--format", "oci-archive", "-o", pause_oci, PAUSE_IMAGE], check=True, env=env, timeout=120)
    finally:
        remove_tree(store)
    return Images(workdir, rootfs_tar, bb_oci, pause_oci)


def mkworkdir(prefix: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(d, 0o755)
    return d


# ---------------------------------------------------------------- containerd
class Containerd:
    """containerd started by hand with a private config under `workdir`."""

    def __init__(self, workdir: Path, extra: dict | None = None, base: dict | None = None):
        self.dir = Path(workdir)
        self.sock = self.dir / "containerd.sock"
        private = {
            "root": str(self.dir / "root"),
            "state": str(self.dir / "state"),
            "grpc": {"address": str(self.sock)},
            "ttrpc": {"address": str(self.dir / "containerd-ttrpc.sock")},
            "plugins": {"io.containerd.internal.v1.opt": {"path": str(self.dir / "opt")}},
        }
        conf = merge(base or {"version": 2}, private)
        conf = merge(conf, extra or {})
        # top-level "version" first for readability
        conf = {"version": conf.pop("version", 2), **conf}
        self.config_text = to_toml(conf)
        self.config_path = self.dir / "config.toml"
        self.config_path.write_text(self.config_text)
        self.daemon: Daemon | None = None

    def start(self, timeout: float = 20) -> None:
        self.daemon = Daemon(["containerd", "--config", self.config_path], self.dir / "containerd.log")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.daemon.alive():
                raise RuntimeError(f"containerd exited: {self.daemon.log_tail()}")
            if self.sock.exists() and run(["ctr", "--address", self.sock, "version"], timeout=10).returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError(f"containerd not ready in {timeout}s: {self.daemon.log_tail()}")

    def ctr(self, *args, namespace: str = "default", timeout: float = 60, check: bool = False, **kw):
        return run(["ctr", "--address", self.sock, "--namespace", namespace, *args], timeout=timeout, check=check,
                   **kw)

    def stop(self) -> None:
        if self.daemon:
            self.daemon.stop()

    def shim_pids(self) -> list[int]:
        """containerd-shim processes serving this daemon (their argv names our socket)."""
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if cmd and b"containerd-shim" in cmd[0] and str(self.sock).encode() in cmd:
                pids.append(int(d))
        return pids
