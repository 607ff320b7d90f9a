#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz) of the sanitizer build (build-san/:
# clang, ASan+UBSan, the libraries with -fsanitize=fuzzer-no-link; built by
# scripts/build-san.sh unless already there).
#
# First every target replays its checked-in seed corpus
# (tests/fuzz/corpus/<target>) once; then all targets fuzz at the same time,
# on a copy of their seeds (the seeds are never modified), each for
#   SECONDS x targets / cores
# of wall time, so that the fuzzing CPU time is what SECONDS per target one
# after another would give (default 25 s per target: 6 x 25 s is the
# 150 s of CPU that 5 x 30 s were before auto_allow_shell was added).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Prints one line per target:
#   <target>: <N> execs, <M> corpus, <K> crashes [<artifact path>...]
# and exits non-zero when any target crashed (a sanitizer report, a failed
# invariant, a leak, a timeout or an out-of-memory), leaving the reproducer
# in build-san/fuzz-work/<target>/artifacts/. Reproduce one with
#   build-san/tests/fuzz/fuzz_<target> <artifact>
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-25}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(oci_config soyapack_manifest profile_merge seccomp_compile dns_message wire
  auto_allow_shell)
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: $0 [SECONDS] [TARGET...]" >&2
  exit 2
fi

build="$top/build-san"
mkdir -p "$build"
log="$build/fuzz-build.log"
bins=()
for t in "${targets[@]}"; do bins+=("fuzz_$t"); done
bash "$top/scripts/build-san.sh" "${bins[@]}" >"$log" 2>&1 || {
  tail -50 "$log" >&2
  echo "fuzz: build failed (full log: $log)" >&2
  exit 1
}
rm -f "$log"

# Leaks count as crashes; a UBSan report aborts (the build already uses
# -fno-sanitize-recover=undefined).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

cores=$(nproc)
wall=$(((seconds * ${#targets[@]} + cores - 1) / cores))
((wall >= seconds)) || wall=$seconds

failed=0
pids=()
ran=()
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
  # 1. the checked-in inputs, each once: the seed corpus, then the
  #    reproducers of fixed bugs (tests/fuzz/known; any input must pass any
  #    target), so that a regression fails before any new input is tried
  if ! "$bin" -runs=0 -timeout=25 -rss_limit_mb=2048 -artifact_prefix="$work/artifacts/" \
    "$seeds" >"$work/replay.log" 2>&1 ||
    ! "$bin" -timeout=25 -rss_limit_mb=2048 "$top"/tests/fuzz/known/* >>"$work/replay.log" 2>&1; then
    echo "$t: a checked-in input crashes (log: $work/replay.log)"
    failed=1
    continue
  fi
  cp "$seeds"/* "$work/corpus/"
  # 2. fuzzing, all targets at once
  #    (the status is written whatever it is: errexit would end the
  #    subshell before it, and the target would go unreported)
  (
    rc=0
    "$bin" -max_total_time="$wall" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1 || rc=$?
    echo "$rc" >"$work/rc"
  ) &
  pids+=($!)
  ran+=("$t")
done
((${#pids[@]})) && { wait "${pids[@]}" || true; }

for t in "${ran[@]}"; do
  work="$build/fuzz-work/$t"
  rc=$(cat "$work/rc" 2>/dev/null || echo "no status")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  corpus=$(find "$work/corpus" -type f | wc -l)
  mapfile -t crashes < <(find "$work/artifacts" -type f | sort)
  n=${#crashes[@]}
  if [[ $rc != 0 ]] && ((n == 0)); then
    n=1
    crashes=("(exit $rc, no artifact; see $work/log)")
  fi
  line="$t: ${execs:-0} execs in ${wall} s beside $((${#targets[@]} - 1)) others, $corpus corpus, $n crashes"
  if ((n)); then
    failed=1
    line+=" ${crashes[*]} (log: $work/log)"
  fi
  echo "$line"
done
exit "$failed"
