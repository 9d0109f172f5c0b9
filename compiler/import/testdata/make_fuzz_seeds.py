"""Writes the committed seed corpus of the exported-program fuzz target (exported_program_fuzz.cc).

    PYTHONPATH=python .venv/bin/python compiler/import/testdata/make_fuzz_seeds.py \
        compiler/import/testdata/fuzz_seeds

Small models, each exercising a different part of the importer and the passes: weights, a conv
stack, an in-place write through a view of a buffer (functionalize), a dynamic dim (symbols and
sym_size), several outputs and a scalar argument. Kept tiny (a few KiB each) so the seeds can live in
the repository and every fuzz run starts from them, on a clean clone, without PyTorch.
"""

import os
import sys

import torch

import ember
from export_models import MLP  # the importer tests' model, from this folder


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return torch.flatten(y, 1).mean(dim=1, keepdim=True)


class BufferView(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(2, 3))

    def forward(self, x):
        self.buf[:, 0].add_(x)
        return x * 2, self.buf.sum(0)


class DynamicFlatten(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 2)

    def forward(self, x):
        y = self.fc(torch.flatten(torch.relu(x), 1))
        return torch.cat([y, y * 0.5], dim=1).softmax(-1)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = [
        ("mlp", MLP(), (torch.randn(2, 4),), None),
        ("conv", Conv(), (torch.randn(1, 2, 4, 4),), None),
        ("buffer_view", BufferView(), (torch.ones(2),), None),
        ("dynamic_flatten", DynamicFlatten(), (torch.randn(3, 2, 3),),
         [{0: ember.Dim("batch", 1, 8)}]),
    ]
    for name, module, inputs, dynamic in models:
        ember.export(module.eval(), inputs, os.path.join(out, name + ".ep"), dynamic_shapes=dynamic)


if __name__ == "__main__":
    main(sys.argv[1])
