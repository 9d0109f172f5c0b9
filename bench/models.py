"""The benchmark's models (bench/run_bench.py), batch 1, fixed seeds, eval mode.

    from models import build
    cases = build(["resnet18", "llama_decode"])   # {name: Case(module, inputs, input_names)}

Every model is written so that the same module exports with ember.export (torch 2.15, torch.export)
and with torch.onnx.export: no fused fast paths (PyTorch's eval-mode
_transformer_encoder_layer_fwd has no Ember kernel), attention spelled out with matmul and softmax.
"""

import copy
import math

import torch
import torch.nn.functional as F


class Case:
    """One benchmark model: an eval-mode module, its example inputs and their names."""

    def __init__(self, name, module, inputs, input_names, description):
        self.name = name
        self.module = module
        self.inputs = inputs
        self.input_names = input_names
        self.description = description


# --- BERT-base-like encoder: 12 post-LN layers, hidden 768, 12 heads, FFN 3072 (exact GELU). -----
class EncoderLayer(torch.nn.Module):
    def __init__(self, dim, heads, ffn):
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(dim, dim)
        self.k = torch.nn.Linear(dim, dim)
        self.v = torch.nn.Linear(dim, dim)
        self.o = torch.nn.Linear(dim, dim)
        self.ln1 = torch.nn.LayerNorm(dim, eps=1e-12)
        self.fc1 = torch.nn.Linear(dim, ffn)
        self.fc2 = torch.nn.Linear(ffn, dim)
        self.ln2 = torch.nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q = self.q(x).view(b, s, self.heads, hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.heads, hd).transpose(1, 2)
        att = torch.softmax((q @ k.transpose(2, 3)) * (1.0 / math.sqrt(hd)), dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Encoder(torch.nn.Module):
    """Input: token embeddings [1, seq, 768] (the embedding lookup is left out); output: the
    last hidden states."""

    def __init__(self, layers=12, dim=768, heads=12, ffn=3072):
        super().__init__()
        self.layers = torch.nn.ModuleList(EncoderLayer(dim, heads, ffn) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# --- Llama-style decoder: RMSNorm, rotary embedding, causal attention over a KV cache buffer,
# SwiGLU. dim 512, 8 heads, 4 layers, FFN 1536, vocab 32000, max_len 256. ---------------------
class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecoderLayer(torch.nn.Module):
    def __init__(self, dim, heads, ffn, max_len):
        super().__init__()
        self.heads, self.dim, self.max_len = heads, dim, max_len
        self.attn_norm = RMSNorm(dim)
        self.wq = torch.nn.Linear(dim, dim, bias=False)
        self.wk = torch.nn.Linear(dim, dim, bias=False)
        self.wv = torch.nn.Linear(dim, dim, bias=False)
        self.wo = torch.nn.Linear(dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = torch.nn.Linear(dim, ffn, bias=False)  # gate
        self.w3 = torch.nn.Linear(dim, ffn, bias=False)  # up
        self.w2 = torch.nn.Linear(ffn, dim, bias=False)  # down
        self.register_buffer("k_cache", torch.zeros(1, max_len, dim))
        self.register_buffer("v_cache", torch.zeros(1, max_len, dim))

    def forward(self, h, cos, sin, input_pos, mask):
        s = h.shape[1]
        hd = self.dim // self.heads
        x = self.attn_norm(h)
        q = self.wq(x).view(1, s, self.heads, hd).transpose(1, 2)
        k = self.wk(x).view(1, s, self.heads, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # The cache holds rotated keys, [1, max_len, dim]; this step's rows are written in place.
        self.k_cache[:, input_pos] = k.transpose(1, 2).reshape(1, s, self.dim)
        self.v_cache[:, input_pos] = self.wv(x)
        kh = self.k_cache.view(1, self.max_len, self.heads, hd).transpose(1, 2)
        vh = self.v_cache.view(1, self.max_len, self.heads, hd).transpose(1, 2)
        scores = (q @ kh.transpose(2, 3)) * (1.0 / math.sqrt(hd))
        att = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ vh
        h = h + self.wo(att.transpose(1, 2).reshape(1, s, self.dim))
        x = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(x)) * self.w3(x))


class Decoder(torch.nn.Module):
    """forward(tokens [1, S] int64, input_pos [S] int64) -> logits of the last position
    [1, vocab]. Attention runs over the whole cache (static shapes) with a causal mask."""

    def __init__(self, vocab=32000, dim=512, heads=8, layers=4, ffn=1536, max_len=256):
        super().__init__()
        self.max_len = max_len
        self.emb = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(
            DecoderLayer(dim, heads, ffn, max_len) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.out = torch.nn.Linear(dim, vocab, bias=False)
        hd = dim // heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        freqs = torch.cat((freqs, freqs), dim=-1)  # [max_len, hd]
        self.register_buffer("cos_table", freqs.cos())
        self.register_buffer("sin_table", freqs.sin())

    def forward(self, tokens, input_pos):
        h = self.emb(tokens)
        cos = torch.index_select(self.cos_table, 0, input_pos)  # [S, hd], broadcast over heads
        sin = torch.index_select(self.sin_table, 0, input_pos)
        mask = torch.arange(self.max_len).view(1, -1) > input_pos.view(-1, 1)  # [S, max_len]
        for layer in self.layers:
            h = layer(h, cos, sin, input_pos, mask)
        return self.out(self.norm(h[:, -1, :]))


PREFILL = 128


def calibrate_batch_norm(m, seed):
    """Sets the batch-norm statistics from a few random batches, as training would: with
    torchvision's initialization and unit running variance, MobileNetV2's logits are ~1e-9, which
    makes an accuracy check (and bf16) meaningless; calibrated, they are O(1) like a trained
    net's."""
    g = torch.Generator().manual_seed(seed)
    for b in m.modules():
        if isinstance(b, torch.nn.BatchNorm2d):
            b.reset_running_stats()
            b.momentum = None  # a cumulative average over the batches below
    m.train()
    with torch.no_grad():
        for _ in range(2):
            m(torch.randn(4, 3, 224, 224, generator=g))
    return m.eval()


def build(names=None):
    """The cases in `names` (all when None), in a fixed order."""
    cases = {}
    want = lambda n: names is None or n in names
    if want("resnet18") or want("mobilenet_v2"):
        import torchvision
    for name in ("resnet18", "mobilenet_v2"):
        if want(name):
            torch.manual_seed(0)
            m = calibrate_batch_norm(getattr(torchvision.models, name)(), seed=2)
            x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
            cases[name] = Case(name, m, (x,), ["x"], f"torchvision {name}, 1x3x224x224")
    if want("bert_encoder"):
        torch.manual_seed(0)
        m = Encoder().eval()
        x = torch.randn(1, 128, 768, generator=torch.Generator().manual_seed(1))
        cases["bert_encoder"] = Case("bert_encoder", m, (x,), ["x"],
                                     "BERT-base-like encoder: 12 layers, hidden 768, 12 heads, "
                                     "FFN 3072, sequence 128 (embeddings as input)")
    if want("llama_prefill") or want("llama_decode"):
        torch.manual_seed(0)
        m = Decoder().eval()
        g = torch.Generator().manual_seed(1)
        tokens = torch.randint(0, 32000, (1, PREFILL), generator=g)
        pos = torch.arange(PREFILL)
        if want("llama_prefill"):
            cases["llama_prefill"] = Case(
                "llama_prefill", copy.deepcopy(m), (tokens, pos), ["tokens", "input_pos"],
                f"Llama-style decoder (dim 512, 8 heads, 4 layers, FFN 1536, vocab 32000, KV cache "
                f"256), one {PREFILL}-token prefill")
        if want("llama_decode"):
            # The decode step starts from the cache a prefill filled; that state is the exported
            # buffers' initial value, so every system decodes from the same cache.
            with torch.no_grad():
                m(tokens, pos)
            nxt = torch.randint(0, 32000, (1, 1), generator=g)
            cases["llama_decode"] = Case(
                "llama_decode", m, (nxt, torch.tensor([PREFILL])), ["tokens", "input_pos"],
                f"the same Llama-style decoder, one decode step (1 token) at position {PREFILL}, "
                f"after the prefill")
    return cases


ALL = ["resnet18", "mobilenet_v2", "bert_encoder", "llama_prefill", "llama_decode"]
