"""One trial of the sweep in examples/pipeline.yaml: "trains" for a few steps on the GPU Drover
assigned (CUDA_VISIBLE_DEVICES), then writes its model file and its accuracy (a value output)
to the staging locations Drover gives it."""
import argparse
import json
import math
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--layers", type=int, required=True)
parser.add_argument("--data", required=True)
args = parser.parse_args()

rows = sum(1 for _ in open(os.path.join(args.data, "train.csv")))
gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "")
print(f"trial {os.environ.get('DROVER_JOB_NAME')}: lr={args.lr} layers={args.layers} "
      f"rows={rows} gpu={gpu}", flush=True)
loss = 1.0
for step in range(5):
    loss *= 1 - min(args.lr * 4, 0.9) / (1 + 0.1 * args.layers)
    time.sleep(0.2)
# A made-up response surface: best near lr 0.03 with 4 layers.
accuracy = 0.95 - 0.2 * abs(math.log10(args.lr) - math.log10(0.03)) - 0.02 * (4 - args.layers)
with open(os.environ["DROVER_OUTPUT_MODEL"], "w") as f:
    json.dump({"lr": args.lr, "layers": args.layers, "loss": loss}, f)
with open(os.environ["DROVER_OUTPUT_ACCURACY"], "w") as f:
    f.write(f"{accuracy:.4f}\n")
print(f"accuracy {accuracy:.4f}", flush=True)
