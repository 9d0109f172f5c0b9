"""Found by the differential fuzzer (tests/fuzz_models), seed 424044, minimized:
portable, cpu, loopback gave `invalid`: execute call 0: instruction 0 (aten::_softmax.out): _softmax: only float32, float64 and bfloat16 are supported, got float16

A float16 softmax compiled, then the portable kernel refused float16 at execute (libtorch 1.13,
once its reference, has no float16 softmax; PyTorch 2 has). Fixed in session 12: float16
softmax and log_softmax compute in float32 and round, as PyTorch 2's CPU kernels do.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x3):
        v8 = torch.softmax(x3, dim=0)
        return (v8,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0], dtype=torch.float16).reshape((1, 1, 1))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "invalid"
