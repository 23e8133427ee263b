#!/bin/bash
# What N trivial jobs cost the whole machine (docs/benchmarks.md, "A spawner instead of an exec
# per supervisor"): one file of N jobs (1 CPU, 100 MiB, `bash -c 'echo ...'`) submitted to a
# fresh `drover server` with four declared local nodes of 16 CPUs; from the submission until
# the server lists no active job, the wall time and the CPU of all cores (from /proc/stat), so
# the server, the supervisors, the payloads and this script's polling together.
#
#   bench/trivial_jobs_cpu.sh DROVER [N]      e.g. bench/trivial_jobs_cpu.sh build/drover 300
#
# Environment: BASE, the folder for the server's data (default /tmp; /dev/shm keeps the disk
# out, see the page), API_PORT (default 18630), PERF=FILE to `perf record -a -g` the same span.
# Needs curl and jq, as bench/slurm_side_by_side.sh does.
set -euo pipefail
DROVER=${1:?usage: bench/trivial_jobs_cpu.sh DROVER [N]}
N=${2:-300}
PORT=${API_PORT:-18630}
URL=http://127.0.0.1:$PORT
dir=$(mktemp -d "${BASE:-/tmp}/trivial-jobs.XXXX")
SERVER_PID=
cleanup() {
  [ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true; }
  rm -rf "$dir"
}
trap cleanup EXIT

for n in 1 2 3 4; do
  printf '  - {name: n%s, cpu: "16", memory: 64000Mi, gpus: 4xH100-80GB}\n' "$n"
done | sed '1i nodes:' >"$dir/nodes.yaml"
"$DROVER" server --data "$dir/data" --listen "127.0.0.1:$PORT" --nodes "$dir/nodes.yaml" \
  --ready-file "$dir/ready" >"$dir/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do [ -s "$dir/ready" ] && break; sleep 0.1; done
[ -s "$dir/ready" ] || { echo "drover server did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
export DROVER_TOKEN=$(cat "$dir/data/admin.token")
for i in $(seq 1 "$N"); do  # names are unique within a file
  [ "$i" = 1 ] || echo ---
  printf 'kind: Job\nname: b-%s\nresources: {cpu: 1, memory: 100Mi}\ncommand: [bash, -c, "echo $DROVER_JOB_ID >> %s/stamps"]\n' "$i" "$dir"
done >"$dir/jobs.yaml"
sleep 1  # let the server's start-up settle

read -r _ u1 n1 s1 i1 _ </proc/stat
t1=$EPOCHREALTIME
PERF_PID=
[ -z "${PERF:-}" ] || { perf record -a -g -o "$PERF" -- sleep 600 >/dev/null 2>&1 & PERF_PID=$!; }
"$DROVER" --server "$URL" submit "$dir/jobs.yaml" >/dev/null
while [ "$(curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL/v1/jobs?active=1&limit=1" | jq '.jobs | length')" != 0 ]; do
  sleep 0.05
done
t2=$EPOCHREALTIME
read -r _ u2 n2 s2 i2 _ </proc/stat
[ -z "$PERF_PID" ] || { kill -INT "$PERF_PID"; wait "$PERF_PID" || true; }

awk -v t1="$t1" -v t2="$t2" -v busy=$(((u2 - u1) + (n2 - n1) + (s2 - s1))) -v idle=$((i2 - i1)) \
  -v user=$((u2 - u1)) -v sys=$((s2 - s1)) -v n="$N" -v ran="$(wc -l <"$dir/stamps")" 'BEGIN {
  w = t2 - t1
  printf "%d jobs (%d ran): %.2f s wall, %.2f s CPU busy (%.2f cores; user %.2f, system %.2f), idle %.2f s, %.1f ms of CPU a job\n",
    n, ran, w, busy / 100, busy / 100 / w, user / 100, sys / 100, idle / 100, busy * 10 / n
}'
