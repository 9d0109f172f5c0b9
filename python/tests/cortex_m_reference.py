"""An independent numpy model of the cortex_m::* operators, written from
../shared/docs/cortex-m-ops.md (§2 arithmetic, §3 operators) and not from Ember's C++ kernels.

Where the C++ walks loops with 32-bit wrapping steps, this model computes exactly in int64 (or
Python ints) and wraps once, which is the same value modulo 2^32; rounding divides are written as
their definitions (round half away from zero of x / 2^e), not as mask-and-threshold. Activations
are logical NCHW arrays here; weights are in the CMSIS layouts of §2.2.
"""

import numpy as np

I64 = np.int64
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def wrap32(x):
    """Two's-complement wrap of int64 values (or Python ints) to int32."""
    x = np.asarray(x, dtype=I64)
    return ((x + 2**31) % 2**32) - 2**31


def dhm(a, b):
    """§2.5 DHM: a*b/2^31 rounded to nearest with ties toward +inf, low 32 bits."""
    a = np.asarray(a, dtype=I64)
    b = np.asarray(b, dtype=I64)
    return wrap32((a * b + 2**30) >> 31)


def rdiv(x, e):
    """§2.5 RDIV: x / 2^e rounded to nearest, ties away from zero (e >= 0)."""
    x = np.asarray(x, dtype=I64)
    e = np.asarray(e, dtype=I64)
    half = np.where(e > 0, np.left_shift(I64(1), np.maximum(e - 1, 0)), 0)
    mag = (np.abs(x) + half) >> e
    return np.where(x < 0, -mag, mag)


def requant(v, m, s):
    """§2.5 REQUANT(v, m, s) = RDIV(DHM(wrap32(v * 2^max(s,0)), m), max(-s,0))."""
    v = np.asarray(v, dtype=I64)
    s = np.asarray(s, dtype=I64)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    return rdiv(dhm(wrap32(v << left), m), right)


def quantize_multiplier(x):
    """§2.6 quantize_multiplier_aot: (m, e) with x = m * 2^(e-31)."""
    if x == 0:
        return 0, 0
    f, e = np.frexp(x)
    m = round(float(f) * 2**31)
    if m == 2**31:
        m, e = 2**30, e + 1
    return int(m), int(e)


# --- float boundary ops ---------------------------------------------------------------------

def quantize_per_tensor(x, scale, zp, qmin, qmax, dtype=np.int8):
    inv = np.float32(1.0) / np.float32(scale)
    p = (x.astype(np.float32) * inv).astype(np.float32)
    r = np.rint(p).astype(I64)  # half to even
    return np.clip(zp + r, qmin, qmax).astype(dtype)


def dequantize_per_tensor(q, scale, zp):
    return (q.astype(I64) - zp).astype(np.float32) * np.float32(scale)


def quantized_div(a, zp_a, b, zp_b, zp_out, scale):
    info = np.iinfo(a.dtype)
    num = (a.astype(I64) - zp_a).astype(np.float32)
    den = (b.astype(I64) - zp_b).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        quot = np.where(den == 0, np.float32(0), num / np.where(den == 0, np.float32(1), den))
    p = (quot.astype(np.float32) * np.float32(scale)).astype(np.float32)
    p64 = p.astype(np.float64)
    rounded = (np.sign(p64) * np.floor(np.abs(p64) + 0.5)).astype(np.float32)  # roundf
    v = (rounded + np.float32(zp_out)).astype(np.float32)
    return np.clip(v, np.float32(info.min), np.float32(info.max)).astype(a.dtype)


# --- convolutions (activations NCHW) ---------------------------------------------------------

def _out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _finish(acc, mult, shift, out_off, amin, amax, axis_shape):
    m = np.asarray(mult, dtype=I64).reshape(axis_shape)
    s = np.asarray(shift, dtype=I64).reshape(axis_shape)
    out = wrap32(requant(wrap32(acc), m, s) + out_off)
    return np.clip(out, amin, amax).astype(np.int8)


def conv2d(x, w_ohwi, bias, stride, padding, dilation, in_off, out_off, mult, shift, amin, amax):
    n, cin, h, wd = x.shape
    cout, kh, kw, cg = w_ohwi.shape
    groups = cin // cg
    oh = _out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = _out_size(wd, kw, stride[1], padding[1], dilation[1])
    # Out-of-range taps contribute 0: pad the offset input with zeros.
    xo = np.pad(x.astype(I64) + in_off,
                ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    acc = np.zeros((n, cout, oh, ow), dtype=I64)
    if bias is not None:
        acc += bias.astype(I64).reshape(1, cout, 1, 1)
    cout_g = cout // groups
    w = w_ohwi.astype(I64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            patch = xo[:, :, y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                       x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                pg = patch[:, g * cg:(g + 1) * cg]
                wg = w[g * cout_g:(g + 1) * cout_g, ky, kx, :]
                acc[:, g * cout_g:(g + 1) * cout_g] += np.einsum("nchw,oc->nohw", pg, wg)
    return _finish(acc, mult, shift, out_off, amin, amax, (1, cout, 1, 1))


def depthwise_conv2d(x, w_ihwo, bias, stride, padding, dilation, dm, in_off, out_off, mult,
                     shift, amin, amax):
    # Output channel oc = ic * dm + j reads input channel ic: a grouped conv with Cin groups,
    # whose OHWI weight is the IHWO one transposed.
    w_ohwi = np.transpose(w_ihwo, (3, 1, 2, 0))
    assert w_ohwi.shape[0] == x.shape[1] * dm
    return conv2d(x, w_ohwi, bias, stride, padding, dilation, in_off, out_off, mult, shift,
                  amin, amax)


def transpose_conv2d(x, w, bias, stride, padding, output_padding, dilation, in_off, out_off,
                     mult, shift, amin, amax):
    """PyTorch conv_transpose2d semantics (§3.17), as a scatter onto a full canvas."""
    n, cin, h, wd = x.shape
    cout, kh, kw, _ = w.shape
    ch = (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1
    cw = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1
    canvas = np.zeros((n, cout, ch + output_padding[0], cw + output_padding[1]), dtype=I64)
    xo = x.astype(I64) + in_off
    for ky in range(kh):
        for kx in range(kw):
            contrib = np.einsum("nchw,oc->nohw", xo, w[:, ky, kx, :].astype(I64))
            y0, x0 = ky * dilation[0], kx * dilation[1]
            canvas[:, :, y0:y0 + (h - 1) * stride[0] + 1:stride[0],
                   x0:x0 + (wd - 1) * stride[1] + 1:stride[1]] += contrib
    oh = ch - 2 * padding[0] + output_padding[0]
    ow = cw - 2 * padding[1] + output_padding[1]
    acc = canvas[:, :, padding[0]:padding[0] + oh, padding[1]:padding[1] + ow]
    if bias is not None:
        acc = acc + bias.astype(I64).reshape(1, cout, 1, 1)
    return _finish(acc, mult, shift, out_off, amin, amax, (1, cout, 1, 1))


def linear(x, w, bias, kernel_sum, in_off, f_off, out_off, mult, shift, amax, amin):
    xi = x.astype(I64).reshape(-1, x.shape[-1])
    wi = w.astype(I64)
    if kernel_sum is None:
        acc = (xi + in_off) @ (wi + f_off).T
        if bias is not None:
            acc = acc + bias.astype(I64)
    else:
        acc = (kernel_sum.astype(I64).reshape(1, -1) + xi @ wi.T
               + f_off * xi.sum(axis=1, keepdims=True))
    out = np.clip(wrap32(requant(wrap32(acc), mult, shift) + out_off), amin, amax)
    return out.astype(np.int8).reshape(x.shape[:-1] + (w.shape[0],))


def batch_matmul(lhs, lhs_off, rhs_t, rhs_off, out_zp, mult, shift):
    acc = np.einsum("bik,bjk->bij", lhs.astype(I64) + lhs_off, rhs_t.astype(I64) + rhs_off)
    return np.clip(wrap32(requant(wrap32(acc), mult, shift) + out_zp), -128, 127).astype(np.int8)


# --- pools and pad ---------------------------------------------------------------------------

def pool_out_size(size, k, s, p, ceil_mode):
    num = size + 2 * p - k
    out = num // s + 1
    if ceil_mode and num % s != 0:
        out += 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(size, k, s, p, count):
    for o in range(count):
        start = o * s - p
        yield o, max(start, 0), min(start + k, size)


def avg_pool2d(x, kernel, stride, padding, ceil_mode):
    n, c, h, w = x.shape
    oh = pool_out_size(h, kernel[0], stride[0], padding[0], ceil_mode)
    ow = pool_out_size(w, kernel[1], stride[1], padding[1], ceil_mode)
    out = np.zeros((n, c, oh, ow), dtype=np.int8)
    for oy, y0, y1 in _windows(h, kernel[0], stride[0], padding[0], oh):
        for ox, x0, x1 in _windows(w, kernel[1], stride[1], padding[1], ow):
            win = x[:, :, y0:y1, x0:x1].astype(I64)
            cnt = win.shape[2] * win.shape[3]
            total = win.sum(axis=(2, 3))
            avg = np.sign(total) * ((np.abs(total) + cnt // 2) // cnt)  # half away from zero
            out[:, :, oy, ox] = np.clip(avg, -128, 127)
    return out


def max_pool2d(x, kernel, stride, padding, amin, amax):
    n, c, h, w = x.shape
    oh = pool_out_size(h, kernel[0], stride[0], padding[0], False)
    ow = pool_out_size(w, kernel[1], stride[1], padding[1], False)
    out = np.zeros((n, c, oh, ow), dtype=np.int8)
    for oy, y0, y1 in _windows(h, kernel[0], stride[0], padding[0], oh):
        for ox, x0, x1 in _windows(w, kernel[1], stride[1], padding[1], ow):
            out[:, :, oy, ox] = np.clip(x[:, :, y0:y1, x0:x1].max(axis=(2, 3)), amin, amax)
    return out


def pad_physical(memory, phys_dims, pre, post, value):
    """§3.7 on a contiguous memory image: pad the physical 4-D view, return the new memory."""
    view = memory.reshape(phys_dims)
    return np.pad(view, list(zip(pre, post)), constant_values=value).reshape(-1)


# --- element-wise ----------------------------------------------------------------------------

def quantized_add(a, zp_a, m_a, s_a, b, zp_b, m_b, s_b, zp_out, m_out, s_out, amin, amax):
    u = requant(wrap32((a.astype(I64) - zp_a) << 20), m_a, s_a)
    v = requant(wrap32((b.astype(I64) - zp_b) << 20), m_b, s_b)
    r = wrap32(requant(wrap32(u + v), m_out, s_out) + zp_out)
    return np.clip(r, amin, amax).astype(np.int8)


def quantized_mul(a, zp_a, b, zp_b, zp_out, mult, shift):
    prod = wrap32((a.astype(I64) - zp_a) * (b.astype(I64) - zp_b))
    return np.clip(wrap32(requant(prod, mult, shift) + zp_out), -128, 127).astype(np.int8)


def activation_lut(x, lut):
    return lut[x.astype(I64) + 128]


# --- softmax (§3.14), in Python ints ---------------------------------------------------------

def _w(x):
    return ((x + 2**31) % 2**32) - 2**31


def _dhm_sat(a, b):
    if a == INT32_MIN and b == INT32_MIN:
        return INT32_MAX
    return _w((a * b + 2**30) >> 31)


def _rdiv(x, e):
    if e == 0:
        return x
    mag = (abs(x) + (1 << (e - 1))) >> e
    return -mag if x < 0 else mag


def _sat_shl(v, e):
    limit = 2**(31 - e) - 1
    if v > limit:
        return INT32_MAX
    if v < -limit:
        return INT32_MIN
    return _w(v << e)


EXP_FACTORS = [1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242]


def exp_on_negative(a):
    if a == 0:
        return INT32_MAX
    r = _w((a & (2**24 - 1)) - 2**24)
    rem = _w(r - a)
    x = _w(r * 32 + 2**28)
    x2 = _dhm_sat(x, x)
    x3 = _dhm_sat(x2, x)
    x4 = _dhm_sat(x2, x2)
    p = _w(x + _rdiv(_w(_dhm_sat(_w(_rdiv(x4, 2) + x3), 715827883) + x2), 1))
    res = _w(1895147668 + _dhm_sat(1895147668, p))
    for k, c in enumerate(EXP_FACTORS):
        if (rem >> (24 + k)) & 1:
            res = _dhm_sat(res, c)
    return res


def one_over_one_plus_x(v):
    t = v + INT32_MAX
    num = t + (1 if t >= 0 else -1)
    hd = _w(num // 2 if num >= 0 else -((-num) // 2))  # truncating division
    x = _w(1515870810 + _dhm_sat(hd, -1010580540))
    for _ in range(3):
        x = _w(x + _sat_shl(_dhm_sat(x, _w(2**29 - _dhm_sat(hd, x))), 2))
    return _sat_shl(x, 1)


def softmax_row(row, mult, shift, diff_min):
    mx = max(int(v) for v in row)
    diffs = [int(v) - mx for v in row]
    exps = [exp_on_negative(_dhm_sat(_w(d << shift), mult)) if d >= diff_min else None
            for d in diffs]
    total = 0
    for e in exps:
        if e is not None:
            total = _w(total + _rdiv(e, 12))
    unsigned = total % 2**32
    h = 32 - unsigned.bit_length()
    xs = _w(((unsigned << h) % 2**32) - 2**31)
    recip = one_over_one_plus_x(xs)
    bits = 12 - h + 23
    out = []
    for e in exps:
        if e is None:
            out.append(-128)
        else:
            out.append(min(max(_w(_rdiv(_dhm_sat(recip, e), bits) - 128), -128), 127))
    return out


def softmax(x, mult, shift, diff_min):
    rows = x.reshape(-1, x.shape[-1])
    out = np.array([softmax_row(r, mult, shift, diff_min) for r in rows], dtype=np.int8)
    return out.reshape(x.shape)


def softmax_parameters(scale):
    """§3.14 export parameters: (input_multiplier, input_shift, diff_min)."""
    r = min(scale * 2**26, 2**31 - 1)
    m, s = quantize_multiplier(r)
    return m, s, -int(np.floor(31 * 2**26 / 2**s))
