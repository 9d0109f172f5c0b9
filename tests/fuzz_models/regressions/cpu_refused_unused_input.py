"""Found by the differential fuzzer (tests/fuzz_models), seed 100180, minimized by hand:
cpu gave `refused`: "backend 'cpu', partition 0 (nodes convolution): preprocess failed: cpu
backend: input %x0 is not a float32 tensor, static but for its batch".

A partition holding the whole graph takes every graph input, used or not (C17); the cpu backend's
preprocess refused the unused float16 input, which failed the whole compile (21 of the 22 cpu
refusals of the 7,184-program run). A fixed Ember runs it on the cpu flow."""

import torch
import torch.nn.functional as F


def _w(shape, seed):  # a weight, the same on every machine
    g = torch.Generator().manual_seed(seed)
    return torch.nn.Parameter(torch.randn(shape, generator=g) * 0.5, requires_grad=False)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p1 = _w((3, 2, 1), 10018001)
        self.p2 = _w((3,), 10018002)
    def forward(self, x0, x1):
        v1 = F.conv1d(x1, self.p1, self.p2, stride=2, padding=0, dilation=2, groups=1)
        return (v1,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([1.0, -2.0, inf, 0.5], dtype=torch.float16).reshape((1, 2, 2)),
            torch.tensor([-0.016570562, 0.60630715, 0.6958652, -2.6237588, 0.16913418, 0.73038685,
                          inf, 0.23742265, 0.89947003, inf, -0.07922847, -0.9226691, 1.1267773,
                          0.56060475, 0.78825307, 1.8274795], dtype=torch.float32).reshape((1, 2, 8))]


CALLS = 1
FLOWS = ['cpu']
FOUND = "refused"
