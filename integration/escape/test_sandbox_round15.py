"""Attacks of red team round 15 (docs/sandbox.md, "Red team round 15"),
each of which got through on the round's binary: a directory given as
stdin, a nested repository whose `.git` is a symlink, and git config the
host's git takes from its environment. The rootless ones (a directory or a
`.git` made unreadable, an index check blinded) are in
rootless/test_sandbox_rootless.py.

Every test plays the attacker inside, then the host outside, and asserts on
what the host did and what the sandbox said."""
from __future__ import annotations

import os
import secrets
import subprocess

import pytest
from lib.sandbox import GIT_ENV, git, sandbox_env

pytestmark = pytest.mark.comet_only

# fd 5 is the directory the caller gave as stdin: a hook and the config
# written relative to it, and the host's /etc/shadow read through it
THROUGH_FD = r'''
import os
try:
    fd = os.open("hooks/pre-commit", os.O_CREAT | os.O_WRONLY, 0o755, dir_fd=0)
    os.write(fd, b"#!/bin/sh\ntouch MARKER\n"); print("hook=0")
except OSError as e:
    print("hook=", e.errno)
try:
    print("shadow=" + open("/proc/self/fd/0/../../../../etc/shadow").read()[:4])
except OSError as e:
    print("shadow-err", e.errno)
'''


@pytest.mark.parametrize("profile", ["workspace", "strict", "read-only"])
def test_a_directory_given_as_stdin_is_refused(rt, repo, workdir, profile):
    # The fd sits on the caller's mount, outside every bind of the sandbox:
    # the command wrote .git/hooks/pre-commit through it and read any host
    # file by walking up from it. Now the run is refused before it starts.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    fd = os.open(repo / ".git", os.O_RDONLY | os.O_DIRECTORY)
    try:
        r = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--profile", profile,
                            "--workspace", str(repo), "--", "python3", "-c",
                            THROUGH_FD.replace("MARKER", str(marker))],
                           stdin=fd, capture_output=True, text=True, timeout=60,
                           env=sandbox_env(gcfg))
    finally:
        os.close(fd)
    assert r.returncode == 125, (r.returncode, r.stdout, r.stderr)
    assert "stdin is a directory" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "hook=0" not in r.stdout and "shadow=" not in r.stdout, r.stdout
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    # a file, a pipe and /dev/null as stdin still work
    with open(repo / "a.txt") as f:
        ok = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--profile",
                             profile, "--workspace", str(repo), "--", "cat"], stdin=f,
                            capture_output=True, text=True, timeout=60, env=sandbox_env(gcfg))
    assert ok.returncode == 0 and ok.stdout == "a\n", (ok.returncode, ok.stderr)


def test_a_nested_repository_behind_a_symlinked_git_is_protected(sandbox, repo, workdir):
    # Android's `repo` checks out `proj/.git -> ../.repo/projects/proj.git`:
    # the search followed no symlink, so the program that repository's
    # config names and its .envrc were writable; the host's git ran it.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    store = repo / ".repo" / "projects"
    store.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(store / "proj.git")], check=True,
                   env=GIT_ENV)
    proj = repo / "proj"
    proj.mkdir()
    os.symlink("../.repo/projects/proj.git", proj / ".git")
    git(proj, "config", "core.bare", "false")
    git(proj, "config", "core.fsmonitor", "tools/fsmon.sh")
    (proj / "tools").mkdir()
    (proj / "tools" / "fsmon.sh").write_text("#!/bin/sh\nexit 1\n")
    (proj / "tools" / "fsmon.sh").chmod(0o755)
    attack = f"""
printf '#!/bin/sh\\ntouch {marker}\\n' > proj/tools/fsmon.sh; echo "monitor=$?"
echo 'touch {marker}' > proj/.envrc; echo "envrc=$?"
printf '[core]\\n\\tpager = touch {marker}\\n' >> .repo/projects/proj.git/config; echo "config=$?"
echo ordinary > proj/notes.txt; echo "ordinary=$?"
"""
    res, evs = sandbox(repo, attack)
    for step in ["monitor", "envrc", "config"]:
        assert f"{step}=0" not in res.out, res.out
    assert "ordinary=0" in res.out, res
    git(proj, "status", check=False)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"
    assert (proj / "tools" / "fsmon.sh").read_text() == "#!/bin/sh\nexit 1\n"


@pytest.mark.parametrize("how", ["global", "count"])
def test_git_config_from_the_environment_is_read(sandbox, repo, workdir, var_dir, how):
    # The host's git takes config from GIT_CONFIG_GLOBAL, or from
    # GIT_CONFIG_COUNT/KEY_n/VALUE_n; the harness's environment is the
    # host git's. Neither was read: what they name stayed writable.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    (repo / "tools").mkdir()
    (repo / "tools" / "fsm.sh").write_text("#!/bin/sh\nexit 1\n")
    (repo / "tools" / "fsm.sh").chmod(0o755)
    if how == "global":
        cfg = var_dir / "gitconfig"
        cfg.write_text("[core]\n\tfsmonitor = tools/fsm.sh\n")
        env = {"GIT_CONFIG_GLOBAL": str(cfg)}
    else:
        env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
               "GIT_CONFIG_VALUE_0": "tools/fsm.sh"}
    res, evs = sandbox(repo, f"printf '#!/bin/sh\\ntouch {marker}\\n' > tools/fsm.sh; "
                             "echo monitor=$?; echo x > ordinary.txt; echo ordinary=$?",
                       extra_env=env)
    assert "monitor=0" not in res.out and "ordinary=0" in res.out, res
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True,
                   env={**GIT_ENV, **env}, timeout=30)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


def test_a_relative_program_in_git_config_count_is_judged_per_repository(sandbox, repo, workdir):
    # GIT_CONFIG_COUNT's entries apply in every repository: a nested one's
    # relative hooks path is its own directory
    lib = repo / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath",
           "GIT_CONFIG_VALUE_0": ".hooks"}
    res, _ = sandbox(repo, "mkdir -p vendor/lib/.hooks; echo x > vendor/lib/.hooks/pre-commit; "
                           "echo hook=$?", extra_env=env)
    assert "hook=0" not in res.out, res.out


def test_the_shared_tmp_is_no_workspace(rt, workdir):
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    res = rt("sandbox", "--workspace", "/tmp", "--", "true", env=sandbox_env(gcfg), timeout=60)
    assert res.rc == 125 and "shared temporary directory" in res.err, res


META = r'''
import os
for what, call in [("chmod", lambda: os.chmod("/proc/self/fd/0", 0)),
                   ("utime", lambda: os.utime("/proc/self/fd/0", (0, 0))),
                   ("truncate", lambda: os.truncate("/proc/self/fd/0", 0))]:
    try:
        call(); print(what + "=0")
    except OSError as e:
        print(what + "=" + str(e.errno))
print("rest=" + os.read(0, 100).decode())
'''


@pytest.mark.parametrize("which", ["host", "protected"])
def test_a_file_given_as_stdin_keeps_its_mode_and_times(rt, repo, workdir, var_dir, which):
    # Red team round 15 row 3, and a host file outside every writable
    # tree: through /proc/self/fd/0 the command took the file's mode and
    # times (and truncated a protected one), on the caller's mount. It now
    # reads a copy of the fd opened in the sandbox's view, at the offset
    # the caller left it.
    f = var_dir / "data.txt" if which == "host" else repo / ".git" / "HEAD"
    if which == "host":
        f.write_text("xxref: data\n")
    else:
        f.write_text("xxref: refs/heads/master\n")
    f.chmod(0o644)
    before = f.stat()
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    with open(f, "rb", buffering=0) as stdin:
        stdin.read(2)  # the caller read some: the command goes on from there
        r = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--workspace",
                            str(repo), "--", "python3", "-c", META], stdin=stdin,
                           capture_output=True, text=True, timeout=60, env=sandbox_env(gcfg))
    assert r.returncode == 0, r.stderr
    for what in ("chmod", "utime", "truncate"):
        assert f"{what}=0" not in r.stdout, r.stdout
    assert "rest=ref: " in r.stdout, r.stdout
    after = f.stat()
    assert (after.st_mode, after.st_mtime_ns, after.st_size) == \
        (before.st_mode, before.st_mtime_ns, before.st_size)
