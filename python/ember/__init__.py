"""Ember's Python side: the exporter, and the runtime (ember.runtime).

    import ember
    ember.export(model.eval(), (torch.randn(1, 3, 224, 224),), "model.ep")
    header, doc, tensors = ember.read_exported_program("model.ep")

    from ember.runtime import Program      # needs no torch
    outputs = Program.load("model.pte").forward(x)

The exported-program file format is documented in docs/exported-program.md. The exporter's names
load on first use, so `import ember.runtime` does not import torch.
"""

import importlib

__version__ = "0.1.0"

# name -> the submodule that defines it
_LAZY = {
    "Dim": "._export",
    "ExportError": "._errors",
    "FORMAT_VERSION": "._format",
    "MAGIC": "._format",
    "capture": "._export",
    "export": "._export",
    "read_exported_program": "._format",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__():
    return __all__
