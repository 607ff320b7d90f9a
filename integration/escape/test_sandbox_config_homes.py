"""Attack: the caller's config homes inside the workspace (red team round
11, docs/sandbox.md "Protected paths"). With XDG_CONFIG_HOME (or ZDOTDIR)
pointing into the workspace, only `git/` and `comet/` were protected under
it: the host's fish, nvim, systemd user units, direnv and autostart entries
(and zsh's rc files) were the command's to write.

Each test writes from inside, then asserts on what the host's files hold."""
from __future__ import annotations

import pytest

from lib.sandbox import make_repo, sandbox_runner

pytestmark = pytest.mark.comet_only


@pytest.fixture
def sbx(rt, workdir):
    return sandbox_runner(rt, workdir)


XDG_NAMES = ["fish/config.fish", "nvim/init.lua", "systemd/user/x.service",
             "direnv/direnvrc", "autostart/x.desktop", "git/config", "comet/sandbox.yaml"]


@pytest.mark.parametrize("relative", [False, True])
def test_every_config_dir_of_the_home_table_is_protected_under_xdg_config_home(
        sbx, workdir, relative):
    ws = make_repo(workdir)
    xdg = ws / "cfg"
    (xdg / "nvim").mkdir(parents=True)
    (xdg / "nvim" / "init.lua").write_text("-- mine\n")
    script = "".join(f"mkdir -p cfg/{n.rsplit('/', 1)[0]}; echo evil > cfg/{n}; echo \"{n}=$?\"; "
                     for n in XDG_NAMES)
    res, _ = sbx(ws, script, extra_env={"XDG_CONFIG_HOME": "cfg" if relative else str(xdg)})
    # Since red team round 20 a workspace that holds XDG_CONFIG_HOME is no
    # workspace at all (before: each name of the table protected in it); a
    # relative one (which the XDG spec says to ignore) keeps the names.
    if relative:
        assert res.rc == 0, res.err
    else:
        assert res.rc == 125 and " holds " in res.err, res
    for n in XDG_NAMES:
        assert f"{n}=0" not in res.out, res.out
        p = xdg / n
        assert not p.exists() or "evil" not in p.read_text(), n
    assert (xdg / "nvim" / "init.lua").read_text() == "-- mine\n"


def test_zsh_rc_files_are_protected_under_zdotdir(sbx, workdir):
    ws = make_repo(workdir)
    zd = ws / "zsh"
    zd.mkdir()
    (zd / ".zshrc").write_text("# mine\n")
    names = [".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout"]
    script = "".join(f"echo evil > zsh/{n}; echo \"{n}=$?\"; " for n in names)
    res, _ = sbx(ws, script, extra_env={"ZDOTDIR": str(zd)})
    assert res.rc == 0, res.err
    for n in names:
        assert f"{n}=0" not in res.out, res.out
        assert not (zd / n).exists() or "evil" not in (zd / n).read_text(), n
    assert (zd / ".zshrc").read_text() == "# mine\n"
