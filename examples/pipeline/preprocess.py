"""Preprocessing stage of examples/pipeline.yaml: writes a small dataset into the staging
directory Drover gives it ($DROVER_OUTPUT_DATASET); Drover publishes it on success."""
import os
import time

out = os.environ["DROVER_OUTPUT_DATASET"]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "train.csv"), "w") as f:
    for i in range(1000):
        f.write(f"{i},{(i * 7919) % 1000 / 1000:.3f}\n")
time.sleep(0.5)
print(f"wrote 1000 rows to {out}", flush=True)
