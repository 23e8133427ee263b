"""Quickstart stage 1: make a small synthetic regression data set (CPU only)."""
import argparse
import json
import os
import random
import shutil

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--samples", type=int, default=2048)
parser.add_argument("--clear", help="a checkpoint directory to empty, so training starts fresh")
args = parser.parse_args()

os.makedirs(args.out, exist_ok=True)
if args.clear:
    shutil.rmtree(args.clear, ignore_errors=True)
rng = random.Random(42)
true_w, true_b = 3.0, -1.5
rows = []
for _ in range(args.samples):
    x = rng.uniform(-2.0, 2.0)
    rows.append([x, true_w * x + true_b + rng.gauss(0.0, 0.1)])
path = os.path.join(args.out, "data.json")
with open(path + ".tmp", "w") as f:
    json.dump(rows, f)
os.replace(path + ".tmp", path)
print(f"prep: wrote {len(rows)} samples to {path}", flush=True)
