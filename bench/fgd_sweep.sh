#!/usr/bin/env bash
# The FGD sweep of docs/simulation.md: every openb workload of TRACES (the alibaba-gpu-v2023
# folder) at 130% arrived demand, SEEDS seeds from 42 (default 10), under POLICY (default: none,
# i.e. the default scoring), on the node list NODES (a file name in TRACES). Prints one markdown
# row per workload: the mean allocation ratio at 130%, FGD's published mean (06-FGD, the paper's
# 10 seeds; "—" for the workloads the paper did not run) and the difference, then the min and
# max per-seed values; and a last line with the workloads below published + 1.0 point.
#
#   bench/fgd_sweep.sh build/drover ../shared/traces/alibaba-gpu-v2023 \
#       openb_node_list_all_node.csv [SEEDS] [POLICY]
#
# Runs the workloads one after the other (one core); about 17 s per workload at 10 seeds in the
# dev build on a quiet 2-core VM.
set -euo pipefail
drover=$1
traces=$2
nodes=$3
seeds=${4:-10}
policy=${5:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for pods in "$traces"/openb_pod_list_*.csv; do
  workload=$(basename "$pods" .csv)
  args=(simulate --format openb --nodes "$traces/$nodes" --pods "$pods" --experiment fgd
        --inflate 1.3 --seed 42 --seeds "$seeds" --published "$traces/fgd-expected-results"
        --no-timing -o json)
  if [[ -n "$policy" ]]; then args+=(--policy "$policy"); fi
  "$drover" "${args[@]}" > "$out/$workload.json"
done
python3 - "$out" <<'EOF'
import json, pathlib, sys
rows, short = [], []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    result = json.loads(path.read_text())
    name = path.stem.removeprefix("openb_pod_list_")
    ours = result["allocation_ratio_at"]["130"]
    runs = [run["allocation_ratio_at"]["130"] for run in result.get("runs", [])] or [ours]
    published = result.get("published", {}).get("allocation_ratio_at", {}).get("130")
    if published is None:
        rows.append(f"| {name} | {ours:.2f} | — | — | {min(runs):.2f}–{max(runs):.2f} |")
        continue
    rows.append(f"| {name} | {ours:.2f} | {published:.2f} | {ours - published:+.2f} | "
                f"{min(runs):.2f}–{max(runs):.2f} |")
    if ours < published + 1.0:
        short.append(f"{name} ({ours - published:+.2f})")
print(f"policy: {result['policy']}, seeds {result['seeds'][0]}..{result['seeds'][-1]}, "
      f"nodes {result['nodes']}")
print("| workload | mean at 130% | FGD published | difference | per seed |")
print("|---|---|---|---|---|")
print("\n".join(rows))
print("below published + 1.0:", ", ".join(short) if short else "none")
EOF
