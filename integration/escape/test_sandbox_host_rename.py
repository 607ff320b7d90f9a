"""Attack: a denied file the host replaces by rename while a sandbox runs.

Denied files are hidden by a mount on their name. Bound on the host's own
dentry, the kernel detaches that mount in every mount namespace when the
host renames a file over the name (Linux 3.18 and later), and the sandbox
then reads the new file for the rest of its run. `useradd` rewrites
/etc/shadow and /etc/gshadow so; a clean-clone CI run read /etc/gshadow
that way while a parallel test created a user. A read-only top-level
directory holding denied paths is now an overlay of its own, whose
dentries the host cannot rename over (docs/sandbox.md "Denied paths and
host renames"). Failed on 65b5bb6: the new file was read."""
from __future__ import annotations

import os
import secrets
import shutil
import threading
import time
from pathlib import Path

import pytest

from lib.sandbox import sandbox_env

pytestmark = pytest.mark.comet_only


@pytest.fixture
def var_dir():
    d = Path("/var/tmp") / f"comet-rename-{secrets.token_hex(4)}"
    d.mkdir(mode=0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def wait_file(p: Path, timeout=30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if p.exists():
            return True
        time.sleep(0.02)
    return False


# strict reads no /var: a custom profile reads the directory itself (an
# overlay at a deeper level than the top).
@pytest.mark.parametrize("profile", ["workspace", "read-only", "strict"])
def test_a_denied_file_renamed_over_on_the_host_stays_hidden(rt, workdir, var_dir, profile):
    secret, pub = var_dir / "secret", var_dir / "pub"
    secret.write_text("old secret\n")
    pub.write_text("old pub\n")
    ws = workdir / "ws"
    ws.mkdir()
    os.chmod(ws, 0o777)
    g = workdir / "global.yaml"
    g.write_text(f"deny: [{secret}]\n"
                 f"profiles:\n  strictx: {{extends: strict, read: [{var_dir}]}}\n")
    gate = ws  # the host's side of the handshake: the workspace is visible in every profile
    script = (f"echo > {ws}/ready 2>/dev/null || echo > /tmp/ready; "
              f"while [ ! -e {gate}/go ]; do sleep 0.02; done; "
              f"echo secret:; cat {secret}; echo rc=$?; echo pub:; cat {pub}; "
              f"echo new:; cat {var_dir}/new")
    env = sandbox_env(g)
    result = {}

    def run():
        result["res"] = rt("sandbox", "--profile", "strictx" if profile == "strict" else profile, "--workspace", str(ws), "--",
                           "sh", "-c", script, env=env, timeout=90)

    t = threading.Thread(target=run)
    t.start()
    try:
        # read-only and strict cannot write the workspace: give the run a
        # moment, then rename anyway (a late rename is the same attack).
        if not wait_file(ws / "ready", 20 if profile == "workspace" else 3):
            time.sleep(1.0)
        # what useradd does to /etc/shadow: a new file renamed over the name
        tmp = var_dir / ".secret.new"
        tmp.write_text("NEW SECRET\n")
        os.rename(tmp, secret)
        (var_dir / "new").write_text("a new file\n")
    finally:
        (gate / "go").write_text("")
        t.join(120)
    res = result["res"]
    assert res.rc in (0, 1), res
    assert "NEW SECRET" not in res.out and "old secret" not in res.out, res.out
    assert "Permission denied" in res.err, res.err
    # the rest of the directory still reads; a file added later appears
    assert "pub:\nold pub\n" in res.out, res.out
    assert "a new file" in res.out, res.out
