"""Found by the differential fuzzer (tests/fuzz_models), seed 1021, minimized:
portable, cpu, loopback gave `invalid`: execute call 0: instruction 0 (aten::mul.out): cannot resize a static tensor: dim 0 is 4, the requested size is 1

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('buf', torch.zeros((4,)))
    def forward(self, x1_):
        self.buf.copy_(x1_)
        v6 = self.buf * 2
        return (v6, self.buf.clone(),)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([1.0], dtype=torch.float32).reshape((1,))]


CALLS = 2
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "invalid"
