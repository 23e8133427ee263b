#!/bin/bash
# Failover time (docs/benchmarks.md, "Failover"): two `drover server`s on one PostgreSQL database
# (a throwaway cluster, initdb on a loopback port, removed at the end); the leader is killed
# (SIGKILL) and the time until the standby acknowledges a submission (POST /v1/jobs answered
# 200, polled every 50 ms with curl) is printed in milliseconds, once per run; each run uses a
# fresh database. The lease settings are the servers' defaults unless LEASE_FLAGS says otherwise.
# Needs Debian's postgresql package and curl; as root, the cluster runs as user postgres.
#
#   bench/failover_bench.sh [RUNS]        e.g. DROVER=build/drover bench/failover_bench.sh 5
#
# Environment: DROVER (default build-release/drover), PORT (API ports PORT and PORT+1, default
# 29400), PGPORT (default 29410), LEASE_FLAGS (e.g. "--lease 3s --lease-renew 500ms"; default
# none), WORK (default a new directory under /tmp, removed at the end).
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
PORT=${PORT:-29400}
PGPORT=${PGPORT:-29410}
LEASE_FLAGS=${LEASE_FLAGS:-}
WORK=${WORK:-$(mktemp -d /tmp/drover-failover.XXXXXX)}
[ -x "$DROVER" ] || { echo "no $DROVER: cmake --build --preset release --target drover" >&2; exit 1; }
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
AS=()
[ "$(id -u)" = 0 ] && AS=(runuser -u postgres --)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  "${AS[@]}" "$BIN/pg_ctl" -D "$WORK/pg" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/pg"
[ "$(id -u)" = 0 ] && chown postgres "$WORK" "$WORK/pg"
"${AS[@]}" "$BIN/initdb" -D "$WORK/pg" -A trust -U drover -E UTF8 --no-sync >/dev/null
"${AS[@]}" "$BIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg/log" -w start \
  -o "-p $PGPORT -k $WORK/pg -c listen_addresses=127.0.0.1" >/dev/null
SPEC='kind: Job
name: probe
resources: {cpu: 100m, memory: 16Mi}
script: "true"
'
# start NAME PORT: a server on data WORK/NAME; prints its pid.
start() {
  mkdir -p "$WORK/$1"
  # shellcheck disable=SC2086
  "$DROVER" server --data "$WORK/$1/data" --listen "127.0.0.1:$2" --ready-file "$WORK/$1/ready" \
    --gpus 0 --store "$STORE" $LEASE_FLAGS >"$WORK/$1/log" 2>&1 &
  echo $!
}
for run in $(seq 1 "$RUNS"); do
  STORE="postgresql://drover@127.0.0.1:$PGPORT/failover$run"
  "$BIN/psql" -X -q "postgresql://drover@127.0.0.1:$PGPORT/postgres" -c "CREATE DATABASE failover$run"
  rm -rf "$WORK/a" "$WORK/b"
  A=$(start a "$PORT")
  PIDS+=("$A")
  for _ in $(seq 1 600); do [ -s "$WORK/a/ready" ] && break; sleep 0.1; done
  mkdir -p "$WORK/b/data"
  cp "$WORK/a/data/admin.token" "$WORK/a/data/job-token.key" "$WORK/b/data/"
  B=$(start b $((PORT + 1)))
  PIDS+=("$B")
  for _ in $(seq 1 600); do grep -q "is a standby" "$WORK/b/log" && break; sleep 0.1; done
  TOKEN=$(cat "$WORK/a/data/admin.token")
  kill -9 "$A"
  t0=$(date +%s%N)
  until curl -sf -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/yaml' --data-binary "$SPEC" \
    "http://127.0.0.1:$((PORT + 1))/v1/jobs"; do
    sleep 0.05
  done
  t1=$(date +%s%N)
  echo "run $run: failover $(((t1 - t0) / 1000000)) ms"
  kill "$B"
  wait "$B" 2>/dev/null || true
done
