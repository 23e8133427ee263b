"""Evaluation stage of examples/pipeline.yaml: reads the best trial's published model."""
import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--accuracy", type=float, required=True)
args = parser.parse_args()
with open(args.model) as f:
    model = json.load(f)
print(f"best trial: lr={model['lr']} layers={model['layers']} accuracy={args.accuracy:.4f}",
      flush=True)
