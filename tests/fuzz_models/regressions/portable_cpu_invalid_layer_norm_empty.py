"""Found by the differential fuzzer (tests/fuzz_models), seed 95, minimized:
portable, cpu gave `invalid`: load: portable.pte: constant segment: segment 0 is used but the file has no extended header giving a segment base

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = _w((0,), 9501)
        self.p2 = _w((0,), 9502)
    def forward(self, x1):
        v3 = F.layer_norm(x1, (0,), self.p1, self.p2)
        return (v3,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([], dtype=torch.float32).reshape((1, 1, 1, 1, 0))]


CALLS = 1
FLOWS = ['portable', 'cpu']
FOUND = "invalid"
