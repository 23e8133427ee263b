#!/usr/bin/env bash
# The inference gateway's benchmarks (docs/benchmarks.md, "Inference gateway"): stand-in engines
# and `drover gateway` on loopback, driven by bench/gateway_load.
#   1. added latency: closed loop, one request in flight, an engine that answers at once, called
#      directly and through the gateway, in ROUNDS interleaved pairs;
#   2. requests/s: closed loop with 64 in flight, directly and through the gateway, interleaved;
#   3. route-around: three engines (20 ms replies) at 300 requests/s for 8 s, one killed at 3 s.
# Where bench/beast_proxy was built (Boost installed), 1 and 2 also run through it, the Boost.Beast
# peer, interleaved with the others (docs/benchmarks.md, "evhttp against Boost.Beast").
# Usage: bench/gateway_bench.sh [BUILD_DIR] (default build); ports 27100-27199.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${ROUNDS:-3}
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT
engine() {  # NAME PORT FLAGS...
  local name=$1 port=$2; shift 2
  "$BUILD/drover-fake-engine" --name "$name" --port "$port" "$@" 2>"$DIR/$name.log" &
  PIDS+=($!)
}
gateway() {  # PORT CONFIG
  "$BUILD/drover" gateway --listen "127.0.0.1:$1" --config "$2" 2>"$DIR/gateway-$1.log" &
  PIDS+=($!)
}
load() { "$BUILD/bench/gateway_load" "$@"; }

engine fast 27101 --ttft-ms 0 --tpot-ms 0 --tokens 1 --max-seqs 1000
printf 'models:\n  - name: stand-in\n    backends:\n      - {name: fast, endpoints: [http://127.0.0.1:27101]}\n' >"$DIR/fast.yaml"
gateway 27100 "$DIR/fast.yaml"
BEAST=""
if [[ -x "$BUILD/bench/beast_proxy" ]]; then
  "$BUILD/bench/beast_proxy" --listen-port 27102 --upstream-port 27101 &
  PIDS+=($!)
  BEAST=27102
fi
sleep 1
for round in $(seq "$ROUNDS"); do
  load --url http://127.0.0.1:27101 --concurrency 1 --duration-s 3 --label "latency-direct-$round"
  load --url http://127.0.0.1:27100 --concurrency 1 --duration-s 3 --label "latency-gateway-$round"
  if [[ -n "$BEAST" ]]; then
    load --url http://127.0.0.1:$BEAST --concurrency 1 --duration-s 3 --label "latency-beast-$round"
  fi
done
for round in $(seq "$ROUNDS"); do
  load --url http://127.0.0.1:27101 --concurrency 64 --duration-s 3 --label "rps-direct-$round"
  load --url http://127.0.0.1:27100 --concurrency 64 --duration-s 3 --label "rps-gateway-$round"
  if [[ -n "$BEAST" ]]; then
    load --url http://127.0.0.1:$BEAST --concurrency 64 --duration-s 3 --label "rps-beast-$round"
  fi
done

for i in 1 2 3; do engine "r$i" "2711$i" --ttft-ms 10 --tpot-ms 2 --tokens 5; done
VICTIM=${PIDS[-1]}
printf 'models:\n  - name: stand-in\n    backends:\n      - {name: pool, endpoints: [http://127.0.0.1:27111, http://127.0.0.1:27112, http://127.0.0.1:27113]}\n' >"$DIR/pool.yaml"
gateway 27110 "$DIR/pool.yaml"
sleep 1
load --url http://127.0.0.1:27110 --rate 300 --duration-s 8 --kill-pid "$VICTIM" --kill-at-s 3 \
  --label route-around
# What the kill cost inside the gateway: attempts that failed on the killed engine (each retried
# on another) and the retries.
curl -s http://127.0.0.1:27110/metrics | grep -E '^drover_gateway_(attempts|retries|requests)_total'
