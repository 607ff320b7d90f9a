"""`comet-runtime rootfs --from-host BIN... -o DIR`: a minimal rootfs from host
binaries and their shared libraries, then a container run on it.

What is checked from inside: python3 on its own rootfs runs json/os/hashlib
and prints exactly what the host's python3 prints; there is no /bin/sh
(ENOENT); a program found through RUNPATH $ORIGIN runs. From outside: the
error text for a missing binary, a missing library, a non-ELF file, an
existing non-empty DIR; that failures (also ENOSPC midway) leave nothing;
hard links on the same filesystem, copies elsewhere and with --copy."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from lib import config as cfg
from lib.asserts import assert_one_line_error

pytestmark = pytest.mark.comet_only

PY = "/usr/bin/python3"
CODE = ("import json,os,hashlib; print(json.dumps({'sha256': hashlib.sha256(b'comet').hexdigest(), "
        "'md5': hashlib.md5(b'x').hexdigest(), 'blake2': hashlib.blake2b(b'y').hexdigest()[:16], "
        "'sep': os.sep, 'json': json.loads('[1, 2.5, null, \"\\u00e9\"]')}, sort_keys=True))")
ENV = {"PATH": "/usr/bin:/bin"}  # `true` is found here, whatever PATH pytest runs with


def build(rt, *args, **kw):
    """rt without --root is still the runtime; rootfs ignores --root."""
    return rt("rootfs", *map(str, args), env=kw.pop("env", ENV), **kw)


def make_bundle(rt, workdir: Path, rootfs: Path, args: list[str], name: str = "bundle") -> Path:
    """`comet-runtime spec`, then root.path and process.args edited."""
    b = workdir / name
    b.mkdir()
    rt("spec", "--bundle", str(b)).expect_ok()
    c = json.loads((b / "config.json").read_text())
    c["root"] = {"path": str(rootfs), "readonly": True}
    c["process"]["terminal"] = False
    c["process"]["args"] = args
    (b / "config.json").write_text(json.dumps(c))
    return b


def regular_files(root: Path) -> set[str]:
    out = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if p.is_file() and not p.is_symlink():
                out.add("/" + str(p.relative_to(root)))
    return out


def mount_tmpfs(harness, where: Path, size: str) -> Path:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                   check=True, timeout=10)
    harness.add_cleanup(lambda: subprocess.run(["umount", str(where)], check=True, timeout=10))
    return where


@pytest.fixture
def py_rootfs(rt, workdir) -> Path:
    r = workdir / "py-rootfs"
    res = build(rt, "--from-host", PY, "-o", r)
    assert res.rc == 0 and res.out == "" and res.err == "", res
    return r


# ---- python3 -------------------------------------------------------------------

def test_python_runs_json_os_hashlib(rt, workdir, py_rootfs):
    want = subprocess.run([PY, "-I", "-c", CODE], capture_output=True, timeout=30, check=True).stdout
    b = make_bundle(rt, workdir, py_rootfs, [PY, "-c", CODE])
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert res.out.encode() == want
    assert json.loads(res.out)["sha256"] == \
        "d51f791051c2e5f9112c57109acd4d7b9b5788df79db36fa24c09c3c9ee8a569"
    assert res.err == "", "python wrote to stderr (a broken sitecustomize or encodings?)"


def test_python_rootfs_has_no_shell_and_no_dist_packages(rt, workdir, py_rootfs):
    code = ("import errno,os,sys\n"
            "r = {}\n"
            "for p in ['/bin/sh', '/usr/bin/sh', '/bin/busybox', '/usr/lib/python3/dist-packages']:\n"
            "    try:\n"
            "        os.lstat(p); r[p] = 'exists'\n"
            "    except OSError as e:\n"
            "        r[p] = errno.errorcode[e.errno]\n"
            "r['path'] = [p for p in sys.path if 'packages' in p and os.path.exists(p)]\n"
            "print(r)\n")
    b = make_bundle(rt, workdir, py_rootfs, [PY, "-c", code])
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert eval(res.out) == {"/bin/sh": "ENOENT", "/usr/bin/sh": "ENOENT", "/bin/busybox": "ENOENT",
                             "/usr/lib/python3/dist-packages": "ENOENT", "path": []}
    # exec of /bin/sh itself fails: it is not there
    b2 = make_bundle(rt, workdir, py_rootfs, ["/bin/sh", "-c", "true"], name="bundle-sh")
    res = rt.run(rt.new_id(), b2)
    assert_one_line_error(res, "/bin/sh", any_of=("no such file", "ENOENT"))
    # what is in it: python, its libraries and stdlib, the skeleton, nothing else
    files = regular_files(py_rootfs)
    outside = {f for f in files if not f.startswith(("/usr/lib/python3.11/", "/usr/lib/x86_64-linux-gnu/"))}
    assert outside == {"/usr/bin/python3.11", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf",
                       "/etc/ld.so.cache", "/etc/python3.11/sitecustomize.py"}
    stdlib = py_rootfs / "usr/lib/python3.11"
    for skipped in ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3/tests",
                    "config-3.11-x86_64-linux-gnu"):
        assert not (stdlib / skipped).exists(), skipped
    assert (stdlib / "__pycache__").is_dir()
    assert (stdlib / "lib-dynload").is_dir()
    assert os.readlink(py_rootfs / "usr/bin/python3") == "python3.11"


def test_python_tree_is_visible_inside(rt, workdir):
    data = workdir / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "in.txt").write_text("from the tree\n")
    r = workdir / "r"
    res = build(rt, "--from-host", PY, "--tree", data, "-o", r)
    assert res.rc == 0, res
    b = make_bundle(rt, workdir, r, [PY, "-c", f"print(open('{data}/sub/in.txt').read(), end='')"])
    res = rt.run(rt.new_id(), b)
    assert (res.rc, res.out) == (0, "from the tree\n"), res


def test_tree_verbatim_on_one_filesystem(rt, harness, workdir):
    t = workdir / "tree"
    (t / "sub").mkdir(parents=True)
    (t / "sub" / "a.txt").write_text("A")
    os.chmod(t / "sub" / "a.txt", 0o640)
    os.symlink("sub/a.txt", t / "rel")
    os.symlink("/nonexistent/comet", t / "dangling")
    os.mkfifo(t / "fifo")
    mnt = mount_tmpfs(harness, t / "mnt", "1m")
    (mnt / "other-fs.txt").write_text("not copied")
    r = workdir / "r"
    res = build(rt, "--from-host", "true", "--tree", t, "-o", r)
    assert res.rc == 0, res
    inside = r / str(t).lstrip("/")
    assert (inside / "sub/a.txt").read_text() == "A"
    assert os.stat(inside / "sub/a.txt").st_mode & 0o7777 == 0o640
    assert os.readlink(inside / "rel") == "sub/a.txt"
    assert os.readlink(inside / "dangling") == "/nonexistent/comet"
    assert not os.path.lexists(inside / "fifo")
    assert (inside / "mnt").is_dir() and os.listdir(inside / "mnt") == []


# ---- true -------------------------------------------------------------------------

def test_true_rootfs_is_minimal_and_runs(rt, workdir):
    r = workdir / "true-rootfs"
    res = build(rt, "--from-host", "true", "-o", r)
    assert (res.rc, res.out, res.err) == (0, "", ""), res
    assert regular_files(r) == {
        "/usr/bin/true", "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/etc/passwd", "/etc/group", "/etc/hosts",
        "/etc/resolv.conf", "/etc/ld.so.cache"}
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64")):
        assert os.readlink(r / link) == target
    assert (r / "etc/passwd").read_text() == ("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                                              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    assert (r / "etc/group").read_text() == "root:x:0:\nnogroup:x:65534:\n"
    for d in ("proc", "dev", "sys", "tmp", "workdir", "etc"):
        st = os.lstat(r / d)
        assert (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid) == ("0o755", 0, 0), d
    for args in (["/bin/true"], ["/usr/bin/true"]):  # both spellings (merged /usr)
        b = make_bundle(rt, workdir, r, args, name="b" + args[0].replace("/", "-"))
        res = rt.run(rt.new_id(), b)
        assert res.rc == 0, res
    b = make_bundle(rt, workdir, r, ["/usr/bin/false"], name="b-false")
    res = rt.run(rt.new_id(), b)
    assert_one_line_error(res, "/usr/bin/false", any_of=("no such file", "ENOENT"))


def test_verbose_lists_what_was_added(rt, workdir):
    res = build(rt, "--from-host", "true", "-o", workdir / "r", "--verbose")
    assert res.rc == 0 and res.err == "", res
    lines = res.out.splitlines()
    assert "file /usr/bin/true" in lines
    assert "link /lib64 -> usr/lib64" in lines
    assert "link /usr/lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" in lines
    assert "dir /workdir" in lines
    assert lines == sorted(lines, key=lambda l: l.split(" ")[1])


def test_help_tells_the_truth(rt):
    res = rt("rootfs", "--help")
    assert res.rc == 0
    for flag in ("--from-host", "-o,--output", "--tree", "--copy", "--force", "--verbose"):
        assert flag in res.out, flag
    assert "hard links" in res.out


# ---- errors ------------------------------------------------------------------------

def test_missing_binary(rt, workdir):
    res = build(rt, "--from-host", "true", "comet-no-such-binary", "-o", workdir / "r")
    msg = assert_one_line_error(res)
    assert msg == "rootfs: comet-no-such-binary: not found in PATH"
    assert res.rc == 1
    res = build(rt, "--from-host", "/nonexistent/bin/x", "-o", workdir / "r")
    assert_one_line_error(res, "/nonexistent/bin/x", "ENOENT")
    assert not (workdir / "r").exists()
    assert not [n for n in os.listdir(workdir) if ".tmp-" in n]


def test_usage_errors_exit_1(rt, workdir):
    for args in (["--from-host", "true"], ["-o", str(workdir / "r")], ["--bogus"]):
        res = build(rt, *args)
        assert res.rc == 1, res
        assert_one_line_error(res)
    assert not (workdir / "r").exists()


def test_non_elf_refused(rt, workdir):
    script = workdir / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    text = workdir / "notes.txt"
    text.write_text("hello\n")
    res = build(rt, "--from-host", script, "-o", workdir / "r")
    assert assert_one_line_error(res) == f"rootfs: {script}: a script, not an ELF file (add its interpreter instead)"
    res = build(rt, "--from-host", text, "-o", workdir / "r")
    assert assert_one_line_error(res) == f"rootfs: {text}: not an ELF file"
    res = build(rt, "--from-host", workdir, "-o", workdir / "r")
    assert_one_line_error(res, "not a regular file")
    assert not (workdir / "r").exists()
    assert not [n for n in os.listdir(workdir) if ".tmp-" in n]


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_runpath_origin_and_missing_library(rt, workdir):
    app = workdir / "app"
    (app / "bin").mkdir(parents=True)
    (app / "lib").mkdir()
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcomethello.so.1", "-o",
                    str(app / "lib/libcomethello.so.1"), "-x", "c", "-"],
                   input='#include <stdio.h>\nvoid hello(void){puts("hello from the library");}\n',
                   text=True, check=True, timeout=60, capture_output=True)
    subprocess.run(["cc", "-o", str(app / "bin/hello"), "-x", "c", "-", "-x", "none",
                    str(app / "lib/libcomethello.so.1"),
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"],
                   input="void hello(void);\nint main(void){hello();return 0;}\n",
                   text=True, check=True, timeout=60, capture_output=True)
    r = workdir / "r"
    res = build(rt, "--from-host", app / "bin/hello", "-o", r)
    assert res.rc == 0, res
    assert (r / str(app / "lib/libcomethello.so.1").lstrip("/")).is_file()
    b = make_bundle(rt, workdir, r, [str(app / "bin/hello")])
    res = rt.run(rt.new_id(), b)
    assert (res.rc, res.out) == (0, "hello from the library\n"), res

    os.unlink(app / "lib/libcomethello.so.1")
    before = sorted(os.listdir(workdir))
    res = build(rt, "--from-host", app / "bin/hello", "-o", workdir / "r2")
    msg = assert_one_line_error(res)
    assert msg == (f"rootfs: libcomethello.so.1, needed by {app}/bin/hello, not found (searched its "
                   "RPATH/RUNPATH, /etc/ld.so.conf and the default library directories)")
    after = sorted(n for n in os.listdir(workdir) if not n.startswith("call"))
    assert after == [n for n in before if not n.startswith("call")]


def test_existing_dir_rules(rt, workdir):
    r = workdir / "r"
    r.mkdir()
    res = build(rt, "--from-host", "true", "-o", r)  # empty: fine
    assert res.rc == 0, res
    (r / "mine").write_text("keep me")
    res = build(rt, "--from-host", "true", "-o", r)
    assert assert_one_line_error(res) == f"rootfs: {r} exists and is not empty (--force replaces it)"
    assert (r / "mine").read_text() == "keep me"
    res = build(rt, "--from-host", "true", "-o", r, "--force")
    assert res.rc == 0, res
    assert not (r / "mine").exists() and (r / "usr/bin/true").is_file()
    f = workdir / "file"
    f.write_text("x")
    res = build(rt, "--from-host", "true", "-o", f)
    assert_one_line_error(res, "exists and is not a directory")
    assert not [n for n in os.listdir(workdir) if ".tmp-" in n]


def test_failure_midway_leaves_nothing(rt, harness, workdir):
    small = mount_tmpfs(harness, workdir / "small", "1m")  # libc alone is 1.9 MB
    res = build(rt, "--from-host", "true", "-o", small / "r")
    assert_one_line_error(res, "ENOSPC")
    assert os.listdir(small) == []
    st = os.statvfs(small)
    assert st.f_bfree == st.f_blocks, "space still used on the tmpfs"


# ---- hard links and copies -------------------------------------------------------------

def test_links_on_same_fs_copies_elsewhere(rt, harness, workdir):
    host = os.stat("/usr/bin/true")
    same = workdir / "same"
    assert build(rt, "--from-host", "true", "-o", same).rc == 0
    if os.stat(workdir).st_dev == host.st_dev:
        assert os.stat(same / "usr/bin/true").st_ino == host.st_ino
    forced = workdir / "forced"
    assert build(rt, "--from-host", "true", "-o", forced, "--copy").rc == 0
    other = mount_tmpfs(harness, workdir / "other", "16m")
    assert build(rt, "--from-host", "true", "-o", other / "r").rc == 0
    for r in (forced, other / "r"):
        st = os.stat(r / "usr/bin/true")
        assert st.st_ino != host.st_ino or st.st_dev != host.st_dev
        assert (st.st_size, st.st_mode, st.st_mtime_ns, st.st_uid) == \
            (host.st_size, host.st_mode, host.st_mtime_ns, host.st_uid)
        assert (r / "usr/bin/true").read_bytes() == Path("/usr/bin/true").read_bytes()
    b = make_bundle(rt, workdir, other / "r", ["/bin/true"])
    assert rt.run(rt.new_id(), b).rc == 0


# ---- timing ---------------------------------------------------------------------------------

def test_time_python_rootfs_build(rt, workdir):
    """Prints the median wall time of `rootfs --from-host /usr/bin/python3`
    (hard links, page cache warm) and with --copy; run with -s to see it."""
    times = {"link": [], "copy": []}
    for i in range(5):
        for mode in times:
            out = workdir / f"t-{mode}-{i}"
            extra = ["--copy"] if mode == "copy" else []
            t = time.perf_counter()
            res = build(rt, "--from-host", PY, "-o", out, *extra)
            times[mode].append((time.perf_counter() - t) * 1000)
            assert res.rc == 0, res
            shutil.rmtree(out)
    print("\nrootfs --from-host python3: " +
          ", ".join(f"{m} median {statistics.median(v):.1f} ms (min {min(v):.1f})" for m, v in times.items()))
