"""Found by the differential fuzzer (tests/fuzz_models), seed 419812, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 4 elements differ; at [0, 1]: got np.float32(inf), eager np.float32(3e+38)

Not Ember's bug: eager's layer norm of [0, 3e38, 0, 0] is NaN (its float statistics overflow);
Ember's statistics, in double, give the exact [-0.58, 1.73, -0.58, -0.58] * w + b, so the sum
decides the branch the other way (as in exact arithmetic), and relu(3e38) * 2 overflows to +inf,
where eager's other branch gives 3e38 - 1. The exact value, 6e38, rounds to +inf in float32: the
oracle accepts an exact value's overflow to the same infinity (session 12).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = _w((4,), 41981201)
        self.p2 = _w((4,), 41981202)
    def forward(self, x0):
        v3 = F.layer_norm(x0, (4,), self.p1, self.p2)
        v4 = torch.cond(v3.sum() > 0, lambda t: torch.relu(t) * 2, lambda t: t - 1, (x0,))
        return (v4,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 3e+38, 0.0, 0.0], dtype=torch.float32).reshape((1, 4))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
