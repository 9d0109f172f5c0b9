"""End-to-end tests of `ember compile`: export with ember.export, compile, run with Ember's runtime
and compare with eager PyTorch (fp32: rtol 1e-4), and the same programs on ExecuTorch's runtime.

Every model is exported once and compiled five times: portable with weights in the .pte, portable
with a .ptd, delegated to the reference backend (`--backend loopback`, its named data in the .pte),
delegated with a .ptd, and delegated to the cpu backend; each run is compared with eager. The two
portable programs also run on ExecuTorch's own runtime (pip executorch), which must give Ember's
outputs, and `ember compile`'s claim that ExecuTorch runs them is checked. Then the model is
exported with ExecuTorch's own exporter, and Ember's runtime must run that program with
ExecuTorch's and eager's outputs (docs/compatibility.md). `--model delegation` runs the models of
the delegation contracts (C16-C20) the same way, with their extra checks.

    .venv/bin/python e2e_test.py --ember EMBER --runner RUNNER --python-dir DIR --work DIR [--model M]

Each group of models is one CTest test; every model must pass (a model that is not required may
exit 77, CTest's skip, when Ember lacks one of its ops; none is marked so today).
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch

SKIP = 77


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class BufferViewAdd(torch.nn.Module):  # C1 test 1
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(2, 2))

    def forward(self, x):
        b = self.buf.view(-1)
        b.add_(1)
        return x + self.buf


class BufferViewNoGrad(BufferViewAdd):  # C1 test 3
    def forward(self, x):
        with torch.no_grad():
            self.buf.view(-1).add_(1)
        return x + self.buf


class BufferViewAutocast(BufferViewAdd):  # C1 test 3, autocast
    def forward(self, x):
        with torch.autocast("cpu"):
            self.buf.view(-1).add_(1)
        return x + self.buf


class DynamicFlatten(torch.nn.Module):  # a dynamic batch through a reshape (sym_size)
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(x), 1))


class WeightSelectMul(torch.nn.Module):  # C1 test 2
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.arange(4.0))

    def forward(self, x):
        self.w.view(2, 2)[0].mul_(10)
        return x + self.w


class BufferColumn(torch.nn.Module):  # self.buf[:, 0].add_(x)
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(2, 3))

    def forward(self, x):
        self.buf[:, 0].add_(x)
        return self.buf * 1.0


class FoldControl(torch.nn.Module):  # C1 test 5
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.arange(4.0))

    def forward(self, x):
        return x + (self.w * 2 + 1)


class ConstantK(torch.nn.Module):  # C2
    def __init__(self):
        super().__init__()
        self.k = torch.ones(3, 4)

    def forward(self, x):
        return x @ self.k.T


class SharedBuffers(torch.nn.Module):  # C3
    def __init__(self):
        super().__init__()
        t = torch.arange(4.0)
        self.register_buffer("a", t)
        self.register_buffer("b", t)
        self.register_buffer("c", torch.arange(4.0))

    def forward(self, x):
        return x + self.a * 2 + self.b + self.c


class InputWrite(torch.nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x + 1


class TorchCond(torch.nn.Module):  # C4: a real torch.cond, captured by torch.export
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: torch.relu(self.lin(t)), lambda t: t * 2 - 1,
                          (x,))


class ChannelsLastConv(torch.nn.Module):  # C24: a channels-last input and output
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


class MatmulConstant(torch.nn.Module):  # C7: a batched matmul by a buffer or a plain attribute
    def __init__(self, as_buffer):
        super().__init__()
        c = torch.randn(2, 4, 5)
        if as_buffer:
            self.register_buffer("c", c)
        else:
            self.c = c

    def forward(self, x):
        return x @ self.c


class StackOutput(torch.nn.Module):  # C8: a stack that is the program's output
    def forward(self, x, y):
        return torch.stack([x, y])


class StackTwoUsers(torch.nn.Module):  # C8: a stack read by two consumers
    def forward(self, x, y):
        s = torch.stack([x, y])
        return s + 1, s * 2


class SelectElement(torch.nn.Module):  # C9: x[1] * 2 keeps the selected element, shape ()
    def forward(self, x):
        return x[1] * 2


class SoftmaxLast(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2, -1)


class Fn(torch.nn.Module):  # a function of the inputs as a module (the core-op models)
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class Recurrent(torch.nn.Module):  # nn.LSTM / nn.GRU with their states as flat outputs
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(4, 8, num_layers=2, batch_first=True)

    def forward(self, x):
        out, state = self.rnn(x)
        return (out,) + (tuple(state) if isinstance(state, tuple) else (state,))


class SymOps(torch.nn.Module):  # symbolic-int arithmetic at run time (aten::sym_size + prim ops)
    def forward(self, x):
        n = x.shape[0]
        y = x.reshape(n * 3, -1)
        z = torch.zeros(n // 2 + 1, 2)
        return y * 2, z + 1


class BatchFirstAttention(torch.nn.Module):
    """Eval nn.MultiheadAttention(batch_first=True): PyTorch 1.13 runs it through the fused
    _native_multi_head_attention without gradients (as the exporter captures), which the exporter
    decomposes; with and without attention weights, and with a key padding mask."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x, pad):
        out, weights = self.mha(x, x, x)
        masked, _ = self.mha(x, x, x, key_padding_mask=pad, need_weights=False)
        return out, weights, masked


class Decoder(torch.nn.Module):
    """A small Llama-style decoder layer with an in-place KV cache."""

    def __init__(self, vocab=32, dim=16, heads=2, max_len=8):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.wq = torch.nn.Linear(dim, dim, bias=False)
        self.wk = torch.nn.Linear(dim, dim, bias=False)
        self.wv = torch.nn.Linear(dim, dim, bias=False)
        self.wo = torch.nn.Linear(dim, dim, bias=False)
        self.w1 = torch.nn.Linear(dim, 2 * dim, bias=False)
        self.w2 = torch.nn.Linear(2 * dim, dim, bias=False)
        self.norm = torch.nn.Parameter(torch.ones(dim))
        self.out = torch.nn.Linear(dim, vocab, bias=False)
        self.heads, self.dim, self.max_len = heads, dim, max_len
        self.register_buffer("k_cache", torch.zeros(1, max_len, dim))
        self.register_buffer("v_cache", torch.zeros(1, max_len, dim))

    def rms(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm

    def forward(self, tokens, input_pos):
        h = self.emb(tokens)  # [1, 1, dim]
        x = self.rms(h)
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        self.k_cache[:, input_pos] = k
        self.v_cache[:, input_pos] = v
        hd = self.dim // self.heads
        qh = q.view(1, 1, self.heads, hd).transpose(1, 2)
        kh = self.k_cache.view(1, self.max_len, self.heads, hd).transpose(1, 2)
        vh = self.v_cache.view(1, self.max_len, self.heads, hd).transpose(1, 2)
        scores = (qh @ kh.transpose(2, 3)) / (hd ** 0.5)
        mask = torch.arange(self.max_len) > input_pos
        scores = scores.masked_fill(mask, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ vh
        h = h + self.wo(att.transpose(1, 2).reshape(1, 1, self.dim))
        h = h + self.w2(torch.nn.functional.silu(self.w1(self.rms(h))))
        return self.out(self.rms(h))


class BufferCumsum(torch.nn.Module):  # C16 test 2 (cumsum kept portable by a compile spec)
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.arange(4.0))

    def forward(self, x):
        a = x + self.buf
        self.buf.add_(x.cumsum(0))
        return a * 2 + self.buf


class UnusedInput(torch.nn.Module):  # C17
    def forward(self, x, unused, y):
        return x + y


class WhereIndex(torch.nn.Module):  # C18
    def forward(self, x, idx, mask):
        return torch.where(mask, x, 0.0)[idx]


class SharedWeight(torch.nn.Module):  # C19
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x) + torch.nn.functional.linear(x, self.lin.weight)


class CloneWrite(torch.nn.Module):  # C20
    def __init__(self):
        super().__init__()
        self.c = torch.arange(12.0).reshape(4, 3)

    def forward(self, x):
        y = self.c.clone()
        y[0:2] = x
        return y


class EluFamily(torch.nn.Module):  # C30 test 1: plain ELU, delegated to the cpu backend
    def __init__(self):
        super().__init__()
        self.elu = torch.nn.ELU(alpha=0.5)

    def forward(self, x):
        return torch.nn.functional.elu(x) + self.elu(x * 2)


class SeluCelu(torch.nn.Module):  # C30 test 2: ELU with scale or input_scale, never claimed
    def forward(self, x):
        return torch.nn.functional.selu(x) + torch.nn.functional.celu(x, 2.0)


def torchvision_model(name):
    import torchvision
    return getattr(torchvision.models, name)()


# name: (factory, list of calls (each a tuple of inputs), dynamic_shapes, required)
def models():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)
    return {
        "mlp": (MLP, [(r(2, 4),)], None, True),
        "convnet": (ConvNet, [(r(1, 3, 16, 16),)], None, True),
        "dynamic_mlp": (MLP, [(r(3, 4),), (r(8, 4),), (r(1, 4),)],
                        "batch", True),
        "buffer_view_add": (BufferViewAdd, [(torch.zeros(2, 2),), (torch.zeros(2, 2),)], None, True),
        "buffer_view_no_grad": (BufferViewNoGrad, [(torch.zeros(2, 2),), (torch.zeros(2, 2),)],
                                None, True),
        "buffer_view_autocast": (BufferViewAutocast, [(torch.zeros(2, 2),), (torch.zeros(2, 2),)],
                                 None, True),
        "dynamic_flatten": (DynamicFlatten, [(r(3, 2, 3),), (r(7, 2, 3),)], "batch", True),
        # Batch 2 again after 5: a build the cpu backend kept.
        "dynamic_convnet": (ConvNet, [(r(2, 3, 16, 16),), (r(5, 3, 16, 16),), (r(2, 3, 16, 16),),
                                      (r(1, 3, 16, 16),), (r(8, 3, 16, 16),)], "batch", True),
        # A dynamic last dim: symbolic strides must still give a contiguous dim order.
        "dynamic_last_dim": (SoftmaxLast,
                             [(r(2, 5),), (r(2, 16),), (r(2, 2),)], "last", True),
        "weight_select_mul": (WeightSelectMul, [(torch.zeros(4),), (torch.zeros(4),)], None, True),
        "buffer_column": (BufferColumn, [(r(2),), (r(2),), (r(2),)], None, True),
        "fold_control": (FoldControl, [(r(4),)], None, True),
        "constant_k": (ConstantK, [(r(2, 4),)], None, True),
        "shared_buffers": (SharedBuffers, [(r(4),)], None, True),
        "input_write": (InputWrite, [(r(3),)], None, True),
        # The batch bound starts at 2: PyTorch 1.13's tracing assumes n // 2 + 1 != 1.
        "sym_ops": (SymOps, [(r(4, 6),), (r(7, 6),), (r(2, 6),)], "batch2", True),
        "mha_batch_first": (BatchFirstAttention,
                            [(r(2, 5, 16), torch.tensor([[False] * 5, [False] * 3 + [True] * 2]))],
                            None, True),
        "resnet18": (lambda: torchvision_model("resnet18"), [(r(1, 3, 64, 64),)], None, True),
        # 224x224, the size it is used at: its first four blocks' expanded tensors outgrow a
        # core's L2, so the cpu backend runs them on its fused kernel (docs/backends/cpu.md).
        "mobilenet_v2": (lambda: torchvision_model("mobilenet_v2"), [(r(1, 3, 224, 224),)], None,
                         True),
        # PyTorch 1.13 runs an eval-mode encoder layer with ReLU/GELU as one fused op
        # (_transformer_encoder_layer_fwd), which the exporter decomposes into ATen ops.
        "transformer_fastpath": (lambda: torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), 2,
            enable_nested_tensor=False),
            [(r(1, 5, 32),)], None, True),
        "transformer_fastpath_gelu_norm_first": (lambda: torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                             activation="gelu", norm_first=True), 2,
            enable_nested_tensor=False),
            [(r(2, 5, 32),)], None, True),
        # batch_first=False keeps both the layer and its attention off PyTorch's fused fast path.
        "transformer": (lambda: torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0), 2,
            enable_nested_tensor=False),
            [(r(5, 1, 32),)], None, True),
        "llama_kv_cache": (Decoder, [(torch.tensor([[3]]), torch.tensor([0])),
                                     (torch.tensor([[7]]), torch.tensor([1])),
                                     (torch.tensor([[1]]), torch.tensor([2]))], None, True),
        # C4: both branches of a torch.cond, chosen at run time by the data.
        "c4_torch_cond": (TorchCond, [(r(2, 4).abs() + 0.1,), (-r(2, 4).abs() - 0.1,),
                                      (r(2, 4).abs(),)], None, True),
        "c24_channels_last": (ChannelsLastConv,
                              [(r(1, 3, 8, 8).contiguous(memory_format=torch.channels_last),)],
                              None, True),
        # C7-C10: rewrites of constant operands, of nodes with zero or many users, of a 0-d
        # select, and every legal form of RMSNorm.
        "c7_matmul_buffer": (lambda: MatmulConstant(True), [(r(2, 3, 4),)], None, True),
        "c7_matmul_attribute": (lambda: MatmulConstant(False), [(r(2, 3, 4),)], None, True),
        "c8_stack_output": (StackOutput, [(r(3, 4), r(3, 4))], None, True),
        "c8_stack_two_users": (StackTwoUsers, [(r(3, 4), r(3, 4))], None, True),
        "c9_select_element": (SelectElement, [(torch.tensor([1.5, -2.0, 3.25]),)], None, True),
        "c10_rmsnorm": (lambda: torch.nn.RMSNorm(64), [(r(2, 5, 64),)], None, True),
        "c10_rmsnorm_no_eps_no_weight": (
            lambda: torch.nn.RMSNorm(64, eps=None, elementwise_affine=False),
            [(r(2, 5, 64),)], None, True),
        "c10_rmsnorm_two_dims": (lambda: torch.nn.RMSNorm([4, 16]), [(r(3, 4, 16),)], None, True),
        # Core ops users reach at once (run together by --model core_ops).
        "max_min_dim": (lambda: Fn(lambda x: (*torch.max(x, 1), torch.min(x, 0).values)),
                        [(r(3, 4),)], None, True),
        "all_any_dim": (lambda: Fn(lambda x: (torch.all(x > -1, 1), torch.any(x > 1, 0))),
                        [(r(3, 4),)], None, True),
        "sort_topk": (lambda: Fn(lambda x: (*torch.sort(x, 1, descending=True), *torch.topk(x, 2))),
                      [(r(3, 5),)], None, True),
        "div_rounding": (lambda: Fn(lambda x, y: (torch.div(x, y, rounding_mode="floor"),
                                                  torch.div(x, y, rounding_mode="trunc"),
                                                  torch.floor_divide(x, y))),
                         [(r(3, 4) * 5, r(3, 4))], None, True),
        "nan_to_num": (lambda: Fn(lambda x: torch.nan_to_num(torch.log(x), neginf=-7.0)),
                       [(torch.tensor([[0.0, -1.0, 2.0], [float("inf"), 1.0, 0.5]]),)], None, True),
        "pads": (lambda: Fn(lambda x: (torch.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect"),
                                       torch.nn.functional.pad(x, (1, 1, 2, 0), mode="replicate"))),
                 [(r(1, 2, 5, 6),)], None, True),
        "lstm": (lambda: Recurrent("LSTM"), [(r(2, 5, 4),)], None, True),
        "gru": (lambda: Recurrent("GRU"), [(r(2, 5, 4),)], None, True),
        "adaptive_pool": (lambda: torch.nn.AdaptiveAvgPool2d(3), [(r(1, 4, 9, 9),)], None, True),
        # The delegation contracts (run together by --model delegation).
        "c16_buffer_cumsum": (BufferCumsum, [(r(4),), (r(4),)], None, True),
        "c17_unused_input": (UnusedInput, [(r(3), r(3) * 100, r(3))], None, True),
        "c18_where_index": (WhereIndex, [(r(3, 4), torch.tensor([2, 0, 2, 1]),
                                         torch.tensor([[True, False, True, True]] * 3))],
                            None, True),
        "c19_shared_weight": (SharedWeight, [(r(2, 4),)], None, True),
        "c20_clone_write": (CloneWrite, [(r(2, 3),), (r(2, 3) + 5,)], None, True),
        # C30 (the cpu backend; run by --model c30).
        "c30_elu": (EluFamily, [(r(4, 16) * 3,)], None, True),
        "c30_selu_celu": (SeluCelu, [(r(4, 16) * 3,)], None, True),
    }


# Per model: compile specs for the loopback runs, and whether the delegates must take every node.
DELEGATION = {
    "c16_buffer_cumsum": {"specs": ["exclude_ops=aten::cumsum"], "full": False},
    "c17_unused_input": {"full": True},
    "c18_where_index": {"full": True},
    "c19_shared_weight": {"full": True},
    "c20_clone_write": {"full": True},
}


def inspect_json(args, pte):
    import json
    r = run([args.ember, "inspect", pte, "--json"])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# What the cpu backend must take (C30) or leave on the portable path, by model.
CPU_EXPECT = {
    "c30_elu": {"portable_ops_absent": ["aten::elu"]},
    "c30_selu_celu": {"delegated_ops_absent": ["aten::elu"]},
    "resnet18": {"delegates": True},
    "mobilenet_v2": {"delegates": True},
    # A dynamic batch is delegated (built again for each batch size a call brings); any other
    # dynamic size stays portable.
    "dynamic_mlp": {"delegates": True, "all_delegated": True},
    "dynamic_convnet": {"delegates": True, "all_delegated": True},
    "dynamic_flatten": {"delegates": True, "all_delegated": True},
    "dynamic_last_dim": {"no_delegates": True},
}


def check_cpu(args, name, pte):
    """The cpu backend (issue 6): what it must take and what it must leave portable (C30)."""
    info = inspect_json(args, pte)
    method = info["methods"][0]
    delegates = method["delegates"]
    ops = [o["name"] for o in method["operators"]]
    delegated = [n["op"] for d in delegates for n in d["nodes"]]
    expect = CPU_EXPECT.get(name, {})
    if expect.get("delegates"):
        assert delegates, f"{name} (cpu): nothing was delegated"
    if expect.get("all_delegated"):  # but for the size a view reads (a prim op, no compute)
        compute = [o for o in ops if o != "aten::sym_size.int"]
        assert len(delegates) == 1 and not compute, f"{name} (cpu): portable ops remain: {ops}"
    if expect.get("no_delegates"):
        assert not delegates, f"{name} (cpu): delegated {delegated}"
    for op in expect.get("portable_ops_absent", []):
        assert delegates and not any(o.startswith(op) for o in ops), (name, ops)
    for op in expect.get("delegated_ops_absent", []):
        assert not any(o.startswith(op + ".") for o in delegated), (name, delegated)
        assert any(o.startswith(op) for o in ops), (name, ops)
    for d in delegates:
        assert d["backend"] == "cpu" and d["blob_bytes"] > 0 and d["nodes"], d
    print(f"   {name} (cpu): {len(delegates)} delegate(s), {len(delegated)} node(s) delegated, "
          f"{len(ops)} portable op(s)")


def check_delegated(args, name, mode, pte, ptd):
    """What a loopback compile must show in the file: delegates with their nodes, C16-C19."""
    info = inspect_json(args, pte)
    method = info["methods"][0]
    delegates = method["delegates"]
    assert delegates, f"{name} ({mode}): nothing was delegated"
    for d in delegates:
        assert d["backend"] == "loopback" and d["blob_bytes"] > 0 and d["nodes"], d
    extra = DELEGATION.get(name, {})
    if extra.get("full"):
        # Fully delegated: the program's only instructions are delegate calls.
        assert not method["operators"], f"{name}: portable ops remain: {method['operators']}"
    if name == "c16_buffer_cumsum":
        ops = [o["name"] for o in method["operators"]]
        assert any(o.startswith("aten::cumsum") for o in ops), ops
        assert all(n["op"] != "aten::cumsum.default" for d in delegates for n in d["nodes"])
    if name == "c19_shared_weight":
        # One stored copy of lin.weight, however many nodes read it (C19). Both linears read
        # its transpose, which folding computes once (`lin.weight@t`).
        if ptd:
            data = open(ptd, "rb").read()
            count = data.count(b"lin.weight")
            keys = [k["key"] for k in info["named_data"]]
            assert count == 1 and not keys, (count, keys)
        else:
            keys = [k["key"] for k in info["named_data"] if k["key"].startswith("lin.weight")]
            assert len(keys) == 1, info["named_data"]
    if name == "c19_shared_weight":
        # The delegate keeps pointers into its blob (C25): `ember run` with every load mode,
        # three executions each, gives eager's output.
        x = os.path.join(os.path.dirname(pte), "out_" + mode, "in0_0.npy")
        expected = np.load(os.path.join(os.path.dirname(pte), "out_" + mode, "call0_out0.npy"))
        for load_mode in ("file", "mmap", "mlock-ignore"):
            out_dir = os.path.join(os.path.dirname(pte), f"run_{mode}_{load_mode}")
            cmd = [args.ember, "run", pte, "--input", x, "--output-dir", out_dir, "--repeat", "2",
                   "--load-mode", load_mode] + (["--ptd", ptd] if ptd else [])
            r = run(cmd)
            assert r.returncode == 0, r.stderr
            got = np.load(os.path.join(out_dir, "output_0.npy"))
            assert np.array_equal(got, expected), (load_mode, got, expected)
    print(f"   {name} ({mode}): {len(delegates)} delegate(s), "
          f"{sum(len(d['nodes']) for d in delegates)} node(s) delegated, "
          f"{len(method['operators'])} portable op(s), {len(info['named_data'])} named data key(s)")


# Programs PyTorch 1.13 cannot capture (torch.cond, torch.sym_ite and torch._check_tensor_all
# arrived later): written as IR text, compiled by `ember compile MODEL.ir`, run by Ember's runtime
# and compared with the same function run by eager PyTorch.
# name: (IR text, list of calls, eager function of one call's inputs)
C4_COND_DETACH = """
graph(
    %p: bool[],
    %x: f32[3]
) {
  %detach: f32[3] = aten::detach.default(self=%x)
  %cond: f32[3] = higher_order::cond.default(pred=%p, true_graph=^0, false_graph=^1, operands=[%detach]) {
    graph(
        %t: f32[3]
    ) {
      %detach_1: f32[3] = aten::detach.default(self=%t)
      %mul: f32[3] = aten::mul.Scalar(self=%detach_1, other=2)
      return (%mul)
    }
    graph(
        %f: f32[3]
    ) {
      %add: f32[3] = aten::add.Scalar(self=%f, other=1, alpha=1)
      return (%add)
    }
  }
  return (%cond)
}
"""

# A branch that returns its operand (copied, never aliased), temporaries in both branches that
# the planner may overlap, a nested cond, and results read after the cond (their memory must
# outlive the other branch's temporaries).
COND_MIXED = """
graph(
    %p: bool[],
    %q: bool[],
    %x: f32[4, 8]
) {
  (%r0: f32[4, 8], %r1: f32[4, 8]) = higher_order::cond.default(pred=%p, true_graph=^0, false_graph=^1, operands=[%x, %q]) named "cond" {
    graph(
        %t: f32[4, 8],
        %tq: bool[]
    ) {
      %relu: f32[4, 8] = aten::relu.default(self=%t)
      %exp: f32[4, 8] = aten::exp.default(self=%relu)
      %sum: f32[4, 8] = aten::add.Tensor(self=%exp, other=%t, alpha=1)
      return (%t, %sum)
    }
    graph(
        %f: f32[4, 8],
        %fq: bool[]
    ) {
      %neg: f32[4, 8] = aten::neg.default(self=%f)
      %inner: f32[4, 8] = higher_order::cond.default(pred=%fq, true_graph=^0, false_graph=^1, operands=[%neg]) {
        graph(
            %a: f32[4, 8]
        ) {
          %sig: f32[4, 8] = aten::sigmoid.default(self=%a)
          return (%sig)
        }
        graph(
            %b: f32[4, 8]
        ) {
          %tanh: f32[4, 8] = aten::tanh.default(self=%b)
          %m: f32[4, 8] = aten::mul.Scalar(self=%tanh, other=3)
          return (%m)
        }
      }
      %mul: f32[4, 8] = aten::mul.Tensor(self=%inner, other=%f)
      return (%mul, %neg)
    }
  }
  %out: f32[4, 8] = aten::add.Tensor(self=%r0, other=%r1, alpha=1)
  return (%out, %r1)
}
"""

C12_SYM_ITE = """
sym n in [1, 20]
sym m in [1, 20]
graph(
    %x: f32[n<=20, m<=20]
) {
  %n: int = aten::sym_size.int(self=%x, dim=0)
  %m: int = aten::sym_size.int(self=%x, dim=1)
  %gt: bool = sym::gt.default(a=%n, b=5)
  %ite: int = sym::ite.default(b=%gt, t=%n, f=%m)
  %zeros: f32[n<=20] = aten::zeros.default(size=[%ite], dtype=dtype(f32), layout=none, device=none, pin_memory=none)
  return (%zeros)
}
"""

C12_CHECK_TENSOR_ALL = """
graph(
    %x: f32[3]
) {
  %gt: bool[3] = aten::gt.Scalar(self=%x, other=0)
  () = aten::_check_tensor_all.default(self=%gt, msg="x must be positive") named "check"
  %mul: f32[3] = aten::mul.Scalar(self=%x, other=2)
  return (%mul)
}
"""


# Ops whose kernels ExecuTorch registers under other names than Ember's defaults would be: a sum
# over every dim (sum.IntList_out with dim=None, not sum.out) and squeeze() of a static shape
# (squeeze_copy.dims_out, not squeeze_copy.out). check_ir_model runs it on ExecuTorch too.
EXECUTORCH_NAMES = """
graph(
    %x: f32[2, 1, 3]
) {
  %s: f32[] = aten::sum.default(self=%x, dtype=none)
  %q: f32[2, 3] = aten::squeeze.default(self=%x)
  %m: f32[2, 3] = aten::mul.Tensor(self=%q, other=%s)
  return (%m)
}
"""


# An op Ember has no kernel for (bernoulli) whose result nobody reads: it must not block the
# compile.
DEAD_UNSUPPORTED = """
graph(
    %x: f32[3]
) {
  %unused: f32[3] = aten::bernoulli.default(self=%x, generator=none)
  %m: f32[3] = aten::mul.Scalar(self=%x, other=2)
  return (%m)
}
"""


def cond_mixed_eager(p, q, x):
    if bool(p):
        r0, r1 = x, torch.exp(torch.relu(x)) + x
    else:
        neg = -x
        inner = torch.sigmoid(neg) if bool(q) else torch.tanh(neg) * 3
        r0, r1 = inner * x, neg
    return (r0 + r1, r1)


def ir_models():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)
    t, f = torch.tensor(True), torch.tensor(False)
    return {
        # C4 test 2: both predicate values.
        "c4_cond": (C4_COND_DETACH, [(t, r(3)), (f, r(3)), (t, r(3))],
                    lambda p, x: (x.detach() * 2 if bool(p) else x + 1,)),
        "cond_mixed": (COND_MIXED, [(t, f, r(4, 8)), (f, t, r(4, 8)), (f, f, r(4, 8)),
                                    (t, t, r(4, 8))], cond_mixed_eager),
        # C12 test 1: a 3x6 input gives zeros(6), an 8x4 input zeros(8).
        "c12_sym_ite": (C12_SYM_ITE, [(r(3, 6),), (r(8, 4),), (r(6, 20),)],
                        lambda x: (torch.zeros(x.shape[0] if x.shape[0] > 5 else x.shape[1]),)),
        # C12 test 2: the assertion is dropped at compile time (documented); positive x gives 2x.
        "c12_check_tensor_all": (C12_CHECK_TENSOR_ALL, [(r(3).abs() + 0.1,)], lambda x: (x * 2,)),
        "dead_unsupported": (DEAD_UNSUPPORTED, [(r(3),)], lambda x: (x * 2,)),
        "executorch_names": (EXECUTORCH_NAMES, [(r(2, 1, 3),)],
                             lambda x: (x.squeeze() * x.sum(),)),
    }


def check_ir_model(args, name):
    text, calls, fn = ir_models()[name]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, name + ".ir")
    with open(path, "w") as f:
        f.write(text)
    pte = os.path.join(work, name + ".pte")
    r = compile_model(args, path, pte)
    print(r.stdout, end="")
    if r.returncode != 0:
        raise AssertionError(f"{name}: ember compile failed: {r.stderr}")
    executorch_runs = check_executorch_claim(name, "pte", r.stdout)
    # `ember inspect` recomputes the memory numbers from the .pte (moves and jumps included).
    m = re.search(r"memory: planned (\d+) bytes, activations (\d+) bytes, lower bound (\d+)",
                  r.stdout)
    assert m is not None, r.stdout
    report = subprocess.run([args.ember, "inspect", pte, "--json"], capture_output=True,
                            text=True)
    assert report.returncode == 0, report.stderr
    mem = json.loads(report.stdout)["methods"][0]["memory"]
    got = (mem["planned_bytes"], mem["activation_bytes"], mem["lower_bound_bytes"])
    if got != tuple(int(g) for g in m.groups()):
        raise AssertionError(f"{name}: ember inspect says {got}, ember compile {m.groups()}")
    with torch.no_grad():
        expected = [fn(*[x.clone() for x in c]) for c in calls]
    out = os.path.join(work, "out")
    r = execute(args, pte, calls, out)
    if r.returncode != 0:
        raise AssertionError(f"{name}: run failed: {r.stderr}")
    compare(name, expected, out)
    if executorch_runs:
        check_executorch(args, name, pte, None, calls, out)
    else:
        check_executorch_refuses(name, pte, None)
    print(f"ok {name} ({'and on ExecuTorch' if executorch_runs else 'refused by ExecuTorch'})")
    return 0


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def compile_model(args, ep, pte, ptd=None, backend_args=()):
    cmd = [args.ember, "compile", ep, "-o", pte] + (["--ptd", ptd] if ptd else [])
    return run(cmd + list(backend_args))


def execute(args, pte, calls, out_dir, ptd=None):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.runner, pte, "--out", out_dir] + (["--ptd", ptd] if ptd else [])
    for c, inputs in enumerate(calls):
        paths = []
        for i, t in enumerate(inputs):
            p = os.path.join(out_dir, f"in{c}_{i}.npy")
            np.save(p, t.numpy())
            paths.append(p)
        cmd += ["--call", ",".join(paths)]
    return run(cmd)


def compare(name, expected_calls, out_dir, first=0):
    """Each call's outputs from `first` on are the expected ones (rtol 1e-4, atol 1e-5)."""
    for c, expected in enumerate(expected_calls):
        for i, e in enumerate(expected):
            got = np.load(os.path.join(out_dir, f"call{c}_out{first + i}.npy"))
            e = e.detach().numpy()
            if got.shape != e.shape:
                raise AssertionError(f"{name} call {c} output {i}: shape {got.shape} != {e.shape}")
            if not np.allclose(got, e, rtol=1e-4, atol=1e-5):
                err = np.max(np.abs(got - e))
                raise AssertionError(f"{name} call {c} output {i}: max abs error {err}\n"
                                     f"got {got.ravel()[:8]}\nexpected {e.ravel()[:8]}")


def check_executorch_claim(name, mode, stdout):
    """`ember compile` says whether ExecuTorch's runtime runs the program. A portable program it
    runs unless an operator it lacks is named (the caller then checks that ExecuTorch refuses it,
    or runs it with Ember's outputs); a program with Ember's delegates (cpu, loopback) it cannot
    run, and the note names the delegate. Returns True when the claim is that ExecuTorch runs it."""
    runs = "runtime runs this program too" in stdout
    cannot = re.search(r"runtime cannot run this program \(Ember's can\): (.*)", stdout)
    if runs == (cannot is not None):
        raise AssertionError(f"{name} ({mode}): ember compile should say whether ExecuTorch runs "
                             f"the program, once: {stdout[-300:]}")
    delegates = re.search(r"^delegates: (\d+);", stdout, re.M)
    portable = mode in ("pte", "ptd") or (delegates is not None and delegates.group(1) == "0")
    if portable and cannot and "delegate backend" in cannot.group(1):
        raise AssertionError(f"{name} ({mode}): a portable program blamed on a delegate: "
                             f"{cannot.group(1)}")
    if not portable and (not cannot or "delegate backend" not in cannot.group(1)):
        raise AssertionError(f"{name} ({mode}): ember compile should name the delegate that "
                             f"ExecuTorch lacks: {stdout[-300:]}")
    return runs


def check_executorch_refuses(name, pte, ptd):
    """A program `ember compile` says ExecuTorch cannot run (an operator it lacks) is refused by
    ExecuTorch's runtime when its method loads."""
    from executorch.runtime import Runtime, Verification
    program = Runtime.get().load_program(pte, verification=Verification.InternalConsistency,
                                         data_path=ptd)
    try:
        program.load_method("forward")
    except Exception:  # ExecuTorch raises RuntimeError with OperatorMissing
        return
    raise AssertionError(f"{name}: ember compile said ExecuTorch lacks an operator, yet it loads")


def check_executorch(args, name, pte, ptd, calls, out_dir):
    """ExecuTorch's own runtime (pip executorch) runs the program Ember wrote: every call, in order
    on one loaded method (so state carries over), gives Ember's outputs within float32 rounding.
    The two runtimes' kernels sum in different orders, and through ResNet-18's 20 layers such
    differences grow to a few 1e-6 of the output's scale: the bound is 1e-5 of the largest
    output magnitude (the bench's check), 1e-5 relative per element."""
    from executorch.runtime import Runtime, Verification
    program = Runtime.get().load_program(pte, verification=Verification.InternalConsistency,
                                         data_path=ptd)
    method = program.load_method("forward")
    # ExecuTorch's Python binding copies an input's storage as it is, whatever the dim order the
    # program declares (which its API does not tell): give each input that layout.
    report = run([args.ember, "inspect", pte, "--json"])
    assert report.returncode == 0, report.stderr
    orders = [io.get("dim_order") for io in json.loads(report.stdout)["methods"][0]["inputs"]]

    def laid_out(t, order):
        if not isinstance(t, torch.Tensor) or not order or order == sorted(order):
            return t.contiguous() if isinstance(t, torch.Tensor) else t
        return t.permute(order).contiguous().permute(np.argsort(order).tolist())

    for c, inputs in enumerate(calls):
        outs = method.execute([laid_out(t.clone(), o) for t, o in zip(inputs, orders)])
        n = 0
        while os.path.exists(os.path.join(out_dir, f"call{c}_out{n}.npy")):
            n += 1
        if len(outs) != n:
            raise AssertionError(f"{name} on ExecuTorch, call {c}: {len(outs)} outputs, Ember {n}")
        for i, got in enumerate(outs):
            want = np.load(os.path.join(out_dir, f"call{c}_out{i}.npy"))
            got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
            same_shape = got.shape == want.shape and got.dtype == want.dtype
            scale = float(np.max(np.abs(want), initial=1.0)) if want.dtype.kind == "f" else 0
            if not same_shape or not (np.allclose(got, want, rtol=1e-5, atol=1e-5 * scale,
                                                  equal_nan=True)
                                      if got.dtype.kind == "f" else np.array_equal(got, want)):
                raise AssertionError(f"{name} on ExecuTorch, call {c} output {i}: "
                                     f"{got.dtype}{list(got.shape)} {got.ravel()[:6]} != Ember's "
                                     f"{want.dtype}{list(want.shape)} {want.ravel()[:6]}")


def check_executorch_exported(args, name, module, calls, dyn, work, expected):
    """Ember runs what ExecuTorch's own exporter writes (to_edge_transform_and_lower, then
    to_executorch; portable kernels): every call, in order, gives the outputs of ExecuTorch's
    runtime on the same program, and eager's. Mutated buffers are written with their initial
    values (InitializedMutableBufferPass), as eager starts from them. ExecuTorch's program returns
    the inputs it writes before the module's outputs."""
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
    torch_dyn = None
    if dyn:
        torch_dyn = tuple({d: torch.export.Dim(dim.name, min=dim.min, max=dim.max)
                           for d, dim in spec.items()} if spec else None for spec in dyn)
        torch_dyn += (None,) * (len(calls[0]) - len(torch_dyn))
    with torch.no_grad():
        ep = torch.export.export(copy.deepcopy(module), calls[0], dynamic_shapes=torch_dyn)
    config = ExecutorchBackendConfig(passes=[InitializedMutableBufferPass([""])])
    program = to_edge_transform_and_lower(ep).to_executorch(config)
    pte = os.path.join(work, f"{name}_executorch.pte")
    with open(pte, "wb") as f:
        f.write(program.buffer)
    out = os.path.join(work, "out_executorch")
    r = execute(args, pte, calls, out)
    if r.returncode != 0:
        raise AssertionError(f"{name}: Ember could not run ExecuTorch's program: {r.stderr}")
    written_inputs = sum(spec.kind.name == "USER_INPUT_MUTATION"
                         for spec in program.exported_program().graph_signature.output_specs)
    compare(name, expected, out, first=written_inputs)
    # ExecuTorch's exporter may use a kernel its own runtime lacks (sort.values in 1.5.1):
    # `ember inspect` says so, and then ExecuTorch's runtime must refuse the program.
    report = run([args.ember, "inspect", pte, "--json"])
    assert report.returncode == 0, report.stderr
    runs = json.loads(report.stdout)["methods"][0]["executorch"]["runs"]
    if runs:
        check_executorch(args, name, pte, None, calls, out)
    else:
        check_executorch_refuses(name, pte, None)
    return runs


def eager(module, calls):
    module = copy.deepcopy(module)
    results = []
    with torch.no_grad():
        for inputs in calls:
            out = module(*[t.clone() for t in inputs])
            results.append(out if isinstance(out, (tuple, list)) else (out,))
    return results


def check_model(args, name):
    import ember
    factory, calls, dynamic, required = models()[name]
    torch.manual_seed(0)
    module = factory().eval()
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    expected = eager(module, calls)
    ep = os.path.join(work, name + ".ep")
    dyn = None
    if dynamic == "batch":
        dyn = [{0: ember.Dim("batch", 1, 8)}]
    elif dynamic == "batch2":
        dyn = [{0: ember.Dim("batch", 2, 8)}]
    elif dynamic == "last":
        dyn = [{1: ember.Dim("n", 2, 16)}]
    ember.export(copy.deepcopy(module), calls[0], ep, dynamic_shapes=dyn)
    for mode in ("pte", "ptd", "loopback", "loopback_ptd", "cpu"):
        pte = os.path.join(work, f"{name}_{mode}.pte")
        ptd = os.path.join(work, f"{name}_{mode}.ptd") if mode.endswith("ptd") else None
        backend_args = []
        if mode == "cpu":
            backend_args = ["--backend", "cpu"]
        elif mode.startswith("loopback"):
            backend_args = ["--backend", "loopback"]
            for spec in DELEGATION.get(name, {}).get("specs", []):
                backend_args += ["--backend-spec", spec]
        r = compile_model(args, ep, pte, ptd, backend_args)
        print(r.stdout, end="")
        executorch_runs = r.returncode != 0 or check_executorch_claim(name, mode, r.stdout)
        if mode == "cpu" and "unknown backend 'cpu'" in r.stderr:
            print(f"   {name} (cpu): this build has no cpu backend (oneDNN not found)")
            continue
        if r.returncode != 0:
            missing = re.findall(r"distinct op\(s\):([^)]*)\)", r.stderr)
            if "cannot run" in r.stderr and not required:
                print(f"SKIPPED {name}: ops without kernels: {missing[0].strip() if missing else '?'}")
                print(r.stderr)
                return SKIP
            print(r.stderr)
            raise AssertionError(f"{name}: ember compile failed")
        r = execute(args, pte, calls, os.path.join(work, "out_" + mode), ptd)
        if r.returncode != 0:
            lacks = "not found" in r.stderr.lower() or "no kernel is registered" in r.stderr
            if lacks and not required:
                print(f"SKIPPED {name}: the runtime lacks an op: {r.stderr.strip()}")
                return SKIP
            raise AssertionError(f"{name} ({mode}): run failed: {r.stderr}")
        compare(name, expected, os.path.join(work, "out_" + mode))
        if mode == "pte":
            check_contiguous_inputs(args, name, ep, pte, calls[0])
        if mode in ("pte", "ptd") and executorch_runs:
            check_executorch(args, name, pte, ptd, calls, os.path.join(work, "out_" + mode))
        elif mode in ("pte", "ptd"):
            check_executorch_refuses(name, pte, ptd)
        if mode.startswith("loopback"):
            check_delegated(args, name, mode, pte, ptd)
        if mode == "cpu":
            check_cpu(args, name, pte)
        on_executorch = ", and on ExecuTorch" if executorch_runs else ", refused by ExecuTorch"
        print(f"ok {name} ({mode}{on_executorch if mode in ('pte', 'ptd') else ''})")
    if check_executorch_exported(args, name, module, calls, dyn, work, expected):
        print(f"ok {name} (ExecuTorch's exporter, run by Ember and by ExecuTorch)")
    else:
        print(f"ok {name} (ExecuTorch's exporter, run by Ember; ExecuTorch's runtime lacks a kernel)")
    return 0


def check_contiguous_inputs(args, name, ep, pte, example):
    """An input that is contiguous in the example is contiguous in the exported program and in
    the .pte, dynamic sizes (symbolic strides) included."""
    from ember import _format
    document = _format.read_exported_program(ep)[1]
    users = [s["value"] for s in document["signature"]["inputs"] if s["kind"] == "user_input"]
    exported = [v for v in document["graph"]["inputs"] if v["name"] in users]
    declared = inspect_json(args, pte)["methods"][0]["inputs"]
    for where, decls in ((ep, exported), (pte, declared)):
        for i, (x, decl) in enumerate(zip(example, decls)):
            contiguous = list(range(x.dim())) if isinstance(x, torch.Tensor) else None
            if contiguous and x.is_contiguous() and decl.get("dim_order", contiguous) != contiguous:
                raise AssertionError(f"{name}: input {i} is contiguous, {where} declares dim "
                                     f"order {decl['dim_order']}")


def check_wrong_ptd(args):
    """C21: a program loaded with another program's weights fails, naming the missing key."""
    import ember
    work = os.path.join(args.work, "wrong_ptd")
    os.makedirs(work, exist_ok=True)
    x = torch.randn(2, 4)
    for seed in (0, 1):
        torch.manual_seed(seed)
        m = torch.nn.Linear(4, 4).eval()
        ep = os.path.join(work, f"m{seed}.ep")
        ember.export(m, (x,), ep)
        r = compile_model(args, ep, os.path.join(work, f"m{seed}.pte"), os.path.join(work, "w.ptd"))
        assert r.returncode == 0, r.stderr
        expected = [(m(x),)]
    r = execute(args, os.path.join(work, "m0.pte"), [(x,)], os.path.join(work, "out0"),
                os.path.join(work, "w.ptd"))
    assert r.returncode != 0 and "is missing from named data" in r.stderr, r.stderr
    assert ":sha256:" in r.stderr, r.stderr
    r = execute(args, os.path.join(work, "m1.pte"), [(x,)], os.path.join(work, "out1"),
                os.path.join(work, "w.ptd"))
    assert r.returncode == 0, r.stderr
    compare("wrong_ptd", expected, os.path.join(work, "out1"))
    print("ok wrong_ptd: " + r.stderr.strip()[:0] + "foreign .ptd refused, own .ptd runs")
    return 0


def check_strict(args):
    """C11: a ConvNet (conv, batch norm, relu, pooling, linear) exported with strict=True and with
    strict=False compiles to programs with the same operators, both matching eager."""
    import ember
    work = os.path.join(args.work, "c11_strict")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    module = ConvNet().eval()
    calls = [(torch.randn(1, 3, 16, 16),)]
    expected = eager(module, calls)
    operators = {}
    for strict in (True, False):
        tag = "strict" if strict else "non_strict"
        ep, pte = os.path.join(work, tag + ".ep"), os.path.join(work, tag + ".pte")
        ember.export(copy.deepcopy(module), calls[0], ep, strict=strict)
        r = compile_model(args, ep, pte)
        assert r.returncode == 0, r.stderr
        r = execute(args, pte, calls, os.path.join(work, "out_" + tag))
        assert r.returncode == 0, r.stderr
        compare("c11_strict", expected, os.path.join(work, "out_" + tag))
        report = run([args.ember, "inspect", pte, "--json"])
        assert report.returncode == 0, report.stderr
        operators[tag] = json.loads(report.stdout)["methods"][0]["operators"]
    assert operators["strict"] == operators["non_strict"], operators
    print("ok c11_strict: the same operators and eager's outputs both ways")
    return 0


def check_batch_norm_in_training_refused(args):
    """A BatchNorm left in train() is refused at compile, naming the module and saying to call
    eval(); the same model in eval() compiles."""
    import ember
    work = os.path.join(args.work, "batch_norm_training")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    x = torch.randn(1, 3, 8, 8)
    for training in (True, False):
        ep = os.path.join(work, f"train_{training}.ep")
        ember.export(copy.deepcopy(model).train(training), (x,), ep)
        r = compile_model(args, ep, os.path.join(work, f"train_{training}.pte"))
        if training:
            assert r.returncode == 1, r.stdout
            assert "call model.eval() before exporting" in r.stderr, r.stderr
            assert "BatchNorm2d" in r.stderr, r.stderr
        else:
            assert r.returncode == 0, r.stderr
    print("ok batch_norm_training: refused in train(), with the eval() hint; compiles in eval()")
    return 0


def check_xnnpack_refused(args):
    """A program ExecuTorch's exporter delegated to XNNPACK is refused at load, naming the backend
    (Ember has no XNNPACK delegate); `ember inspect` still reads it and lists the delegate."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    work = os.path.join(args.work, "xnnpack_refused")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    with torch.no_grad():
        ep = torch.export.export(MLP().eval(), (x,))
    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    pte = os.path.join(work, "mlp_xnnpack.pte")
    with open(pte, "wb") as f:
        f.write(program.buffer)
    r = execute(args, pte, [(x,)], os.path.join(work, "out"))
    assert r.returncode != 0, "an XNNPACK program ran without an XNNPACK delegate"
    assert "backend 'XnnpackBackend' is not registered" in r.stderr, r.stderr
    report = run([args.ember, "inspect", pte])
    assert report.returncode == 0 and "XnnpackBackend" in report.stdout, report.stdout
    print("ok xnnpack_refused: " + r.stderr.strip().splitlines()[-1])
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--python-dir", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", default="all")
    args = p.parse_args()
    sys.path.insert(0, args.python_dir)
    # One process runs a comma-separated list of models: importing torch once per test process
    # saves seconds per model (CI runs on two cores).
    names = []
    for m in args.model.split(","):
        if m == "all":
            names += list(models()) + ["wrong_ptd", "xnnpack_refused", "c11_strict",
                                       "batch_norm_training"]
            names += list(ir_models())
        elif m == "delegation":
            names += list(DELEGATION)
        elif m == "c30":
            names += ["c30_elu", "c30_selu_celu"]
        else:
            names.append(m)
    failed, skipped = [], []
    for name in names:
        try:
            if name == "wrong_ptd":
                rc = check_wrong_ptd(args)
            elif name == "xnnpack_refused":
                rc = check_xnnpack_refused(args)
            elif name == "c11_strict":
                rc = check_strict(args)
            elif name == "batch_norm_training":
                rc = check_batch_norm_in_training_refused(args)
            elif name in ir_models():
                rc = check_ir_model(args, name)
            else:
                rc = check_model(args, name)
        except AssertionError as e:  # report it, go on with the other models
            print(f"FAILED {name}: {e}")
            failed.append(name)
            continue
        if rc == SKIP:
            skipped.append(name)
    print(f"{len(names) - len(failed) - len(skipped)} passed, {len(failed)} failed "
          f"({', '.join(failed)}), {len(skipped)} skipped ({', '.join(skipped)})")
    if failed:
        return 1
    # CTest shows a skip only when every model of the process skipped.
    return SKIP if len(skipped) == len(names) else 0


if __name__ == "__main__":
    sys.exit(main())
