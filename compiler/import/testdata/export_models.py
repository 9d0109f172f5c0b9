"""Exports the importer test's models with ember.export and writes what PyTorch says about them.

    PYTHONPATH=python .venv/bin/python compiler/import/testdata/export_models.py OUT_DIR

OUT_DIR/<model>.ep are the exported programs; OUT_DIR/expected.json holds, per model, PyTorch's
own view: state_dict names, dtypes, shapes and bytes (hex, small models only), and eager output
shapes. The C++ test compares the importer's program against these.
"""

import json
import os
import sys

import torch

import ember


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class BufferView(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(2, 3))

    def forward(self, x):
        self.buf[:, 0].add_(x)
        return x * 2


def state_of(module, with_bytes):
    state = {}
    for name, t in module.state_dict().items():
        entry = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)}
        if with_bytes:
            entry["hex"] = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex()
        state[name] = entry
    return state


def main(out):
    os.makedirs(out, exist_ok=True)
    expected = {}
    torch.manual_seed(0)
    models = [
        ("mlp", MLP().eval(), (torch.randn(2, 4),), None, True),
        ("buffer_view", BufferView().eval(), (torch.ones(2),), None, True),
        ("dynamic_mlp", MLP().eval(), (torch.randn(3, 4),),
         [{0: ember.Dim("batch", 1, 8)}], True),
    ]
    try:
        import torchvision

        models.append(("resnet18", torchvision.models.resnet18().eval(),
                       (torch.randn(1, 3, 64, 64),), None, False))
    except ImportError:
        pass
    for name, module, inputs, dynamic, with_bytes in models:
        state = state_of(module, with_bytes)  # the values the file must hold
        saved = {k: v.clone() for k, v in module.state_dict().items()}
        with torch.no_grad():
            outputs = module(*[x.clone() for x in inputs])
        module.load_state_dict(saved)  # eager forward may have written buffers in place
        ember.export(module, inputs, os.path.join(out, name + ".ep"), dynamic_shapes=dynamic)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        expected[name] = {"state": state, "output_shapes": [list(o.shape) for o in outputs]}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1])
