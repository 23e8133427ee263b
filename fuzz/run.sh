#!/usr/bin/env bash
# Runs each libFuzzer harness of the `fuzz` build for a bounded time (`make fuzz`, .ci/run).
#
#   fuzz/run.sh [TARGET...]      TARGET: spec policy node_file json_codec trace api_body (all)
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_BUILD    the build folder (default build-fuzz)
#   FUZZ_MAX_LEN  the largest input libFuzzer generates, in bytes (default 16384)
#
# Each target starts from its seed corpus fuzz/corpus/TARGET (read, never written) and the
# inputs earlier runs found, kept in FUZZ_BUILD/fuzz/work/TARGET/corpus; a crash, sanitizer
# report (ASan, UBSan), leak (LeakSanitizer) or memory blow-up (-rss_limit_mb) stops the target
# and leaves the input in FUZZ_BUILD/fuzz/work/TARGET/ (crash-*, leak-*, oom-*) with the log
# beside it. Prints one line per target: executions, seconds, corpus size, result. Exit status
# 0 when every target ran clean, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
max_len=${FUZZ_MAX_LEN:-16384}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(spec policy node_file json_codec trace api_body)

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
summary=()
for target in "${targets[@]}"; do
  binary=$build/fuzz/${target}_fuzzer
  work=$build/fuzz/work/$target
  mkdir -p "$work/corpus"
  if [ ! -x "$binary" ]; then
    echo "$binary is missing: build it with make fuzz (cmake --build --preset fuzz)" >&2
    exit 1
  fi
  echo "== $target: ${seconds}s"
  "$binary" "$work/corpus" "fuzz/corpus/$target" -max_total_time="$seconds" \
    -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/" >"$work/log" 2>&1
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/log" | tail -1)
  corpus=$(find "$work/corpus" -type f | wc -l)
  if [ $status -eq 0 ]; then
    result=clean
  else
    result="FAILED (exit $status; see $work/log)"
    failed=1
    tail -40 "$work/log"
  fi
  summary+=("$(printf '%-11s %12s executions %5ss corpus %6s  %s' "$target" "${runs:-?}" \
    "${took:-?}" "$corpus" "$result")")
done
printf '%s\n' "${summary[@]}"
exit $failed
