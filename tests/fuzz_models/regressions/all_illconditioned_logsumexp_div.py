"""Found by the differential fuzzer (tests/fuzz_models), seed 407035, minimized:
portable, cpu, loopback gave `wrong`: call 0 output 0 (float32): 1 of 1 elements differ; at [0, 0]: got np.float32(-3.1580642e+37), eager np.float32(inf)

Not an Ember bug: logsumexp(log_softmax(y)) is 0 in exact arithmetic for any y, and a rounding
residue of either sign (or 0) in float32, so 1e30 divided by it is +inf in eager and -3e37 on
every flow, both honest float32 evaluations. The oracle's perturbed reference now moves every
intermediate value by one float32 rounding too (fuzz_models.py, Float32AsFloat64 perturb), which
shows the element as ill-conditioned: not compared. Kept so that the oracle keeps saying so.

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x1, x2):
        v1 = torch.log_softmax(x1, dim=0)
        v5 = torch.logsumexp(v1, dim=0, keepdim=True)
        v9 = torch.div(x2, v5)
        return (v9,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([1.0757903, -3.5587854], dtype=torch.float32).reshape((2, 1)),
            torch.tensor([1e+30], dtype=torch.float32).reshape((1, 1))]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
