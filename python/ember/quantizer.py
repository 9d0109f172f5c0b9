"""Ember's PT2E quantizer: int8 programs for Ember's runtime and its cpu backend.

    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e, convert_pt2e
    from ember.quantizer import EmberQuantizer, int8_config
    q = EmberQuantizer().set_global(int8_config())       # or .set_module_name("encoder", ...)
    m = prepare_pt2e(torch.export.export(model, args).module(), q)
    m(*calibration_batch)                                # observe, as often as you like
    ember.export(convert_pt2e(m), args, "model.ep")      # then `ember compile` as usual

`int8_dynamic_config()` quantizes linear layers only, each input when the program runs (PT2E's
dynamic flow, the usual one for transformers; no calibration).

It annotates the graph that torch.export captured, in PyTorch's PT2E flow: convolutions and linears
(with a following ReLU, ReLU6 or hardtanh fused), matmuls of two activations (attention's),
additions, concatenations, pools and views. Activations are int8 per-tensor affine, weights int8
symmetric (per output channel by default), biases stay float.

Two rules that ExecuTorch's XNNPACKQuantizer breaks (contracts C31 and C32):
- Only float32 tensors are quantized. An op that reads or writes a bfloat16, float16 or float64
  tensor is left in float, whole: its values would be quantized under float32 assumptions.
- A config applies only inside its scope. `set_module_name` and `set_module_type` configs cover
  the nodes that come from that module (nested modules included), the global one every other
  node; a `cat` outside every scope is not quantized because one of its inputs was.
Scopes are matched from the node's `nn_module_stack`: the most specific module name wins, then
the module type, then the global config. A config of None leaves that scope in float.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.observer import (HistogramObserver, MinMaxObserver,
                                                PerChannelMinMaxObserver, PlaceholderObserver)
from torchao.quantization.pt2e.quantizer import (QuantizationAnnotation, QuantizationConfig,
                                                 QuantizationSpec, Quantizer,
                                                 SharedQuantizationSpec)

__all__ = ["EmberQuantizer", "int8_config", "int8_dynamic_config"]

_ANNOTATION = "quantization_annotation"


def int8_config(per_channel: bool = True, observer: str = "histogram",
                reduce_range: bool = False) -> QuantizationConfig:
    """Static int8: activations int8 [-128, 127] per-tensor affine, observed by `observer`
    ("histogram", the better calibration, or "minmax", the faster); weights int8 [-127, 127]
    symmetric, per output channel (`per_channel`) or per tensor. Biases stay float.

    reduce_range: weights in [-63, 63] (7 bits). The cpu backend computes convolutions in
    integers exactly on any weights only on CPUs with VNNI; 7-bit weights it computes so from
    AVX2 up (before VNNI, the CPU adds pairs of products in 16 bits, which full-range weights
    overflow). Elsewhere it runs them in float, exactly but without int8's speed."""
    if observer not in ("histogram", "minmax"):
        raise ValueError(f"observer must be 'histogram' or 'minmax', not {observer!r}")
    act_observer = HistogramObserver if observer == "histogram" else MinMaxObserver
    act = QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127,
                           qscheme=torch.per_tensor_affine,
                           observer_or_fake_quant_ctr=act_observer.with_args(eps=2**-12))
    weight = _weight_spec(per_channel, 63 if reduce_range else 127)
    return QuantizationConfig(input_activation=act, output_activation=act, weight=weight, bias=None)


def int8_dynamic_config(per_channel: bool = True) -> QuantizationConfig:
    """Dynamic int8, transformers' usual flow: only linear layers are quantized, each input
    when the program runs, int8 per-tensor affine over its own range (choose_qparams.tensor; no
    calibration needed, one call of the prepared model fixes the graph); weights int8 [-127, 127]
    symmetric, per output channel (`per_channel`) or per tensor. Everything else stays float.
    The cpu backend computes these linears in integers (docs/quantization.md)."""
    act = QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127,
                           qscheme=torch.per_tensor_affine, is_dynamic=True,
                           observer_or_fake_quant_ctr=PlaceholderObserver.with_args(eps=2**-12))
    return QuantizationConfig(input_activation=act, output_activation=None,
                              weight=_weight_spec(per_channel, 127), bias=None)


def _weight_spec(per_channel: bool, wmax: int) -> QuantizationSpec:
    if per_channel:
        return QuantizationSpec(dtype=torch.int8, quant_min=-wmax, quant_max=wmax,
                                qscheme=torch.per_channel_symmetric, ch_axis=0,
                                observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(
                                    eps=2**-12))
    return QuantizationSpec(dtype=torch.int8, quant_min=-wmax, quant_max=wmax,
                            qscheme=torch.per_tensor_symmetric,
                            observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-12))


_aten = torch.ops.aten
_CONV_LINEAR = {_aten.conv1d.default, _aten.conv2d.default, _aten.linear.default}
# Matmuls of two activations (attention's scores and their weighting of the values).
_MATMUL = {_aten.matmul.default, _aten.bmm.default, _aten.mm.default}
# Activations fused into the convolution, linear or add before them (quantized after them only).
# (torch.nn.functional.relu6 exports as relu6; torch.nn.ReLU6 as hardtanh.)
_RELU = {_aten.relu.default, _aten.relu_.default, _aten.hardtanh.default, _aten.hardtanh_.default,
         _aten.relu6.default, _aten.relu6_.default}
_ADD = {_aten.add.Tensor, _aten.add_.Tensor}
_CAT = {_aten.cat.default, _aten.concat.default}
# Ops whose output keeps its input's quantization parameters (they move or select values).
_SHARED = {_aten.max_pool2d.default, _aten.flatten.using_ints, _aten.reshape.default,
           _aten.view.default, _aten.transpose.int, _aten.permute.default}
# Ops with quantized input and output of their own parameters.
_OWN = {_aten.adaptive_avg_pool2d.default, _aten.avg_pool2d.default, _aten.mean.dim}


def _float32_only(node: Node) -> bool:
    """True when every floating tensor the node reads or writes is float32 (C31)."""
    values = [node.meta.get("val")]
    for arg in node.all_input_nodes:
        values.append(arg.meta.get("val"))
    seen = False
    for v in values:
        for t in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(t, torch.Tensor):
                if t.dtype.is_floating_point and t.dtype != torch.float32:
                    return False
                seen = True
    return seen


def _module_path(entry) -> str:
    path = entry[0]
    return path[len("L['self']."):] if path.startswith("L['self'].") else path


def _type_name(t) -> str:
    if isinstance(t, type):
        return f"{t.__module__}.{t.__qualname__}"
    return str(t)


class EmberQuantizer(Quantizer):
    """A PT2E Quantizer (prepare_pt2e / convert_pt2e) for Ember; see the module's docstring."""

    def __init__(self):
        super().__init__()
        self._global: Optional[QuantizationConfig] = None
        self._by_name: Dict[str, Optional[QuantizationConfig]] = {}
        self._by_type: Dict[str, Optional[QuantizationConfig]] = {}

    def set_global(self, config: Optional[QuantizationConfig]) -> "EmberQuantizer":
        self._global = config
        return self

    def set_module_name(self, name: str,
                        config: Optional[QuantizationConfig]) -> "EmberQuantizer":
        """`config` for the nodes of module `name` ("encoder.layers.0") and its submodules."""
        if not isinstance(name, str) or not name:
            raise ValueError("set_module_name needs a module's qualified name")
        self._by_name[name] = config
        return self

    def set_module_type(self, module_type: type,
                        config: Optional[QuantizationConfig]) -> "EmberQuantizer":
        """`config` for the nodes of every module of class `module_type`."""
        self._by_type[_type_name(module_type)] = config
        return self

    def _config_for(self, node: Node) -> Optional[QuantizationConfig]:
        stack = list(node.meta.get("nn_module_stack", {}).values())
        paths = [_module_path(entry) for entry in stack]
        # The most specific module name that holds the node (the longest one).
        names = [n for n in self._by_name
                 if any(p == n or p.startswith(n + ".") for p in paths)]
        if names:
            return self._by_name[max(names, key=len)]
        for entry in reversed(stack):  # the innermost module first
            key = _type_name(entry[1])
            if key in self._by_type:
                return self._by_type[key]
        return self._global

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or _ANNOTATION in node.meta:
                continue
            config = self._config_for(node)
            if config is None or not _float32_only(node):
                continue
            dynamic = config.input_activation is not None and config.input_activation.is_dynamic
            for annotate in _DYNAMIC_ANNOTATORS if dynamic else _ANNOTATORS:
                if annotate(node, config, self._config_for):
                    break
        return model

    def validate(self, model: GraphModule) -> None:
        pass


def _mark(node: Node, inputs: Dict[Node, object], output) -> None:
    node.meta[_ANNOTATION] = QuantizationAnnotation(input_qspec_map=inputs, output_qspec=output,
                                                    _annotated=True)


def _single_user(node: Node, targets) -> Optional[Node]:
    users = list(node.users)
    if len(users) == 1 and users[0].op == "call_function" and users[0].target in targets:
        return users[0]
    return None


def _fused_relu(node: Node, config, config_for) -> Optional[Node]:
    """The ReLU that alone reads `node`, under the same config and float32 only, or None."""
    relu = _single_user(node, _RELU)
    if (relu is not None and _ANNOTATION not in relu.meta and config_for(relu) is config
            and _float32_only(relu)):
        return relu
    return None


def _mark_with_activation(node: Node, inputs, config, config_for) -> None:
    """Annotates `node` reading `inputs`; its output is quantized after the ReLU (or ReLU6) that
    alone reads it, if there is one, else right away."""
    relu = _fused_relu(node, config, config_for)
    if relu is None:
        _mark(node, inputs, config.output_activation)
    else:
        _mark(node, inputs, None)
        _mark(relu, {}, config.output_activation)


def _annotate_conv_linear(node: Node, config, config_for) -> bool:
    if node.target not in _CONV_LINEAR:
        return False
    x, weight = node.args[0], node.args[1]
    if not isinstance(x, Node) or not isinstance(weight, Node):
        return False
    inputs = {x: config.input_activation, weight: config.weight}
    _mark_with_activation(node, inputs, config, config_for)
    return True


def _annotate_matmul(node: Node, config, config_for) -> bool:
    if node.target not in _MATMUL:
        return False
    a, b = node.args[0], node.args[1]
    if not isinstance(a, Node) or not isinstance(b, Node):
        return False
    # Both operands per-tensor activations: weights come as linear layers (_annotate_conv_linear).
    _mark(node, {a: config.input_activation, b: config.input_activation},
          config.output_activation)
    return True


def _annotate_add(node: Node, config, config_for) -> bool:
    if node.target not in _ADD:
        return False
    operands = [a for a in node.args[:2] if isinstance(a, Node)]
    if len(operands) != 2 or len(node.args) > 2 or node.kwargs.get("alpha", 1) != 1:
        return False
    inputs = {a: config.input_activation for a in operands}
    _mark_with_activation(node, inputs, config, config_for)
    return True


def _annotate_cat(node: Node, config, config_for) -> bool:
    if node.target not in _CAT:
        return False
    tensors = node.args[0]
    if not isinstance(tensors, (list, tuple)) or not tensors:
        return False
    if not all(isinstance(t, Node) for t in tensors):
        return False
    # One set of parameters for every input and the output: the cat then moves int8 values.
    first = tensors[0]
    shared = SharedQuantizationSpec((first, node))
    inputs = {first: config.input_activation}
    for t in tensors[1:]:
        inputs[t] = shared
    _mark(node, inputs, shared)
    return True


def _annotate_shared(node: Node, config, config_for) -> bool:
    if node.target not in _SHARED:
        return False
    x = node.args[0]
    if not isinstance(x, Node):
        return False
    _mark(node, {x: config.input_activation}, SharedQuantizationSpec((x, node)))
    return True


def _annotate_own(node: Node, config, config_for) -> bool:
    if node.target not in _OWN:
        return False
    x = node.args[0]
    if not isinstance(x, Node):
        return False
    _mark(node, {x: config.input_activation}, config.output_activation)
    return True


def _annotate_relu(node: Node, config, config_for) -> bool:
    # A ReLU (or ReLU6, hardtanh) not fused into a convolution, linear or add before it.
    if node.target not in _RELU or not isinstance(node.args[0], Node):
        return False
    _mark(node, {node.args[0]: config.input_activation}, config.output_activation)
    return True


def _annotate_linear_dynamic(node: Node, config, config_for) -> bool:
    # The input quantized where the linear reads it; the output stays float.
    if node.target != _aten.linear.default:
        return False
    x, weight = node.args[0], node.args[1]
    if not isinstance(x, Node) or not isinstance(weight, Node):
        return False
    _mark(node, {x: config.input_activation, weight: config.weight}, None)
    return True


_DYNAMIC_ANNOTATORS: List[Callable[..., bool]] = [_annotate_linear_dynamic]
_ANNOTATORS: List[Callable[..., bool]] = [_annotate_conv_linear, _annotate_matmul, _annotate_add,
                                          _annotate_cat, _annotate_shared, _annotate_own,
                                          _annotate_relu]
