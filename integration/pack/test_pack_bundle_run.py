"""`pack bundle`, then `comet-runtime run`, as docs/packs.md says (issue 26,
trap 4): the commands are read from the doc and run as written (only the
/tmp paths are the test's own and --root is the test's state dir). The
bundle used to run the agent as uid 65534 against a root-owned --output:
`PermissionError: [Errno 13] Permission denied: '/workdir/out/result.json'`."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from lib import config as cfg
from lib.config import REPO_DIR

pytestmark = pytest.mark.comet_only

DOC = REPO_DIR / "docs" / "packs.md"


def doc_block() -> str:
    text = DOC.read_text()
    m = re.search(r"<!-- test: integration/pack/test_pack_bundle_run.py runs this block -->\n"
                  r"```sh\n(.*?)```", text, re.S)
    assert m, "docs/packs.md lost its bundle-then-run block"
    return m.group(1)


def test_bundle_then_run_as_documented(rt, workdir):
    block = doc_block()
    assert "pack bundle" in block and "run --bundle" in block
    script = block.replace("/tmp/pyroot", str(workdir / "pyroot")).replace(
        "/tmp/summarize", str(workdir / "summarize"))
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c",
         f'comet-runtime() {{ "{cfg.RUNTIME}" --root "{rt.root}" "$@"; }}\n' + script],
        cwd=REPO_DIR, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res
    assert "summarised 2 files" in res.stdout, res  # the agent's own line
    summary = json.loads(res.stdout[res.stdout.rindex("{\n"):])  # cat's
    assert summary == json.loads((workdir / "summarize" / "out" / "summary.json").read_text())
    assert set(summary) == {"comet.txt", "fox.txt"}, summary
    assert (workdir / "summarize" / "out").stat().st_uid == 65534
    assert rt("list", "-q").out.strip() == "", "run deletes the container at its end"
