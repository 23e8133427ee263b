#!/bin/bash
# The device check (docs/operations.md, "Device check"): on a machine with an NVIDIA GPU, runs
# the Drover binaries built elsewhere against the real NVML and prints what they see, so that
# docs/benchmarks.md can record it. Builds nothing; needs curl, python3, nvidia-smi and the driver.
#
#   DROVER=build-release/drover GPU_LOAD=build/gpu_load [SAVE_DIR=DIR] tools/device_check.sh [SECONDS]
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
#      mid-run, the GPU's processes as nvidia-smi lists them beside the job's worker pid, and
#      /metrics (drover_gpu_processes counts them by attribution); after each, its usage
#      summary (GET /v1/jobs/{id}/usage: GPU activity, and with GPM the SM activity, occupancy,
#      tensor activity and DRAM bandwidth; it must hold its own process's GPU memory,
#      peak_process_gpu_memory_bytes), its findings and `drover get`'s usage lines. Expected
#      on an H200: fp32 with SM activity high and tensor activity near 0; tensor with tensor
#      activity well above 0; sleep with activity 0.
#      Diagnosis needs 10 minutes of samples by default, so the server runs with
#      --diagnosis-min-sampled 10s to judge these short jobs.
#   4b. as root: a job of a member whose Unix account is not root (created here with useradd,
#      removed after) runs as that account on the GPU: it must print the account's uid and see
#      one GPU, nvidia-smi must list its gpu_load process under that account, and its usage
#      summary must hold its own process's GPU memory (the root agent attributes another
#      user's process). Skipped (said so) when not root or without GPU_LOAD.
#   5. the server's own CPU time (its embedded agent samples every GPU each second and every
#      worker's process tree every 5 s) over 20 s with no job, and over each job of step 4: an
#      upper bound on the sampler's cost, since it counts all the server's work; and the
#      sampler's own since the server started, as its thread measured it
#      (drover_agent_sampler_cpu_seconds_total).
#   6. the sampler's own cost: fresh servers with no job, sampling off (both intervals 0) and
#      on (GPUs each second), 20 s each, two rounds alternating; the difference is the sampler's.
# Without GPU_LOAD, step 4 is skipped (said so). QUICK=1 skips step 6 (about 100 s). Exits
# non-zero when a step's check fails.
set -uo pipefail
SECONDS_EACH=${1:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
GPU_LOAD=${GPU_LOAD:-$ROOT/build/gpu_load}
PORT=${PORT:-18670}
SAVE_DIR=${SAVE_DIR:-}  # where set, each job's GET /v1/jobs/{id}/usage is saved there too
URL=http://127.0.0.1:$PORT
WORK=$(mktemp -d /tmp/drover-device-check.XXXXXX)
# shellcheck source=bench/lib/server.sh
. "$ROOT/bench/lib/server.sh"
require_drover
trap 'stop_server; rm -rf "$WORK"' EXIT
FAILED=0
fail() { echo "CHECK FAILED: $*"; FAILED=1; }
api() { curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL$1"; }
# The server's CPU time so far, in milliseconds (utime + stime of /proc/PID/stat).
server_cpu_ms() {
  awk -v tck="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / tck) }' "/proc/$SERVER_PID/stat"
}
# Prints "NAME: N ms of server CPU in S s (R ms per s)" since the reading BEFORE at time T0.
report_cpu() {
  local name=$1 before=$2 t0=$3 after now
  after=$(server_cpu_ms)
  now=$(date +%s.%N)
  awk -v n="$name" -v c=$((after - before)) -v now="$now" -v t0="$t0" \
    'BEGIN { s = now - t0; printf "%s: %d ms of server CPU in %.1f s (%.2f ms per s)\n", n, c, s, c / s }'
}
# The sampling CPU the server's agents reported so far, in seconds (all nodes).
sampler_cpu_s() {
  api /metrics | awk '/^drover_agent_sampler_cpu_seconds_total/ { sum += $2 } END { print sum + 0 }'
}
# The job's own state (the reply's top-level "state"; its workers have states of their own).
state_of() { api "/v1/jobs/$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])'; }

# Submits a 1-GPU job running ARGS (a JSON array's items), with the token TOKEN when given
# (else DROVER_TOKEN's, the admin's); prints its id.
submit() {
  local name=$1 command=$2 token=${3:-$DROVER_TOKEN}
  printf 'kind: Job\nname: %s\nresources: {cpu: 1, memory: 1Gi, gpus: 1}\ncommand: [%s]\n' \
    "$name" "$command" >"$WORK/$name.yaml"
  DROVER_TOKEN=$token "$DROVER" --server "$URL" submit "$WORK/$name.yaml" |
    grep -o 'job [0-9]*' | cut -d' ' -f2
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
STARTED_AT=$(date +%s.%N)
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
    cpu0=$(server_cpu_ms) t0=$(date +%s.%N)
    id=$(submit "load-$mode" "\"$GPU_LOAD\", \"$mode\", \"$SECONDS_EACH\"")
    sleep $((SECONDS_EACH / 2))
    echo "mid-run: the GPU's processes (nvidia-smi) and the job's worker processes"
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
    pgrep -f "$GPU_LOAD $mode" | tr '\n' ' '
    echo
    echo "mid-run: /metrics"
    api /metrics | grep '^drover_gpu_'
    if [ "$(wait_for "$id" $((SECONDS_EACH + 120)))" != succeeded ]; then
      fail "job $id (gpu_load $mode)"
      "$DROVER" --server "$URL" logs "$id" 2>&1 | tail -5
    fi
    sleep 12  # the sampler hands batches over every 10 s
    report_cpu "server CPU over job $id (gpu_load $mode)" "$cpu0" "$t0"
    usage=$(api "/v1/jobs/$id/usage")
    [ -n "$SAVE_DIR" ] && echo "$usage" >"$SAVE_DIR/usage-$mode.json"
    echo "$usage" | python3 -c 'import json, sys
usage = json.load(sys.stdin)
for attempt in usage.get("attempts", []):
    print("summary:", json.dumps(attempt.get("summary", {}), sort_keys=True)[:3000])
for finding in usage.get("findings", []):
    print("finding:", json.dumps(finding))' || fail "job $id: usage unreadable"
    echo "$usage" | grep -q '"activity_source"' || fail "job $id: no usage summary"
    echo "$usage" | python3 -c 'import json, sys
attempts = json.load(sys.stdin).get("attempts", [])
sys.exit(0 if attempts and attempts[0]["summary"].get("peak_process_gpu_memory_bytes", 0) > 0 else 1)' ||
      fail "job $id: no GPU memory of its own process (per-process attribution)"
    "$DROVER" --server "$URL" get "$id" | sed -n '/usage\|diagnosis\|gpu/Ip' | head -20
  done
fi
echo "== 4b. a member's GPU job runs as its Unix account"
ACCOUNT=drover-gpu-check
if [ "$(id -u)" != 0 ] || [ ! -x "$GPU_LOAD" ]; then
  echo "SKIPPED: needs root (to create an account) and GPU_LOAD"
elif ! useradd --system --no-create-home --shell /usr/sbin/nologin "$ACCOUNT"; then
  fail "useradd $ACCOUNT"
else
  trap 'stop_server; userdel "$ACCOUNT" 2>/dev/null; rm -rf "$WORK"' EXIT
  # The account enters its worker directory under WORK (mktemp: 0700) and runs its own copy
  # of gpu_load.
  chmod 0755 "$WORK"
  install -m 0755 "$GPU_LOAD" "$WORK/gpu_load"
  member=$(curl -sf -X POST -H "Authorization: Bearer $DROVER_TOKEN" \
    -H 'Content-Type: application/json' -d "{\"user\": \"$ACCOUNT\", \"team\": \"gpu\", \"role\": \"member\"}" \
    "$URL/v1/tokens" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
  id=$(submit as-member "\"sh\", \"-c\", \"id -u; nvidia-smi -L; exec $WORK/gpu_load fp32 $SECONDS_EACH\"" "$member")
  sleep $((SECONDS_EACH / 2))
  echo "mid-run: the GPU's processes and their users"
  for pid in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader); do
    echo "pid $pid: user $(ps -o user= -p "$pid") ($(ps -o args= -p "$pid"))"
  done
  nvidia-smi --query-compute-apps=pid --format=csv,noheader | while read -r pid; do ps -o user= -p "$pid"; done |
    grep -qx "$ACCOUNT" || fail "no GPU process of $ACCOUNT"
  api /metrics | grep '^drover_gpu_processes'
  [ "$(wait_for "$id" $((SECONDS_EACH + 120)))" = succeeded ] || fail "job $id (as $ACCOUNT)"
  out=$("$DROVER" --server "$URL" logs "$id" 2>&1)
  echo "$out" | head -3
  [ "$(echo "$out" | head -1)" = "$(id -u "$ACCOUNT")" ] || fail "job $id did not run as $ACCOUNT ($(id -u "$ACCOUNT"))"
  [ "$(echo "$out" | grep -c '^GPU ')" = 1 ] || fail "job $id (as $ACCOUNT) did not see one GPU"
  sleep 12  # the sampler hands batches over every 10 s
  api "/v1/jobs/$id/usage" | python3 -c 'import json, sys
summary = json.load(sys.stdin)["attempts"][0]["summary"]
print("summary:", {k: summary.get(k) for k in ("activity_source", "gpu_util_p95", "sm_active", "peak_process_gpu_memory_bytes", "peak_other_gpu_processes")})
sys.exit(0 if summary.get("peak_process_gpu_memory_bytes", 0) > 0 else 1)' ||
    fail "job $id: no GPU memory of its own process (attribution of another user's process)"
fi
echo "== 5. the server's CPU with nothing running (sampling every GPU each second)"
cpu0=$(server_cpu_ms) t0=$(date +%s.%N)
sleep 20
report_cpu "server CPU, idle" "$cpu0" "$t0"
awk -v cpu="$(sampler_cpu_s)" -v now="$(date +%s.%N)" -v t0="$STARTED_AT" 'BEGIN {
  printf "the sampler itself (drover_agent_sampler_cpu_seconds_total): %.3f s in %.0f s since the server started (%.2f ms per s)\n", cpu, now - t0, cpu * 1000 / (now - t0) }'
echo "== 6. the sampler's own cost: fresh idle servers with sampling off and on, alternating"
[ "${QUICK:-0}" = 1 ] && echo "SKIPPED: QUICK=1"
for round in $([ "${QUICK:-0}" = 1 ] || echo 1 2); do
  for sampling in off on; do
    stop_server
    rm -rf "$WORK/idle" && mkdir -p "$WORK/idle"
    if [ "$sampling" = off ]; then
      start_server "$WORK/idle" "$PORT" --gpu-sample-interval 0 --process-sample-interval 0
    else
      start_server "$WORK/idle" "$PORT" --gpu-sample-interval 1s
    fi
    sleep 5  # past the start-up
    cpu0=$(server_cpu_ms) t0=$(date +%s.%N)
    sleep 20
    report_cpu "round $round, sampling $sampling, idle" "$cpu0" "$t0"
  done
done
echo "== done: $([ $FAILED = 0 ] && echo 'all checks passed' || echo 'some checks FAILED')"
exit $FAILED
