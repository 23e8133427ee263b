#!/bin/bash
# Drover vs Slurm on one machine (docs/benchmarks.md, "Drover vs Slurm on one machine"), in one
# run: submission throughput, submit-to-start latency and the time until all finished, for N
# trivial jobs (default 1,000) each
#
#   A1  sbatch, one process per job (what a user's loop does)
#   A2  sbatch --array=1-N, one submission (Slurm's way of submitting many at once)
#   A3  the same, each task's line written by a child `bash -c` (a user's program started by
#       the batch script; Drover's task now execs its command, one process fewer than A3)
#   A4  A2 with the options Drover's arrays carry (an output file, --open-mode=append,
#       --requeue as with the default retry since 2026-12-06 (--no-requeue before), --nodes=1,
#       --ntasks=1, --chdir)
#   A5  A4 whose tasks run Drover's array script (a link per task, the job id file, the output
#       redirected, a sourced batch.sh with a contract as Drover writes it), the line written
#       by a builtin: Drover's task script without Drover (under bash, for $EPOCHREALTIME)
#   A6  A5 with the line written as Drover runs a command: `exec bash -c`, from scripts under
#       /bin/sh as Drover's for a lone worker without a timeout
#   A7  A1 whose script execs `bash -c` for the line, as Drover's batch script execs a lone
#       job's command: A1 like for like with C1
#   B1  drover submit, one process per job, local executor
#   B2  drover submit of one file of N documents (---), local executor
#   C1  drover submit, one process per job, to a queue with executor slurm (Drover drives Slurm)
#   C2  drover submit of one file of N documents to that queue
#   S1  A7 one job at a time: each sbatch only once the job before it has started
#   S2  C1 one job at a time: each drover submit only once the job before it has started
#       (S1 and S2 measure one job's submit-to-start on an idle cluster, without the queue a
#       burst builds in Slurm, whose wait sets the p50 of A1, A7 and C1)
#
# Every job runs the same payload: bash appending "KEY $EPOCHREALTIME" to the case's stamps
# file, so each job's start is also measured by the one clock of this machine, at microsecond
# resolution, beside each scheduler's own record (Slurm's SubmitTime and StartTime are whole
# seconds; Drover's created_at and running_at milliseconds). Every job asks for 1 CPU and
# 100 MiB (Slurm's nodes here have 16 CPUs and 64,000 MB each; without --mem a Slurm job would
# take its node's whole memory under CR_Core_Memory, one job per node).
#
# Each case also accounts the CPU it took, per job: the submitting commands', slurmctld's,
# Drover's server's with its children, and the rest of the machine's (the report's second table;
# cpu_mark below). On this machine's few cores every case is CPU-bound, so its submissions per
# second follow the CPU each job costs the machine, which is steadier from run to run.
#
# Starts its own Slurm cluster (tests/slurm/slurm-cluster.sh, in /tmp/drover-slurm-bench on
# port 7917 unless DROVER_SLURM_DIR and DROVER_SLURM_PORT say otherwise, apart from the test suite's in /tmp/drover-slurm-test on 7817), restarted clean
# before each Slurm case so none sees another's jobs, and stops it at the end. Run as root, and
# not beside the Slurm test suite: slurm-cluster.sh stop (run by every start) ends every
# slurmstepd on the machine, the suite's cluster's included. Drover's local nodes are declared
# with the Slurm cluster's shape (n1..n4, 16 CPUs, 64,000 MiB, 4 GPUs each).
#
#   bench/slurm_side_by_side.sh [N] [CASES]      e.g. bench/slurm_side_by_side.sh 1000 "A1 B1"
#
# Environment: DROVER (default build-release/drover), WORK (default /tmp/drover-slurm-bench-work;
# emptied first), API_PORT (default 8491), DROVER_SERVER_ARGS (more flags for `drover server`,
# split on spaces; e.g. "--slurm-submit sbatch" for an sbatch process per submission). Results: WORK/results.jsonl and the Markdown table
# printed at the end (bench/slurm_side_by_side.py report WORK).
set -euo pipefail
N=${1:-1000}
CASES=${2:-"A1 A2 A3 B1 B2 C1 C2"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DROVER=${DROVER:-$ROOT/build-release/drover}
WORK=${WORK:-/tmp/drover-slurm-bench-work}
API_PORT=${API_PORT:-8491}
URL=http://127.0.0.1:$API_PORT
PY="python3 $ROOT/bench/slurm_side_by_side.py"
export DROVER_SLURM_DIR=${DROVER_SLURM_DIR:-/tmp/drover-slurm-bench} DROVER_SLURM_PORT=${DROVER_SLURM_PORT:-7917}
export SLURM_CONF=$DROVER_SLURM_DIR/slurm.conf
CLUSTER=$ROOT/tests/slurm/slurm-cluster.sh
SERVER_PID=
WAIT_LIMIT_S=${WAIT_LIMIT_S:-600}  # per case, until all finished

[ -x "$DROVER" ] || { echo "no $DROVER: cmake --preset release && cmake --build --preset release --target drover drover-full drover-supervise drover-slurm-submit" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root (slurm-cluster.sh starts munged, slurmctld, slurmd)" >&2; exit 1; }

cleanup() {
  stop_server
  "$CLUSTER" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

rm -rf "$WORK"
mkdir -p "$WORK"
now() { echo "$EPOCHREALTIME"; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

CTLD_LOG_LINES=0  # slurmctld's log, appended to by every start: its length before the last one
cluster_start() {
  log "starting the Slurm cluster ($DROVER_SLURM_DIR, port $DROVER_SLURM_PORT)"
  CTLD_LOG_LINES=$( (wc -l <"$DROVER_SLURM_DIR/ctld.log") 2>/dev/null || echo 0)
  "$CLUSTER" start
}

stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}

# start_server CASE_DIR: a fresh drover server with queues local and hpc, and the Slurm
# cluster's shape declared as its local nodes (n1..n4, 16 CPUs, 64,000 MB and 4 H100 each; all
# four run their workers on this machine), so both schedulers see the same capacity.
start_server() {
  local dir=$1 n
  for n in 1 2 3 4; do
    printf '  - {name: n%s, cpu: "16", memory: 64000Mi, gpus: 4xH100-80GB}\n' "$n"
  done | sed '1i nodes:' >"$dir/nodes.yaml"
  cat >"$dir/policy.yaml" <<'EOF'
kind: Policy
queues:
  - name: local
  - name: hpc
    executor: {kind: slurm, partition: debug}
EOF
  "$DROVER" server --data "$dir/data" --listen "127.0.0.1:$API_PORT" --nodes "$dir/nodes.yaml" \
    --policy "$dir/policy.yaml" --ready-file "$dir/ready" ${DROVER_SERVER_ARGS:-} >"$dir/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    if [ -s "$dir/ready" ]; then
      # The admin token it wrote (docs/security.md), for the CLI (DROVER_TOKEN) and curl.
      DROVER_TOKEN=$(cat "$dir/data/admin.token")
      export DROVER_TOKEN
      return 0
    fi
    sleep 0.1
  done
  echo "drover server did not start; $dir/server.log:" >&2
  cat "$dir/server.log" >&2
  exit 1
}

# The job's one line: KEY (Slurm job id, array task id or Drover job id) and its start time.
slurm_script() {
  printf '#!/bin/bash\necho "${SLURM_ARRAY_TASK_ID:-$SLURM_JOB_ID} $EPOCHREALTIME" >> %s\n' "$1"
}

# The same line written by a child process, `bash -c`, as a user's program started from a batch
# script: A3's script. (A Drover task execs its command instead: one process fewer.)
slurm_child_script() {
  printf '#!/bin/bash\nbash -c '"'"'echo "${SLURM_ARRAY_TASK_ID:-$SLURM_JOB_ID} $EPOCHREALTIME" >> %s'"'"'\n' "$1"
}

# The line written by `exec bash -c` from the job script: A7's script, the shape of Drover's batch
# script for a lone worker without a timeout (exec/slurm/sbatch.cc: under /bin/sh since
# 2026-12-06, bash before), without its contract.
slurm_exec_script() {
  printf '#!/bin/sh\nexec bash -c '"'"'echo "${SLURM_ARRAY_TASK_ID:-$SLURM_JOB_ID} $EPOCHREALTIME" >> %s'"'"'\n' "$1"
}

drover_spec() {  # drover_spec QUEUE STAMPS
  cat <<EOF
kind: Job
name: bench
queue: $1
resources: {cpu: 1, memory: 100Mi}
command: [bash, -c, 'echo "\$DROVER_JOB_ID \$EPOCHREALTIME" >> $2']
EOF
}

wait_slurm() {  # until squeue lists nothing (pending, running or completing)
  local deadline=$((SECONDS + WAIT_LIMIT_S))
  while [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do
    [ $SECONDS -lt $deadline ] || { log "not all finished after ${WAIT_LIMIT_S}s"; return 0; }
    sleep 0.25
  done
}

# wait_drover DIR QUEUE: until the server lists no active job. For the Slurm queue, also when
# Slurm's own queue became empty (DIR/slurm_done_at): the gap is how late Drover learned.
wait_drover() {
  local deadline=$((SECONDS + WAIT_LIMIT_S))
  while [ "$(curl -sf -H "Authorization: Bearer $DROVER_TOKEN" "$URL/v1/jobs?active=1&limit=1" | jq '.jobs | length')" != 0 ]; do
    if [ "$2" = hpc ] && [ ! -s "$1/slurm_done_at" ] && [ -z "$(squeue -h -o %i 2>/dev/null)" ] &&
      [ "$(squeue -h -t all -o %i 2>/dev/null | wc -l)" -ge "$N" ]; then
      now >"$1/slurm_done_at"
    fi
    [ $SECONDS -lt $deadline ] || { log "not all finished after ${WAIT_LIMIT_S}s"; return 0; }
    sleep 0.25
  done
}

# wait_started STAMPS K: until the job script of the K-th job wrote its line, then a pause of 0 to
# 999 ms (S1, S2). Slurm starts jobs at its scheduler's ticks (sched_interval and bf_interval
# 1 s here), so a submission right after the last start would always wait most of a tick, and a
# few ms more before Slurm would not show: the pause puts each submission at a random point of
# the tick, the same sequence in both cases (RANDOM is seeded per case, and drawn in this shell:
# bash 5.1 and later reseed it in a subshell such as $(...), which until 2026-12-06 drew each
# pause, so the two cases' sequences differed). The poll's period sets only the pace, not what
# is measured (the job's own clock).
wait_started() {
  local deadline=$((SECONDS + WAIT_LIMIT_S)) pause_ms
  while [ "$( (wc -l <"$1") 2>/dev/null || echo 0)" -lt "$2" ]; do
    [ $SECONDS -lt $deadline ] || { log "job $2 did not start within ${WAIT_LIMIT_S}s"; return 1; }
    sleep 0.005
  done
  pause_ms=$((RANDOM % 1000))
  sleep "0.$(printf %03d "$pause_ms")"
}

# keep_ctld_log DIR: slurmctld's log lines of this case (since the cluster started), for the
# report's split of submit-to-start into before Slurm had the job, in Slurm, and the job script.
keep_ctld_log() {
  tail -n "+$((CTLD_LOG_LINES + 1))" "$DROVER_SLURM_DIR/ctld.log" >"$1/ctld.log" 2>/dev/null || true
}

# CPU per job (the report's second table), from counters read at the case's start, at the end of
# its submissions (this script's children: the submitting commands) and when all finished (the
# rest): clock ticks (CLK_TCK) of the whole machine (busy, every core), of slurmctld, and of
# Drover's server with its children, reaped or not (the submission helper).
#   cpu_mark DIR start|finished    appends "WHEN MACHINE CTLD DROVER" to DIR/cpu
#   times >DIR/times.WHEN       (bash's builtin, in this shell) the children's user and system
cpu_mark() {
  local machine ctld=0 drover=0 pid
  machine=$(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat)
  pid=$(cat "$DROVER_SLURM_DIR/ctld.pid" 2>/dev/null || true)
  [ -z "$pid" ] || ctld=$(proc_ticks "$pid")
  if [ -n "$SERVER_PID" ]; then
    drover=$(proc_ticks "$SERVER_PID")
    for pid in $(pgrep -P "$SERVER_PID" || true); do drover=$((drover + $(proc_ticks "$pid"))); done
  fi
  echo "$2 $machine $ctld $drover" >>"$1/cpu"
}

proc_ticks() {  # utime + stime + cutime + cstime of PID (fields 14-17 of its stat); 0 once gone
  awk '{sub(/^.*\) /, ""); print $12 + $13 + $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

write_meta() {  # write_meta DIR LABEL START END DONE [JOB_NAME]
  printf 'n %s\nlabel %s\nsubmit_start %s\nsubmit_end %s\ndone_at %s\njob_name %s\n' \
    "$N" "$2" "$3" "$4" "$5" "${6:-}" >"$1/meta"
}

# each_case NAME LABEL SCRIPT [paced]: an sbatch per job, each running SCRIPT's job script (A1,
# A7); paced (S1): each once the job before it started
each_case() {
  local name=$1 label=$2 script=$3 paced=${4:-} dir=$WORK/$1 t start end id k
  mkdir -p "$dir"
  "$script" "$dir/stamps" >"$dir/job.sh"
  cluster_start
  log "$name: $N x sbatch${paced:+, one at a time}"
  RANDOM=1
  cpu_mark "$dir" start
  times >"$dir/times.start"
  start=$(now)
  for k in $(seq 1 "$N"); do
    t=$EPOCHREALTIME
    id=$(sbatch --parsable -J "bench-${name,,}" -o /dev/null --cpus-per-task=1 --mem=100M "$dir/job.sh")
    echo "${id%%;*} $t" >>"$dir/submits"
    [ -z "$paced" ] || wait_started "$dir/stamps" "$k"
  done
  end=$(now)
  times >"$dir/times.end"
  wait_slurm
  cpu_mark "$dir" finished
  write_meta "$dir" "$label" "$start" "$end" "$(now)" "bench-${name,,}"
  scontrol show job -o >"$dir/scontrol"
  keep_ctld_log "$dir"
  $PY slurm "$dir" >/dev/null
}

# drover_task_scripts DIR PAYLOAD [SHELL]: what Drover writes for the tasks of an array (as a C2
# run writes it; exec/slurm/sbatch.cc): DIR/tasks/I links to DIR/attempts/I, whose batch.sh enters
# DIR, exports the contract and runs PAYLOAD; and the array's script on stdout. SHELL (default
# /bin/sh, as Drover's scripts for a lone worker without a timeout) runs both.
drover_task_scripts() {
  local dir=$1 payload=$2 shell=${3:-/bin/sh} i
  mkdir -p "$dir/tasks"
  for i in $(seq 1 "$N"); do
    mkdir -p "$dir/attempts/$i"
    ln -sfn "$dir/attempts/$i" "$dir/tasks/$i"
    cat >"$dir/attempts/$i/batch.sh" <<EOS
#!$shell
cd '$dir' || exit 1
restart=\${SLURM_RESTART_COUNT:-0}
if [ "\$restart" = 0 ]; then
export DROVER_ATTEMPT='1'
export DROVER_JOB_ID='$i'
export DROVER_JOB_NAME='bench-$i'
export DROVER_MASTER_PORT='30501'
export DROVER_NUM_WORKERS='1'
export DROVER_TOKEN='drj_${i}_0000000000000000000000000000000000000000000000000000000000000000'
export DROVER_SERVER='http://127.0.0.1:$API_PORT'
export DROVER_BIN='$DROVER'
export PATH='$(dirname "$DROVER")':"\$PATH"
timeout_marker='$dir/attempts/$i/timed-out'
else
exit 1
fi
read -r host 2>/dev/null </proc/sys/kernel/hostname || host=\$(uname -n)
echo "drover: attempt \$DROVER_ATTEMPT (Slurm run \$restart) on \$host"
export DROVER_WORKER_RANK=0 DROVER_MASTER_ADDR=\$host
$payload
EOS
  done
  printf '#!%s\ndir=%s/tasks/$SLURM_ARRAY_TASK_ID\n' "$shell" "$dir"
  printf '[ -d "$dir" ] || { echo "no attempt" >&2; exit 1; }\n'
  printf 'echo "$SLURM_JOB_ID" > "$dir/slurm-job-id"\n'
  printf 'exec >>"$dir/slurm-$SLURM_JOB_ID.out" 2>&1\n. "$dir/batch.sh"\n'
}

# array_case NAME LABEL SCRIPT: sbatch --array of N tasks, each running SCRIPT's job script
# (A4 to A6: with the options of Drover's arrays; A5 and A6: Drover's task scripts)
array_case() {
  local name=$1 label=$2 script=$3 dir=$WORK/$1 start end line options
  mkdir -p "$dir"
  line='echo "$SLURM_ARRAY_TASK_ID $EPOCHREALTIME" >> '"$dir/stamps"
  case $name in
    A5) drover_task_scripts "$dir" "$line" /bin/bash >"$dir/job.sh" ;;  # $EPOCHREALTIME
    A6) drover_task_scripts "$dir" "exec bash -c '$line'" >"$dir/job.sh" ;;
    *) "$script" "$dir/stamps" >"$dir/job.sh" ;;
  esac
  options=(-o /dev/null)
  case $name in
    A4 | A5 | A6) options=(-o "$dir/array.out" --open-mode=append --requeue --nodes=1
      --ntasks=1 --chdir="$dir") ;;
  esac
  cluster_start
  log "$name: sbatch --array=1-$N"
  cpu_mark "$dir" start
  times >"$dir/times.start"
  start=$(now)
  sbatch --parsable -J "bench-${name,,}" "${options[@]}" --cpus-per-task=1 --mem=100M \
    --array="1-$N" "$dir/job.sh" >/dev/null
  end=$(now)
  times >"$dir/times.end"
  seq 1 "$N" | sed "s/\$/ $start/" >"$dir/submits"
  wait_slurm
  cpu_mark "$dir" finished
  write_meta "$dir" "$label" "$start" "$end" "$(now)" "bench-${name,,}"
  scontrol show job -o >"$dir/scontrol"
  keep_ctld_log "$dir"
  $PY slurm "$dir" >/dev/null
}

# drover_case NAME LABEL QUEUE MODE(each|paced|file); paced (S2): each job once the one before
# it started
drover_case() {
  local dir=$WORK/$1 label=$2 queue=$3 mode=$4 t start end out id k
  mkdir -p "$dir"
  drover_spec "$queue" "$dir/stamps" >"$dir/job.yaml"
  start_server "$dir"
  log "$1: $label"
  if [ "$mode" != file ]; then
    RANDOM=1
    cpu_mark "$dir" start
    times >"$dir/times.start"
    start=$(now)
    for k in $(seq 1 "$N"); do
      t=$EPOCHREALTIME
      out=$("$DROVER" --server "$URL" submit "$dir/job.yaml")
      id=${out#submitted job }
      echo "${id%% *} $t" >>"$dir/submits"
      [ "$mode" != paced ] || wait_started "$dir/stamps" "$k"
    done
    end=$(now)
  else
    for i in $(seq 1 "$N"); do  # names are unique within a file
      [ "$i" = 1 ] || echo "---"
      sed "s/^name: bench\$/name: bench-$i/" "$dir/job.yaml"
    done >"$dir/jobs.yaml"
    cpu_mark "$dir" start
    times >"$dir/times.start"
    start=$(now)
    "$DROVER" --server "$URL" submit "$dir/jobs.yaml" >"$dir/submit.out"
    end=$(now)
  fi
  times >"$dir/times.end"
  [ "$mode" != file ] || awk -v t="$start" '{print $3, t}' "$dir/submit.out" >"$dir/submits"
  wait_drover "$dir" "$queue"
  cpu_mark "$dir" finished
  write_meta "$dir" "$label" "$start" "$end" "$(now)"
  [ ! -s "$dir/slurm_done_at" ] || echo "slurm_done_at $(cat "$dir/slurm_done_at")" >>"$dir/meta"
  [ "$queue" != hpc ] || keep_ctld_log "$dir"
  $PY drover "$dir" "$URL" >/dev/null
  stop_server
}

log "N=$N cases: $CASES; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
log "$(git -C "$ROOT" describe --always --dirty 2>/dev/null || true); $DROVER; $(sbatch --version); $(nproc) cores"
for c in $CASES; do
  case $c in
    A1) each_case A1 "A1 sbatch, one process per job" slurm_script ;;
    A7) each_case A7 "A7 A1 with the line by exec bash -c, as Drover runs it" slurm_exec_script ;;
    A2) array_case A2 "A2 sbatch --array, one submission" slurm_script ;;
    A4) array_case A4 "A4 sbatch --array with the options of Drover's arrays" slurm_script ;;
    A5) array_case A5 "A5 A4 running Drover's task scripts, the line by a builtin" slurm_script ;;
    A6) array_case A6 "A6 A5 with the line by exec bash -c, as Drover runs it" slurm_script ;;
    A3) array_case A3 "A3 sbatch --array, each task's line written by a child bash" slurm_child_script ;;
    B1) drover_case B1 "B1 drover submit, one process per job, local executor" local each ;;
    B2) drover_case B2 "B2 drover submit, one file of $N jobs, local executor" local file ;;
    C1) cluster_start; drover_case C1 "C1 drover submit, one process per job, Slurm executor" hpc each ;;
    C2) cluster_start; drover_case C2 "C2 drover submit, one file of $N jobs, Slurm executor" hpc file ;;
    S1) each_case S1 "S1 A7 one job at a time" slurm_exec_script paced ;;
    S2) cluster_start; drover_case S2 "S2 C1 one job at a time" hpc paced ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
  log "$c done; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
$PY report "$WORK"
