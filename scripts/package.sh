#!/usr/bin/env bash
# Builds the Debian package and tries it (docs/install.md; the "package"
# stage of scripts/test.sh, after the release build):
#   1. `cpack -G DEB` in build/ (Depends from dpkg-shlibdeps);
#   2. every shared object the packaged binary loads (ldd) or names for
#      dlopen (a "libX.so.N" string: libnftables) belongs to a package that
#      Depends names, and each of those is installed here;
#   3. under CI (CI=true), the package is installed with `dpkg -i`, tried,
#      and purged again when the stage ends (the trap; nothing of it
#      outlives the stage), unless a comet-runtime package is installed
#      here already, which is then left alone; otherwise (a developer's
#      run on a shared machine: worktrees, tests that look for
#      `comet-runtime` only where they are told, which an installed
#      /usr/bin/comet-runtime on PATH would confuse) it is unpacked into a
#      temporary root with `dpkg -x`; step 2 is the part of `dpkg -i` that
#      unpacking skips;
#   3b. `cmake --install --prefix` gives the same files as the package;
#   4. one smoke test from the unpacked binary: `pack run` of a tiny pack
#      whose agent writes its output and tries to write /etc/smoke. The run
#      must exit 3 with the output collected and an fs.write event for
#      /etc/smoke: the event comes from the embedded BPF program, so the
#      installed binary has what it needs.
# Usage: scripts/package.sh [BUILD_DIR]   (default: build/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}

rm -f "$build"/comet-runtime_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/comet-runtime_*.deb)
echo "package: $deb"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"

tmp=$(mktemp -d /tmp/comet-package.XXXXXX)
installed=0
cleanup() {
  if ((installed)); then dpkg -P comet-runtime >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
dpkg -x "$deb" "$tmp/root"
bin="$tmp/root/usr/bin/comet-runtime"
test -x "$bin"
how="unpacked"
if [[ ${CI:-} == true ]] &&
  [[ $(dpkg-query -W -f='${Status}' comet-runtime 2>/dev/null) != *installed* ]]; then
  installed=1
  dpkg -i "$deb" >/dev/null
  [[ $(dpkg-query -W -f='${Status}' comet-runtime) == "install ok installed" ]] ||
    { echo "comet: dpkg -i did not install $deb" >&2; exit 1; }
  bin=/usr/bin/comet-runtime
  how="installed (dpkg -i; purged at the end of the stage)"
fi

# 2. the Depends cover what the binary loads
dep_names=$(echo "$depends" | tr ',|' '\n\n' | sed 's/(.*)//; s/ //g' | sort -u)
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
for soname in $(strings -a "$bin" | grep -E '^lib[A-Za-z0-9_+.-]+\.so\.[0-9]+$' | sort -u); do
  # No early exit in a pipeline: under pipefail, ldconfig's SIGPIPE (141)
  # would fail the stage (it did once).
  path=$(ldconfig -p | awk -v s="$soname" '!f && $1 == s && /x86-64|x86_64/ {print $NF; f = 1}')
  [[ -n $path ]] || { echo "comet: the binary names $soname, which is not on this machine" >&2; exit 1; }
  libs+=$'\n'"$path"
done
for lib in $libs; do
  owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)
  pkg=${owner%%:*}
  if [[ -z $pkg ]] || ! grep -qx "$pkg" <<<"$dep_names"; then
    echo "comet: $lib (package '${pkg:-none}') is loaded by the binary but not in Depends: $depends" >&2
    exit 1
  fi
done
for p in $dep_names; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] ||
    { echo "comet: Depends names $p, which is not installed here" >&2; exit 1; }
done

# `cmake --install` into a prefix holds the same files as the package
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
diff <(cd "$tmp/prefix" && find . -type f | sort) <(cd "$tmp/root/usr" && find . -type f | sort) ||
  { echo "comet: cmake --install and the package differ" >&2; exit 1; }
"$tmp/prefix/bin/comet-runtime" --version >/dev/null

# 4. smoke test from the unpacked binary
"$bin" --version >/dev/null
mkdir -p "$tmp/pack"
cat >"$tmp/pack/soyapack.yaml" <<'EOF'
apiVersion: soyapack/v0
name: package-smoke
version: 0.0.1
runtime:
  interpreter: /usr/bin/python3
  entrypoint: agent.py
capabilities:
  egress: []
  fs:
    read: [/workdir]
    write: [/workdir/out]
  determinism_tier: read-only
EOF
cat >"$tmp/pack/agent.py" <<'EOF'
with open("/workdir/out/ok.txt", "w") as f:
    f.write("ok\n")
try:
    open("/etc/smoke", "w")
except OSError as e:
    print("refused:", e.strerror)
EOF
rc=0
COMET_FLAGS_DIR="$tmp/flags" COMET_ROOTFS_CACHE="$tmp/rootfs" \
  "$bin" --root "$tmp/state" pack run "$tmp/pack" --no-cache --output "$tmp/out" \
  --events "$tmp/events.jsonl" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
fail() {
  echo "comet: package smoke test: $1" >&2
  cat "$tmp/stdout" "$tmp/stderr" >&2
  exit 1
}
((rc == 3)) || fail "pack run exited $rc, not 3 (a violation)"
grep -qx "ok" "$tmp/out/ok.txt" || fail "no /workdir/out/ok.txt collected"
grep -q '"surface":"fs.write"' "$tmp/events.jsonl" && grep -q '/etc/smoke' "$tmp/events.jsonl" ||
  fail "no fs.write event for /etc/smoke (the fs-events BPF program)"
! grep -q "events are off" "$tmp/stderr" || fail "fs events are off"
echo "package: smoke test passed (pack run from the $how /usr/bin/comet-runtime)"
