"""Found by the differential fuzzer (tests/fuzz_models), seed 406702, minimized:
cpu gave `wrong`: call 0 output 0 (float32): 1 of 1 elements differ; at [0, 0, 0, 0]: got np.float32(-inf), eager np.float32(-2.5e+37)

oneDNN's average pooling sums in float: -3e38 + -3e38 overflows to -inf, where ATen's mean is
finite. Fixed: the cpu backend sums each non-finite output again in double (onednn/exact.cc,
add_avg_pool_redo_step; CpuBackendNan.AvgPoolSumsExactNearFloatMax).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x4):
        v11 = F.adaptive_avg_pool2d(x4, (1, 1))
        return (v11,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, -3e+38, -0.43794405, -3e+38, 0.0, 0.0, 3e+38, 0.0, 0.0, 0.0], dtype=torch.float32).reshape((1, 1, 3, 4))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "wrong"
