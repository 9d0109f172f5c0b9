"""Ember's cortex_m::* kernels (runtime/kernels/cortex_m) against an independent numpy model of
../shared/docs/cortex-m-ops.md (tests/cortex_m_reference.py), compared byte for byte on random
cases from fixed seeds: batch > 1, odd sizes, padding/stride/dilation variants, 32-bit
wrap-around with huge biases, positive and negative shifts, the broadcasts each op allows. The
kernels' errors (bad arguments raise EmberRuntimeError) are test_runtime_cortex_m_errors.py.

Tensors cross call_kernel as contiguous (NCHW) arrays; the kernels address activations through
their strides, and the channels-last layout that export writes is covered by the C++ tests
(runtime/kernels/cortex_m/cortex_m_errors_test.cc, CortexMLayout)."""

import unittest

import numpy as np

from ember.runtime import EmberRuntimeError, call_kernel
from tests import cortex_m_reference as ref

NS = "cortex_m::"
CASES = 100
I8, I16, I32 = np.int8, np.int16, np.int32


def rand_i8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int64).astype(I8)


def requant_params(rng, acc_scale, count=None):
    """Multiplier/shift pairs that bring accumulators of about `acc_scale` into int8 range, with
    now and then a left shift (positive) or a raw random int32 multiplier."""
    def one():
        roll = rng.random()
        if roll < 0.08:
            return int(rng.integers(-2**31 + 1, 2**31)), int(rng.integers(-31, 3))
        if roll < 0.16:
            return int(rng.integers(2**30, 2**31)), int(rng.integers(1, 6))  # wraps on the left
        m, e = ref.quantize_multiplier(rng.uniform(10, 150) / max(acc_scale, 1.0))
        return m, int(np.clip(e, -31, 31))
    if count is None:
        return one()
    pairs = [one() for _ in range(count)]
    return (np.array([p[0] for p in pairs], dtype=I32), np.array([p[1] for p in pairs], dtype=I32))


def rand_bias(rng, count):
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.25:  # near the int32 limits: the accumulator wraps
        return rng.choice([-1, 1], size=count) * rng.integers(2**31 - 3000, 2**31, size=count)
    return rng.integers(-20000, 20000, size=count)


def activation(rng):
    lo = int(rng.integers(-128, 1)) if rng.random() < 0.4 else -128
    hi = int(rng.integers(max(lo, 0), 128)) if rng.random() < 0.4 else 127
    return lo, hi


class CortexMTest(unittest.TestCase):
    def assertBytes(self, ours, want, what):
        want = np.asarray(want)
        self.assertEqual(ours.shape, want.shape, what)
        if not np.array_equal(ours, want):
            bad = np.flatnonzero(ours.ravel() != want.ravel())
            self.fail(f"{what}: {bad.size} of {ours.size} differ; first at {bad[0]}: ours "
                      f"{ours.ravel()[bad[0]]} reference {want.ravel()[bad[0]]}")


class BoundaryOpsTest(CortexMTest):
    def test_quantize_per_tensor(self):
        rng = np.random.default_rng(1)
        for case in range(CASES):
            dtype, code = (I8, 1) if case % 3 else (I16, 2)
            info = np.iinfo(dtype)
            scale = float(np.float32(rng.uniform(0.001, 2.0)))
            zp = int(rng.integers(info.min // 2, info.max // 2))
            qmin, qmax = sorted(int(v) for v in rng.integers(info.min, info.max + 1, size=2))
            if case % 4 == 0:
                qmin, qmax = int(info.min), int(info.max)
            n = int(rng.integers(1, 60))
            x = (rng.standard_normal(n) * scale * rng.choice([1, 40, 300])).astype(np.float32)
            # Ties of the scaled value: k/2 times the scale.
            x[: n // 3] = (rng.integers(-300, 300, size=n // 3) / 2 * scale).astype(np.float32)
            out = np.zeros(n, dtype)
            call_kernel(NS + "quantize_per_tensor.out", x, scale, zp, qmin, qmax, code, out, out)
            self.assertBytes(out, ref.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype),
                             f"case {case}")

    def test_dequantize_per_tensor(self):
        rng = np.random.default_rng(2)
        for case in range(CASES):
            dtype, code = (I8, 1) if case % 3 else (I16, 2)
            info = np.iinfo(dtype)
            zp = int(rng.integers(info.min, info.max + 1))
            scale = float(rng.uniform(1e-4, 3.0))
            size = (2, int(rng.integers(1, 30)))
            q = rng.integers(info.min, info.max + 1, size=size).astype(dtype)
            out = np.zeros(q.shape, np.float32)
            call_kernel(NS + "dequantize_per_tensor.out", q, scale, zp, int(info.min),
                        int(info.max), code, out, out)
            self.assertBytes(out, ref.dequantize_per_tensor(q, scale, zp), f"case {case}")

    def test_quantized_div(self):
        rng = np.random.default_rng(3)
        for case in range(CASES):
            dtype = I8 if case % 3 else I16
            info = np.iinfo(dtype)
            shape = tuple(int(s) for s in rng.integers(1, 6, size=int(rng.integers(1, 4))))
            a = rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
            b = rng.integers(-5, 6, size=shape).astype(dtype) if case % 2 else \
                rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
            zps = [int(v) for v in rng.integers(-20, 20, size=3)]
            scale = float(rng.uniform(0.05, 8.0))
            out = np.zeros(shape, dtype)
            call_kernel(NS + "quantized_div.out", a, zps[0], b, zps[1], zps[2], scale, out, out)
            self.assertBytes(out, ref.quantized_div(a, zps[0], b, zps[1], zps[2], scale),
                             f"case {case}")


class ConvTest(CortexMTest):
    def test_quantized_conv2d(self):
        rng = np.random.default_rng(10)
        done = 0
        while done < CASES:
            groups = int(rng.choice([1, 1, 2, 3]))
            cg, cout_g = int(rng.integers(1, 4)), int(rng.integers(1, 4))
            cin, cout = groups * cg, groups * cout_g
            n, kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
            stride = [int(s) for s in rng.integers(1, 4, size=2)]
            dil = [int(s) for s in rng.integers(1, 3, size=2)]
            pad = [int(s) for s in rng.integers(0, 3, size=2)]
            h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
            oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
            ow = (w + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
            if h + 2 * pad[0] < dil[0] * (kh - 1) + 1 or w + 2 * pad[1] < dil[1] * (kw - 1) + 1:
                continue
            x = rand_i8(rng, (n, cin, h, w))
            wt = rand_i8(rng, (cout, kh, kw, cg))
            bias = rand_bias(rng, cout)
            in_off, out_off = -int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
            mult, shift = requant_params(rng, 80 * 70 * np.sqrt(kh * kw * cg), cout)
            lo, hi = activation(rng)
            out = np.zeros((n, cout, oh, ow), I8)
            b = None if bias is None else bias.astype(I32)
            call_kernel(NS + "quantized_conv2d.out", x, wt, b, stride, pad, dil, in_off, out_off,
                        mult, shift, lo, hi, np.zeros(0, np.uint8), out, out)
            want = ref.conv2d(x, wt, b, stride, pad, dil, in_off, out_off, mult, shift, lo, hi)
            self.assertBytes(out, want, f"case {done}")
            done += 1

    def test_quantized_depthwise_conv2d(self):
        rng = np.random.default_rng(11)
        done = 0
        while done < CASES:
            cin, dm = int(rng.integers(1, 5)), int(rng.integers(1, 4))
            cout = cin * dm
            kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 4))
            stride = [int(s) for s in rng.integers(1, 3, size=2)]
            dil = [int(s) for s in rng.integers(1, 3, size=2)]
            pad = [int(s) for s in rng.integers(0, 3, size=2)]
            h, w = int(rng.integers(1, 10)), int(rng.integers(1, 8))
            if h + 2 * pad[0] < dil[0] * (kh - 1) + 1 or w + 2 * pad[1] < dil[1] * (kw - 1) + 1:
                continue
            oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
            ow = (w + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
            x = rand_i8(rng, (1, cin, h, w))
            wt = rand_i8(rng, (1, kh, kw, cout))
            bias = rand_bias(rng, cout)
            b = None if bias is None else bias.astype(I32)
            in_off, out_off = -int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
            mult, shift = requant_params(rng, 80 * 70 * np.sqrt(kh * kw), cout)
            lo, hi = activation(rng)
            out = np.zeros((1, cout, oh, ow), I8)
            call_kernel(NS + "quantized_depthwise_conv2d.out", x, wt, b, stride, pad, dil, dm,
                        in_off, out_off, mult, shift, lo, hi, np.zeros(0, np.uint8), out, out)
            want = ref.depthwise_conv2d(x, wt, b, stride, pad, dil, dm, in_off, out_off, mult,
                                        shift, lo, hi)
            self.assertBytes(out, want, f"case {done}")
            done += 1

    def test_quantized_transpose_conv2d(self):
        rng = np.random.default_rng(12)
        done = 0
        while done < CASES:
            n, cin, cout = int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
            kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
            stride = [int(s) for s in rng.integers(1, 4, size=2)]
            pad = [int(s) for s in rng.integers(0, 3, size=2)]
            # Mostly what export lets through; some dilation and output_padding as PyTorch has.
            dil = [1, 1] if done % 4 else [int(s) for s in rng.integers(1, 3, size=2)]
            opad = [0, 0] if done % 5 else [int(rng.integers(0, s)) for s in stride]
            h, w = int(rng.integers(1, 6)), int(rng.integers(1, 6))
            oh = (h - 1) * stride[0] - 2 * pad[0] + dil[0] * (kh - 1) + opad[0] + 1
            ow = (w - 1) * stride[1] - 2 * pad[1] + dil[1] * (kw - 1) + opad[1] + 1
            if oh < 1 or ow < 1:
                continue
            x = rand_i8(rng, (n, cin, h, w))
            wt = rand_i8(rng, (cout, kh, kw, cin))
            bias = rand_bias(rng, cout)
            b = None if bias is None else bias.astype(I32)
            in_off, out_off = -int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
            mult, shift = requant_params(rng, 80 * 70 * np.sqrt(cin * kh * kw), cout)
            lo, hi = activation(rng)
            out = np.zeros((n, cout, oh, ow), I8)
            call_kernel(NS + "quantized_transpose_conv2d.out", x, wt, b, stride, pad, opad, dil,
                        in_off, out_off, mult, shift, lo, hi, np.zeros(0, np.uint8),
                        np.zeros(0, np.uint8), out, out)
            want = ref.transpose_conv2d(x, wt, b, stride, pad, opad, dil, in_off, out_off, mult,
                                        shift, lo, hi)
            self.assertBytes(out, want, f"case {done}")
            done += 1


class MatmulTest(CortexMTest):
    def test_quantized_linear(self):
        rng = np.random.default_rng(20)
        for case in range(2 * CASES):
            lead = tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(0, 3))))
            k, o = int(rng.integers(1, 24)), int(rng.integers(1, 9))
            x = rand_i8(rng, lead + (k,))
            wt = rand_i8(rng, (o, k))
            in_off = -int(rng.integers(-128, 128))
            f_off = 0 if case % 3 else -int(rng.integers(-128, 128))
            out_off = int(rng.integers(-128, 128))
            m, s = requant_params(rng, 80 * 70 * np.sqrt(k))
            lo, hi = activation(rng)
            bias = rand_bias(rng, o)
            b = None if bias is None else bias.astype(I32)
            ks = None
            if case % 2:  # the kernel-sum form (MVE exports): bias Null
                ks = rng.integers(-2**31, 2**31, size=(1, o)).astype(I32) if case % 7 == 1 else \
                    ref.wrap32(in_off * (wt.astype(np.int64) + f_off).sum(axis=1)
                               + (0 if bias is None else bias)).astype(I32).reshape(1, o)
                b = None
            out = np.zeros(lead + (o,), I8)
            call_kernel(NS + "quantized_linear.out", x, wt, b, ks, in_off, f_off, out_off, [m],
                        [s], hi, lo, out, out)
            want = ref.linear(x, wt, b, ks, in_off, f_off, out_off, m, s, hi, lo)
            self.assertBytes(out, want, f"case {case}")
            if ks is not None and case % 7 != 1:  # an export-made kernel_sum: both forms agree
                want_bias = ref.linear(x, wt, None if bias is None else bias.astype(I32), None,
                                       in_off, f_off, out_off, m, s, hi, lo)
                self.assertBytes(out, want_bias, f"case {case}, bias form")

    def test_quantized_batch_matmul(self):
        rng = np.random.default_rng(21)
        for case in range(CASES):
            b, m, n, k = (int(v) for v in rng.integers(1, 7, size=4))
            k = int(rng.integers(1, 30))
            lhs, rhs = rand_i8(rng, (b, m, k)), rand_i8(rng, (b, n, k))
            lo_off, ro_off = -int(rng.integers(-128, 128)), -int(rng.integers(-128, 128))
            zp = int(rng.integers(-128, 128))
            mult, shift = requant_params(rng, 150 * 150 * np.sqrt(k))
            out = np.zeros((b, m, n), I8)
            call_kernel(NS + "quantized_batch_matmul.out", lhs, lo_off, rhs, ro_off, zp, mult,
                        shift, np.zeros(16, np.uint8), out, out)
            self.assertBytes(out, ref.batch_matmul(lhs, lo_off, rhs, ro_off, zp, mult, shift),
                             f"case {case}")


def windows_ok(size, k, s, p, count):
    return all(min(o * s - p + k, size) > max(o * s - p, 0) for o in range(count))


class PoolAndPadTest(CortexMTest):
    def test_quantized_avg_pool2d(self):
        rng = np.random.default_rng(30)
        done = 0
        while done < CASES:
            n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
            h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
            kernel = [int(v) for v in rng.integers(1, 4, size=2)]
            stride = [int(v) for v in rng.integers(1, 4, size=2)]
            pad = [int(rng.integers(0, kk // 2 + 1)) for kk in kernel]
            ceil_mode = bool(rng.random() < 0.4)
            if h + 2 * pad[0] < kernel[0] or w + 2 * pad[1] < kernel[1]:
                continue
            oh = ref.pool_out_size(h, kernel[0], stride[0], pad[0], ceil_mode)
            ow = ref.pool_out_size(w, kernel[1], stride[1], pad[1], ceil_mode)
            x = rand_i8(rng, (n, c, h, w))
            out = np.zeros((n, c, oh, ow), I8)
            args = (x, kernel, stride, pad, ceil_mode, 3, 2**30, -1, np.zeros(256, np.uint8),
                    out, out)
            if not (windows_ok(h, kernel[0], stride[0], pad[0], oh)
                    and windows_ok(w, kernel[1], stride[1], pad[1], ow)):
                with self.assertRaisesRegex(EmberRuntimeError, "covers no input position"):
                    call_kernel(NS + "quantized_avg_pool2d.out", *args)
                continue
            call_kernel(NS + "quantized_avg_pool2d.out", *args)
            self.assertBytes(out, ref.avg_pool2d(x, kernel, stride, pad, ceil_mode),
                             f"case {done}")
            done += 1

    def test_quantized_max_pool2d(self):
        rng = np.random.default_rng(31)
        done = 0
        while done < CASES:
            n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
            h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
            kernel = [int(v) for v in rng.integers(1, 4, size=2)]
            stride = [int(v) for v in rng.integers(1, 4, size=2)]
            pad = [int(rng.integers(0, kk // 2 + 1)) for kk in kernel]
            if h + 2 * pad[0] < kernel[0] or w + 2 * pad[1] < kernel[1]:
                continue
            oh = ref.pool_out_size(h, kernel[0], stride[0], pad[0], False)
            ow = ref.pool_out_size(w, kernel[1], stride[1], pad[1], False)
            x = rand_i8(rng, (n, c, h, w))
            zp = int(rng.integers(-128, 128))
            lo, hi = activation(rng)
            out = np.zeros((n, c, oh, ow), I8)
            call_kernel(NS + "quantized_max_pool2d.out", x, kernel, stride, pad, [1, 1], False,
                        zp, zp, lo, hi, out, out)
            self.assertBytes(out, ref.max_pool2d(x, kernel, stride, pad, lo, hi), f"case {done}")
            done += 1

    def test_pad(self):
        rng = np.random.default_rng(32)
        for case in range(CASES):
            rank = int(rng.integers(1, 5))
            sizes = [int(v) for v in rng.integers(1, 5, size=rank)]
            pre = [int(v) for v in rng.integers(0, 3, size=4)]
            post = [int(v) for v in rng.integers(0, 3, size=4)]
            for i in range(4 - rank):  # dims the input does not have stay 1
                pre[i] = post[i] = 0
            kind = case % 3
            if rank == 4 and kind == 1:  # C == 1: channels-last by §2.2, physical [N,H,W,C]
                sizes[1] = 1
                pre[3] = post[3] = 0
            elif rank == 4 and kind == 2:  # H == W == 1: channels-last too, [N,1,1,C]
                sizes[2] = sizes[3] = 1
                pre[1] = post[1] = pre[2] = post[2] = 0
            elif rank == 4:
                sizes[1] = max(sizes[1], 2)
                sizes[2] = max(sizes[2], 2)
            x = rand_i8(rng, tuple(sizes))
            channels_last = rank == 4 and (sizes[1] == 1 or sizes[2] == sizes[3] == 1)
            if channels_last:
                phys = [sizes[0], sizes[2], sizes[3], sizes[1]]
            else:
                phys = [1] * (4 - rank) + sizes
            out_phys = [p + a + b for p, a, b in zip(phys, pre, post)]
            out_sizes = ([out_phys[0], out_phys[3], out_phys[1], out_phys[2]] if channels_last
                         else out_phys[4 - rank:])
            value = int(rng.integers(-128, 128))
            out = np.zeros(out_sizes, I8)
            call_kernel(NS + "pad.out", x, pre, post, value, out, out)
            want = ref.pad_physical(x.ravel(), phys, pre, post, value)
            self.assertBytes(out.ravel(), want, f"case {case} sizes {sizes} {pre} {post}")


class ElementwiseTest(CortexMTest):
    @staticmethod
    def shapes(rng, case):
        """Equal shapes, or [N,C,H,W] with a [1,C,1,1] operand on either side."""
        if case % 3:
            shape = tuple(int(s) for s in rng.integers(1, 6, size=int(rng.integers(1, 5))))
            return shape, shape, shape
        big = tuple(int(s) for s in rng.integers(1, 5, size=4))
        small = (1, big[1], 1, 1)
        return (big, small, big) if case % 2 else (small, big, big)

    def test_quantized_add(self):
        rng = np.random.default_rng(40)
        for case in range(CASES):
            sa, sb, so = self.shapes(rng, case)
            a, b = rand_i8(rng, sa), rand_i8(rng, sb)
            zps = [int(v) for v in rng.integers(-128, 128, size=3)]
            if case % 4:  # parameters as export derives them (§2.6)
                s_a, s_b, s_o = rng.uniform(0.005, 0.5, size=3)
                big = 2 * max(s_a, s_b)
                pa, pb = ref.quantize_multiplier(s_a / big), ref.quantize_multiplier(s_b / big)
                po = ref.quantize_multiplier(big / (s_o * 2**20))
            else:  # raw: any multiplier, shifts of both signs (wrap-around)
                pa, pb, po = (requant_params(rng, 2**20 * 100) for _ in range(3))
            lo, hi = activation(rng)
            out = np.zeros(so, I8)
            call_kernel(NS + "quantized_add.out", a, zps[0], pa[0], pa[1], b, zps[1], pb[0], pb[1],
                        zps[2], po[0], po[1], lo, hi, out, out)
            want = ref.quantized_add(a, zps[0], pa[0], pa[1], b, zps[1], pb[0], pb[1], zps[2],
                                     po[0], po[1], lo, hi)
            self.assertBytes(out, want, f"case {case}")

    def test_quantized_mul(self):
        rng = np.random.default_rng(41)
        for case in range(CASES):
            sa, sb, so = self.shapes(rng, case)
            a, b = rand_i8(rng, sa), rand_i8(rng, sb)
            zps = [int(v) for v in rng.integers(-128, 128, size=3)]
            m, s = requant_params(rng, 100 * 100)
            out = np.zeros(so, I8)
            call_kernel(NS + "quantized_mul.out", a, zps[0], b, zps[1], zps[2], m, s, out, out)
            self.assertBytes(out, ref.quantized_mul(a, zps[0], b, zps[1], zps[2], m, s),
                             f"case {case}")

    def test_quantized_activation(self):
        rng = np.random.default_rng(42)
        for case in range(CASES):
            rank = int(rng.integers(1, 5))
            x = rand_i8(rng, tuple(int(s) for s in rng.integers(1, 6, size=rank)))
            lut = rand_i8(rng, 256)
            out = np.zeros(x.shape, I8)
            call_kernel(NS + "quantized_activation.out", x, lut, out, out)
            self.assertBytes(out, ref.activation_lut(x, lut), f"case {case}")

    def test_maximum_minimum(self):
        rng = np.random.default_rng(43)
        for case in range(CASES):
            rank = int(rng.integers(0, 5))
            shape = [int(s) for s in rng.integers(1, 5, size=rank)]
            sa = [1 if rng.random() < 0.3 else s for s in shape]
            sb = [1 if rng.random() < 0.3 else s for s in shape]
            sb = sb[int(rng.integers(0, rank + 1)):]  # other may have a lower rank
            if case % 2:
                sa, sb = sb, sa
            a, b = rand_i8(rng, tuple(sa)), rand_i8(rng, tuple(sb))
            want_max = np.maximum(a, b)
            for name, want in (("maximum", want_max), ("minimum", np.minimum(a, b))):
                out = np.zeros(want.shape, I8)
                call_kernel(NS + name + ".out", a, b, out, out)
                self.assertBytes(out, want, f"{name} case {case} {sa} {sb}")

    def test_transpose(self):
        rng = np.random.default_rng(44)
        for case in range(CASES):
            rank = int(rng.integers(1, 5))
            x = rand_i8(rng, tuple(int(s) for s in rng.integers(1, 6, size=rank)))
            perm = [int(p) for p in rng.permutation(rank)]
            want = np.ascontiguousarray(np.transpose(x, perm))
            out = np.zeros(want.shape, I8)
            call_kernel(NS + "transpose.out", x, perm, out, out)
            self.assertBytes(out, want, f"case {case} perm {perm}")

    def test_softmax(self):
        rng = np.random.default_rng(45)
        for case in range(CASES):
            shape = tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(0, 3))))
            shape += (int(rng.integers(1, 40)),)
            spread = int(rng.integers(1, 129))  # narrow rows give outputs above -128
            centre = int(rng.integers(-128 + spread, 128 - spread + 1))
            x = rng.integers(centre - spread, centre + spread, size=shape).astype(I8)
            if case % 5 == 0:  # many equal maxima
                x[..., : shape[-1] // 2] = 127
            m, s, diff_min = ref.softmax_parameters(float(rng.uniform(0.005, 1.5)))
            out = np.zeros(shape, I8)
            call_kernel(NS + "softmax.out", x, len(shape) - 1, 0, -128, m, s, diff_min, out, out)
            self.assertBytes(out, ref.softmax(x, m, s, diff_min), f"case {case}")

    def test_softmax_long_rows(self):
        # Rows of >= 512 near-equal values make the final shift exceed 31 bits, where CMSIS-NN's C
        # is undefined; Ember and the model both take the exact rounding shift.
        rng = np.random.default_rng(46)
        for length in (512, 1000, 4096, 9000):
            x = np.clip(rng.integers(120, 128, size=(2, length)), -128, 127).astype(I8)
            m, s, diff_min = ref.softmax_parameters(0.02)
            out = np.zeros(x.shape, I8)
            call_kernel(NS + "softmax.out", x, 1, 0, -128, m, s, diff_min, out, out)
            self.assertBytes(out, ref.softmax(x, m, s, diff_min), f"length {length}")


if __name__ == "__main__":
    unittest.main()
