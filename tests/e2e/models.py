"""The end-to-end tests' programs (see e2e_test.py): PyTorch modules with the inputs of each call
(models()), and programs written as IR text with the eager function each must agree with
(ir_models()).
"""

import torch


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


class C5Autocast(torch.nn.Module):  # C5 test 3: the wrapped block's operands swapped
    def forward(self, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            r = y @ x - y
        return r


# C5: the same block in no_grad. ember.export traces under no_grad, so no wrapper is left here;
# compiler/import/pt2_test.py exports it with grad enabled, where torch.export wraps it.
class C5NoGrad(torch.nn.Module):
    def forward(self, x, y):
        with torch.no_grad():
            r = y @ x - y
        return r


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


class WrittenBuffer(torch.nn.Module):  # found by the fuzzer: buffers written in forward persist
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.zeros(3))
        self.register_buffer("last", torch.zeros(3))
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.acc.add_(x)      # reads its old value
        self.last.copy_(x)    # does not: only the write keeps it an input
        self.count.add_(1)
        return x * 2


class OddStateSizes(torch.nn.Module):  # found by the fuzzer: 1-byte and odd-sized constants, state
    def __init__(self):
        super().__init__()
        self.register_buffer("u8", torch.tensor([1, 2, 3], dtype=torch.uint8))
        self.register_buffer("flags", torch.tensor([True, False, True]))
        self.register_buffer("i8", torch.tensor([1, -2, 3], dtype=torch.int8))
        self.register_buffer("h", torch.tensor([1.5, 2.0, 3.0], dtype=torch.float16))
        self.w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))

    def forward(self, x):
        self.i8.add_(1)
        self.flags.logical_not_()
        return x * self.w + self.u8 + self.i8 + self.h.float(), torch.where(self.flags, x, -x)


# Found by the fuzzer: a zero-sized constant beside state. Zero-sized state itself is checked by
# EmitProgram.ZeroSizedStateKeepsTheSegmentHeader: ExecuTorch's exporter writes such a program
# without a mutable data segment, which Ember's runtime refuses today (left to the runtime).
class ZeroSizedState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("empty", torch.zeros(0, 3))
        self.register_buffer("state", torch.zeros(2))

    def forward(self, x):
        self.state.add_(1)
        return x * 2, torch.cat([x, self.empty.sum(1)]), self.state * 1


class ZeroSizedMutableState(torch.nn.Module):
    """A zero-sized buffer written in forward: ExecuTorch's exporter names initial data for it
    without writing a mutable data segment."""

    def __init__(self):
        super().__init__()
        self.register_buffer("empty", torch.zeros(0, 3))
        self.register_buffer("state", torch.zeros(2))

    def forward(self, x):
        self.empty.add_(1)
        self.state.add_(x[:2])
        return x * 2, self.state * 1, self.empty.sum(0)


# Models whose program from ExecuTorch's own exporter differs from eager for a reason outside
# Ember, so check_executorch_exported is skipped for them (with the reason printed).
EXECUTORCH_EXPORTER_DIFFERS = {
    "copy_into_buffer": "torch.export's run_decompositions drops copy_'s broadcast and cast into "
                        "a buffer (Ember's exporter makes them explicit; ExecuTorch's does not)",
}


class CopyIntoBuffer(torch.nn.Module):
    """Found by the fuzzer: copy_ into a buffer broadcasts the source to the buffer's shape and
    casts it to the buffer's dtype; the buffer keeps its own shape and dtype, and persists across
    calls."""

    def __init__(self):
        super().__init__()
        self.register_buffer("vec", torch.zeros(4))
        self.register_buffer("wide", torch.zeros(3, 4))
        self.register_buffer("from_f64", torch.zeros(4))
        self.register_buffer("from_int", torch.zeros(2, 4))
        self.register_buffer("acc", torch.zeros(3, 4))

    def forward(self, x, col, d, i):
        self.vec.copy_(x)          # (1,) -> (4,)
        self.wide.copy_(col)       # (3, 1) -> (3, 4)
        self.from_f64.copy_(d)     # float64 -> float32
        self.from_int.copy_(i)     # int64 (4,) -> float32 (2, 4)
        self.acc.add_(self.wide)   # reads its old value: the state persists
        return (self.vec * 2, self.vec.clone(), self.wide + 1, self.from_f64 / 3,
                self.from_int * 0.5, self.acc.clone())


def torchvision_model(name):
    import torchvision
    return getattr(torchvision.models, name)()


def small_convnext():
    """torchvision's ConvNeXt at CI size: two stages of one block (7x7 depth-wise conv, LayerNorm
    over channels-last, linear layers, layer scale), downsampling between them, and the head
    (AdaptiveAvgPool2d(1), whose decomposition restrides with as_strided). A layer scale of 0.5,
    not 1e-6, so that the blocks' results show at fp32 tolerances."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], layer_scale=0.5,
                    num_classes=10)


def small_swin():
    """torchvision's Swin Transformer at CI size: two stages of two blocks on a 64x64 input (16x16
    and 8x8 tokens, 4x4 windows), so each stage has a shifted block (roll, attention mask) as well
    as the window partition views, the relative position bias gather and patch merging."""
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[1, 2],
                           window_size=[4, 4], num_classes=10)


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
        # C5: an autocast block, which torch.export wraps and torch's decomposition inlines; eager
        # runs the autocast block's matmul in bfloat16.
        "c5_autocast": (C5Autocast, [(r(4, 4), r(4, 4)), (r(4, 4), r(4, 4))], None, True),
        "c5_no_grad": (C5NoGrad, [(r(4, 4), r(4, 4))], None, True),
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
        # torchvision's ConvNeXt and Swin Transformer classes, at a size CI's time allows; last, so
        # that the inputs drawn for the models above stay the same.
        "convnext": (small_convnext, [(r(1, 3, 32, 32),)], None, True),
        "swin": (small_swin, [(r(1, 3, 64, 64),)], None, True),
        # as_strided of a computed tensor: a gather from its storage (as_strided_copy.out).
        "as_strided": (lambda: Fn(lambda x: torch.relu(x).as_strided((3, 3), (7, 1), 2) * 2),
                       [(r(4, 6),)], None, True),
        # Programs the differential fuzzer found refused at load or run, and the ops it used most
        # that lacked a kernel.
        "written_buffer": (WrittenBuffer, [(r(3),), (r(3),), (r(3),)], None, True),
        "odd_state_sizes": (OddStateSizes, [(r(3),), (r(3),)], None, True),
        "zero_sized_state": (ZeroSizedState, [(r(3),), (r(3),)], None, True),
        "zero_sized_mutable_state": (ZeroSizedMutableState, [(r(3),), (r(3),)], None, True),
        "copy_into_buffer": (
            CopyIntoBuffer,
            [(r(1), r(3, 1), r(4).double(), torch.tensor([3, -1, 0, 7])),
             (r(1), r(3, 1), r(4).double(), torch.tensor([-5, 2, 1, 4])),
             (r(1), r(3, 1), r(4).double(), torch.tensor([0, 0, 9, -2]))],
            None, True),
        "pow_scalar_base": (lambda: Fn(lambda x: (2 ** x, 0.5 ** x)), [(r(3, 4),)], None, True),
        "matmul_vector": (lambda: Fn(lambda v, w: (v @ w, w.t() @ v, torch.mv(w.t(), v))),
                          [(r(3), r(3, 4))], None, True),
        "clamp_tensor_bounds": (
            lambda: Fn(lambda b, h, lo, hi: (torch.clamp(b, lo, hi),
                                             torch.clamp(h, lo.half(), None),
                                             torch.clamp_min(h, 0.5), torch.clamp_max(lo, hi))),
            [(torch.tensor([True, False, True, False]),
              torch.tensor([1.0, 0.25, -3.0, 5.0]).half(),
              torch.tensor([0.5, 0.0, 1.5, -1.0]), torch.tensor([1.0, 2.0, 2.0, 0.0]))],
            None, True),
        "fuzzer_found_ops": (
            # bucketize and adaptive_max_pool2d are checked by compiler/import/pt2_test.py:
            # ExecuTorch's exporter (run here on every model) refuses them, no core ATen ops.
            lambda: Fn(lambda x, b: (
                torch.norm(x, dim=1), torch.linalg.vector_norm(x, float("inf"), dim=0),
                x.norm(p=1), torch.prod(x, 1), torch.addcmul(x, x, b[:4], value=0.5),
                torch.addcdiv(x, x, b[:4] + 10, value=2), x + torch.eye(3, 4), 1 - x,
                x.new_zeros(2, 3), x.new_ones(3), x.new_full((2,), 4.0),  # constant outputs
                x.clone().fill_(2.0))),
            # Finite: the e2e comparison treats NaN as a mismatch (the kernel tests cover NaN).
            [(torch.tensor([[-2.0, 0.0, 0.5, 1.5], [1.0, 3.0, -1.0, 2.0],
                            [-1.0, 1.0, 2.0, -4.0]]),
              torch.tensor([-1.0, 0.0, 1.0, 1.0, 2.5]))],
            None, True),
    }


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
