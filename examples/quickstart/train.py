"""Quickstart stage 2: data-parallel training of y = w*x + b by a gang of workers.

Each worker trains on its shard of the data and reads its rank and the gang size from the
environment Drover sets (DROVER_WORKER_RANK, DROVER_NUM_WORKERS) and its GPUs from
CUDA_VISIBLE_DEVICES. With PyTorch and a GPU it computes on the GPU; otherwise it runs the same
arithmetic in plain Python. Rank 0 writes a checkpoint to $DROVER_CHECKPOINT_DIR every few steps
and resumes from the newest one if it exists (a retried attempt continues where it stopped).
"""
import argparse
import json
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()

rank = int(os.environ["DROVER_WORKER_RANK"])
world = int(os.environ["DROVER_NUM_WORKERS"])
gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
ckpt_dir = os.environ.get("DROVER_CHECKPOINT_DIR", "")
attempt = os.environ.get("DROVER_ATTEMPT", "1")

with open(os.path.join(args.data, "data.json")) as f:
    rows = json.load(f)[rank::world]

device = "python"
try:
    import torch  # noqa: F401

    if torch.cuda.is_available():
        device = "cuda"
except ImportError:
    torch = None

print(f"train: rank {rank}/{world} attempt {attempt} CUDA_VISIBLE_DEVICES={gpus!r} "
      f"device={device} samples={len(rows)}", flush=True)

w, b, start = 0.0, 0.0, 0
ckpt_path = os.path.join(ckpt_dir, "latest.json") if ckpt_dir else ""
if ckpt_path and os.path.exists(ckpt_path):
    with open(ckpt_path) as f:
        state = json.load(f)
    w, b, start = state["w"], state["b"], state["step"]
    print(f"train: rank {rank} resumed from step {start}", flush=True)

if device == "cuda":
    xs = torch.tensor([r[0] for r in rows], device="cuda")
    ys = torch.tensor([r[1] for r in rows], device="cuda")

lr = 0.1
for step in range(start, args.steps):
    if device == "cuda":
        err = (w * xs + b) - ys
        gw, gb = float((2 * err * xs).mean()), float((2 * err).mean())
    else:
        gw = gb = 0.0
        for x, y in rows:
            err = (w * x + b) - y
            gw += 2 * err * x
            gb += 2 * err
        gw, gb = gw / len(rows), gb / len(rows)
    w, b = w - lr * gw, b - lr * gb
    time.sleep(0.05)
    if rank == 0 and ckpt_dir and (step + 1) % 5 == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        with open(ckpt_path + ".tmp", "w") as f:
            json.dump({"w": w, "b": b, "step": step + 1}, f)
        os.replace(ckpt_path + ".tmp", ckpt_path)
        print(f"train: step {step + 1} w={w:.3f} b={b:.3f} checkpointed", flush=True)
print(f"train: rank {rank} done, w={w:.3f} b={b:.3f}", flush=True)
