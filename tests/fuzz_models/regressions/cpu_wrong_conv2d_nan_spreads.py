"""Found by the differential fuzzer (tests/fuzz_models), seed 3000435, minimized:
cpu gave `wrong`: call 0 output 0 (float32): 4 of 24 elements differ; at [0, 0, 0, 0]: got np.float32(nan), eager np.float32(0.0)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = _w((2, 5, 3, 3), 300043501)
    def forward(self, x1):
        v7 = F.conv2d(x1, self.p1, None, stride=1, padding=1, dilation=1, groups=1)
        return (v7,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, nan, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float32).reshape((3, 5, 1, 4))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "wrong"
