"""Ember's portable quantized kernels (quantized_decomposed::*) against PyTorch's own reference
implementations (torch/ao/quantization/fx/_decomposed.py; the quantized embeddings' from
ExecuTorch's exir), compared byte for byte: random inputs from fixed seeds plus the edge cases
(round-half-to-even ties, values beyond the range, NaN and infinities, float16 and bfloat16), and
the kernels' errors for bad arguments."""

import itertools
import unittest

import torch

import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed ops)
from ember.runtime import EmberRuntimeError, call_kernel

try:  # ExecuTorch's Python package defines the quantized embeddings' references.
    import executorch.exir.passes._quant_patterns_and_replacements  # noqa: F401

    HAVE_EMBEDDING_REFERENCE = True
except Exception:  # pragma: no cover - depends on the environment
    HAVE_EMBEDDING_REFERENCE = False

qd = torch.ops.quantized_decomposed
NS = "quantized_decomposed::"

# c10 ScalarType codes, as ScalarType arguments are passed.
CODE = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
        torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11,
        torch.bfloat16: 15}
QDTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32]
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
        torch.float64: torch.int64}


def bits(t):
    """The tensor's bytes as integers, so NaN payloads and -0.0 compare exactly."""
    return t.view(BITS[t.dtype]) if t.dtype in BITS else t


def awkward_floats(n, seed, magnitude):
    """Random values over several magnitudes, then the values that break sloppy kernels."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * magnitude
    x[: n // 4] *= 1000  # far beyond the quantized range
    special = torch.tensor([0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e-40, -1e-40,
                            3e38, -3e38, 2.5, -2.5, 0.5, -0.5, 1.5, 127.5, -128.5, 255.5])
    return torch.cat([x, special])


class KernelTest(unittest.TestCase):
    def assertSameBits(self, ours, ref, what=""):
        self.assertEqual(ours.dtype, ref.dtype, what)
        self.assertEqual(tuple(ours.shape), tuple(ref.shape), what)
        if ref.dtype == torch.bfloat16:
            # ATen's own bfloat16 NaN depends on its code path (0xFFFF vectorized, 0x7FC0
            # scalar: a 2-element float64 tensor and a 16-element one convert NaN differently),
            # so for bfloat16 NaN only NaN-ness is compared; every other value bit for bit.
            nan = ref.isnan()
            self.assertTrue(torch.equal(ours.isnan(), nan), what + ": NaN positions differ")
            ours, ref = ours.masked_fill(nan, 0), ref.masked_fill(nan, 0)
        if not torch.equal(bits(ours), bits(ref)):
            o, r = bits(ours).flatten(), bits(ref).flatten()
            i = int((o != r).nonzero()[0])
            got, want = ours.flatten()[i].item(), ref.flatten()[i].item()
            self.fail(f"{what}: {int((o != r).sum())} of {o.numel()} elements differ, first at "
                      f"{i}: ours {got!r} reference {want!r}")


class QuantizePerTensorTest(KernelTest):
    def run_case(self, x, scale, zp, qmin, qmax, dtype):
        ref = qd.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype)
        out = torch.empty(x.shape, dtype=dtype)
        call_kernel(NS + "quantize_per_tensor.out", x, scale, zp, qmin, qmax, CODE[dtype], out,
                    out)
        what = f"quantize_per_tensor {x.dtype} scale={scale!r} zp={zp} [{qmin},{qmax}] {dtype}"
        self.assertSameBits(out, ref, what)
        # The .Tensor overload with float64 / int64 and float32 / int32 parameter tensors.
        for sd, zd in [(torch.float64, torch.int64), (torch.float32, torch.int32)]:
            s, z = torch.tensor([scale], dtype=sd), torch.tensor([zp], dtype=zd)
            ref_t = qd.quantize_per_tensor.tensor(x, s, z, qmin, qmax, dtype)
            out_t = torch.empty(x.shape, dtype=dtype)
            call_kernel(NS + "quantize_per_tensor.Tensor_out", x, s, z, qmin, qmax, CODE[dtype],
                        out_t, out_t)
            self.assertSameBits(out_t, ref_t, what + f" .Tensor {sd} {zd}")

    def test_random_and_edges(self):
        scales = [0.1, 1 / 3, 0.25, 0.0123456789, 1.7e-5, 3.0, 1e-45]
        for i, (dtype, in_dtype) in enumerate(
                itertools.product(QDTYPES, [torch.float32, torch.float16, torch.bfloat16])):
            info = torch.iinfo(dtype)
            x = awkward_floats(300, seed=i, magnitude=20.0).to(in_dtype)
            for j, scale in enumerate(scales):
                zp = [0, 3, -7, 100][j % 4] if dtype != torch.uint8 else [0, 128, 3, 255][j % 4]
                self.run_case(x, scale, zp, info.min, info.max, dtype)
            # A narrower quant range than the dtype's (4-bit in int8, symmetric int8).
            self.run_case(x, 0.05, 0, max(info.min, -8), min(info.max, 7), dtype)
            self.run_case(x, 0.05, 1, max(info.min, -127), min(info.max, 127), dtype)

    def test_ties_round_half_to_even(self):
        # x / scale lands exactly on .5 with a power-of-two scale: half to even, then + zp.
        k = torch.arange(-300, 300, dtype=torch.float32)
        x = (k + 0.5) * 0.25
        for dtype in QDTYPES:
            info = torch.iinfo(dtype)
            self.run_case(x, 0.25, 5 if dtype != torch.uint8 else 128, info.min, info.max, dtype)

    def test_shapes(self):
        for shape in [(), (0,), (1,), (2, 3, 4), (1, 3, 8, 8)]:
            x = torch.randn(shape, generator=torch.Generator().manual_seed(7))
            self.run_case(x, 0.02, -3, -128, 127, torch.int8)

    def test_nan_scale_and_huge_zero_point(self):
        x = awkward_floats(64, seed=3, magnitude=2.0)
        self.run_case(x, float("nan"), 0, -128, 127, torch.int8)
        self.run_case(x, float("inf"), 0, -128, 127, torch.int8)
        self.run_case(x, 0.5, 2**31 - 1, -(2**31), 2**31 - 1, torch.int32)


class DequantizePerTensorTest(KernelTest):
    def run_case(self, q, scale, zp, dtype, out_dtype):
        info = torch.iinfo(dtype)
        ref = qd.dequantize_per_tensor(q, scale, zp, info.min, info.max, dtype,
                                       out_dtype=out_dtype)
        out = torch.empty(q.shape, dtype=out_dtype or torch.float32)
        code = None if out_dtype is None else CODE[out_dtype]
        call_kernel(NS + "dequantize_per_tensor.out", q, scale, zp, info.min, info.max,
                    CODE[dtype], code, out, out)
        what = f"dequantize_per_tensor {dtype} scale={scale!r} zp={zp} -> {out_dtype}"
        self.assertSameBits(out, ref, what)
        s, z = torch.tensor([scale], dtype=torch.float64), torch.tensor([zp])
        ref_t = qd.dequantize_per_tensor.tensor(q, s, z, info.min, info.max, dtype,
                                                out_dtype=out_dtype)
        out_t = torch.empty(q.shape, dtype=out_dtype or torch.float32)
        call_kernel(NS + "dequantize_per_tensor.Tensor_out", q, s, z, info.min, info.max,
                    CODE[dtype], code, out_t, out_t)
        self.assertSameBits(out_t, ref_t, what + " .Tensor")

    def test_random(self):
        g = torch.Generator().manual_seed(11)
        out_dtypes = [None, torch.float32, torch.float16, torch.bfloat16, torch.float64]
        for dtype, out_dtype in itertools.product(QDTYPES, out_dtypes):
            info = torch.iinfo(dtype)
            q = torch.randint(info.min, info.max, (500,), generator=g, dtype=torch.int64)
            q = torch.cat([q, torch.tensor([info.min, info.max, 0])]).to(dtype)
            for scale, zp in [(0.1, 0), (0.0123456789, 3), (1 / 3, -100), (2.5e-7, 2049),
                              (65519.0, 1), (1e-30, 0)]:
                if dtype == torch.uint8:
                    zp = abs(zp) % 256
                self.run_case(q, scale, zp, dtype, out_dtype)


class PerChannelTest(KernelTest):
    def test_quantize(self):
        g = torch.Generator().manual_seed(5)
        shape = (4, 3, 5, 6)
        cases = itertools.product([0, 1, 3, -1, -3], [torch.float32, torch.float64],
                                  [torch.int64, torch.int32], QDTYPES,
                                  [torch.float32, torch.float16, torch.bfloat16])
        for axis, sd, zd, dtype, in_dtype in cases:
            info = torch.iinfo(dtype)
            x = awkward_floats(4 * 3 * 5 * 6 - 17, seed=axis + 10, magnitude=5.0)
            x = x.to(in_dtype).reshape(shape)
            c = shape[axis]
            scales = (torch.rand(c, generator=g, dtype=torch.float64) * 0.2 + 1e-3).to(sd)
            scales[0] = 0.25  # ties
            zps = torch.randint(max(info.min, -50), min(info.max, 50) + 1, (c,), generator=g)
            zps = zps.to(zd)
            ref = qd.quantize_per_channel(x, scales, zps, axis, info.min, info.max, dtype)
            out = torch.empty(shape, dtype=dtype)
            call_kernel(NS + "quantize_per_channel.out", x, scales, zps, axis, info.min, info.max,
                        CODE[dtype], out, out)
            self.assertSameBits(out, ref, f"quantize_per_channel axis={axis} {sd} {zd} {dtype} "
                                          f"{in_dtype}")

    def test_dequantize(self):
        g = torch.Generator().manual_seed(6)
        shape = (3, 4, 7)
        out_dtypes = [None, torch.float32, torch.float16, torch.bfloat16, torch.float64]
        cases = itertools.product([0, 1, 2, -1], [torch.float32, torch.float64],
                                  [None, torch.int64, torch.int32], QDTYPES, out_dtypes)
        for axis, sd, zd, dtype, out_dtype in cases:
            info = torch.iinfo(dtype)
            q = torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)
            c = shape[axis]
            scales = (torch.rand(c, generator=g, dtype=torch.float64) * 0.3 + 1e-6).to(sd)
            zps = None
            if zd is not None:
                zps = torch.randint(-60, 60, (c,), generator=g).to(zd)
            ref = qd.dequantize_per_channel(q, scales, zps, axis, info.min, info.max, dtype,
                                            out_dtype=out_dtype)
            out = torch.empty(shape, dtype=out_dtype or torch.float32)
            code = None if out_dtype is None else CODE[out_dtype]
            call_kernel(NS + "dequantize_per_channel.out", q, scales, zps, axis, info.min,
                        info.max, CODE[dtype], code, out, out)
            self.assertSameBits(out, ref, f"dequantize_per_channel axis={axis} {sd} {zd} {dtype} "
                                          f"-> {out_dtype}")


class PerChannelGroupTest(KernelTest):
    def run_case(self, q, scales, zps, group_size, out_dtype, what):
        info = torch.iinfo(q.dtype)
        ref = qd.dequantize_per_channel_group(q, scales, zps, info.min, info.max, q.dtype,
                                              group_size, out_dtype)
        out = torch.empty(q.shape, dtype=out_dtype)
        call_kernel(NS + "dequantize_per_channel_group.out", q, scales, zps, info.min, info.max,
                    CODE[q.dtype], group_size, CODE[out_dtype], out, out)
        self.assertSameBits(out, ref, f"dequantize_per_channel_group {what} {q.dtype} "
                                      f"group_size={group_size} -> {out_dtype}")

    def test_dequantize(self):
        g = torch.Generator().manual_seed(14)
        rows, k = 3, 64
        out_dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
        zp_dtypes = [None, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
        # (group_size, scales' shape): the last one is larger than a row with one scale a row,
        # which the reference shrinks to the row.
        groupings = [(2, (rows * k // 2,)), (32, (rows, 2)), (k, (rows,)), (5 * k, (rows, 1))]
        cases = itertools.product(QDTYPES, zp_dtypes, [torch.float32, torch.float64], out_dtypes,
                                  groupings)
        for dtype, zd, sd, out_dtype, (group_size, scale_shape) in cases:
            info = torch.iinfo(dtype)
            q = torch.randint(info.min, info.max + 1, (rows, k), generator=g, dtype=torch.int64)
            q.view(-1)[:2] = torch.tensor([info.min, info.max])
            q = q.to(dtype)
            scales = torch.rand(scale_shape, generator=g, dtype=torch.float64) * 0.3 + 1e-6
            scales.view(-1)[0] = 1 / 3  # rounds differently in float32 and float64
            scales = scales.to(sd)
            zps = None
            if zd is not None:
                # Over the zero points' whole range: the subtraction wraps where the promoted
                # dtype is the input's (int8 - int8, uint8 - uint8, int32 - int32).
                zinfo = torch.iinfo(zd)
                lo, hi = max(zinfo.min, -(2**40)), min(zinfo.max, 2**40)
                zps = torch.randint(lo, hi + 1, scale_shape, generator=g, dtype=torch.int64)
                zps.view(-1)[0] = lo
                zps = zps.to(zd)
            self.run_case(q, scales, zps, group_size, out_dtype, f"zp {zd} scales {sd}")

    def test_wraps_in_int8(self):
        # int8 - int8 stays int8 in ATen: -128 - 100 wraps to 28, 100 - (-100) to -56.
        q = torch.tensor([[-128, 5, 100, -5]], dtype=torch.int8)
        scales = torch.tensor([0.5, 0.25])
        zps = torch.tensor([100, -100], dtype=torch.int8)
        ref = qd.dequantize_per_channel_group(q, scales, zps, -128, 127, torch.int8, 2,
                                              torch.float32)
        self.assertEqual(ref.tolist(), [[14.0, -47.5, -14.0, 23.75]])
        self.run_case(q, scales, zps, 2, torch.float32, "int8 wrap")
        # The same zero points as int32 widen the subtraction: no wrap.
        self.run_case(q, scales, zps.int(), 2, torch.float32, "int32 zero points")

    def test_layouts(self):
        g = torch.Generator().manual_seed(15)
        q = torch.randint(-128, 128, (8, 6), generator=g, dtype=torch.int64).to(torch.int8)
        zps = torch.randint(-20, 20, (8,), generator=g, dtype=torch.int64).to(torch.int8)
        # A transposed (non-contiguous) input, as the reference's reshape copies it.
        self.run_case(q.t(), torch.rand(6 * 8 // 4, generator=g), None, 4, torch.float32,
                      "transposed")
        # One scale and one zero point for every group (broadcast).
        self.run_case(q, torch.tensor([0.125]), torch.tensor([3], dtype=torch.int8), 3,
                      torch.float32, "one scale")
        # Empty inputs.
        self.run_case(q[:0], torch.ones(0), torch.zeros(0, dtype=torch.int32), 3, torch.float32,
                      "no rows")
        self.run_case(q[:, :0], torch.ones(0), None, 2, torch.float64, "empty rows")


class ChooseQparamsTest(KernelTest):
    def run_case(self, x, qmin, qmax, eps, dtype):
        ref_s, ref_z = qd.choose_qparams.tensor(x, qmin, qmax, eps, dtype)
        s = torch.empty(1, dtype=torch.float64)
        z = torch.empty(1, dtype=torch.int64)
        call_kernel(NS + "choose_qparams.Tensor_out", x, qmin, qmax, eps, CODE[dtype], s, z,
                    [s, z])
        what = f"choose_qparams {x.dtype} [{qmin},{qmax}] eps={eps} {x.flatten()[:4].tolist()}"
        self.assertSameBits(s, ref_s, what + " scale")
        self.assertSameBits(z, ref_z, what + " zero_point")

    def test_random_and_edges(self):
        g = torch.Generator().manual_seed(8)
        eps = torch.finfo(torch.float32).eps
        inputs = [torch.randn(50, generator=g) * 3, torch.rand(50, generator=g) + 0.5,
                  -torch.rand(50, generator=g) - 0.1, torch.zeros(8), torch.full((3,), 1e-9),
                  torch.tensor([-1.0, 1.0]), torch.randn(4, 5, generator=g) * 1e4,
                  torch.tensor([float("inf"), 1.0]), torch.tensor([-float("inf"), 1.0]),
                  torch.tensor([float("nan"), 1.0])]
        for x, in_dtype in itertools.product(inputs, [torch.float32, torch.float16,
                                                      torch.bfloat16]):
            for qmin, qmax, dtype in [(-128, 127, torch.int8), (0, 255, torch.uint8),
                                      (-8, 7, torch.int8), (-32768, 32767, torch.int16),
                                      (-(2**31), 2**31 - 1, torch.int32)]:
                for e in [eps, 1e-5, 0.0]:
                    self.run_case(x.to(in_dtype), qmin, qmax, e, dtype)


class PerTokenTest(KernelTest):
    def inputs(self):
        g = torch.Generator().manual_seed(9)
        x = torch.randn(3, 5, 16, generator=g) * 4
        x[0, 0] = 0
        x[0, 1] = 2.5  # all positive
        x[0, 2] = -torch.rand(16, generator=g)  # all negative
        x[1, 0, 3] = 1e6
        x[2, 1, 4] = float("nan")
        x[2, 2, 5] = float("inf")
        return [x, torch.randn(7, 33, generator=g), torch.randn(1, 1, generator=g),
                torch.randn(0, 4, generator=g)]

    def test_choose_qparams_per_token_asymmetric(self):
        for x, in_dtype in itertools.product(self.inputs(), [torch.float32, torch.float16,
                                                             torch.bfloat16]):
            x = x.to(in_dtype)
            ref_s, ref_z = qd.choose_qparams_per_token_asymmetric(x, torch.int8)
            s = torch.empty(ref_s.shape, dtype=torch.float64)
            z = torch.empty(ref_z.shape, dtype=torch.int64)
            call_kernel(NS + "choose_qparams_per_token_asymmetric.out", x, CODE[torch.int8], s, z,
                        [s, z])
            self.assertSameBits(s, ref_s, f"per-token scales {x.shape} {in_dtype}")
            self.assertSameBits(z, ref_z, f"per-token zero points {x.shape} {in_dtype}")

    def test_quantize_and_dequantize_per_token(self):
        cases = itertools.product(self.inputs(), [torch.float32, torch.float16, torch.bfloat16],
                                  [torch.float64, torch.float32])
        for x, in_dtype, sd in cases:
            x = x.to(in_dtype)
            scales, zps = qd.choose_qparams_per_token_asymmetric(x.float(), torch.int8)
            scales = scales.to(sd)
            if x.numel():
                x.view(-1)[0] = 0.5 * scales.view(-1)[0].item()  # a tie, if representable
            ref = qd.quantize_per_token(x, scales, zps, -128, 127, torch.int8)
            out = torch.empty(x.shape, dtype=torch.int8)
            call_kernel(NS + "quantize_per_token.out", x, scales, zps, -128, 127,
                        CODE[torch.int8], out, out)
            self.assertSameBits(out, ref, f"quantize_per_token {x.shape} {in_dtype} {sd}")
            for out_dtype in [torch.float32, torch.float16, torch.bfloat16, torch.float64]:
                ref_d = qd.dequantize_per_token(ref, scales, zps, -128, 127, torch.int8, out_dtype)
                out_d = torch.empty(x.shape, dtype=out_dtype)
                call_kernel(NS + "dequantize_per_token.out", ref, scales, zps, -128, 127,
                            CODE[torch.int8], CODE[out_dtype], out_d, out_d)
                self.assertSameBits(out_d, ref_d, f"dequantize_per_token {x.shape} {sd} -> "
                                                  f"{out_dtype}")
        # Awkward values and int32 zero points in uint8.
        x = awkward_floats(61, seed=12, magnitude=3.0).reshape(2, 39)
        scales = torch.tensor([[0.02], [0.25]], dtype=torch.float64)
        zps = torch.tensor([[128], [3]], dtype=torch.int32)
        ref = qd.quantize_per_token(x, scales, zps, 0, 255, torch.uint8)
        out = torch.empty(x.shape, dtype=torch.uint8)
        call_kernel(NS + "quantize_per_token.out", x, scales, zps, 0, 255, CODE[torch.uint8], out,
                    out)
        self.assertSameBits(out, ref, "quantize_per_token awkward values")


@unittest.skipUnless(HAVE_EMBEDDING_REFERENCE, "needs executorch's Python package")
class QuantizedEmbeddingTest(KernelTest):
    def test_embeddings(self):
        g = torch.Generator().manual_seed(13)
        ops = [("embedding_byte", 1, -128, 127), ("embedding_4bit", 2, -8, 7),
               ("embedding_2bit", 4, -2, 1)]
        cases = itertools.product(ops, [torch.uint8, torch.int8],
                                  [torch.float32, torch.float16, torch.bfloat16], [1, 2, 4],
                                  [False, True], [torch.int64, torch.int32])
        for (name, per_byte, qmin, qmax), w_dtype, sd, groups, with_zp, idx_dtype in cases:
            rows, dim = 6, 16
            info = torch.iinfo(w_dtype)
            w = torch.randint(info.min, info.max + 1, (rows, dim // per_byte), generator=g,
                              dtype=torch.int64).to(w_dtype)
            scale_shape = (rows,) if groups == 1 else (rows, groups)
            scales = (torch.rand(scale_shape, generator=g) * 0.1 + 0.001).to(sd)
            zps = None
            if with_zp:
                zps = torch.randint(-4, 4, scale_shape, generator=g).to(sd)
            indices = torch.tensor([[0, 5, 2], [2, 2, 1]], dtype=idx_dtype)
            what = f"{name} {w_dtype} {sd} groups={groups} zp={with_zp} {idx_dtype}"
            op = getattr(qd, name)
            ref = op(w, scales, zps, qmin, qmax, indices)
            out = torch.empty(ref.shape, dtype=ref.dtype)
            call_kernel(NS + name + ".out", w, scales, zps, qmin, qmax, indices, out, out)
            self.assertSameBits(out, ref, what)
            for dtype in [None, torch.float32, torch.float16]:
                # The .dtype reference cannot be called with dtype None (the dispatcher drops
                # the default and the Python function has none); None means the scales' dtype,
                # which is the .default overload's result.
                ref_d = ref if dtype is None else op.dtype(w, scales, zps, qmin, qmax, indices,
                                                           dtype=dtype)
                out_d = torch.empty(ref_d.shape, dtype=ref_d.dtype)
                code = None if dtype is None else CODE[dtype]
                call_kernel(NS + name + ".dtype_out", w, scales, zps, qmin, qmax, indices, code,
                            out_d, out_d)
                self.assertSameBits(out_d, ref_d, what + f" dtype={dtype}")


class ErrorTest(unittest.TestCase):
    def assertFails(self, pattern, name, *args):
        with self.assertRaisesRegex(EmberRuntimeError, pattern):
            call_kernel(NS + name, *args)

    def test_quantize_errors(self):
        x = torch.randn(4, 3)
        out = torch.empty(4, 3, dtype=torch.int8)
        i8 = CODE[torch.int8]
        self.assertFails("quant_min out of bounds", "quantize_per_tensor.out", x, 0.1, 0, -129,
                         127, i8, out, out)
        self.assertFails("quant_max out of bounds", "quantize_per_tensor.out", x, 0.1, 0, 0, 256,
                         CODE[torch.uint8], torch.empty(4, 3, dtype=torch.uint8),
                         torch.empty(4, 3, dtype=torch.uint8))
        self.assertFails("not the requested dtype", "quantize_per_tensor.out", x, 0.1, 0, 0,
                         255, CODE[torch.uint8], out, out)
        self.assertFails("float32", "quantize_per_tensor.out", x.double(), 0.1, 0, -128, 127, i8,
                         out, out)
        self.assertFails("unsupported quantized dtype", "quantize_per_tensor.out", x, 0.1, 0,
                         -128, 127, CODE[torch.float32], torch.empty(4, 3), torch.empty(4, 3))
        self.assertFails("ScalarType code 99", "quantize_per_tensor.out", x, 0.1, 0, -128, 127,
                         99, out, out)
        self.assertFails("scale is zero", "quantize_per_tensor.out", x, 0.0, 0, -128, 127, i8,
                         out, out)
        self.assertFails("scale has 2 elements", "quantize_per_tensor.Tensor_out", x,
                         torch.tensor([0.1, 0.2], dtype=torch.float64), torch.tensor([0]), -128,
                         127, i8, out, out)
        self.assertFails("zero_point must be int32 or int64", "quantize_per_tensor.Tensor_out",
                         x, torch.tensor([0.1], dtype=torch.float64), torch.tensor([0.0]), -128,
                         127, i8, out, out)
        scales = torch.full((3,), 0.1, dtype=torch.float64)
        zps = torch.zeros(3, dtype=torch.int64)
        self.assertFails("out of range", "quantize_per_channel.out", x, scales, zps, 2, -128, 127,
                         i8, out, out)
        self.assertFails("out of range", "quantize_per_channel.out", x, scales, zps, -3, -128,
                         127, i8, out, out)
        self.assertFails("scales has 3 elements, expected 4", "quantize_per_channel.out", x,
                         scales, zps, 0, -128, 127, i8, out, out)
        self.assertFails("scales must be float32 or float64", "quantize_per_channel.out", x,
                         scales.half(), zps, 1, -128, 127, i8, out, out)
        self.assertFails("zero_points has 2 elements", "quantize_per_token.out", x,
                         torch.full((4, 1), 0.1), torch.zeros(2, 1, dtype=torch.int64), -128, 127,
                         i8, out, out)
        # ExecuTorch's kernels and Ember's take floating inputs to quantize_per_token and
        # quantized ones to dequantize_per_token (the Python references would compute anyway).
        self.assertFails("float32", "quantize_per_token.out", out, torch.full((4, 1), 0.1),
                         torch.zeros(4, 1, dtype=torch.int64), -128, 127, i8, out, out)
        self.assertFails("input must be uint8, int8, int16 or int32", "dequantize_per_token.out",
                         x, torch.full((4, 1), 0.1), torch.zeros(4, 1, dtype=torch.int64), -128,
                         127, i8, CODE[torch.float32], x, x)
        # An int argument where the signature wants a tensor is refused before the kernel runs.
        self.assertFails("signature", "quantize_per_tensor.out", 3, 0.1, 0, -128, 127, i8, out,
                         out)

    def test_dequantize_errors(self):
        q = torch.zeros(4, 3, dtype=torch.int8)
        out = torch.empty(4, 3)
        i8 = CODE[torch.int8]
        self.assertFails("Expecting input to have dtype: uint8", "dequantize_per_tensor.out", q,
                         0.1, 0, 0, 255, CODE[torch.uint8], None, out, out)
        self.assertFails("out has dtype float32, expected float16", "dequantize_per_tensor.out",
                         q, 0.1, 0, -128, 127, i8, CODE[torch.float16], out, out)
        self.assertFails("output dtype must be floating", "dequantize_per_tensor.out", q, 0.1, 0,
                         -128, 127, i8, CODE[torch.int32], torch.empty(4, 3, dtype=torch.int32),
                         torch.empty(4, 3, dtype=torch.int32))
        self.assertFails("quant_min out of bounds", "dequantize_per_channel.out", q,
                         torch.ones(3), None, 1, -300, 127, i8, None, out, out)
        self.assertFails("out of range", "dequantize_per_channel.out", q, torch.ones(3), None, 5,
                         -128, 127, i8, None, out, out)
        self.assertFails("scales has 3 elements, expected 4", "dequantize_per_channel.out", q,
                         torch.ones(3), None, 0, -128, 127, i8, None, out, out)
        group = "dequantize_per_channel_group.out"
        f32 = CODE[torch.float32]
        w = torch.zeros(4, 8, dtype=torch.int8)
        w_out = torch.empty(4, 8)
        self.assertFails("group_size must be > 1", group, w, torch.ones(32), None, -128, 127, i8,
                         1, f32, w_out, w_out)
        self.assertFails(r"input.shape\[-1\] \(8\) must be divisible by group_size \(3\)", group,
                         w, torch.ones(10), None, -128, 127, i8, 3, f32, w_out, w_out)
        self.assertFails(r"input.shape\[-1\] \(8\) must be divisible by group_size \(16\)",
                         group, w, torch.ones(4, 2), None, -128, 127, i8, 16, f32, w_out, w_out)
        self.assertFails("input must be 2-dimensional, got 3 dims", group,
                         torch.zeros(2, 2, 8, dtype=torch.int8), torch.ones(8), None, -128, 127,
                         i8, 4, f32, torch.empty(2, 2, 8), torch.empty(2, 2, 8))
        self.assertFails("scales has 3 elements, expected 8", group, w, torch.ones(3), None, -128,
                         127, i8, 4, f32, w_out, w_out)
        self.assertFails("zero_points has 2 elements, expected 8", group, w, torch.ones(8),
                         torch.zeros(2, dtype=torch.int8), -128, 127, i8, 4, f32, w_out, w_out)
        self.assertFails("zero_points must be uint8, int8, int16, int32 or int64, got float32",
                         group, w, torch.ones(8), torch.zeros(8), -128, 127, i8, 4, f32, w_out,
                         w_out)
        self.assertFails("scales must be float32 or float64, got float16", group, w,
                         torch.ones(8, dtype=torch.float16), None, -128, 127, i8, 4, f32, w_out,
                         w_out)
        self.assertFails("out has dtype float32, expected float64", group, w, torch.ones(8), None,
                         -128, 127, i8, 4, CODE[torch.float64], w_out, w_out)
        self.assertFails("output dtype must be floating", group, w, torch.ones(8), None, -128,
                         127, i8, 4, CODE[torch.int32], torch.empty(4, 8, dtype=torch.int32),
                         torch.empty(4, 8, dtype=torch.int32))
        self.assertFails("input must be uint8, int8, int16 or int32, got float32", group,
                         w.float(), torch.ones(8), None, -128, 127, i8, 4, f32, w_out, w_out)

    def test_choose_qparams_errors(self):
        x = torch.randn(8)
        s = torch.empty(1, dtype=torch.float64)
        z = torch.empty(1, dtype=torch.int64)
        i8 = CODE[torch.int8]
        self.assertFails("must include 0", "choose_qparams.Tensor_out", x, 1, 127, 1e-5, i8, s,
                         z, [s, z])
        self.assertFails("strictly less", "choose_qparams.Tensor_out", x, 0, 0, 1e-5, i8, s, z,
                         [s, z])
        self.assertFails("torch.float32/16/b16", "choose_qparams.Tensor_out", x.double(), -128,
                         127, 1e-5, i8, s, z, [s, z])
        self.assertFails("empty", "choose_qparams.Tensor_out", torch.empty(0), -128, 127, 1e-5,
                         i8, s, z, [s, z])
        self.assertFails("scale_out must be float64", "choose_qparams.Tensor_out", x, -128, 127,
                         1e-5, i8, z, z, [z, z])

    def test_per_token_errors(self):
        # The reference's amin raises on an empty last dim.
        x = torch.empty(2, 0)
        s = torch.empty(2, 1, dtype=torch.float64)
        z = torch.empty(2, 1, dtype=torch.int64)
        self.assertFails("last dim is empty", "choose_qparams_per_token_asymmetric.out", x,
                         CODE[torch.int8], s, z, [s, z])
        self.assertFails("zero_point_out must be int64", "choose_qparams_per_token_asymmetric.out",
                         torch.randn(2, 3), CODE[torch.int8], s, s, [s, s])

    @unittest.skipUnless(HAVE_EMBEDDING_REFERENCE, "needs executorch's Python package")
    def test_embedding_errors(self):
        w = torch.zeros(4, 8, dtype=torch.uint8)
        scales = torch.ones(4)
        idx = torch.tensor([0, 4])
        out = torch.empty(2, 8)
        self.assertFails("index 4 is out of range", "embedding_byte.out", w, scales, None, -128,
                         127, idx, out, out)
        self.assertFails("weight_quant_min == -8", "embedding_4bit.out", w, scales, None, -128,
                         127, idx.clamp(max=3), torch.empty(2, 16), torch.empty(2, 16))
        self.assertFails("weight_scales", "embedding_byte.out", w, scales.double(), None, -128,
                         127, idx.clamp(max=3), out, out)
        self.assertFails("int8, torch.uint8", "embedding_byte.out", w.int(), scales, None, -128,
                         127, idx.clamp(max=3), out, out)
        self.assertFails("not a multiple of the 3 scale groups", "embedding_byte.out", w,
                         torch.ones(4, 3), None, -128, 127, idx.clamp(max=3), out, out)


if __name__ == "__main__":
    unittest.main()
