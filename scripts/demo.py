"""Ember's main job on the bundled default model, end to end.

torchvision ResNet-18 (random weights from a fixed seed; nothing is downloaded) is exported with
ember.export, compiled with `ember compile`, run with `ember run`, and compared with eager PyTorch
on the same input. Prints the max error and the median latency of both.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import ember  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{os.path.basename(cmd[0])} {cmd[1]} failed: {r.stderr.strip()}")
    return r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--ember", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", default="resnet18", help="a torchvision.models name")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="cpu",
                   help="backend for `ember compile --backend` (cpu: oneDNN; 'none': portable)")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)

    torch.manual_seed(a.seed)
    model = getattr(torchvision.models, a.model)().eval()
    x = torch.randn(1, 3, 224, 224)
    ep = os.path.join(a.work, f"{a.model}.ep")
    pte = os.path.join(a.work, f"{a.model}.pte")
    t0 = time.perf_counter()
    ember.export(model, (x,), ep)
    t1 = time.perf_counter()
    backend = [] if a.backend == "none" else ["--backend", a.backend]
    compile_report = run([a.ember, "compile", ep, "-o", pte] + backend)
    t2 = time.perf_counter()

    x_path = os.path.join(a.work, "input.npy")
    np.save(x_path, x.numpy())
    out_dir = os.path.join(a.work, "out")
    stdout = run([a.ember, "run", pte, "--input", x_path, "--output-dir", out_dir,
                  "--repeat", str(a.repeat), "--threads", str(a.threads)])
    y = np.load(os.path.join(out_dir, "output_0.npy"))

    torch.set_num_threads(a.threads)
    with torch.no_grad():
        expected = model(x)
        times = []
        for _ in range(a.repeat):
            s = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - s) * 1e3)
    expected = expected.numpy()
    err = float(np.max(np.abs(y - expected)))
    ember_ms = float(re.search(r"latency: median ([0-9.]+) ms", stdout).group(1))
    print(f"model: torchvision {a.model}, input [1, 3, 224, 224] float32, seed {a.seed}")
    print(f"export {t1 - t0:.2f} s, compile {t2 - t1:.2f} s")
    # The plan's summary; `ember compile` also prints each delegate's nodes and the notes.
    for line in compile_report.strip().splitlines():
        if line.startswith(("compiled", "memory:", "weights:", "partition ", "delegates")):
            print(f"  {line}")
    print(f"  backend: {a.backend} (`ember inspect {pte}` lists what each delegate runs)")
    print(f"max abs error vs eager PyTorch {torch.__version__}: {err:.3g} "
          f"(top-1 {int(np.argmax(y))} vs {int(np.argmax(expected))})")
    print(f"latency at {a.threads} threads, median of {a.repeat}: Ember {ember_ms:.2f} ms, "
          f"PyTorch eager {float(np.median(times)):.2f} ms")
    if not np.allclose(y, expected, rtol=1e-4, atol=1e-4):
        sys.exit("mismatch with PyTorch beyond rtol 1e-4")


if __name__ == "__main__":
    main()
