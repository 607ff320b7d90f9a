"""Playing the engine for a container's exit status (as containerd's shim
and podman's conmon do): a child subreaper runs `create` and `start`, the
container's init is reparented to it when create exits, and it reaps the
init and reports its exit status, with what /proc said about the init once
it had exec'd. Nothing of `run`'s own exit-status logic is involved."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ENGINE = r"""
import ctypes, json, os, signal, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
rt, root, bundle, cid, out, sig = sys.argv[1:7]
extra = json.loads(sys.argv[7])
with open(out, "w") as f:
    subprocess.run([rt, "--root", root, "create", *extra, "--bundle", bundle, cid], check=True,
                   stdin=subprocess.DEVNULL, stdout=f, stderr=f)
st = json.loads(subprocess.run([rt, "--root", root, "state", cid], check=True,
                               capture_output=True, text=True).stdout)
init = st["pid"]
subprocess.run([rt, "--root", root, "start", cid], check=True)
seen = {}
for _ in range(200):  # until the init has exec'd (it waited on the fifo as the runtime)
    try:
        cmd = open(f"/proc/{init}/cmdline", "rb").read().split(b"\0")[0].decode()
        status = open(f"/proc/{init}/status").read()
    except OSError:
        break
    if "\nState:\tZ" in status:  # exited already (a zombie has no cmdline)
        break
    if cmd not in (rt, "", "comet-exec"):
        seen["cmdline"] = cmd
        for key in ("CapEff", "CapPrm", "Seccomp"):
            seen[key] = [l.split()[1] for l in status.splitlines() if l.startswith(key + ":")][0]
        break
    time.sleep(0.01)
if sig != "-":
    time.sleep(0.3)
    subprocess.run([rt, "--root", root, "kill", cid, sig], check=True)
    seen["kill"] = sig
while True:
    pid, status = os.waitpid(-1, 0)
    if pid == init:
        break
seen["status"] = os.waitstatus_to_exitcode(status)
print(json.dumps(seen))
"""


def engine_run(rt, bundle: Path, workdir: Path, sig: str = "-", env: dict | None = None,
               timeout: float = 60, create_args: tuple = ()) -> tuple[dict, list]:
    """create + start BUNDLE under a subreaper; `kill SIG` 0.3 s after start
    unless SIG is "-". Returns (what the engine saw: "status" the init's exit
    status as os.waitstatus_to_exitcode gives it, "cmdline" argv[0] of the
    exec'd init, "CapEff"/"CapPrm"/"Seccomp" from its status; the container's
    events). The container is deleted."""
    cid = rt.new_id("eng")
    out = Path(workdir) / f"{cid}.out"
    try:
        r = subprocess.run([sys.executable, "-c", ENGINE, str(rt.binary), str(rt.root), str(bundle),
                            cid, str(out), sig, json.dumps(list(create_args))], capture_output=True, text=True, timeout=timeout,
                           env=env if env is not None else dict(os.environ))
        assert r.returncode == 0, (r, out.read_text() if out.exists() else "")
        seen = json.loads(r.stdout)
        seen["output"] = out.read_text() if out.exists() else ""
        ev = rt.root / cid / "events.jsonl"
        events = [json.loads(l) for l in ev.read_text().splitlines() if l.strip()] if ev.exists() else []
        return seen, events
    finally:
        rt("delete", "--force", cid)
