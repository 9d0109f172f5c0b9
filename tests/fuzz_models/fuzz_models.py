"""Ember's differential fuzzer: random valid PyTorch programs (gen.py), exported with
ember.export, compiled and run by each flow (portable, `--backend cpu`, `--backend loopback`)
through the batch driver ember_fuzz_runner, and compared with eager PyTorch.

    fuzz_models.py run --runner R --python-dir D --out DIR [--seconds S | --seeds A:B]
                       [--jobs N] [--flows portable,cpu,loopback] [--minimize K]
    fuzz_models.py ctest --runner R --python-dir D --work DIR --regressions DIR
    fuzz_models.py repro FILE... --runner R --python-dir D --work DIR

Each (program, flow) gets one class:
  match    ran, and every output agrees with eager (see `compare` in oracle.py);
  refused  export or compile refused it with an error (counted by the op the message names);
  wrong    ran, and an output differs from eager;
  crash    the driver died (signal, abort) or timed out on it, alone in a fresh process;
  invalid  compiled, then the runtime refused to load or run what the compiler wrote.
A program that eager PyTorch itself rejects is the generator's bug: skipped and counted.

`run` writes every failure as a program file in DIR/failures/ and minimizes up to K of them
(distinct by flow, class and ops) into DIR/repros/<flow>_<short>.py, the format of the regression
files in regressions/ (copy one there to keep it). `ctest` runs a fixed seed range and every
regression file, and fails on any wrong, crash or invalid.
"""

import argparse
import collections
import contextlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
FLOWS = ("portable", "cpu", "loopback")
FAILURES = ("wrong", "crash", "invalid")

# Seeds of the CTest range that fail today for a known, open bug: reported, not counted; the test
# fails when one of them passes (remove it then). A regression file says the same with KNOWN.
KNOWN_SEEDS = {}
CLASSES = ("match", "refused") + FAILURES
BATCH = 8  # programs per driver process (times the flows)
# The perturbed references' random changes, the same on every run: several, so that a branch
# one rounding decides (a torch.cond on a sum of [-3e38, ..., 3e38], seed 433884) is seen taken
# both ways with a good chance (15 in 16 for an even one).
PERTURB_SEEDS = (20, 21, 22, 23)

torch = np = ember = gen = None  # imported by setup(): a missing torch is reported, not a trace
oracle = None  # oracle.py, imported by setup()


def setup(python_dir):
    global torch, np, ember, gen, oracle
    try:
        import numpy
        import torch as torch_module
    except ImportError as e:
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"CI=true but PyTorch is missing: {e}")
        print(f"skipped: {e}")
        sys.exit(SKIP)
    torch, np = torch_module, numpy
    torch.set_num_threads(1)
    # Eager's warnings on the programs (a std of one element...) are expected: not news.
    warnings.filterwarnings("ignore", category=UserWarning)
    sys.path.insert(0, python_dir)
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))  # tests/: export_speed
    import ember as ember_module
    import gen as gen_module
    ember, gen = ember_module, gen_module
    import oracle as oracle_module
    oracle = oracle_module
    from export_speed import cache_cia_ops
    cache_cia_ops()


def ops_of(message):
    """The ops a refusal names, for the histogram: every op of the support check's list ("N
    node(s) use ops Ember cannot run (K distinct op(s): aten::a.out aten::b.out)"), else the
    first op the message names."""
    m = re.search(r"distinct op\(s\):([^)\n]*)", message)
    if m and m.group(1).split():
        return sorted(set(m.group(1).split()))
    m = re.search(r"backend '(\w+)', partition \d+ \(nodes ([^)]*)\)", message)
    if m:  # a backend's preprocess refused a partition: its ops, by backend
        return sorted({f"{m.group(1)}:{n}" for n in re.split(r"[ ,]+", m.group(2)) if n})
    for pat in (r"\b((?:aten|higher_order|prim|quantized_decomposed)::[A-Za-z0-9_.]+)",
                r"\b(aten\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)"):
        m = re.search(pat, message)
        if m:
            name = m.group(1)
            return [name if "::" in name else name.replace(".", "::", 1)]
    m = re.search(r"call_function (\w+)\(", message)  # torch.export's own refusal of a call
    if m:
        return [f"torch.export: {m.group(1)}"]
    return ["(no op named) " + re.sub(r"\s+", " ", message)[:70]]


def prepare(M, inputs, calls, work):
    """Eager (float32, and a float64 reference), export, and the inputs as .npy in `work`.
    Returns a case dict; case["skip"] when eager fails, case["export_error"] when export does."""
    os.makedirs(work, exist_ok=True)
    case = {"dir": work, "calls": calls, "inputs": len(inputs)}
    try:
        case["expected"] = oracle.run_eager(M, inputs, calls)
        case["expected_alt"] = oracle.run_eager(M, inputs, calls, other_path=True)
    except Exception as e:  # the generator built something eager rejects
        case["skip"] = f"eager: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        return case
    try:
        case["reference"] = oracle.run_eager(M, inputs, calls, double=True)
        case["perturbed"] = [oracle.run_eager(M, inputs, calls, double=True, perturb=seed)
                             for seed in PERTURB_SEEDS]
        case["exact"] = oracle.run_eager(M, inputs, calls, double=True, all_floats=True)
    except Exception:
        # mixed dtypes that float64 breaks: the plain tolerance only
        case["reference"] = case["perturbed"] = case["exact"] = None
    try:
        with torch.no_grad():
            ember.export(M(), tuple(x.clone() for x in inputs), os.path.join(work, "model.ep"))
    except Exception as e:
        case["export_error"] = f"{type(e).__name__}: {str(e).strip()[:2000]}"
        return case
    for c in range(calls):
        for i, x in enumerate(inputs):
            a = x.float() if x.dtype == torch.bfloat16 else x  # .npy has no bfloat16
            np.save(os.path.join(work, f"in{c}_{i}.npy"), a.contiguous().numpy())
    return case


def classify(case, flow, status, message):
    """(class, detail) of one case on one flow, from the driver's status line."""
    if status == "refused":
        return "refused", message
    if status != "ok":
        return status, message
    work = case["dir"]
    for c, outs in enumerate(case["expected"]):
        refs = case["reference"][c] if case.get("reference") else [None] * len(outs)
        perturbed = ([[run[c][i] for run in case["perturbed"]] for i in range(len(outs))]
                     if case.get("perturbed") else [None] * len(outs))
        exact = case["exact"][c] if case.get("exact") else [None] * len(outs)
        alt = case["expected_alt"][c] if case.get("expected_alt") else [None] * len(outs)
        for i, (e, r, p, x, a) in enumerate(zip(outs, refs, perturbed, exact, alt)):
            path = os.path.join(work, f"{flow}_call{c}_out{i}.npy")
            if not os.path.exists(path):
                return "wrong", f"call {c} output {i}: missing (only some outputs came back)"
            why = oracle.compare(e, r, np.load(path), p, x, a)
            if why:
                return "wrong", f"call {c} output {i} ({str(e.dtype)[6:]}): {why}"
    return "match", ""


def drive(runner, jobs, timeout_each=60):
    """Runs (case, flow) jobs through the driver, one process for all; the jobs a crash or a
    timeout left without a result run again one by one, each alone in a fresh process.
    Returns {index: (status, message)}."""
    results = {}
    if not jobs:
        return results
    work = jobs[0][0]["dir"]
    manifest = os.path.join(os.path.dirname(work), f"manifest_{os.getpid()}_{time.time_ns()}")

    def once(selected, timeout):
        with open(manifest, "w") as f:
            for case, flow in selected:
                f.write(f"{case['dir']} {flow} {case['calls']} {case['inputs']}\n")
        try:
            p = subprocess.run([runner, manifest], capture_output=True, text=True,
                               timeout=timeout, errors="replace")
            out, rc, err = p.stdout, p.returncode, p.stderr
        except subprocess.TimeoutExpired as t:
            out = t.stdout.decode(errors="replace") if isinstance(t.stdout, bytes) else (
                t.stdout or "")
            rc, err = "timeout", ""
        got = {}
        for line in out.splitlines():
            m = re.match(r"@@ (\d+) (\w+) ?(.*)", line)
            if m:
                got[int(m.group(1))] = (m.group(2), m.group(3))
        return got, rc, err

    got, rc, _ = once(jobs, 30 + 15 * len(jobs))
    results.update(got)
    for k in range(len(jobs)):
        if k in results:
            continue
        one, rc, err = once([jobs[k]], timeout_each)
        if 0 in one:
            results[k] = one[0]
        elif rc == "timeout":
            results[k] = ("crash", f"timeout after {timeout_each} s")
        else:
            sig = f"signal {-rc}" if isinstance(rc, int) and rc < 0 else f"exit status {rc}"
            tail = " | ".join(err.strip().splitlines()[-3:])
            results[k] = ("crash", f"{sig}: {tail}"[:500])
    with contextlib.suppress(OSError):
        os.remove(manifest)
    return results


def evaluate(items, flows, runner):
    """items: (key, M, inputs, calls, work dir). Returns {key: {"skip"| flow: (class, detail,
    stage)}}, the cases prepared (eager, export) then driven together."""
    out, jobs = {}, []
    for key, M, inputs, calls, work in items:
        case = prepare(M, inputs, calls, work)
        if "skip" in case:
            out[key] = {"skip": case["skip"]}
            continue
        out[key] = {"_case": case}
        if "export_error" in case:
            for flow in flows:
                out[key][flow] = ("refused", case["export_error"], "export")
            continue
        jobs += [(case, flow, key) for flow in flows]
    results = drive(runner, [(c, f) for c, f, _ in jobs])
    for k, (case, flow, key) in enumerate(jobs):
        status, message = results[k]
        cls, detail = classify(case, flow, status, message)
        out[key][flow] = (cls, detail, "compile" if status == "refused" else "run")
    for v in out.values():
        v.pop("_case", None)
    return out


# One batch of seeds in a worker process.
ARGS = None


def init_worker(args):
    global ARGS
    ARGS = args
    setup(args.python_dir)


def run_batch(seeds):
    items = []
    for s in seeds:
        prog = gen.generate(s)
        items.append((s, prog.module_class(), prog.make_inputs(), prog.calls,
                      os.path.join(ARGS.work, f"case{s}")))
    res = evaluate(items, ARGS.flows, ARGS.runner)
    rows = []
    for s in seeds:
        r = res[s]
        ops = gen.generate(s).ops()
        keep = any(r.get(f, ("",))[0] in FAILURES for f in ARGS.flows)
        if not ARGS.keep and not keep:
            shutil.rmtree(os.path.join(ARGS.work, f"case{s}"), ignore_errors=True)
        rows.append((s, r, ops))
    return rows


def batches(seeds, deadline):
    chunk = []
    for s in seeds:
        if deadline and time.time() > deadline:
            break
        chunk.append(s)
        if len(chunk) == BATCH:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def bounded_map(pool, fn, items, window):
    """pool.imap_unordered, but pulling the next item only when a result comes back (a deadline
    in `items` then stops the run: imap's feeder would pull them all ahead)."""
    pending = collections.deque()
    items = iter(items)
    for item in items:
        pending.append(pool.apply_async(fn, (item,)))
        if len(pending) >= window:
            break
    while pending:
        result = pending.popleft().get()
        for item in items:
            pending.append(pool.apply_async(fn, (item,)))
            break
        yield result


def seed_range(text, start):
    if text:
        a, b = text.split(":")
        return range(int(a), int(b))
    return range(start, 1 << 62)


def fuzz(args, seeds, deadline=None):
    """Runs the seeds (until the deadline) on args.jobs processes. Returns the summary."""
    counts = {f: collections.Counter() for f in args.flows}
    refusals = collections.Counter()
    examples = {}  # a program of each refusal: seed, flow, message
    failures, skipped, programs = [], [], 0
    ctx = multiprocessing.get_context("fork")
    t0 = time.time()
    with ctx.Pool(args.jobs, initializer=init_worker, initargs=(args,)) as pool:
        for rows in bounded_map(pool, run_batch, batches(seeds, deadline), 2 * args.jobs):
            for s, r, ops in rows:
                programs += 1
                if "skip" in r:
                    skipped.append((s, r["skip"]))
                    continue
                for f in args.flows:
                    cls, detail, stage = r[f]
                    counts[f][cls] += 1
                    if cls == "refused":
                        for op in ops_of(detail):
                            refusals[(stage, op)] += 1
                            examples.setdefault(f"{stage} {op}", [s, f, detail[:600]])
                    if cls in FAILURES:
                        failures.append({"seed": s, "flow": f, "class": cls, "detail": detail,
                                         "ops": ops})
                        print(f"  seed {s} {f}: {cls}: {detail[:300]}", flush=True)
    return {"programs": programs, "seconds": time.time() - t0, "counts": counts,
            "refusals": refusals, "examples": examples, "failures": failures,
            "skipped": skipped}


def print_summary(summary, flows, top=20):
    secs = summary["seconds"]
    print(f"{summary['programs']} programs in {secs:.0f} s "
          f"({summary['programs'] / max(secs, 1e-9):.2f} programs/s, every flow); "
          f"{len(summary['skipped'])} skipped (eager rejected them: a generator bug)")
    print(f"{'flow':<10}" + "".join(f"{c:>9}" for c in CLASSES))
    for f in flows:
        print(f"{f:<10}" + "".join(f"{summary['counts'][f][c]:>9}" for c in CLASSES))
    if summary["refusals"]:
        print(f"top {top} refusals (stage, op: program-flows):")
        for (stage, op), n in summary["refusals"].most_common(top):
            print(f"  {n:>6}  {stage:<8} {op}")
    for s, why in summary["skipped"][:5]:
        print(f"  skipped seed {s}: {why}")


# Minimizer.


def signature(cls, detail):
    """What a minimized program must keep of a failure: the class, and for invalid and crash
    the ops or the signal the message names (another bug of the same class does not count)."""
    if cls == "invalid":  # the op, and what the runtime said of it (numbers aside)
        what = re.sub(r"\d+", "N", re.sub(r"\S*/\S*", "PATH", detail.split("): ")[-1]))
        return cls, (tuple(ops_of(detail)) if "::" in detail else ()) + (what,)
    if cls == "crash":
        return cls, detail.split(":")[0]
    return cls, ""


def reproduces(args, prog, flow, want, work):
    try:
        M = prog.module_class()
        inputs = prog.make_inputs()
    except Exception:
        return False
    shutil.rmtree(work, ignore_errors=True)
    res = evaluate([(0, M, inputs, prog.calls, work)], [flow], args.runner)[0]
    return flow in res and signature(*res[flow][:2]) == want


def intermediates(prog):
    """Every statement's outputs as they were right after it ran (first call), by name."""
    src = prog.module_source()
    lines, out = src.splitlines(), []
    for line in lines:
        out.append(line)
        m = re.match(r"^        ((?:v\d+, )*v\d+),? = ", line)
        if m:
            for name in m.group(1).split(", "):
                out.append(f"        _rec[{name!r}] = {name}.clone()")
    src = "\n".join(out).replace("    def forward(self", "    def forward(self, _rec")
    ns = {}
    exec(compile(src, "<minimize>", "exec"), ns)
    rec = {}
    with torch.no_grad(), oracle.eager_cond():
        ns["M"]()(rec, *prog.make_inputs())
    return rec


def drop_statement(prog, k, rec):
    """prog without statement k: its outputs become inputs holding the values they had."""
    p = prog.copy()
    s = p.stmts.pop(k)
    for name in s.outs:
        users = [t for t in p.stmts if name in t.ins] or (name in p.outputs)
        if not users:
            continue
        if name not in rec:
            return None
        new = f"x{len(p.inputs)}"
        while any(i.name == new for i in p.inputs):
            new += "_"
        v = rec[name]
        dt = str(v.dtype).replace("torch.", "")
        p.inputs.append(gen.InputSpec(new, tuple(v.shape), dt, "value", value=v.contiguous()))
        for t in p.stmts:
            t.rename(name, new)
        p.outputs = [new if o == name else o for o in p.outputs]
    return tidy(p)


def bypass_statement(prog, k):
    """prog without statement k, its readers reading its first input of the same shape and dtype
    instead; None when it has none."""
    s = prog.stmts[k]
    if len(s.outs) != 1:
        return None
    rec = intermediates_types(prog)
    out = rec.get(s.outs[0])
    same = [n for n in s.ins if n in rec and rec[n] == out]
    if out is None or not same:
        return None
    p = prog.copy()
    p.stmts.pop(k)
    for t in p.stmts[k:]:
        t.rename(s.outs[0], same[0])
    p.outputs = [same[0] if o == s.outs[0] else o for o in p.outputs]
    return tidy(p)


def intermediates_types(prog):
    """(shape, dtype) of every named value of prog (first call)."""
    try:
        rec = intermediates(prog)
    except Exception:
        return {}
    types = {n: (tuple(v.shape), v.dtype) for n, v in rec.items()}
    for spec, t in zip(prog.inputs, prog.make_inputs()):
        types[spec.name] = (tuple(t.shape), t.dtype)
    return types


def tidy(p):
    """Drops dead statements, unused inputs and the buffer when nothing touches it."""
    changed = True
    while changed:
        changed = False
        used = {n for t in p.stmts for n in t.ins} | set(p.outputs)
        for k in range(len(p.stmts) - 1, -1, -1):
            t = p.stmts[k]
            if t.outs and not t.buffer and not any(o in used for o in t.outs):
                p.stmts.pop(k)
                changed = True
                break
    used = {n for t in p.stmts for n in t.ins} | set(p.outputs)
    p.inputs = [i for i in p.inputs if i.name in used or any(
        re.search(r"\b%s\b" % i.name, t.text) for t in p.stmts)]
    if not any(t.buffer for t in p.stmts):
        p.buffer, p.calls = None, 1
    if not p.outputs and not p.buffer:
        return None
    return p


def minimize(args, prog, flow, want, work, budget_s=120):
    """Delta debugging on the statement list, the outputs and the inputs' sizes, keeping each
    step that still gives `cls` on `flow`."""
    t0 = time.time()
    for spec, t in zip(prog.inputs, prog.make_inputs()):
        spec.value = t.contiguous()  # inputs by value from now on (they get narrowed)
        spec.channels_last = False if t.dim() != 4 else spec.channels_last
    best = prog
    if not reproduces(args, best, flow, want, work):
        return None

    def attempt(cand):
        return cand is not None and time.time() - t0 < budget_s and reproduces(
            args, cand, flow, want, work)

    progress = True
    while progress and time.time() - t0 < budget_s:
        progress = False
        # An earlier value as the only output: everything after it goes (earliest first).
        defined = [o for t in best.stmts for o in t.outs]
        for name in defined:
            if best.outputs == [name]:
                break
            c = best.copy()
            c.outputs = [name]
            c = tidy(c)
            if attempt(c):
                best, progress = c, True
                break
        for k in range(len(best.outputs) - 1, -1, -1):  # fewer outputs
            if len(best.outputs) > 1 or best.buffer is not None:
                c = best.copy()
                c.outputs.pop(k)
                c = tidy(c)
                if attempt(c):
                    best, progress = c, True
        try:
            rec = intermediates(best)
        except Exception:
            rec = {}
        for k in range(len(best.stmts) - 1, -1, -1):  # fewer statements
            if k >= len(best.stmts):
                continue
            c = bypass_statement(best, k)
            if attempt(c):
                best, progress = c, True
                continue
            c = drop_statement(best, k, rec)
            if attempt(c):
                best, progress = c, True
                try:
                    rec = intermediates(best)
                except Exception:
                    rec = {}
        for i in range(len(best.inputs)):  # smaller inputs: halves of a dim, either half
            for d in range(best.inputs[i].value.dim()):
                for half in (0, 1):
                    spec = best.inputs[i]
                    n = spec.value.shape[d]
                    if n < 2:
                        continue
                    c = best.copy()
                    lo, ln = (0, n // 2) if half == 0 else (n // 2, n - n // 2)
                    v = spec.value.narrow(d, lo, ln).contiguous()
                    c.inputs[i].value, c.inputs[i].shape = v, tuple(v.shape)
                    if attempt(c):
                        best, progress = c, True
                        break
        for i in range(len(best.inputs)):  # simpler values: chunks of elements set to 0
            for parts in (2, 4, 8):
                v = best.inputs[i].value
                if not v.is_floating_point() or v.numel() < parts:
                    continue
                size = -(-v.numel() // parts)
                for k in range(parts):
                    flat = best.inputs[i].value.reshape(-1)
                    chunk = flat[k * size:(k + 1) * size]
                    if chunk.numel() == 0 or bool((chunk == 0).all()):
                        continue
                    c = best.copy()
                    z = flat.clone()
                    z[k * size:(k + 1) * size] = 0
                    c.inputs[i].value = z.reshape(v.shape)
                    if attempt(c):
                        best, progress = c, True
    return best


def repro_source(prog, flows, cls, detail, seed):
    head = (f'"""Found by the differential fuzzer (tests/fuzz_models), seed {seed}, minimized:\n'
            f"{', '.join(flows)} gave `{cls}`: {detail[:300]}\n\nA fixed Ember matches eager "
            f'or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""'
            "\n\n")
    return head + prog.source() + f'FLOWS = {list(flows)!r}\nFOUND = "{cls}"\n'


def short_name(prog):
    ops = []
    for o in prog.ops():
        o = re.sub(r"^(torch\.|F\.)", "", o).replace("buf.", "buf_").strip("_")
        o = re.sub(r"[^A-Za-z0-9_]", "", o) or "op"
        if o not in ops:
            ops.append(o)
    return "_".join(ops[:4]) or "empty"


def minimize_failures(args, summary):
    """Minimizes up to args.minimize distinct failures (by class and signature; wrong ones by
    their set of ops too), each on the first flow it failed on, then runs the small program on
    every flow: the repro file lists the flows where it fails."""
    seen, written = set(), []
    repro_dir = os.path.join(args.out, "repros")
    os.makedirs(repro_dir, exist_ok=True)
    order = {"wrong": 0, "crash": 1, "invalid": 2}  # wrong results first: the worst kind
    for fail in sorted(summary["failures"], key=lambda f: order[f["class"]]):
        if len(written) >= args.minimize:
            break
        sig = signature(fail["class"], fail["detail"])
        key = sig + ((tuple(sorted(set(fail["ops"]))),) if fail["class"] == "wrong" else ())
        if key in seen:
            continue
        seen.add(key)
        prog = gen.generate(fail["seed"])
        work = os.path.join(args.work, f"min{fail['seed']}_{fail['flow']}")
        small = minimize(args, prog, fail["flow"], sig, work)
        if small is None:
            print(f"  seed {fail['seed']} {fail['flow']}: did not reproduce alone")
            continue
        shutil.rmtree(work, ignore_errors=True)
        res = evaluate([(0, small.module_class(), small.make_inputs(), small.calls, work)],
                       args.flows, args.runner)[0]
        flows = [f for f in args.flows if res.get(f, ("",))[0] in FAILURES] or [fail["flow"]]
        where = "all" if len(flows) == len(FLOWS) else "_".join(flows)
        name = f"{where}_{fail['class']}_{short_name(small)}"
        if name in {w[0] for w in written}:
            name += f"_s{fail['seed']}"  # the same ops, another failure
        path = os.path.join(repro_dir, name + ".py")
        with open(path, "w") as f:
            f.write(repro_source(small, flows, fail["class"], res[flows[0]][1] or fail["detail"],
                                 fail["seed"]))
        written.append((name, path))
        print(f"  minimized seed {fail['seed']} ({len(prog.stmts)} statements) -> {path} "
              f"({len(small.stmts)} statements; fails on {', '.join(flows)})")
    return written


# Regression files.


def regression_meta(path):
    """A regression file's KNOWN text (the open bug it still shows, empty when fixed) and whether
    it was a wrongful refusal (FOUND = "refused": a program the flow must now run)."""
    ns = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    return ns.get("KNOWN", ""), ns.get("FOUND") == "refused"


def run_repro(args, path, flows=None):
    """Runs one regression file on its flow (or `flows`). Returns {flow: (class, detail)}."""
    ns = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    flows = flows or ns["FLOWS"]
    work = os.path.join(args.work, "repro_" + os.path.splitext(os.path.basename(path))[0])
    shutil.rmtree(work, ignore_errors=True)
    res = evaluate([(0, ns["M"], ns["inputs"](), ns.get("CALLS", 1), work)], flows,
                   args.runner)[0]
    if "skip" in res:
        return {f: ("skip", res["skip"]) for f in flows}
    return {f: res[f][:2] for f in flows}


def write_failures(args, summary):
    fdir = os.path.join(args.out, "failures")
    os.makedirs(fdir, exist_ok=True)
    for fail in summary["failures"]:
        prog = gen.generate(fail["seed"])
        path = os.path.join(fdir, f"seed{fail['seed']}_{fail['flow']}.py")
        with open(path, "w") as f:
            f.write(repro_source(prog, [fail["flow"]], fail["class"], fail["detail"],
                                 fail["seed"]).replace("minimized", "not minimized"))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["run", "ctest", "repro"])
    p.add_argument("files", nargs="*")
    p.add_argument("--runner", required=True)
    p.add_argument("--python-dir", required=True)
    p.add_argument("--work")
    p.add_argument("--out", default="build/fuzz-models")
    p.add_argument("--regressions", default=os.path.join(HERE, "regressions"))
    p.add_argument("--seconds", type=float)
    p.add_argument("--seeds", help="A:B, the seeds to run (default: from --seed on, until "
                   "--seconds)")
    p.add_argument("--seed", type=int, default=1000000)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--flows", default=",".join(FLOWS))
    p.add_argument("--minimize", type=int, default=8, help="failures to minimize (run)")
    p.add_argument("--keep", action="store_true", help="keep every case's files")
    args = p.parse_args()
    args.flows = [f for f in args.flows.split(",") if f]
    args.work = os.path.abspath(args.work or os.path.join(args.out, "work"))
    args.runner = os.path.abspath(args.runner)
    setup(args.python_dir)
    os.makedirs(args.work, exist_ok=True)

    if args.command == "repro":
        bad = 0
        for path in args.files:
            for flow, (cls, detail) in run_repro(args, path).items():
                print(f"{os.path.basename(path)} {flow}: {cls} {detail[:300]}")
                bad += cls in FAILURES
        return 1 if bad else 0

    if args.command == "ctest":
        why = oracle.other_kernels_differ()
        if why:
            print(f"FAILED the oracle's OtherKernels is not what ATen's kernels give: {why}")
            return 1
        # The fixed range: 35-80 s on two shared cores, every flow (--jobs 2).
        seeds = seed_range(args.seeds or "0:192", 0)
        summary = fuzz(args, seeds)
        print_summary(summary, args.flows)
        known_failed = {f["seed"] for f in summary["failures"] if f["seed"] in KNOWN_SEEDS}
        bad = sum(f["seed"] not in KNOWN_SEEDS for f in summary["failures"])
        for seed in sorted(set(KNOWN_SEEDS) & set(seeds) - known_failed):
            print(f"FAILED seed {seed} is in KNOWN_SEEDS but passes now: remove it")
            bad += 1
        files = sorted(f for f in os.listdir(args.regressions) if f.endswith(".py")) \
            if os.path.isdir(args.regressions) else []
        for name in files:
            path = os.path.join(args.regressions, name)
            known, must_run = regression_meta(path)
            results = run_repro(args, path)
            for flow, (cls, detail) in results.items():
                print(f"regression {name} {flow}: {cls} {detail[:300]}"
                      + (f" (known: {known})" if known else ""))
                if not known:
                    bad += cls in FAILURES or cls == "skip" or (must_run and cls == "refused")
            if known and not any(cls in FAILURES for cls, _ in results.values()):
                print(f"FAILED regression {name} is marked KNOWN but passes now: remove KNOWN")
                bad += 1
        for fail in summary["failures"]:
            tag = " (known: %s)" % KNOWN_SEEDS[fail["seed"]] if fail["seed"] in KNOWN_SEEDS else ""
            print(f"{'known' if tag else 'FAILED'} seed {fail['seed']} {fail['flow']}: "
                  f"{fail['class']}: {fail['detail'][:300]}{tag}\n"
                  f"{gen.generate(fail['seed']).source()}")
        print(f"{bad} failure(s)")
        return 1 if bad else 0

    os.makedirs(args.out, exist_ok=True)
    deadline = time.time() + args.seconds if args.seconds else None
    if not args.seconds and not args.seeds:
        p.error("run needs --seconds or --seeds")
    summary = fuzz(args, seed_range(args.seeds, args.seed), deadline)
    print_summary(summary, args.flows)
    write_failures(args, summary)
    written = minimize_failures(args, summary) if args.minimize else []
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"programs": summary["programs"], "seconds": summary["seconds"],
                   "counts": {k: dict(v) for k, v in summary["counts"].items()},
                   "refusals": [[s, o, n] for (s, o), n in summary["refusals"].most_common()],
                   "refusal_examples": summary["examples"], "skipped": summary["skipped"],
                   "failures": summary["failures"], "repros": [w[1] for w in written]}, f,
                  indent=1)
    print(f"failures: {len(summary['failures'])} (programs in {args.out}/failures, "
          f"{len(written)} minimized in {args.out}/repros)")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
