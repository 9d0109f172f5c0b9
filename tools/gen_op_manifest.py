"""Writes ops/manifest.json, the op manifest: every kernel and prim op Ember's runtime implements,
with its signature letters, PyTorch's schema, whether ExecuTorch's runtime registers it, the
library that implements it and the functional ops that lower to it; then the decompositions, and
what else ExecuTorch's runtime registers (operators Ember lacks, delegate backends).
Also writes compiler/ops/op_manifest.inc, the table the compiler reads from it (so the compiler
no longer asks the runtime's registry what exists).

Sources: runtime/kernels/portable/ops.inc (portable kernels), runtime/kernels/cortex_m/ops.inc
(the cortex_m kernels of ExecuTorch's Cortex-M programs), runtime/kernels/llm/ops.inc (the llama::
kernels of ExecuTorch's LLM programs), runtime/kernels/prim/prim_ops.cc
(kPrimKernels), compiler/ops/op_table.cc (kRules), the installed torch (schemas) and
the pinned pip executorch (scripts/requirements.lock; what its runtime registers).

    .venv/bin/python tools/gen_op_manifest.py          # rewrite both files
    .venv/bin/python tools/gen_op_manifest.py --check  # exit 1 if either differs (CTest)
"""

import argparse
import json
import os
import re
import sys
from importlib.metadata import version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "ops", "manifest.json")
TABLE = os.path.join(ROOT, "compiler", "ops", "op_manifest.inc")
OPS_INC = os.path.join(ROOT, "runtime", "kernels", "portable", "ops.inc")
CORTEX_M_OPS_INC = os.path.join(ROOT, "runtime", "kernels", "cortex_m", "ops.inc")
LLM_OPS_INC = os.path.join(ROOT, "runtime", "kernels", "llm", "ops.inc")
PRIM_CC = os.path.join(ROOT, "runtime", "kernels", "prim", "prim_ops.cc")
OP_TABLE = os.path.join(ROOT, "compiler", "ops", "op_table.cc")

FORMAT = 1
STR_OR_NULL = r'(nullptr|"(?:[^"\\]|\\.)*")'


def read(path):
    with open(path) as f:
        return f.read()


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def unquote(token):
    return None if token == "nullptr" else token[1:-1]


def table_body(text, marker):
    """The text between `marker ... = {` and its closing `};`."""
    start = text.index(marker)
    start = text.index("{", start) + 1
    return strip_comments(text[start:text.index("};", start)])


def op_list(path):
    """The (name, signature) of every EMBER_OP line of an ops.inc."""
    pattern = re.compile(r'^EMBER_OP\(\s*"([^"]+)"\s*,\s*\w+\s*,\s*' + STR_OR_NULL + r"\s*\)",
                         re.M)
    return [(m.group(1), unquote(m.group(2))) for m in pattern.finditer(read(path))]


def portable_kernels():
    return op_list(OPS_INC)


def cortex_m_kernels():
    return op_list(CORTEX_M_OPS_INC)


def llm_kernels():
    return op_list(LLM_OPS_INC)


def prim_kernels():
    body = table_body(read(PRIM_CC), "const Kernel kPrimKernels[]")
    pattern = re.compile(r'\{\s*"([^"]+)"\s*,\s*\w+\s*,\s*' + STR_OR_NULL + r"\s*\}")
    return [(m.group(1), unquote(m.group(2))) for m in pattern.finditer(body)]


def lowering_rules():
    """kRules as (functional, kernel, decompose): kernel or decompose may be None."""
    body = table_body(read(OP_TABLE), "constexpr LoweringRule kRules[]")
    pattern = re.compile(r'\{\s*"([^"]+)"\s*,\s*' + STR_OR_NULL + r"\s*,\s*" + STR_OR_NULL +
                         r"\s*,\s*(\w+)\s*,\s*(nullptr|\w+|\"(?:[^\"\\]|\\.)*\")\s*\}")
    rules = []
    for m in pattern.finditer(body):
        decompose = None if m.group(4) == "nullptr" else m.group(4)
        rules.append((m.group(1), unquote(m.group(2)), decompose))
    return rules


def graph_name(runtime_name):
    """The name a graph node calls prim op `runtime_name` by: the `default` overload that the
    runtime's name drops is written out ("aten::sym_numel" → "aten::sym_numel.default")."""
    _, _, op = runtime_name.rpartition("::")
    return runtime_name if "." in op else runtime_name + ".default"


def runtime_op_name(qualified):
    """op_manifest.cc's runtime_op_name: a prim op's `default` overload is dropped."""
    return qualified[:-len(".default")] if qualified.endswith(".default") else qualified


def split_name(qualified):
    op, _, overload = qualified.partition(".")
    return op, overload or "default"


class Schemas:
    """PyTorch's schemas, by qualified name ("aten::add.out", "aten::sym_numel")."""

    def __init__(self):
        import torch
        self._torch = torch
        self._cache = {}

    def overloads(self, op):
        if op not in self._cache:
            try:
                found = self._torch._C._jit_get_schemas_for_operator(op)
            except RuntimeError:
                found = []
            self._cache[op] = {s.overload_name or "default": str(s) for s in found}
        return self._cache[op]

    def schema(self, qualified):
        op, overload = split_name(qualified)
        return self.overloads(op).get(overload)


def generate():
    import executorch.extension.pybindings._C as et_runtime
    import torch

    # quantized_decomposed::* schemas: PyTorch's functional ones, and the out variants of
    # ExecuTorch's quantized kernel library, whose loading also registers its kernels with
    # ExecuTorch's runtime (as an application linking quantized_ops_lib does). Not exir, which
    # defines the embeddings' functional ops but would also give executorch_prim::* schemas.
    import torch.ao.quantization.fx._decomposed  # noqa: F401
    import executorch.kernels.quantized  # noqa: F401
    # llama::* schemas: the library of ExecuTorch's LLM custom ops, loaded alone (its Python
    # wrapper, custom_ops.py, imports exir, which would also give executorch_prim::* schemas).
    import glob
    import importlib.util
    llm_spec = importlib.util.find_spec("executorch.extension.llm.custom_ops")
    llm_ops = os.path.dirname(llm_spec.origin)
    torch.ops.load_library(glob.glob(os.path.join(llm_ops, "*custom_ops_aot_lib.*"))[0])

    schemas = Schemas()
    et_ops = set(et_runtime._get_operator_names())
    entries = {}
    for name, signature in portable_kernels():
        entries[name] = {"kind": "kernel", "signature": signature, "libraries": ["portable"]}
    for name, signature in cortex_m_kernels():
        if name in entries:
            raise SystemExit(f"{name} is both a portable and a cortex_m kernel")
        entries[name] = {"kind": "kernel", "signature": signature, "libraries": ["cortex_m"]}
    for name, signature in llm_kernels():
        if name in entries:
            raise SystemExit(f"{name} is both a portable and an llm kernel")
        entries[name] = {"kind": "kernel", "signature": signature, "libraries": ["llm"]}
    for name, signature in prim_kernels():
        if name in entries:
            raise SystemExit(f"{name} is both a kernel and a prim op")
        entries[name] = {"kind": "prim", "signature": signature, "libraries": ["prim"]}

    rules = lowering_rules()
    ruled = {functional for functional, _, _ in rules}
    functional = {name: set() for name in entries}
    # Explicit rules with a kernel.
    for f, kernel, _ in rules:
        if kernel is not None and kernel in functional:
            functional[kernel].add(f)
    # ATen's naming convention (op_table.cc convention_kernel): `op.default` → `op.out`,
    # `op.X` → `op.X_out`, and `op.Tensor` → `op.out` when `op.Tensor_out` is not a kernel.
    for name, entry in entries.items():
        if entry["kind"] != "kernel":
            continue
        op, overload = split_name(name)
        candidates = []
        if overload == "out":
            candidates.append(op + ".default")
            if op + ".Tensor_out" not in entries:
                candidates.append(op + ".Tensor")
        elif overload.endswith("_out"):
            candidates.append(op + "." + overload[:-len("_out")])
        for c in candidates:
            if c not in ruled and schemas.schema(c) is not None:
                functional[name].add(c)
    # Prim ops the compiler emits as they are (op_manifest.cc is_prim_op: the graph's name, less a
    # `default` overload, is the prim op's name; et_view.default keeps its overload, so no graph
    # node names it).
    for name, entry in entries.items():
        g = graph_name(name)
        if entry["kind"] == "prim" and runtime_op_name(g) == name and g not in ruled:
            functional[name].add(g)

    ops = []
    for name in sorted(entries):
        e = entries[name]
        ops.append({
            "name": name,
            "kind": e["kind"],
            "signature": e["signature"],
            "schema": schemas.schema(name),
            "executorch": name in et_ops,
            "libraries": e["libraries"],
            "functional": sorted(functional[name]),
        })
    decompositions = [{"functional": f, "lowered_by": d}
                      for f, _, d in sorted(rules) if d is not None]
    manifest = {
        "format": FORMAT,
        "torch": torch.__version__.split("+")[0],
        "executorch": version("executorch"),
        "ops": ops,
        "decompositions": decompositions,
        # What else ExecuTorch's runtime registers, for the check that it runs a program
        # (tools/executorch_ops.h): operators Ember does not implement, and delegate backends.
        "executorch_only_ops": sorted(et_ops - set(entries)),
        "executorch_backends": sorted(set(et_runtime._get_registered_backend_names())),
    }
    return to_json(manifest), table_from(manifest)


LISTS = ("ops", "decompositions", "executorch_only_ops", "executorch_backends")


def to_json(manifest):
    """JSON with one op (one decomposition, one name) a line, so a change is a one-line diff."""
    def rows(items):
        return "[\n" + ",\n".join("  " + json.dumps(i) for i in items) + "\n ]"
    head = {k: v for k, v in manifest.items() if k not in LISTS}
    fields = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
    fields += [f" {json.dumps(k)}: " + rows(manifest[k]) for k in LISTS]
    return "{\n" + ",\n".join(fields) + "\n}\n"


def table_from(manifest):
    lines = [
        "// Generated by tools/gen_op_manifest.py from ops/manifest.json; do not edit.",
        "// EMBER_MANIFEST_OP(name, signature): a kernel; EMBER_MANIFEST_PRIM(name, signature): a",
        "// prim op. A null signature skips the argument check (kernel_registry.h).",
        "// EMBER_MANIFEST_EXECUTORCH_OP(name): every operator ExecuTorch's runtime registers, the",
        "// manifest's ops with `executorch` true and its executorch_only_ops, sorted;",
        "// EMBER_MANIFEST_EXECUTORCH_BACKEND(id) and EMBER_MANIFEST_EXECUTORCH_VERSION(v): its",
        "// delegate backends and version. Each ExecuTorch section is read only where its macro is",
        "// defined.",
    ]
    for op in manifest["ops"]:
        macro = "EMBER_MANIFEST_PRIM" if op["kind"] == "prim" else "EMBER_MANIFEST_OP"
        sig = "nullptr" if op["signature"] is None else f'"{op["signature"]}"'
        lines.append(f'{macro}("{op["name"]}", {sig})')
    et_ops = sorted({op["name"] for op in manifest["ops"] if op["executorch"]} |
                    set(manifest["executorch_only_ops"]))
    sections = [
        ("EMBER_MANIFEST_EXECUTORCH_OP", [f'"{n}"' for n in et_ops]),
        ("EMBER_MANIFEST_EXECUTORCH_BACKEND", [f'"{n}"' for n in manifest["executorch_backends"]]),
        ("EMBER_MANIFEST_EXECUTORCH_VERSION", [f'"{manifest["executorch"]}"']),
    ]
    for macro, args in sections:
        lines.append(f"#ifdef {macro}")
        lines += [f"{macro}({a})" for a in args]
        lines.append("#endif")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true",
                   help="compare with the committed files instead of writing them")
    args = p.parse_args()
    texts = dict(zip((MANIFEST, TABLE), generate()))
    if args.check:
        stale = []
        for path, text in texts.items():
            try:
                current = read(path)
            except FileNotFoundError:
                current = None
            if current != text:
                stale.append(os.path.relpath(path, ROOT))
        if stale:
            print(", ".join(stale) + " is not what the op lists, op_table.cc, torch and executorch "
                  "give; run .venv/bin/python tools/gen_op_manifest.py", file=sys.stderr)
            return 1
        print("ops/manifest.json and compiler/ops/op_manifest.inc are current")
        return 0
    os.makedirs(os.path.dirname(MANIFEST), exist_ok=True)
    for path, text in texts.items():
        with open(path, "w") as f:
            f.write(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
