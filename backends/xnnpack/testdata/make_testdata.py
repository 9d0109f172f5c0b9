# Writes the XNNPACK payloads of testdata/fuzz_seeds and the programs of testdata/programs (README.md):
#   .venv/bin/python backends/xnnpack/testdata/make_testdata.py SEEDS_DIR PROGRAMS_DIR
# Each model is exported by torch.export, lowered by ExecuTorch's XnnpackPartitioner
# (to_edge_transform_and_lower), and its lowered module's processed_bytes saved as NAME.xnn; the
# whole program as NAME.pte. Quantized models go through XNNPACKQuantizer (static int8 per channel,
# and dynamic).
import os, sys, torch, executorch
from executorch.exir import to_edge_transform_and_lower
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
seeds, programs = sys.argv[1], sys.argv[2]
os.makedirs(seeds, exist_ok=True)
os.makedirs(programs, exist_ok=True)
torch.manual_seed(0)

class MLP(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.a = torch.nn.Linear(4, 8); s.b = torch.nn.Linear(8, 3)
    def forward(s, x): return s.b(torch.relu(s.a(x)))
class Conv(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.c = torch.nn.Conv2d(3, 4, 3, padding=1); s.d = torch.nn.Conv2d(4, 4, 3, groups=4)
    def forward(s, x):
        y = torch.nn.functional.max_pool2d(torch.relu(s.c(x)), 2)
        return torch.sigmoid(s.d(y)).mean((2, 3))
class Add(torch.nn.Module):
    def forward(s, x, y): return x + y * y
class Misc(torch.nn.Module):
    def forward(s, x):
        y = torch.cat([x, torch.tanh(x)], 1)
        return torch.softmax(y.reshape(2, -1), -1)

def lower(model, inputs, name, quant=None):
    model = model.eval()
    if quant is not None:
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
        from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e, convert_pt2e
        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(**quant))
        m = torch.export.export(model, inputs).module()
        m = prepare_pt2e(m, q); m(*inputs); model = convert_pt2e(m)
    ep = torch.export.export(model, inputs)
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    gm = edge.exported_program().graph_module
    blobs = [getattr(gm, n).processed_bytes for n in dir(gm) if n.startswith("lowered_module_")]
    for i, b in enumerate(blobs):
        with open(os.path.join(seeds, f"{name}.xnn" if i == 0 else f"{name}_{i}.xnn"), "wb") as f: f.write(b)
    prog = edge.to_executorch()
    with open(os.path.join(programs, f"{name}.pte"), "wb") as f: f.write(prog.buffer)
    print(name, [len(b) for b in blobs], len(prog.buffer))

lower(MLP(), (torch.randn(2, 4),), "mlp")
lower(Conv(), (torch.randn(1, 3, 8, 8),), "convnet")
lower(Add(), (torch.randn(2, 3), torch.randn(2, 3)), "add")
lower(Misc(), (torch.randn(2, 3, 4),), "misc")
try:
    lower(MLP(), (torch.randn(2, 4),), "mlp_qs8", dict(is_per_channel=True))
except Exception as e: print("static quant failed", e)
try:
    lower(MLP(), (torch.randn(2, 4),), "mlp_qd8", dict(is_per_channel=True, is_dynamic=True))
except Exception as e: print("dynamic quant failed", e)
try:
    lower(Conv(), (torch.randn(1, 3, 8, 8),), "convnet_qs8", dict(is_per_channel=True))
except Exception as e: print("conv quant failed", e)
# Last, so that the models above draw the same random weights as before it was added.
class Deconv(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.c = torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
    def forward(s, x): return torch.relu(s.c(x))
lower(Deconv(), (torch.randn(1, 3, 5, 6),), "deconv")
import importlib.metadata
print("executorch", importlib.metadata.version("executorch"))
