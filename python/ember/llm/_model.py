"""The decoder Ember exports for a Hugging Face causal LM: Llama and Qwen2 in one module.

    cfg = DecoderConfig.from_hf(transformers.AutoConfig.from_pretrained(model_dir))
    model = Decoder(cfg, max_context=512)
    model.load_hf_state_dict(safetensors_state_dict)
    logits = model(tokens, input_pos)     # tokens int64 [1, S], input_pos int64 [1] -> [1, vocab]

The calling convention is ExecuTorch's LLM programs' (so one runner serves both): `forward` takes
the new tokens and the position of the first of them, writes their keys and values into the KV
cache (mutable buffers [1, max_context, kv_heads, head_dim], ExecuTorch's layout) and returns the
logits of the last token. Written with plain ATen ops (embedding, linear, index_put on the cache,
matmul/softmax attention over the cache behind a causal mask) so that every backend and the
portable kernels can run it; the arithmetic follows transformers' eager Llama/Qwen2 step by step
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

    def forward(self, x, cos, sin, pos, mask):
        # x: [S, hidden]; the sequence is dim 0 wherever it can be (see Decoder.forward)
        s = x.shape[0]
        q = self.q_proj(x).view(s, self.heads, self.head_dim)
        k = self.k_proj(x).view(s, self.kv_heads, self.head_dim)
        v = self.v_proj(x).view(s, self.kv_heads, self.head_dim)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        self.k_cache[0, pos] = k
        self.v_cache[0, pos] = v
        group = self.heads // self.kv_heads
        # [kv_heads, group * s, head_dim]: the query heads that share a key head, side by side
        qh = q.view(s, self.kv_heads, group, self.head_dim).permute(1, 2, 0, 3)
        qh = qh.reshape(self.kv_heads, group * s, self.head_dim)
        kh = self.k_cache[0].transpose(0, 1)  # [kv_heads, max_context, head_dim]
        vh = self.v_cache[0].transpose(0, 1)
        scores = (qh @ kh.transpose(1, 2)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores.masked_fill(mask, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ vh  # [kv_heads, group * s, head_dim]
        att = att.view(self.kv_heads, group, s, self.head_dim).permute(2, 0, 1, 3)
        return self.o_proj(att.reshape(s, self.heads * self.head_dim))


class MLP(torch.nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        d, f, b = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.gate_proj = torch.nn.Linear(d, f, bias=b)
        self.up_proj = torch.nn.Linear(d, f, bias=b)
        self.down_proj = torch.nn.Linear(f, d, bias=b)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(torch.nn.Module):
    def __init__(self, cfg: DecoderConfig, max_context: int):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg, max_context)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, pos, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, pos, mask)
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
        # True where a query (column block) must not see a cache position: [group * S, max_context]
        # for the query heads of a group (rows group-major, as Attention lays them out)
        group = self.cfg.num_heads // self.cfg.num_kv_heads
        cols = torch.arange(self.max_context, dtype=torch.int64)
        mask = (cols[None, :] > pos[:, None]).repeat(group, 1)
        x = self.embed_tokens(tokens[0])
        for layer in self.layers:
            x = layer(x, cos, sin, pos, mask)
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

    def reset_cache(self):
        for layer in self.layers:
            layer.self_attn.k_cache.zero_()
            layer.self_attn.v_cache.zero_()
