"""Found by the differential fuzzer (tests/fuzz_models), seed 411152, reduced by hand:
every flow gave `wrong`: 29 of 144 elements differ; got -inf, eager inf (rsqrt of maximum(-0.0, 0.0)).

Open, and not Ember's alone: ATen's own maximum of two equal zeros depends on the element's
position. Its vectorized body (`_mm256_max_ps`: 16 elements a step on AVX2, 32 on AVX-512)
returns the second operand, its scalar tail (`std::max`) the first. torch 2.15 on AVX2 gives
maximum(-0.0, zeros(20)) as +0.0 for elements 0-15 and -0.0 for 16-19 (here 70 elements: 0-63
vectorized on either). Ember gives the first operand everywhere (ATen's scalar form:
BinaryFamily.EqualZerosKeepTheFirstOperandLikeATen), and the rsqrt after it tells the vectorized
elements apart. No rule without positions matches eager here; decide which one Ember keeps
(IEEE 754-2019's maximum, +0.0 for either order, is a third).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0, x2):
        v2 = torch.maximum(x2, x0)
        v7 = torch.rsqrt(v2)
        return (v7,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.zeros((70,), dtype=torch.float32),
            torch.tensor([-0.0], dtype=torch.float32)]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
KNOWN = "ATen's maximum of equal zeros: the second operand in its vectorized body, the first in its scalar tail"
