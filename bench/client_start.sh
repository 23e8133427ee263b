#!/bin/bash
# The client's start (docs/benchmarks.md, "The client built lean"): `drover --version`,
# `drover submit` of a one-job file and `drover get`, each run RUNS times under `perf stat`
# (CPU time and elapsed, means), against a fresh `drover server --gpus 0` on loopback; with
# BASELINE set to another build's `drover`, the same commands of both, alternating, for ROUNDS
# rounds. Needs perf (Debian's linux-perf); no root.
#
#   bench/client_start.sh                 e.g. BASELINE=/tmp/old/drover bench/client_start.sh
#
# Environment: DROVER (default build/drover), BASELINE (none), RUNS (40), ROUNDS (2), PORT
# (18656), WORK (default a new directory under /tmp, removed at the end).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build/drover}
BASELINE=${BASELINE:-}
RUNS=${RUNS:-40}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18656}
URL=http://127.0.0.1:$PORT
WORK=${WORK:-$(mktemp -d /tmp/drover-client-start.XXXXXX)}
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 1; }
trap 'stop_server; rm -rf "$WORK"' EXIT

mkdir -p "$WORK"
start_server "$WORK" "$PORT" --gpus 0
export DROVER_SERVER=$URL
printf 'kind: Job\nname: t\ncommand: ["true"]\n' >"$WORK/job.yaml"
"$DROVER" submit "$WORK/job.yaml" >/dev/null  # job 1, for `get 1`

# measure ARGS...: "CPU ms / elapsed ms", means over RUNS runs.
measure() {
  perf stat -r "$RUNS" "$@" 2>&1 >/dev/null |
    awk '/task-clock/ {cpu = $1} /elapsed/ {el = $1 * 1000} END {printf "%.1f / %.1f ms", cpu, el}'
}

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); shared objects: $DROVER $(ldd "$DROVER" | wc -l)${BASELINE:+, $BASELINE $(ldd "$BASELINE" | wc -l)}"
for round in $(seq 1 "$ROUNDS"); do
  for binary in $BASELINE "$DROVER"; do
    echo "round $round $binary:" \
      "--version $(measure "$binary" --version);" \
      "submit $(measure "$binary" submit "$WORK/job.yaml");" \
      "get $(measure "$binary" get 1)"
  done
done
