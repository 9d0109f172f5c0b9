"""The writer: a captured fx graph and the module's state -> the exported-program document.

_Writer turns a _Captured (see _capture.py) into the JSON document of docs/exported-program.md and
the (offset, bytes) blobs of its tensors; _format.write_file writes both to one file.
"""

import math
import re

import torch
import torch.fx as fx

from ._capture import _sym_expr
from ._errors import ExportError
from ._format import ALIGNMENT, FORMAT_VERSION, dtype_name


def _hint(size):
    """The example value of a size or stride: itself when static, else its symbol's hint."""
    if isinstance(size, int):
        return size
    from torch.fx.experimental.symbolic_shapes import optimization_hint

    return optimization_hint(size, fallback=1 << 30)


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
