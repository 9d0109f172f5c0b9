"""Ember's Python side: the exporter.

    import ember
    ember.export(model.eval(), (torch.randn(1, 3, 224, 224),), "model.ep")
    header, doc, tensors = ember.read_exported_program("model.ep")

The exported-program file format is documented in docs/exported-program.md.
"""

from ._errors import ExportError
from ._export import Dim, capture, export
from ._format import FORMAT_VERSION, MAGIC, read_exported_program

__version__ = "0.1.0"

__all__ = [
    "Dim",
    "ExportError",
    "FORMAT_VERSION",
    "MAGIC",
    "capture",
    "export",
    "read_exported_program",
    "__version__",
]
