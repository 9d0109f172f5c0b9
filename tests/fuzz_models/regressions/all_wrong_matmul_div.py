"""Found by the differential fuzzer (tests/fuzz_models), seed 418796, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 4 elements differ; at [0, 0, 3, 0]: got np.float32(inf), eager np.float32(-inf)

Not Ember's bug: eager's own kernels disagree on the sign of a zero product over one element
(K = 1). This (1, 4, 1) @ (1, 1) folds to an mm of 4x1 by 1x1, which ATen runs as a
matrix-vector product that adds -0.5 * 0 to +0.0 (+0.0; -0.5 / +0.0 is -inf), while its GEMM
gives the product itself (-0.0) for an mm of 3x1 by 1x4 (all_wrong_mm_one_element.py), and so
does Ember everywhere. The oracle's other eager run computes a matmul over one element as the
product (fuzz_models.py, OtherKernels) and accepts it (session 12, torch 2.15 on Sapphire Rapids).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0, x1, x2):
        v3 = torch.matmul(x0, x1)
        v5 = torch.div(x2, v3)
        return (v5,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([0.0, 0.0, 0.0, -0.5], dtype=torch.float32).reshape((1, 4, 1)),
            torch.tensor([0.0], dtype=torch.float32).reshape((1, 1)),
            torch.tensor([0.0, 0.0, 0.0, -0.5], dtype=torch.float32).reshape((1, 1, 4, 1))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
