"""The ExecuTorch side of the side-by-side benchmark (bench/run_bench.py): a long-lived worker
with the line protocol of bench/worker_loop.py, running a .pte that ExecuTorch's own exporter
lowered to XNNPACK (run_bench.export_executorch) on ExecuTorch's runtime from PyPI.

    .venv/bin/python executorch_worker.py model.pte --threads 2 --input x.npy --out-dir d
    stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4" (ms per execute); "quit" ends it.

--ptd gives the program's external data. Before "info", one line "first_output <ms> <kB>": the
time from load_program to the end of the first execute, and the process's peak RSS (VmHWM)
before load_program, what Python, torch and ExecuTorch took before the model
(bench/xnnpack_pte_bench.py reads it; run_bench.py's driver skips it).

Threads: XNNPACK runs on ExecuTorch's process-wide threadpool, whose size the Python package
sets only through the pybindings' `_unsafe_reset_threadpool` (experimental, underscored, the
only handle in executorch 1.5.1; the default is one thread per core). It is set before the
program loads, so the delegate is built on the resized pool, and read back: a pool of another
size is an error, not a silently mislabelled column.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worker_loop  # noqa: E402


def set_threads(threads):
    """Resizes ExecuTorch's threadpool to `threads`; returns the size it reports afterwards."""
    from executorch.extension.pybindings import portable_lib
    portable_lib._unsafe_reset_threadpool(threads)
    return portable_lib._threadpool_get_thread_count()


def peak_rss_kb():
    """The process's peak resident set (VmHWM) in kB, or 0 where /proc has no such line."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def run():
    import time
    import numpy as np
    import torch
    from executorch.runtime import Runtime
    from executorch.version import __version__ as et_version
    a = worker_loop.parse_args()
    pool = set_threads(a.threads)
    if pool != a.threads:
        raise RuntimeError(f"ExecuTorch's threadpool has {pool} threads after a reset to "
                           f"{a.threads}")
    inputs = [torch.from_numpy(np.load(f)) for f in a.input]
    before = peak_rss_kb()
    start = time.perf_counter()
    method = Runtime.get().load_program(a.model, data_path=a.ptd or None).load_method("forward")
    if method is None:
        raise RuntimeError(f"{a.model} has no method 'forward'")
    first = []

    def call():
        out = method.execute(inputs)
        if not first:
            first.append((time.perf_counter() - start) * 1e3)
            print(f"first_output {first[0]:.4f} {before}", flush=True)
        return out

    info = f"executorch {et_version}, XNNPACK delegate, threadpool {pool} threads"
    return worker_loop.serve(call, lambda outs: [o.numpy() for o in outs], info, a.out_dir,
                             a.warmup)


if __name__ == "__main__":
    worker_loop.main(run)
