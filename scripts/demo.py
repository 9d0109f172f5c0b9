"""Ember's main job on the bundled default model: run it with Ember, compare with eager PyTorch.

Until `ember compile` lands (issue 4), the default model is the program the build writes
(tools/make_demo_program.cc): y = (x * w + b) * x on a 1x3x224x224 image, weights in a .ptd.
PyTorch computes the same function from the same weights; the script prints the max error and
Ember's median latency.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import torch


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--ember", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    rng = np.random.default_rng(a.seed)
    x = rng.standard_normal((1, 3, 224, 224), dtype=np.float32)
    x_path = os.path.join(a.work, "x.npy")
    np.save(x_path, x)
    out_dir = os.path.join(a.work, "out")
    cmd = [a.ember, "run", os.path.join(a.work, "demo.pte"), "--ptd", os.path.join(a.work, "demo.ptd"),
           "--input", x_path, "--output-dir", out_dir, "--repeat", str(a.repeat), "--threads", str(a.threads)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("ember run failed: " + run.stderr.strip())
    y = np.load(os.path.join(out_dir, "output_0.npy"))

    w = torch.from_numpy(np.load(os.path.join(a.work, "w.npy")))
    b = torch.from_numpy(np.load(os.path.join(a.work, "b.npy")))
    xt = torch.from_numpy(x)
    with torch.no_grad():
        expected = ((xt * w + b) * xt).numpy()
    err = float(np.max(np.abs(y - expected)))
    latency = re.search(r"latency: median ([0-9.]+) ms", run.stdout)
    print(f"model: y = (x * w + b) * x, x {list(x.shape)} float32 (program written by the build)")
    print(f"max abs error vs eager PyTorch {torch.__version__}: {err:.3g}")
    print(f"Ember latency: median {latency.group(1)} ms over {a.repeat} runs, {a.threads} threads")
    if not np.allclose(y, expected, rtol=1e-6, atol=1e-6):
        sys.exit("mismatch with PyTorch")


if __name__ == "__main__":
    main()
