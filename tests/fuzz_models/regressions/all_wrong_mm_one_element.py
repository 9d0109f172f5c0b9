"""Found by the differential fuzzer (tests/fuzz_models), seed 106352, minimized by hand:
portable, cpu, loopback gave `wrong`: atan2 of a 2-D matmul over one element gave pi where eager
gives -pi. Eager's mm over one element is the product itself (0 * -x is -0.0); the sums of
Ember's GEMM started from +0.0 (and oneDNN's still do: the cpu backend leaves such matmuls
portable). Sums over two or more elements start from +0.0 in eager too.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0, x1):
        v1 = torch.mm(x0, x1)
        v2 = torch.atan2(torch.zeros_like(v1) - 0.0, v1)
        return (v1, v2)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, -0.0, 0.0], dtype=torch.float32).reshape((3, 1)),
            torch.tensor([-0.5, 2.0, -1.0, 0.25], dtype=torch.float32).reshape((1, 4))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
