"""Written by hand next to all_invalid_buf_copy_buf_read.py (seed 1021): copy_ into buffers that
broadcasts (3, 1) -> (3, 4) and (4,) -> (2, 4) and casts float64 and int64 to float32.
torch.export's run_decompositions dropped each copy_ and gave the buffers the source's shape
and dtype; ember.export now spells out the cast and the broadcast first (_capture.py).
Portable, cpu and loopback gave `invalid` (or wrong values) before the fix.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('wide', torch.zeros((3, 4)))
        self.register_buffer('from_f64', torch.zeros((4,)))
        self.register_buffer('from_int', torch.zeros((2, 4)))
        self.register_buffer('acc', torch.zeros((3, 4)))
    def forward(self, x1_, x2_, x3_):
        self.wide.copy_(x1_)
        self.from_f64.copy_(x2_)
        self.from_int.copy_(x3_)
        self.acc.add_(self.wide)
        return (self.wide + 1, self.from_f64 / 3, self.from_int * 0.5, self.acc.clone(),)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([[0.5], [-1.25], [2.0]], dtype=torch.float32),
            torch.tensor([0.1, -0.2, 0.3, 1e-40], dtype=torch.float64),
            torch.tensor([3, -1, 0, 7], dtype=torch.int64)]


CALLS = 2
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "invalid"
