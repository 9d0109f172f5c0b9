"""Found by the differential fuzzer (tests/fuzz_models), seed 402183, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (bfloat16): 1 of 2 elements differ; at [0, 0, 0]: got np.float32(3.0040553e+38), eager np.float32(inf)

Not an Ember bug: the oracle's. bfloat16 gelu(3e38) overflows inside eager's kernel (inf), where
Ember gives 3.004e38, gelu's exact value; the float64 reference keeps the bfloat16 cast and
overflows as eager does. The oracle now also accepts, where eager is infinite and exact arithmetic
finite, a value within tolerance of the exact one (compare()).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v5 = x0.to(torch.bfloat16)
        v8 = F.gelu(v5)
        return (v8,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([3e+38, 0.0], dtype=torch.float32).reshape((1, 1, 2))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
