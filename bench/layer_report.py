"""Per-layer time and FMA-peak share of a program's cpu delegates: where the time goes.

    .venv/bin/python bench/layer_report.py MODEL.pte [--input X.npy]... [--threads N]
                     [--repeat R] [--top K] [--ember build/release/tools/ember]

Runs `ember run MODEL.pte --repeat R` with ONEDNN_VERBOSE=1, which makes oneDNN print one line per
primitive execution with its time (and EMBER_CPU_VERBOSE=1, the same for the cpu backend's own
kernels: fused inverted residual blocks, matrix-vector products), splits the lines into the R executes, and reports for every
primitive of one execute its median time over the executes, its floating-point work
(convolutions and matmuls: 2 x multiply-adds of the direct algorithm) and that work's rate as a
share of the FMA peak: one core's float32 peak, measured by `ember_bench_runner --fma-peak`,
times the thread count. Winograd convolutions do fewer multiplies than the direct algorithm they
replace, so their share can exceed 1; it is reported as measured, and marked.

The verbose mode adds a little time per primitive; the totals are for finding where the time
goes, not for quoting latency (bench/run_bench.py does that).
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# --- Pure functions (bench/run_bench_test.py checks them) ------------------------------------------
def parse_exec_lines(text):
    """oneDNN (and Ember's cpu backend) verbose output -> [(kind, impl, problem, attrs, ms)] for
    the 'exec' lines."""
    out = []
    for line in text.splitlines():
        if not line.startswith(("onednn_verbose,exec,cpu,", "ember_verbose,exec,cpu,")):
            continue
        f = line.split(",")
        # {onednn,ember}_verbose,exec,cpu,KIND,IMPL,PROP,MDS,ATTRS,AUX,PROBLEM,MS
        if len(f) < 11:
            continue
        out.append((f[3], f[4], f[9], f[7].strip(), float(f[10])))
    return out


def split_executes(records, executes):
    """The records of the last `executes` executes, as a list per execute. Every execute runs
    the same primitives in the same order; what comes before them (weight reorders at init) is
    dropped. The period is the longest that splits the tail into identical executes (a shorter
    one can also fit a model of repeated identical layers). Raises ValueError when none does."""
    if executes < 1 or not records:
        raise ValueError("no primitive executions")
    keys = [r[:3] for r in records]
    for period in range(len(records) // executes, 0, -1):
        tail = keys[len(keys) - period * executes:]
        first = tail[:period]
        if all(tail[k * period:(k + 1) * period] == first for k in range(1, executes)):
            base = len(records) - period * executes
            return [records[base + k * period:base + (k + 1) * period] for k in range(executes)]
    raise ValueError("the primitive executions do not split into %d executes" % executes)


def _int(pattern, problem, default):
    m = re.search(pattern, problem)
    return int(m.group(1)) if m else default


def flops(kind, problem):
    """Floating-point operations (2 x multiply-adds) of a convolution or matmul problem as
    oneDNN's verbose mode prints it; 0 for anything else."""
    if kind == "convolution":
        mb = _int(r"mb(\d+)", problem, 1)
        g = _int(r"(?:^|_)g(\d+)", problem, 1)
        ic, oc = _int(r"ic(\d+)", problem, 0), _int(r"oc(\d+)", problem, 0)
        spatial = 1
        kernel = 1
        for axis in ("d", "h", "w"):
            spatial *= _int(r"o%s(\d+)" % axis, problem, 1)
            kernel *= _int(r"k%s(\d+)" % axis, problem, 1)
        return 2 * mb * oc * spatial * (ic // max(g, 1)) * kernel
    if kind == "inverted_residual":  # Ember's: [1x1 expand | 3x3 stem] -> 3x3 dw -> 1x1 project
        mb = _int(r"mb(\d+)", problem, 1)
        ic, ec, oc = (_int(r"ic(\d+)", problem, 0), _int(r"ec(\d+)", problem, 0),
                      _int(r"oc(\d+)", problem, 0))
        ih, iw = _int(r"ih(\d+)", problem, 0), _int(r"iw(\d+)", problem, 0)
        out = _int(r"oh(\d+)", problem, 0) * _int(r"ow(\d+)", problem, 0)
        expand = ih * iw * ic * ec if "_expand" in problem else 0
        if "_stem3x3" in problem:  # ih, iw: the stem's output; ic: the image's channels
            expand = ih * iw * ic * ec * 9
        return 2 * mb * (expand + out * ec * 9 + out * ec * oc)
    if kind == "matmul":
        parts = problem.split(":")
        if len(parts) < 3:
            return 0
        a = [int(x) for x in parts[0].split("x")]
        b = [int(x) for x in parts[1].split("x")]
        batch = 1
        for x in a[:-2]:
            batch *= x
        return 2 * batch * a[-2] * a[-1] * b[-1]
    return 0


def layer_table(runs, peak_gflops):
    """Rows (kind, impl, problem, attrs, median ms, gflop, share of peak or None)."""
    rows = []
    for i, first in enumerate(runs[0]):
        ms = statistics.median(run[i][4] for run in runs)
        f = flops(first[0], first[2])
        share = (f / (ms * 1e6)) / peak_gflops if f and ms > 0 else None
        rows.append((first[0], first[1], first[2], first[3], ms, f / 1e9, share))
    return rows


def format_report(rows, peak_gflops, threads, top):
    total = sum(r[4] for r in rows)
    work = sum(r[5] for r in rows)
    gemm = [r for r in rows if r[6] is not None]
    gemm_ms = sum(r[4] for r in gemm)
    lines = [
        "FMA peak: %.1f GFLOP/s (%d thread(s) x one core's measured float32 peak)" %
        (peak_gflops, threads),
        "one execute: %d primitives, %.3f ms; convolutions and matmuls %.3f ms (%.0f%%), "
        "%.3f GFLOP, %.0f%% of peak over their time" %
        (len(rows), total, gemm_ms, 100 * gemm_ms / total if total else 0, work,
         100 * work / (gemm_ms * 1e-3) / peak_gflops if gemm_ms else 0),
    ]
    if gemm:
        heavy = sorted(gemm, key=lambda r: -r[4])
        covered, share_ms = 0.0, 0.0
        for r in heavy:
            if covered >= 0.5 * gemm_ms:
                break
            covered += r[4]
            share_ms += r[6] * r[4]
        lines.append("the heaviest convolutions and matmuls, half of their time: %.0f%% of peak "
                     "(time-weighted)" % (100 * share_ms / covered))
    lines += ["", "| # | primitive | implementation | problem | post-ops | ms | GFLOP | of peak |",
              "|---|---|---|---|---|---|---|---|"]
    order = sorted(range(len(rows)), key=lambda i: -rows[i][4])[:top] if top else range(len(rows))
    for i in order:
        kind, impl, problem, attrs, ms, gf, share = rows[i]
        post = " ".join(a.replace("attr-post-ops:", "") for a in attrs.split()
                        if a.startswith("attr-post-ops"))
        share_text = "–" if share is None else "%.0f%%%s" % (100 * share,
                                                            " (Winograd)" if "wino" in impl else "")
        lines.append("| %d | %s | %s | %s | %s | %.3f | %.4f | %s |" %
                     (i, kind, impl, problem, post, ms, gf, share_text))
    return "\n".join(lines)


# --- Running ---------------------------------------------------------------------------------------
def fma_peak_gflops(runner, env=None):
    """One core's float32 FMA peak in GFLOP/s, measured by `ember_bench_runner --fma-peak` (on
    the instruction set EMBER_CPU_ISA allows, in `env`)."""
    r = subprocess.run([runner, "--fma-peak"], capture_output=True, text=True, check=True,
                       env=dict(os.environ, **(env or {})))
    return float(r.stdout.split()[1])


def run_report(ember, runner, pte, ptd=None, inputs=(), threads=1, repeat=20, top=15, env=None):
    """The report of one program (see the module text); raises RuntimeError when it cannot run.
    env: more environment for `ember run` (EMBER_CPU_ISA, ONEDNN_MAX_CPU_ISA)."""
    peak = fma_peak_gflops(runner, env) * threads
    cmd = [ember, "run", pte, "--repeat", str(max(repeat, 2)), "--threads", str(threads)]
    for x in inputs:
        cmd += ["--input", x]
    if ptd:
        cmd += ["--ptd", ptd]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, ONEDNN_VERBOSE="1", EMBER_CPU_VERBOSE="1", **(env or {})))
    if r.returncode != 0:
        raise RuntimeError("ember run failed: " + (r.stderr or r.stdout).strip()[-500:])
    try:
        # `ember run --repeat R` executes R times (R calls); the first is left
        # out (cold caches). Splitting into R + 1 found a shorter period that fits a model of
        # repeated identical layers (BERT: one encoder layer reported as the whole model), or none.
        runs = split_executes(parse_exec_lines(r.stdout + r.stderr), max(repeat, 2))[1:]
    except ValueError as e:
        raise RuntimeError("%s (is the program delegated to the cpu backend?)" % e) from e
    return format_report(layer_table(runs, peak), peak, threads, top)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("pte")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--ptd")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--top", type=int, default=15, help="rows of the table (0: every primitive)")
    p.add_argument("--ember", default=os.path.join(ROOT, "build", "release", "tools", "ember"))
    p.add_argument("--runner",
                   default=os.path.join(ROOT, "build", "release", "bench", "ember_bench_runner"))
    args = p.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    try:
        print(run_report(args.ember, args.runner, args.pte, args.ptd, args.input, args.threads,
                         args.repeat, args.top))
    except RuntimeError as e:
        sys.exit("layer_report: %s" % e)


if __name__ == "__main__":
    main()
