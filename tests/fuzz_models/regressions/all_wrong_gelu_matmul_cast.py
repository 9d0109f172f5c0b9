"""Found by the differential fuzzer (tests/fuzz_models), seed 401784, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float16): 1 of 1 elements differ; at [0, 0, 0]: got np.float16(inf), eager np.float16(-inf)

Not an Ember bug: the oracle's. A dot product of terms near 1e38 cancels, and which sign the
float32 sum ends with is a matter of summation order; cast to float16 it is +inf or -inf. The
references agreed on "infinite" but not on its sign; the oracle now leaves out elements whose
infinities differ in sign between eager and the references (compare()).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x3, x2):
        v7 = F.gelu(x2)
        v10 = torch.matmul(v7, x3)
        v12 = v10.to(torch.float16)
        return (v12,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, 1.9077563, -0.62356687, -1.2492945], dtype=torch.float32).reshape((6, 1)),
            torch.tensor([0.0, 0.0, 0.0, 1.2472055e+38, 1.8942485e+38, 2.69183e+36], dtype=torch.float32).reshape((1, 1, 6))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
