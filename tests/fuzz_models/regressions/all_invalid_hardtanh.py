"""Found by the differential fuzzer (tests/fuzz_models), seed 24, minimized:
portable, cpu, loopback gave `invalid`: execute call 0: instruction 0 (aten::hardtanh.out): hardtanh: not implemented for dtype float16

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v5 = F.hardtanh(x0)
        return (v5,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-3.19], dtype=torch.float16).reshape((1, 1))]


CALLS = 1
FLOWS = ["portable", "cpu", "loopback"]
FOUND = "invalid"
