"""`pack validate|lint|bundle|explain` on the examples/ packs: exit codes,
the seed's lint text, the compiled bundle, and that a refused manifest
writes nothing."""
import json
import subprocess
from pathlib import Path

import pytest

from lib import config as cfg

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def comet(*args):
    return subprocess.run([str(cfg.RUNTIME), *args], capture_output=True, text=True, timeout=20)


pytestmark = pytest.mark.comet_only


@pytest.mark.parametrize("pack", ["summarize-inputs", "weather-egress"])
def test_good_examples_validate_and_lint_clean(pack):
    v = comet("pack", "validate", str(EXAMPLES / pack))
    assert v.returncode == 0, v
    assert "is valid" in v.stdout
    lint = comet("pack", "lint", "--strict", str(EXAMPLES / pack))
    assert lint.returncode == 0, lint
    assert lint.stdout.strip().endswith("0 errors \u00b7 0 warnings")


def test_bad_example_lint_output_is_the_seeds():
    res = comet("pack", "lint", "--strict", str(EXAMPLES / "bad-lint"))
    assert res.returncode == 1
    assert res.stdout == (EXAMPLES / "bad-lint" / "expected-lint.txt").read_text()
    assert res.stdout.splitlines()[0] == (
        "err   capabilities.egress declares api.openai.com:443 "
        "but tools.fetch uses api.anthropic.com:443")


def test_lint_json_and_unusable_input(tmp_path):
    res = comet("pack", "lint", "--format", "json", str(EXAMPLES / "bad-lint"))
    assert res.returncode == 1
    doc = json.loads(res.stdout)
    assert "egress-uncovered-tool" in json.dumps(doc)
    (tmp_path / "soyapack.yaml").write_text("apiVersion: soyapack/v0\nname: [oops\n")
    res = comet("pack", "lint", str(tmp_path))
    assert res.returncode == 2, res
    assert "soyapack.yaml:" in res.stderr


def test_a_manifest_is_read_up_to_its_cap(tmp_path):
    """The CLI read a manifest with no bound (a path to /dev/zero grew until
    memory ran out); now at most 1 MiB + 1 byte is read, for every verb."""
    big = tmp_path / "soyapack.yaml"
    big.write_text("#" * ((1 << 20) + 10))
    for verb in ("validate", "lint", "explain"):
        for target in ("/dev/zero", str(tmp_path)):
            res = comet("pack", verb, target)
            assert res.returncode == 2, (verb, target, res)
            assert "larger than 1 MiB; not a manifest" in res.stderr, (verb, target, res.stderr)


def test_validate_names_file_line_and_field(tmp_path):
    text = (EXAMPLES / "weather-egress" / "soyapack.yaml").read_text()
    (tmp_path / "soyapack.yaml").write_text(text.replace("port: 443", 'port: "https"'))
    res = comet("pack", "validate", str(tmp_path))
    assert res.returncode == 1
    assert "capabilities.egress[0].port" in res.stderr, res.stderr
    assert "soyapack.yaml:" in res.stderr


def test_bundle_compiles_and_refusal_writes_nothing(tmp_path):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    out, outdir, indir = tmp_path / "bundle", tmp_path / "out", tmp_path / "in"
    outdir.mkdir()
    indir.mkdir()
    res = comet("pack", "bundle", str(EXAMPLES / "summarize-inputs"), "--rootfs", str(rootfs),
                "-o", str(out), "--input", str(indir), "--output", str(outdir))
    assert res.returncode == 0, res
    c = json.loads((out / "config.json").read_text())
    assert c["root"]["readonly"] is True
    assert c["process"]["noNewPrivileges"] is True
    assert c["process"]["args"][:2] == ["/usr/bin/python3", "agent.py"]
    assert "org.soyaos.comet.capabilities" in c["annotations"]
    dests = {m["destination"]: m for m in c["mounts"]}
    assert "ro" in dests["/workdir"]["options"]
    assert dests["/workdir/out"]["source"] == str(outdir)
    # no --output for a declared fs.write: refused, and no bundle dir made
    out2 = tmp_path / "bundle2"
    res = comet("pack", "bundle", str(EXAMPLES / "summarize-inputs"), "--rootfs", str(rootfs),
                "-o", str(out2))
    assert res.returncode == 1, res
    assert not out2.exists()


@pytest.mark.parametrize("args,rc,text", [
    (["--path", "/workdir/out/summary.json"], 0, "allowed: write"),
    (["--path", "/workdir/inputs/a.txt"], 0, "allowed: read"),
    (["--path", "/etc/passwd"], 1, "denied"),
    (["--host", "api.test:443"], 1, "denied"),
])
def test_explain(args, rc, text):
    res = comet("pack", "explain", str(EXAMPLES / "summarize-inputs"), *args)
    assert res.returncode == rc, res
    assert res.stdout.startswith(text), res.stdout


def test_explain_egress_entry():
    res = comet("pack", "explain", str(EXAMPLES / "weather-egress"), "--host", "api.test:443:https")
    assert res.returncode == 0
    assert "capabilities.egress[0]" in res.stdout
    res = comet("pack", "explain", str(EXAMPLES / "weather-egress"), "--host", "api.test:8443")
    assert res.returncode == 1
