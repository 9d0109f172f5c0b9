"""Found by the differential fuzzer (tests/fuzz_models), seed 100011, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (bfloat16): 1 of 2 elements differ; at [0, 0, 1, 0]: got np.float32(inf), eager np.float32(nan)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x1):
        v4 = F.gelu(x1)
        return (v4,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, inf], dtype=torch.bfloat16).reshape((1, 1, 2, 1))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
