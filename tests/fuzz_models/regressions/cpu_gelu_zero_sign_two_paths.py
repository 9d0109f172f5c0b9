"""Written by hand beside cpu_wrong_gelu_div.py (seed 401770): the same program on two elements.

ATen's CPU gelu has two paths: a contiguous float32 tensor of more than one element goes to
oneDNN's gelu_erf (use_mkldnn), which gives +0.0 for -0.0 and below about -5.5; a one-element or
strided tensor, or torch.backends.mkldnn off, gets ATen's formula x / 2 * (1 + erf(x / sqrt 2)),
which gives -0.0 there. So eager's x / gelu(x) is -inf here and +inf on one element. Ember's cpu
backend computes the formula on any size (backends/cpu/kernels/nan_exact.cc); the oracle accepts either
path's result (fuzz_models.py: run_eager onednn=False), as both are PyTorch's.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v5 = F.gelu(x0)
        v7 = torch.div(x0, v5)
        return (v7,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-3e+38, -7.0, -0.0, 1.5], dtype=torch.float32).reshape((1, 4))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
