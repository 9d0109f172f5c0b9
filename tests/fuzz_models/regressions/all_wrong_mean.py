"""Found by the differential fuzzer (tests/fuzz_models), seed 202343, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 4 elements differ; at [0, 2, 0, 0]: got np.float32(0.0), eager np.float32(0.08592692)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v3 = torch.mean(x0, dim=3, keepdim=True)
        return (v3,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3e+38, 0.4296346, -3e+38, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float32).reshape((1, 4, 1, 5))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
