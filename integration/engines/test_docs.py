"""docs/engines.md: its snippets are the ones the suites run, they parse, and
the containerd 2.x handler (not packaged here) matches the tested 1.x one."""
from __future__ import annotations

import re
import subprocess
import tomllib

import pytest
import yaml

from . import enginelib as el

EXPECTED = {"podman-containers.conf", "containerd-1.x.toml", "containerd-2.x.toml", "runtimeclass.yaml", "pod.yaml",
            "engines-example/soyapack.yaml", "podman-run.sh", "ctr-run.sh",
            "agent-sandbox.yaml"}


def test_every_snippet_is_there_and_parses():
    s = el.snippets()
    assert set(s) == EXPECTED, sorted(s)
    for name, text in s.items():
        if name.endswith((".toml", ".conf")):
            tomllib.loads(text)
        elif name.endswith(".sh"):
            assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0, text
        else:
            yaml.safe_load(text)


def test_every_snippet_is_used_by_a_suite():
    """Each snippet but the 2.x one (checked below against 1.x) and the
    agent-sandbox template (checked below against pod.yaml) is read by a suite."""
    used = set()
    for f in el.ENGINES_DIR.glob("*.py"):
        used |= set(re.findall(r'snippet(?:_toml)?\("([^"]+)"\)', f.read_text()))
    assert EXPECTED - {"containerd-2.x.toml", "agent-sandbox.yaml"} <= used, used


def test_containerd_2x_handlers_match_the_tested_1x_ones():
    v2 = el.snippet_toml("containerd-1.x.toml")
    v3 = el.snippet_toml("containerd-2.x.toml")
    assert v2["version"] == 2 and v3["version"] == 3
    cri2 = v2["plugins"]["io.containerd.grpc.v1.cri"]
    cri3 = v3["plugins"]["io.containerd.cri.v1.runtime"]
    assert cri3["containerd"]["runtimes"] == cri2["containerd"]["runtimes"]
    assert cri3["restrict_oom_score_adj"] == cri2["restrict_oom_score_adj"]
    assert set(v3["plugins"]) == {"io.containerd.cri.v1.runtime"}


def test_placeholders_are_the_ones_the_suites_replace():
    conf = el.snippet_toml("podman-containers.conf")
    assert conf["engine"]["runtimes"]["comet-runtime"] == [el.DOC_BINARY]
    assert "comet-runtime" in conf["engine"]["runtime_supports_json"]
    comet = el.snippet_toml("containerd-1.x.toml")["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["comet"]
    assert comet["options"] == {"BinaryName": el.DOC_BINARY, "Root": el.DOC_K8S_ROOT}
    assert comet["runtime_type"] == "io.containerd.runc.v2"
    assert comet["pod_annotations"] == comet["container_annotations"] == ["org.soyaos.comet.*"]
    rc = yaml.safe_load(el.snippet("runtimeclass.yaml"))
    pod = yaml.safe_load(el.snippet("pod.yaml"))
    assert pod["spec"]["runtimeClassName"] == rc["metadata"]["name"] and rc["handler"] == "comet"
    assert pod["spec"]["containers"][0]["image"] == el.DOC_POD_IMAGE


def test_every_engine_example_confines(tmp_path):
    """Issue 26, trap 1: the docs' engine examples used only the pack-name
    annotation, which confines nothing. Every example that starts a
    container carries the capabilities annotation `pack annotation` prints
    for the doc's pack (the pod's annotations are its --format k8s output)."""
    pack_dir = el.doc_pack_dir(tmp_path)  # not a mkdtemp of its own: nothing left in /tmp
    k8s = yaml.safe_load(el.comet("pack", "annotation", str(pack_dir), "--format", "k8s").stdout)
    pod = yaml.safe_load(el.snippet("pod.yaml"))
    assert pod["metadata"]["annotations"] == k8s["annotations"], pod["metadata"]
    assert "pack annotation ./engines-example" in el.snippet("podman-run.sh")
    assert "pack annotation ./engines-example --format json" in el.snippet("ctr-run.sh")
    doc = el.DOC.read_text()
    # no example names a pack without its capabilities
    for m in re.finditer(r"--annotation\s+org\.soyaos\.comet\.pack=", doc):
        item = doc[doc.rfind("\n\n", 0, m.start()) + 2:m.end()]  # its paragraph or list item
        assert "org.soyaos.comet.capabilities" in item or "pack annotation" in item, item


def test_the_agent_sandbox_template_is_the_tested_pod():
    """A Sandbox of kubernetes-sigs/agent-sandbox (issue 26, "a plus"): no
    controller runs here, so its podTemplate must be the pod test_cri runs."""
    sb = yaml.safe_load(el.snippet("agent-sandbox.yaml"))
    pod = yaml.safe_load(el.snippet("pod.yaml"))
    assert (sb["apiVersion"], sb["kind"]) == ("agents.x-k8s.io/v1alpha1", "Sandbox")
    assert set(sb["spec"]) == {"podTemplate"} and set(sb["spec"]["podTemplate"]) == {"metadata", "spec"}
    assert sb["spec"]["podTemplate"]["metadata"] == {"annotations": pod["metadata"]["annotations"]}
    assert sb["spec"]["podTemplate"]["spec"] == pod["spec"]


def test_toml_writer_round_trips():
    d = el.merge(el.snippet_toml("containerd-1.x.toml"), {"root": "/x y", "plugins": {"a.b": {"c": [1, "2"], "d": True}}})
    assert tomllib.loads(el.to_toml(d)) == d
