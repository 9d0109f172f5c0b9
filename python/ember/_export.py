"""Capture a torch.nn.Module as an ATen graph and write it as an exported program.

One capture path produces the document (docs/exported-program.md): torch.export.export, then
ExportedProgram.run_decompositions() to the core ATen opset. The graph is functional: in-place
writes to buffers and user inputs come back as mutation outputs of the graph signature, which also
names every parameter, buffer and constant. Dynamic dims are torch.export Dims; torch's symbols are
renamed after the declared dims. Ember needs the torch pinned in scripts/requirements.lock.
"""

import inspect
import math
import re

import torch
import torch.fx as fx

from ._errors import ExportError
from ._format import ALIGNMENT, FORMAT_VERSION, dtype_name, write_file

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The oldest torch whose torch.export the exporter works with; scripts/requirements.lock pins 2.15.
_MIN_TORCH = (2, 6)


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



def _hint(size):
    """The example value of a size or stride: itself when static, else its symbol's hint."""
    if isinstance(size, int):
        return size
    from torch.fx.experimental.symbolic_shapes import optimization_hint

    return optimization_hint(size, fallback=1 << 30)

def _torch_version():
    match = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def export(module, example_inputs, path, dynamic_shapes=None, strict=False):
    """Captures `module(*example_inputs)` and writes one exported-program file at `path`.

    dynamic_shapes: None, or one entry per input: None (all dims static) or {dim: Dim | (min, max)}.
    strict: passed to torch.export.export. False (the default, as in torch) traces the module as
    Python runs it; True traces it with TorchDynamo, which refuses more programs. Both give the
    same ops (contract C11); placeholders and metadata may take different forms.
    Returns the JSON document that was written (useful for inspection and tests).
    Raises ExportError with a message naming the problem for anything it cannot export.
    """
    document, blobs = capture(module, example_inputs, dynamic_shapes, strict=strict)
    write_file(path, document, blobs)
    return document


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


# ---------------------------------------------------------------------------------------------
# Input validation


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


# ---------------------------------------------------------------------------------------------
# Module state: parameters, buffers and plain tensor attributes, by fully qualified name.


class _State:
    def __init__(self):
        self.entries = []  # [kind, [fqns], tensor, persistent] with one entry per tensor object
        self.by_id = {}

    def add(self, kind, fqn, tensor, persistent=True):
        entry = self.by_id.get(id(tensor))
        if entry is not None:
            entry[1].append(fqn)
            return
        entry = [kind, [fqn], tensor, persistent]
        self.entries.append(entry)
        self.by_id[id(tensor)] = entry


def _collect_state(module):
    state = _State()
    modules = list(module.named_modules(remove_duplicate=False))
    for kind in ("parameter", "buffer", "constant"):
        for prefix, mod in modules:
            base = prefix + "." if prefix else ""
            if kind == "parameter":
                for name, p in mod._parameters.items():
                    if p is not None:
                        state.add(kind, base + name, p)
            elif kind == "buffer":
                for name, b in mod._buffers.items():
                    if b is not None:
                        state.add(kind, base + name, b,
                                  name not in mod._non_persistent_buffers_set)
            else:
                for name, value in vars(mod).items():
                    if isinstance(value, torch.Tensor) and not isinstance(value,
                                                                          torch.nn.Parameter):
                        state.add(kind, base + name, value)
    return state


# ---------------------------------------------------------------------------------------------
# Capture with torch.export


class _Captured:
    """What the capture hands to the writer."""

    def __init__(self):
        self.graph = None  # fx.Graph
        self.root = None  # the GraphModule, for get_attr (control-flow branches)
        self.placeholders = []  # [(fx.Node, kind, fqns or None, persistent)]
        self.symbols = []  # [Dim] the program's symbols, with their ranges
        self.sym = None  # callable: SymInt-like -> int or (expr str, min, max)
        self.module_stack = None  # callable: fx.Node -> [{"path", "type"}]
        self.output_specs = []  # [(kind, target)] per flat output
        self.user_names = None  # forward's parameter names, for the user inputs
        self.extra_tensors = []  # [(fqn, tensor)] stored tensors that are not module state
        self.capture = ""


def _sym_expr(s):
    """The sympy expression behind a SymInt, SymFloat or SymBool; None for anything else."""
    if isinstance(s, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return s.node.expr
    return None


def _capture_torch_export(module, inputs, dims, state, strict):
    from torch.export import Dim as TorchDim
    from torch.export import export as torch_export

    dynamic_shapes = None
    examples = list(inputs)
    if dims:
        dynamic_shapes = [None] * len(inputs)
        for index, d, dim in dims:
            spec = dynamic_shapes[index] or {}
            spec[d] = TorchDim(dim.name, min=dim.min, max=dim.max)
            dynamic_shapes[index] = spec
            # torch.export specializes example sizes 0 and 1: trace such a dim at a size of the
            # range that it does not (the values do not matter to the shapes traced).
            if examples[index].shape[d] < 2 <= dim.max:
                shape = list(examples[index].shape)
                shape[d] = max(dim.min, 2)
                examples[index] = torch.zeros(shape, dtype=examples[index].dtype)
        dynamic_shapes = tuple(dynamic_shapes)
    try:
        with torch.no_grad():
            ep = torch_export(module, tuple(examples), dynamic_shapes=dynamic_shapes,
                              strict=strict)
            # torch.export's graph is pre-dispatch (aten::linear, aten::conv2d, in-place ops);
            # the default table gives the core ATen opset, functional: the form ExecuTorch's
            # exporter starts from too.
            ep = ep.run_decompositions()
    except Exception as e:
        raise _torch_export_error(e) from e
    gm = ep.graph_module
    sig = ep.graph_signature
    captured = _Captured()
    captured.capture = f"torch.export/{torch.__version__}"
    captured.graph = gm.graph
    captured.root = gm
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    state_fqns = {f for e in state.entries for f in e[1]}
    kinds = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant",
             "USER_INPUT": "user_input"}
    for node, spec in zip(phs, sig.input_specs):
        kind = kinds.get(spec.kind.name)
        if kind is None:
            raise ExportError(f"input {node.name}: unsupported input kind {spec.kind.name}")
        fqns = None if kind == "user_input" else [spec.target]
        if fqns:
            entry = state.by_id.get(id(_lookup_tensor(ep, spec.target)))
            if entry is not None:
                fqns = [spec.target] + [f for f in entry[1] if f != spec.target]
        captured.placeholders.append((node, kind, fqns, getattr(spec, "persistent", None) is not
                                      False))
        if fqns and fqns[0] not in state_fqns:
            # Tensors torch.export lifted from forward's body (lifted_tensor_0...): store them too.
            tensor = _lookup_tensor(ep, spec.target)
            if tensor is None:
                raise ExportError(f"input {node.name}: no tensor for {spec.target!r}")
            captured.extra_tensors.append((spec.target, tensor))
    out_kinds = {"USER_OUTPUT": "user_output", "BUFFER_MUTATION": "buffer_mutation",
                 "USER_INPUT_MUTATION": "user_input_mutation"}
    for spec in sig.output_specs:
        kind = out_kinds.get(spec.kind.name)
        if kind is None and spec.kind.name == "PARAMETER_MUTATION":
            raise ExportError(f"the program writes to the parameter {spec.target!r}; exported "
                              "programs cannot update parameters (register it as a buffer)")
        if kind is None:
            raise ExportError(f"unsupported output kind {spec.kind.name}")
        captured.output_specs.append((kind, spec.target))
    # torch.export names its symbols itself (s0, s77...): give each declared dim its own name.
    user_phs = [n for n, spec in zip(phs, sig.input_specs) if spec.kind.name == "USER_INPUT"]
    renames = {}
    for index, d, dim in dims:
        size = user_phs[index].meta["val"].shape[d] if index < len(user_phs) else None
        expr = _sym_expr(size) if isinstance(size, torch.SymInt) else None
        if expr is not None and expr.is_Symbol:
            renames[expr] = expr.func(dim.name, **expr.assumptions0)
    ranges = {}
    for s, r in ep.range_constraints.items():
        s = renames.get(s, s)
        try:
            ranges[str(s)] = (int(r.lower), int(r.upper))
        except (TypeError, ValueError, OverflowError):
            raise ExportError(f"symbolic size {s} has no finite bounds ({r}); give every dynamic "
                              "dim a max") from None

    def sym(s):
        if isinstance(s, int):
            return s
        expr = _sym_expr(s)
        if expr is None:
            raise ExportError(f"cannot interpret symbolic value {s!r}")
        expr = expr.xreplace(renames)
        if expr.is_Integer:
            return int(expr)
        lows = {x: ranges[str(x)][0] for x in expr.free_symbols}
        highs = {x: ranges[str(x)][1] for x in expr.free_symbols}
        return (str(expr).replace(" ", ""), int(expr.xreplace(lows)), int(expr.xreplace(highs)))

    captured.sym = sym
    # Declared dims under their own names; any other symbol under torch.export's.
    captured.symbols = [Dim(str(s), lo, hi) for s, (lo, hi) in sorted(ranges.items())]

    def module_stack(n):
        frames = []
        for path, cls in (n.meta.get("nn_module_stack") or {}).values():
            path = re.sub(r"^L\['self'\]\.?", "", str(path))
            if path:
                frames.append({"path": path, "type": getattr(cls, "__name__", str(cls).split(".")[
                    -1])})
        return frames

    captured.module_stack = module_stack
    return captured


# Lines of torch.export's messages that point at its logs or at draft_export, not at the problem.
_TORCH_BOILERPLATE = (
    re.compile(r"\s*For more information, run with TORCH_LOGS=.*$"),
    re.compile(r"^The error above occurred when calling torch\.export\.export\b.*$"),
)


def _torch_export_error(e):
    """An ExportError for a failure inside torch.export, worded for what to change."""
    text = str(e)
    mutated = re.search(r"Constant (\S+) is mutated in the forward method", text)
    if mutated:
        # torch.export rejects it while lifting constants; say it as Ember always has.
        return ExportError(f"the program writes in place to the tensor attribute "
                           f"{mutated.group(1)!r}; register it as a buffer "
                           "(module.register_buffer) to export it")
    lines = []
    for line in text.splitlines():
        for pattern in _TORCH_BOILERPLATE:
            line = pattern.sub("", line)
        if line.strip():
            lines.append(line.rstrip())
    error_type = getattr(getattr(e, "error_type", None), "name", "")
    if error_type == "CONSTRAINT_VIOLATION" or text.startswith("Constraints violated"):
        # torch's lines say which values of which dim break a guard the program needs (a branch
        # on a size, a size that must be a constant) and the Dim ranges that would hold.
        return ExportError("a declared dynamic dim range does not hold for the program; narrow "
                           "it as suggested (ember.Dim takes the same name, min and max):\n"
                           + "\n".join(lines))
    return ExportError(f"torch.export failed: {type(e).__name__}: " + "\n".join(lines))


def _lookup_tensor(ep, target):
    if target in ep.state_dict:
        return ep.state_dict[target]
    return getattr(ep, "constants", {}).get(target)


# ---------------------------------------------------------------------------------------------
# fx graph -> document

_SYM_OPS = {
    "add": "add", "sub": "sub", "mul": "mul", "floordiv": "floordiv", "truediv": "truediv",
    "mod": "mod", "neg": "neg", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
    "ge": "ge", "and_": "and", "or_": "or", "sym_max": "max", "sym_min": "min",
    "sym_float": "float", "sym_int": "int", "sym_not": "not", "ceil": "ceil", "floor": "floor",
}


class _Writer:
    def __init__(self, captured, state):
        self.c = captured
        self.state = state
        self.names = set()
        self.value_name = {}  # (fx.Node, output index or None) -> value name
        self.inline = {}  # fx.Node -> encoded constant (symbolic ints that resolved to a number)
        self.operators = {}

    # Names -------------------------------------------------------------------------------
    def _unique(self, base):
        base = re.sub(r"[^A-Za-z0-9_]", "_", base) or "v"
        if base[0].isdigit():
            base = "_" + base
        name, k = base, 1
        while name in self.names:
            name = f"{base}_{k}"
            k += 1
        self.names.add(name)
        return name

    # Metadata ----------------------------------------------------------------------------
    def _example(self, node):
        if "val" in node.meta and node.meta["val"] is not None:
            return node.meta["val"]
        # Multi-output nodes carry no value of their own; their getitem users do.
        outs = {}
        for user in node.users:
            if user.op == "call_function" and user.target.__name__ == "getitem":
                outs[user.args[1]] = self._example(user)
        if outs:
            return tuple(outs.get(i) for i in range(max(outs) + 1))
        return None

    def _dim(self, s):
        v = self.c.sym(s)
        if isinstance(v, int):
            return v
        expr, lo, hi = v
        return {"expr": expr, "min": lo, "max": hi}

    def _value_def(self, name, example, where):
        if isinstance(example, torch.Tensor):
            shape = [self._dim(s) for s in example.shape]
            strides = [self.c.sym(s) for s in example.stride()]
            # Strides are written only where every size and stride is static; otherwise
            # dim_order alone gives the layout.
            static = all(isinstance(s, int) for s in strides + shape)
            # A symbolic stride sorts by its example value (a contiguous [2, s0] has strides
            # (s0, 1): dim order 0, 1), as torch.Tensor.dim_order() orders static strides.
            concrete = [_hint(s) for s in example.stride()]
            order = sorted(range(len(concrete)), key=lambda i: (-concrete[i], i))
            result = {"name": name, "type": "tensor", "dtype": dtype_name(example.dtype),
                      "shape": shape, "dim_order": order}
            if static:
                result["strides"] = strides
            return result
        if isinstance(example, bool):
            return {"name": name, "type": "bool"}
        if isinstance(example, int) or _sym_expr(example) is not None:
            return {"name": name, "type": "int"}
        if isinstance(example, float):
            return {"name": name, "type": "float"}
        raise ExportError(f"{where}: result of type {type(example).__name__} is not supported")

    # Arguments ---------------------------------------------------------------------------
    def _encode(self, a, where):
        if a is None:
            return None
        if isinstance(a, fx.Node):
            if a in self.inline:
                return self.inline[a]
            if a.op == "call_function" and getattr(a.target, "__name__", "") == "getitem":
                return {"value": self.value_name[(a.args[0], a.args[1])]}
            if (a, None) not in self.value_name:
                raise ExportError(f"{where}: uses {a.name}, which has no value")
            return {"value": self.value_name[(a, None)]}
        if isinstance(a, bool):
            return {"bool": a}
        if isinstance(a, int):
            return {"int": a}
        if isinstance(a, float):
            if math.isnan(a):
                return {"float": "nan"}
            if math.isinf(a):
                return {"float": "inf" if a > 0 else "-inf"}
            return {"float": a}
        if isinstance(a, str):
            return {"str": a}
        if isinstance(a, torch.dtype):
            return {"dtype": dtype_name(a)}
        if isinstance(a, torch.device):
            return {"device": str(a)}
        if isinstance(a, torch.layout):
            return {"layout": str(a).replace("torch.", "")}
        if isinstance(a, torch.memory_format):
            return {"memory_format": str(a).replace("torch.", "")}
        if isinstance(a, (list, tuple)):
            return {"list": [self._encode(x, where) for x in a]}
        if _sym_expr(a) is not None:
            v = self.c.sym(a)
            if isinstance(v, int):
                return {"int": v}
            raise ExportError(f"{where}: a symbolic size ({v[0]}) appears as a constant argument")
        raise ExportError(f"{where}: argument of type {type(a).__name__} is not supported")

    # Nodes -------------------------------------------------------------------------------
    def _op(self, node):
        """(name, overload, schema or None) of a call_function target."""
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            schema = target._schema
            return schema.name, target._overloadname, schema
        name = getattr(target, "__name__", str(target))
        if name in _SYM_OPS:
            return "sym::" + _SYM_OPS[name], "default", None
        if isinstance(target, torch._ops.HigherOrderOperator):
            return "higher_order::" + target.__name__, "default", None
        raise ExportError(f"node {node.name}: call to {target} (module "
                          f"{self._path(node)}) is not an ATen op; the exporter supports ATen ops, "
                          "symbolic-int arithmetic and cond")

    def _path(self, node):
        stack = self.c.module_stack(node) if self.c.module_stack else []
        return stack[-1]["path"] if stack else "<root>"

    def _bind(self, node, schema, where):
        args, kwargs = list(node.args), dict(node.kwargs)
        positional = [a for a in schema.arguments if not a.kwarg_only]
        if len(args) > len(positional):
            raise ExportError(f"{where}: {len(args)} positional arguments for {schema}")
        bound = []
        for i, a in enumerate(schema.arguments):
            if i < len(args) and not a.kwarg_only:
                value = args[i]
            elif a.name in kwargs:
                value = kwargs.pop(a.name)
            elif a.has_default_value():
                value = a.default_value
            else:
                raise ExportError(f"{where}: argument {a.name} of {schema.name} is missing")
            bound.append({"name": a.name, "value": self._encode(value, where)})
        if kwargs:
            raise ExportError(f"{where}: unknown arguments {sorted(kwargs)} for {schema.name}")
        return bound

    def _convert(self, graph, top):
        nodes = []
        for node in graph.nodes:
            where = f"node {node.name} ({node.op} {node.target}, module {self._path(node)})"
            if node.op in ("placeholder", "output"):
                continue
            if node.op == "get_attr":
                value = getattr(self.c.root, node.target)
                if isinstance(value, fx.GraphModule):
                    continue  # a control-flow branch; the node using it inlines it as a subgraph
                # torch.export lifts every tensor it reads to a graph input (a constant).
                raise ExportError(f"{where}: attribute of type {type(value).__name__}; "
                                  "torch.export should have lifted it to a graph input")
            if node.op != "call_function":
                raise ExportError(f"{where}: unsupported fx node kind {node.op}")
            if getattr(node.target, "__name__", "") == "getitem" and isinstance(node.args[0],
                                                                                  fx.Node):
                continue
            example = self._example(node)
            op, overload, schema = self._op(node)
            if op.startswith(("sym::", "aten::sym_")):
                v = self.c.sym(example) if example is not None else None
                if isinstance(v, int):
                    self.inline[node] = {"int": v}
                    continue
            entry = {"name": None, "op": op, "overload": overload}
            if schema is not None:
                if any(a.alias_info is not None and a.alias_info.is_write
                       for a in schema.arguments):
                    # run_decompositions functionalizes: writes are mutation outputs instead.
                    raise ExportError(f"{where}: writes an argument in place, but torch.export's "
                                      "decomposed graph should be functional")
                self.operators[f"{op}.{overload}"] = str(schema)
                entry["args"] = self._bind(node, schema, where)
            elif op == "higher_order::cond":
                entry["args"], entry["subgraphs"] = self._cond(node, where)
            else:
                entry["args"] = [{"name": n, "value": self._encode(a, where)}
                                 for n, a in zip(("a", "b"), node.args)]
            name = self._unique(node.name)
            entry["name"] = name
            if isinstance(example, (tuple, list)):
                outputs = []
                for i, e in enumerate(example):
                    value_name = self._unique(f"{name}_{i}")
                    self.value_name[(node, i)] = value_name
                    if e is None:
                        raise ExportError(f"{where}: output {i} has no metadata")
                    outputs.append(self._value_def(value_name, e, where))
            elif example is None:
                if schema is not None and len(schema.returns) == 0:
                    outputs = []
                else:
                    raise ExportError(f"{where}: no metadata for its result")
            else:
                self.value_name[(node, None)] = name
                outputs = [self._value_def(name, example, where)]
            entry["outputs"] = outputs
            entry["module_stack"] = self.c.module_stack(node) if self.c.module_stack else []
            nodes.append(entry)
        return nodes

    def _cond(self, node, where):
        pred, true_fn, false_fn, operands = node.args
        subgraphs = []
        for fn in (true_fn, false_fn):
            gm = getattr(self.c.root, fn.target)
            subgraphs.append(self._subgraph(gm, where))
        args = [{"name": "pred", "value": self._encode(pred, where)},
                {"name": "true_graph", "value": {"graph": 0}},
                {"name": "false_graph", "value": {"graph": 1}},
                {"name": "operands", "value": self._encode(list(operands), where)}]
        return args, subgraphs

    def _subgraph(self, gm, where):
        saved_root = self.c.root
        self.c.root = gm
        inputs = []
        for ph in (n for n in gm.graph.nodes if n.op == "placeholder"):
            name = self._unique(ph.name)
            self.value_name[(ph, None)] = name
            inputs.append(self._value_def(name, self._example(ph), where))
        nodes = self._convert(gm.graph, top=False)
        out = next(n for n in gm.graph.nodes if n.op == "output")
        flat, _ = torch.utils._pytree.tree_flatten(out.args[0])
        outputs = []
        for x in flat:
            encoded = self._encode(x, where)
            if not isinstance(encoded, dict) or "value" not in encoded:
                raise ExportError(f"{where}: a branch returns a constant; return tensors")
            outputs.append(encoded["value"])
        self.c.root = saved_root
        return {"inputs": inputs, "nodes": nodes, "outputs": outputs}

    # Document ----------------------------------------------------------------------------
    def document_and_blobs(self):
        c = self.c
        inputs, specs = [], []
        user_index = 0
        user_value = {}  # torch.export's name of a user input -> its value name here
        for node, kind, fqns, persistent in c.placeholders:
            prefix = {"parameter": "p_", "buffer": "b_", "constant": "c_"}.get(kind, "")
            if fqns:
                base = prefix + fqns[0]
            else:  # forward's parameter names, as torch.export names them too (not for *args)
                base = c.user_names[user_index] if c.user_names else f"input_{user_index}"
                user_index += 1
            name = self._unique(base)
            self.value_name[(node, None)] = name
            if kind == "user_input":
                user_value[node.name] = name
            inputs.append(self._value_def(name, self._example(node), f"input {name}"))
            spec = {"kind": kind, "value": name}
            if fqns:
                spec["target"] = fqns[0]
                if len(fqns) > 1:
                    spec["aliases"] = fqns[1:]
            if kind == "buffer":
                spec["persistent"] = persistent
            specs.append(spec)
        nodes = self._convert(c.graph, top=True)
        out_node = next(n for n in c.graph.nodes if n.op == "output")
        flat, _ = torch.utils._pytree.tree_flatten(out_node.args[0])
        outputs = []
        for i, x in enumerate(flat):
            if not isinstance(x, fx.Node):
                raise ExportError(f"output {i} is a {type(x).__name__}; only tensor outputs are "
                                  "supported")
            encoded = self._encode(x, f"output {i}")
            if "value" not in encoded:
                raise ExportError(f"output {i} is a constant; only tensor outputs are supported")
            kind, target = c.output_specs[i]
            if kind == "user_input_mutation":
                target = user_value.get(target, target)
            spec = {"kind": kind, "value": encoded["value"]}
            if target is not None:
                spec["target"] = target
            outputs.append(spec)
        signature = {"inputs": specs, "outputs": outputs}
        signature.update(self._mutations(specs, outputs))
        tensors, blobs = self._tensors()
        document = {
            "format": "ember.exported_program",
            "version": FORMAT_VERSION,
            "producer": {"ember": "0.1.0", "torch": torch.__version__, "capture": c.capture},
            "symbols": [{"name": d.name, "min": d.min, "max": d.max} for d in c.symbols],
            "signature": signature,
            "operators": dict(sorted(self.operators.items())),
            "graph": {"inputs": inputs, "nodes": nodes, "outputs": [o["value"] for o in outputs]},
            "tensors": tensors,
        }
        return document, blobs

    def _mutations(self, specs, outputs):
        """The graph is functional: every write is a mutation output naming its target."""
        aliases = {}
        for s in specs:
            if s["kind"] == "buffer":
                for fqn in [s["target"]] + s.get("aliases", []):
                    aliases.setdefault(fqn, set()).update([s["target"]] + s.get("aliases", []))
        mutated = {"buffers": [], "parameters": [], "user_inputs": []}
        for o in outputs:
            if o["kind"] == "buffer_mutation":  # every FQN of that tensor object
                mutated["buffers"].extend(aliases.get(o["target"], [o["target"]]))
            elif o["kind"] == "user_input_mutation":
                mutated["user_inputs"].append(o["target"])
        return {f"mutated_{k}": sorted(set(v)) for k, v in mutated.items()}

    def _tensors(self):
        """One entry per FQN; FQNs that name one tensor object share its bytes."""
        tensors, blobs, offset_of = [], [], {}
        offset = 0
        items = []
        for entry in self.state.entries:
            for fqn in entry[1]:
                items.append((fqn, entry[2], entry[1][0]))
        seen = {fqn for fqn, _, _ in items}
        for fqn, tensor in self.c.extra_tensors:
            if fqn not in seen:
                items.append((fqn, tensor, fqn))
                seen.add(fqn)
        for fqn, tensor, owner in items:
            t = tensor.detach()
            if t.layout != torch.strided or t.is_quantized:
                raise ExportError(f"weight {fqn!r}: only dense tensors are supported")
            if t.device.type != "cpu":
                t = t.cpu()
            key = id(tensor)
            if key not in offset_of:
                data = _tensor_bytes(t)
                offset_of[key] = (offset, len(data))
                blobs.append((offset, data))
                offset = (offset + len(data) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
            at, nbytes = offset_of[key]
            entry = {"name": fqn, "dtype": dtype_name(t.dtype), "shape": list(t.shape),
                     "offset": at, "nbytes": nbytes}
            if owner != fqn:
                entry["alias_of"] = owner
            tensors.append(entry)
        return tensors, blobs


def _tensor_bytes(t):
    t = t.contiguous()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def forward_argument_names(module, count):
    """The names of forward's first `count` positional parameters, if it has that many."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else None

