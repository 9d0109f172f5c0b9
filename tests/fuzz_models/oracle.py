"""The fuzzer's oracle (fuzz_models.py): eager PyTorch's result for a program, the float64
references that tell how much rounding may move it, and the comparison that decides whether
Ember's output agrees (see `compare` and docs/hardening.md, "Comparison").

Imported by fuzz_models.setup() once PyTorch is known to be present."""

import contextlib

import numpy as np
import torch

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
                    and out.dtype in (torch.float64, torch.float16, torch.bfloat16)
                    and out._base is None
                    and not name.endswith("_") and not name.startswith("__i")
                    and not any(out is a for a in args)):
                # (the mode is off inside its own handler: these ops are not seen again)
                if out.dtype == torch.float64:
                    out = _perturbed(out, self.perturb, torch.float32)
                else:
                    # A 16-bit value the program keeps: moved by half to one of its own ulps
                    # (twice _perturbed's move) and rounded, so it lands on a neighbour: a
                    # float16 logsumexp one ulp apart decides an fmod by it (seed 434185).
                    wide = out.double()
                    out = (wide + 2 * (_perturbed(out, self.perturb) - wide)).to(out.dtype)
            return out

    nan_to_num = {torch.nan_to_num, torch.Tensor.nan_to_num, torch.Tensor.nan_to_num_}
    return Mode


FLOAT32_MAX = 3.4028234663852886e38


def _make_other_kernels():
    """A TorchFunctionMode that computes what ATen's other kernels for the same op give, where
    eager picks among kernels that disagree on the sign of a zero by position or shape:

    - maximum and minimum (torch.max and torch.min of two tensors too) by ATen's scalar formula
      on every element: NaN if either operand is NaN, else std::max(a, b) (`a < b ? b : a`) or
      std::min(a, b) (`b < a ? b : a`), which keep the first of two equal operands. ATen's
      vectorized body (`_mm256_max_ps(a, b)` and its AVX-512 twin) gives the second of two equal
      zeros, so eager's maximum(-0.0, zeros(70)) is +0.0 in elements 0-63 and -0.0 in 64-69
      (`all_wrong_maximum_zero_sign.py`);
    - a matmul or linear over one element (K = 1) as the product itself: ATen's GEMM gives
      0 * -0.5 = -0.0 (an mm of 3x1 by 1x4), its matrix-vector and small-bmm kernels add the
      product to +0.0 (an mm of 4x1 by 1x1, a bmm of 1x3x1 by 1x1x4: +0.0), and a later
      division tells them apart (`all_wrong_matmul_div.py`).

    Ember keeps one rule everywhere for each (the first operand; the product, as ExecuTorch's
    portable kernels do); other_kernels_differ() checks each rule against ATen's own kernel."""
    from torch.overrides import TorchFunctionMode

    largest = {torch.maximum, torch.Tensor.maximum, torch.max, torch.Tensor.max}
    smallest = {torch.minimum, torch.Tensor.minimum, torch.min, torch.Tensor.min}
    products = {torch.matmul, torch.Tensor.matmul, torch.mm, torch.Tensor.mm, torch.bmm,
                torch.Tensor.bmm}
    linear = torch.nn.functional.linear

    def tensors(args, kwargs, n):
        return (len(args) == n and not kwargs
                and all(isinstance(a, torch.Tensor) for a in args))

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if (func in largest or func in smallest) and tensors(args, kwargs, 2):
                dtype = torch.result_type(args[0], args[1])
                a, b = torch.broadcast_tensors(args[0].to(dtype), args[1].to(dtype))
                out = torch.where((a < b) if func in largest else (b < a), b, a)
                if dtype.is_floating_point:
                    out = torch.where(a.isnan() | b.isnan(), float("nan"), out)
                return out.contiguous()
            if (func in products and tensors(args, kwargs, 2) and args[0].dim() >= 2
                    and args[1].dim() >= 2 and args[0].shape[-1] == 1):
                return (args[0] * args[1]).contiguous()  # (..., m, 1) * (..., 1, n)
            if (func is linear and len(args) >= 2 and isinstance(args[0], torch.Tensor)
                    and args[0].dim() >= 1 and args[0].shape[-1] == 1 and not kwargs):
                out = args[0] * args[1].reshape(1, -1) if args[1].dim() == 2 else None
                bias = args[2] if len(args) > 2 else None
                if out is not None:
                    return (out if bias is None else out + bias).contiguous()
            return func(*args, **kwargs)

    return Mode


def other_kernels_differ():
    """None when OtherKernels gives what ATen's own kernels give, element for element and sign
    for sign, else what differs. ATen is the reference here, not the mode: maximum and minimum
    against ATen's scalar path (strided operands, which its vectorized loop does not take), on
    equal zeros of both orders, NaN and numbers; a matmul over one element against ATen's GEMM
    (an mm of 3x1 by 1x4, whose zero products keep their signs there)."""
    def differ(aten, mode):
        same = ((aten == mode) & (aten.signbit() == mode.signbit())) | (aten.isnan() & mode.isnan())
        if bool(same.all()):
            return None
        i = tuple(int(j) for j in (~same).nonzero()[0])
        return f"at {list(i)}: ATen {aten[i].item()!r}, mode {mode[i].item()!r}"

    a = torch.tensor([-0.0, 0.0, -0.0, 0.0, float("nan"), 1.0, -2.0, 0.0] * 8)
    b = torch.tensor([0.0, -0.0, -0.0, 0.0, 1.0, float("nan"), 3.0, -1.0] * 8)
    strided = (torch.stack([a, a], 1)[:, 0], torch.stack([b, b], 1)[:, 0])
    assert not strided[0].is_contiguous()
    for name in ("maximum", "minimum"):
        with OtherKernels():
            mode = getattr(torch, name)(a, b)
        why = differ(getattr(torch, name)(*strided), mode)
        if why:
            return f"{name} {why}"
    x = torch.tensor([[0.0], [-0.0], [0.5]])
    w = torch.tensor([[-0.5, 2.0, -0.0, 0.0]])
    with OtherKernels():
        mode = torch.matmul(x, w)
    why = differ(torch.mm(x, w), mode)
    return f"matmul over one element {why}" if why else None


def run_eager(M, inputs, calls, double=False, perturb=None, all_floats=False, other_path=False):
    """The outputs of `calls` executions in a row of a fresh M (state carries over).

    other_path: ATen's other CPU path, whose results are PyTorch's too. ATen hands some float32
    ops of contiguous tensors of more than one element to oneDNN (gelu: +0.0 below -5.5, where
    its own formula, which a one-element or strided tensor gets, gives -0.0): here
    torch.backends.mkldnn is off. And ATen picks among kernels that disagree on the sign of a
    zero by position or shape (maximum of equal zeros, a matmul over one element): here
    OtherKernels computes those ops the other way.
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
                (OtherKernels() if other_path else contextlib.nullcontext()), \
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


TOL = {"float32": (1e-3, 1e-4), "float64": (1e-3, 1e-4), "float16": (1e-2, 1e-3),
       "bfloat16": (4e-2, 1e-2)}


def compare(expected, reference, got, perturbed=None, exact=None, alternative=None):
    """None when `got` (a NumPy array) agrees with eager's `expected`, else the reason.

    Integers and bools must be equal; floats within a tolerance for their dtype, widened by three
    estimates of how much rounding moves the result: eager's distance to the float64 reference
    (the roundings inside the computation), the reference's largest distance to itself run on
    inputs and intermediate values moved by one rounding each (`perturbed`, a list of such runs:
    the output's condition), and eager's distance to the program in exact arithmetic (`exact`:
    float16 and bfloat16 values unrounded too, for a float32 output computed from them). NaN and
    infinities must be at the same places, but where eager alone gives NaN and exact arithmetic a
    value. Elements where eager and the reference, or the reference and a perturbed reference,
    disagree on being NaN, infinite or (integers) their value or the sign of an infinity, and
    float elements that a perturbation alone moves by more than the tolerance, are
    ill-conditioned (a summation order or one rounding decides them: any float32 evaluation may
    give either): not compared. Also accepted: where eager is infinite and exact arithmetic
    finite (an overflow inside eager's kernel), the exact value, and an exact value's overflow
    to the same infinity; eager's `alternative` result (ATen's other kernels, run_eager's
    other_path), within the same tolerance; and a result within the plain tolerance of the
    float64 reference (more accurate than eager).
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

    perturbed = perturbed if isinstance(perturbed, (list, tuple)) else [perturbed]
    refs = [x for x in [as_double(reference)] + [as_double(p) for p in perturbed]
            if x is not None]
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
        widest = np.zeros(e.shape)  # the perturbed references' largest distance to the reference
        for k, r in enumerate(refs):
            # The reference against eager; each perturbed reference against the reference.
            last = e64 if k == 0 else refs[0]
            mask &= (np.isnan(r) == np.isnan(last)) & (np.isinf(r) == np.isinf(last))
            # Infinities of opposite signs: a cancellation decided the sign of what overflowed.
            mask &= ~(np.isinf(r) & np.isinf(last) & (np.sign(r) != np.sign(last)))
            with np.errstate(invalid="ignore", over="ignore"):
                noise = np.abs(last - r)
                noise = np.where(np.isfinite(noise), noise, 0)
            if k >= 1:
                # One rounding at each input moved the reference by more than the tolerance:
                # the element's condition is beyond what a tolerance can bound (sin of 3e38,
                # whose float32 neighbours have any sine), and one random move of that size may
                # even happen to land close. Any float32 evaluation may give any such value.
                # (Not where eager is NaN or inf: there base is NaN or inf, and this keeps it.)
                mask &= ~(noise > base)
                widest = np.maximum(widest, noise)
            else:
                tol = tol + 8 * noise
        tol = tol + 8 * widest
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
                # An exact value beyond the dtype's range rounds to that infinity: where eager
                # took another way (a branch on a layer norm that overflowed inside eager's
                # kernel, `all_wrong_layer_norm_cond.py`), that infinity is right too.
                rounded = x.astype(e.dtype)
                exact_close |= np.isfinite(x) & np.isinf(rounded) & (g64 == rounded)
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
        if refs:
            # Within the plain tolerance of the float64 reference (float32 computed exactly,
            # the program's 16-bit casts kept): more accurate than eager, not wrong. Where eager's
            # float32 sum of [-3e38, ..., 3e38] lost the small values and a torch.cond on its
            # sign took the other branch (seed 433884), Ember's exact sum took the reference's.
            r = refs[0]
            with np.errstate(invalid="ignore", over="ignore"):
                near = (np.abs(g64 - r) <= atol + rtol * np.abs(r)) | (g64 == r)
            close |= np.where(np.isinf(r), g64 == r, near) | (np.isnan(g64) & np.isnan(r))
        bad = mask & ~close
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {e.size} elements differ; at {list(idx)}: got {got[idx]!r}, "
            f"eager {e[idx]!r}")


Float32AsFloat64 = _make_float32_as_float64()
OtherKernels = _make_other_kernels()
