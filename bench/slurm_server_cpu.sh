#!/bin/bash
# What Drover's own processes cost while jobs are submitted one by one to a Slurm queue
# (docs/benchmarks.md, "Slurm's state through the helper"): runs case C1 of
# bench/slurm_side_by_side.sh and samples, every 0.2 s until the server exits, the CPU of the
# server with its reaped children (utime + stime + cutime + cstime of /proc/PID/stat: its own
# threads and the `scontrol` listings it ran) and of its Slurm submission helper (the most seen,
# as the helper ends before the server does). Prints C1's submission and finish columns, then the
# two totals in clock ticks (1/100 s here).
#
#   bench/slurm_server_cpu.sh DROVER [N]      e.g. bench/slurm_server_cpu.sh build/drover 200
#
# Environment: WORK (default /dev/shm/slurm-server-cpu; emptied first). Run as root, not beside
# the Slurm test suite (as bench/slurm_side_by_side.sh).
set -euo pipefail
DROVER=${1:?usage: bench/slurm_server_cpu.sh DROVER [N]}
N=${2:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/dev/shm/slurm-server-cpu}
SAMPLE=$(mktemp)
trap 'rm -f "$SAMPLE"' EXIT

sample() {
  local pattern="drover server --data $WORK/C1" server helper ticks helper_ticks helper_max=0
  while ! server=$(pgrep -f "$pattern" | head -1); do sleep 0.05; done
  while [ -e "/proc/$server" ]; do
    ticks=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$server/stat" 2>/dev/null || true)
    helper=$(pgrep -P "$server" -f drover-slurm-submit | head -1 || true)
    helper_ticks=0
    [ -z "$helper" ] || helper_ticks=$(awk '{print $14 + $15}' "/proc/$helper/stat" 2>/dev/null || echo 0)
    [ "$helper_ticks" -le "$helper_max" ] || helper_max=$helper_ticks
    [ -z "$ticks" ] || echo "$ticks $helper_max" >"$SAMPLE"
    sleep 0.2
  done
}

sample &
SAMPLER=$!
WORK=$WORK DROVER=$DROVER "$ROOT/bench/slurm_side_by_side.sh" "$N" "C1" 2>&1 | grep "^| C1" | cut -d'|' -f4,7
wait "$SAMPLER"
read -r server_ticks helper_ticks <"$SAMPLE"
echo "server with its children: $server_ticks ticks; submission helper: $helper_ticks ticks"
