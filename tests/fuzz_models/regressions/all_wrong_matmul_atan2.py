"""Found by the differential fuzzer (tests/fuzz_models), seed 202478, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 1 elements differ; at [0, 0, 0]: got np.float32(3.1415927), eager np.float32(0.0)

Eager's own paths disagree on the sign of this zero: a 2-D matmul over one element gives the
product (-0.0 here), a 3-D one and every longer sum +0.0, and torch.export turns this 3-D matmul
into the 2-D `mm` Ember runs. atan2 turns the sign into 0 or pi, so the generator now gives
atan2 exact operands only (gen.py). Since session 12 the oracle's other eager run computes a
matmul over one element as the product (OtherKernels in fuzz_models.py, checked against ATen's
GEMM), which Ember's result is: it matches.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0, x2):
        v2 = torch.matmul(x0, x2)
        v3 = torch.atan2(x2, v2)
        return (v3,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-1.9679235], dtype=torch.float32).reshape((1, 1, 1)),
            torch.tensor([0.0], dtype=torch.float32).reshape((1, 1))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
