"""Capture a torch.nn.Module as an ATen graph and write it as an exported program.

One capture path produces the document (docs/exported-program.md): torch.export.export, then
ExportedProgram.run_decompositions() to the core ATen opset. The graph is functional: in-place
writes to buffers and user inputs come back as mutation outputs of the graph signature, which also
names every parameter, buffer and constant. Dynamic dims are torch.export Dims; torch's symbols are
renamed after the declared dims. Ember needs the torch pinned in scripts/requirements.lock.

export() and capture() are here; the steps are in their own modules: _inputs.py checks the
arguments (Dim), _capture.py runs torch.export and the decompositions, _writer.py writes the
document and its tensor data.
"""

import re

import torch

from ._capture import _capture_torch_export, _collect_state, forward_argument_names
from ._errors import ExportError
from ._format import write_file
from ._inputs import Dim, _check_dynamic_shapes, _check_inputs
from ._writer import _Writer

__all__ = ["Dim", "capture", "export"]

# The oldest torch whose torch.export the exporter works with; scripts/requirements.lock pins 2.15.
_MIN_TORCH = (2, 6)


def _torch_version():
    match = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def export(module, example_inputs, path, dynamic_shapes=None, strict=False, constant_methods=None):
    """Captures `module(*example_inputs)` and writes one exported-program file at `path`.

    dynamic_shapes: None, or one entry per input: None (all dims static) or {dim: Dim | (min, max)}.
    strict: passed to torch.export.export. False (the default, as in torch) traces the module as
    Python runs it; True traces it with TorchDynamo, which refuses more programs. Both give the
    same ops (contract C11); placeholders and metadata may take different forms.
    constant_methods: None, or {name: value}: methods of the program besides forward that return
    the value (an int, float, bool or str, or a list of them), as ExecuTorch's constant methods
    carry what a runner must know of a program (an LLM's get_max_seq_len, get_eos_ids, ...).
    Returns the JSON document that was written (useful for inspection and tests).
    Raises ExportError with a message naming the problem for anything it cannot export.
    """
    document, blobs = capture(module, example_inputs, dynamic_shapes, strict=strict)
    methods = _check_constant_methods(constant_methods)
    if methods:
        document["constant_methods"] = methods
    write_file(path, document, blobs)
    return document


def _check_constant_methods(methods):
    """[{"name", "value"}] for the document; ExportError naming a bad name or value."""
    if methods is None:
        return []
    if not isinstance(methods, dict):
        raise ExportError(f"constant_methods must be a dict of name -> value, got "
                          f"{type(methods).__name__}")

    def scalar(v):
        return isinstance(v, (bool, int, float, str))

    out = []
    for name, value in methods.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ExportError(f"constant method name {name!r} is not an identifier")
        if name == "forward":
            raise ExportError("constant method 'forward' would replace the program's method")
        if isinstance(value, (list, tuple)) and all(scalar(v) for v in value):
            value = list(value)
        elif not scalar(value):
            raise ExportError(f"constant method {name!r}: {value!r} is not an int, float, bool or "
                              "str, or a list of them")
        if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
            raise ExportError(f"constant method {name!r}: {value} does not fit in int64")
        out.append({"name": name, "value": value})
    return out


def capture(module, example_inputs, dynamic_shapes=None, strict=False):
    """Returns (document, blobs): the JSON document and the (offset, bytes) tensor data.

    The arguments are those of export().
    """
    if _torch_version() < _MIN_TORCH:
        raise ExportError(f"torch {torch.__version__} is too old: Ember's exporter needs the torch "
                          "pinned in scripts/requirements.lock (2.15); run scripts/setup")
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"export needs a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(strict, bool):
        raise ExportError(f"strict must be True or False, got {strict!r}")
    inputs = _check_inputs(example_inputs)
    dims = _check_dynamic_shapes(dynamic_shapes, inputs)
    state = _collect_state(module)
    graph = _capture_torch_export(module, inputs, dims, state, strict)
    graph.user_names = forward_argument_names(module, len(inputs))
    return _Writer(graph, state).document_and_blobs()
