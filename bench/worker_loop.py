"""The line protocol of the side-by-side benchmark's Python workers (bench/eager_worker.py,
bench/ort_worker.py, bench/executorch_worker.py), the same as bench/ember_bench_runner.cc's:

    serve(call, to_arrays, info, out_dir, warmup)   # after loading the model
    stdout "info ..." and "ready"; stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4"
    (ms per call); "quit" ends it. A failure is one line "error: ..." (see `main`).

The first call's outputs are written to out_dir/output_<i>.npy for the driver's output check;
only `call()` itself is timed, never the conversion of its outputs.
"""

import argparse
import os
import sys
import time


def parse_args(input_type=str):
    """The workers' shared command line: MODEL --threads N --input X... --out-dir D --warmup W.
    `input_type` converts each --input (a .npy path, or ORT's NAME=path)."""
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--input", action="append", default=[], type=input_type)
    p.add_argument("--out-dir", default="")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--ptd", default="")  # executorch_worker: the program's .ptd, if any
    return p.parse_args()


def serve(call, to_arrays, info, out_dir="", warmup=3, stdin=None, stdout=None):
    """Runs the protocol: call() once and save to_arrays(its result), then up to `warmup` calls
    (stopping after 5 s, at least one), "info <info>", "ready", then answers stdin's commands.
    Returns 0 after "quit" or the end of stdin, 1 after an unknown command."""
    import numpy as np
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    out = call()
    if out_dir:
        for i, a in enumerate(to_arrays(out)):
            np.save(os.path.join(out_dir, f"output_{i}.npy"), a)
    t0 = time.perf_counter()
    for i in range(warmup):
        if i > 0 and time.perf_counter() - t0 > 5:
            break
        call()
    print(f"info {info}", file=stdout, flush=True)
    print("ready", file=stdout, flush=True)
    for line in stdin:
        line = line.strip()
        if line == "quit":
            break
        n = line[4:] if line.startswith("run ") else ""
        if not n.isdigit():
            print(f"error: unknown command '{line}'", file=stdout, flush=True)
            return 1
        times = []
        for _ in range(int(n)):
            t = time.perf_counter_ns()
            call()
            times.append((time.perf_counter_ns() - t) / 1e6)
        print("times " + " ".join(f"{t:.4f}" for t in times), file=stdout, flush=True)
    return 0


def main(run):
    """sys.exit(run()), with any exception as one "error: ..." line for the driver (which
    reports it as the system's n/a reason)."""
    try:
        sys.exit(run())
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"error: {type(e).__name__}: {first}", flush=True)
        sys.exit(1)
