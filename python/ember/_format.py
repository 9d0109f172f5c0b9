"""Reading and writing the exported-program container (docs/exported-program.md).

Layout: a 64-byte header, a UTF-8 JSON document, then the tensor data region. Every tensor's bytes
start at a 64-byte aligned offset inside the data region, so a reader can map the file and point at
weights without copying.
"""

import json
import struct

from ._errors import ExportError

MAGIC = b"EMBEREP\x00"
FORMAT_VERSION = 1
HEADER_SIZE = 64
ALIGNMENT = 64
# magic, version, header_size, json_offset, json_size, data_offset, data_size, 16 reserved bytes.
_HEADER = struct.Struct("<8sIIQQQQ16x")
assert _HEADER.size == HEADER_SIZE


def _align(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def write_file(path, document, blobs):
    """Writes `document` (a JSON-able dict) and `blobs` (bytes, in the order of the offsets the
    document already names) to `path`. `blobs` is a list of (offset, bytes)."""
    text = json.dumps(document, indent=1, allow_nan=False).encode("utf-8")
    json_offset = HEADER_SIZE
    data_offset = _align(json_offset + len(text))
    data_size = 0
    for offset, data in blobs:
        data_size = max(data_size, offset + len(data))
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, HEADER_SIZE, json_offset, len(text), data_offset,
                          data_size)
    with open(path, "wb") as f:
        f.write(header)
        f.write(text)
        f.write(b"\x00" * (data_offset - json_offset - len(text)))
        position = 0
        for offset, data in blobs:
            if offset < position or offset % ALIGNMENT:
                raise AssertionError("tensor blobs must be sorted and aligned")
            f.write(b"\x00" * (offset - position))
            f.write(data)
            position = offset + len(data)


def read_exported_program(path):
    """Returns (header dict, JSON document, {fqn: torch.Tensor}) for an exported-program file."""
    import torch

    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < HEADER_SIZE:
        raise ExportError(f"{path}: too short for an exported-program header")
    magic, version, header_size, json_offset, json_size, data_offset, data_size = _HEADER.unpack_from(
        raw)
    if magic != MAGIC:
        raise ExportError(f"{path}: not an exported-program file (bad magic {magic!r})")
    header = dict(version=version, header_size=header_size, json_offset=json_offset,
                  json_size=json_size, data_offset=data_offset, data_size=data_size)
    document = json.loads(raw[json_offset:json_offset + json_size].decode("utf-8"))
    data = raw[data_offset:data_offset + data_size]
    tensors = {}
    for entry in document["tensors"]:
        dtype = _torch_dtype(entry["dtype"])
        blob = bytearray(data[entry["offset"]:entry["offset"] + entry["nbytes"]])
        flat = torch.frombuffer(blob, dtype=torch.uint8) if blob else torch.empty(0, dtype=torch.uint8)
        tensors[entry["name"]] = flat.view(dtype).reshape(entry["shape"]) if blob else torch.empty(
            entry["shape"], dtype=dtype)
    return header, document, tensors


DTYPE_NAMES = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "float64": "float64", "double": "float64", "int8": "int8",
    "int16": "int16", "short": "int16", "int32": "int32", "int": "int32", "int64": "int64",
    "long": "int64", "uint8": "uint8", "bool": "bool", "complex64": "complex64",
    "cfloat": "complex64", "complex128": "complex128", "cdouble": "complex128",
}


def dtype_name(dtype):
    """The file's name for a torch.dtype: the torch attribute name of its canonical spelling."""
    name = str(dtype).replace("torch.", "")
    if name not in DTYPE_NAMES:
        raise ExportError(f"dtype {dtype} is not supported by the exported-program format")
    return DTYPE_NAMES[name]


def _torch_dtype(name):
    import torch

    return getattr(torch, name)
