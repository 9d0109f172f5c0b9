"""Found by the differential fuzzer (tests/fuzz_models), seed 100095, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 3 elements differ; at [0, 0]: got np.float32(-inf), eager np.float32(-2.360464e+38)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p4 = _w((3, 5), 10009504)
        self.p5 = _w((3,), 10009505)
    def forward(self, x1):
        v7 = F.linear(x1, self.p4, self.p5)
        return (v7,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, -2.183644e+38, -1.69965e+38, -1.4308081e+38], dtype=torch.float32).reshape((1, 5))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
