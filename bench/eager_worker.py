"""The PyTorch eager side of the side-by-side benchmark (bench/run_bench.py): a long-lived worker
with the same line protocol as bench/ember_bench_runner.cc.

    .venv/bin/python eager_worker.py MODEL --threads 2 --input x.npy --out-dir d --warmup 3
    stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4" (ms per call); "quit" ends it.

MODEL is a name from models.py, rebuilt here from its fixed seeds; calls run under
torch.inference_mode() with torch.set_num_threads(threads).
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--out-dir", default="")
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    module = models.build([a.model])[a.model].module
    inputs = [torch.from_numpy(np.load(f)) for f in a.input]
    with torch.inference_mode():
        out = module(*inputs)
        if a.out_dir:
            np.save(os.path.join(a.out_dir, "output_0.npy"), out.numpy())
        t0 = time.perf_counter()
        for i in range(a.warmup):  # up to --warmup runs, stopping after 5 s (at least one)
            if i > 0 and time.perf_counter() - t0 > 5:
                break
            module(*inputs)
        print(f"info torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
        print("ready", flush=True)
        for line in sys.stdin:
            line = line.strip()
            if line == "quit":
                break
            if not line.startswith("run "):
                print(f"error: unknown command '{line}'", flush=True)
                return 1
            times = []
            for _ in range(int(line[4:])):
                t0 = time.perf_counter_ns()
                module(*inputs)
                times.append((time.perf_counter_ns() - t0) / 1e6)
            print("times " + " ".join(f"{t:.4f}" for t in times), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one line for the driver, like the other workers
        print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
        sys.exit(1)
