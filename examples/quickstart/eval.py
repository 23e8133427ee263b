"""Quickstart stage 3: evaluate the last checkpoint (CPU only); fails if training diverged."""
import argparse
import json
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--checkpoints", required=True)
args = parser.parse_args()

with open(os.path.join(args.checkpoints, "latest.json")) as f:
    state = json.load(f)
error = abs(state["w"] - 3.0) + abs(state["b"] + 1.5)
print(f"eval: step {state['step']} w={state['w']:.3f} b={state['b']:.3f} error={error:.3f}",
      flush=True)
sys.exit(0 if error < 0.5 else 1)
