"""Found by the differential fuzzer (tests/fuzz_models), seed 1010, minimized:
portable, cpu, loopback gave `invalid`: execute call 0: instruction 0 (aten::tanh.out): tanh: not implemented for dtype float16

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('buf', torch.zeros((1, 3, 1)))
    def forward(self, x0):
        self.buf.mul_(torch.tanh(x0))
        return (self.buf.clone(),)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-0.1418], dtype=torch.float16).reshape((1, 1, 1))]


CALLS = 2
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "invalid"
