"""Found by the differential fuzzer (tests/fuzz_models), seed 401770, minimized:
cpu gave `wrong`: call 0 output 0 (float32): 1 of 1 elements differ; at [0, 0, 0, 0]: got np.float32(-inf), eager np.float32(inf)

The cpu backend's gelu (oneDNN's gelu_erf) of -3e38 was +0.0 where ATen's is -0.0
(x / 2 * (1 + erf(x / sqrt 2)) with 1 + erf = +0), and x / gelu(x) turned the sign of that zero
into -inf against +inf. Fixed: the exact gelu is Ember's own kernel (backends/cpu/kernels/nan_exact.cc),
never oneDNN's.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v5 = F.gelu(x0)
        v7 = torch.div(x0, v5)
        return (v7,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-3e+38], dtype=torch.float32).reshape((1, 1, 1, 1))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "wrong"
