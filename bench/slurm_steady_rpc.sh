#!/bin/bash
# What Drover asks of slurmctld while N of its jobs run on Slurm and nothing changes (issue 24:
# the commands Drover sends to slurmctld at 1,000 running jobs; docs/benchmarks.md, "One job's
# submit-to-start, split at slurmctld; listings only when a job changed"). Starts the benchmark's
# Slurm cluster (tests/slurm/slurm-cluster.sh in /tmp/drover-slurm-bench on port 7917, as
# bench/slurm_side_by_side.sh, its nodes declaring enough CPUs for N one-CPU jobs at once) and a
# drover server whose queue hpc hands its jobs to Slurm, submits one file of N jobs that sleep
# for an hour, waits until Slurm runs all of them and then SETTLE seconds more (the executor's
# refresh backs off to its longest interval while nothing changes), and then for SECONDS counts
# slurmctld's RPCs by type (sdiag, reset at the start) and the CPU of the server with its
# children and of its Slurm submission helper. Prints those, then cancels everything and stops.
#
#   bench/slurm_steady_rpc.sh [N] [SECONDS]      e.g. DROVER=build/drover bench/slurm_steady_rpc.sh 1000 60
#
# Environment: DROVER (default build-release/drover), WORK (default /dev/shm/slurm-steady-rpc;
# emptied first), API_PORT (default 8492), SETTLE (default 10). Run as root, not beside the Slurm
# test suite.
set -euo pipefail
N=${1:-1000}
WINDOW=${2:-60}
SETTLE=${SETTLE:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
WORK=${WORK:-/dev/shm/slurm-steady-rpc}
API_PORT=${API_PORT:-8492}
URL=http://127.0.0.1:$API_PORT
export DROVER_SLURM_DIR=${DROVER_SLURM_DIR:-/tmp/drover-slurm-bench} DROVER_SLURM_PORT=${DROVER_SLURM_PORT:-7917}
export DROVER_SLURM_CPUS=$(((N + 3) / 4 > 16 ? (N + 3) / 4 : 16))
export SLURM_CONF=$DROVER_SLURM_DIR/slurm.conf
CLUSTER=$ROOT/tests/slurm/slurm-cluster.sh
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
[ "$(id -u)" = 0 ] || { echo "run as root (slurm-cluster.sh starts munged, slurmctld, slurmd)" >&2; exit 1; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
cleanup() {
  scancel --quiet --name=bench-steady 2>/dev/null || true
  stop_server
  "$CLUSTER" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

# CPU ticks (1/100 s here) of a process: with its reaped children when $2 is "children".
ticks() {
  awk -v all="${2:-}" '{print $14 + $15 + (all == "children" ? $16 + $17 : 0)}' "/proc/$1/stat"
}

rm -rf "$WORK"
mkdir -p "$WORK"
log "starting the Slurm cluster ($DROVER_SLURM_CPUS CPUs a node)"
"$CLUSTER" start
cat >"$WORK/policy.yaml" <<'EOF'
kind: Policy
queues:
  - name: hpc
    executor: {kind: slurm, partition: debug}
EOF
start_server "$WORK" "$API_PORT" --gpus 0 --policy "$WORK/policy.yaml"
for i in $(seq 1 "$N"); do
  [ "$i" = 1 ] || echo "---"
  printf 'kind: Job\nname: bench-steady-%s\nqueue: hpc\nresources: {cpu: 1, memory: 100Mi}\ncommand: [sleep, "3600"]\n' "$i"
done >"$WORK/jobs.yaml"
log "submitting $N jobs"
"$DROVER" --server "$URL" submit "$WORK/jobs.yaml" >/dev/null
deadline=$((SECONDS + 600))
until [ "$(squeue -h -t R -o %i | wc -l)" -ge "$N" ]; do
  [ $SECONDS -lt $deadline ] || { log "not all $N running after 600 s"; exit 1; }
  sleep 1
done
log "all $N running in Slurm; settling for ${SETTLE}s"
sleep "$SETTLE"
helper=$(pgrep -P "$SERVER_PID" -f drover-slurm-submit | head -1 || true)
sdiag --reset >/dev/null
server_before=$(ticks "$SERVER_PID" children)
helper_before=$([ -z "$helper" ] || ticks "$helper")
log "counting for ${WINDOW}s"
sleep "$WINDOW"
server_after=$(ticks "$SERVER_PID" children)
helper_after=$([ -z "$helper" ] || ticks "$helper")
echo "$N jobs running on Slurm, ${WINDOW} s; slurmctld's RPCs (sdiag) by type in that time:"
sdiag | sed -n '/Remote Procedure Call statistics by message type/,/^$/p' | tail -n +2
echo "drover server with its children: $(((server_after - server_before) * 10)) ms of CPU"
[ -z "$helper" ] || echo "its Slurm submission helper: $(((helper_after - helper_before) * 10)) ms of CPU"
echo "Drover's jobs running: $(curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL/v1/jobs?state=running&limit=$N" | jq '.jobs | length')"
