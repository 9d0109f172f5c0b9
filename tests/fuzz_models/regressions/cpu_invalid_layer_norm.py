"""Found by the differential fuzzer (tests/fuzz_models), seed 1041, minimized:
cpu gave `invalid`: load method: loading method 'forward': delegate 0: backend 'cpu' failed to init: cpu delegate: op 0: oneDNN refused it: could not create a descriptor for a layer normalization forward propagation primitive

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = _w((1,), 104101)
        self.p2 = _w((1,), 104102)
    def forward(self, x1):
        v3 = F.layer_norm(x1, (1,), self.p1, self.p2)
        return (v3,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.39256757], dtype=torch.float32).reshape((1,))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "invalid"
