"""Found by the differential fuzzer (tests/fuzz_models), seed 303374, minimized:
portable gave `wrong`: call 0 output 0 (float32): 2 of 2 elements differ; at [0, 0, 0, 0]: got np.float32(0.60391873), eager np.float32(nan)

Not an Ember bug: the oracle's (every flow gave it). nan_to_num(-inf) is float32's lowest,
-3.4028235e38, and eager's float32 layer norm of [-3.4e38, 0] overflows to NaN, where Ember's (its
statistics in double) gives the finite result. The float64 references should have shown that: but
there nan_to_num gave float64's lowest, and the layer norm overflowed in float64 too. The widened
runs now replace infinities by float32's limits, so exact arithmetic has a value and eager's NaN
is its own (compare()).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p5 = _w((2,), 30337405)
        self.p6 = _w((2,), 30337406)
    def forward(self, x0):
        v5 = torch.nan_to_num(x0)
        v8 = F.layer_norm(v5, (2,), self.p5, self.p6)
        return (v8,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-inf, 0.0], dtype=torch.float32).reshape((1, 1, 1, 2))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
