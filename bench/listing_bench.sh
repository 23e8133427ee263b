#!/bin/bash
# Listing at scale (docs/benchmarks.md, "Listing 10,000 jobs on 1,000 nodes"): a fresh
# `drover server` with 1,000 declared nodes (8 CPUs, 32 GiB, 8 H100 each, from a node file) and
# 10,000 jobs submitted in batches of 1,000 with --hold-infeasible (each asks for 64 CPUs, more
# than any node has, so all of them stay queued and every scheduling cycle judges them all: the
# heaviest queue for a listing to wait behind). Then each command runs RUNS times, end to end
# (the CLI process from start to exit, output to /dev/null), and the median and the slowest are
# printed in milliseconds:
#   ls              every job (the CLI pages through them where the server pages)
#   ls --limit 50   the newest 50
#   ls --pending    every waiting job with its queue position (skipped where unsupported)
#   nodes           1,000 nodes
#   get ID          a job submitted alone (its transitions come from the store), and a job of a
#                   1,000-job batch (`get` also shows the batch's run: 1,000 jobs as a tree)
#   explain ID      one job's verdict
#   GET /v1/gpus    the dashboard's GPU map: 8,000 GPUs (curl, the body to /dev/null), and
#   GET /v1/nodes   beside it: the same nodes as a JSON tree
# Needs curl; no root.
#
#   bench/listing_bench.sh [RUNS]        e.g. DROVER=build/drover bench/listing_bench.sh 5
#
# Environment: DROVER (default build-release/drover), JOBS (10000), NODES (1000), PORT (default
# 18650), WORK (default a new directory under /tmp, removed at the end).
set -euo pipefail
RUNS=${1:-5}
JOBS=${JOBS:-10000}
NODES=${NODES:-1000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
PORT=${PORT:-18650}
URL=http://127.0.0.1:$PORT
WORK=${WORK:-$(mktemp -d /tmp/drover-listing.XXXXXX)}
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
trap 'stop_server; rm -rf "$WORK"' EXIT

mkdir -p "$WORK"
{
  echo "nodes:"
  for n in $(seq 1 "$NODES"); do
    printf '  - {name: n%s, cpu: "8", memory: 32Gi, gpus: 8xH100-80GB}\n' "$n"
  done
} >"$WORK/nodes.yaml"
BATCH=1000
for b in $(seq 0 $(((JOBS - 1) / BATCH))); do
  first=$((b * BATCH + 1))
  last=$(((b + 1) * BATCH))
  [ "$last" -le "$JOBS" ] || last=$JOBS
  for i in $(seq "$first" "$last"); do
    [ "$i" = "$first" ] || echo "---"
    printf 'kind: Job\nname: j%s\nresources: {cpu: 64, memory: 100Mi, gpus: 1}\ncommand: ["true"]\n' "$i"
  done >"$WORK/jobs-$b.yaml"
done

start_server "$WORK" "$PORT" --nodes "$WORK/nodes.yaml"
for f in "$WORK"/jobs-*.yaml; do
  "$DROVER" --server "$URL" submit --hold-infeasible "$f" >/dev/null
done
# One job submitted on its own: `get` of a job of a batch also shows the batch's run (its 1,000
# jobs as a tree), `get` of this one only the job.
printf 'kind: Job\nname: alone\nresources: {cpu: 64, memory: 100Mi, gpus: 1}\ncommand: ["true"]\n' \
  >"$WORK/alone.yaml"
"$DROVER" --server "$URL" submit --hold-infeasible "$WORK/alone.yaml" >/dev/null
sleep 3  # a few scheduling cycles over the full queue
echo "$JOBS jobs, $NODES nodes; $DROVER; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"

# Runs `drover ARGS...` RUNS times; prints the median and the slowest wall time in ms.
measure() {
  local label=$1
  shift
  local times=()
  for _ in $(seq 1 "$RUNS"); do
    local start=$EPOCHREALTIME
    "$DROVER" --server "$URL" "$@" >/dev/null
    local end=$EPOCHREALTIME
    times+=("$(echo "($end - $start) * 1000" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v label="$label" '
    { t[NR] = $1 } END { printf "%-18s median %6.0f ms  max %6.0f ms\n", label, t[int((NR + 1) / 2)], t[NR] }'
}

# GETs PATH with curl RUNS times; prints the median and the slowest wall time in ms.
measure_get() {
  local path=$1
  local times=()
  for _ in $(seq 1 "$RUNS"); do
    times+=("$(curl -sf -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $DROVER_TOKEN" \
      "$URL$path" | awk '{ print $1 * 1000 }')")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v label="GET $path" '
    { t[NR] = $1 } END { printf "%-18s median %6.0f ms  max %6.0f ms\n", label, t[int((NR + 1) / 2)], t[NR] }'
}

ID=$((JOBS / 2))
ALONE=$((JOBS + 1))
measure "ls" ls
measure "ls --limit 50" ls --limit 50
if "$DROVER" ls --help | grep -q -- --pending; then measure "ls --pending" ls --pending; fi
measure "nodes" nodes
measure "get $ALONE" get "$ALONE"
measure "get $ID (run)" get "$ID"
measure "explain $ID" explain "$ID"
measure_get /v1/gpus
measure_get /v1/nodes
