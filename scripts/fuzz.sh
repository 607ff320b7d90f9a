#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) into
# build-fuzz/ and runs each for SECONDS (default 30) on a copy of its seed
# corpus (tests/fuzz/corpus/<target>; the seeds are never modified).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Prints one line per target:
#   <target>: <N> execs, <M> corpus, <K> crashes [<artifact path>...]
# and exits non-zero when any target crashed (a sanitizer report, a failed
# invariant, a leak, a timeout or an out-of-memory), leaving the reproducer
# in build-fuzz/fuzz-work/<target>/artifacts/. Reproduce one with
#   build-fuzz/tests/fuzz/fuzz_<target> <artifact>
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(oci_config soyapack_manifest profile_merge seccomp_compile dns_message)
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: $0 [SECONDS] [TARGET...]" >&2
  exit 2
fi

bash "$top/scripts/deps.sh"
build="$top/build-fuzz"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCOMET_FUZZ=ON -DCOMET_SANITIZE=ON -DCOMET_WERROR=OFF >/dev/null
cmake --build "$build" --target comet_fuzz -j"$(nproc)" >"$build/fuzz-build.log" 2>&1 || {
  tail -50 "$build/fuzz-build.log" >&2
  echo "fuzz: build failed (full log: $build/fuzz-build.log)" >&2
  exit 1
}

# Leaks count as crashes; a UBSan report aborts (the build already uses
# -fno-sanitize-recover=undefined).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  seeds="$top/tests/fuzz/corpus/$t"
  work="$build/fuzz-work/$t"
  if [[ ! -x $bin || ! -d $seeds ]]; then
    echo "$t: unknown target" >&2
    failed=1
    continue
  fi
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$seeds"/* "$work/corpus/"
  rc=0
  "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  corpus=$(find "$work/corpus" -type f | wc -l)
  mapfile -t crashes < <(find "$work/artifacts" -type f | sort)
  n=${#crashes[@]}
  if ((rc != 0 && n == 0)); then
    n=1
    crashes=("(exit $rc, no artifact; see $work/log)")
  fi
  line="$t: ${execs:-0} execs, $corpus corpus, $n crashes"
  if ((n)); then
    failed=1
    line+=" ${crashes[*]} (log: $work/log)"
  fi
  echo "$line"
done
exit "$failed"
