#!/bin/bash
# Where a `drover submit` into a Slurm queue spends its time (docs/benchmarks.md, "The client
# built lean"): on the Slurm cluster of bench/slurm_side_by_side.sh, a fresh `drover server`
# with queues local and hpc (executor: slurm). Six submissions per queue 1 s apart (each
# answered before the next starts, the server's hand-off to sbatch done meanwhile), twice; then
# 30 back to back per queue. Prints each one's milliseconds, client clock. Run as root.
#
#   bench/slurm_client_probe.sh          e.g. DROVER=build/drover bench/slurm_client_probe.sh
#
# Environment: DROVER (default build/drover), PORT (8492), WORK (default a new directory under
# /tmp, removed at the end), DROVER_SLURM_DIR and DROVER_SLURM_PORT as slurm_side_by_side.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build/drover}
PORT=${PORT:-8492}
URL=http://127.0.0.1:$PORT
WORK=${WORK:-$(mktemp -d /tmp/drover-slurm-probe.XXXXXX)}
export DROVER_SLURM_DIR=${DROVER_SLURM_DIR:-/tmp/drover-slurm-bench} DROVER_SLURM_PORT=${DROVER_SLURM_PORT:-7917}
export SLURM_CONF=$DROVER_SLURM_DIR/slurm.conf
CLUSTER=$ROOT/tests/slurm/slurm-cluster.sh
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
[ "$(id -u)" = 0 ] || { echo "run as root (slurm-cluster.sh starts munged, slurmctld, slurmd)" >&2; exit 1; }
trap 'stop_server; "$CLUSTER" stop >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

"$CLUSTER" start >/dev/null
mkdir -p "$WORK"
for n in 1 2 3 4; do
  printf '  - {name: n%s, cpu: "16", memory: 64000Mi, gpus: 4xH100-80GB}\n' "$n"
done | sed '1i nodes:' >"$WORK/nodes.yaml"
printf 'kind: Policy\nqueues:\n  - name: local\n  - name: hpc\n    executor: {kind: slurm, partition: debug}\n' \
  >"$WORK/policy.yaml"
start_server "$WORK" "$PORT" --nodes "$WORK/nodes.yaml" --policy "$WORK/policy.yaml"
export DROVER_SERVER=$URL
for queue in local hpc; do
  printf 'kind: Job\nname: probe\nqueue: %s\nresources: {cpu: 1, memory: 100Mi}\ncommand: ["true"]\n' \
    "$queue" >"$WORK/$queue.yaml"
done
elapsed_ms() { echo "($2 - $1) * 1000" | bc | cut -d. -f1; }
for queue in local hpc local hpc; do
  times=""
  for _ in 1 2 3 4 5 6; do
    start=$EPOCHREALTIME
    "$DROVER" submit "$WORK/$queue.yaml" >/dev/null
    times="$times $(elapsed_ms "$start" "$EPOCHREALTIME")"
    sleep 1
  done
  echo "$queue, 1 s apart:$times ms"
done
for queue in local hpc; do
  start=$EPOCHREALTIME
  for _ in $(seq 1 30); do "$DROVER" submit "$WORK/$queue.yaml" >/dev/null; done
  echo "$queue, 30 back to back: $(($(elapsed_ms "$start" "$EPOCHREALTIME") / 30)) ms each"
  sleep 3
done
