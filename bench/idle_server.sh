#!/bin/bash
# An idle server's CPU (docs/benchmarks.md, "Idle server"): a fresh `drover server --gpus 0`
# with sampling off, nothing submitted (or RUNNING jobs that only sleep), its utime + stime
# (/proc/PID/stat) over SECONDS after it is ready; with BASELINE set to another build's
# `drover`, the two alternating, for ROUNDS rounds. No root.
#
#   bench/idle_server.sh                 e.g. BASELINE=/tmp/old/drover bench/idle_server.sh
#
# Environment: DROVER (default build/drover), BASELINE (none), SECONDS_IDLE (20), ROUNDS (2),
# RUNNING (0: jobs of 10m CPU that sleep a minute past the measurement, running when it starts),
# PORT (18657), WORK (default a new directory under /tmp, removed at the end).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build/drover}
BASELINE=${BASELINE:-}
SECONDS_IDLE=${SECONDS_IDLE:-20}
ROUNDS=${ROUNDS:-2}
RUNNING=${RUNNING:-0}
PORT=${PORT:-18657}
URL=http://127.0.0.1:$PORT
WORK=${WORK:-$(mktemp -d /tmp/drover-idle-server.XXXXXX)}
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
trap 'stop_server; rm -rf "$WORK"' EXIT

# The CPU time of process PID so far, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# idle BINARY: prints "BINARY: N ms of CPU in S s (R ms per s)" for a fresh idle server.
idle() {
  local binary=$1 before after
  rm -rf "$WORK/run" && mkdir -p "$WORK/run"
  DROVER=$binary start_server "$WORK/run" "$PORT" --gpus 0 --gpu-sample-interval 0 \
    --process-sample-interval 0
  if [ "$RUNNING" -gt 0 ]; then
    for i in $(seq 1 "$RUNNING"); do
      [ "$i" = 1 ] || echo "---"
      printf 'kind: Job\nname: sleeper-%s\nresources: {cpu: 10m, memory: 16Mi}\n' "$i"
      printf 'command: [sleep, "%s"]\n' $((SECONDS_IDLE + 60))  # ends on its own after the run
    done >"$WORK/run/jobs.yaml"
    "$binary" --server "$URL" submit "$WORK/run/jobs.yaml" >/dev/null
    local deadline=$((SECONDS + 120))
    until [ "$("$binary" --server "$URL" -o json ls --limit 100000 |
      jq '[.jobs[] | select(.state == "running")] | length')" = "$RUNNING" ]; do
      [ $SECONDS -lt $deadline ] || { echo "not all $RUNNING jobs running after 120 s (each takes 10m of the node's CPU)" >&2; exit 1; }
      sleep 0.5
    done
  fi
  sleep 2  # start-up's own work done
  before=$(ticks "$SERVER_PID")
  sleep "$SECONDS_IDLE"
  after=$(ticks "$SERVER_PID")
  stop_server
  awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v s="$SECONDS_IDLE" -v b="$binary" \
    'BEGIN { ms = t * 1000 / hz; printf "%s: %.0f ms of CPU in %d s (%.2f ms per s)\n", b, ms, s, ms / s }'
}

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round"
  idle "$DROVER"
  [ -z "$BASELINE" ] || idle "$BASELINE"
done
