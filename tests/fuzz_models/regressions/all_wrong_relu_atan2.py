"""Found by the differential fuzzer (tests/fuzz_models), seed 305496, minimized:
portable gave `wrong`: call 0 output 0 (float32): 1 of 1 elements differ; at [0, 0, 0, 0]: got np.float32(0.0), eager np.float32(-3.1415927)

relu(-0.0) is -0.0 in ATen (clamp_min keeps an input equal to the bound), and atan2(-0.0, -0.0)
is -pi; Ember's relu gave +0.0 (maximum, minimum and clamp with tensor bounds had the same habit).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x0):
        v1 = torch.relu(x0)
        v4 = torch.atan2(v1, v1)
        return (v4,)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([-0.0], dtype=torch.float32).reshape((1, 1, 1, 1)).contiguous(memory_format=torch.channels_last)]


CALLS = 1
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
