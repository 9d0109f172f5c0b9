"""Capture with torch.export: the module's state, the ATen graph and its signature.

torch.export.export (strict or not), then ExportedProgram.run_decompositions() to the core ATen
opset, gives a functional graph; _capture_torch_export hands it to the writer as a _Captured, with
its symbols renamed after the declared dims. Failures inside torch.export come back as ExportError
worded for what to change (_torch_export_error).
"""

import importlib
import inspect
import re
import sys

import torch

from ._errors import ExportError
from ._inputs import Dim


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


def _is_wrapper_subclass(tensor):
    """A tensor subclass that wraps others (torchao's quantized weights): torch.export unwraps
    it into its inner tensors, which the program names (see _capture_torch_export)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(tensor)


def _collect_state(module):
    state = _State()
    modules = list(module.named_modules(remove_duplicate=False))
    for kind in ("parameter", "buffer", "constant"):
        for prefix, mod in modules:
            base = prefix + "." if prefix else ""
            if kind == "parameter":
                for name, p in mod._parameters.items():
                    if p is not None and not _is_wrapper_subclass(p):
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


def _make_copies_explicit(gm):
    """Spell out the cast and the broadcast of every `dst.copy_(src)` in torch.export's graph.

    copy_ casts src to dst's dtype and broadcasts it to dst's shape. run_decompositions'
    functionalization drops the copy_ into an input (a buffer) and uses src itself as dst's new
    value: with the shape and dtype of src, while the graph's metadata keeps dst's. So before the
    decompositions each such copy_ gets `_to_copy(src, dtype=dst.dtype)` and
    `expand(src, dst.shape)` as its source, which functionalization keeps. Recurses into the
    control-flow subgraphs.
    """
    for mod in gm.modules():
        if not isinstance(mod, torch.fx.GraphModule):
            continue
        graph = mod.graph
        changed = False
        for node in list(graph.find_nodes(op="call_function", target=torch.ops.aten.copy_.default)):
            if len(node.args) < 2:
                continue
            dst, src = node.args[0], node.args[1]
            if not isinstance(dst, torch.fx.Node) or not isinstance(src, torch.fx.Node):
                continue
            dval, sval = dst.meta.get("val"), src.meta.get("val")
            if not isinstance(dval, torch.Tensor) or not isinstance(sval, torch.Tensor):
                continue
            cur, val = src, sval
            with graph.inserting_before(node):
                if val.dtype != dval.dtype:
                    cur = graph.call_function(torch.ops.aten._to_copy.default, (cur,),
                                              {"dtype": dval.dtype})
                    val = torch.ops.aten._to_copy.default(val, dtype=dval.dtype)
                    cur.meta.update({k: v for k, v in src.meta.items() if k != "val"})
                    cur.meta["val"] = val
                if tuple(val.shape) != tuple(dval.shape):
                    size = list(dval.shape)
                    if not all(isinstance(d, int) for d in size):
                        raise ExportError(
                            f"{node.name}: copy_ broadcasts {tuple(val.shape)} to the dynamic "
                            f"shape {tuple(size)}; expand the source to the destination's shape "
                            "first (src.expand_as(dst))")
                    prev = cur
                    cur = graph.call_function(torch.ops.aten.expand.default, (prev, size))
                    val = torch.ops.aten.expand.default(val, size)
                    cur.meta.update({k: v for k, v in src.meta.items() if k != "val"})
                    cur.meta["val"] = val
            if cur is not src:
                node.args = (dst, cur) + tuple(node.args[2:])
                changed = True
        if changed:
            mod.recompile()


def _wide(x):
    """x in float64 when it is a narrower floating tensor: eager's std and var_mean accumulate in
    double (Welford) and round once at the end."""
    if x.is_floating_point() and x.dtype != torch.float64:
        return torch.ops.aten._to_copy.default(x, dtype=torch.float64)
    return x


def _std(x, dim=None, *, correction=None, keepdim=False):
    # The default table gives sqrt(var.correction(x)) in x's dtype, whose variance overflows
    # (inf) where eager's std is finite: 1e30 has a float32 std, but its square is no float32.
    var = torch.ops.aten.var.correction(_wide(x), dim, correction=correction, keepdim=keepdim)
    return torch.ops.aten._to_copy.default(torch.ops.aten.sqrt.default(var), dtype=x.dtype)


def _std_mean(x, dim=None, *, correction=None, keepdim=False):
    wide = _wide(x)
    var = torch.ops.aten.var.correction(wide, dim, correction=correction, keepdim=keepdim)
    mean = torch.ops.aten.mean.dim(wide, dim, keepdim)
    return (torch.ops.aten._to_copy.default(torch.ops.aten.sqrt.default(var), dtype=x.dtype),
            torch.ops.aten._to_copy.default(mean, dtype=x.dtype))


def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    wide = _wide(x)
    var = torch.ops.aten.var.correction(wide, dim, correction=correction, keepdim=keepdim)
    mean = torch.ops.aten.mean.dim(wide, dim, keepdim)
    return (torch.ops.aten._to_copy.default(var, dtype=x.dtype),
            torch.ops.aten._to_copy.default(mean, dtype=x.dtype))


def _decompositions():
    """torch.export's default table (to the core ATen opset), with std, std_mean and var_mean
    computed in double as eager does: ExecuTorch's runtime has no std or var_mean kernel, and
    the default decomposition of std in float32 overflows where eager's does not."""
    from torch.export import default_decompositions

    table = default_decompositions()
    aten = torch.ops.aten
    table[aten.std.correction] = _std
    table[aten.std_mean.correction] = _std_mean
    table[aten.var_mean.correction] = _var_mean
    table.update(_torchao_decompositions())
    return table


# torchao's quantization primitives, which its quantized tensors (8da4w, weight-only int4/int8...)
# call. They are CompositeImplicitAutograd ops that torch.export keeps whole; ExecuTorch's
# runtime has no kernel for them. Their own implementation decomposes them into ATen ops: the
# same ops eager runs, so the program computes what the torchao model computes.
_TORCHAO_PRIMITIVES = ("quantize_affine", "dequantize_affine", "choose_qparams_affine",
                       "quantize_affine_no_zero_point", "dequantize_affine_no_zero_point",
                       "choose_qparams_affine_tinygemm", "quantize_affine_tinygemm",
                       "dequantize_affine_tinygemm", "choose_qparams_affine_dont_preserve_zero")


def _torchao_decompositions():
    if "torchao" not in sys.modules:  # no torchao model was made in this process
        return {}
    # torchao registers each primitive's Python implementation as inductor's decomposition.
    from torch._inductor.decomposition import decompositions

    namespace = getattr(torch.ops, "torchao", None)
    table = {}
    for name in _TORCHAO_PRIMITIVES:
        try:
            op = getattr(namespace, name).default
        except (AttributeError, RuntimeError):
            continue
        if op in decompositions:
            table[op] = decompositions[op]
    return table


def _is_weight(node, weights):
    """A parameter, buffer or constant, or an inner tensor of one (a tensor subclass's: torchao's
    quantized weight holds its integers, scales and zero points so)."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and \
            "access_subclass_inner_tensor" in str(node.target):
        node = node.args[0]
    return isinstance(node, torch.fx.Node) and node.op == "placeholder" and node.name in weights


def _group_dequantized_weights(ep):
    """torchao's dequantize of a weight by groups of a row (8da4w, 8da8w, weight-only int4 and
    int8; a whole row per channel) as quantized_decomposed::dequantize_per_channel_group: the op
    that names the whole quantization (integer weight, scales, zero points, group size), which a
    backend can claim whole (contract C33) and the compiler keeps quantized until one has.

    It computes what torchao's decomposition does, bit for bit: torchao takes
    (float(q) - float(zero point)) * scale in float32; the op takes the integer difference (exact:
    the zero point is widened to int32 first, so int8 - int8 cannot wrap) times the float32 scale.
    Only weights (so activations keep ATen ops, which ExecuTorch's runtime runs too), and only
    that shape: other blocks, dtypes and floating zero points keep torchao's decomposition.
    """
    namespace = getattr(torch.ops, "torchao", None)
    dequantize = getattr(namespace, "dequantize_affine", None) if namespace else None
    if dequantize is None:
        return
    sig = ep.graph_signature
    weights = set(sig.inputs_to_parameters) | set(sig.inputs_to_buffers) | set(
        sig.inputs_to_lifted_tensor_constants)
    graph = ep.graph_module.graph
    for node in list(graph.nodes):
        if node.target != dequantize.default:
            continue
        args = list(node.args) + [None] * (8 - len(node.args))
        q, block, scale, zero_point, _, quant_min, quant_max, out_dtype = args
        out_dtype = node.kwargs.get("output_dtype", out_dtype or torch.float32)
        quant_min = node.kwargs.get("quant_min", quant_min)
        quant_max = node.kwargs.get("quant_max", quant_max)
        qv, sv, zv = (n.meta.get("val") if isinstance(n, torch.fx.Node) else None
                      for n in (q, scale, zero_point))
        if (not _is_weight(q, weights) or qv is None or sv is None or qv.dim() != 2
                or len(block) != 2 or block[0] != 1):
            continue
        group = int(block[1])
        if (group < 2 or qv.shape[1] % group != 0 or qv.dtype != torch.int8
                or sv.dtype != torch.float32 or out_dtype != torch.float32
                or sv.numel() != qv.numel() // group
                or (zero_point is not None and (zv is None or zv.is_floating_point()
                                                or zv.numel() != sv.numel()))):
            continue
        importlib.import_module("torch.ao.quantization.fx._decomposed")  # quantized_decomposed
        info = torch.iinfo(torch.int8)
        lo = info.min if quant_min is None else int(quant_min)
        hi = info.max if quant_max is None else int(quant_max)
        with graph.inserting_before(node):
            zp = None
            if zero_point is not None:
                zp = graph.call_function(torch.ops.aten._to_copy.default, (zero_point,),
                                         {"dtype": torch.int32})
                zp.meta["val"] = zv.to(torch.int32)
            grouped = graph.call_function(
                torch.ops.quantized_decomposed.dequantize_per_channel_group.default,
                (q, scale, zp, lo, hi, torch.int8, group, torch.float32))
        grouped.meta = dict(node.meta)
        node.replace_all_uses_with(grouped)
        graph.erase_node(node)
    ep.graph_module.recompile()


_SCALAR_ASSERTIONS = ("_assert_scalar", "sym_constrain_range", "sym_constrain_range_for_size")


def _drop_scalar_assertions(gm):
    """Removes torch.export's runtime checks on symbolic scalars (aten::_assert_scalar of
    `u0 >= 0`, `u0 + s0 <= 16`... for a value read with .item() and bounded by torch._check) and
    the symbolic arithmetic that only they read. Ember drops assertions at compile time (contract
    C12); these go here already because their arguments are symbolic booleans, which the document
    has no value for. A kernel that takes such a value checks its range itself
    (llama::custom_sdpa's start_pos, say)."""
    import math
    import operator

    graph = gm.graph
    assertions = {getattr(torch.ops.aten, n).default for n in _SCALAR_ASSERTIONS
                  if hasattr(torch.ops.aten, n)}
    symbolic = {torch.sym_not, torch.sym_max, torch.sym_min, torch.sym_float, torch.sym_int,
                math.ceil, math.floor}

    def removable(node):
        if node.op != "call_function" or node.users:
            return False
        t = node.target
        return t in assertions or t in symbolic or getattr(t, "__module__", None) in (
            "_operator", operator.__name__)

    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.nodes)):
            if removable(node):
                graph.erase_node(node)
                changed = True
    gm.recompile()


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
            # exporter starts from too (std and var_mean in double, see _decompositions).
            _make_copies_explicit(ep.graph_module)
            _group_dequantized_weights(ep)
            ep = ep.run_decompositions(_decompositions())
            _drop_scalar_assertions(ep.graph_module)
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


def forward_argument_names(module, count):
    """The names of forward's first `count` positional parameters, if it has that many."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else None

