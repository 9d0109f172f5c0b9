"""Written by hand from the fuzzer's gelu findings (seeds 100011, 100748, 101670, 102660, 103245,
200420): gelu of +-inf in float32. Eager's vectorized kernel (contiguous float32, float16 and
bfloat16 tensors of two or more elements) gives NaN for +inf, its scalar one (one element, a
strided tensor, a transposed view cast to float16) and float64 give inf, as exact arithmetic does;
Ember gives inf (as ExecuTorch's portable kernel does), and the fuzzer does not compare an element
where eager alone gives NaN and exact arithmetic a value. gelu(-inf) is NaN everywhere (-inf * 0).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v1 = F.gelu(x0)
        v2 = F.gelu(x0 * 2, approximate="tanh")
        return (v1, v2)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([inf, -inf, 1.0, -1.0, 0.0, nan, -0.0, 3e38], dtype=torch.float32).reshape((2, 4))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
