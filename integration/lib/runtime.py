"""Running the runtime binary under test."""
from __future__ import annotations

import itertools
import fcntl
import json
import os
import re
import sys
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from .config import CALL_TIMEOUT


class RuntimeTimeout(AssertionError):
    pass


@dataclass
class Result:
    """Outcome of one runtime invocation.  Unpacks as (rc, stdout, stderr)."""

    args: list
    rc: int
    out_path: Path
    err_path: Path
    out: str = ""
    err: str = ""

    def __iter__(self):
        return iter((self.rc, self.out, self.err))

    def reread(self) -> "Result":
        """Re-read the captured stdout/stderr files.  For `create`/`run -d` the
        container inherits them, so its later output shows up here."""
        self.out = self.out_path.read_text(errors="replace")
        self.err = self.err_path.read_text(errors="replace")
        return self

    @property
    def error(self) -> str:
        """stderr with logrus text framing removed: for a line like
        `time=".." level=error msg="unknown signal \\"X\\""` this yields
        `unknown signal "X"`; other lines are kept verbatim."""
        out = []
        for line in self.err.splitlines():
            m = re.search(r'msg="((?:[^"\\]|\\.)*)"', line)
            if m:
                try:
                    out.append(json.loads('"' + m.group(1) + '"'))
                except ValueError:
                    out.append(m.group(1))
            else:
                out.append(line)
        return "\n".join(out)

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def json(self):
        return json.loads(self.out)

    def probe(self) -> dict:
        """The JSON object the probe printed (last JSON line of stdout)."""
        for line in reversed(self.out.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError(f"no probe JSON in stdout of {self.args}: {self!r}")

    def __repr__(self) -> str:
        return f"Result(rc={self.rc}, args={self.args}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"

    def expect_ok(self) -> "Result":
        assert self.rc == 0, f"expected success: {self!r}"
        return self

    def expect_fail(self) -> "Result":
        assert self.rc != 0, f"expected failure: {self!r}"
        return self


class Runtime:
    """Runs `BINARY --root ROOT [global args] COMMAND ...` with a timeout on every
    call.  Records every container id handed to create/run so the harness
    can `delete --force` it afterwards."""

    _counter = itertools.count()

    def __init__(self, binary: Path, root: Path, workdir: Path, global_args: Sequence[str] = ()):
        self.binary = Path(binary)
        self.root = Path(root)
        self.workdir = Path(workdir)
        self.global_args = list(global_args)
        self.ids: list[str] = []  # every id this test used, in order
        self.pids: dict[str, int] = {}  # container id -> init pid seen in state
        self.launches: dict[str, Result] = {}  # container id -> its create/run Result
        self._seq = itertools.count()
        self._tag = secrets.token_hex(3)

    # -- ids -----------------------------------------------------------
    def new_id(self, prefix: str = "c") -> str:
        cid = f"cmt-{prefix}-{self._tag}-{next(self._seq)}"
        self.track(cid)
        return cid

    def track(self, cid: str) -> None:
        if cid not in self.ids:
            self.ids.append(cid)

    # -- raw call --------------------------------------------------------
    def __call__(
        self,
        *args: str,
        timeout: float | None = None,
        input: bytes | str | None = None,
        pass_fds: Iterable[int] = (),
        fds: Sequence[int] = (),
        prefix: Sequence[str] = (),
        global_args: Sequence[str] = (),
        root: bool = True,
        env: dict | None = None,
        cwd: str | os.PathLike | None = None,
    ) -> Result:
        args = [str(a) for a in args]
        cmd = [*prefix, str(self.binary)]
        if root:
            cmd += ["--root", str(self.root)]
        cmd += self.global_args + [str(g) for g in global_args] + args
        self._sniff_ids(args)
        high: list[int] = []
        if fds:
            # place fds[i] at 3+i in the runtime process without touching
            # this process's own low fds: dup them high, and let a tiny exec
            # wrapper dup2 them down in the child.
            high = [fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, 200) for f in fds]
            code = ("import os,sys\n"
                    "n=int(sys.argv[1]); hi=[int(x) for x in sys.argv[2:2+n]]\n"
                    "for i,f in enumerate(hi): os.dup2(f, 3+i)\n"
                    "[os.close(f) for f in hi]\n"
                    "os.execv(sys.argv[2+n], sys.argv[2+n:])\n")
            cmd = [sys.executable, "-I", "-S", "-c", code, str(len(high)), *map(str, high), *cmd]
            pass_fds = tuple(pass_fds) + tuple(high)
        n = next(Runtime._counter)
        out_path = self.workdir / f"call{n}.out"
        err_path = self.workdir / f"call{n}.err"
        timeout = CALL_TIMEOUT if timeout is None else timeout
        if isinstance(input, str):
            input = input.encode()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                pass_fds=tuple(pass_fds),
                close_fds=True,
                env=env,
                cwd=cwd,
            )
            try:
                proc.communicate(input=input, timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise RuntimeTimeout(f"{cmd} did not finish within {timeout}s")
            finally:
                for f in high:
                    os.close(f)
        res = Result(args=cmd, rc=proc.returncode, out_path=out_path, err_path=err_path)
        return res.reread()

    def _sniff_ids(self, args: list[str]) -> None:
        # remember ids of create/run so that they are cleaned up even when the
        # test did not get them from new_id()
        if args and args[0] in ("create", "run"):
            positional = [a for a in args[1:] if not a.startswith("-")]
            if positional:
                cand = positional[-1]
                if cand and "/" not in cand and cand not in (".", "..") and len(cand) < 1024:
                    self.track(cand)

    # -- conveniences ---------------------------------------------------
    @staticmethod
    def _bundle_path(bundle) -> str:
        if hasattr(bundle, "write"):
            bundle.write()
            return str(bundle.path)
        return str(bundle)

    def create(self, cid: str, bundle, *extra: str, **kw) -> Result:
        self.track(cid)
        res = self("create", "--bundle", self._bundle_path(bundle), *extra, cid, **kw)
        self.launches[cid] = res
        return res

    def run(self, cid: str, bundle, *extra: str, **kw) -> Result:
        self.track(cid)
        res = self("run", "--bundle", self._bundle_path(bundle), *extra, cid, **kw)
        self.launches[cid] = res
        return res

    def output(self, cid: str) -> str:
        """What the container wrote to stdout so far (it inherited the stdout
        file of its create / run -d call)."""
        return self.launches[cid].reread().out

    def pid(self, cid: str) -> int:
        return self.state(cid)["pid"]

    def start(self, cid: str, **kw) -> Result:
        return self("start", cid, **kw)

    def kill(self, cid: str, *sig: str, **kw) -> Result:
        return self("kill", cid, *sig, **kw)

    def delete(self, cid: str, *extra: str, **kw) -> Result:
        return self("delete", *extra, cid, **kw)

    def state_raw(self, cid: str, **kw) -> Result:
        return self("state", cid, **kw)

    def state(self, cid: str) -> dict:
        res = self("state", cid)
        assert res.rc == 0, f"state {cid} failed: {res!r}"
        st = json.loads(res.out)
        if st.get("pid"):
            self.pids[cid] = st["pid"]
        return st

    def status(self, cid: str) -> str:
        return self.state(cid)["status"]

    def wait_status(self, cid: str, status: str, timeout: float = 5.0) -> str:
        """Poll `state` until status == status; returns the last status seen."""
        import time

        deadline = time.monotonic() + timeout
        last = None
        while True:
            res = self("state", cid)
            if res.rc == 0:
                st = json.loads(res.out)
                if st.get("pid"):
                    self.pids[cid] = st["pid"]
                last = st["status"]
                if last == status:
                    return last
            if time.monotonic() >= deadline:
                return last
            time.sleep(0.02)

    def wait_probe_ready(self, cid: str, timeout: float = 5.0) -> None:
        """Wait until the container init catches or ignores SIGTERM (the
        probe's sleep / signal-ignore have installed their dispositions).
        Until then a pid-namespace init silently drops TERM."""
        import time

        pid = self.pid(cid)
        term_bit = 1 << (15 - 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                return  # gone
            if (int(fields["SigCgt"], 16) | int(fields["SigIgn"], 16)) & term_bit:
                return
            time.sleep(0.01)
        raise AssertionError(f"container {cid} (pid {pid}) never set up its signal handlers")

    def start_detached(self, bundle, cid: str | None = None) -> str:
        """create + start; returns the id of the running container.  For
        `/probe sleep|signal-ignore` it also waits for the probe's signal
        dispositions, so that a following `kill` is not lost."""
        cid = cid or self.new_id()
        self.create(cid, bundle).expect_ok()
        self.start(cid).expect_ok()
        args = bundle.process.get("args", []) if hasattr(bundle, "process") else []
        if args[:1] == ["/probe"] and args[1:2] in (["sleep"], ["signal-ignore"]):
            self.wait_probe_ready(cid)
        return cid

    def run_probe(self, bundle, *probe_args: str, extra: Sequence[str] = (), **kw) -> Result:
        """Set args to `/probe ARGS...`, `run` the container in the foreground."""
        bundle.probe(*probe_args)
        cid = self.new_id()
        return self.run(cid, bundle, *extra, **kw)
