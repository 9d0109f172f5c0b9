"""Exports the cpu backend's benchmark models with their eager reference.

    PYTHONPATH=python .venv/bin/python bench/cpu_backend_models.py OUT_DIR [resnet18 mobilenet_v2]

Writes OUT_DIR/NAME.ep (the exported program), NAME.input.bin and NAME.output.bin (float32, raw,
row-major): the random input (seed 0) and eager PyTorch's output for it, in fp32 eval mode.
bench/cpu_backend_bench.cc and the EMBER_CPU_TEST_MODEL test read them.
"""

import os
import sys

import torch
import torchvision.models as models

import ember


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or ["resnet18", "mobilenet_v2"]
    os.makedirs(out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        model = getattr(models, name)().eval()
        x = torch.randn(1, 3, 224, 224)
        with torch.no_grad():
            y = model(x)
        ember.export(model, (x,), os.path.join(out, name + ".ep"))
        x.numpy().tofile(os.path.join(out, name + ".input.bin"))
        y.numpy().tofile(os.path.join(out, name + ".output.bin"))
        print(name, "top-1", int(y.argmax()))


if __name__ == "__main__":
    main()
