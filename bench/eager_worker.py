"""The PyTorch eager side of the side-by-side benchmark (bench/run_bench.py): a long-lived worker
with the line protocol of bench/worker_loop.py.

    .venv/bin/python eager_worker.py MODEL --threads 2 --input x.npy --out-dir d --warmup 3
    stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4" (ms per call); "quit" ends it.

MODEL is a name from models.py, rebuilt here from its fixed seeds; calls run under
torch.inference_mode() with torch.set_num_threads(threads).
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import worker_loop  # noqa: E402


def run():
    a = worker_loop.parse_args()
    torch.set_num_threads(a.threads)
    module = models.build([a.model])[a.model].module
    inputs = [torch.from_numpy(np.load(f)) for f in a.input]
    with torch.inference_mode():
        return worker_loop.serve(lambda: module(*inputs), lambda out: [out.numpy()],
                                 f"torch {torch.__version__}, {torch.get_num_threads()} threads",
                                 a.out_dir, a.warmup)


if __name__ == "__main__":
    worker_loop.main(run)
