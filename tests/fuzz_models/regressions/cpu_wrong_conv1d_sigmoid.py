"""Found by the differential fuzzer (tests/fuzz_models), seed 201558, minimized:
cpu gave `wrong`: call 0 output 0 (float32): 2 of 6 elements differ; at [0, 2, 0]: got np.float32(0.0), eager np.float32(nan)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p3 = _w((6, 1, 1), 20155803)
        self.p4 = _w((6,), 20155804)
    def forward(self, x2):
        v6 = F.conv1d(x2, self.p3, self.p4, stride=1, padding=0, dilation=1, groups=3)
        v7 = v6.sigmoid_()
        return (v7,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, nan, 0.0], dtype=torch.float32).reshape((1, 3, 1))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "wrong"
# Fixed: oneDNN ran this convolution by GEMM, whose reference logistic post-op maps NaN to 0; the
# cpu backend now computes sigmoid itself (kernels/nan_exact.h), NaN kept.
