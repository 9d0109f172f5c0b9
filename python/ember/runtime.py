"""Ember's runtime from Python: load a .pte (and its .ptd) and run its methods.

    from ember.runtime import Program
    p = Program.load("model.pte", data="model.ptd")
    (y,) = p.forward(x)                  # numpy arrays in -> numpy arrays out
    (y,) = p.method("forward")(x_torch)  # torch tensors in -> torch tensors out
    p.method("forward").meta             # dtypes, sizes (upper bounds), dynamic or not

Inputs are read in place when they are CPU arrays of the declared dtype laid out in the method
input's dim order (C order, or channels-last for a channels-last input); one in another layout is
copied into the method's order first. The method copies them into its planned memory as it does
from C++. Outputs are
fresh arrays (the method reuses its own buffers on the next call). bfloat16 needs torch (numpy has
no such dtype). Every failure of the runtime raises EmberRuntimeError with the runtime's message.
The backends of the build (loopback, and cpu when built with oneDNN) are registered on first use.

The native half is the `_ember_runtime` extension that `scripts/build release` builds and makes
importable from the project's .venv.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

try:
    import _ember_runtime as _native
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "ember.runtime needs Ember's native runtime module (_ember_runtime), which "
        "`scripts/build release` builds and registers in the project's .venv; "
        f"it was not found ({e})") from e

EmberRuntimeError = _native.EmberRuntimeError

__all__ = ["EmberRuntimeError", "Generation", "Method", "MethodMeta", "Profile", "Program",
           "TensorMeta", "TextGenerator", "call_kernel"]


@dataclass(frozen=True)
class TensorMeta:
    """One tensor input or output of a method, as the program declares it."""

    dtype: str                # PyTorch's name: "float32", "int64", ...
    sizes: tuple              # the sizes, or their upper bounds when dynamic
    dim_order: tuple
    dynamic: bool             # True: any sizes up to `sizes` are accepted
    nbytes: int               # at the upper bound


@dataclass(frozen=True)
class MethodMeta:
    name: str
    inputs: tuple             # TensorMeta, or the kind ("Int", "Double", "Bool", ...) of a scalar
    outputs: tuple
    num_instructions: int
    planned_buffer_bytes: tuple


def _value_meta(d: Dict[str, Any]):
    if d["kind"] != "Tensor":
        return d["kind"]
    return TensorMeta(d["dtype"], tuple(d["sizes"]), tuple(d["dim_order"]), d["dynamic"],
                      d["nbytes"])


def _torch():
    return sys.modules.get("torch")


def _is_torch_tensor(x) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


_NUMPY_NAMES = {
    np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
    np.dtype(np.float16): "float16", np.dtype(np.int64): "int64", np.dtype(np.int32): "int32",
    np.dtype(np.int16): "int16", np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8",
    np.dtype(np.bool_): "bool",
}


def _convert_input(index: int, x, keep_layout: bool = False):
    """An argument as the native module takes it: (buffer, dtype name), or a Python scalar.
    keep_layout: an array or tensor dense in any dim order (channels-last, say) is passed as it
    is, which the native side reads in place where the method's input has that order and lays out
    in the method's order otherwise; else (and for other layouts) a C-order copy."""
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if _is_torch_tensor(x):
        if x.device.type != "cpu":
            raise EmberRuntimeError(f"input {index}: a tensor on {x.device}; Ember runs on the CPU")
        torch = _torch()
        t = x.detach()
        if not (keep_layout and _dense(t.stride(), t.shape, 1)):
            t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return (t.view(torch.int16).numpy(), "bfloat16")
        x = t.numpy()
    if not isinstance(x, np.ndarray):
        raise EmberRuntimeError(
            f"input {index}: a {type(x).__name__}; pass a numpy array, a torch tensor, "
            "an int, a float or a bool")
    name = _NUMPY_NAMES.get(x.dtype)
    if name is None:
        raise EmberRuntimeError(f"input {index}: numpy dtype {x.dtype} is not one Ember runs")
    if x.flags["C_CONTIGUOUS"] or (keep_layout and _dense(x.strides, x.shape, x.itemsize)):
        return (x, name)
    return (x.copy(order="C"), name)  # not np.ascontiguousarray: it makes a 0-d array 1-d


def _dense(strides, shape, unit) -> bool:
    """Whether strides (in units of `unit`: 1 for torch's, the item size for numpy's) lay out
    shape densely in some order of its dims."""
    expected = unit
    for d in sorted(range(len(shape)), key=lambda d: strides[d]):
        if shape[d] <= 1:
            continue
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def _convert_output(value, as_torch: bool):
    if not isinstance(value, tuple):
        return value
    array, dtype = value
    if dtype == "bfloat16":
        torch = _torch()
        if torch is None:
            raise EmberRuntimeError("a bfloat16 output needs torch (numpy has no bfloat16)")
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    if as_torch:
        return _torch().from_numpy(array)
    return array


class Method:
    """A method of a loaded program; call it with the method's inputs, in order."""

    def __init__(self, program: "Program", name: str):
        self._program = program
        self.name = name
        d = program._native.method_meta(name)
        self.meta = MethodMeta(d["name"], tuple(_value_meta(v) for v in d["inputs"]),
                               tuple(_value_meta(v) for v in d["outputs"]),
                               d["num_instructions"], tuple(d["planned_buffer_bytes"]))

    def __call__(self, *inputs) -> List[Any]:
        """Runs the method. Tensor outputs are torch tensors when any input was one, numpy arrays
        otherwise; scalar outputs are Python numbers."""
        as_torch = any(_is_torch_tensor(x) for x in inputs)
        args = [_convert_input(i, x, keep_layout=True) for i, x in enumerate(inputs)]
        outs = self._program._native.execute(self.name, args)
        return [_convert_output(v, as_torch) for v in outs]

    def enable_profiling(self, on: bool = True) -> None:
        """Records every later call (each kernel and delegate call, and the steps delegates
        report) until turned off; off (the default) costs nothing measurable."""
        self._program._native.set_profiling(self.name, bool(on))

    def profile(self) -> "Profile":
        """What profiling recorded since it was enabled (or last cleared)."""
        return Profile(self._program._native, self.name)

    def __repr__(self) -> str:
        return f"<ember.runtime.Method {self.name}: {len(self.meta.inputs)} inputs>"


class Profile:
    """The calls profiled so far: the same data as `ember run --profile` / `--trace`."""

    def __init__(self, native, name: str):
        self._native = native
        self._name = name
        self.calls = native.profile_calls(name)
        # dicts: name, backend (None for instructions), pc, delegate (-1 for kernels),
        # start_ns, end_ns
        self.events = native.profile_events(name)

    def table(self) -> str:
        """Per op kind, per delegate step and per instruction: calls, total, mean, share."""
        return self._native.profile_table(self._name)

    def write_chrome_trace(self, path: str) -> None:
        """Chrome trace events (open in Perfetto or chrome://tracing)."""
        self._native.write_chrome_trace(self._name, str(path))

    def clear(self) -> None:
        self._native.clear_profile(self._name)


class Program:
    """A loaded .pte program. Not thread-safe: use one Program per thread."""

    def __init__(self, native):
        self._native = native
        self._methods: Dict[str, Method] = {}

    @classmethod
    def load(cls, path: str, data: Optional[str] = None, *, load_mode: str = "mmap",
             num_threads: int = 0) -> "Program":
        """Loads and verifies `path` (and the weights file `data`). load_mode: "mmap" or "file";
        num_threads: threads for kernels and delegates (0 keeps the current setting)."""
        return cls(_native.Program(str(path), "" if data is None else str(data), load_mode,
                                   int(num_threads)))

    @property
    def method_names(self) -> Sequence[str]:
        return list(self._native.method_names())

    def method(self, name: str) -> Method:
        """The method `name`, loaded (its memory allocated and its delegates initialized)."""
        if name not in self._methods:
            m = Method(self, name)
            self._native.load_method(name)
            self._methods[name] = m
        return self._methods[name]

    def forward(self, *inputs) -> List[Any]:
        return self.method("forward")(*inputs)

    def __repr__(self) -> str:
        return f"<ember.runtime.Program methods={self.method_names}>"


@dataclass(frozen=True)
class Generation:
    """What TextGenerator.generate returns: the new text and tokens, and the statistics."""

    text: str
    tokens: List[int]             # the new tokens (an EOS that stopped generation not included)
    prompt_tokens: int
    stop_reason: str              # "eos", "max_new_tokens" or "context"
    prefill_ms: float
    first_token_ms: float         # from the call to the first new token, tokenizing included
    decode_ms: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float


class TextGenerator:
    """Generates text with an LLM program (docs/llm.md): the loop of `ember generate`.

        g = TextGenerator.load("qwen.pte", tokenizer="tokenizer.json", data="qwen.ptd")
        out = g.generate("Once upon a time", max_new_tokens=64)   # greedy
        print(out.text, out.decode_tokens_per_s)

    The program follows ExecuTorch's LLM convention (Ember's export-llm and ExecuTorch's
    export_llama write it); the tokenizer is a Hugging Face tokenizer.json or a SentencePiece
    .model (or a directory with one). Not thread-safe.
    """

    def __init__(self, native):
        self._native = native

    @classmethod
    def load(cls, path: str, tokenizer: str, data: Optional[str] = None, *,
             num_threads: int = 0) -> "TextGenerator":
        if not hasattr(_native, "TextGenerator"):
            raise EmberRuntimeError("this build has no LLM runner (runtime/llm needs Debian's "
                                    "libpcre2-dev, libutf8proc-dev and libsentencepiece-dev)")
        return cls(_native.TextGenerator(str(path), str(tokenizer),
                                         "" if data is None else str(data), int(num_threads)))

    @property
    def metadata(self) -> Dict[str, Any]:
        """What the program says of itself: max_seq_len, max_context_len, vocab_size, bos_id,
        eos_ids, enable_dynamic_shape, has_chat_template."""
        return dict(self._native.metadata())

    def generate(self, prompt: str, max_new_tokens: int = 128, *, temperature: float = 0.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int = 0, chat: bool = False,
                 ignore_eos: bool = False, on_text=None) -> Generation:
        """Generates from the start of the context; `on_text(piece)` gets the text as it
        completes. Temperature 0 is greedy; chat=True puts the prompt in the program's chat
        template; ignore_eos=True generates max_new_tokens whatever comes (benchmarks)."""
        d = self._native.generate(prompt, int(max_new_tokens), float(temperature), int(top_k),
                                  float(top_p), int(seed), bool(chat), bool(ignore_eos), on_text)
        return Generation(text=d["text"], tokens=list(d["tokens"]),
                          prompt_tokens=d["prompt_tokens"], stop_reason=d["stop_reason"],
                          prefill_ms=d["prefill_ms"], first_token_ms=d["first_token_ms"],
                          decode_ms=d["decode_ms"],
                          prefill_tokens_per_s=d["prefill_tokens_per_s"],
                          decode_tokens_per_s=d["decode_tokens_per_s"])

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """The tokenizer's ids for `text` (Ember's C++ tokenizer)."""
        return list(self._native.encode(text, bool(add_special_tokens)))

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._native.decode([int(i) for i in ids], bool(skip_special_tokens))


def call_kernel(name: str, *args) -> None:
    """Calls one registered kernel (``"quantized_decomposed::quantize_per_tensor.out"``) with
    `args` in the out-variant order of a program: the schema's arguments, then the out tensor(s),
    then the out(s) again. It is how single kernels are tested against PyTorch's own reference
    implementations from Python.

    Tensors are numpy arrays or torch tensors; the kernel writes its outs into them in place.
    Scalars are Python ints, floats and bools (a ScalarType argument is its int code), None, str;
    lists of ints, floats or bools; lists of tensors (None items: an optional-tensor list).
    Raises EmberRuntimeError with the kernel's message when the kernel fails, or when an argument
    does not fit the kernel's registered signature.
    """
    write_back = []  # (caller's tensor, converted buffer) where the conversion copied
    converted_by_id = {}  # one buffer per tensor object: an out and its repeat are one tensor

    def convert(index, x):
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, (list, tuple)):
            return [convert(index, item) for item in x]
        if id(x) in converted_by_id:
            return converted_by_id[id(x)]
        converted = _convert_input(index, x)
        converted_by_id[id(x)] = converted
        if isinstance(converted, tuple):
            buffer = converted[0]
            source = x.numpy() if _is_torch_tensor(x) and x.dtype != _torch().bfloat16 else x
            if not (isinstance(source, np.ndarray) and np.shares_memory(source, buffer)):
                write_back.append((x, converted))
        return converted

    native_args = [convert(i, x) for i, x in enumerate(args)]
    _native.call_kernel(name, native_args)
    for original, (buffer, dtype) in write_back:
        if _is_torch_tensor(original):
            torch = _torch()
            value = torch.from_numpy(buffer)
            if dtype == "bfloat16":
                value = value.view(torch.bfloat16)
            original.copy_(value.view(original.shape))
        elif isinstance(original, np.ndarray):
            np.copyto(original, buffer.reshape(original.shape))
