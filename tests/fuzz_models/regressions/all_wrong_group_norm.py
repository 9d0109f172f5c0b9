"""Found by the differential fuzzer (tests/fuzz_models), seed 3000581, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 10 of 10 elements differ; at [0, 0, 0]: got np.float32(nan), eager np.float32(-0.6864013)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p3 = _w((5,), 300058103)
        self.p4 = _w((5,), 300058104)
    def forward(self, x1):
        v11 = F.group_norm(x1, 1, self.p3, self.p4)
        return (v11,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, -2.3231121e+38, 0.0, -2.3542953e+38, 0.0, 0.0], dtype=torch.float32).reshape((1, 5, 2))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
