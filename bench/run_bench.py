"""Side-by-side latency of Ember, ExecuTorch with XNNPACK, PyTorch eager and ONNX Runtime (issue
6), in one run.

    scripts/bench [--quick] [--write-docs]          # setup, build, then this script
    .venv/bin/python bench/run_bench.py [--models resnet18,...] [--threads 1,2] [--quick]

The peers come from the virtual environment (scripts/requirements.lock): torch, executorch and
onnxruntime from PyPI. For every model (bench/models.py) and thread count it starts one long-lived
worker per system (bench/ember_bench_runner, bench/executorch_worker.py, bench/eager_worker.py,
bench/ort_worker.py), checks each worker's first output against eager PyTorch, then times the
systems in interleaved rounds: every round runs each system PER_ROUND times, the order rotating
from round to round, so that drift on the machine hits all systems alike. It reports medians,
ratios to ONNX Runtime, a PNG chart, and with --write-docs docs/performance.md. A configuration
`ember compile` (or a peer's export) refuses is reported as "n/a (reason)"; one whose output is
wrong is reported as such and not timed.
"""

import argparse
import copy
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import layer_report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# --- Ember configurations: name -> extra `ember compile` arguments and the output tolerance
# (largest |error| allowed, relative to the largest |eager output|). Adjust the flags here. -------
EMBER_CONFIGS = {
    "Ember portable": {"compile": [], "tol": 1e-3},
    "Ember cpu fp32": {"compile": ["--backend", "cpu"], "tol": 1e-3},
    "Ember cpu bf16": {"compile": ["--backend", "cpu", "--precision", "bf16"], "tol": 1e-1,
                       "top1": True},
}
# Models whose output ends in class logits (the last row): the output check also reports whether
# the top-1 class agrees with eager PyTorch, and a configuration with "top1" must agree.
LOGITS = {"resnet18", "mobilenet_v2", "llama_prefill", "llama_decode"}
XNNPACK = "ExecuTorch XNNPACK"
EAGER = "PyTorch eager"
ORT = "ONNX Runtime"
SYSTEMS = list(EMBER_CONFIGS) + [XNNPACK, EAGER, ORT]
# The peers' output tolerances (relative, as for EMBER_CONFIGS); eager is the reference.
PEER_TOL = {XNNPACK: 1e-3, EAGER: 1e-3, ORT: 1e-3}
# The export a peer runs (a key of prepare_model's export_errors); eager runs the module itself.
PEER_EXPORT = {XNNPACK: "executorch", ORT: "onnx"}
MODELS = ["resnet18", "mobilenet_v2", "bert_encoder", "llama_prefill", "llama_decode"]
ONNX_OPSET = 17

# Defaults: rounds x per-round timed runs per system (>= 20), after WARMUP runs in each worker.
# budget: seconds of timed runs one system may take in one cell before it gets fewer runs.
# pause: seconds between two systems' runs (see measure_cell).
DEFAULT = {"rounds": 10, "per_round": 3, "warmup": 3, "budget": 60, "pause": 0.1}
QUICK = {"rounds": 7, "per_round": 3, "warmup": 2, "budget": 30, "pause": 0.1}
MIN_RUNS = 20
# Per-layer reports (bench/layer_report.py) of these (model, configuration)s, at 1 thread, where
# one core's measured FMA peak is the yardstick; in results.md and docs/performance.md.
LAYER_REPORTS = [("resnet18", "Ember cpu fp32"), ("resnet18", "Ember cpu bf16"),
                 ("mobilenet_v2", "Ember cpu fp32")]


# --- Results -> text. Pure functions (bench/run_bench_test.py checks them). ----------------------
def median(xs):
    return statistics.median(xs) if xs else None


def parse_times(line):
    """'times 1.5 2.0' -> [1.5, 2.0]; anything else raises ValueError with the line."""
    parts = line.split()
    if not parts or parts[0] != "times":
        raise ValueError(line.strip())
    return [float(x) for x in parts[1:]]


def run_quota(first_times, planned, budget_s):
    """Timed runs for a system whose first round took `first_times` (ms): the planned number, or
    fewer when they would take more than budget_s, but never fewer than the first round's."""
    per_run_s = median(first_times) / 1e3
    if per_run_s * planned <= budget_s:
        return planned
    return max(len(first_times), int(budget_s / per_run_s))


def cell_text(result, ort_ms, notes, stat=median):
    """One table cell: 'median ms (ratio×)', or 'n/a [k]' with the reason appended to notes."""
    if result.get("status") != "ok":
        reason = result.get("status", "n/a")
        if reason not in notes:
            notes.append(reason)
        return f"{reason.split(' ')[0]} [{notes.index(reason) + 1}]"
    ms = stat(result["times"])
    text = f"{ms:.2f} ({ms / ort_ms:.2f}×)" if ort_ms else f"{ms:.2f}"
    if len(result["times"]) < MIN_RUNS:
        few = (f"{len(result['times'])} timed runs, fewer than {MIN_RUNS}: too slow for the time "
               f"budget of a cell (or a run with fewer rounds)")
        if few not in notes:
            notes.append(few)
        text += f" [{notes.index(few) + 1}]"
    return text


def markdown_table(results, systems, rows, stat=median):
    """results[(model, threads)][system] = {"status": "ok" | reason, "times": [...], "err": e}.
    rows: [(model, threads)] in order. Median (or `stat`) ms with the ratio to ONNX Runtime in
    parentheses; a cell without a number points to a numbered note under the table."""
    head = "| model | threads | " + " | ".join(systems) + " |"
    lines = [head, "|" + "---|" * (len(systems) + 2)]
    notes = []
    for model, threads in rows:
        r = results.get((model, threads), {})
        ort = r.get(ORT, {})
        ort_ms = stat(ort["times"]) if ort.get("status") == "ok" else None
        cells = [cell_text(r.get(s, {"status": "n/a (not run)"}), ort_ms, notes, stat)
                 for s in systems]
        lines.append(f"| {model} | {threads} | " + " | ".join(cells) + " |")
    if notes:
        lines.append("")
        lines += [f"[{i + 1}] {n}  " for i, n in enumerate(notes)]
    return "\n".join(lines)


def error_table(results, systems, rows):
    """Max abs error of each system's output against eager PyTorch (relative to max |eager|)."""
    lines = ["| model | threads | " + " | ".join(systems) + " |", "|" + "---|" * (len(systems) + 2)]
    for model, threads in rows:
        r = results.get((model, threads), {})
        cells = []
        for s in systems:
            e = r.get(s, {}).get("err")
            top1 = e[2] if e is not None and len(e) > 2 else None
            mark = "" if top1 is None else " top-1 ✓" if top1 else " top-1 ✗"
            cells.append("–" if e is None else f"{e[0]:.2e} ({e[1]:.1e}){mark}")
        lines.append(f"| {model} | {threads} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratios(results, systems, rows):
    """{system: [ratio to ORT or None per row]} for the chart."""
    out = {s: [] for s in systems}
    for key in rows:
        r = results.get(key, {})
        ort = r.get(ORT, {})
        ort_ms = median(ort["times"]) if ort.get("status") == "ok" else None
        for s in systems:
            x = r.get(s, {})
            ok = x.get("status") == "ok" and ort_ms
            out[s].append(median(x["times"]) / ort_ms if ok else None)
    return out


# --- Preparing the models -------------------------------------------------------------------------
def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def first_error_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if l.startswith("error"):
            return l[:200]
    return lines[-1][:200] if lines else "no output"


def export_onnx(module, inputs, input_names, path):
    """torch.onnx.export with the TorchScript exporter (dynamo=False). torch 2.15 defaults to the
    dynamo exporter, which works on every bench model too, but hands ONNX Runtime a graph its
    optimizer fuses less: exact GELU stays Div/Erf/Mul/Add (no Gelu) and RMSNorm stays
    Pow/ReduceMean/Sqrt/Reciprocal (no SimplifiedLayerNormalization), and it was no faster on any
    bench model. The TorchScript exporter's graph is the best ONNX Runtime gets here."""
    import warnings
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(module, inputs, path, input_names=input_names, output_names=["out"],
                          opset_version=ONNX_OPSET, dynamo=False)


def export_executorch(module, inputs, path):
    """ExecuTorch's own flow to an XNNPACK-delegated fp32 .pte: torch.export under no_grad,
    to_edge_transform_and_lower with the XnnpackPartitioner (what it does not take runs on
    ExecuTorch's portable kernels), to_executorch. Buffers keep their exported values
    (InitializedMutableBufferPass): by default ExecuTorch serializes a mutated buffer's shape
    only, which would lose the KV cache the decode step starts from. Returns the names of the ops
    left outside XNNPACK, sorted."""
    import warnings
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
    with torch.no_grad():
        ep = torch.export.export(module, inputs)
    buffers = list(ep.graph_signature.inputs_to_buffers)  # placeholders: b_layers_0_k_cache, ...
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    ops = {getattr(n.target, "_name", None) for n in edge.exported_program().graph.nodes
           if n.op == "call_function"}  # 'aten::index_put', 'executorch_call_delegate'; None
    left = sorted({op.split("::")[-1].split(".")[0] for op in ops
                   if op and op != "executorch_call_delegate"})
    with warnings.catch_warnings():  # "Mutation on a buffer ...": what the pass above is for
        warnings.filterwarnings("ignore", message="Mutation on a buffer")
        program = edge.to_executorch(ExecutorchBackendConfig(
            passes=[InitializedMutableBufferPass(buffers)] if buffers else []))
    with open(path, "wb") as f:
        f.write(program.buffer)
    return left


def export_key():
    """What the cached exports depend on: models.py, Ember's exporter (python/ember), the export
    code here, torch and executorch."""
    import glob
    import inspect
    import torch
    from executorch.version import __version__ as et_version
    text = b""
    for path in [os.path.join(HERE, "models.py")] + sorted(
            glob.glob(os.path.join(ROOT, "python", "ember", "*.py"))):
        with open(path, "rb") as f:
            text += f.read()
    for fn in (prepare_model, export_onnx, export_executorch):
        text += inspect.getsource(fn).encode()
    return hashlib.sha256(text + torch.__version__.encode() + et_version.encode()).hexdigest()[:16]


def prepare_model(name, work, force):
    """Exports `name` once (cached under work/name, keyed by export_key()): inputs and eager
    reference (.npy), ember.export (.ep), torch.onnx.export (.onnx), ExecuTorch with XNNPACK
    (xnnpack.pte). An export that fails is recorded in meta["export_errors"]."""
    import numpy as np
    import torch
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import ember
    import models

    d = os.path.join(work, name)
    key = export_key()
    stamp = os.path.join(d, "stamp")
    if not force and os.path.exists(stamp) and open(stamp).read() == key:
        return d, json.load(open(os.path.join(d, "meta.json")))
    log(f"{name}: building and exporting (cached for later runs)")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    case = models.build([name])[name]
    inputs = []
    for n, t in zip(case.input_names, case.inputs):
        np.save(os.path.join(d, f"in_{n}.npy"), t.numpy())
        inputs.append((n, f"in_{n}.npy"))  # relative to the model's folder
    with torch.inference_mode():
        ref = copy.deepcopy(case.module)(*case.inputs)
    np.save(os.path.join(d, "ref.npy"), ref.numpy())
    meta = {"description": case.description, "inputs": inputs, "export_errors": {}}
    exports = [("ember", "ember.export", lambda m: ember.export(m, case.inputs,
                                                                os.path.join(d, "model.ep"))),
               ("onnx", "torch.onnx.export", lambda m: export_onnx(
                   m, case.inputs, case.input_names, os.path.join(d, "model.onnx"))),
               ("executorch", "ExecuTorch export", lambda m: export_executorch(
                   m, case.inputs, os.path.join(d, "xnnpack.pte")))]
    for kind, what, export in exports:
        try:  # each from a fresh copy: an export may not leave the module as it found it
            got = export(copy.deepcopy(case.module))
            if kind == "executorch":
                meta["xnnpack_portable"] = got
        except Exception as e:  # reported as n/a for the systems that need this export
            meta["export_errors"][kind] = f"{what}: {type(e).__name__}: {e}"[:200]
            log(f"{name}: {meta['export_errors'][kind]}")
    json.dump(meta, open(os.path.join(d, "meta.json"), "w"), indent=1)
    open(stamp, "w").write(key)
    return d, meta


def add_baseline_configs(build_dir, systems):
    """Adds '<config> (baseline)' to EMBER_CONFIGS for each Ember configuration in `systems`,
    compiled and run by the binaries of another build (`build_dir`); returns their names."""
    added = []
    for name in [s for s in systems if s in EMBER_CONFIGS]:
        base = dict(EMBER_CONFIGS[name])
        base["ember"] = os.path.join(build_dir, "tools", "ember")
        base["runner"] = os.path.join(build_dir, "bench", "ember_bench_runner")
        for tool in (base["ember"], base["runner"]):
            if not os.access(tool, os.X_OK):
                sys.exit(f"--baseline: {tool} is not an executable (build that tree in release)")
        EMBER_CONFIGS[name + " (baseline)"] = base
        added.append(name + " (baseline)")
    return added


def compile_ember(args, d, meta, config):
    """Compiles one Ember configuration; returns (pte, ptd) or a reason string."""
    if "ember" in meta["export_errors"]:
        return meta["export_errors"]["ember"]
    slug = re.sub(r"[^a-z0-9]+", "_", config.lower())
    pte, ptd = os.path.join(d, slug + ".pte"), os.path.join(d, slug + ".ptd")
    for p in (pte, ptd):
        if os.path.exists(p):
            os.remove(p)
    cmd = [EMBER_CONFIGS[config].get("ember", args.ember), "compile", os.path.join(d, "model.ep"),
           "-o", pte, "--ptd", ptd]
    cmd += EMBER_CONFIGS[config]["compile"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "ember compile: " + first_error_line(r.stderr + r.stdout)
    return pte, ptd if os.path.exists(ptd) else None


# --- Workers -------------------------------------------------------------------------------------
class Worker:
    """A system's long-lived process: starts, writes its first output, warms up, prints 'ready';
    then answers 'run N' with 'times ...'."""

    def __init__(self, system, cmd, threads, out_dir, extra_env=None):
        self.system, self.out_dir, self.info = system, out_dir, ""
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                   **(extra_env or {}))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)

    def wait_ready(self):
        """None when ready, else the reason it is not."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait()
                return f"worker exited ({self.proc.returncode})"
            if line.startswith("info "):
                self.info = line[5:].strip()
            elif line.startswith("ready"):
                return None
            elif line.startswith("error"):
                self.close()
                return line.strip()[:200]

    def run(self, n):
        self.proc.stdin.write(f"run {n}\n")
        self.proc.stdin.flush()
        return parse_times(self.proc.stdout.readline() or "worker exited")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def worker_command(args, system, model, d, meta, artifacts, threads, out_dir, warmup):
    """The command line of `system`'s worker for `model` (exported into folder d) at `threads`."""
    common = ["--out-dir", out_dir, "--warmup", str(warmup)]
    inputs = [(n, os.path.join(d, p)) for n, p in meta["inputs"]]
    if system in EMBER_CONFIGS:
        pte, ptd = artifacts[system]
        runner = EMBER_CONFIGS[system].get("runner", args.runner)
        cmd = [runner, pte, "--threads", str(threads)] + (["--ptd", ptd] if ptd else [])
    elif system == EAGER:
        cmd = [sys.executable, os.path.join(HERE, "eager_worker.py"), model]
    elif system == XNNPACK:
        cmd = [sys.executable, os.path.join(HERE, "executorch_worker.py"),
               os.path.join(d, "xnnpack.pte")]
    else:  # ONNX Runtime feeds inputs by the graph's input names
        cmd = [sys.executable, os.path.join(HERE, "ort_worker.py"), os.path.join(d, "model.onnx"),
               "--threads", str(threads)]
        return cmd + [a for n, p in inputs for a in ("--input", f"{n}={p}")] + common
    if system not in EMBER_CONFIGS:
        cmd += ["--threads", str(threads)]
    return cmd + [a for _, p in inputs for a in ("--input", p)] + common


def top1_agrees(got, ref):
    """Whether the arg-max of the last row (the class logits) is the same in both."""
    return int(got.reshape(-1, got.shape[-1])[-1].argmax()) == \
        int(ref.reshape(-1, ref.shape[-1])[-1].argmax())


def check_output(out_dir, ref_path, tol, logits=False, need_top1=False):
    """(max abs error, relative to max |ref|, top-1 agrees or None, ok)."""
    import numpy as np
    ref = np.load(ref_path)
    got_path = os.path.join(out_dir, "output_0.npy")
    if not os.path.exists(got_path):
        return None, None, None, False
    got = np.load(got_path).astype(np.float32)
    if got.shape != ref.shape:
        return float("inf"), float("inf"), None, False
    err = float(np.abs(got - ref).max())
    rel = err / max(float(np.abs(ref).max()), 1e-30)
    top1 = top1_agrees(got, ref) if logits and ref.ndim >= 1 and ref.shape[-1] > 1 else None
    ok = bool(np.isfinite(err) and rel <= tol) and (top1 is not False or not need_top1)
    return err, rel, top1, ok


def measure_cell(args, model, d, meta, artifacts, threads, plan):
    """Times every available system on (model, threads), interleaved. Returns {system: result}."""
    res, workers = {}, []
    for s in args.systems:
        if s in EMBER_CONFIGS and isinstance(artifacts.get(s), str):
            res[s] = {"status": f"n/a ({artifacts[s]})"}
            continue
        needs = PEER_EXPORT.get(s)
        if needs in meta["export_errors"]:
            res[s] = {"status": f"n/a ({meta['export_errors'][needs]})"}
            continue
        out_dir = os.path.join(d, "out", re.sub(r"[^a-z0-9]+", "_", s.lower()), str(threads))
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        w = Worker(s, worker_command(args, s, model, d, meta, artifacts, threads, out_dir,
                                     plan["warmup"]), threads, out_dir,
                   args.isa_env)
        why = w.wait_ready()
        if why:
            res[s] = {"status": f"n/a ({why})"}
            continue
        tol = EMBER_CONFIGS[s]["tol"] if s in EMBER_CONFIGS else PEER_TOL[s]
        need_top1 = EMBER_CONFIGS.get(s, {}).get("top1", False)
        err, rel, top1, ok = check_output(out_dir, os.path.join(d, "ref.npy"), tol,
                                          model in LOGITS, need_top1)
        res[s] = {"status": "ok", "times": [],
                  "err": None if err is None else (err, rel, top1), "info": w.info}
        if not ok:
            res[s]["status"] = ("wrong output" if err is None else
                                f"wrong output (max err {err:.2e}, {rel:.1e} of max, tol {tol:g}"
                                f"{', top-1 differs' if top1 is False else ''})")
            log(f"  {s}: {res[s]['status']}; not timed")
            w.close()
            continue
        workers.append(w)
    # A system slower than the budget allows (PyTorch eager on Debian's reference BLAS: about a
    # minute per BERT run) gets fewer timed runs, spread over the rounds and marked in the table.
    planned = plan["rounds"] * plan["per_round"]
    quota = {w.system: planned for w in workers}
    for r in range(plan["rounds"]):
        k = r % len(workers) if workers else 0
        for w in list(workers[k:] + workers[:k]):  # rotate who goes first
            done = len(res[w.system]["times"])
            n = min(plan["per_round"], -(-(quota[w.system] - done) // (plan["rounds"] - r)))
            if n <= 0:
                continue
            # Thread pools spin a while after a run (ONNX Runtime, OpenMP); a pause keeps one
            # system's spinning threads from taking the cores of the next one's runs.
            time.sleep(plan["pause"])
            try:
                res[w.system]["times"] += w.run(n)
            except (ValueError, BrokenPipeError) as e:
                res[w.system]["status"] = f"n/a (failed while timed: {str(e)[:150]})"
                log(f"  {w.system}: {res[w.system]['status']}")
                w.close()
                workers.remove(w)
            if r == 0 and w in workers:
                quota[w.system] = run_quota(res[w.system]["times"], planned, plan["budget"])
    for w in workers:
        w.close()
        t = res[w.system]["times"]
        log(f"  {w.system:15s} median {median(t):9.3f} ms  min {min(t):9.3f}  n={len(t)}  "
            f"err {res[w.system]['err'][0]:.2e}")
    return res


# --- Output --------------------------------------------------------------------------------------
def chart(results, systems, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    shown = [s for s in systems if s != ORT]
    rs = ratios(results, shown, rows)
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(rows)), 4.8))
    width = 0.8 / max(1, len(shown))
    known = [v for s in shown for v in rs[s] if v]
    bottom = min([0.1] + [v / 1.5 for v in known])
    for i, s in enumerate(shown):
        xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(rows))]
        ax.bar(xs, [v - bottom if v else 0 for v in rs[s]], width, bottom=bottom, label=s)
        for x, v in zip(xs, rs[s]):
            if v is None:
                ax.text(x, 1.05, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label=f"{ORT} = 1")
    ax.set_yscale("log")
    ax.set_ylim(bottom, max([2.0] + [v * 1.3 for v in known]))
    top = ax.get_ylim()[1]
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if bottom <= t <= top]
    ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FixedFormatter([f"{t:g}×" for t in ticks]))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{m}\n{t} thread{'s' if t > 1 else ''}" for m, t in rows], fontsize=8)
    ax.set_ylabel(f"median latency / {ORT}'s (lower is faster)")
    ax.set_title("Batch-1 latency relative to ONNX Runtime")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cpu_flags():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def isa_path(isa):
    """The instruction-set path Ember's workers take: "avx2" when forced (--isa avx2) or when the
    CPU has no AVX-512, else "avx512"."""
    return "avx2" if isa == "avx2" or "avx512f" not in cpu_flags() else "avx512"


# What forces the AVX2 path on a bigger CPU: Ember's own kernels and GEMM variant, and oneDNN's
# (docs/backends/cpu.md).
AVX2_ENV = {"EMBER_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
_CAPABILITY_PROBE = "import torch; print(torch.backends.cpu.get_cpu_capability())"


def avx2_env(shim):
    """The environment of every worker, Ember's and the peers', on the forced AVX2 path.

    The peers have no switch like EMBER_CPU_ISA: they read CPUID. On a CPU with AVX-512 the shim
    (bench/cpuid_avx2.cc, preloaded) hides AVX-512, AVX-VNNI and AMX from CPUID in the worker, so
    ONNX Runtime, XNNPACK and PyTorch run the kernels they would run on an AVX2 CPU. The shim is
    checked once: PyTorch must report the AVX2 capability under it. Raises RuntimeError (with
    what to do) where it cannot work, rather than compare Ember's AVX2 path with AVX-512 peers."""
    env = dict(AVX2_ENV)
    if "avx512f" not in cpu_flags():
        return env
    if not os.path.exists(shim):
        raise RuntimeError(f"{shim} is missing: build it (scripts/build release)")
    preload = " ".join(p for p in (os.environ.get("LD_PRELOAD"), shim) if p)
    env["LD_PRELOAD"] = preload
    probe = subprocess.run([sys.executable, "-c", _CAPABILITY_PROBE], capture_output=True,
                           text=True, env=dict(os.environ, **env))
    if probe.returncode != 0 or probe.stdout.strip() != "AVX2":
        raise RuntimeError("the peers cannot be held to AVX2 on this machine (cpuid_avx2: "
                           f"{(probe.stderr or probe.stdout).strip()[-300:]}); measure the AVX2 "
                           "path on an AVX2 CPU")
    return env


def enter_avx2_path(parser):
    """For the benches whose systems all run in their own process (quant_bench.py,
    llm_quant_bench.py): puts this process on the AVX2 path, avx2_env()'s, restarting it once
    with the CPUID shim preloaded where the CPU has AVX-512 (the shim must be there before the
    peers' libraries read CPUID). parser.error() where that cannot be done."""
    try:
        env = avx2_env(os.path.join(ROOT, "build", "release", "bench", "ember_cpuid_avx2.so"))
    except RuntimeError as e:
        parser.error(str(e))
    shim = env.get("LD_PRELOAD", "").split()[-1:]
    if shim and shim[0] not in os.environ.get("LD_PRELOAD", "").split():
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, **env))
    os.environ.update(env)


ISA_PATHS = {
    "native": "every system on the CPU's own instruction set",
    "avx2": "every system held to AVX2 (Ember and oneDNN by EMBER_CPU_ISA and "
            "ONEDNN_MAX_CPU_ISA, the peers by the CPUID shim)",
    "avx2-ember": "Ember and oneDNN (PyTorch's too) held to AVX2 by EMBER_CPU_ISA and "
                  "ONEDNN_MAX_CPU_ISA; ONNX Runtime and XNNPACK on the CPU's own instruction set",
}


def enter_isa_path(parser, isa):
    """--isa of quant_bench.py and llm_quant_bench.py: native, avx2 (enter_avx2_path) or
    avx2-ember, for a CPU whose CPUID the shim cannot change (no CPUID faulting): Ember's AVX2
    path, and its int8 / fp32 ratio, measured on any AVX-512 CPU, beside peers that are not held
    to AVX2. Returns ISA_PATHS[isa], for the report."""
    if isa == "avx2":
        enter_avx2_path(parser)
    elif isa == "avx2-ember":
        os.environ.update(AVX2_ENV)  # read when Ember's runtime and oneDNN first start
    return ISA_PATHS[isa]


def machine_info():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = cpu_flags()
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")
           if f in flags]
    amx = "" if "amx_tile" in flags else "; no AMX"
    return f"{cpu}, {os.cpu_count()} logical CPUs visible ({', '.join(isa)}{amx})"


def eager_blas():
    """What PyTorch eager runs Linear/matmul and convolutions on here: its build's BLAS_INFO, the
    MKL and oneDNN versions it was built with (PyPI's torch bundles both)."""
    import torch
    config = torch.__config__.show()
    info = re.search(r"BLAS_INFO=(\w+)", config)
    mkl = re.search(r"Math Kernel Library Version ([\w.]+)", config)
    dnn = re.search(r"MKL-DNN (v[\w.]+)", config)
    text = f"BLAS_INFO={info.group(1) if info else '?'}"
    text += f" (MKL {mkl.group(1)})" if mkl else ""
    return text + (f", oneDNN {dnn.group(1)}" if dnn else "")


def versions():
    import importlib.metadata
    v = {"python": platform.python_version()}
    for package in ("torch", "executorch", "onnxruntime", "onnx", "numpy"):
        try:
            v[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            v[package] = "not installed"
    try:
        gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True)
        v["gcc"] = gcc.stdout.strip() + " (Ember built Release)"
    except OSError:
        pass
    try:
        v["ember"] = "commit " + subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return v


def layers_text(layers):
    """The per-layer reports of one run as a markdown section ('' when there are none)."""
    if not layers:
        return ""
    parts = ["## Where the cpu backend's time goes (1 thread)\n\n"
             "From `bench/layer_report.py` (oneDNN's verbose mode and Ember's "
             "`EMBER_CPU_VERBOSE`, median of 20 executes): the heaviest primitives of one "
             "inference (`ember:` ones are the backend's own kernels: `inverted_residual` is "
             "a whole fused MobileNet block), each with its floating-point work "
             "(2 x multiply-adds of the direct algorithm) and the rate of that work against the "
             "FMA peak of one core, measured on this machine by `ember_bench_runner --fma-peak`. "
             "Winograd convolutions do fewer multiplies than the direct algorithm, so their "
             "share can pass 100%. " + bf16_units(cpu_flags())]
    for key, text in layers.items():
        model, config = key.rsplit("/", 1)
        parts.append(f"### {model}, {config}\n\n{text}")
    return "\n\n".join(parts) + "\n"


def bf16_units(flags):
    """What bf16 runs on, from the CPU's flags (/proc/cpuinfo), for the layer report's text."""
    if "amx_bf16" in flags:
        return ("bf16 runs on AMX tiles where oneDNN picks them, whose peak is many times the "
                "float32 FMA peak: its shares are against the float32 peak.")
    if "avx512_bf16" in flags:
        return ("bf16 runs on AVX-512 BF16 dot products, whose peak is twice the float32 FMA "
                "peak on this CPU (it has no AMX).")
    return "bf16 is refused at init on this CPU (no AVX-512 BF16)."


def doc_name(path):
    """The page of an instruction-set path: docs/performance.md (AVX-512) or
    docs/performance-avx2.md, each with its chart."""
    return "performance" if path == "avx512" else f"performance-{path}"


def write_docs(run, rows, table, best, errors, layers, name):
    """docs/NAME.md and its chart NAME.png from one run's record (see main)."""
    path_name = run.get("isa_path", "avx512")
    other = "avx2" if path_name == "avx512" else "avx512"
    how = ("forced on this CPU: `--isa avx2` sets EMBER_CPU_ISA=avx2 and ONEDNN_MAX_CPU_ISA=AVX2 "
           "and preloads bench/cpuid_avx2.cc into every worker, so that the peers run their AVX2 "
           "kernels too" if run.get("isa_forced") else "what this CPU runs")
    path_line = (f"Ember's instruction-set path: **{path_name.upper().replace('AVX512', 'AVX-512')}**"
                 f" ({how}). The other path's page: [{doc_name(other)}.md]({doc_name(other)}.md)."
                 " ExecuTorch's own XNNPACK-delegated programs on Ember's runtime and on"
                 " ExecuTorch's: [performance-xnnpack.md](performance-xnnpack.md).")
    chart_name = name + ".png"
    plan, v, load, descriptions = run["plan"], run["versions"], run["load"], run["descriptions"]
    pause = (f"with a {plan['pause']:g} s pause between systems, so that thread pools still "
             f"spinning after one system's runs do not slow the next system's"
             if plan.get("pause") else "no pause between systems")
    if max(load) > run.get("cpus", 1):
        noise = ("**The machine was busy (load above its CPU count): the numbers are noisy**, more "
                 "so at 2 threads, where a thread that loses its core stalls the other; the "
                 "interleaving spreads that noise over all systems alike, but absolute times and "
                 "small ratios should not be over-read. Rerun on a quiet machine for numbers to "
                 "quote.")
    else:
        noise = "The machine was otherwise idle."
    tols = [f"{k} {c['tol']:g}" for k, c in EMBER_CONFIGS.items()]
    tols += [f"{k} {PEER_TOL[k]:g}" for k in (XNNPACK, ORT)]
    portable = run.get("xnnpack_portable", {})
    left = "; ".join(f"`{m}`: {', '.join(portable[m]) or 'none'}"
                     for m in dict.fromkeys(m for m, _ in rows) if m in portable)
    text = f"""# Performance: Ember side by side with ExecuTorch, PyTorch eager and ONNX Runtime

Generated by `scripts/bench --write-docs` (`bench/run_bench.py`; this run:
`{' '.join(['run_bench.py'] + run['argv'])}`) on {run['date']}, in {run['elapsed'] / 60:.1f}
minutes. Rerun it to refresh this page; nothing here is edited by hand.

{path_line}

## Results

Median latency in ms of one batch-1 inference, and in parentheses the ratio to ONNX Runtime
(below 1 is faster than ONNX Runtime). A cell without a number points to the reason under the
table: "n/a" for a configuration that cannot run yet, "wrong" for one whose output failed the
check below (not timed).

{table}

![Latency relative to ONNX Runtime]({chart_name})

The fastest of the same runs, for reference only (on a busy machine the minimum shows what each
system does when it gets the cores; the medians above are the result):

{best}

Output check (same run, before timing): max abs error against eager PyTorch, and in parentheses
relative to the largest |eager output|; for the models whose output is class logits
({', '.join(sorted(LOGITS))}), whether the top-1 class (of the last row) is eager's. Tolerances
(relative): {', '.join(tols)};
{', '.join(k for k, c in EMBER_CONFIGS.items() if c.get('top1'))} must also keep the top-1
class. A configuration that fails is reported as wrong and not timed. bf16 keeps 8 bits of
mantissa: on these randomly initialized models (small logits) its error relative to the largest
logit is a few percent.

{errors}

{layers}
## Method

- Machine: {run['machine']}. Load average (1 min) at the start of the
  measurement {load[0]:.1f}, at the end {load[1]:.1f}, on {run.get('cpus', '?')} CPUs. {noise}
- Versions: {', '.join(f'{k} {x}' for k, x in v.items())}.
- Models (batch 1, fixed seeds, eval mode; `bench/models.py`):
{chr(10).join(f'  - `{m}`: {descriptions[m]}' for m in dict.fromkeys(m for m, _ in rows))}
- Each model is exported once with `ember.export` (torch {v.get('torch', '?')}, `torch.export`
  and core ATen decompositions) and compiled with `ember compile` for each Ember configuration
  (flags in the table at the top of `bench/run_bench.py`); with `torch.onnx.export` (opset
  {ONNX_OPSET}, the TorchScript exporter, `dynamo=False`: on torch 2.15 the default dynamo
  exporter also works on these models, but ONNX Runtime fuses its graph less — exact GELU and
  RMSNorm stay unfused — and it was no faster) for ONNX Runtime; and with ExecuTorch's own flow
  for ExecuTorch: `torch.export.export` under `no_grad`, `to_edge_transform_and_lower` with the
  `XnnpackPartitioner`, `to_executorch`, fp32 (`bench/run_bench.py`, `export_executorch`).
  What the partitioner does not take runs on ExecuTorch's portable kernels; per model:
  {left or 'not recorded'}.
  The decoder's KV cache is a module buffer written in place: Ember keeps it as a mutable buffer,
  ExecuTorch too (with its exported value, `InitializedMutableBufferPass`; by default ExecuTorch
  keeps only a mutated buffer's shape); in ONNX it becomes a ScatterND on the initializer,
  recomputed each run (the same work per run). The decode step is exported from the module after
  the prefill, so every system decodes from the same cache.
- Systems: Ember through `bench/ember_bench_runner` (the `Module` API, `num_threads` = threads);
  ExecuTorch through its Python runtime (`executorch.runtime.Runtime`: `load_program`,
  `load_method("forward")`, `execute`; `bench/executorch_worker.py`), its threadpool, on which
  XNNPACK runs, resized to threads before the program loads with the pybindings'
  `_unsafe_reset_threadpool` (executorch 1.5.1's only Python handle on it, experimental; the
  worker reads the size back and refuses to run on another); PyTorch eager with
  `torch.set_num_threads(threads)` under `torch.inference_mode()` (`bench/eager_worker.py`);
  ONNX Runtime through PyPI's `onnxruntime` (`bench/ort_worker.py`: CPU execution provider,
  intra-op threads = threads, inter-op 1, sequential execution, all graph optimizations). Every
  worker also runs with `OMP_NUM_THREADS=threads`.
- Threads: {', '.join(map(str, run['threads']))}.
- Timing: one long-lived process per system holds the loaded model. Each first checks its output,
  then runs up to {plan['warmup']} warm-up inferences (stopping after 5 s, at least one). Then
  {plan['rounds']} rounds: in every round each system runs {plan['per_round']} timed inferences,
  the starting system rotating from round to round ({pause}), so every system gets
  {plan['rounds'] * plan['per_round']} timed runs spread over the whole measurement. A system
  whose runs would take more than {plan['budget']:g} s in one cell (measured in the first round)
  gets fewer, spread over the rounds, and its cell says so. Each run is timed around the single
  inference call inside the worker (no process or I/O overhead); the table shows the median.
- PyTorch eager: PyPI's torch (a CUDA build, run on the CPU) runs convolutions on oneDNN and
  `nn.Linear` and `matmul` on MKL; here: {run.get('eager_blas', eager_blas())}.
"""
    path = os.path.join(ROOT, "docs", name + ".md")
    open(path, "w").write(text)
    log(f"wrote {os.path.relpath(path, ROOT)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--quick", action="store_true", help=f"{QUICK} instead of {DEFAULT}")
    p.add_argument("--rounds", type=int)
    p.add_argument("--per-round", type=int)
    p.add_argument("--warmup", type=int, help="warm-up runs per worker (stopping after 5 s)")
    p.add_argument("--budget", type=float, help="seconds of timed runs per system and cell")
    p.add_argument("--pause", type=float, help="seconds between two systems' runs")
    p.add_argument("--work", default=os.path.join(ROOT, "out", "bench"))
    p.add_argument("--baseline", metavar="BUILD_DIR",
                   help="also time each Ember configuration of --systems as another build compiles "
                        "and runs it (BUILD_DIR/tools/ember, BUILD_DIR/bench/ember_bench_runner), "
                        "as '<configuration> (baseline)', in the same interleaved rounds: a change's "
                        "before and after in one run")
    p.add_argument("--ember", default=os.path.join(ROOT, "build", "release", "tools", "ember"))
    p.add_argument("--runner", default=os.path.join(ROOT, "build", "release", "bench",
                                                    "ember_bench_runner"))
    p.add_argument("--reexport", action="store_true", help="ignore the cached exports")
    p.add_argument("--report-only", action="store_true",
                   help="remake the table, chart (and docs) from the work folder's results.json")
    p.add_argument("--isa", choices=["auto", "avx2"], default="auto",
                   help="avx2: every system on its AVX2 path on any CPU (EMBER_CPU_ISA=avx2, "
                        "ONEDNN_MAX_CPU_ISA=AVX2 and, on an AVX-512 CPU, bench/cpuid_avx2.cc "
                        "preloaded so that the peers see no AVX-512 either)")
    p.add_argument("--write-docs", action="store_true",
                   help="write docs/performance.md and .png (the AVX-512 path) or "
                        "docs/performance-avx2.md and .png (the AVX2 path)")
    args = p.parse_args()
    args.work = os.path.abspath(args.work)
    try:
        args.isa_env = (avx2_env(os.path.join(os.path.dirname(args.runner), "ember_cpuid_avx2.so"))
                        if args.isa == "avx2" and not args.report_only else None)
    except RuntimeError as e:
        p.error(str(e))
    args.models = [m for m in args.models.split(",") if m]
    args.threads = [int(t) for t in args.threads.split(",")]
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        p.error(f"unknown systems {unknown}; known: {SYSTEMS}")
    plan = dict(QUICK if args.quick else DEFAULT)
    for k in plan:
        if getattr(args, k) is not None:
            plan[k] = getattr(args, k)
    if args.baseline:
        args.systems += add_baseline_configs(os.path.abspath(args.baseline), args.systems)
    if plan["rounds"] * plan["per_round"] < 20:
        log("warning: fewer than 20 timed runs per system")

    path = os.path.join(args.work, "results.json")
    if args.report_only:
        saved = json.load(open(path))
        run = saved["run"]
        results = {(k.rsplit("/", 1)[0], int(k.rsplit("/", 1)[1])): r
                   for k, r in saved["results"].items()}
        rows = list(results)
    else:
        load_start = os.getloadavg()[0]
        results, rows, descriptions, layers, portable, elapsed = measure(args, plan)
        run = {"plan": plan, "elapsed": elapsed, "descriptions": descriptions, "layers": layers,
               "xnnpack_portable": portable,
               "threads": args.threads, "systems": args.systems, "argv": sys.argv[1:],
               "load": [load_start, os.getloadavg()[0]], "versions": versions(),
               "machine": machine_info(), "eager_blas": eager_blas(), "cpus": os.cpu_count(),
               "isa_path": isa_path(args.isa), "isa_forced": args.isa == "avx2",
               "date": str(datetime.date.today())}
        raw = {f"{m}/{t}": r for (m, t), r in results.items()}
        json.dump({"run": run, "results": raw}, open(path, "w"), indent=1)

    systems = run["systems"]
    table = markdown_table(results, systems, rows)
    errors = error_table(results, systems, rows)
    best = markdown_table(results, systems, rows, stat=min)
    layers = layers_text(run.get("layers", {}))
    report = (f"## Median latency, ms (ratio to {ORT})\n\n{table}\n\n"
              f"## Fastest run, ms (ratio to {ORT})\n\n{best}\n\n"
              f"## Max abs error vs eager (relative)\n\n{errors}\n\n{layers}")
    print("\n" + report)
    open(os.path.join(args.work, "results.md"), "w").write(report)
    png = os.path.join(args.work, "performance.png")
    chart(results, systems, rows, png)
    log(f"wrote {os.path.relpath(args.work, ROOT)}/results.md, results.json, performance.png "
        f"(measured in {run['elapsed'] / 60:.1f} min)")
    if args.write_docs:
        name = doc_name(run.get("isa_path", "avx512"))
        shutil.copy(png, os.path.join(ROOT, "docs", name + ".png"))
        write_docs(run, rows, table, best, errors, layers, name)


def measure(args, plan):
    start = time.time()
    os.makedirs(args.work, exist_ok=True)
    results, rows, descriptions, layers, portable = {}, [], {}, {}, {}
    for model in args.models:
        d, meta = prepare_model(model, args.work, args.reexport)
        descriptions[model] = meta["description"]
        if "xnnpack_portable" in meta:
            portable[model] = meta["xnnpack_portable"]
        artifacts = {}
        for s in args.systems:
            if s in EMBER_CONFIGS:
                artifacts[s] = compile_ember(args, d, meta, s)
                if isinstance(artifacts[s], str):
                    log(f"{model}: {s}: n/a ({artifacts[s]})")
        for t in args.threads:
            log(f"{model}, {t} thread(s)")
            results[(model, t)] = measure_cell(args, model, d, meta, artifacts, t, plan)
            rows.append((model, t))
        for config in (c for m, c in LAYER_REPORTS if m == model and c in artifacts):
            if isinstance(artifacts[config], str):
                continue
            log(f"{model}: {config}: per-layer report")
            pte, ptd = artifacts[config]
            inputs = [os.path.join(d, f) for _, f in meta["inputs"]]
            try:
                layers[f"{model}/{config}"] = layer_report.run_report(
                    args.ember, args.runner, pte, ptd, inputs, threads=1, top=8,
                    env=args.isa_env)
            except (RuntimeError, subprocess.CalledProcessError) as e:
                layers[f"{model}/{config}"] = f"no report: {e}"
    return results, rows, descriptions, layers, portable, time.time() - start


if __name__ == "__main__":
    main()
