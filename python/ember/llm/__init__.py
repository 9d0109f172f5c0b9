"""Language models: a Hugging Face causal-LM checkpoint to an Ember program that `ember generate` runs.

    import ember.llm
    ember.llm.export("path/to/Qwen2.5-0.5B", "qwen.pte", ptd="qwen.ptd", max_context=1024,
                     precision="8da4w")
    # or: python -m ember export-llm path/to/Qwen2.5-0.5B -o qwen.pte --ptd qwen.ptd ...

The directory is what transformers' `save_pretrained` writes (config.json, *.safetensors, and the
tokenizer files, which `ember generate --tokenizer DIR/tokenizer.json` reads). The program has one
`forward(tokens [1, S] int64, input_pos [1] int64) -> logits [1, vocab]` of any S up to the
context, the KV cache as mutable state, and ExecuTorch's LLM constant methods (get_max_seq_len,
get_max_context_len, get_vocab_size, get_n_layers, get_bos_id, get_eos_ids, use_kv_cache,
use_sdpa_with_kv_cache, enable_dynamic_shape), so ExecuTorch's runner conventions hold both ways.
Nothing is downloaded: the directory must hold every file.
"""

import glob
import json
import os
import shutil
import subprocess
import tempfile

from .._errors import ExportError

__all__ = ["PRECISIONS", "chat_template", "constant_methods", "export", "load_decoder",
           "quantize"]

# --precision -> (torchao config name or None, ember compile --precision)
PRECISIONS = {
    "fp32": (None, None),
    "bf16": (None, "bf16"),
    "8da4w": ("8da4w", None),
    "8da8w": ("8da8w", None),
    "int8-weight": ("int8_weight_only", None),
}


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise ExportError(f"cannot read {path}: {e}") from None


def _state_dict(model_dir):
    """The checkpoint's tensors from model.safetensors or its sharded index."""
    from safetensors.torch import load_file

    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(_read_json(index).get("weight_map", {}).values()))
        paths = [os.path.join(model_dir, f) for f in files]
    else:
        paths = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    if not paths:
        bins = glob.glob(os.path.join(model_dir, "*.bin"))
        raise ExportError(f"{model_dir}: no *.safetensors weights" +
                          (" (only PyTorch .bin files: re-save with save_pretrained("
                           "safe_serialization=True))" if bins else ""))
    state = {}
    for p in paths:
        if not os.path.exists(p):
            raise ExportError(f"{p}: named by the checkpoint's index but missing")
        try:
            state.update(load_file(p))
        except Exception as e:  # safetensors raises its own error types
            raise ExportError(f"cannot read {p}: {e}") from None
    return state


def load_decoder(model_dir, max_context=None):
    """(Decoder with the checkpoint's weights, its config) for a transformers model directory."""
    from transformers import AutoConfig

    from ._model import Decoder, DecoderConfig

    if not os.path.isdir(model_dir):
        raise ExportError(f"{model_dir!r} is not a directory (give what save_pretrained wrote)")
    if not os.path.exists(os.path.join(model_dir, "config.json")):
        raise ExportError(f"{model_dir}: no config.json")
    try:
        hf = AutoConfig.from_pretrained(model_dir, local_files_only=True)
    except Exception as e:
        raise ExportError(f"{model_dir}/config.json: {e}") from None
    cfg = DecoderConfig.from_hf(hf)
    gen = os.path.join(model_dir, "generation_config.json")
    if os.path.exists(gen):  # generation's stop tokens win over the model config's
        g = _read_json(gen)
        eos = g.get("eos_token_id")
        if eos is not None:
            cfg.eos_token_ids = [eos] if isinstance(eos, int) else list(eos)
        if g.get("bos_token_id") is not None:
            cfg.bos_token_id = g["bos_token_id"]
    if max_context is None:
        max_context = min(cfg.max_position_embeddings, 2048)
    if not 2 <= max_context <= cfg.max_position_embeddings:
        raise ExportError(f"max_context {max_context}: must lie in [2, "
                          f"{cfg.max_position_embeddings}] (the model's max_position_embeddings)")
    model = Decoder(cfg, max_context).eval()
    model.load_hf_state_dict(_state_dict(model_dir))
    return model, cfg


def quantize(model, precision, group_size=32):
    """The decoder quantized in place as --precision says (torchao's quantize_; fp32 and bf16 leave
    it as it is), which is also the eager reference of the exported program. The linears get the
    precision's torchao config; the token embedding its weights alone at the same bit width (4-bit
    in groups of group_size, or 8-bit per row), which the program gathers a row at a time
    (quantized_decomposed::embedding_4bit / embedding_byte)."""
    config_name = PRECISIONS[precision][0]
    if config_name is None:
        return model
    return _quantize(model, config_name, group_size)


def _quantize(model, config_name, group):
    import torch
    from torchao.quantization import (Int8DynamicActivationIntxWeightConfig, IntxWeightOnlyConfig,
                                      quantize_)
    from torchao.quantization.granularity import PerAxis, PerGroup

    linears = {
        "8da4w": lambda: Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(group)),
        "8da8w": lambda: Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int8, weight_granularity=PerAxis(0)),
        "int8_weight_only": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8,
                                                         granularity=PerAxis(0)),
    }[config_name]()
    embedding = (IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(group))
                 if config_name == "8da4w" else
                 IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)))
    if model.cfg.tie_word_embeddings:  # each of the two gets its own quantized copy
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    quantize_(model, linears)
    quantize_(model, embedding, filter_fn=lambda m, _: isinstance(m, torch.nn.Embedding))
    return model


def _ember_binary(explicit):
    if explicit:
        return explicit
    found = os.environ.get("EMBER_BIN") or shutil.which("ember")
    if found:
        return found
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    built = os.path.join(root, "build", "release", "tools", "ember")
    if os.path.exists(built):
        return built
    raise ExportError("the `ember` compiler was not found: build it (scripts/build release), put "
                      "it on PATH, or set EMBER_BIN")


_SENTINEL = "\x00ember-user-message\x00"


def chat_template(model_dir):
    """(prefix, suffix) around one user message in the tokenizer's chat template, with the
    generation prompt (the assistant's turn) after it; None when the directory has no template."""
    config = os.path.join(model_dir, "tokenizer_config.json")
    has = os.path.exists(config) and _read_json(config).get("chat_template")
    has = has or os.path.exists(os.path.join(model_dir, "chat_template.jinja"))
    if not has:
        return None
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        text = tok.apply_chat_template([{"role": "user", "content": _SENTINEL}], tokenize=False,
                                       add_generation_prompt=True)
    except Exception as e:
        raise ExportError(f"{model_dir}: rendering the chat template failed: {e}") from None
    if text.count(_SENTINEL) != 1:
        raise ExportError(f"{model_dir}: the chat template does not write the user message "
                          "exactly once")
    prefix, suffix = text.split(_SENTINEL)
    return prefix, suffix


def constant_methods(cfg, max_context, chat=None):
    """ExecuTorch's LLM metadata for this model (export_llama's names), and Ember's chat template
    (get_chat_prefix, get_chat_suffix: the text around a user message, rendered at export)."""
    methods = {
        "get_max_seq_len": max_context,
        "get_max_context_len": max_context,
        "get_vocab_size": cfg.vocab_size,
        "get_n_layers": cfg.num_layers,
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": True,
        "enable_dynamic_shape": True,
    }
    if cfg.bos_token_id is not None:
        methods["get_bos_id"] = cfg.bos_token_id
    if cfg.eos_token_ids:
        methods["get_eos_ids"] = list(cfg.eos_token_ids)
    if chat is not None:
        methods["get_chat_prefix"], methods["get_chat_suffix"] = chat
    return methods


def export(model_dir, path, ptd=None, max_context=None, precision="fp32", backend="cpu",
           group_size=32, ember_bin=None, verbose=False):
    """Writes the program at `path` (weights in `ptd` when given); returns `ember compile`'s
    report. ExportError names what cannot be exported (architecture, RoPE type, missing files)."""
    import torch

    from .._export import Dim, export as export_program

    if precision not in PRECISIONS:
        raise ExportError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    if backend not in ("cpu", "portable"):
        raise ExportError(f"backend {backend!r}: expected cpu or portable")
    binary = _ember_binary(ember_bin)
    model, cfg = load_decoder(model_dir, max_context)
    compile_precision = PRECISIONS[precision][1]
    model = quantize(model.fuse_projections(), precision, group_size)
    ctx = model.max_context
    example = (torch.zeros(1, min(4, ctx), dtype=torch.int64), torch.tensor([0]))
    dynamic = [{1: Dim("seq", 1, ctx)}, None]
    with tempfile.TemporaryDirectory() as tmp:
        ep = os.path.join(tmp, "model.ep")
        with torch.no_grad():
            export_program(model, example, ep, dynamic_shapes=dynamic,
                           constant_methods=constant_methods(cfg, ctx, chat_template(model_dir)))
        cmd = [binary, "compile", ep, "-o", path]
        if ptd:
            cmd += ["--ptd", ptd]
        if backend == "cpu":
            cmd += ["--backend", "cpu"]
        if compile_precision:
            cmd += ["--precision", compile_precision]
        if not verbose:
            cmd += ["--quiet"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise ExportError(f"ember compile failed: {r.stderr.strip() or r.stdout.strip()}")
        return r.stdout
