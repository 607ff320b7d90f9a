"""`pack validate|lint|bundle|explain` on the examples/ packs: exit codes,
the seed's lint text, the compiled bundle, and that a refused manifest
writes nothing."""
import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

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
    assert res.returncode == 1, res  # a wrong manifest, as validate says (issue 26)
    assert "soyapack.yaml:" in res.stderr
    assert comet("pack", "validate", str(tmp_path)).returncode == 1


def test_validate_and_lint_agree_on_a_typo(tmp_path):
    """Issue 26, trap 5: the same typo was exit 1 for validate and 2 for
    lint. Both say 1 (a wrong manifest), with the same message; 2 is kept
    for a manifest that cannot be read."""
    text = (EXAMPLES / "summarize-inputs" / "soyapack.yaml").read_text()
    shutil.copytree(EXAMPLES / "summarize-inputs", tmp_path / "p")
    (tmp_path / "p" / "soyapack.yaml").write_text(text.replace("capabilities:", "capabilites:"))
    v = comet("pack", "validate", str(tmp_path / "p"))
    lint = comet("pack", "lint", "--strict", str(tmp_path / "p"))
    assert (v.returncode, lint.returncode) == (1, 1), (v, lint)
    assert 'capabilites: unknown field (did you mean \\"capabilities\\"?)' in v.stderr, v.stderr
    assert v.stderr.strip().split("msg=")[-1] == lint.stderr.strip().split("msg=")[-1], (v.stderr, lint.stderr)
    for verb in ("validate", "lint"):
        assert comet("pack", verb, str(tmp_path / "none")).returncode == 2


def test_lint_strict_fails_a_pack_without_its_entrypoint(tmp_path):
    """Issue 26, trap 5: `lint --strict` passed a pack whose entrypoint file
    was missing (every run of it fails at once)."""
    shutil.copytree(EXAMPLES / "summarize-inputs", tmp_path / "p")
    (tmp_path / "p" / "agent.py").unlink()
    res = comet("pack", "lint", "--strict", str(tmp_path / "p"))
    assert res.returncode == 1, res
    assert "err   runtime.entrypoint agent.py is not in the pack directory" in res.stdout, res.stdout
    (tmp_path / "p" / "agent.py").mkdir()  # a directory is no entrypoint either
    assert comet("pack", "lint", str(tmp_path / "p")).returncode == 1


def test_a_missing_input_names_the_flag(tmp_path):
    """Issue 26, trap 5: a missing --input said `bind mount source ...:
    ENOENT` without naming the flag. Now the flag and the path, exit 2,
    before anything is built."""
    missing = tmp_path / "no-such-dir"
    res = comet("pack", "run", str(EXAMPLES / "summarize-inputs"), "--input", str(missing))
    assert res.returncode == 2, res
    assert f"pack run --input {missing}: ENOENT" in res.stderr, res.stderr
    assert "bind mount" not in res.stderr
    # explain takes the same flags and refuses them the same way (it said
    # "/workdir/inputs does not exist", exit 0, a view no run has)
    for flag in ("--input", "--rootfs"):
        res = comet("pack", "explain", str(EXAMPLES / "summarize-inputs"), flag, str(missing),
                    "--path", "/workdir/inputs/a.txt")
        assert res.returncode == 2, res
        assert f"pack explain {flag} {missing}: ENOENT" in res.stderr, res.stderr
    (tmp_path / "file").write_text("x")
    res = comet("pack", "bundle", str(EXAMPLES / "summarize-inputs"), "--rootfs", str(tmp_path),
                "--bundle", str(tmp_path / "b"), "--input", str(tmp_path / "file"))
    assert res.returncode == 2 and f"pack bundle --input {tmp_path / 'file'}: ENOTDIR" in res.stderr, res
    assert not (tmp_path / "b").exists()


def test_pack_annotation_formats():
    """Issue 26, trap 1: the annotations that confine a container, from the
    manifest: the JSON is what the compiler writes into a bundle."""
    pack = EXAMPLES / "weather-egress"
    j = comet("pack", "annotation", str(pack), "--format", "json")
    assert j.returncode == 0, j
    caps = json.loads(j.stdout)
    assert caps["egress"] == [{"host": "api.test", "port": 443, "protocol": "https"}], caps
    pod = comet("pack", "annotation", str(pack), "--format", "k8s")
    ann = yaml.safe_load(pod.stdout)["annotations"]
    assert ann == {"org.soyaos.comet.capabilities": j.stdout.strip(),
                   "org.soyaos.comet.pack": "weather-egress@1.0.0"}, pod.stdout
    pm = comet("pack", "annotation", str(pack))  # podman is the default
    assert pm.stdout.count("\n") == 1
    # podman splits --annotation as CSV: two fields, the first quoted
    fields = next(csv.reader([pm.stdout.strip()]))
    assert fields == ["org.soyaos.comet.capabilities=" + j.stdout.strip(),
                      "org.soyaos.comet.pack=weather-egress@1.0.0"], fields


def test_pack_annotation_errors_and_help(tmp_path):
    res = comet("pack", "annotation", str(tmp_path / "none"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res
    res = comet("pack", "annotation", str(EXAMPLES / "weather-egress"), "--format", "xml")
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1, res
    (tmp_path / "soyapack.yaml").write_text("apiVersion: soyapack/v0\nname: Bad Name!\n")
    res = comet("pack", "annotation", str(tmp_path))
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1, res
    h = comet("pack", "annotation", "--help")
    assert h.returncode == 0
    assert "podman" in h.stdout and "k8s" in h.stdout and "json" in h.stdout
    assert "org.soyaos.comet.capabilities" in h.stdout


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
    indir.mkdir()
    res = comet("pack", "bundle", str(EXAMPLES / "summarize-inputs"), "--rootfs", str(rootfs),
                "--bundle", str(out), "--input", str(indir), "--output", str(outdir))
    assert res.returncode == 0, res
    c = json.loads((out / "config.json").read_text())
    assert c["root"]["readonly"] is True
    assert c["process"]["noNewPrivileges"] is True
    assert c["process"]["args"][:2] == ["/usr/bin/python3", "agent.py"]
    assert "org.soyaos.comet.capabilities" in c["annotations"]
    dests = {m["destination"]: m for m in c["mounts"]}
    assert "ro" in dests["/workdir"]["options"]
    assert dests["/workdir/out"]["source"] == str(outdir)
    # --output did not exist: made for the agent, who runs as nobody
    uid = c["process"]["user"]["uid"]
    assert uid == 65534 and outdir.stat().st_uid == uid, outdir.stat()
    assert f"/workdir/out: {outdir} (the agent, uid 65534, writes there)" in res.stdout
    # an --output the agent cannot write (root's, 0755): refused, and no
    # bundle dir made (issue 26: the run failed with PermissionError)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    out2 = tmp_path / "bundle2"
    res = comet("pack", "bundle", str(EXAMPLES / "summarize-inputs"), "--rootfs", str(rootfs),
                "--bundle", str(out2), "--output", str(mine))
    assert res.returncode == 1, res
    assert f"the agent runs as uid 65534 and cannot write {mine}" in res.stderr, res.stderr
    assert not out2.exists()
    assert mine.stat().st_uid == 0, "an existing directory is never handed over"


def test_bundle_without_output_writes_into_the_bundle(tmp_path):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    b = tmp_path / "b"
    res = comet("pack", "bundle", str(EXAMPLES / "weather-egress"), "--rootfs", str(rootfs),
                "--bundle", str(b))
    assert res.returncode == 0, res
    dests = {m["destination"]: m for m in json.loads((b / "config.json").read_text())["mounts"]}
    assert dests["/workdir/out"]["source"] == str(b / "out")
    assert (b / "out").stat().st_uid == 65534


@pytest.mark.parametrize("args,needle", [
    # -o beside --output read as either: refused with the new spelling
    (["-o", "B"], "-o is ambiguous: give the bundle directory as --bundle DIR"),
    (["--bundle", "B", "-o", "C"], "-o is ambiguous"),
    ([], "--bundle DIR is required"),
])
def test_bundle_flags_cannot_be_confused(tmp_path, args, needle):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    res = subprocess.run([str(cfg.RUNTIME), "pack", "bundle", str(EXAMPLES / "summarize-inputs"),
                          "--rootfs", str(rootfs), *args], capture_output=True, text=True,
                         timeout=20, cwd=tmp_path)
    assert res.returncode == 2, res
    assert needle in res.stderr, res.stderr
    assert len([l for l in res.stderr.splitlines() if l.strip()]) == 1, res.stderr
    assert not (tmp_path / "B").exists() and not (tmp_path / "C").exists()
    # --output-bundle cannot be misread: it stays
    ok = subprocess.run([str(cfg.RUNTIME), "pack", "bundle", str(EXAMPLES / "weather-egress"),
                         "--rootfs", str(rootfs), "--output-bundle", str(tmp_path / "ob")],
                        capture_output=True, text=True, timeout=20)
    assert ok.returncode == 0 and (tmp_path / "ob" / "config.json").exists(), ok


SAMPLE = str(EXAMPLES / "summarize-inputs" / "sample-inputs")


@pytest.mark.parametrize("args,rc,text", [
    (["--path", "/workdir/out/summary.json"], 0, "/workdir/out/summary.json: does not exist, writable, not readable"),
    (["--path", "/workdir/inputs/fox.txt", "--input", SAMPLE], 0, "/workdir/inputs/fox.txt: file, readable, not writable"),
    (["--path", "/workdir/inputs/fox.txt"], 1, "/workdir/inputs/fox.txt: does not exist"),
    # issue 26: "denied ... does not exist in the sandbox" while the agent
    # reads the image's (the default rootfs's) /etc/passwd
    (["--path", "/etc/passwd"], 0, "/etc/passwd: file, readable, not writable"),
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


def test_run_args_after_dashes_reach_the_agent_as_they_are(tmp_path):
    """`pack run PACK -- ARGS`: CLI11 read a word "[a,b]" as a list, and the
    agent got "a", "b" (and "[ -f x ]" lost its brackets)."""
    pack = tmp_path / "argpack"
    pack.mkdir()
    (pack / "agent.py").write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    (pack / "soyapack.yaml").write_text(
        "apiVersion: soyapack/v0\nname: argpack\nversion: 0.1.0\ndescription: prints its args\n"
        "runtime: {interpreter: /usr/bin/python3, entrypoint: agent.py, args: [default]}\n"
        "capabilities:\n  egress: []\n  fs: {read: [/workdir], write: [/workdir/out]}\n"
        "  determinism_tier: read-only\n")
    words = ["[a,b]", "x,y", "--flag=1", "-v", "[ -f x ]", "", "--help"]

    def run(*extra):
        res = subprocess.run([str(cfg.RUNTIME), "--root", str(tmp_path / "root"), "pack", "run",
                              "--no-cache", str(pack), *extra],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res
        return json.loads(res.stdout.strip().splitlines()[-1])

    assert run("--", *words) == words
    assert run() == ["default"]
    assert run("--") == ["default"]  # nothing after "--": runtime.args stay


def test_the_top_level_help_names_every_pack_verb():
    """A newcomer reads `comet-runtime --help` first: its `pack` line left out
    `annotation` (issue 26's fix for trap 1) and `flags`, and `events` did
    not say it lists violations (trap 2)."""
    sub = comet("pack", "--help").stdout.split("Subcommands:", 1)[1]
    verbs = [ln.split()[0] for ln in sub.splitlines() if ln.startswith("  ") and ln.split()]
    assert {"annotation", "flags", "explain", "run"} <= set(verbs), verbs
    top = comet("--help").stdout
    pack_line = next(ln for ln in top.splitlines() if ln.split()[:1] == ["pack"])
    assert all(v in pack_line for v in verbs), (verbs, pack_line)
    events_line = next(ln for ln in top.splitlines() if ln.split()[:1] == ["events"])
    assert "--violations" in events_line, events_line
