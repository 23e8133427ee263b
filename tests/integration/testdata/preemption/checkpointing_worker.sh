#!/bin/sh
# A worker that checkpoints, for the preemption tests: usage: checkpointing_worker.sh LOG STEPS
#
# It counts STEPS steps of 0.1 s. After each it saves the count to $DROVER_CHECKPOINT_DIR/step
# (atomically) and touches $DROVER_CHECKPOINT_DIR/.drover-checkpoint, so its agent reports a
# checkpoint. With DROVER_RESUME=1 it continues from the saved count. On SIGTERM it appends the
# preemption notice ($DROVER_PREEMPT_NOTICE, absent for a plain cancel) to LOG, saves, touches
# the marker and exits 143 (128 + SIGTERM). LOG gets one line per event:
#   started | resumed at N | stopped at N: <notice or "no notice"> | finished at N
log=$1
steps=${2:-1000}
dir=${DROVER_CHECKPOINT_DIR:?checkpoint_dir must be set}
mkdir -p "$dir"
step=0
if [ "${DROVER_RESUME:-0}" = 1 ] && [ -s "$dir/step" ]; then
  step=$(cat "$dir/step")
  echo "resumed at $step" >> "$log"
else
  echo "started" >> "$log"
fi

save() {
  echo "$step" > "$dir/step.tmp" && mv "$dir/step.tmp" "$dir/step" && touch "$dir/.drover-checkpoint"
}

on_term() {
  notice="no notice"
  if [ -n "$DROVER_PREEMPT_NOTICE" ] && [ -s "$DROVER_PREEMPT_NOTICE" ]; then
    notice=$(cat "$DROVER_PREEMPT_NOTICE")
  fi
  echo "stopped at $step: $notice" >> "$log"
  save
  exit 143
}
trap on_term TERM

while [ "$step" -lt "$steps" ]; do
  sleep 0.1 &
  wait $!
  step=$((step + 1))
  save
done
echo "finished at $step" >> "$log"
