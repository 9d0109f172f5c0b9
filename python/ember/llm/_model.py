"""The decoder Ember exports for a Hugging Face causal LM: Llama and Qwen2 in one module.

    cfg = DecoderConfig.from_hf(transformers.AutoConfig.from_pretrained(model_dir))
    model = Decoder(cfg, max_context=512)
    model.load_hf_state_dict(safetensors_state_dict)
    logits = model(tokens, input_pos)     # tokens int64 [1, S], input_pos int64 [1] -> [1, vocab]

The calling convention is ExecuTorch's LLM programs' (so one runner serves both): `forward` takes
the new tokens and the position of the first of them, writes their keys and values into the KV
cache (mutable buffers [1, max_context, kv_heads, head_dim], ExecuTorch's layout) and returns the
logits of the last token. Written with ATen ops (embedding, linear, index_put on the cache) and
ExecuTorch's fused attention `llama::custom_sdpa` (which reads only the positions written so far,
where a matmul/softmax attention would scan the whole cache behind a mask), so that Ember's
runtime, its backends and ExecuTorch's runtime (which has the op) run it; the arithmetic follows transformers' eager Llama/Qwen2 step by step
(RMSNorm in fp32, RoPE by rotate_half on cos/sin tables computed as transformers computes them),
which is what makes greedy generation equal token for token.
"""

import math
from dataclasses import dataclass, field
from typing import List, Optional

import torch
import torch.nn.functional as F

from .._errors import ExportError

# model_type -> what differs between the families this module implements
_FAMILIES = {
    "llama": {"qkv_bias": None},  # None: from config.attention_bias
    "qwen2": {"qkv_bias": True},
    "mistral": {"qkv_bias": False},
}
# RoPE types whose tables do not depend on the sequence length (transformers' names)
_STATIC_ROPE = ("default", "linear", "llama3", "yarn")


@dataclass
class DecoderConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    tie_word_embeddings: bool
    max_position_embeddings: int
    inv_freq: torch.Tensor = field(repr=False)
    attention_scaling: float = 1.0
    bos_token_id: Optional[int] = None
    eos_token_ids: List[int] = field(default_factory=list)

    @staticmethod
    def from_hf(config):
        """From a transformers PretrainedConfig; ExportError naming what is not supported."""
        mt = getattr(config, "model_type", None)
        if mt not in _FAMILIES:
            raise ExportError(f"model_type {mt!r} is not supported by ember.llm (supported: "
                              f"{', '.join(sorted(_FAMILIES))})")
        act = getattr(config, "hidden_act", "silu")
        if act != "silu":
            raise ExportError(f"hidden_act {act!r} is not supported (ember.llm implements silu)")
        if getattr(config, "use_sliding_window", False):
            raise ExportError("sliding-window attention (use_sliding_window) is not supported")
        heads = config.num_attention_heads
        kv = getattr(config, "num_key_value_heads", None) or heads
        if heads % kv:
            raise ExportError(f"num_attention_heads {heads} is not a multiple of "
                              f"num_key_value_heads {kv}")
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        family = _FAMILIES[mt]
        qkv_bias = family["qkv_bias"]
        if qkv_bias is None:
            qkv_bias = bool(getattr(config, "attention_bias", False))
        inv_freq, scaling = _rope(config, head_dim)
        eos = config.eos_token_id
        eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        return DecoderConfig(
            model_type=mt, vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size, num_layers=config.num_hidden_layers,
            num_heads=heads, num_kv_heads=kv, head_dim=head_dim, rms_norm_eps=config.rms_norm_eps,
            qkv_bias=qkv_bias, o_bias=mt == "llama" and bool(getattr(config, "attention_bias",
                                                                    False)),
            mlp_bias=bool(getattr(config, "mlp_bias", False)),
            tie_word_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
            max_position_embeddings=config.max_position_embeddings, inv_freq=inv_freq,
            attention_scaling=scaling, bos_token_id=config.bos_token_id, eos_token_ids=eos)


def _rope(config, head_dim):
    """(inv_freq [head_dim / 2] fp32, attention scaling) as transformers computes them."""
    params = getattr(config, "rope_parameters", None) or {}
    kind = params.get("rope_type", "default")
    if kind not in _STATIC_ROPE:
        raise ExportError(f"rope_type {kind!r} is not supported (its tables depend on the sequence "
                          f"length; supported: {', '.join(_STATIC_ROPE)})")
    if kind == "default":
        base = params["rope_theta"]
        partial = params.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", 1.0))
        if partial != 1.0:
            raise ExportError(f"partial_rotary_factor {partial} is not supported")
        inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        return inv, 1.0
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    inv, scaling = ROPE_INIT_FUNCTIONS[kind](config, "cpu")
    if inv.numel() * 2 != head_dim:
        raise ExportError(f"rope_type {kind!r}: {inv.numel()} frequencies for head_dim {head_dim}")
    return inv.float(), float(scaling)


_SDPA_SCHEMA = ("custom_sdpa(Tensor query, Tensor key, Tensor value, SymInt start_pos, "
                "Tensor? attn_mask=None, float drop_p=0.0, bool is_causal=False, "
                "float? scale=None) -> Tensor")
_own_library = None


def llama_ops():
    """torch.ops.llama with custom_sdpa: ExecuTorch's definition (its kernel in eager) where
    executorch is installed, else Ember's own, with the same schema and semantics (one definition
    per process: ExecuTorch's library would refuse to load beside another)."""
    global _own_library
    if not hasattr(torch.ops.llama, "custom_sdpa"):
        try:
            import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
        except ImportError:
            _own_library = torch.library.Library("llama", "FRAGMENT")
            _own_library.define(_SDPA_SCHEMA)
            _own_library.impl("custom_sdpa", _custom_sdpa, "CompositeExplicitAutograd")
            _own_library._register_fake("custom_sdpa", _custom_sdpa_fake)
    return torch.ops.llama


def _custom_sdpa(query, key, value, start_pos, attn_mask=None, drop_p=0.0, is_causal=False,
                 scale=None):
    """query [B, S, H, D] over the caches key/value [B, max, KV, D] at positions [0, start_pos +
    S) (row i: [0, start_pos + i] when is_causal); [B, S, H, D]."""
    if attn_mask is not None or drop_p != 0.0:
        raise NotImplementedError("ember.llm's custom_sdpa takes no attn_mask or dropout")
    s, heads, kv = query.shape[1], query.shape[2], key.shape[2]
    end = start_pos + s
    k = key[:, :end].repeat_interleave(heads // kv, dim=2).transpose(1, 2)  # [B, H, end, D]
    v = value[:, :end].repeat_interleave(heads // kv, dim=2).transpose(1, 2)
    mask = None
    if is_causal:
        rows = torch.arange(s)[:, None] + start_pos
        mask = torch.arange(end)[None, :] <= rows
    out = F.scaled_dot_product_attention(query.transpose(1, 2), k, v, attn_mask=mask,
                                         scale=scale)
    return out.transpose(1, 2).contiguous()


def _custom_sdpa_fake(query, key, value, start_pos, attn_mask=None, drop_p=0.0, is_causal=False,
                      scale=None):
    return torch.empty_like(query)


def _concatenated(linears):
    """One float Linear computing `linears` (same input) side by side."""
    out = torch.nn.Linear(linears[0].in_features, sum(m.out_features for m in linears),
                          bias=linears[0].bias is not None)
    with torch.no_grad():
        out.weight.copy_(torch.cat([m.weight for m in linears]))
        if out.bias is not None:
            out.bias.copy_(torch.cat([m.bias for m in linears]))
    return out


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, cfg: DecoderConfig, max_context: int):
        super().__init__()
        d, hd = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, hd
        self.q_proj = torch.nn.Linear(d, cfg.num_heads * hd, bias=cfg.qkv_bias)
        self.k_proj = torch.nn.Linear(d, cfg.num_kv_heads * hd, bias=cfg.qkv_bias)
        self.v_proj = torch.nn.Linear(d, cfg.num_kv_heads * hd, bias=cfg.qkv_bias)
        self.o_proj = torch.nn.Linear(cfg.num_heads * hd, d, bias=cfg.o_bias)
        shape = (1, max_context, cfg.num_kv_heads, hd)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def fuse(self):
        """q, k and v projections as one linear of their rows side by side (qkv_proj): one matmul
        and one quantization of x instead of three, the same products (each output row reads only
        its own weight row, so torchao's per-row quantization of it is the same too)."""
        parts = (self.q_proj, self.k_proj, self.v_proj)
        self.qkv_proj = _concatenated(parts)
        del self.q_proj, self.k_proj, self.v_proj

    def forward(self, x, cos, sin, pos, start):
        # x: [S, hidden]; the sequence is dim 0 wherever it can be (see Decoder.forward)
        s = x.shape[0]
        if hasattr(self, "qkv_proj"):
            # slices rather than split: ops the cpu engine takes, so the layer stays one delegate
            qkv = self.qkv_proj(x)
            nq, nkv = self.heads * self.head_dim, self.kv_heads * self.head_dim
            q, k, v = qkv[:, :nq], qkv[:, nq:nq + nkv], qkv[:, nq + nkv:]
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(s, self.heads, self.head_dim)
        k = k.view(s, self.kv_heads, self.head_dim)
        v = v.view(s, self.kv_heads, self.head_dim)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        # index_put on the buffer itself (no view of it in between): the compiler writes the
        # new rows into the cache in place
        batch = torch.zeros_like(pos)
        self.k_cache[batch, pos] = k
        self.v_cache[batch, pos] = v
        # ExecuTorch's fused attention: query row i sees cache positions [0, start + i], heads
        # grouped over the key heads, scale 1/sqrt(head_dim); it reads no position past them
        att = llama_ops().custom_sdpa(q[None], self.k_cache, self.v_cache, start, None, 0.0, True,
                                      None)  # [1, S, heads, head_dim]
        return self.o_proj(att.view(s, self.heads * self.head_dim))


class MLP(torch.nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        d, f, b = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.gate_proj = torch.nn.Linear(d, f, bias=b)
        self.up_proj = torch.nn.Linear(d, f, bias=b)
        self.down_proj = torch.nn.Linear(f, d, bias=b)

    def fuse(self):
        """gate and up projections as one linear (gate_up_proj), as Attention.fuse."""
        self.gate_up_proj = _concatenated((self.gate_proj, self.up_proj))
        del self.gate_proj, self.up_proj

    def forward(self, x):
        if hasattr(self, "gate_up_proj"):
            gate_up = self.gate_up_proj(x)
            f = gate_up.shape[-1] // 2
            gate, up = gate_up[:, :f], gate_up[:, f:]
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(F.silu(gate) * up)


class Layer(torch.nn.Module):
    def __init__(self, cfg: DecoderConfig, max_context: int):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg, max_context)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, pos, start):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, pos, start)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(torch.nn.Module):
    """forward(tokens [1, S] int64, input_pos [1] int64) -> logits [1, vocab] of the last token."""

    def __init__(self, cfg: DecoderConfig, max_context: int):
        super().__init__()
        if max_context < 1:
            raise ExportError(f"max_context must be at least 1, got {max_context}")
        self.cfg, self.max_context = cfg, max_context
        self.embed_tokens = torch.nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = torch.nn.ModuleList(Layer(cfg, max_context) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = torch.nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        # cos/sin of every position, as transformers' rotary embedding computes them (fp32)
        freqs = torch.arange(max_context, dtype=torch.float32)[:, None] * cfg.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos() * cfg.attention_scaling, persistent=False)
        self.register_buffer("rope_sin", emb.sin() * cfg.attention_scaling, persistent=False)

    def forward(self, tokens, input_pos):
        # Activations are [S, hidden]: the sequence length, the program's dynamic size, is dim 0
        # of every linear, norm and element-wise op, where backends take a dynamic size (the cpu
        # engine's dynamic batch); attention, over the whole cache, is indexed by heads.
        s = tokens.shape[1]
        pos = input_pos + torch.arange(s, dtype=torch.int64)  # [S]
        cos = self.rope_cos[pos][:, None, :]  # [S, 1, head_dim]
        sin = self.rope_sin[pos][:, None, :]
        # The position as a number (ExecuTorch's start_pos), which the attention op takes; the
        # kernels check that the new positions fit the cache.
        start = input_pos[0].item()
        torch._check(start >= 0)
        torch._check(start + s <= self.max_context)
        x = self.embed_tokens(tokens[0])
        for layer in self.layers:
            x = layer(x, cos, sin, pos, start)
        return self.lm_head(self.norm(x[-1:]))

    def load_hf_state_dict(self, state):
        """Loads transformers' parameter names (model.layers.N..., lm_head.weight); ExportError
        naming a missing or unexpected tensor or a shape that differs."""
        own = {}
        for name, p in self.named_parameters(remove_duplicate=False):
            hf = "lm_head.weight" if name == "lm_head.weight" else "model." + name
            own[hf] = p
        if self.cfg.tie_word_embeddings:
            own.pop("lm_head.weight")
            state = {k: v for k, v in state.items() if k != "lm_head.weight"}
        missing = sorted(set(own) - set(state))
        if missing:
            raise ExportError(f"the checkpoint has no {missing[0]}"
                              + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        unexpected = sorted(k for k in set(state) - set(own) if not k.endswith("rotary_emb.inv_freq"))
        if unexpected:
            raise ExportError(f"the checkpoint has {unexpected[0]}, which this {self.cfg.model_type} "
                              "decoder does not use" +
                              (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ""))
        with torch.no_grad():
            for k, p in own.items():
                t = state[k]
                if tuple(t.shape) != tuple(p.shape):
                    raise ExportError(f"{k}: the checkpoint's shape {tuple(t.shape)} differs from "
                                      f"the config's {tuple(p.shape)}")
                p.copy_(t.to(torch.float32))

    def fuse_projections(self):
        """Each layer's q/k/v and gate/up projections as one linear each (after loading the
        checkpoint, before quantizing): fewer, larger matmuls computing the same values."""
        for layer in self.layers:
            layer.self_attn.fuse()
            layer.mlp.fuse()
        return self

    def reset_cache(self):
        for layer in self.layers:
            layer.self_attn.k_cache.zero_()
            layer.self_attn.v_cache.zero_()
