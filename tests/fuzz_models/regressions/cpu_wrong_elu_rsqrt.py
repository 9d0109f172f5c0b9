"""Found by the differential fuzzer (tests/fuzz_models), seed 410289, reduced by hand:
cpu gave `wrong`: 18 of 600 elements differ; got nan, eager 0.0 (a softmax row holding rsqrt of
elu(-0.0)).

oneDNN's elu gives +0.0 for -0.0 where ATen's (x > 0 ? x : alpha * expm1(x)) gives -0.0, so
rsqrt gave +inf for ATen's -inf, and a softmax row holding +inf is NaN. Fixed: elu is Ember's own
step on the cpu backend (kernels/nan_exact.cc, elu_in_place; CpuBackend.EluOnlyWhereExact).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v2 = F.elu(x0)
        v10 = torch.rsqrt(v2)
        v12 = torch.softmax(v10, dim=1)
        return (v12, v10)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-0.0, 0.5, 0.6, 1e-40, 0.2, 2.0], dtype=torch.float32).reshape((2, 3))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "wrong"
