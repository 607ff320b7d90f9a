"""Attack: read the host's secrets from a sandbox (issue 22 item 4). Under
strict, /etc/shadow was readable when the invoker was root: dropping every
capability does not help, root owns the file. Two fixes, both tested:
through sudo the command runs as the invoking user (SUDO_UID/SUDO_GID),
and every sandboxed profile but devbox hides the usual secrets under the
system directories it reads (mode-000 mounts: EACCES even for uid 0)."""
from __future__ import annotations

import glob
import os

import pytest

from lib.sandbox import by_arg, probe_cmd

pytestmark = pytest.mark.comet_only

SECRETS = [p for p in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssl/private",
                       *glob.glob("/etc/ssh/ssh_host_*_key")] if os.path.exists(p)]


@pytest.fixture
def sbx(rt, workdir):
    ws = workdir / "ws"
    ws.mkdir()
    os.chmod(ws, 0o777)
    (workdir / "global.yaml").write_text("")

    def call(*ops, profile, sudo=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
        env["COMET_SANDBOX_GLOBAL_CONFIG"] = str(workdir / "global.yaml")
        if sudo is not None:
            env.update({"SUDO_UID": str(sudo), "SUDO_GID": str(sudo), "SUDO_USER": "nobody"})
        res = rt("sandbox", "--profile", profile, "--workspace", str(ws), "--",
                 *probe_cmd(*ops), env=env, timeout=60)
        assert res.rc == 0, res.err
        return by_arg(res)

    return call


@pytest.mark.parametrize("profile", ["workspace", "read-only", "strict"])
def test_secrets_are_unreadable_even_for_uid_0(sbx, profile):
    assert SECRETS, "this host has none of the secrets to test"
    got = sbx(*[f"{'ls' if os.path.isdir(p) else 'read'}={p}" for p in SECRETS], "id=",
              profile=profile)
    assert got[("id", "")]["data"]["uid"] == 0  # root without sudo: uid 0, no capabilities
    for p in SECRETS:
        r = got[("ls" if os.path.isdir(p) else "read", p)]
        assert r["ok"] is False and r["errno"] == "EACCES", r


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_through_sudo_the_command_runs_as_the_invoking_user(sbx, profile):
    got = sbx("id=", "read=/etc/shadow", profile=profile, sudo=65534)
    ident = got[("id", "")]["data"]
    assert ident["uid"] == 65534 and ident["gid"] == 65534 and ident["groups"] == [], ident
    assert got[("read", "/etc/shadow")]["errno"] == "EACCES"


def test_devbox_hides_nothing(sbx):
    # The control: devbox is "no protection" by definition.
    got = sbx("read=/etc/shadow", profile="devbox")
    assert got[("read", "/etc/shadow")]["ok"] is True
