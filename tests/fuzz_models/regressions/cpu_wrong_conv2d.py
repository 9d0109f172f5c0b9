"""Found by the differential fuzzer (tests/fuzz_models), seed 1107, minimized:
cpu gave `wrong`: call 0 output 0 (float32): 5 of 5 elements differ; at [0, 0, 0, 0]: got np.float32(nan), eager np.float32(-inf)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = _w((5, 4, 3, 3), 110701)
        self.p2 = _w((5,), 110702)
    def forward(self, x2):
        v10 = F.conv2d(x2, self.p1, self.p2, stride=1, padding=0, dilation=1, groups=1)
        return (v10,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 1.5177238, 0.6832442, -inf, -1.3810809, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float32).reshape((1, 4, 3, 3))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "wrong"
