#!/usr/bin/env bash
# Autoscaling benchmarks (docs/benchmarks.md, "Autoscaling"): a `drover server` running services
# of stand-in engines (8 sequences at once, 50 ms to the first token, 10 ms per further token, 16
# tokens: about 0.2 s a request, 40 requests/s a replica) and `drover gateway` in front
# (poll_interval_ms 200), driven by bench/gateway_load.
#   1. step: a service at one replica (target 8 in flight per replica, scale_up_delay 0) gets a
#      load step from nothing to 120 requests/s; printed: the ms from the step's first request
#      until GET /v1/services shows a second ready replica (curl every 20 ms), ROUNDS times.
#   2. bursts: the same bursty load (30 requests/s, and 150/s for 2 s every 6 s, for 30 s)
#      through the gateway to a service autoscaled in [1, 4] (scale_down_delay 3s) and to one
#      fixed at 1 replica; gateway_load's JSON for each (p50, p99, failures), ROUNDS pairs,
#      interleaved.
# Usage: bench/autoscale_bench.sh [BUILD_DIR] (default build); ports 18850-18899.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-3}
DIR=$(mktemp -d /tmp/drover-autoscale.XXXXXX)
PIDS=()
cleanup() {  # the services' replicas first (cancelled through the server), then the daemons
  for name in step auto fixed; do
    "$BUILD/drover" --server "$API" service delete "$name" >/dev/null 2>&1 || true
  done
  sleep 2
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$DIR"
}
API=http://127.0.0.1:18850
trap cleanup EXIT
"$BUILD/drover" server --data "$DIR/data" --listen 127.0.0.1:18850 --ready-file "$DIR/ready" \
  --gpus 0 --service-ports 18860-18899 >"$DIR/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do [ -s "$DIR/ready" ] && break; sleep 0.1; done
export DROVER_TOKEN
DROVER_TOKEN=$(cat "$DIR/data/admin.token")
service() {  # NAME MIN MAX
  cat >"$DIR/$1.yaml" <<YAML
kind: Service
name: $1
models: [$1]
template:
  command: [$BUILD/drover-fake-engine, --models, $1, --max-seqs, "8", --ttft-ms, "50",
            --tpot-ms, "10", --tokens, "16"]
  resources: {cpu: 100m, memory: 64Mi}
replicas: {min: $2, max: $3}
readiness: {path: /health, interval: 100ms, failure_threshold: 1}
autoscaling: {target_in_flight_per_replica: 8, scale_up_delay: 0s, scale_down_delay: 3s}
YAML
  "$BUILD/drover" --server "$API" submit "$DIR/$1.yaml" >/dev/null
}
ready() {  # NAME: the number of ready endpoints
  curl -s -H "Authorization: Bearer $DROVER_TOKEN" "$API/v1/services/$1" |
    python3 -c 'import json,sys; print(sum(e["ready"] for e in json.load(sys.stdin)["endpoints"]))'
}
wait_ready() {  # NAME COUNT
  for _ in $(seq 1 600); do [ "$(ready "$1")" -ge "$2" ] && return 0; sleep 0.05; done
  echo "$1: never $2 ready" >&2
  return 1
}
cat >"$DIR/gw.yaml" <<YAML
poll_interval_ms: 200
models:
  - {name: step, max_waiting: 10000, backends: [{name: step, service: step}]}
  - {name: auto, max_waiting: 10000, backends: [{name: auto, service: auto}]}
  - {name: fixed, max_waiting: 10000, backends: [{name: fixed, service: fixed}]}
YAML
"$BUILD/drover" --server "$API" gateway --listen 127.0.0.1:18851 --config "$DIR/gw.yaml" \
  --ready-file "$DIR/gw.ready" 2>"$DIR/gateway.log" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$DIR/gw.ready" ] && break; sleep 0.1; done

echo "# step: ms from a load step (0 -> 120 requests/s) to the second ready replica"
for round in $(seq "$ROUNDS"); do
  service step 1 4
  wait_ready step 1
  "$BUILD/bench/gateway_load" --url http://127.0.0.1:18851 --model step --rate 120 \
    --duration-s 6 --label "step-$round" >"$DIR/step-$round.json" &
  LOAD=$!
  start=$(date +%s%N)
  wait_ready step 2
  echo "step-$round: $(( ($(date +%s%N) - start) / 1000000 )) ms"
  wait "$LOAD"
  "$BUILD/drover" --server "$API" service delete step >/dev/null
  sleep 1
done

echo "# bursts: autoscaled [1, 4] vs fixed 1 replica"
service auto 1 4
service fixed 1 1
wait_ready auto 1
wait_ready fixed 1
for round in $(seq "$ROUNDS"); do
  for name in auto fixed; do
    "$BUILD/bench/gateway_load" --url http://127.0.0.1:18851 --model "$name" --rate 30 \
      --burst-every-ms 6000 --burst-ms 2000 --burst-rate 150 --duration-s 30 \
      --label "burst-$name-$round"
    echo
  done
done
