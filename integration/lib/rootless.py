"""An ordinary user for the rootless suites (integration/rootless/), made the
way an administrator would: useradd with a home, a subordinate uid/gid range
in /etc/subuid and /etc/subgid (what newuidmap reads), and an
XDG_RUNTIME_DIR of its own. Everything it made is removed at the end, even
when a test failed: its processes (found by uid: only the test ran as this
user), its files, its subordinate ranges and the account.

    with OrdinaryUser() as user:
        res = user.run([binary, "sandbox", "--", "/bin/true"])
"""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

SUBID_COUNT = 65536


def _subid_start() -> int:
    """A subordinate range no other line of /etc/subuid or /etc/subgid uses."""
    used = []
    for path in ("/etc/subuid", "/etc/subgid"):
        try:
            for line in Path(path).read_text().splitlines():
                parts = line.split(":")
                if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    used.append((int(parts[1]), int(parts[1]) + int(parts[2])))
        except FileNotFoundError:
            pass
    start = 300000 + (os.getpid() % 200) * SUBID_COUNT
    while any(a < start + SUBID_COUNT and start < b for a, b in used):
        start += SUBID_COUNT
    return start


class OrdinaryUser:
    def __init__(self, prefix: str = "cmtrl", setuid_helpers: bool = False, subids: bool = True):
        """setuid_helpers: keep the capability bounding set, as a login
        shell has it, so that the setuid newuidmap/newgidmap can work (a
        setuid-root program gains no capability outside the bounding set):
        rootless podman and ID mappings of more than the user's own id need
        them. By default it is emptied: the user can gain nothing."""
        self.name = f"{prefix}{secrets.token_hex(3)}"
        self.setuid_helpers = setuid_helpers
        self.subids = subids  # False: no line in /etc/subuid, /etc/subgid
        self.base = Path(tempfile.mkdtemp(prefix="comet-rootless-", dir="/tmp"))
        os.chmod(self.base, 0o755)
        self.home = self.base / "home"
        self.runtime_dir = self.base / "run"
        self.uid = self.gid = -1
        self.subid = _subid_start()

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> "OrdinaryUser":
        subprocess.run(["useradd", "-M", "-d", str(self.home), "-s", "/bin/sh", "-K", "SUB_UID_COUNT=0",
                        "-K", "SUB_GID_COUNT=0", self.name], check=True, capture_output=True)
        try:
            pw = pwd.getpwnam(self.name)
            self.uid, self.gid = pw.pw_uid, pw.pw_gid
            rng = f"{self.subid}-{self.subid + SUBID_COUNT - 1}"
            if self.subids:
                subprocess.run(["usermod", "--add-subuids", rng, "--add-subgids", rng, self.name],
                               check=True, capture_output=True)
            for d in (self.home, self.runtime_dir):
                d.mkdir(mode=0o700)
                os.chown(d, self.uid, self.gid)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.uid >= 0:
            self.kill_processes()
        # Mounts a run left under the base (there should be none: the user
        # can only mount inside its own mount namespaces, which die with it).
        subprocess.run(["userdel", self.name], capture_output=True)
        for path in ("/etc/subuid", "/etc/subgid"):
            try:
                lines = Path(path).read_text().splitlines(keepends=True)
                kept = [l for l in lines if not l.startswith(self.name + ":")]
                if kept != lines:
                    Path(path).write_text("".join(kept))
            except FileNotFoundError:
                pass
        shutil.rmtree(self.base, ignore_errors=True)

    def pids(self) -> list[int]:
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.stat(f"/proc/{d}").st_uid == self.uid:
                    out.append(int(d))
            except FileNotFoundError:
                pass
        return out

    def kill_processes(self) -> list[int]:
        """Kill every process of this user (they are all the test's) and
        return the ones that were still running."""
        left = self.pids()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        return left

    # -- running as the user -------------------------------------------------
    def env(self, extra: dict | None = None) -> dict:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "LANG": "C.UTF-8",
        }
        env.update(extra or {})
        return env

    def argv(self, argv: list[str]) -> list[str]:
        bounding = [] if self.setuid_helpers else ["--bounding-set=-all"]
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups",
                "--inh-caps=-all", *bounding, "--"] + [str(a) for a in argv]

    def run(self, argv: list[str], *, env: dict | None = None, cwd: str | None = None,
            timeout: float = 60, input: str | bytes | None = None, text: bool = True):
        return subprocess.run(self.argv(argv), env=self.env(env), cwd=cwd or str(self.home),
                              capture_output=True, timeout=timeout, input=input, text=text)

    def popen(self, argv: list[str], *, env: dict | None = None, cwd: str | None = None, **kw):
        return subprocess.Popen(self.argv(argv), env=self.env(env), cwd=cwd or str(self.home), **kw)

    def make_dir(self, rel: str) -> Path:
        """A directory under the user's home, owned by the user."""
        p = self.home / rel
        p.mkdir(parents=True, exist_ok=True)
        for q in [p] + [x for x in p.parents if str(x).startswith(str(self.home) + "/")]:
            os.chown(q, self.uid, self.gid)
        return p
