"""Ember's differential fuzzer (issue 20): random valid PyTorch programs (gen.py), exported with
ember.export, compiled and run by each flow (portable, `--backend cpu`, `--backend loopback`)
through the batch driver ember_fuzz_runner, and compared with eager PyTorch.

    fuzz_models.py run --runner R --python-dir D --out DIR [--seconds S | --seeds A:B]
                       [--jobs N] [--flows portable,cpu,loopback] [--minimize K]
    fuzz_models.py ctest --runner R --python-dir D --work DIR --regressions DIR
    fuzz_models.py repro FILE... --runner R --python-dir D --work DIR

Each (program, flow) gets one class:
  match    ran, and every output agrees with eager (see `compare`);
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
PERTURB_SEED = 20  # the perturbed reference's random changes: the same on every run

torch = np = ember = gen = None  # imported by setup(): a missing torch is reported, not a trace
Float32AsFloat64 = ScalarMinMax = None  # made by setup(), from _make_float32_as_float64 and
# _make_scalar_min_max


def setup(python_dir):
    global torch, np, ember, gen, Float32AsFloat64, ScalarMinMax
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
    Float32AsFloat64 = _make_float32_as_float64()
    ScalarMinMax = _make_scalar_min_max()
    from export_speed import cache_cia_ops
    cache_cia_ops()


@contextlib.contextmanager
def eager_cond():
    """torch.cond, run eagerly as what it means: torch's own eager cond compiles each branch with
    TorchDynamo (seconds a call). Export sees the real torch.cond."""
    real = torch.cond
    torch.cond = lambda pred, t, f, ops: t(*ops) if bool(pred) else f(*ops)
    try:
        yield
    finally:
        torch.cond = real


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# The unit roundoff of each floating dtype: the relative size of one rounding.
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8,
                 "float64": 2.0 ** -53}


def _perturbed(t, generator, dtype=None):
    """t (float64) times 1 + d, |d| between half and all of the unit roundoff of t's original
    dtype (or `dtype`'s), with a random sign: a change of the size of the rounding that made t."""
    u = UNIT_ROUNDOFF.get(str(dtype or t.dtype).replace("torch.", ""), 2.0 ** -24)
    # A random sign, and a random size in [u/2, u]: equal values move apart, so that x - x of two
    # inputs shows the cancellation it hides (a mean of [3e38, 0.43, -3e38]).
    sign = torch.randint(0, 2, t.shape, generator=generator, dtype=torch.int64) * 2 - 1
    size = 0.5 + 0.5 * torch.rand(t.shape, generator=generator, dtype=torch.float64)
    return t.double() * (1 + u * size * sign.double())


def _make_float32_as_float64():
    """A TorchFunctionMode for the float64 reference: float32 named anywhere in a call (a
    program's `.to(torch.float32)`, `dtype=torch.float32`) means float64, so the reference
    computes the program's float32 values wide, and a cast does not mix float32 with the float64
    state (which layer_norm and conv refuse). Mode(all_floats=True) widens float16 and bfloat16
    too: the program in exact arithmetic, whose distance to eager measures how much the roundings
    of its 16-bit values move each output. Mode(perturb=generator) also moves every value an op
    computes (not views, not in-place results) by one float32 rounding (_perturbed): the output's
    condition under the roundings inside the program, which one at the inputs does not show
    (x / logsumexp(log_softmax(y)): the divisor is 0 in exact arithmetic, for any y, and a
    rounding residue of either sign in float32)."""
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __init__(self, all_floats=False, perturb=None):
            super().__init__()
            self.perturb = perturb
            self.narrow = ({torch.float32, torch.float16, torch.bfloat16} if all_floats
                           else {torch.float32})
            self.casts = ({torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16}
                          if all_floats else {torch.Tensor.float})

        def widen(self, a):
            if isinstance(a, torch.dtype) and a in self.narrow:
                return torch.float64
            if isinstance(a, (list, tuple)):
                return type(a)(self.widen(x) for x in a)
            return a

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in self.casts:
                return args[0].double()
            kwargs = {k: self.widen(v) for k, v in (kwargs or {}).items()}
            if func in nan_to_num and args and args[0].dtype == torch.float64:
                # ±inf become the largest float32, as in the program, not float64's (which
                # would overflow where the program's values do not).
                for i, key in ((2, "posinf"), (3, "neginf")):
                    if len(args) <= i and kwargs.get(key) is None:
                        kwargs[key] = FLOAT32_MAX if key == "posinf" else -FLOAT32_MAX
            out = func(*self.widen(tuple(args)), **kwargs)
            name = getattr(func, "__name__", "")
            if (self.perturb is not None and isinstance(out, torch.Tensor)
                    and out.dtype == torch.float64 and out._base is None
                    and not name.endswith("_") and not name.startswith("__i")
                    and not any(out is a for a in args)):
                # (the mode is off inside its own handler: these ops are not seen again)
                out = _perturbed(out, self.perturb, torch.float32)
            return out

    nan_to_num = {torch.nan_to_num, torch.Tensor.nan_to_num, torch.Tensor.nan_to_num_}
    return Mode


FLOAT32_MAX = 3.4028234663852886e38


def _make_scalar_min_max():
    """A TorchFunctionMode in which maximum and minimum (torch.max and torch.min of two tensors
    too) compute every element by ATen's scalar formula: NaN if either operand is NaN, else
    std::max(a, b) (`a < b ? b : a`) or std::min(a, b) (`b < a ? b : a`), which keep the first of
    two equal operands. ATen's vectorized body (`_mm256_max_ps(a, b)` and its AVX-512 twin) gives
    the second of two equal zeros instead, so eager's maximum(-0.0, zeros(70)) is +0.0 in
    elements 0-63 and -0.0 in 64-69 (`all_wrong_maximum_zero_sign.py`). Ember, like ATen's
    scalar path and ExecuTorch's portable kernel, keeps the first operand everywhere."""
    from torch.overrides import TorchFunctionMode

    largest = {torch.maximum, torch.Tensor.maximum, torch.max, torch.Tensor.max}
    smallest = {torch.minimum, torch.Tensor.minimum, torch.min, torch.Tensor.min}

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            pair = (len(args) == 2 and not kwargs and isinstance(args[0], torch.Tensor)
                    and isinstance(args[1], torch.Tensor))
            if (func in largest or func in smallest) and pair:
                dtype = torch.result_type(args[0], args[1])
                a, b = torch.broadcast_tensors(args[0].to(dtype), args[1].to(dtype))
                pick_b = (a < b) if func in largest else (b < a)
                out = torch.where(pick_b, b, a)
                if dtype.is_floating_point:
                    out = torch.where(a.isnan() | b.isnan(), float("nan"), out)
                return out.contiguous()
            return func(*args, **kwargs)

    return Mode


def scalar_min_max_differs():
    """None when ScalarMinMax gives what ATen's own scalar path gives (strided operands, which
    its vectorized loop does not take), element for element and sign for sign, on equal zeros of
    both orders, NaN and numbers; else what differs. ATen is the reference here, not the mode."""
    a = torch.tensor([-0.0, 0.0, -0.0, 0.0, float("nan"), 1.0, -2.0, 0.0] * 8)
    b = torch.tensor([0.0, -0.0, -0.0, 0.0, 1.0, float("nan"), 3.0, -1.0] * 8)
    strided = (torch.stack([a, a], 1)[:, 0], torch.stack([b, b], 1)[:, 0])
    assert not strided[0].is_contiguous()
    for name in ("maximum", "minimum"):
        aten = getattr(torch, name)(*strided)
        with ScalarMinMax():
            mode = getattr(torch, name)(a, b)
        same = ((aten == mode) & (aten.signbit() == mode.signbit())) | (aten.isnan() & mode.isnan())
        if not bool(same.all()):
            i = int((~same).nonzero()[0])
            return f"{name} at {i}: ATen's scalar path {aten[i].item()!r}, mode {mode[i].item()!r}"
    return None


def run_eager(M, inputs, calls, double=False, perturb=None, all_floats=False, other_path=False):
    """The outputs of `calls` executions in a row of a fresh M (state carries over).

    other_path: ATen's other CPU path, whose results are PyTorch's too. ATen hands some float32
    ops of contiguous tensors of more than one element to oneDNN (gelu: +0.0 below -5.5, where
    its own formula, which a one-element or strided tensor gets, gives -0.0): here
    torch.backends.mkldnn is off. And its maximum and minimum of two equal zeros give the second
    operand in their vectorized body and the first in their scalar tail and on strided tensors
    (ScalarMinMax): here every element gets the scalar formula.
    double: the reference, in float64 (the module's state, every floating input, and float32
    wherever the program names it; its casts to float16 and bfloat16 stay, unless all_floats).
    perturb (a seed, with double): every floating input and state tensor also changed by one
    rounding of its own dtype, which tells how much each output depends on roundings at the
    inputs (its condition)."""
    m = M()
    if double:
        generator = torch.Generator().manual_seed(perturb) if perturb is not None else None
        with torch.no_grad():
            for t in list(m.parameters()) + list(m.buffers()):
                if t.is_floating_point():
                    t.data = _perturbed(t.data, generator) if generator else t.data.double()
        inputs = [(_perturbed(x, generator) if generator else x.double())
                  if x.is_floating_point() else x for x in inputs]
    result = []
    # In float64, integers promote to float64 too (int64 - inf, a mean of integers...).
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if double else default)
    try:
        with torch.no_grad(), eager_cond(), torch.backends.mkldnn.flags(enabled=not other_path), \
                (ScalarMinMax() if other_path else contextlib.nullcontext()), \
                (Float32AsFloat64(all_floats, generator) if double
                 else contextlib.nullcontext()):
            for _ in range(calls):
                # Contiguous, as Ember gets them (.npy, C order): eager's kernels can give other
                # values on other layouts (gelu(+inf): NaN vectorized, inf strided and in float64).
                args = [x.clone(memory_format=torch.contiguous_format) for x in inputs]
                result.append([o.clone() for o in as_list(m(*args))])
    finally:
        torch.set_default_dtype(default)
    return result


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
        case["expected"] = run_eager(M, inputs, calls)
        case["expected_alt"] = run_eager(M, inputs, calls, other_path=True)
    except Exception as e:  # the generator built something eager rejects
        case["skip"] = f"eager: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        return case
    try:
        case["reference"] = run_eager(M, inputs, calls, double=True)
        case["perturbed"] = run_eager(M, inputs, calls, double=True, perturb=PERTURB_SEED)
        case["exact"] = run_eager(M, inputs, calls, double=True, all_floats=True)
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


TOL = {"float32": (1e-3, 1e-4), "float64": (1e-3, 1e-4), "float16": (1e-2, 1e-3),
       "bfloat16": (4e-2, 1e-2)}


def compare(expected, reference, got, perturbed=None, exact=None, alternative=None):
    """None when `got` (a NumPy array) agrees with eager's `expected`, else the reason.

    Integers and bools must be equal; floats within a tolerance for their dtype, widened by three
    estimates of how much rounding moves the result: eager's distance to the float64 reference
    (the roundings inside the computation), the reference's distance to itself run on inputs
    moved by one rounding each (`perturbed`: the output's condition), and eager's distance to the
    program in exact arithmetic (`exact`: float16 and bfloat16 values unrounded too, for a float32
    output computed from them). NaN and infinities must be at the same places, but where eager
    alone gives NaN and exact arithmetic a value. Elements where eager and the reference, or the
    reference and the perturbed reference, disagree on being NaN, infinite or (integers) their
    value or the sign of an infinity, and float elements that the perturbation alone moves by
    more than the tolerance, are ill-conditioned (a summation order or one rounding decides them:
    any float32 evaluation may give either): not compared. Where eager is infinite and exact
    arithmetic finite (an overflow inside eager's kernel), the exact value is accepted too. So is
    eager's `alternative` result (its other CPU path, run_eager's other_path), within the same
    tolerance.
    """
    dtype = str(expected.dtype).replace("torch.", "")
    e = expected.float().numpy() if dtype == "bfloat16" else expected.numpy()
    if tuple(got.shape) != tuple(e.shape):
        return f"shape {tuple(got.shape)}, eager {tuple(e.shape)}"
    want_kind = "f" if dtype in TOL else e.dtype.kind
    if got.dtype.kind != want_kind and not (want_kind in "iu" and got.dtype.kind in "iu"):
        return f"dtype {got.dtype}, eager {dtype}"

    def as_double(t):
        return t.double().numpy() if t is not None and tuple(t.shape) == tuple(e.shape) else None

    refs = [x for x in (as_double(reference), as_double(perturbed)) if x is not None]
    mask = np.ones(e.shape, dtype=bool)
    if e.dtype.kind in "biu":
        last = e.astype(np.float64)
        for r in refs:
            mask &= r == last
            last = r
        bad = mask & (got != e)
        if alternative is not None and tuple(alternative.shape) == tuple(e.shape):
            bad &= got != alternative.numpy()
    else:
        e64, g64 = e.astype(np.float64), got.astype(np.float64)
        rtol, atol = TOL.get(dtype, TOL["float32"])
        base = tol = atol + rtol * np.abs(e64)
        last = e64
        for k, r in enumerate(refs):
            mask &= (np.isnan(r) == np.isnan(last)) & (np.isinf(r) == np.isinf(last))
            # Infinities of opposite signs: a cancellation decided the sign of what overflowed.
            mask &= ~(np.isinf(r) & np.isinf(last) & (np.sign(r) != np.sign(last)))
            with np.errstate(invalid="ignore", over="ignore"):
                noise = np.abs(last - r)
                noise = np.where(np.isfinite(noise), noise, 0)
            if k == 1:
                # One rounding at each input moved the reference by more than the tolerance:
                # the element's condition is beyond what a tolerance can bound (sin of 3e38,
                # whose float32 neighbours have any sine), and one random move of that size may
                # even happen to land close. Any float32 evaluation may give any such value.
                # (Not where eager is NaN or inf: there base is NaN or inf, and this keeps it.)
                mask &= ~(noise > base)
            tol = tol + 8 * noise
            last = r
        x = as_double(exact)
        exact_close = np.zeros(e.shape, dtype=bool)
        if x is not None:
            # A NaN of eager's 16-bit kernels where exact arithmetic has a value (bfloat16
            # gelu(+inf): NaN vectorized, inf on a strided tensor and in float64) is theirs.
            mask &= ~(np.isnan(e64) & ~np.isnan(x))
            # An infinity of eager's where exact arithmetic is finite overflowed inside eager's
            # computation (bfloat16 gelu(3e38) is inf in eager): the exact value is right too.
            with np.errstate(invalid="ignore", over="ignore"):
                exact_close = (np.isinf(e64) & np.isfinite(x) &
                               (np.abs(g64 - x) <= atol + rtol * np.abs(x)))
            with np.errstate(invalid="ignore", over="ignore"):
                noise = np.abs(e64 - x)
                tol = tol + 8 * np.where(np.isfinite(noise), noise, 0)

        def close_to(want):
            with np.errstate(invalid="ignore"):
                near = (np.abs(g64 - want) <= tol) | (g64 == want)
            # An infinite value has an infinite tolerance: there only the same infinity is close.
            return np.where(np.isinf(want), g64 == want, near) | (np.isnan(g64) & np.isnan(want))

        close = close_to(e64) | exact_close
        if alternative is not None and tuple(alternative.shape) == tuple(e.shape):
            close |= close_to(alternative.double().numpy())
        bad = mask & ~close
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {e.size} elements differ; at {list(idx)}: got {got[idx]!r}, "
            f"eager {e[idx]!r}")


def classify(case, flow, status, message):
    """(class, detail) of one case on one flow, from the driver's status line."""
    if status == "refused":
        return "refused", message
    if status != "ok":
        return status, message
    work = case["dir"]
    for c, outs in enumerate(case["expected"]):
        refs = case["reference"][c] if case.get("reference") else [None] * len(outs)
        perturbed = case["perturbed"][c] if case.get("perturbed") else [None] * len(outs)
        exact = case["exact"][c] if case.get("exact") else [None] * len(outs)
        alt = case["expected_alt"][c] if case.get("expected_alt") else [None] * len(outs)
        for i, (e, r, p, x, a) in enumerate(zip(outs, refs, perturbed, exact, alt)):
            path = os.path.join(work, f"{flow}_call{c}_out{i}.npy")
            if not os.path.exists(path):
                return "wrong", f"call {c} output {i}: missing (only some outputs came back)"
            why = compare(e, r, np.load(path), p, x, a)
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
    with torch.no_grad(), eager_cond():
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
        why = scalar_min_max_differs()
        if why:
            print(f"FAILED the oracle's ScalarMinMax is not ATen's scalar path: {why}")
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
