"""Checks of export()'s arguments: the example inputs and their dynamic shapes (`Dim`).

Everything here runs before tracing, so a mistake in the arguments is reported at once, naming the
input and dim, instead of after minutes inside torch.export.
"""

import re

import torch

from ._errors import ExportError
from ._format import dtype_name

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Dim:
    """A bounded dynamic dimension: `Dim("batch", min=1, max=8)`."""

    def __init__(self, name=None, min=1, max=None):
        if max is None:
            raise ExportError("a dynamic dim needs an upper bound (max)")
        if name is not None and not _IDENTIFIER.match(name):
            raise ExportError(f"dynamic dim name {name!r} is not an identifier")
        if not (isinstance(min, int) and isinstance(max, int)) or min < 0 or max < min:
            raise ExportError(f"dynamic dim bounds must be integers with 0 <= min <= max, got "
                              f"[{min}, {max}]")
        self.name, self.min, self.max = name, min, max

    def __repr__(self):
        return f"Dim({self.name!r}, min={self.min}, max={self.max})"


def _check_inputs(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise ExportError("example_inputs must be a tensor or a tuple of tensors, got "
                          f"{type(example_inputs).__name__}")
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise ExportError(f"example input {i} is a {type(x).__name__}; only tensor inputs are "
                              "supported (bind other arguments in a wrapper module)")
        if x.layout != torch.strided:
            raise ExportError(f"example input {i} has layout {x.layout}; only dense (strided) "
                              "tensors are supported")
        if x.is_quantized:
            raise ExportError(f"example input {i} is a quantized tensor; not supported")
        if x.device.type != "cpu":
            raise ExportError(f"example input {i} is on {x.device}; pass CPU tensors")
        dtype_name(x.dtype)
    return tuple(example_inputs)


def _check_dynamic_shapes(dynamic_shapes, inputs):
    """Returns [(input index, dim, Dim)] with every Dim named."""
    if dynamic_shapes is None:
        return []
    if isinstance(dynamic_shapes, dict):
        raise ExportError("dynamic_shapes must be a sequence with one entry per input")
    if len(dynamic_shapes) != len(inputs):
        raise ExportError(f"dynamic_shapes has {len(dynamic_shapes)} entries for {len(inputs)} "
                          "inputs")
    result, names = [], set()
    for i, entry in enumerate(dynamic_shapes):
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise ExportError(f"dynamic_shapes[{i}] must be None or a dict {{dim: Dim}}")
        for d, spec in sorted(entry.items()):
            rank = inputs[i].dim()
            if not isinstance(d, int) or not -rank <= d < rank:
                raise ExportError(f"dynamic_shapes[{i}]: dim {d} is out of range for a rank-{rank} "
                                  "input")
            d %= max(rank, 1)
            if isinstance(spec, tuple):
                spec = Dim(None, *spec)
            if not isinstance(spec, Dim):
                raise ExportError(f"dynamic_shapes[{i}][{d}] must be a Dim or a (min, max) tuple")
            name = spec.name or f"s{len(result)}"
            if name in names:
                raise ExportError(f"dynamic dim name {name!r} is used twice")
            names.add(name)
            size = inputs[i].shape[d]
            if not spec.min <= size <= spec.max:
                raise ExportError(f"input {i} dim {d}: example size {size} is outside the declared "
                                  f"range [{spec.min}, {spec.max}]")
            result.append((i, d, Dim(name, spec.min, spec.max)))
    return result
