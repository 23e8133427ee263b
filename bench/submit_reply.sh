#!/bin/bash
# The reply time of one large submission (docs/benchmarks.md, "Drover vs Slurm on one machine",
# the B2 note): a fresh `drover server` with the B2 case's four local nodes (n1..n4, 16 CPUs,
# 64,000 MiB, 4 H100 each, declared), then one `drover submit` of a file of N documents, each a
# trivial job (1 CPU, 100 MiB, `true`). Prints when the server had created the last job
# (its created_at), when the reply came (the submitting process exited), and when every job had
# finished (GET /v1/jobs?active=1 empty, polled every 250 ms), all from just before
# `drover submit` started. Needs curl, jq and bc; no root, no Slurm.
#
#   bench/submit_reply.sh [N] [RUNS]      e.g. DROVER=build-release/drover bench/submit_reply.sh 1000 3
#
# Environment: DROVER (default build-release/drover), PORT (default 8591), WORK (default a new
# directory under /tmp, removed at the end).
set -euo pipefail
N=${1:-1000}
RUNS=${2:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
PORT=${PORT:-8591}
URL=http://127.0.0.1:$PORT
WORK=${WORK:-$(mktemp -d /tmp/drover-submit-reply.XXXXXX)}
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
trap 'stop_server; rm -rf "$WORK"' EXIT

mkdir -p "$WORK"
for n in 1 2 3 4; do
  printf '  - {name: n%s, cpu: "16", memory: 64000Mi, gpus: 4xH100-80GB}\n' "$n"
done | sed '1i nodes:' >"$WORK/nodes.yaml"
for i in $(seq 1 "$N"); do
  [ "$i" = 1 ] || echo "---"
  printf 'kind: Job\nname: j%s\nresources: {cpu: 1, memory: 100Mi}\ncommand: ["true"]\n' "$i"
done >"$WORK/jobs.yaml"

echo "N=$N; $DROVER; $(nproc) cores"
for run in $(seq 1 "$RUNS"); do
  dir=$WORK/run$run
  mkdir -p "$dir"
  start_server "$dir" "$PORT" --nodes "$WORK/nodes.yaml"
  load=$(cut -d' ' -f1 /proc/loadavg)
  start=$EPOCHREALTIME
  "$DROVER" --server "$URL" submit "$WORK/jobs.yaml" >"$dir/submit.out"
  replied=$EPOCHREALTIME
  [ "$(wc -l <"$dir/submit.out")" = "$N" ] || { echo "the reply did not list $N jobs" >&2; exit 1; }
  created=$(curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL/v1/jobs?limit=1" | jq '.jobs[0].created_at')
  while [ "$(curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL/v1/jobs?active=1&limit=1" | jq '.jobs | length')" != 0 ]; do
    sleep 0.25
  done
  done_at=$EPOCHREALTIME
  printf 'run %s (load %s): last job created %.2f s, reply %.2f s, all finished %.1f s\n' "$run" \
    "$load" "$(echo "$created / 1000 - $start" | bc -l)" "$(echo "$replied - $start" | bc -l)" \
    "$(echo "$done_at - $start" | bc -l)"
  stop_server
done
