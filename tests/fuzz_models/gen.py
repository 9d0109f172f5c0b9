"""Random valid PyTorch programs for the differential fuzzer (fuzz_models.py).

    prog = generate(seed)            # the same seed gives the same program, on any machine
    src = prog.source()              # a readable nn.Module, its inputs as code
    M = prog.module_class(); inputs = prog.make_inputs()

A program is straight-line code over named values (v0, v1, ...), built one statement at a time.
As in NNSmith, the generator tracks each value's shape and dtype, and only picks an op whose
constraints it can satisfy with the values it has (matching or broadcastable shapes, a dtype the
op takes, a dim to reduce that is not empty...), so that every program runs in eager PyTorch.

Each value also carries `exact`: computed from the inputs by ops with no rounding (views,
comparisons, relu, max, casts of exact values...). Ops whose result jumps on a change of one ulp
(floor, round, sign, argmax, comparisons, casts to integers) take exact values only: otherwise a
backend that rounds differently (and legally) would turn a 1e-7 difference into a whole unit.

Statements know the names they read and write, so the minimizer can drop one and feed its output
to the program as a new input (the value it had), and render the rest again.
"""

import math
import random
import re

import numpy
import torch

FLOAT = ("float32", "float16", "bfloat16")
INT = ("int64", "int32")
DTYPES = FLOAT + INT + ("bool",)

# The edge values an input may hold (floats), besides ordinary ones.
EDGE = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 3.0e38, -3.0e38, 1.0e30, 1.0e-40,
        65504.0, -1.0, 1.0]


class V:
    """A value: its name, shape and dtype, and whether it is exact (see the module docstring)."""

    def __init__(self, name, shape, dtype, exact=False, owned=False):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.exact = exact
        self.owned = owned  # computed here, not a view, not an input: an in-place op may write it
        # Values this one is a view of, and values it may or may not be a view of (a reshape,
        # flatten or contiguous is a view or a copy by the layout: PyTorch leaves it open, so
        # an in-place write to such a base makes the program's result depend on the layout).
        self.views, self.maybe_views = frozenset(), frozenset()

    @property
    def numel(self):
        return math.prod(self.shape)

    @property
    def is_float(self):
        return self.dtype in FLOAT


class Stmt:
    """One line of forward(): `text` reads `ins` and defines `outs`; `params` are __init__ lines
    (weights, made from a seed); `op` names it for the minimizer's reports."""

    def __init__(self, op, text, ins, outs, params=(), buffer=False):
        self.op, self.text, self.ins, self.outs = op, text, list(ins), list(outs)
        self.params = list(params)
        self.buffer = buffer  # reads or writes self.buf

    def rename(self, old, new):
        pat = re.compile(r"\b%s\b" % re.escape(old))
        self.text = pat.sub(new, self.text)
        self.ins = [new if n == old else n for n in self.ins]


class InputSpec:
    def __init__(self, name, shape, dtype, fill, channels_last=False, value=None):
        self.name, self.shape, self.dtype, self.fill = name, tuple(shape), dtype, fill
        self.channels_last = channels_last
        self.value = value  # a tensor, when the minimizer made this input from an intermediate


def _dt(dtype):
    return getattr(torch, dtype)


def make_input(spec, seed):
    """The input tensor of `spec`, from `seed` (deterministic)."""
    if spec.value is not None:
        t = spec.value.clone()
    else:
        g = torch.Generator().manual_seed(seed)
        n = math.prod(spec.shape)
        if spec.dtype == "bool":
            t = torch.rand(spec.shape, generator=g) < 0.5
        elif spec.dtype in INT:
            t = torch.randint(-5, 6, spec.shape, generator=g, dtype=_dt(spec.dtype))
        else:
            if spec.fill == "ties":  # few distinct values: ties for max, sort, argmax
                t = torch.randint(-2, 3, spec.shape, generator=g).float() * 0.5
            else:
                t = torch.randn(spec.shape, generator=g) * 2.0
            if spec.fill == "edge" and n:
                flat = t.view(-1)
                k = torch.randint(1, max(2, n // 3 + 1), (1,), generator=g).item()
                pos = torch.randperm(n, generator=g)[:k]
                for p in pos.tolist():
                    flat[p] = EDGE[torch.randint(0, len(EDGE), (1,), generator=g).item()]
            t = t.to(_dt(spec.dtype))
    if spec.channels_last and t.dim() == 4:
        t = t.contiguous(memory_format=torch.channels_last)
    return t


class Program:
    def __init__(self, seed):
        self.seed = seed
        self.inputs = []  # InputSpec
        self.stmts = []
        self.outputs = []  # names
        self.buffer = None  # (shape) of self.buf (float32), or None
        self.calls = 1  # executions in a row (2 with a buffer: state carries over)

    def copy(self):
        p = Program(self.seed)
        p.inputs = [InputSpec(i.name, i.shape, i.dtype, i.fill, i.channels_last, i.value)
                    for i in self.inputs]
        p.stmts = [Stmt(s.op, s.text, s.ins, s.outs, s.params, s.buffer) for s in self.stmts]
        p.outputs = list(self.outputs)
        p.buffer, p.calls = self.buffer, self.calls
        return p

    def ops(self):
        return [s.op for s in self.stmts]

    # Rendering.
    def module_source(self):
        lines = ["import torch", "import torch.nn.functional as F", "", ""]
        if any(s.params for s in self.stmts):
            lines += ["def _w(shape, seed):  # a weight, the same on every machine",
                      "    g = torch.Generator().manual_seed(seed)",
                      "    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, "
                      "requires_grad=False)", "", ""]
        lines += ["class M(torch.nn.Module):", "    def __init__(self):",
                  "        super().__init__()"]
        if self.buffer is not None:
            lines.append(f"        self.register_buffer('buf', torch.zeros({self.buffer!r}))")
        for s in self.stmts:
            lines += ["        " + p for p in s.params]
        args = ", ".join(["self"] + [i.name for i in self.inputs])
        lines.append(f"    def forward({args}):")
        for s in self.stmts:
            lines.append("        " + s.text)
        outs = list(self.outputs)
        if self.buffer is not None:
            outs.append("self.buf.clone()")
        lines.append(f"        return ({', '.join(outs)},)")
        return "\n".join(lines) + "\n"

    def inputs_source(self):
        lines = ["", "", "nan, inf = float('nan'), float('inf')", "", "", "def inputs():"]
        items = [tensor_source(t, spec) for t, spec in zip(self.make_inputs(), self.inputs)]
        lines.append("    return [" + (",\n            ".join(items)) + "]")
        return "\n".join(lines) + "\n"

    def make_inputs(self):
        return [make_input(spec, self.seed * 1000 + k) for k, spec in enumerate(self.inputs)]

    def source(self):
        """The program as a standalone file: the module, its inputs as literals, CALLS."""
        return self.module_source() + self.inputs_source() + f"\n\nCALLS = {self.calls}\n"

    def module_class(self):
        ns = {}
        exec(compile(self.module_source(), f"<fuzz program {self.seed}>", "exec"), ns)
        return ns["M"]


def _lit(x, dtype):
    if dtype == "bool":
        return "True" if x else "False"
    if dtype in INT:
        return str(int(x))
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if dtype in ("float32", "float16"):  # the shortest text that gives the value back
        return str(getattr(numpy, dtype)(x))
    return repr(float(x))


def tensor_source(t, spec):
    """`t` as a literal (exact: float16 and bfloat16 values are exact in float64)."""
    cl = ".contiguous(memory_format=torch.channels_last)" if spec.channels_last else ""
    flat = t.detach().reshape(-1)
    if spec.dtype in FLOAT:
        flat = flat.to(torch.float64)
    body = ", ".join(_lit(v, spec.dtype) for v in flat.tolist())
    return f"torch.tensor([{body}], dtype=torch.{spec.dtype}).reshape({tuple(t.shape)!r}){cl}"


# ---------------------------------------------------------------------------------------------
# The generator proper.


def promote(a, b):
    return str(torch.promote_types(_dt(a), _dt(b))).replace("torch.", "")


def broadcast(a, b):
    try:
        return tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        return None


class Gen:
    def __init__(self, seed, max_ops):
        self.rng = random.Random(seed)
        self.prog = Program(seed)
        self.pool = []  # live values
        self.n = 0
        self.max_ops = max_ops
        self.param_seed = seed * 100

    def fresh(self):
        self.n += 1
        return f"v{self.n}"

    def shape(self, rank=None):
        r = self.rng
        rank = r.choice([1, 2, 2, 3, 3, 4, 4]) if rank is None else rank
        dims = []
        for _ in range(rank):
            x = r.random()
            dims.append(0 if x < 0.03 else 1 if x < 0.2 else r.randint(2, 6))
        return tuple(dims)

    def add_input(self, shape, dtype, fill=None):
        r = self.rng
        fill = fill or r.choice(["normal", "normal", "edge", "edge", "ties"])
        name = f"x{len(self.prog.inputs)}"
        cl = len(shape) == 4 and dtype in FLOAT and r.random() < 0.2
        self.prog.inputs.append(InputSpec(name, shape, dtype, fill, cl))
        v = V(name, shape, dtype, exact=True)
        self.pool.append(v)
        return v

    def pick(self, pred=lambda v: True):
        c = [v for v in self.pool if pred(v)]
        if not c:
            return None
        # Prefer recent values: programs become chains rather than fans of inputs.
        w = [1 + 3 * (i >= len(c) - 3) for i in range(len(c))]
        return self.rng.choices(c, weights=w)[0]

    def emit(self, op, text, ins, outs, params=(), buffer=False):
        self.prog.stmts.append(Stmt(op, text, [v.name for v in ins], [o.name for o in outs],
                                    params, buffer))
        self.pool += outs
        return outs[0] if outs else None

    def weight(self, shape):
        self.param_seed += 1
        name = f"p{self.param_seed % 100}"
        return f"self.{name}", [f"self.{name} = _w({shape!r}, {self.param_seed})"]

    # Op families: each returns True when it emitted a statement.
    def unary(self):
        r = self.rng
        x = self.pick(lambda v: v.is_float)
        if x is None:
            return False
        # (text, exact-preserving, needs exact input, float only)
        ops = [("torch.relu({})", True), ("F.relu6({})", True), ("F.hardtanh({})", True),
               ("torch.sigmoid({})", False), ("torch.tanh({})", False), ("torch.exp({})", False),
               ("torch.log({})", False), ("torch.sqrt({})", False), ("torch.abs({})", True),
               ("torch.neg({})", True), ("F.gelu({})", False), ("F.silu({})", False),
               ("F.elu({})", False), ("F.leaky_relu({}, 0.1)", False),
               ("F.softplus({})", False), ("torch.sin({})", False), ("torch.cos({})", False),
               ("torch.reciprocal({})", False), ("torch.clamp({}, -1.5, 2.0)", True),
               ("torch.clamp({}, min=0.5)", True), ("torch.nan_to_num({})", True),
               ("F.hardswish({})", False), ("F.hardsigmoid({})", False),
               ("torch.rsqrt({})", False), ("torch.erf({})", False), ("({} * 2.5)", False),
               ("({} + 1)", False), ("({} / 3.0)", False), ("torch.square({})", False)]
        disc = [("torch.floor({})", True), ("torch.ceil({})", True), ("torch.round({})", True),
                ("torch.sign({})", True), ("torch.trunc({})", True)]
        if x.exact:
            ops = ops + disc
        text, exact = r.choice(ops)
        if x.dtype != "float32" and text.startswith("torch.erf"):
            text = "torch.tanh({})"
        out = V(self.fresh(), x.shape, x.dtype, exact and x.exact, owned=True)
        return self.emit(text.split("(")[0] or "scalar" + text[4], f"{out.name} = {text.format(x.name)}", [x], [out])

    def unary_pred(self):
        x = self.pick(lambda v: v.is_float)
        if x is None:
            return False
        text = self.rng.choice(["torch.isnan({})", "torch.isinf({})", "torch.isfinite({})"])
        out = V(self.fresh(), x.shape, "bool", True, owned=True)
        return self.emit(text.split("(")[0], f"{out.name} = {text.format(x.name)}", [x], [out])

    def binary(self):
        r = self.rng
        a = self.pick()
        if a is None:
            return False
        # A partner with a broadcastable shape, or a fresh input of a broadcastable shape.
        cands = [v for v in self.pool if broadcast(v.shape, a.shape) is not None]
        if r.random() < 0.3 or not cands:
            shape = list(a.shape)
            for i in range(len(shape)):
                if r.random() < 0.4:
                    shape[i] = 1
            if shape and r.random() < 0.3:
                shape = shape[r.randint(0, len(shape) - 1):]
            dtype = a.dtype if r.random() < 0.7 else r.choice(DTYPES)
            b = self.add_input(tuple(shape), dtype)
        else:
            b = r.choice(cands)
        if r.random() < 0.5:
            a, b = b, a
        shape = broadcast(a.shape, b.shape)
        dt = promote(a.dtype, b.dtype)
        exact = a.exact and b.exact
        choices = []
        if dt != "bool":
            choices += [("torch.add", dt, False), ("torch.mul", dt, False)]
        if "bool" not in (a.dtype, b.dtype):
            choices += [("torch.sub", dt, False),
                        ("torch.maximum", dt, True),
                        ("torch.minimum", dt, True)]
        if dt in FLOAT:
            choices += [("torch.div", dt, False), ("torch.pow", dt, False),
                        ("torch.fmod", dt, False)]
            if exact:
                # atan2 jumps by 2 pi across a zero's sign: a rounded operand near zero (a
                # matmul's +0.0 or -0.0, which eager's own paths disagree on) decides it.
                choices.append(("torch.atan2", dt, False))
        if dt in INT:
            choices += [("torch.div", "float32", False), ("torch.floor_divide", dt, True),
                        ("torch.remainder", dt, True), ("torch.bitwise_and", dt, True)]
        if dt == "bool":
            choices += [("torch.logical_and", "bool", True), ("torch.logical_or", "bool", True),
                        ("torch.logical_xor", "bool", True)]
        if exact:
            choices += [("torch.eq", "bool", True), ("torch.lt", "bool", True),
                        ("torch.ge", "bool", True), ("torch.ne", "bool", True)]
        op, odt, ex = r.choice(choices)
        if op in ("torch.floor_divide", "torch.remainder") and dt in INT:
            # An integer divisor of zero is an error (or undefined): keep it away from zero.
            text = f"{op}({a.name}, {b.name}.to(torch.{dt}).abs() + 1)"
        elif op == "torch.pow" and dt in FLOAT:
            text = f"{op}({a.name}.to(torch.{dt}).abs(), {b.name})"
        elif op == "torch.fmod":
            text = f"{op}({a.name}, {b.name})"
        else:
            text = f"{op}({a.name}, {b.name})"
        out = V(self.fresh(), shape, odt, ex and exact, owned=True)
        return self.emit(op, f"{out.name} = {text}", [a, b], [out])

    def scalar_binary(self):
        r = self.rng
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return False
        s = r.choice(["2", "-3", "0.5", "1e-3", "float('inf')", "-0.0"])
        op = r.choice(["+", "*", "-", "/"])
        # A float literal ("1e-3" too) or a true division makes an integer tensor's result float32.
        odt = "float32" if (op == "/" or s not in ("2", "-3")) and a.dtype in INT else a.dtype
        out = V(self.fresh(), a.shape, odt, False, owned=True)
        return self.emit(f"scalar{op}", f"{out.name} = {a.name} {op} {s}", [a], [out])

    def where(self):
        c = self.pick(lambda v: v.dtype == "bool")
        a = self.pick(lambda v: broadcast(v.shape, c.shape) is not None) if c else None
        if c is None or a is None:
            return False
        b = self.pick(lambda v: broadcast(broadcast(v.shape, c.shape) or (), a.shape)
                      is not None and broadcast(v.shape, c.shape) is not None)
        shape = broadcast(broadcast(a.shape, c.shape), b.shape)
        out = V(self.fresh(), shape, promote(a.dtype, b.dtype), a.exact and b.exact, owned=True)
        return self.emit("torch.where", f"{out.name} = torch.where({c.name}, {a.name}, {b.name})",
                         [c, a, b], [out])

    def reduction(self):
        r = self.rng
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        d = r.randrange(len(x.shape))
        keep = r.random() < 0.4
        shape = list(x.shape)
        if keep:
            shape[d] = 1
        else:
            del shape[d]
        ops = []
        if x.dtype != "bool":
            ops += [("sum", x.dtype if x.dtype in FLOAT else "int64", False)]
        if x.is_float:
            ops += [("mean", x.dtype, False)]
            if x.shape[d] > 1:
                ops += [("var", x.dtype, False), ("std", x.dtype, False)]
        if x.shape[d] > 0 and x.dtype != "bool":
            ops += [("amax", x.dtype, True), ("amin", x.dtype, True)]
            if x.exact:
                ops += [("argmax", "int64", True), ("argmin", "int64", True)]
        if x.dtype == "bool" or x.exact:
            ops += [("any", "bool", True), ("all", "bool", True)]
        if x.is_float and x.shape[d] > 0:
            ops += [("logsumexp", x.dtype, False)]
        if not ops:
            return False
        op, odt, ex = r.choice(ops)
        kw = "keepdim=True" if keep else "keepdim=False"
        out = V(self.fresh(), shape, odt, ex and x.exact, owned=True)
        return self.emit(f"torch.{op}", f"{out.name} = torch.{op}({x.name}, dim={d}, {kw})",
                         [x], [out])

    def softmax(self):
        x = self.pick(lambda v: v.dtype == "float32" and len(v.shape) >= 1)
        if x is None:
            return False
        d = self.rng.randrange(len(x.shape))
        op = self.rng.choice(["softmax", "log_softmax", "cumsum"])
        out = V(self.fresh(), x.shape, x.dtype, False, owned=True)
        return self.emit(f"torch.{op}", f"{out.name} = torch.{op}({x.name}, dim={d})", [x], [out])

    def matmul(self):
        r = self.rng
        a = self.pick(lambda v: v.dtype == "float32" and 2 <= len(v.shape) <= 3)
        if a is None:
            return False
        k = a.shape[-1]
        if r.random() < 0.5:
            n = r.randint(1, 6)
            w, params = self.weight((n, k))
            bias = r.random() < 0.6
            bw, bp = self.weight((n,)) if bias else ("None", [])
            out = V(self.fresh(), a.shape[:-1] + (n,), "float32", False, owned=True)
            return self.emit("F.linear", f"{out.name} = F.linear({a.name}, {w}, {bw})", [a],
                             [out], params + bp)
        n = r.randint(1, 6)
        cands = [v for v in self.pool if v.dtype == "float32" and len(v.shape) == 2
                 and v.shape[0] == k]
        b = r.choice(cands) if cands and r.random() < 0.5 else self.add_input((k, n), "float32")
        out = V(self.fresh(), a.shape[:-1] + (b.shape[1],), "float32", False, owned=True)
        return self.emit("torch.matmul", f"{out.name} = torch.matmul({a.name}, {b.name})",
                         [a, b], [out])

    def conv_input(self, rank):
        x = self.pick(lambda v: v.dtype == "float32" and len(v.shape) == rank
                      and all(s > 0 for s in v.shape[1:]))
        if x is None and self.rng.random() < 0.7:
            shape = (self.rng.randint(1, 2), self.rng.randint(1, 4)) + tuple(
                self.rng.randint(3, 8) for _ in range(rank - 2))
            x = self.add_input(shape, "float32")
        return x

    def conv(self):
        r = self.rng
        rank = r.choice([3, 4, 4])
        x = self.conv_input(rank)
        if x is None:
            return False
        cin = x.shape[1]
        groups = cin if cin > 1 and r.random() < 0.25 else 1
        cout = groups * r.randint(1, 3) if groups > 1 else r.randint(1, 6)
        ks = r.randint(1, 3)
        pad = r.randint(0, 1)
        stride = r.randint(1, 2)
        dil = 1 if r.random() < 0.8 else 2
        spatial = x.shape[2:]
        outsp = tuple((s + 2 * pad - dil * (ks - 1) - 1) // stride + 1 for s in spatial)
        if any(o <= 0 for o in outsp):
            return False
        nd = rank - 2
        w, params = self.weight((cout, cin // groups) + (ks,) * nd)
        bw, bp = self.weight((cout,)) if r.random() < 0.7 else ("None", [])
        fn = f"F.conv{nd}d"
        out = V(self.fresh(), (x.shape[0], cout) + outsp, "float32", False, owned=True)
        return self.emit(fn, f"{out.name} = {fn}({x.name}, {w}, {bw}, stride={stride}, "
                         f"padding={pad}, dilation={dil}, groups={groups})", [x], [out],
                         params + bp)

    def pool2d(self):
        r = self.rng
        x = self.conv_input(4)
        if x is None:
            return False
        k = r.randint(1, 3)
        stride = r.randint(1, 2)
        pad = r.randint(0, k // 2)
        H, W = x.shape[2:]
        kind = r.choice(["max", "avg", "adaptive"])
        if kind == "adaptive":
            oh, ow = r.randint(1, H), r.randint(1, W)
            out = V(self.fresh(), x.shape[:2] + (oh, ow), "float32", False, owned=True)
            return self.emit("F.adaptive_avg_pool2d",
                             f"{out.name} = F.adaptive_avg_pool2d({x.name}, ({oh}, {ow}))",
                             [x], [out])
        ceil = r.random() < 0.2
        f = math.ceil if ceil else math.floor
        oh = f((H + 2 * pad - k) / stride) + 1
        ow = f((W + 2 * pad - k) / stride) + 1
        if ceil:  # the last window must start inside the input or left padding
            if (oh - 1) * stride >= H + pad:
                oh -= 1
            if (ow - 1) * stride >= W + pad:
                ow -= 1
        if oh <= 0 or ow <= 0:
            return False
        fn = f"F.{kind}_pool2d"
        out = V(self.fresh(), x.shape[:2] + (oh, ow), "float32", kind == "max" and x.exact,
                owned=True)
        return self.emit(fn, f"{out.name} = {fn}({x.name}, {k}, stride={stride}, padding={pad}, "
                         f"ceil_mode={ceil})", [x], [out])

    def norm(self):
        r = self.rng
        kind = r.choice(["layer", "batch", "group"])
        if kind == "layer":
            x = self.pick(lambda v: v.dtype == "float32" and len(v.shape) >= 1)
            if x is None:
                return False
            n = x.shape[-1]
            w, params = self.weight((n,))
            b, bp = self.weight((n,))
            out = V(self.fresh(), x.shape, "float32", False, owned=True)
            return self.emit("F.layer_norm", f"{out.name} = F.layer_norm({x.name}, ({n},), {w}, "
                             f"{b})", [x], [out], params + bp)
        x = self.pick(lambda v: v.dtype == "float32" and len(v.shape) in (2, 3, 4)
                      and v.shape[1] > 0)
        if x is None:
            return False
        c = x.shape[1]
        w, params = self.weight((c,))
        b, bp = self.weight((c,))
        out = V(self.fresh(), x.shape, "float32", False, owned=True)
        if kind == "batch":
            m, mp = self.weight((c,))
            var, vp = self.weight((c,))
            return self.emit("F.batch_norm", f"{out.name} = F.batch_norm({x.name}, {m}, "
                             f"{var}.abs() + 0.1, {w}, {b}, training=False)", [x], [out],
                             params + bp + mp + vp)
        groups = r.choice([g for g in (1, 2, 3) if c % g == 0])
        if 0 in x.shape or x.numel // (x.shape[0] * groups) < 2:
            return False  # eager needs two values or more in each group
        return self.emit("F.group_norm", f"{out.name} = F.group_norm({x.name}, {groups}, {w}, "
                         f"{b})", [x], [out], params + bp)

    def view(self):
        r = self.rng
        x = self.pick()
        if x is None:
            return False
        s = list(x.shape)
        opts = ["reshape", "flatten", "unsqueeze", "slice", "contiguous", "expand", "clone"]
        if len(s) >= 2:
            opts += ["permute", "transpose", "transpose"]
        if any(d == 1 for d in s):
            opts.append("squeeze")
        if len(s) >= 1 and any(d > 0 for d in s):
            opts += ["select", "narrow", "flip"]
        op = r.choice(opts)
        if op == "reshape":
            if x.numel == 0:
                shape = tuple(s[::-1])
            else:
                f = [d for d in range(1, x.numel + 1) if x.numel % d == 0]
                a = r.choice(f)
                shape = (a, -1) if r.random() < 0.5 else (x.numel // a, a)
                shape = tuple(shape)
            outshape = tuple(x.numel // a if d == -1 else d for d in shape) if x.numel else shape
            text = f"{x.name}.reshape({shape!r})"
        elif op == "flatten":
            outshape = (x.numel,)
            text = f"torch.flatten({x.name})"
        elif op == "unsqueeze":
            d = r.randint(0, len(s))
            outshape = tuple(s[:d] + [1] + s[d:])
            text = f"{x.name}.unsqueeze({d})"
        elif op == "squeeze":
            d = r.choice([i for i, v in enumerate(s) if v == 1])
            outshape = tuple(s[:d] + s[d + 1:])
            text = f"{x.name}.squeeze({d})"
        elif op == "permute":
            perm = list(range(len(s)))
            r.shuffle(perm)
            outshape = tuple(s[p] for p in perm)
            text = f"{x.name}.permute({perm!r})"
        elif op == "transpose":
            a, b = r.sample(range(len(s)), 2)
            t = list(s)
            t[a], t[b] = t[b], t[a]
            outshape = tuple(t)
            text = f"{x.name}.transpose({a}, {b})"
        elif op == "slice":
            if not s:
                return False
            d = r.randrange(len(s))
            n = s[d]
            start = r.randint(0, max(0, n - 1))
            stop = r.randint(start, n)
            step = r.choice([1, 1, 2])
            t = list(s)
            t[d] = len(range(start, stop, step))
            outshape = tuple(t)
            text = f"{x.name}[{':, ' * d}{start}:{stop}:{step}]"
        elif op == "select":
            d = r.choice([i for i, v in enumerate(s) if v > 0])
            i = r.randint(-s[d], s[d] - 1)
            outshape = tuple(s[:d] + s[d + 1:])
            text = f"{x.name}.select({d}, {i})"
        elif op == "narrow":
            d = r.choice([i for i, v in enumerate(s) if v > 0])
            start = r.randint(0, s[d] - 1)
            length = r.randint(0, s[d] - start)
            t = list(s)
            t[d] = length
            outshape = tuple(t)
            text = f"{x.name}.narrow({d}, {start}, {length})"
        elif op == "flip":
            d = r.randrange(len(s))
            outshape = tuple(s)
            text = f"torch.flip({x.name}, [{d}])"
        elif op == "expand":
            t = [r.randint(2, 3) if v == 1 and r.random() < 0.6 else v for v in s]
            if r.random() < 0.3:
                t = [2] + t
            outshape = tuple(t)
            text = f"{x.name}.expand({tuple(t)!r})"
        else:
            outshape = tuple(s)
            text = f"{x.name}.{op}()"
        owned = op in ("clone", "flip") or (op == "contiguous" and False)
        out = V(self.fresh(), outshape, x.dtype, x.exact, owned=owned)
        if op in ("reshape", "flatten", "contiguous"):
            out.maybe_views = x.maybe_views | x.views | {x.name}
        elif not owned:
            out.views, out.maybe_views = x.views | {x.name}, x.maybe_views
        return self.emit(op, f"{out.name} = {text}", [x], [out])

    def join(self):
        r = self.rng
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        d = r.randrange(len(x.shape))
        kind = r.choice(["cat", "stack", "chunk"])
        if kind == "chunk":
            if x.shape[d] < 2:
                return False
            n = r.randint(2, min(3, x.shape[d]))
            size = -(-x.shape[d] // n)
            parts = len(range(0, x.shape[d], size))
            outs = []
            for k in range(parts):
                t = list(x.shape)
                t[d] = min(size, x.shape[d] - k * size)
                outs.append(V(self.fresh(), t, x.dtype, x.exact))
            names = ", ".join(o.name for o in outs)
            return self.emit("torch.chunk", f"{names}{',' if len(outs) == 1 else ''} = "
                             f"torch.chunk({x.name}, {n}, dim={d})", [x], outs)
        if kind == "cat":
            def fits(v):
                return (len(v.shape) == len(x.shape) and v.dtype == x.dtype and all(
                    a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != d))
        else:
            def fits(v):
                return v.shape == x.shape and v.dtype == x.dtype
        y = self.pick(fits)
        if y is None:
            return False
        t = list(x.shape)
        if kind == "cat":
            t[d] += y.shape[d]
        else:
            t.insert(d, 2)
        out = V(self.fresh(), t, x.dtype, x.exact and y.exact, owned=True)
        return self.emit(f"torch.{kind}", f"{out.name} = torch.{kind}([{x.name}, {y.name}], "
                         f"dim={d})", [x, y], [out])

    def index(self):
        r = self.rng
        x = self.pick(lambda v: len(v.shape) >= 1 and any(s > 0 for s in v.shape))
        if x is None:
            return False
        d = r.choice([i for i, s in enumerate(x.shape) if s > 0])
        n = x.shape[d]
        kind = r.choice(["index_select", "gather", "getitem"])
        if kind == "gather":
            t = list(x.shape)
            t[d] = r.randint(1, 4)
            idx = self.add_index_input(t, n)
            out = V(self.fresh(), t, x.dtype, x.exact, owned=True)
            return self.emit("torch.gather", f"{out.name} = torch.gather({x.name}, {d}, "
                             f"{idx.name})", [x, idx], [out])
        k = r.randint(1, 5)
        idx = self.add_index_input((k,), n)
        t = list(x.shape)
        t[d] = k
        out = V(self.fresh(), t, x.dtype, x.exact, owned=True)
        if kind == "getitem":
            return self.emit("index", f"{out.name} = {x.name}[{':, ' * d}{idx.name}]",
                             [x, idx], [out])
        return self.emit("torch.index_select", f"{out.name} = torch.index_select({x.name}, {d}, "
                         f"{idx.name})", [x, idx], [out])

    def add_index_input(self, shape, n):
        # An int64 input in [0, n): in range for eager and for Ember (an out-of-range index is
        # the caller's error on both).
        name = f"x{len(self.prog.inputs)}"
        spec = InputSpec(name, tuple(shape), "int64", "index")
        g = torch.Generator().manual_seed(self.rng.randrange(1 << 30))
        spec.value = torch.randint(0, n, tuple(shape), generator=g)
        self.prog.inputs.append(spec)
        return V(name, shape, "int64", exact=True)  # not in the pool: indices stay indices

    def cast(self):
        r = self.rng
        x = self.pick()
        if x is None:
            return False
        targets = ["float32", "float16", "bfloat16"]
        if x.exact or not x.is_float:
            targets += ["int32", "int64", "bool"]
        dt = r.choice([t for t in targets if t != x.dtype] or ["float32"])
        # Float to integer of a NaN, an infinity or a value out of range is undefined in C++ and
        # differs between ATen's own kernels: clamp and clean first.
        src = x.name
        if x.is_float and dt in INT:
            src = f"torch.nan_to_num({x.name}).clamp(-1000, 1000)"
        # A cast rounds to nearest even on every flow: exact stays exact (bit for bit).
        out = V(self.fresh(), x.shape, dt, x.exact, owned=True)
        return self.emit("cast", f"{out.name} = {src}.to(torch.{dt})", [x], [out])

    def inplace(self):
        r = self.rng
        # Not a value a live reshape may or may not alias: eager's result would depend on the
        # layout (a flatten of a channels-last tensor copies, of a contiguous one views; seed
        # 431382), which PyTorch leaves open.
        maybe = {b for v in self.pool for b in v.maybe_views}
        x = self.pick(lambda v: v.owned and v.is_float and v.name not in maybe)
        if x is None:
            return False
        ops = ["relu_()", "mul_(2.0)", "add_(1)", "clamp_(-1.0, 1.0)", "neg_()", "sigmoid_()"]
        # The operand must not share memory with x (eager refuses an overlapping in-place op):
        # a value computed here or an input, never a view.
        y = self.pick(lambda v: v.name != x.name and (v.owned or v.name.startswith("x"))
                      and broadcast(v.shape, x.shape) == x.shape
                      and v.dtype in (x.dtype, "float32") and v.is_float)
        if y is not None:
            ops += [f"add_({y.name})", f"mul_({y.name})"]
        op = r.choice(ops)
        ins = [x] + ([y] if y is not None and y.name in op else [])
        # The old name is dead after an in-place write: later statements read the new one.
        self.pool = [v for v in self.pool if v.name != x.name]
        exact = x.exact and op in ("relu_()", "neg_()", "clamp_(-1.0, 1.0)")
        out = V(self.fresh(), x.shape, x.dtype, exact, owned=True)
        return self.emit(op.split("(")[0], f"{out.name} = {x.name}.{op}", ins, [out])

    def state(self):
        """A mutated buffer: self.buf += (a value broadcast to it); later statements may read it."""
        r = self.rng
        if self.prog.buffer is None:
            x = self.pick(lambda v: v.is_float and 1 <= len(v.shape) <= 3 and v.numel > 0)
            if x is None:
                return False
            self.prog.buffer = x.shape
            self.prog.calls = 2
        shape = self.prog.buffer
        x = self.pick(lambda v: v.is_float and broadcast(v.shape, shape) == shape)
        if x is None:
            return False
        op = r.choice(["add_", "copy_", "mul_"])
        src = x.name if op != "mul_" else f"torch.tanh({x.name})"
        self.emit(f"buf.{op}", f"self.buf.{op}({src})", [x], [], buffer=True)
        if r.random() < 0.5:
            out = V(self.fresh(), shape, "float32", False, owned=True)
            self.emit("buf.read", f"{out.name} = self.buf * 2", [], [out], buffer=True)
        return True

    def cond(self):
        """torch.cond on a data-dependent predicate; both branches keep shape and dtype."""
        x = self.pick(lambda v: v.dtype == "float32" and v.numel > 0)
        p = self.pick(lambda v: v.dtype == "float32" and v.numel > 0)
        if x is None or p is None:
            return False
        br = ["torch.relu(t) * 2", "t - 1", "torch.tanh(t)", "t.abs() + 0.5", "torch.exp(t)"]
        a, b = self.rng.sample(br, 2)
        out = V(self.fresh(), x.shape, "float32", False, owned=True)
        return self.emit("torch.cond", f"{out.name} = torch.cond({p.name}.sum() > 0, "
                         f"lambda t: {a}, lambda t: {b}, ({x.name},))", [p, x], [out])


FAMILIES = [("unary", 12), ("binary", 10), ("scalar_binary", 3), ("unary_pred", 2),
            ("where", 2), ("reduction", 6), ("softmax", 3), ("matmul", 4), ("conv", 4),
            ("pool2d", 3), ("norm", 3), ("view", 10), ("join", 3), ("index", 3), ("cast", 3),
            ("inplace", 4), ("state", 2), ("cond", 1)]


def generate(seed, max_ops=15):
    g = Gen(seed, max_ops)
    r = g.rng
    n_ops = r.randint(1, max_ops)
    # One or two float32 inputs to start from (sometimes another dtype).
    for _ in range(r.choice([1, 1, 2])):
        dtype = "float32" if r.random() < 0.8 else r.choice(DTYPES)
        g.add_input(g.shape(), dtype)
    names, weights = zip(*FAMILIES)
    tries = 0
    while len(g.prog.stmts) < n_ops and tries < 200:
        tries += 1
        fam = r.choices(names, weights=weights)[0]
        getattr(g, fam)()
    produced = [v for v in g.pool if not v.name.startswith("x")]
    if not produced:
        g.unary() or g.view()
        produced = [v for v in g.pool if not v.name.startswith("x")]
    used = {n for s in g.prog.stmts for n in s.ins}
    leaves = [v.name for v in produced if v.name not in used]
    outs = leaves[-3:] or [produced[-1].name]
    if produced[-1].name not in outs:
        outs.append(produced[-1].name)
    g.prog.outputs = outs
    return g.prog
