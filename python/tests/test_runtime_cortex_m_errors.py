"""The cortex_m::* kernels reject bad arguments (wrong dtypes, ranks, sizes, argument counts,
zero strides, out-of-range shifts and bounds) with EmberRuntimeError and a message naming the
argument; nothing crashes. The values are test_runtime_cortex_m.py."""

import unittest

import numpy as np

from ember.runtime import EmberRuntimeError, call_kernel

NS = "cortex_m::"
I8, I16, I32 = np.int8, np.int16, np.int32


class ErrorTest(unittest.TestCase):
    """Bad arguments raise EmberRuntimeError with a message naming them."""

    def raises(self, pattern, name, *args):
        with self.assertRaisesRegex(EmberRuntimeError, pattern):
            call_kernel(NS + name, *args)

    def test_bad_arguments(self):
        x4, o4 = np.zeros((1, 2, 3, 3), I8), np.zeros((1, 2, 2, 2), I8)
        w = np.zeros((2, 2, 2, 2), I8)
        m, s = np.full(2, 2**30, I32), np.zeros(2, I32)
        scratch = np.zeros(0, np.uint8)

        def conv(**over):
            a = dict(x=x4, w=w, stride=[1, 1], m=m, s=s, out=o4)
            a.update(over)
            return ("quantized_conv2d.out", a["x"], a["w"], None, a["stride"], [0, 0], [1, 1], 0,
                    0, a["m"], a["s"], -128, 127, scratch, a["out"], a["out"])

        call_kernel(NS + conv()[0], *conv()[1:])  # the unspoiled call is fine
        self.raises("stride\\[1\\] is 0", *conv(stride=[1, 0]))
        self.raises("out has sizes \\[1, 2, 3, 3\\], expected \\[1, 2, 2, 2\\]",
                    *conv(out=np.zeros((1, 2, 3, 3), I8)))
        self.raises("input has dtype uint8, expected int8", *conv(x=x4.view(np.uint8)))
        self.raises("requantize_multipliers has dtype int64", *conv(m=m.astype(np.int64)))
        self.raises("requantize_shifts\\[0\\] is -40", *conv(s=np.array([-40, 0], I32)))
        self.raises("rank", *conv(x=np.zeros((2, 3, 3), I8)))
        self.raises("takes 15 arguments", "quantized_conv2d.out", x4, w)
        f = np.zeros(4, np.float32)
        q = np.zeros(4, I8)
        self.raises("dtype 6 is not supported", "quantize_per_tensor.out", f, 0.1, 0, -128, 127,
                    6, q, q)
        self.raises("out has dtype int16", "quantize_per_tensor.out", f, 0.1, 0, -128, 127, 1,
                    q.astype(I16), q.astype(I16))
        self.raises("input has dtype int8, expected int16", "dequantize_per_tensor.out", q, 0.1,
                    0, -128, 127, 2, f, f)
        self.raises("must be the last dim", "softmax.out", np.zeros((2, 2), I8), 0, 0, -128,
                    2**30, 1, -10, np.zeros((2, 2), I8), np.zeros((2, 2), I8))
        self.raises("input_shift is -1", "softmax.out", q, 0, 0, -128, 2**30, -1, -10, q, q)
        self.raises("batch must be 1", "quantized_depthwise_conv2d.out", np.zeros((2, 1, 2, 2), I8),
                    np.zeros((1, 1, 1, 1), I8), None, [1, 1], [0, 0], [1, 1], 1, 0, 0,
                    np.full(1, 2**30, I32), np.zeros(1, I32), -128, 127, scratch,
                    np.zeros((2, 1, 2, 2), I8), np.zeros((2, 1, 2, 2), I8))
        self.raises("ceil_mode must be False", "quantized_max_pool2d.out", x4, [2, 2], [1, 1],
                    [0, 0], [1, 1], True, 0, 0, -128, 127, o4, o4)
        self.raises("weights \\[O, K\\] have K = 3", "quantized_linear.out", np.zeros((2, 4), I8),
                    np.zeros((2, 3), I8), None, None, 0, 0, 0, [2**30], [0], 127, -128,
                    np.zeros((2, 2), I8), np.zeros((2, 2), I8))
        self.raises("need an entry", "quantized_linear.out", np.zeros((2, 4), I8),
                    np.zeros((2, 4), I8), None, None, 0, 0, 0, [], [], 127, -128,
                    np.zeros((2, 2), I8), np.zeros((2, 2), I8))
        self.raises("output_zero_point 1 must equal", "quantized_max_pool2d.out", x4, [2, 2],
                    [1, 1], [0, 0], [1, 1], False, 0, 1, -128, 127, o4, o4)
        self.raises("kernel 5 is larger", "quantized_avg_pool2d.out", x4, [5, 5], [1, 1], [0, 0],
                    False, 0, 0, 0, scratch, o4, o4)
        self.raises("pad_value is 200", "pad.out", q, [0] * 4, [0] * 4, 200, q, q)
        self.raises("perm has 1 entries", "transpose.out", np.zeros((2, 2), I8), [0],
                    np.zeros((2, 2), I8), np.zeros((2, 2), I8))
        self.raises("do not broadcast", "maximum.out", q, np.zeros(3, I8), q, q)
        self.raises("not finite", "quantized_div.out", q, 0, q, 0, 0, float("inf"), q, q)
        self.raises("lhs has rank 2", "quantized_batch_matmul.out", np.zeros((2, 2), I8), 0,
                    np.zeros((1, 2, 2), I8), 0, 0, 2**30, 0, scratch, np.zeros((1, 2, 2), I8),
                    np.zeros((1, 2, 2), I8))

    def test_nan_and_huge_inputs_to_quantize_do_not_crash(self):
        # Undefined in the kernel (§3.1); Ember maps NaN to the zero point and saturates the rest.
        x = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38], np.float32)
        out = np.zeros(5, I8)
        call_kernel(NS + "quantize_per_tensor.out", x, 0.01, 3, -100, 100, 1, out, out)
        self.assertEqual(out.tolist(), [3, 100, -100, 100, -100])


if __name__ == "__main__":
    unittest.main()
