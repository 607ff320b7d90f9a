"""hooks: prestart, createRuntime, createContainer, startContainer,
poststart, poststop.  Each hook script writes its stdin (the state JSON)
to a file."""
import json
import os
import time

import pytest

from lib import wait_for
from lib.asserts import assert_nothing_left, assert_refused

HOST_MNT = os.readlink("/proc/self/ns/mnt")
RUNTIME_SIDE = ["prestart", "createRuntime", "poststart", "poststop"]
CONTAINER_SIDE = ["createContainer", "startContainer"]


@pytest.fixture
def out(workdir):
    d = workdir / "hookout"
    d.mkdir()
    return d


def add_recording_hooks(b, out, kinds):
    """Hooks run /bin/sh from the host (runtime side) or the container's
    busybox (startContainer runs after pivot_root, so its path is resolved in
    the container); createContainer's path is resolved in the runtime
    namespace, per the spec; both write into a bind-mounted dir."""
    b.bind(out, "/hookout")
    for kind in kinds:
        if kind == "startContainer":
            dest, sh = "/hookout", "/bin/sh"
        else:
            dest, sh = str(out), "/bin/sh"
        script = (f"cat > {dest}/{kind}.json; readlink /proc/self/ns/mnt > {dest}/{kind}.mnt; "
                  f"echo \"$0 $*\" > {dest}/{kind}.args; env > {dest}/{kind}.env; "
                  f"echo {kind} >> {dest}/order")
        b.hook(kind, sh, ["sh", "-c", script, "arg0", "arg1", "arg2"], env=["HOOKVAR=yes"])
    return b


def hook_done(out, kind):
    """The recording script's last step appends its name to `order`."""
    order = out / "order"
    return order.exists() and kind in order.read_text().split()


def state(out, kind):
    return json.loads((out / f"{kind}.json").read_text())


def test_all_hooks_run_with_state_on_stdin(rt, bundle, out):
    b = add_recording_hooks(bundle().probe("sleep", "1"), out, RUNTIME_SIDE + CONTAINER_SIDE)
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    for kind in ("prestart", "createRuntime", "createContainer"):
        s = state(out, kind)
        assert s["id"] == cid and s["bundle"] == str(b.path), s
        assert s["ociVersion"]
        assert s["status"] == "creating", s
    rt.start(cid).expect_ok()
    assert wait_for(lambda: hook_done(out, "startContainer"), 5)
    assert state(out, "startContainer")["id"] == cid
    assert wait_for(lambda: hook_done(out, "poststart"), 5)
    assert state(out, "poststart")["id"] == cid
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert not (out / "poststop.json").exists(), "poststop ran before delete"
    rt.delete(cid).expect_ok()
    s = state(out, "poststop")
    assert s["id"] == cid and s["status"] == "stopped", s


def test_runtime_side_pid_is_container_pid(rt, bundle, out):
    b = add_recording_hooks(bundle().probe("sleep", "30"), out, ["prestart", "createRuntime"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    pid = rt.pid(cid)
    assert state(out, "prestart")["pid"] == pid
    assert state(out, "createRuntime")["pid"] == pid


def test_hook_namespaces(rt, bundle, out):
    b = add_recording_hooks(bundle().probe("sleep", "1"), out, RUNTIME_SIDE + CONTAINER_SIDE)
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    rt.delete(cid).expect_ok()
    mnt = {k: (out / f"{k}.mnt").read_text().strip() for k in RUNTIME_SIDE + CONTAINER_SIDE}
    for k in RUNTIME_SIDE:
        assert mnt[k] == HOST_MNT, (k, mnt)
    assert mnt["createContainer"] != HOST_MNT
    assert mnt["startContainer"] == mnt["createContainer"]


def test_hook_order(rt, bundle, out):
    b = add_recording_hooks(bundle().probe("exit", "0"), out, RUNTIME_SIDE + CONTAINER_SIDE)
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    rt.delete(cid).expect_ok()
    order = (out / "order").read_text().split()
    assert sorted(order) == sorted(RUNTIME_SIDE + CONTAINER_SIDE), order
    i = {k: order.index(k) for k in order}
    assert i["prestart"] < i["createRuntime"] < i["createContainer"] < i["startContainer"] < i["poststop"], order
    assert i["createContainer"] < i["poststart"] < i["poststop"], order


def test_hook_args_and_env(rt, bundle, out):
    b = add_recording_hooks(bundle().probe("exit", "0"), out, ["prestart"])
    rt.run(rt.new_id(), b).expect_ok()
    assert (out / "prestart.args").read_text() == "arg0 arg1 arg2\n"
    env = (out / "prestart.env").read_text().split()
    assert "HOOKVAR=yes" in env
    assert not any(e.startswith("PATH=/usr/local/sbin") for e in env), "hook got the container env"


@pytest.mark.comet_only
def test_poststart_runs_after_start(rt, bundle, out):
    # runc 1.1.5 runs poststart hooks during `create` (status "created");
    # the spec wants them after the user process has started
    b = add_recording_hooks(bundle().probe("sleep", "30"), out, ["poststart"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    assert not (out / "poststart.json").exists()
    rt.start(cid).expect_ok()
    assert wait_for(lambda: hook_done(out, "poststart"), 5)
    assert state(out, "poststart")["status"] == "running"


@pytest.mark.comet_only
def test_container_side_hook_state_has_host_pid(rt, bundle, out):
    # runc 1.1.5 reports "pid": 1 (the pid inside) to createContainer hooks
    b = add_recording_hooks(bundle().probe("sleep", "30"), out, ["createContainer"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    assert state(out, "createContainer")["pid"] == rt.pid(cid)


@pytest.mark.parametrize("kind", ["prestart", "createRuntime", "createContainer"])
def test_failing_create_hook_fails_create_and_leaves_nothing(rt, harness, bundle, kind):
    b = bundle().probe("sleep", "30")
    b.hook(kind, "/bin/sh", ["sh", "-c", "echo hook-stdout; echo hook-stderr >&2; exit 3"])
    assert_refused(harness, "create", b, "exit status 3")


def test_failing_hook_error_carries_output(rt, bundle):
    b = bundle().probe("sleep", "30")
    b.hook("prestart", "/bin/sh", ["sh", "-c", "echo hook-stdout; echo hook-stderr >&2; exit 3"])
    res = rt.create(rt.new_id(), b)
    assert "hook-stderr" in res.error


def test_later_hooks_not_run_after_failure(rt, bundle, out):
    b = bundle().probe("sleep", "30")
    b.hook("prestart", "/bin/sh", ["sh", "-c", "exit 1"])
    b.hook("prestart", "/bin/sh", ["sh", "-c", f"touch {out}/second"])
    b.hook("createRuntime", "/bin/sh", ["sh", "-c", f"touch {out}/third"])
    assert rt.create(rt.new_id(), b).rc != 0
    assert os.listdir(out) == []


def test_missing_hook_binary(rt, harness, bundle):
    b = bundle().probe("sleep", "30")
    b.hook("prestart", "/nonexistent/hook")
    assert_refused(harness, "create", b, "/nonexistent/hook")


def test_hook_timeout(rt, harness, bundle):
    b = bundle().probe("sleep", "30")
    b.hook("prestart", "/bin/sh", ["sh", "-c", "exec sleep 20"], timeout=1)
    cid = rt.new_id()
    t0 = time.monotonic()
    res = rt.create(cid, b)
    elapsed = time.monotonic() - t0
    assert res.rc != 0
    assert "timeout" in res.error.lower()
    assert elapsed < 10, f"create took {elapsed:.1f}s with a 1s hook timeout"
    assert_nothing_left(harness, cid)


def test_hook_within_timeout_ok(rt, bundle, out):
    b = bundle().probe("exit", "0")
    b.hook("prestart", "/bin/sh", ["sh", "-c", f"sleep 0.2; touch {out}/done"], timeout=5)
    rt.run(rt.new_id(), b).expect_ok()
    assert (out / "done").exists()


def test_failing_start_container_hook_stops_container(rt, bundle, out):
    b = bundle().probe("sleep", "30").bind(out, "/hookout")
    b.hook("startContainer", "/bin/sh", ["sh", "-c", "exit 4"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid)
    assert rt.wait_status(cid, "stopped") == "stopped"


@pytest.mark.comet_only
def test_failing_start_container_hook_fails_start(rt, bundle):
    # runc 1.1.5: `start` exits 0 although the container died in the hook
    b = bundle().probe("sleep", "30")
    b.hook("startContainer", "/bin/sh", ["sh", "-c", "exit 4"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    res = rt.start(cid)
    assert res.rc != 0
    assert "hook" in res.error.lower()
    assert rt.wait_status(cid, "stopped") == "stopped"


def test_failing_poststop_hook_still_deletes(rt, bundle, out):
    b = bundle().probe("exit", "0")
    b.hook("poststop", "/bin/sh", ["sh", "-c", "exit 5"])
    b.hook("poststop", "/bin/sh", ["sh", "-c", f"touch {out}/second-poststop"])
    cid = rt.start_detached(b)
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt.delete(cid)
    assert "exit status 5" in res.error
    assert rt.state_raw(cid).rc != 0, "container must be gone after delete"
    assert not (rt.root / cid).exists()


def test_poststop_runs_on_forced_delete(rt, bundle, out):
    b = add_recording_hooks(bundle().probe("sleep", "30"), out, ["poststop"])
    cid = rt.start_detached(b)
    rt.delete(cid, "--force").expect_ok()
    assert state(out, "poststop")["id"] == cid


@pytest.mark.comet_only  # runc 1.1.5 runs poststart at create and only warns
def test_failing_poststart_hook_fails_start_and_stops_the_container(rt, bundle, out):
    # runtime-spec 1.3 (runtime.md, lifecycle step 9): a failing poststart
    # hook is an error, and the container is stopped
    b = bundle().probe("sleep", "30")
    b.hook("poststart", "/bin/sh", ["sh", "-c", "echo poststart-said-no >&2; exit 5"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    res = rt.start(cid)
    assert res.rc != 0, "start succeeded although its poststart hook failed"
    assert "poststart" in res.error and "poststart-said-no" in res.error, res.error
    assert rt.wait_status(cid, "stopped") == "stopped"


@pytest.mark.comet_only  # runc 1.1.5 stops at the first failing poststop hook
def test_failing_poststop_hook_warns_and_the_rest_still_run(rt, bundle, out):
    b = bundle().probe("exit", "0")
    b.hook("poststop", "/bin/sh", ["sh", "-c", f"touch {out}/first; exit 1"])
    b.hook("poststop", "/bin/sh", ["sh", "-c", f"touch {out}/second; exit 2"])
    b.hook("poststop", "/bin/sh", ["sh", "-c", f"touch {out}/third"])
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt.delete(cid)
    assert res.rc == 0, res.error  # a poststop failure is a warning, not an error
    assert sorted(os.listdir(out)) == ["first", "second", "third"]
    assert res.error.count("poststop") >= 2, res.error
