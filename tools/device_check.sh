#!/bin/bash
# The device check (docs/operations.md, "Device check"): on a machine with an NVIDIA GPU, runs
# the Drover binaries built elsewhere against the real NVML and prints what they see, so that
# docs/benchmarks.md can record it. Builds nothing; needs curl, nvidia-smi and the driver.
#
#   DROVER=build-release/drover GPU_LOAD=build/gpu_load tools/device_check.sh [SECONDS]
#
# Build first, where the compilers are (the device machine needs only the outputs):
#   cmake --preset release && cmake --build --preset release --target drover drover-full drover-supervise
#   nvcc -O2 -arch=sm_90 -o build/gpu_load tools/gpu_load.cu      (H100/H200; sm_80 for A100)
# Then carry build-release/ (drover, drover-full, drover-supervise) and build/gpu_load to the device machine.
#
# Steps, each printed under a "== " heading:
#   1. nvidia-smi: the GPUs, the driver, MIG mode.
#   2. a fresh `drover server` on loopback (its embedded agent discovers GPUs through NVML and
#      samples them every second); `drover nodes` must list them with their model.
#   3. a 1-GPU job running `nvidia-smi -L`: it must list exactly one GPU, the one Drover gave it.
#   4. three 1-GPU jobs running gpu_load (fp32, tensor, sleep) for SECONDS (default 30) each;
#      after each, its usage summary (GET /v1/jobs/{id}/usage: GPU activity, and with GPM the SM
#      activity, occupancy, tensor activity and DRAM bandwidth), its findings, and the server's
#      drover_gpu_* series from /metrics. Expected on an H200: fp32 with SM activity high and
#      tensor activity near 0; tensor with tensor activity well above 0; sleep with activity 0.
#      Diagnosis needs 10 minutes of samples by default, so the server runs with
#      --diagnosis-min-sampled 10s to judge these short jobs.
# Without GPU_LOAD, step 4 is skipped (said so). Exits non-zero when a step's check fails.
set -uo pipefail
SECONDS_EACH=${1:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
GPU_LOAD=${GPU_LOAD:-$ROOT/build/gpu_load}
PORT=${PORT:-18670}
URL=http://127.0.0.1:$PORT
WORK=$(mktemp -d /tmp/drover-device-check.XXXXXX)
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
trap 'stop_server; rm -rf "$WORK"' EXIT
FAILED=0
fail() { echo "CHECK FAILED: $*"; FAILED=1; }
api() { curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL$1"; }
state_of() { api "/v1/jobs/$1" | grep -o '"state":"[a-z_]*"' | head -1 | cut -d'"' -f4; }

# Submits a 1-GPU job running ARGS (a JSON array's items); prints its id.
submit() {
  local name=$1 command=$2
  printf 'kind: Job\nname: %s\nresources: {cpu: 1, memory: 1Gi, gpus: 1}\ncommand: [%s]\n' \
    "$name" "$command" >"$WORK/$name.yaml"
  "$DROVER" --server "$URL" submit "$WORK/$name.yaml" | grep -o 'job [0-9]*' | cut -d' ' -f2
}

# Waits up to `limit` seconds for job ID to end; prints its final state.
wait_for() {
  local id=$1 limit=$2 state=
  for _ in $(seq 1 $((limit * 2))); do
    state=$(state_of "$id")
    case $state in succeeded | failed | cancelled | timed_out | skipped) break ;; esac
    sleep 0.5
  done
  echo "$state"
}

echo "== 1. nvidia-smi ($(date -u +%FT%TZ))"
nvidia-smi -L || fail "nvidia-smi -L"
nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,mig.mode.current \
  --format=csv || true

echo "== 2. drover server and drover nodes"
start_server "$WORK" "$PORT" --gpu-sample-interval 1s --diagnosis-min-sampled 10s
"$DROVER" --server "$URL" nodes || fail "drover nodes"
api /v1/nodes | grep -o '"model":"[^"]*"' | sort | uniq -c || fail "no GPU models in /v1/nodes"
grep -i "nvml\|gpm" "$WORK/server.log" | head -5

echo "== 3. a 1-GPU job sees exactly its GPU"
id=$(submit visible '"nvidia-smi", "-L"')
[ "$(wait_for "$id" 60)" = succeeded ] || fail "job $id (nvidia-smi -L) did not succeed"
out=$("$DROVER" --server "$URL" logs "$id" 2>&1)
echo "$out"
[ "$(echo "$out" | grep -c '^GPU ')" = 1 ] || fail "job $id saw $(echo "$out" | grep -c '^GPU ') GPUs, not 1"

echo "== 4. sampled activity under a known load"
if [ ! -x "$GPU_LOAD" ]; then
  echo "SKIPPED: no $GPU_LOAD (nvcc -O2 -arch=sm_90 -o build/gpu_load tools/gpu_load.cu)"
else
  for mode in fp32 tensor sleep; do
    echo "-- gpu_load $mode $SECONDS_EACH"
    id=$(submit "load-$mode" "\"$GPU_LOAD\", \"$mode\", \"$SECONDS_EACH\"")
    [ "$(wait_for "$id" $((SECONDS_EACH + 120)))" = succeeded ] || fail "job $id (gpu_load $mode)"
    sleep 12  # the sampler hands batches over every 10 s
    usage=$(api "/v1/jobs/$id/usage")
    echo "$usage" | grep -o '"summary":{[^}]*}[^]]*' | head -c 1500
    echo
    echo "$usage" | grep -o '"activity_source":"[a-z]*"' || fail "job $id: no usage summary"
    echo "$usage" | grep -o '"kind":"[a-z_]*"' | sort -u
    "$DROVER" --server "$URL" get "$id" | sed -n '/usage\|diagnosis\|gpu/Ip' | head -20
    api /metrics | grep '^drover_gpu_' | head -20
  done
fi
echo "== done: $([ $FAILED = 0 ] && echo 'all checks passed' || echo 'some checks FAILED')"
exit $FAILED
