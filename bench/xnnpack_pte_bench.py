"""ExecuTorch's XNNPACK-delegated programs on Ember's runtime and on ExecuTorch's, side by side: the
same .pte files (tests/e2e/xnnpack_programs.py's exports, from its cache), the same machine, the
same run, at each thread count.

    .venv/bin/python bench/xnnpack_pte_bench.py [--models mobilenet_v2,...] [--flows fp32,...]
        [--threads 1,2] [--rounds 5] [--per-round 4] [--warmup 3] [--build build/release]
        [--work DIR] [--markdown FILE]

Per (model, flow, threads) it starts one worker per runtime, each in its own process so that
their peak RSS is apart: Ember's bench/ember_bench_runner (the Module API; `--threads N` sets
ModuleOptions::num_threads, which resizes ThreadPool::global(), the pool the cpu engine uses
when a program gives it no "num_threads" compile spec, as ExecuTorch's XNNPACK programs do not)
and bench/executorch_worker.py (ExecuTorch's runtime from pip with its XNNPACK delegate;
threads: executorch 1.5.1 has no environment variable or Runtime option for them, and its only
handle is the pybindings' experimental `_unsafe_reset_threadpool(N)`, called before the program
loads and read back with `_threadpool_get_thread_count()`; its default is one thread per core).
Every worker also runs with OMP_NUM_THREADS=N.

Measured, per runtime:
- latency: the median of rounds x per-round executes after `--warmup` ones, the two runtimes
  interleaved round by round (the order alternating), so drift on the machine hits both alike.
  ExecuTorch's is a call through its Python binding (method.execute with torch tensors), about
  10 us more than the C++ call: it matters only for the smallest models;
- first output: the time from loading the program to the end of the first execute, measured
  in-process by each worker alike (its inputs already read): ExecuTorch's from load_program,
  Ember's runner from constructing its Module, each to the first execute's return ("first_output
  MS KB" before "ready");
- peak RSS (VmHWM of the worker process, read from /proc just before it quits), and the part
  of it above what the process held before the model: for ExecuTorch the VmHWM the worker
  reads just before load_program (Python, torch and ExecuTorch imported), for Ember the VmHWM
  of the same runner on a trivial program (x + 1, portable kernels; ember_baseline). Ember's
  whole-process number is what a C++ application would see; ExecuTorch's includes the Python
  interpreter and torch, so compare the parts above the baselines.

Each worker's first output is checked against ExecuTorch's (xnnpack_programs.differ, its
Ember-vs-ExecuTorch bound, or for a quantized flow ExecuTorch's own distance to eager where
that is larger, as in xnnpack_programs.check_row); a wrong one is reported and not timed. A runtime that refuses
a program is reported per row with the first line of its message ("Ember refused: ...").
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import xnnpack_programs as xp  # noqa: E402

EMBER = "Ember"
ET = "ExecuTorch"
DEFAULT_MODELS = ["mlp", "convnet", "linear_stack", "resnet18", "mobilenet_v2", "et_mv2_untrained",
                  "tv_mv3", "tv_resnet18", "transformer"]
DEFAULT_FLOWS = ["fp32", "int8_static", "int8_dynamic", "8da4w"]


class Worker:
    """One runtime's process: spawned, first output, then 'run N' -> 'times ...', 'quit'."""

    def __init__(self, system, cmd, threads):
        self.system, self.first_ms, self.base_kb, self.info = system, None, None, ""
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)

    def wait_ready(self):
        """None when ready, else the reason it is not (the first line of the runtime's error)."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read().strip().splitlines()
                self.close()
                return err[-1] if err else f"worker exited ({self.proc.returncode})"
            if line.startswith("first_output "):
                ms, kb = line.split()[1:3]
                self.first_ms, self.base_kb = float(ms), int(kb)
            elif line.startswith("info "):
                self.info = line[5:].strip()
            elif line.startswith("ready"):
                if self.first_ms is None:
                    return "no first_output line before ready"
                return None
            elif line.startswith("error"):
                self.close()
                return line.strip()[len("error: "):][:300]

    def run(self, n):
        self.proc.stdin.write(f"run {n}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith("times"):
            raise RuntimeError(line.strip() or "worker exited")
        return [float(t) for t in line.split()[1:]]

    peak_kb = None

    def close(self):
        """Records the process's peak RSS (VmHWM, kB) while it is alive, then ends it."""
        if self.proc.poll() is None:
            self.peak_kb = vm_hwm_kb(self.proc.pid)
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def vm_hwm_kb(pid):
    """A live process's peak resident set (VmHWM of /proc/PID/status) in kB, or None. Not
    wait4's ru_maxrss: on Linux that keeps the high-water mark of the forked Python parent's
    memory from before exec."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def trivial_program(work):
    """A portable program of x + 1 written by ExecuTorch's exporter (no delegate), for the Ember
    runner's baseline; cached in `work`."""
    path = os.path.join(work, "baseline_add_one.pte")
    if not os.path.exists(path):
        import torch
        from executorch.exir import to_edge

        class AddOne(torch.nn.Module):
            def forward(self, x):
                return x + 1

        program = to_edge(torch.export.export(AddOne(), (torch.ones(4),))).to_executorch()
        os.makedirs(work, exist_ok=True)
        with open(path, "wb") as f:
            f.write(program.buffer)
    return path


def ember_baseline(runner, work, n=5):
    """(median ms to spawn Ember's runner and have it exit on a usage error; its peak RSS in kB
    on a trivial program, x + 1 on the portable kernels, or None)."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([runner], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1e3)
    import numpy as np
    x = os.path.join(work, "baseline_add_one_in.npy")
    np.save(x, np.ones(4, np.float32))
    w = Worker(EMBER, [runner, trivial_program(work), "--input", x, "--warmup", "0"], 1)
    ready = w.wait_ready() is None
    w.close()
    return statistics.median(times), w.peak_kb if ready else None


def commands(args, directory, meta, threads):
    pte = os.path.join(directory, "program.pte")
    ptd = xp.ptd_of(directory)
    ins = [a for i in range(meta["inputs"])
           for a in ("--input", os.path.join(directory, f"in_{i}.npy"))]
    out = {s: os.path.join(directory, "bench_out", s.lower(), str(threads)) for s in (EMBER, ET)}
    for d in out.values():
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
    ember = [os.path.join(args.build, "bench", "ember_bench_runner"), pte, "--threads",
             str(threads)] + (["--ptd", ptd] if ptd else []) + ins + \
        ["--out-dir", out[EMBER], "--warmup", "0"]
    et = [sys.executable, os.path.join(HERE, "executorch_worker.py"), pte, "--threads",
          str(threads)] + (["--ptd", ptd] if ptd else []) + ins + \
        ["--out-dir", out[ET], "--warmup", "0"]
    return {EMBER: ember, ET: et}, out


def outputs(directory, n):
    import numpy as np
    paths = [os.path.join(directory, f"output_{i}.npy") for i in range(n)]
    return [np.load(p) for p in paths] if all(os.path.exists(p) for p in paths) else None


def measure(args, model, flow, threads, baseline):
    """{system: {"status", "times", "first_ms", "peak_kb", "model_kb"}} for one cell."""
    directory, meta = xp.prepare(model, flow, args.work)
    if "error" in meta or "not_applicable" in meta:
        why = meta.get("error") or meta.get("not_applicable")
        return {s: {"status": f"exporter: {why}"} for s in (EMBER, ET)}
    cmds, out = commands(args, directory, meta, threads)
    res, workers = {}, []
    for s in (ET, EMBER):  # ExecuTorch first: its output is the reference of the check
        w = Worker(s, cmds[s], threads)
        why = w.wait_ready()
        if why:
            res[s] = {"status": ("Ember refused: " if s == EMBER else "ExecuTorch failed: ") + why}
            continue
        res[s] = {"status": "ok", "times": [], "first_ms": w.first_ms, "info": w.info}
        workers.append(w)
    reference = outputs(out[ET], meta["outputs"])
    for w in list(workers):
        if w.system == ET:
            continue
        got = outputs(out[w.system], meta["outputs"])
        if reference is None or got is None:
            res[w.system]["status"] = "no output to check"
        else:
            # xnnpack_programs.check_row's rule: past the tight bound, a quantized program may
            # drift from ExecuTorch where it stays as close to eager as ExecuTorch does.
            eager = xp.load_arrays(directory, "ref", meta["outputs"])
            c = xp.against_executorch(flow, got, reference, eager,
                                      meta.get("output_scales") or [])
            res[w.system]["err"] = c["err"]
            if c["problem"]:
                res[w.system]["status"] = f"wrong output ({c['problem']})"
        if res[w.system]["status"] != "ok":
            w.close()
            workers.remove(w)
    for w in workers:
        try:
            w.run(args.warmup) if args.warmup else None
        except RuntimeError as e:
            res[w.system]["status"] = f"failed in warm-up: {e}"
    workers = [w for w in workers if res[w.system]["status"] == "ok"]
    for r in range(args.rounds):
        for w in (workers if r % 2 == 0 else workers[::-1]):
            try:
                res[w.system]["times"] += w.run(args.per_round)
            except RuntimeError as e:
                res[w.system]["status"] = f"failed while timed: {e}"
        workers = [w for w in workers if res[w.system]["status"] == "ok"]
    for w in workers:
        w.close()
        res[w.system]["peak_kb"] = w.peak_kb
        base = baseline[1] if w.system == EMBER else w.base_kb
        res[w.system]["model_kb"] = w.peak_kb - base if w.peak_kb and base else None
        res[w.system]["median"] = statistics.median(res[w.system]["times"])
    return res


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def markdown(rows, run):
    lines = ["# Ember vs ExecuTorch on ExecuTorch's XNNPACK programs", "",
             f"bench/xnnpack_pte_bench.py, {run['date']}, {run['machine']}; {run['runs']} timed "
             f"runs "
             f"per runtime after {run['warmup']} warm-up runs. Ember's process baseline (spawn to "
             f"exit; peak RSS on x + 1): {run['baseline'][0]:.2f} ms, "
             f"{(run['baseline'][1] or 0) / 1024:.1f} MiB. "
             "Ratios are Ember / ExecuTorch (below 1: Ember is faster or smaller).", "",
             "| model | flow | threads | Ember ms | ExecuTorch ms | ratio | first output Ember ms "
             "| ExecuTorch ms | ratio | peak RSS Ember MiB (above baseline) | ExecuTorch MiB "
             "(above imports) | ratio (above) | status |", "|" + "---|" * 13]
    for (model, flow, threads), res in rows:
        e, x = res.get(EMBER, {}), res.get(ET, {})
        timed = lambda r, k: r.get(k) if "median" in r else None  # noqa: E731
        ms = lambda v, digits: "-" if v is None else f"{v:.{digits}f}"  # noqa: E731
        mib = lambda kb: "-" if kb is None else f"{kb / 1024:.1f}"  # noqa: E731
        status = "; ".join(res[s]["status"] if res[s]["status"].startswith(s) else
                           f"{s}: {res[s]['status']}" for s in (EMBER, ET)
                           if res.get(s, {}).get("status", "ok") != "ok") or "ok"
        cells = [model, flow, str(threads),
                 ms(timed(e, "median"), 3), ms(timed(x, "median"), 3),
                 ratio(timed(e, "median"), timed(x, "median")),
                 ms(timed(e, "first_ms"), 2), ms(timed(x, "first_ms"), 2),
                 ratio(timed(e, "first_ms"), timed(x, "first_ms")),
                 f"{mib(e.get('peak_kb'))} ({mib(e.get('model_kb'))})",
                 f"{mib(x.get('peak_kb'))} ({mib(x.get('model_kb'))})",
                 ratio(e.get("model_kb"), x.get("model_kb")), status.replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--flows", default=",".join(DEFAULT_FLOWS))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--per-round", type=int, default=4)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--work", default=xp.DEFAULT_WORK)
    p.add_argument("--markdown")
    args = p.parse_args()
    runner = os.path.join(args.build, "bench", "ember_bench_runner")
    if not os.access(runner, os.X_OK):
        sys.exit(f"{runner} is not an executable (scripts/build release, or --build)")
    baseline = ember_baseline(runner, args.work)
    rows = []
    for model in args.models.split(","):
        for flow in args.flows.split(","):
            for threads in [int(t) for t in args.threads.split(",")]:
                res = measure(args, model, flow, threads, baseline)
                rows.append(((model, flow, threads), res))
                cells = []
                for s in (EMBER, ET):
                    r = res[s]
                    cells.append(f"{s} " + (f"{r['median']:.3f} ms first {r['first_ms']:.1f} ms "
                                             f"rss {r['peak_kb'] / 1024:.0f} MiB"
                                             if "median" in r else r["status"][:120]))
                print(f"{model:16s} {flow:12s} {threads}t  " + " | ".join(cells), flush=True)
    run = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": os.uname().machine + ", " +
           str(os.cpu_count()) + " CPUs", "runs": args.rounds * args.per_round,
           "warmup": args.warmup, "baseline": baseline}
    text = markdown(rows, run)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
