"""Fixtures of the egress suite (docs/egress.md, integration/egress/README
in the module docstring of test_egress.py): the test's own internet, the
static netprobe, and packs compiled with `comet-runtime pack bundle`."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lib import config as cfg
from lib.bundle import make_rootfs

from .inet import ADDR, Internet

HERE = Path(__file__).resolve().parent

# api.test:443 is a tcp entry: the suite's servers speak first ("hello ADDR
# PORT"), which an https entry would refuse as not TLS (issue 25: the wire
# judge). test_wire.py covers https and http entries against real TLS.
ISSUE_EGRESS = """    - {host: api.test, port: 443, protocol: tcp}
    - {host: "*.cdn.test", port: 8443, protocol: tcp}
"""


@pytest.fixture(scope="session")
def netprobe(session_dir) -> Path:
    out = session_dir / "netprobe"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-static", "-O2", "-o", str(out), str(HERE / "netprobe.c")], check=True,
                   capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def internet(session_dir):
    if not shutil.which("dnsmasq"):
        pytest.fail("dnsmasq is missing (scripts/deps.sh installs dnsmasq-base)")
    net = Internet(session_dir).start()
    yield net
    net.close()


def dns_env() -> dict:
    env = dict(os.environ)
    env["COMET_DNS_UPSTREAM"] = ADDR["dns"]
    return env


class Pack:
    """A pack dir + rootfs + compiled bundle whose process runs netprobe."""

    def __init__(self, harness, probe_path: Path, netprobe: Path, egress_yaml: str, name: str):
        self.h = harness
        self.dir = harness.path(f"pack-{name}")
        self.dir.mkdir()
        (self.dir / "agent").write_text("netprobe commands come from process.args\n")
        egress = f"  egress:\n{egress_yaml}" if egress_yaml.strip() not in ("[]", '["*"]') else \
            f"  egress: {egress_yaml.strip()}\n"
        tier = "unrestricted" if '"*"' in egress_yaml else "read-only"
        (self.dir / "soyapack.yaml").write_text(
            "apiVersion: soyapack/v0\n"
            f"name: egress-{name}\n"
            "version: 1.0.0\n"
            "runtime:\n  interpreter: /netprobe\n  entrypoint: agent\n"
            f"capabilities:\n{egress}  fs:\n    read: [/workdir]\n  determinism_tier: {tier}\n")
        self.rootfs = harness.path(f"rootfs-{name}")
        make_rootfs(self.rootfs, probe_path)
        shutil.copy2(netprobe, self.rootfs / "netprobe")
        os.chmod(self.rootfs / "netprobe", 0o755)
        (self.rootfs / "etc" / "resolv.conf").write_text("")
        self.bundle = harness.path(f"bundle-{name}")
        res = subprocess.run([str(cfg.RUNTIME), "pack", "bundle", str(self.dir), "--rootfs",
                              str(self.rootfs), "--bundle", str(self.bundle)],
                             capture_output=True, text=True, timeout=20)
        assert res.returncode == 0, res
        self.config = json.loads((self.bundle / "config.json").read_text())
        # The host directory behind /workdir (pack bundle stages a copy).
        self.workdir = Path(next(m["source"] for m in self.config["mounts"]
                                 if m["destination"] == "/workdir"))

    def set_commands(self, *cmds: list[str] | tuple[str, ...]):
        args = ["/netprobe", "agent"]
        for i, c in enumerate(cmds):
            if i:
                args.append("--")
            args += list(c)
        self.config["process"]["args"] = args
        (self.bundle / "config.json").write_text(json.dumps(self.config, indent=1))

    def run(self, *cmds, timeout: float = 30) -> list[dict]:
        """`comet-runtime run` of the pack with these netprobe commands; the
        JSON lines it printed."""
        self.set_commands(*cmds)
        cid = self.h.rt.new_id("eg")
        # --net-helper: the way `pack run` runs its own bundle (pasta attached);
        # a config alone never gets connectivity (test_network_none_is_not_widened)
        res = self.h.rt("run", "--net-helper", "--bundle", str(self.bundle), cid, env=dns_env(),
                        timeout=timeout)
        # 3: the run ended with a capability violation reported (issue 6)
        assert res.rc in (0, 3), res
        lines = [json.loads(l) for l in res.out.splitlines() if l.startswith("{")]
        assert len(lines) == len(cmds), res
        return lines


@pytest.fixture
def make_pack(harness, probe_path, netprobe):
    n = iter(range(1000))

    def make(egress_yaml: str = ISSUE_EGRESS) -> Pack:
        return Pack(harness, probe_path, netprobe, egress_yaml, str(next(n)))

    return make
