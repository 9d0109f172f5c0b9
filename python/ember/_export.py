"""Capture a torch.nn.Module as an ATen graph and write it as an exported program.

Two capture paths produce the same document (docs/exported-program.md):
- PyTorch >= 2.1: torch.export.export, whose graph signature already names parameters, buffers,
  constants and buffer mutations.
- PyTorch 1.13 (Debian bookworm): make_fx over a functional_call of the module, with parameters,
  buffers and tensor attributes lifted to graph inputs here. Dynamic dims use make_fx's symbolic mode.

In-place ops and views stay as captured; the compiler gives them meaning (functionalization).
"""

import contextlib
import inspect
import math
import re

import torch
import torch.fx as fx

from ._errors import ExportError
from ._format import ALIGNMENT, FORMAT_VERSION, dtype_name, write_file

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


def _torch_version():
    match = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def export(module, example_inputs, path, dynamic_shapes=None):
    """Captures `module(*example_inputs)` and writes one exported-program file at `path`.

    dynamic_shapes: None, or one entry per input: None (all dims static) or {dim: Dim | (min, max)}.
    Returns the JSON document that was written (useful for inspection and tests).
    Raises ExportError with a message naming the problem for anything it cannot export.
    """
    document, blobs = capture(module, example_inputs, dynamic_shapes)
    write_file(path, document, blobs)
    return document


def capture(module, example_inputs, dynamic_shapes=None):
    """Returns (document, blobs): the JSON document and the (offset, bytes) tensor data."""
    if not isinstance(module, torch.nn.Module):
        raise ExportError(f"export needs a torch.nn.Module, got {type(module).__name__}")
    inputs = _check_inputs(example_inputs)
    dims = _check_dynamic_shapes(dynamic_shapes, inputs)
    state = _collect_state(module)
    if _torch_version() >= (2, 1):
        graph = _capture_torch_export(module, inputs, dims, state)
    else:
        graph = _capture_make_fx(module, inputs, dims, state)
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
# Capture with make_fx (PyTorch 1.13)


class _Captured:
    """What either capture path hands to the writer."""

    def __init__(self):
        self.graph = None  # fx.Graph
        self.root = None  # the GraphModule, for get_attr
        self.placeholders = []  # [(fx.Node, kind, fqns or None, persistent)]
        self.values = {}  # fx.Node -> example value (tensor, int, tuple) when meta lacks it
        self.symbols = []  # [Dim] declared dynamic dims, in order
        self.sym = None  # callable: SymInt-like -> int or (expr str, min, max)
        self.module_stack = None  # callable: fx.Node -> [{"path", "type"}]
        self.output_specs = None  # torch.export: [(kind, target)] per flat output
        self.user_names = None  # forward's parameter names, for the user inputs
        self.constant_fqns = lambda t: None
        self.extra_tensors = []  # [(fqn, tensor)] stored tensors that are not module state
        self.capture = ""


def _module_names(module):
    names = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        names.setdefault(id(mod), (prefix, type(mod).__name__))
    return names


@contextlib.contextmanager
def _record_module_stack(module):
    """Tags each fx node created while tracing with the stack of nn.Modules being called."""
    names = _module_names(module)
    stack = []
    handles = []

    def pre_hook(mod, args):
        stack.append({"path": names[id(mod)][0], "type": names[id(mod)][1]})

    def post_hook(mod, args, out):
        if stack:
            stack.pop()

    for _, mod in module.named_modules():
        if mod is not module:
            handles.append(mod.register_forward_pre_hook(pre_hook))
            handles.append(mod.register_forward_hook(post_hook))
    original = fx.Graph.create_node

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        node.meta["ember_module_stack"] = [dict(frame) for frame in stack]
        return node

    fx.Graph.create_node = create_node
    try:
        yield
    finally:
        fx.Graph.create_node = original
        for h in handles:
            h.remove()


def _native_mha_decomposition(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                              proj_weight, proj_bias, mask=None, need_weights=True,
                              average_attn_weights=True, mask_type=None):
    """aten::_native_multi_head_attention in ATen ops Ember compiles.

    PyTorch 1.13 runs an eval nn.MultiheadAttention(batch_first=True) without gradients through
    this fused op (its "fast path"); the exporter always captures without gradients, so every
    such module reaches it. Inputs are (batch, seq, embed); the scaling, softmax and projections
    follow nn.functional.multi_head_attention_forward. Only a key-padding mask (mask_type 1, what
    the fast path passes for `key_padding_mask`) is supported.
    """
    if mask is not None and mask_type != 1:
        raise ExportError("nn.MultiheadAttention's fused path with an attention mask "
                          f"(mask_type={mask_type}) is not supported by the exporter; pass the "
                          "mask as key_padding_mask or call the module with gradients enabled")
    b, l, e = query.shape
    s_len = key.shape[1]
    head = e // num_head
    wq, wk, wv = qkv_weight.chunk(3)
    bq, bk, bv = qkv_bias.chunk(3)
    f = torch.nn.functional
    q = f.linear(query, wq, bq).reshape(b, l, num_head, head).transpose(1, 2)
    k = f.linear(key, wk, bk).reshape(b, s_len, num_head, head).transpose(1, 2)
    v = f.linear(value, wv, bv).reshape(b, s_len, num_head, head).transpose(1, 2)
    scores = torch.matmul(q * (float(head) ** -0.5), k.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask.reshape(b, 1, 1, s_len).to(torch.bool), float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    out = torch.matmul(attn, v).transpose(1, 2).reshape(b, l, e)
    out = f.linear(out, proj_weight, proj_bias)
    if not need_weights:
        return out, torch.zeros((0,), dtype=query.dtype)
    return out, attn.mean(dim=1) if average_attn_weights else attn


def _encoder_layer_decomposition(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                 proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1,
                                 norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
                                 ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    """aten::_transformer_encoder_layer_fwd (the fast path of an eval
    nn.TransformerEncoderLayer(batch_first=True) without gradients) in ATen ops: self-attention
    through the decomposition above, then the feed-forward block, with the layer norms before
    (norm_first) or after each residual add, as nn.TransformerEncoderLayer.forward computes."""
    if mask is not None:
        raise ExportError("nn.TransformerEncoderLayer's fused path with a mask is not supported by "
                          "the exporter; construct the layer with batch_first=False")
    f = torch.nn.functional

    def attention(x):
        return _native_mha_decomposition(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias,
                                         proj_weight, proj_bias, need_weights=False)[0]

    def feed_forward(x):
        h = f.linear(x, ffn_weight_1, ffn_bias_1)
        h = f.gelu(h) if use_gelu else torch.relu(h)
        return f.linear(h, ffn_weight_2, ffn_bias_2)

    def norm1(x):
        return f.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(x):
        return f.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + attention(src))
    return norm2(x + feed_forward(x))


def _make_fx_decompositions():
    table = {}
    native_mha = getattr(torch.ops.aten, "_native_multi_head_attention", None)
    if native_mha is not None:
        table[native_mha.default] = _native_mha_decomposition
    encoder_layer = getattr(torch.ops.aten, "_transformer_encoder_layer_fwd", None)
    if encoder_layer is not None:
        table[encoder_layer.default] = _encoder_layer_decomposition
    return table


def _capture_make_fx(module, inputs, dims, state):
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils.stateless import functional_call

    entries = [e for e in state.entries if e[0] != "constant"]
    constants = [e for e in state.entries if e[0] == "constant"]
    n_state = len(entries)

    def program(*flat):
        bound = {}
        for (kind, fqns, _, _), value in zip(entries, flat[:n_state]):
            for fqn in fqns:
                bound[fqn] = value
        return functional_call(module, bound, tuple(flat[n_state:]))

    # Tracing runs the program (real mode): clones keep the user's buffers and inputs untouched,
    # and plain tensor attributes (traced as constants) are restored afterwards.
    args = [e[2].detach().clone() for e in entries]
    mode = "symbolic" if dims else "real"
    if dims:
        args += _symbolic_examples(inputs, dims, entries)
    else:
        args += [x.detach().clone() for x in inputs]
    try:
        with torch.no_grad(), _record_module_stack(module), _restoring(constants):
            gm = make_fx(program, decomposition_table=_make_fx_decompositions(),
                         tracing_mode=mode)(*args)
    except ExportError:
        raise
    except Exception as e:  # make_fx raises many types; say where it failed
        hint = ""
        if dims:
            hint = (" (PyTorch 1.13's symbolic tracing supports few Python-level tensor ops, e.g. "
                    "no indexing; export with static shapes or use PyTorch >= 2.1)")
        raise ExportError(f"capture with make_fx failed: {type(e).__name__}: {e}{hint}") from e

    captured = _Captured()
    captured.capture = f"make_fx/{mode}"
    captured.graph = gm.graph
    captured.root = gm
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(phs) != n_state + len(inputs):
        raise ExportError(f"internal: make_fx produced {len(phs)} inputs, expected "
                          f"{n_state + len(inputs)}")
    for node, (kind, fqns, _, persistent) in zip(phs, entries):
        captured.placeholders.append((node, kind, fqns, persistent))
    for node in phs[n_state:]:
        captured.placeholders.append((node, "user_input", None, True))
    # Plain tensor attributes become get_attr constants; recover their FQN by identity.
    constant_fqns = {id(c[2]): c[1][0] for c in constants}
    captured.constant_fqns = lambda t: constant_fqns.get(id(t))
    captured.module_stack = lambda n: n.meta.get("ember_module_stack", [])
    captured.symbols = [d for _, _, d in dims]
    if mode == "real":
        with _restoring(constants):
            captured.values = _run_for_values(gm, entries, inputs)
        captured.sym = lambda s: int(s)
    else:
        captured.sym = _make_fx_symbols(gm, phs[n_state:], inputs, dims)
    return captured


@contextlib.contextmanager
def _restoring(entries):
    """Puts the tensors of `entries` back as they were, whatever the traced program wrote."""
    saved = [e[2].detach().clone() for e in entries]
    try:
        yield
    finally:
        with torch.no_grad():
            for e, value in zip(entries, saved):
                e[2].copy_(value)


def _symbolic_examples(inputs, dims, entries):
    """Example inputs for symbolic tracing. PyTorch 1.13 gives equal input sizes one symbol ("duck
    shaping") and specializes sizes 0 and 1, so each dynamic dim is traced at a size that no other
    dim of any input or weight has; fake tensors make the values irrelevant."""
    taken = {0, 1}
    for t in list(inputs) + [e[2] for e in entries]:
        taken.update(t.shape)
    shapes = [list(x.shape) for x in inputs]
    for index, d, dim in dims:
        size = max(dim.min, 2)
        while size in taken:
            size += 1
        taken.add(size)
        shapes[index][d] = size
    return [torch.zeros(shape, dtype=x.dtype) for shape, x in zip(shapes, inputs)]


def _run_for_values(gm, entries, inputs):
    """Runs the traced graph once to know every node's result (shapes, dtypes, strides)."""
    values = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            values[n] = result
            return result

    args = [e[2].detach().clone() for e in entries] + [x.detach().clone() for x in inputs]
    with torch.no_grad():
        Recorder(gm).run(*args)
    return values


def _sym_expr(s):
    """The sympy expression behind a symbolic int of any PyTorch version, or None."""
    if hasattr(s, "expr") and not isinstance(s, torch.Tensor):
        return s.expr  # 1.13 PySymInt
    if hasattr(s, "get_pyobj"):
        return s.get_pyobj().expr  # 1.13 SymIntNode
    if hasattr(s, "node") and hasattr(s.node, "expr"):
        return s.node.expr  # >= 2.0 SymInt
    return None


def _make_fx_symbols(gm, user_phs, inputs, dims):
    """Maps make_fx's symbols to the declared dynamic dims; every other symbol takes its example
    value. Returns a function from a symbolic int to int or (expr, min, max)."""
    import sympy

    shape_env = None
    declared = {}
    for index, d, dim in dims:
        size = user_phs[index].meta["val"].shape[d]
        expr = _sym_expr(size)
        if expr is None or not isinstance(expr, sympy.Symbol):
            raise ExportError(f"internal: input {index} dim {d} was specialized while tracing")
        if expr in declared:
            raise ExportError(f"internal: input {index} dim {d} shares a symbol with another "
                              "dynamic dim")
        declared[expr] = dim
        shape_env = shape_env or getattr(size.get_pyobj(), "shape_env", None)
    values = dict(shape_env.var_to_val) if shape_env else {}
    replacements = dict(getattr(shape_env, "replacements", {}) or {})
    names = {s: sympy.Symbol(d.name, integer=True, positive=True) for s, d in declared.items()}
    concrete = {s: v for s, v in values.items() if s not in declared}
    lows = {names[s]: d.min for s, d in declared.items()}
    highs = {names[s]: d.max for s, d in declared.items()}

    # A guard on a dynamic symbol that does not hold over its whole range means the trace is only
    # valid for some sizes: refuse rather than produce a program that is silently wrong.
    for guard in getattr(shape_env, "guards", []) if shape_env else []:
        expr, value = guard[0], guard[1]
        if not any(s in declared for s in expr.free_symbols):
            continue
        e = expr.xreplace(replacements).xreplace(concrete).xreplace(names)
        for bound in (lows, highs):
            if e.xreplace(bound) != value:
                at = ", ".join(f"{k} = {v}" for k, v in bound.items())
                raise ExportError(f"the program's control flow depends on a dynamic dim: tracing "
                                  f"assumed ({e}) is {value}, which does not hold at {at}; "
                                  "narrow the dim's range or remove the branch")

    def sym(s):
        if isinstance(s, int):
            return s
        expr = _sym_expr(s)
        if expr is None:
            raise ExportError(f"cannot interpret symbolic value {s!r}")
        e = sympy.simplify(expr.xreplace(replacements).xreplace(concrete).xreplace(names))
        if e.is_Integer:
            return int(e)
        if e.free_symbols - set(names.values()):
            raise ExportError(f"symbolic size {expr} depends on values the exporter cannot bound")
        return (str(e).replace(" ", ""), int(e.xreplace(lows)), int(e.xreplace(highs)))

    return sym


# ---------------------------------------------------------------------------------------------
# Capture with torch.export (PyTorch >= 2.1)


def _capture_torch_export(module, inputs, dims, state):
    from torch.export import Dim as TorchDim
    from torch.export import export as torch_export

    dynamic_shapes = None
    if dims:
        dynamic_shapes = [None] * len(inputs)
        for index, d, dim in dims:
            spec = dynamic_shapes[index] or {}
            spec[d] = TorchDim(dim.name, min=dim.min, max=dim.max)
            dynamic_shapes[index] = spec
        dynamic_shapes = tuple(dynamic_shapes)
    try:
        with torch.no_grad():
            ep = torch_export(module, tuple(inputs), dynamic_shapes=dynamic_shapes)
    except Exception as e:
        raise ExportError(f"torch.export failed: {type(e).__name__}: {e}") from e
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
    captured.output_specs = []
    for spec in sig.output_specs:
        kind = out_kinds.get(spec.kind.name)
        if kind is None:
            raise ExportError(f"unsupported output kind {spec.kind.name}")
        captured.output_specs.append((kind, spec.target))
    ranges = {}
    for s, r in ep.range_constraints.items():
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
        if expr.is_Integer:
            return int(expr)
        lows = {x: ranges[str(x)][0] for x in expr.free_symbols}
        highs = {x: ranges[str(x)][1] for x in expr.free_symbols}
        return (str(expr).replace(" ", ""), int(expr.xreplace(lows)), int(expr.xreplace(highs)))

    captured.sym = sym
    # torch.export names its symbols itself; record them under its names.
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


# Batch norm in training mode updates running_mean and running_var in place, but PyTorch 1.13's
# schemas do not mark them written (Tensor(a!)); ir::mutated_arguments knows the same list.
_HIDDEN_RUNNING_STAT_WRITES = ("aten::native_batch_norm", "aten::batch_norm",
                               "aten::_batch_norm_impl_index", "aten::cudnn_batch_norm",
                               "aten::miopen_batch_norm")


class _Writer:
    def __init__(self, captured, state):
        self.c = captured
        self.state = state
        self.names = set()
        self.value_name = {}  # (fx.Node, output index or None) -> value name
        self.inline = {}  # fx.Node -> encoded constant (symbolic ints that resolved to a number)
        self.operators = {}
        self.lifted = []  # get_attr tensors lifted to constant inputs: (name, fqn, tensor)
        self.roots = {}  # (node, index) -> placeholder node the value aliases

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
        if node in self.c.values:
            return self.c.values[node]
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
            # PyTorch 1.13 reports example strides even for symbolic shapes: keep strides only
            # where the shape is static, where they are exact.
            static = all(isinstance(s, int) for s in strides + shape)
            concrete = [s if isinstance(s, int) else 0 for s in strides]
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
        if isinstance(target, torch._ops.OpOverloadPacket):
            # fx may record a packet (aten.sym_size); pick the overload the call binds to.
            fits = [o for o in target.overloads() if _binds(getattr(target, o)._schema, node)]
            if len(fits) != 1:
                raise ExportError(f"node {node.name}: cannot tell which overload of {target} is "
                                  f"called (candidates {fits})")
            target = getattr(target, fits[0])
        if isinstance(target, torch._ops.OpOverload):
            schema = target._schema
            return schema.name, target._overloadname, schema
        name = getattr(target, "__name__", str(target))
        if name in _SYM_OPS:
            return "sym::" + _SYM_OPS[name], "default", None
        if isinstance(target, torch._ops.HigherOrderOperator) if hasattr(
                torch._ops, "HigherOrderOperator") else False:
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
                if not isinstance(value, torch.Tensor):
                    raise ExportError(f"{where}: attribute of type {type(value).__name__}")
                fqn = self.c.constant_fqns(value) or node.target
                name = self._unique("c_" + fqn)
                self.value_name[(node, None)] = name
                self.roots[(node, None)] = node
                self.lifted.append((node, name, fqn, value))
                continue
            if node.op != "call_function":
                raise ExportError(f"{where}: unsupported fx node kind {node.op}")
            if getattr(node.target, "__name__", "") == "getitem" and isinstance(node.args[0],
                                                                                  fx.Node):
                continue
            example = self._example(node)
            op, overload, schema = self._op(node)
            if op.startswith("sym::") or (op == "aten::sym_size" or op.startswith("aten::sym_")):
                v = self.c.sym(example) if example is not None else None
                if isinstance(v, int):
                    self.inline[node] = {"int": v}
                    continue
            entry = {"name": None, "op": op, "overload": overload}
            if schema is not None:
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
            if schema is not None:
                self._track_aliases(node, schema, example)
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

    def _track_aliases(self, node, schema, example):
        """Follows views to the graph input they alias, so in-place writes through a view are
        recorded as writes to that input."""
        def root_of(a):
            return self.roots.get((a, None)) if isinstance(a, fx.Node) else None

        bound = {}
        for i, a in enumerate(schema.arguments):
            if i < len(node.args) and not a.kwarg_only:
                bound[a.name] = node.args[i]
            elif a.name in node.kwargs:
                bound[a.name] = node.kwargs[a.name]
        written = [a.name for a in schema.arguments
                   if a.alias_info is not None and a.alias_info.is_write]
        if schema.name in _HIDDEN_RUNNING_STAT_WRITES and bound.get("training", False) is True:
            written += ["running_mean", "running_var"]
        for name in written:
            root = root_of(bound.get(name))
            if root is not None:
                self.mutated.add(root)
        multi = isinstance(example, (tuple, list))
        for j, r in enumerate(schema.returns):
            if r.alias_info is None:
                continue
            for a in schema.arguments:
                if a.alias_info is not None and a.alias_info.before_set & r.alias_info.before_set:
                    root = root_of(bound.get(a.name))
                    if root is not None:
                        if multi and len(schema.returns) == 1:  # Tensor(a)[]: every element
                            for i in range(len(example)):
                                self.roots[(node, i)] = root
                        self.roots[(node, j if multi else None)] = root
                        for user in node.users:  # getitem users read through the alias too
                            if getattr(user.target, "__name__", "") == "getitem":
                                if not multi or len(schema.returns) == 1 or user.args[1] == j:
                                    self.roots[(user, None)] = root

    # Document ----------------------------------------------------------------------------
    def document_and_blobs(self):
        c = self.c
        self.mutated = set()
        inputs, specs = [], []
        user_index = 0
        for node, kind, fqns, persistent in c.placeholders:
            prefix = {"parameter": "p_", "buffer": "b_", "constant": "c_"}.get(kind, "")
            if fqns:
                base = prefix + fqns[0]
            else:  # make_fx calls inputs arg0_1...; forward's parameter names read better
                base = c.user_names[user_index] if c.user_names else f"input_{user_index}"
                user_index += 1
            name = self._unique(base)
            self.value_name[(node, None)] = name
            self.roots[(node, None)] = node
            example = self._placeholder_example(node, kind, fqns)
            inputs.append(self._value_def(name, example, f"input {name}"))
            spec = {"kind": kind, "value": name}
            if fqns:
                spec["target"] = fqns[0]
                if len(fqns) > 1:
                    spec["aliases"] = fqns[1:]
            if kind == "buffer":
                spec["persistent"] = persistent
            specs.append(spec)
        nodes = self._convert(c.graph, top=True)
        # Lifted get_attr constants become graph inputs after the placeholders that make_fx made.
        for node, name, fqn, tensor in self.lifted:
            inputs.append(self._value_def(name, tensor, f"constant {fqn}"))
            specs.append({"kind": "constant", "value": name, "target": fqn})
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
            kind, target = ("user_output", None)
            if c.output_specs is not None:
                kind, target = c.output_specs[i]
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

    def _placeholder_example(self, node, kind, fqns):
        if node in self.c.values:
            return self.c.values[node]
        if kind != "user_input" and self.c.capture.startswith("make_fx"):
            # Weights are static (contract C2) even where symbolic tracing gave them symbols.
            entry = self.state.by_id.get(id(self._state_tensor(fqns[0])))
            if entry is not None:
                return entry[2]
        return self._example(node)

    def _state_tensor(self, fqn):
        for entry in self.state.entries:
            if fqn in entry[1]:
                return entry[2]
        return None

    def _mutations(self, specs, outputs):
        by_value = {s["value"]: s for s in specs}
        mutated = {"buffers": [], "parameters": [], "user_inputs": []}
        roots = set()
        for root in self.mutated:
            name = self.value_name.get((root, None))
            spec = by_value.get(name)
            if spec is None:
                fqn = next((f for n, _, f, _ in self.lifted if n is root), root.name)
                raise ExportError(f"the program writes in place to the tensor attribute {fqn!r}; "
                                  "register it as a buffer (module.register_buffer) to export it")
            roots.add(name)
        for o in outputs:  # torch.export's functional form reports mutations as outputs
            if o["kind"] == "buffer_mutation":
                mutated["buffers"].append(o["target"])
            elif o["kind"] == "user_input_mutation":
                mutated["user_inputs"].append(o["target"])
        for s in specs:
            if s["value"] not in roots:
                continue
            if s["kind"] == "buffer":
                mutated["buffers"].extend([s["target"]] + s.get("aliases", []))
            elif s["kind"] == "parameter":
                mutated["parameters"].extend([s["target"]] + s.get("aliases", []))
            elif s["kind"] == "user_input":
                mutated["user_inputs"].append(s["value"])
            else:
                raise ExportError(f"the program writes in place to the constant {s['target']!r}; "
                                  "register it as a buffer (module.register_buffer) to export it")
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
        for _, _, fqn, tensor in self.lifted:
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


def _binds(schema, node):
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(node.args) > len(positional):
        return False
    names = {a.name for a in schema.arguments}
    if any(k not in names for k in node.kwargs):
        return False
    for i, a in enumerate(schema.arguments):
        given = (i < len(node.args) and not a.kwarg_only) or a.name in node.kwargs
        if not given and not a.has_default_value():
            return False
    return True
