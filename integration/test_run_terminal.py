"""`run` of a config with process.terminal and no --console-socket: the
runtime takes the pty and copies it to its own stdio (as runc run does)."""
import subprocess

import pytest

from lib import config as cfg


@pytest.mark.comet_only
def test_run_with_terminal_proxies_the_pty(rt, bundle):
    b = bundle().sh("tty; read x; echo got=$x; exit 4")
    b.process["terminal"] = True
    b.write()
    cid = rt.new_id()
    rt.track(cid)
    p = subprocess.run([str(cfg.RUNTIME), "--root", str(rt.root), "run", "--bundle", str(b.path), cid],
                       input="hello\n", capture_output=True, text=True, timeout=20)
    assert p.returncode == 4, p
    assert "/dev/pts/0" in p.stdout, p.stdout
    assert "got=hello" in p.stdout, p.stdout
    assert not (rt.root / cid).exists(), "run deletes the container"
    assert not list(rt.root.glob(".*console*")), "the console socket is removed"
