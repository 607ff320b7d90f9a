"""Attack: replace a symlink on the way to a protected path (red team rounds
8 and 9, docs/sandbox.md "Protected paths"). The sandbox protected where a
link led when it started, but the link itself, in the writable workspace,
could be removed and made again to lead somewhere the workload wrote: the
host's git then ran that file (a symlinked parent of core.fsmonitor), or
the host's agent read that config (a hop in a chain of links, a dangling
link whose target directory did not exist yet).

Each test checks what the host sees after the run, not only what the
sandbox answered."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.sandbox import git, make_repo, sandbox_runner

pytestmark = pytest.mark.comet_only


@pytest.fixture
def sbx(rt, workdir):
    return sandbox_runner(rt, workdir)


def test_a_symlinked_parent_of_a_configured_program_cannot_be_replaced(sbx, workdir):
    ws = make_repo(workdir)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "fsmon.sh").write_text("#!/bin/sh\nexit 1\n")
    os.chmod(ws / "scripts" / "fsmon.sh", 0o755)
    os.symlink("scripts", ws / "tools")
    git(ws, "config", "core.fsmonitor", "tools/fsmon.sh")
    res, _ = sbx(ws, "echo x >> tools/fsmon.sh; echo append=$?; "
                     "rm tools; echo rm=$?; mkdir -p evil && printf '#!/bin/sh\\ntouch PWNED\\n' "
                     "> evil/fsmon.sh && chmod +x evil/fsmon.sh; ln -sfn evil tools; echo ln=$?; "
                     "mv -T evil tools 2>/dev/null; echo mv=$?")
    assert res.rc == 0, res.err
    assert "append=0" not in res.out, res.out
    assert "rm=0" not in res.out and "mv=0" not in res.out, res.out
    assert os.readlink(ws / "tools") == "scripts"
    assert (ws / "scripts" / "fsmon.sh").read_text() == "#!/bin/sh\nexit 1\n"


def test_a_hop_in_a_chain_of_links_from_a_protected_dir_cannot_be_replaced(sbx, workdir):
    ws = make_repo(workdir)
    (ws / ".claude").mkdir()
    (ws / "cfgd").mkdir()
    (ws / "cfgd" / "real.json").write_text("{}\n")
    os.symlink("cfgd/real.json", ws / "hop")
    os.symlink("../hop", ws / ".claude" / "settings.local.json")
    res, _ = sbx(ws, "echo '{\"evil\":1}' > evil.json; ln -sfn evil.json hop; echo ln=$?; "
                     "rm -f hop; echo rm=$?; echo '{\"evil\":2}' > cfgd/real.json; echo w=$?")
    assert res.rc == 0, res.err
    assert "ln=0" not in res.out and "rm=0" not in res.out and "w=0" not in res.out, res.out
    assert os.readlink(ws / "hop") == "cfgd/real.json"
    assert (ws / ".claude" / "settings.local.json").read_text() == "{}\n"


def test_a_dangling_link_under_a_missing_directory_cannot_be_given_a_target(sbx, workdir):
    ws = make_repo(workdir)
    (ws / ".claude").mkdir()
    os.symlink("../nodir/sub/settings.json", ws / ".claude" / "settings.json")
    res, _ = sbx(ws, "mkdir -p nodir/sub; echo mkdir=$?; "
                     "echo '{\"hooks\":\"evil\"}' > nodir/sub/settings.json; echo w=$?")
    assert res.rc == 0, res.err
    assert "w=0" not in res.out, res.out
    # What the host's agent would read: nothing the sandbox wrote.
    try:
        text = (ws / ".claude" / "settings.json").read_text()
    except OSError:
        text = ""
    assert "evil" not in text
    # The placeholder is gone after the run: the tree is as it was.
    assert not (ws / "nodir").exists()


def test_ordinary_symlinks_in_the_workspace_stay_replaceable(sbx, workdir):
    # The control: only links on the way to a protected path are pinned.
    ws = make_repo(workdir)
    (ws / "d1").mkdir()
    (ws / "d2").mkdir()
    os.symlink("d1", ws / "cur")
    res, _ = sbx(ws, "ln -sfn d2 cur && echo swapped")
    assert "swapped" in res.out, res.out + res.err
    assert os.readlink(ws / "cur") == "d2"


def test_a_relative_xdg_config_home_is_protected_in_the_workspace(sbx, workdir):
    # git reads $XDG_CONFIG_HOME/git/config from its working directory when
    # the variable is relative: the host's git in the workspace would obey
    # a cfg/git/config the command wrote (red team round 9).
    ws = make_repo(workdir)
    res, _ = sbx(ws, "mkdir -p cfg/git; printf '[core]\\n\\tfsmonitor = touch PWNED\\n' "
                     "> cfg/git/config; echo w=$?", extra_env={"XDG_CONFIG_HOME": "cfg"})
    assert res.rc == 0, res.err
    assert "w=0" not in res.out, res.out
    assert not (ws / "cfg" / "git" / "config").exists()


def test_a_modules_legacy_remote_files_are_protected(sbx, workdir):
    # .git/modules/NAME/remotes/R and branches/R (legacy remotes git still
    # obeys): a fetch or push of the module redirected (red team round 9).
    ws = make_repo(workdir)
    mod = ws / ".git" / "modules" / "lib"
    mod.mkdir(parents=True)
    (mod / "config").write_text("[core]\n\tbare = false\n")
    res, _ = sbx(ws, "mkdir -p .git/modules/lib/remotes .git/modules/lib/branches; "
                     "echo 'URL: /tmp/evil' > .git/modules/lib/remotes/origin; echo r=$?; "
                     "echo '/tmp/evil' > .git/modules/lib/branches/origin; echo b=$?")
    assert res.rc == 0, res.err
    assert "r=0" not in res.out and "b=0" not in res.out, res.out
    assert not (mod / "remotes" / "origin").exists()
    assert not (mod / "branches" / "origin").exists()


def test_a_sigkill_during_start_up_leaves_no_placeholder(rt, workdir):
    # Red team round 10: a SIGKILL of the runtime 5-35 ms into start-up left
    # empty placeholders (.envrc, .vscode/, ...) in the workspace for good:
    # one was made before the guardian knew what it was.
    import signal
    import subprocess
    import time
    ws = make_repo(workdir)
    before = sorted(p.name for p in ws.iterdir())
    gcfg = workdir / "empty.yaml"
    gcfg.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    env["COMET_SANDBOX_GLOBAL_CONFIG"] = str(gcfg)
    argv = [str(rt.binary), "--root", str(rt.root), "sandbox", "--workspace", str(ws), "--",
            "/bin/sleep", "5"]
    for i in range(24):
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.002 * (i % 12 + 1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            now = sorted(q.name for q in ws.iterdir())
            if now == before:
                break
            time.sleep(0.05)
        assert now == before, f"round {i}: left {sorted(set(now) - set(before))}"
