"""The ONNX Runtime side of the side-by-side benchmark (bench/run_bench.py): a long-lived worker
with the line protocol of bench/worker_loop.py, on PyPI's `onnxruntime`.

    .venv/bin/python ort_worker.py model.onnx --threads 2 --input x=x.npy --out-dir d --warmup 3
    stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4" (ms per run); "quit" ends it.

The session is what a user tuning for latency would make: CPU execution provider, intra-op
threads = --threads, inter-op 1, sequential execution, all graph optimizations.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worker_loop  # noqa: E402


def session_options(threads):
    """The benchmark's onnxruntime.SessionOptions for `threads` intra-op threads."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return so


def parse_input(spec):
    """'name=path.npy' -> ('name', 'path.npy'); the name is the ONNX graph input's."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"--input wants NAME=FILE.npy, not '{spec}'")
    return name, path


def run():
    import numpy as np
    import onnxruntime as ort
    a = worker_loop.parse_args(parse_input)
    session = ort.InferenceSession(a.model, session_options(a.threads),
                                   providers=["CPUExecutionProvider"])
    feeds = {name: np.load(path) for name, path in a.input}
    info = (f"onnxruntime {ort.__version__}, {', '.join(session.get_providers())}, "
            f"intra-op {a.threads} inter-op 1 sequential")
    return worker_loop.serve(lambda: session.run(None, feeds), lambda outs: outs, info,
                             a.out_dir, a.warmup)


if __name__ == "__main__":
    worker_loop.main(run)
