"""Found by the differential fuzzer (tests/fuzz_models), seed 1050, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 1 elements differ; at [0, 0]: got np.float32(inf), eager np.float32(7.0710676e+29)

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v1 = torch.std(x0, dim=1, keepdim=True)
        return (v1,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 1e+30], dtype=torch.float32).reshape((1, 2))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
