#!/bin/bash
# A real Slurm cluster on this one machine for Drover's tests (Debian 12's slurm-wlm 22.05):
# munged, one slurmctld and four slurmd daemons that pose as nodes n1..n4, each with 16 CPUs,
# 64 GB and 4 "GPUs" (character devices that behave like /dev/null: Slurm 22.05 drops GPUs
# without a device file). Partitions: debug (default) and high, whose jobs preempt debug's by
# requeueing or cancelling them (PreemptType=preempt/partition_prio, PreemptMode=REQUEUE).
# Run as root. Everything lives under $DIR (DROVER_SLURM_DIR, default /tmp/drover-slurm);
# SLURM_CONF=$DIR/slurm.conf points the Slurm commands at it. Two clusters can run side by side
# with different DROVER_SLURM_DIR and DROVER_SLURM_PORT (slurmctld's port; the slurmds take the
# four ports from PORT+1). DROVER_SLURM_CPUS: CPUs per node instead of 16.
#
#   slurm-cluster.sh start   start the daemons (installing nothing) and wait until 4 nodes are idle
#   slurm-cluster.sh stop    stop them and the job steps they left behind
#   slurm-cluster.sh env     print the SLURM_CONF line to export
set -euo pipefail
DIR=${DROVER_SLURM_DIR:-/tmp/drover-slurm}
PORT=${DROVER_SLURM_PORT:-7817}
# CPUs each node declares (slurmd takes the declared count: SlurmdParameters=config_overrides):
# bench/slurm_steady_rpc.sh runs 1,000 one-CPU jobs at once.
CPUS=${DROVER_SLURM_CPUS:-16}
export SLURM_CONF=$DIR/slurm.conf

write_conf() {
  # slurmctld -c starts clean anyway, numbering jobs from 1 again: old state may name another
  # cluster, and an old jobcomp log would tell of other jobs under the same ids.
  rm -rf "$DIR/ctld" "$DIR/jobcomp.log"
  mkdir -p "$DIR/ctld" "$DIR/fakegpu"
  for i in 0 1 2 3; do [ -e "$DIR/fakegpu/nvidia$i" ] || mknod "$DIR/fakegpu/nvidia$i" c 1 3; done
  cat > "$DIR/slurm.conf" <<CONF
ClusterName=drover$PORT
SlurmctldHost=localhost
SlurmctldPort=$PORT
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmctldPidFile=$DIR/ctld.pid
SlurmctldLogFile=$DIR/ctld.log
SlurmdSpoolDir=$DIR/spool-%n
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmdLogFile=$DIR/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# A job that names no memory gets 1000 MB per CPU, not the whole node's memory.
DefMemPerCPU=1000
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
SlurmdTimeout=10
MinJobAge=600
KillWait=5
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
SlurmdParameters=config_overrides
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
GresTypes=gpu
NodeName=n[1-4] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((PORT + 1))-$((PORT + 4))] CPUs=$CPUS RealMemory=64000 Gres=gpu:h100:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=10
CONF
  printf 'AutoDetect=off\nNodeName=n[1-4] Name=gpu Type=h100 File=%s/fakegpu/nvidia[0-3]\n' "$DIR" \
    > "$DIR/gres.conf"
}

wait_idle() {
  for _ in $(seq 1 300); do
    [ "$(sinfo -h -N -p debug -o '%T' 2>/dev/null | grep -c '^idle$')" = 4 ] && return 0
    sleep 0.1
  done
  echo "slurm-cluster.sh: nodes not idle after 30 s" >&2
  sinfo -N >&2 || true
  return 1
}

start() {
  for tool in munged slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null || { echo "slurm-cluster.sh: $tool missing (apt-get install slurm-wlm munge)" >&2; exit 1; }
  done
  stop
  write_conf
  if ! pgrep -x munged >/dev/null; then
    [ -s /etc/munge/munge.key ] || { mkdir -p /etc/munge; dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key; }
    install -d -o munge -g munge -m 0755 /run/munge
    runuser -u munge -- /usr/sbin/munged
  fi
  # -c: a clean start, no jobs kept from an earlier run
  slurmctld -c || { tail -5 "$DIR/ctld.log" >&2; exit 1; }
  for n in n1 n2 n3 n4; do slurmd -N "$n" || { tail -5 "$DIR/slurmd-$n.log" >&2; exit 1; }; done
  wait_idle || { tail -5 "$DIR/ctld.log" >&2; exit 1; }
}

stop() {
  local f pid
  for f in "$DIR"/slurmd-n*.pid "$DIR/ctld.pid"; do
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$f"
  done
  # slurmstepd outlives a killed slurmd; its jobs must not outlive the test cluster. Only this
  # cluster's: a step daemon inherits its slurmd's SLURM_CONF.
  for pid in $(pgrep -f "slurmstepd: \[" || true); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF"; then
      kill "$pid" 2>/dev/null || true
    fi
  done
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  env) echo "SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
