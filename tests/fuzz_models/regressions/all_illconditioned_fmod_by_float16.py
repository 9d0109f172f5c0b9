"""Found by the differential fuzzer (tests/fuzz_models), seed 434185, not minimized:
portable gave `wrong`: call 0 output 2 (float32): 3 of 3 elements differ; at [0, 0]: got np.float32(-0.11858261), eager np.float32(-0.117850184)

Every flow. Not Ember's bug: `fmod(v3, logsumexp(x1.to(float16)))`: a float16 logsumexp one ulp
apart (Ember's and eager's) moves the fmod by the quotient times that ulp. The perturbed
references did not move float16 values; they now move each computed 16-bit value by half to one
of its own ulps (oracle.py), which marks such an output ill-conditioned (session 12).

A fixed Ember matches eager or refuses with an error; fuzz_models.py ctest fails on wrong, crash or invalid."""

import torch
import torch.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('buf', torch.zeros((3, 1)))
    def forward(self, x0, x1):
        v1 = torch.cat([x1, x1], dim=0)
        v2 = x1.to(torch.float16)
        self.buf.add_(x1)
        v3 = self.buf * 2
        v4 = torch.logsumexp(v2, dim=0, keepdim=True)
        v5 = torch.any(v2, dim=0, keepdim=False)
        v6 = v3.unsqueeze(1)
        v7 = v6 / 0.5
        v8 = torch.fmod(v3, v4)
        v9 = torch.flip(v7, [1])
        v10 = torch.where(v5, v8, x1)
        return (v1, v9, v10, self.buf.clone(),)


nan, inf = float('nan'), float('inf')


def inputs():
    return [torch.tensor([1.2261945, 0.9073696, 2.164234, 3.0766456], dtype=torch.float32).reshape((2, 1, 2, 1)).contiguous(memory_format=torch.channels_last),
            torch.tensor([-0.7448382, -1.9836613, -3.881556], dtype=torch.float32).reshape((3, 1))]


CALLS = 2
FLOWS = ['portable', 'cpu', 'loopback']
FOUND = "wrong"
