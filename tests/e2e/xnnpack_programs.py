"""ExecuTorch's XNNPACK-delegated programs, exported by ExecuTorch's own flows, run by ExecuTorch's
runtime, by Ember's runtime and by eager PyTorch, and compared.

    .venv/bin/python tests/e2e/xnnpack_programs.py [--models mlp,convnet,...] [--flows fp32,...]
        [--runner build/release/tests/e2e/ember_e2e_runner] [--work DIR] [--markdown FILE]
        [--node-census FILE] [--json FILE] [--list]

For each (model, flow) it writes DIR/<model>/<flow>/program.pte (+ program.ptd for fp32_ptd), the
inputs (in_<i>.npy) and the eager reference (ref_<i>.npy), and reuses them on the next run when
the export key (this file's export code, torch, torchao, executorch) is unchanged. Flows:

- fp32: torch.export, to_edge_transform_and_lower(XnnpackPartitioner()), to_executorch.
- fp32_ptd: the same with the delegate's constants tagged for an external file
  (delegate_external_constants_pass_unlifted on the unlifted module, as ExecuTorch's Llama
  export does): XNNPACK's named data goes to program.ptd, the .pte keeps none of the weights.
- int8_static: PT2E (torchao.quantization.pt2e prepare_pt2e / convert_pt2e) with
  XNNPACKQuantizer(get_symmetric_quantization_config(is_per_channel=True)), calibrated on the
  example input and 4 random draws, exported again and lowered as fp32.
- int8_dynamic: the same with get_symmetric_quantization_config(is_per_channel=True,
  is_dynamic=True) (no calibration).
- 8da4w: torchao quantize_(Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
  weight_granularity=PerGroup(32))) on every nn.Linear whose in_features is a multiple of 32
  (the others stay fp32; a model with none is "n/a"), then exported and lowered as fp32.
- fp16: module.half() and float16 inputs (_half), exported and lowered as fp32: XNNPACK's payload
  holds fp16 values (bf16 models: XnnpackPartitioner takes nothing in executorch 1.5.1).

The eager reference is the module the flow lowers: the fp32 module, PT2E's converted module
(quantize/dequantize ops in PyTorch's float arithmetic), torchao's quantized module, or the fp16
module (PyTorch's float16 CPU ops).

Tolerances (bound(); the same rule for ExecuTorch vs eager and for Ember vs ExecuTorch):
- fp32 flows: max |a - b| <= 1e-4 * max(|ref|) (1e-6 if the output is all zeros): float32
  kernels that sum in another order, through a deep network, stay a few 1e-6 of the output's
  scale; 1e-4 leaves room, yet any wrong element of weight shows.
- fp16: max |a - b| <= 1e-2 * max(|ref|) (1e-3 if the output is all zeros). ExecuTorch's XNNPACK
  and eager PyTorch round each op's result to fp16; Ember computes the delegate in float32 and
  rounds only its outputs, so it differs from both by the fp16 rounding of intermediate values
  (an fp16 step is 2^-11 of a value's magnitude, about 5e-4). Deep networks compound these
  roundings past 1e-2; the drift rule below applies (ExecuTorch itself is 2.5% of the output's
  magnitude from eager on mobilenet_v2_bn).
- int8_static, where the output is a dequantize (the graph ends in int8 with scale s): the
  output lies on a grid of step s. XNNPACK requantizes each op's int32 accumulator in fp32
  (acc * (s_in * s_w / s_out), rounded to nearest, ties to even) while PT2E's reference
  dequantizes, computes in fp32 and rounds again: an element that sits at a rounding boundary
  flips by one step, and a one-step flip inside the network moves its consumers by a few steps
  at most. Bound: Ember vs ExecuTorch (the same integer program) 1 step; ExecuTorch vs eager
  STATIC_STEPS_VS_EAGER steps. Where the output is not quantized (an fp32 op after the last
  dequantize) the dynamic rule applies.
- int8_dynamic and 8da4w (fp32 output; the activations quantized per row at run time with
  scale (max - min) / 255): a one-step flip of one activation moves an output by s_a * |w|,
  a few 1e-3 of the output's magnitude. Bound: 2e-2 * max(|ref|) against eager (the reference
  quantizes with PyTorch's float formulas) and 1e-2 * max(|ref|) between the two runtimes.

Deep quantized (and fp16) networks drift further than the bounds above: every requantizing (or
fp16-rounding) layer can flip an element by one step, and the flips add up through the network
(measured, ExecuTorch vs eager, on random weights: MobileNetV2 int8 static 25 output steps, 21%
of the largest logit; ResNet-18 1.7%). So for the quantized and fp16 flows (DRIFT_FLOWS) the
bounds are the tight tier, and a row past them is
- "ok (drift: ...)" when ExecuTorch stays within QUANT_SANITY_REL (25%) of the output's
  magnitude from eager (a broken program is off by the order of the output itself), and Ember
  stays no further from eager than ExecuTorch is (the reference is PyTorch's: Ember rounds as
  PT2E's reference does, XNNPACK as its own integer arithmetic does, so the two may land on
  either side of it; measured on tv_resnet18 int8_static, both one step from eager, two apart);
- a mismatch otherwise. The e2e subset (CI_SUBSET) accepts no drift: its rows must hold the
  tight bounds.

The exit status is 1 when a row is a mismatch or ExecuTorch's runtime fails on a program its
exporter wrote (swin int8_static in executorch 1.5.1); refusals and exporter failures are
reported only. A row's status: ok, mismatch (the largest difference over the bound, and which comparison),
"Ember refused: <first line>", "exporter failed: <reason>", "ExecuTorch failed: <reason>".
"""

import argparse
import copy
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FLOWS = ["fp32", "fp32_ptd", "int8_static", "int8_dynamic", "8da4w", "fp16"]
QUANT_FLOWS = {"int8_static", "int8_dynamic", "8da4w"}
# Flows whose rounding compounds through a deep network: past the tight bound, a row is "ok
# (drift)" when Ember stays within ExecuTorch's own distance from eager (check_row).
DRIFT_FLOWS = QUANT_FLOWS | {"fp16"}
GROUP = 32
STATIC_STEPS_VS_EAGER = 4
STATIC_STEPS_VS_EXECUTORCH = 1
DYNAMIC_REL_VS_EAGER = 2e-2
DYNAMIC_REL_VS_EXECUTORCH = 1e-2
FP32_REL = 1e-4
FP16_REL = 1e-2
QUANT_SANITY_REL = 0.25
# The e2e tests' subset (checks.check_xnnpack_programs): a few seconds of export each, every
# exporter flow and the payload's main node kinds (fully connected, add/mul, conv + pooling,
# transposed convs, a whole MobileNetV2, int8 static, int8 dynamic, 8da4w, named data in a .ptd,
# fp16 values, a channels-last delegate input and output).
CI_SUBSET = [("mlp", "fp32"), ("mlp", "fp32_ptd"), ("et_add_mul", "fp32"), ("convnet", "fp32"),
             ("mobilenet_v2_bn", "fp32"), ("convnet", "int8_static"), ("mlp", "int8_dynamic"),
             ("linear_stack", "8da4w"), ("swin", "fp32"), ("tv_mv3_bn", "fp32"),
             ("convnet", "fp16"), ("c24_channels_last", "fp32"), ("deconv", "fp32")]
# Whether Ember's runtime registers an XnnpackBackend. While False, Ember must refuse every XNNPACK
# program naming the backend, and running one fails the check (set this to True with the backend).
# While True, each (model, flow) of EXPECTED_OK must run and agree; others are only reported.
XNNPACK_IN_RUNTIME = True
EXPECTED_OK = set(CI_SUBSET)
NOT_REGISTERED = "backend 'XnnpackBackend' is not registered"
DEFAULT_WORK = os.path.join(tempfile.gettempdir(), "ember_xnnpack_programs")
DEFAULT_RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                              "release", "tests", "e2e", "ember_e2e_runner")


# --- Models ---------------------------------------------------------------------------------------
class LinearStack(torch.nn.Module):
    """Linears whose in_features are multiples of 32, so that 8da4w's groups of 32 apply."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 96)
        self.fc2 = torch.nn.Linear(96, 32)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _e2e(name):
    """A model of Ember's e2e suite (models.py): (module, inputs of its first call)."""
    import models
    factory, calls, _, _ = models.models()[name]
    torch.manual_seed(0)
    return factory().eval(), tuple(calls[0])


def _executorch_example(name):
    """One of ExecuTorch's example models that builds without a download."""
    from executorch.examples.models import MODEL_NAME_TO_MODEL
    from executorch.examples.models.model_factory import EagerModelFactory
    torch.manual_seed(0)
    module, inputs, _, _ = EagerModelFactory.create_model(*MODEL_NAME_TO_MODEL[name])
    return module.eval(), tuple(inputs)


def _torchvision(name, size):
    """torchvision's model with weights=None (ExecuTorch's example downloads the trained ones)."""
    import torchvision
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    return getattr(torchvision.models, name)(weights=None).eval(), \
        (torch.randn(1, 3, size, size, generator=g),)


def _bn_calibrated(factory):
    """The model with its BatchNorm statistics taken from 4 random batches of its input's shape
    (cumulative averages, in train mode), then eval: torchvision's MobileNets with weights=None
    keep unit running statistics, under which their logits shrink to ~1e-9, too small for the
    quantized flows to mean anything; with calibrated statistics they are of order 1."""
    module, inputs = factory()
    g = torch.Generator().manual_seed(2)
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    module.train()
    with torch.no_grad():
        for _ in range(4):
            module(*[torch.randn((2,) + tuple(t.shape[1:]), generator=g) for t in inputs])
    return module.eval(), inputs


class Deconv(torch.nn.Module):
    """Transposed convolutions (XNNPACK's Deconvolution2d): stride 2, padding 1, output_padding 1,
    one of groups 1 and one of groups 2, a relu between."""

    def __init__(self):
        super().__init__()
        self.up1 = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.up2 = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1,
                                            groups=2)

    def forward(self, x):
        return self.up2(torch.relu(self.up1(x)))


def _deconv():
    torch.manual_seed(0)
    return Deconv().eval(), (torch.randn(1, 4, 6, 7, generator=torch.Generator().manual_seed(0)),)


def _linear_stack():
    torch.manual_seed(0)
    return LinearStack().eval(), (torch.randn(4, 64, generator=torch.Generator().manual_seed(0)),)


# name -> factory returning (eval module, example inputs). Ember's e2e models first (static shapes,
# no state), then ExecuTorch's example models that need no download ("et_" prefix), then the
# torchvision equivalents of ExecuTorch's mv2/mv3/resnet18/ic3 with weights=None ("tv_").
MODELS = {
    "mlp": lambda: _e2e("mlp"),
    "convnet": lambda: _e2e("convnet"),
    "linear_stack": _linear_stack,
    "deconv": _deconv,
    "resnet18": lambda: _e2e("resnet18"),
    "mobilenet_v2": lambda: _e2e("mobilenet_v2"),
    "convnext": lambda: _e2e("convnext"),
    "swin": lambda: _e2e("swin"),
    "transformer": lambda: _e2e("transformer"),
    "mha_batch_first": lambda: _e2e("mha_batch_first"),
    "c10_rmsnorm": lambda: _e2e("c10_rmsnorm"),
    "c7_matmul_buffer": lambda: _e2e("c7_matmul_buffer"),
    "c24_channels_last": lambda: _e2e("c24_channels_last"),
    "adaptive_pool": lambda: _e2e("adaptive_pool"),
    "pads": lambda: _e2e("pads"),
    "et_add": lambda: _executorch_example("add"),
    "et_mul": lambda: _executorch_example("mul"),
    "et_add_mul": lambda: _executorch_example("add_mul"),
    "et_linear": lambda: _executorch_example("linear"),
    "et_softmax": lambda: _executorch_example("softmax"),
    "et_conv1d": lambda: _executorch_example("conv1d"),
    "et_sdpa": lambda: _executorch_example("sdpa"),
    "et_lstm": lambda: _executorch_example("lstm"),
    "et_mv2_untrained": lambda: _executorch_example("mv2_untrained"),
    "et_deep_autoencoder": lambda: _executorch_example("deep_autoencoder"),
    "et_ds_cnn": lambda: _executorch_example("ds_cnn"),
    "et_mobilenet_v1_025": lambda: _executorch_example("mobilenet_v1_025"),
    "et_resnet8": lambda: _executorch_example("resnet8"),
    "tv_mv3": lambda: _torchvision("mobilenet_v3_small", 224),
    "mobilenet_v2_bn": lambda: _bn_calibrated(lambda: _e2e("mobilenet_v2")),
    "tv_mv3_bn": lambda: _bn_calibrated(lambda: _torchvision("mobilenet_v3_small", 224)),
    "tv_resnet18": lambda: _torchvision("resnet18", 224),
    "tv_ic3": lambda: _torchvision("inception_v3", 299),
}
# What census_of records; a cached census of another version is taken again.
CENSUS_VERSION = 2
# The models whose factory uses a helper of its own, or is defined only for them (deconv): their
# cache key adds its source (model_key), leaving every other cached export valid.
OWN_HELPERS = {"mobilenet_v2_bn": [_bn_calibrated], "tv_mv3_bn": [_bn_calibrated],
               "deconv": [_deconv, Deconv]}


def _half(module, inputs):
    """The fp16 flow's model: module.half() and its floating-point inputs in float16 (eager
    PyTorch computes the reference in float16 too)."""
    return module.half(), tuple(t.half() if isinstance(t, torch.Tensor) and t.is_floating_point()
                                else t for t in inputs)


# Flows that change the model before export_flow lowers it as fp32: (transform, its cache key adds
# the transform's source). Applied in prepare(), outside export_key(), so that a flow added here
# leaves every other flow's cached exports valid.
MODEL_FLOWS = {"fp16": _half}
# Export takes minutes for the large ones on 2 cores: the default list leaves tv_ic3 out.
DEFAULT_MODELS = [m for m in MODELS if m != "tv_ic3"]


# --- Export ---------------------------------------------------------------------------------------
def flat(tree):
    return [t for t in torch.utils._pytree.tree_flatten(tree)[0]]


def _calibration(inputs, n=4):
    g = torch.Generator().manual_seed(1)
    draws = [inputs]
    for _ in range(n):
        draws.append(tuple(torch.randn(t.shape, generator=g).to(t.dtype)
                           if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                           for t in inputs))
    return draws


def _pt2e(module, inputs, dynamic):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic))
    graph = torch.export.export(copy.deepcopy(module), inputs).module()
    prepared = prepare_pt2e(graph, quantizer)
    with torch.no_grad():
        for x in ([inputs] if dynamic else _calibration(inputs)):
            prepared(*x)
    return convert_pt2e(prepared)


def _8da4w(module):
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    quantized = copy.deepcopy(module)
    fits = [m for m in quantized.modules()
            if isinstance(m, torch.nn.Linear) and m.in_features % GROUP == 0]
    if not fits:
        raise NotApplicable(f"no nn.Linear with in_features divisible by {GROUP}")
    quantize_(quantized, Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(GROUP)),
        filter_fn=lambda m, _: isinstance(m, torch.nn.Linear) and m.in_features % GROUP == 0)
    return quantized


def flow_module(module, inputs, flow):
    """The module the flow exports (its eager output is the reference)."""
    if flow == "int8_static":
        return _pt2e(module, inputs, dynamic=False)
    if flow == "int8_dynamic":
        return _pt2e(module, inputs, dynamic=True)
    if flow == "8da4w":
        return _8da4w(module)
    return module


def output_scale(quantized):
    """The scale of each output's final dequantize_per_tensor in PT2E's converted graph (None for
    an output not computed by one)."""
    if not isinstance(quantized, torch.fx.GraphModule):
        return []
    out = next(n for n in quantized.graph.nodes if n.op == "output")
    scales = []
    for node in flat(out.args[0]):
        scale = None
        if isinstance(node, torch.fx.Node) and node.op == "call_function" and \
                "dequantize_per_tensor" in str(node.target):
            s = node.args[1]
            scale = float(s) if isinstance(s, (int, float)) else None
        scales.append(scale)
    return scales


class NotApplicable(Exception):
    """A flow that does not apply to the model (fp32_ptd of a model without weights)."""


def lower(exported, flow, directory):
    """to_edge_transform_and_lower with XNNPACK, to_executorch; writes program.pte (and
    program.ptd). Returns (lowered delegate payloads, ops left outside the delegates)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.lowered_backend_module import LoweredBackendModule
    edge = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    gm = edge.exported_program().graph_module
    blobs = [m.processed_bytes for _, m in gm.named_modules()
             if isinstance(m, LoweredBackendModule) and m.backend_id == "XnnpackBackend"]
    left = sorted({getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes
                   if n.op == "call_function" and "executorch_call_delegate" not in str(n.target)
                   and "getitem" not in str(n.target)})
    program = edge.to_executorch()
    with open(os.path.join(directory, "program.pte"), "wb") as f:
        f.write(program.buffer)
    if flow == "fp32_ptd":
        if not program._tensor_data:
            raise NotApplicable("the delegates hold no constants to externalize")
        program.write_tensor_data_to_file(directory)
    return blobs, left


def export_flow(module, inputs, flow, directory):
    """Exports one (model, flow) into `directory`; writes meta.json. Raises on exporter failure."""
    from executorch.exir.passes.external_constants_pass import (
        delegate_external_constants_pass_unlifted)
    source = flow_module(module, inputs, flow)
    with torch.no_grad():
        ref = flat(source(*[copy.deepcopy(t) for t in inputs]))
        exported = torch.export.export(source, inputs)
        if flow == "fp32_ptd":
            unlifted = exported.module()
            delegate_external_constants_pass_unlifted(unlifted, gen_tag_fn=lambda _: "program")
            exported = torch.export.export(unlifted, inputs)
    blobs, left = lower(exported, flow, directory)
    for i, t in enumerate(flat(inputs)):
        np.save(os.path.join(directory, f"in_{i}.npy"), t.numpy())
    for i, t in enumerate(ref):
        np.save(os.path.join(directory, f"ref_{i}.npy"), t.detach().numpy())
    for i, b in enumerate(blobs):
        with open(os.path.join(directory, f"delegate_{i}.bin"), "wb") as f:
            f.write(b)
    return {"outputs": len(ref), "inputs": len(flat(inputs)), "dim_orders": dim_orders(inputs),
            "delegates": len(blobs),
            "portable_ops": left, "output_scales": output_scale(source)}


def dim_orders(inputs):
    """Each input's dim order, from its strides (channels-last: [0, 2, 3, 1]); the .pte declares
    the same (torch.export keeps an example input's memory format)."""
    return [sorted(range(t.dim()), key=lambda d: -t.stride(d)) if isinstance(t, torch.Tensor)
            else None for t in flat(inputs)]


def export_key():
    """What a cached export depends on: the export code here, the models, the versions."""
    import executorch.version
    import torchao
    text = "".join(inspect.getsource(f) for f in (
        _pt2e, _8da4w, flow_module, lower, export_flow, _calibration, _e2e, _executorch_example,
        _torchvision, _linear_stack, LinearStack))
    with open(os.path.join(HERE, "models.py")) as f:
        text += f.read()
    text += torch.__version__ + torchao.__version__ + executorch.version.__version__
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def model_key(model, key):
    """export_key(), and for a model with helpers of its own (OWN_HELPERS) their source."""
    helpers = OWN_HELPERS.get(model)
    if not helpers:
        return key
    text = "".join(inspect.getsource(f) for f in helpers)
    return key + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def prepare(model, flow, work, key=None):
    """The cached export of (model, flow): returns (directory, meta). meta["error"] is set when the
    exporter failed (cached too, so that a refused flow is not retried on every run)."""
    key = model_key(model, key or export_key())
    if flow in MODEL_FLOWS:
        key += "-" + hashlib.sha256(inspect.getsource(MODEL_FLOWS[flow]).encode()).hexdigest()[:8]
    directory = os.path.join(work, model, flow)
    meta_path = os.path.join(directory, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("key") == key:
            if "outputs" in meta and "dim_orders" not in meta:  # an export of an older harness
                meta["dim_orders"] = dim_orders(MODELS[model]()[1])
                add_census(directory, meta)
            if "outputs" in meta and meta.get("census_version") != CENSUS_VERSION:
                add_census(directory, meta)
            return directory, meta
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    try:
        module, inputs = MODELS[model]()
        if flow in MODEL_FLOWS:
            module, inputs = MODEL_FLOWS[flow](module, inputs)
        meta = export_flow(module, inputs, flow, directory)
    except NotApplicable as e:
        meta = {"not_applicable": str(e)}
    except Exception as e:  # any exporter refusal is a row of the report
        text = str(e).strip().splitlines()
        meta = {"error": f"{type(e).__name__}: {text[0][:200] if text else ''}"}
    meta["key"] = key
    if "outputs" in meta:
        add_census(directory, meta)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    return directory, meta


def add_census(directory, meta):
    """meta["census"] from the payloads in `directory` (or meta["census_error"]); saves meta."""
    try:
        meta["census"] = census_of(directory)
        meta["census_version"] = CENSUS_VERSION
        meta.pop("census_error", None)
    except Exception as e:
        meta["census_error"] = f"{type(e).__name__}: {e}"
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


# --- Runs -----------------------------------------------------------------------------------------
def load_arrays(directory, prefix, n):
    return [np.load(os.path.join(directory, f"{prefix}_{i}.npy")) for i in range(n)]


def ptd_of(directory):
    p = os.path.join(directory, "program.ptd")
    return p if os.path.exists(p) else None


def run_executorch(directory, meta):
    """ExecuTorch's runtime (pip executorch, its XNNPACK delegate) on the inputs; numpy outputs."""
    from executorch.runtime import Runtime
    program = Runtime.get().load_program(os.path.join(directory, "program.pte"),
                                         data_path=ptd_of(directory))
    method = program.load_method("forward")
    # ExecuTorch's Python binding copies an input's storage as it is, whatever dim order the
    # program declares: give each input that layout (as checks.check_executorch does).
    inputs = []
    for a, order in zip(load_arrays(directory, "in", meta["inputs"]),
                        meta.get("dim_orders") or [None] * meta["inputs"]):
        t = torch.from_numpy(a)
        if order and order != sorted(order):
            t = t.permute(order).contiguous().permute(np.argsort(order).tolist())
        inputs.append(t)
    return [o.numpy() if isinstance(o, torch.Tensor) else np.asarray(o)
            for o in method.execute(inputs)]


def run_ember(runner, directory, meta):
    """Ember's runtime (the e2e runner) on the same inputs: (outputs, None) or (None, message).
    A run that succeeds must also have made no heap allocation inside execute (runtime rule 3)."""
    out = os.path.join(directory, "ember_out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ins = [os.path.join(directory, f"in_{i}.npy") for i in range(meta["inputs"])]
    cmd = [runner, os.path.join(directory, "program.pte"), "--out", out, "--call", ",".join(ins)]
    if ptd_of(directory):
        cmd += ["--ptd", ptd_of(directory)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        lines = [line for line in r.stderr.strip().splitlines() if line.strip()]
        line = lines[-1] if lines else f"exit status {r.returncode}"
        return None, line[len("error: "):] if line.startswith("error: ") else line
    with open(os.path.join(out, "heap.txt")) as f:
        allocations = int(f.read().split(":")[1].split()[0])
    if allocations:
        return None, f"{allocations} heap allocations inside Method::execute (runtime rule 3)"
    n = 0
    while os.path.exists(os.path.join(out, f"call0_out{n}.npy")):
        n += 1
    return [np.load(os.path.join(out, f"call0_out{i}.npy")) for i in range(n)], None


def bound(flow, ref, scale, against_eager):
    """The largest |difference| allowed for one output (see the module's docstring)."""
    magnitude = float(np.max(np.abs(ref), initial=0.0))
    if flow == "fp16":
        return FP16_REL * magnitude if magnitude > 0 else 1e-3
    if flow not in QUANT_FLOWS:
        return FP32_REL * magnitude if magnitude > 0 else 1e-6
    if flow == "int8_static" and scale:
        return (STATIC_STEPS_VS_EAGER if against_eager else STATIC_STEPS_VS_EXECUTORCH) * scale \
            * (1 + 1e-5)
    rel = DYNAMIC_REL_VS_EAGER if against_eager else DYNAMIC_REL_VS_EXECUTORCH
    return rel * magnitude if magnitude > 0 else 1e-6


def differ(flow, got, want, scales, against_eager):
    """(largest |difference| over outputs, the worst ratio difference / bound, reason or None)."""
    if len(got) != len(want):
        return float("inf"), float("inf"), f"{len(got)} outputs, expected {len(want)}"
    worst_err, worst_ratio = 0.0, 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return float("inf"), float("inf"), f"output {i}: shape {g.shape} != {w.shape}"
        if g.dtype.kind != "f" or w.dtype.kind != "f":
            err = float(np.max(g != w, initial=False))
            worst_ratio = max(worst_ratio, err * float("inf") if err else 0.0)
            continue
        err = float(np.max(np.abs(g.astype(np.float64) - w), initial=0.0))
        if not np.isfinite(err) and not np.array_equal(np.isnan(g), np.isnan(w)):
            err = float("inf")
        b = bound(flow, w, scales[i] if i < len(scales) else None, against_eager)
        worst_err, worst_ratio = max(worst_err, err), max(worst_ratio, err / b)
    return worst_err, worst_ratio, None


def against_executorch(flow, ember, et, eager, scales):
    """Ember's outputs against ExecuTorch's: {err, ratio, eager_err, et_err, problem}. err and
    ratio: Ember vs ExecuTorch (past ratio 1 the tight bound is broken); eager_err, et_err: each
    runtime's distance to eager. problem: None, or why the outputs disagree: a shape or dtype, or
    past the tight bound where the flow allows no drift or Ember is further from eager than
    ExecuTorch is (the module's docstring)."""
    et_err = differ(flow, et, eager, scales, against_eager=True)[0]
    eager_err, eager_ratio, _ = differ(flow, ember, eager, scales, against_eager=True)
    err, ratio, why = differ(flow, ember, et, scales, against_eager=False)
    problem = why
    if not why and ratio > 1 and (flow not in DRIFT_FLOWS or eager_err > et_err):
        problem = f"{err:.3g} ({ratio:.2g}x the bound)"
    return {"err": err, "ratio": ratio, "eager_err": eager_err, "eager_ratio": eager_ratio,
            "et_err": et_err, "problem": problem}


def check_row(model, flow, work, runner, key=None):
    """One row of the report: {model, flow, status, et_vs_eager, ember_vs_et, ember_vs_eager,
    ...}. status: ok | mismatch: ... | Ember refused: ... | exporter failed: ... |
    ExecuTorch failed: ..."""
    row = {"model": model, "flow": flow}
    directory, meta = prepare(model, flow, work, key)
    row["census"] = meta.get("census")
    if "error" in meta:
        row["status"] = f"exporter failed: {meta['error']}"
        return row
    if "not_applicable" in meta:
        row["status"] = f"n/a: {meta['not_applicable']}"
        return row
    row["delegates"] = meta["delegates"]
    row["portable_ops"] = meta["portable_ops"]
    scales = meta.get("output_scales") or []
    ref = load_arrays(directory, "ref", meta["outputs"])
    row["ref_max"] = max((float(np.max(np.abs(r), initial=0.0)) for r in ref
                          if r.dtype.kind == "f"), default=None)
    try:
        et = run_executorch(directory, meta)
    except Exception as e:
        text = str(e).strip().splitlines()
        row["status"] = f"ExecuTorch failed: {type(e).__name__}: {text[0][:150] if text else ''}"
        return row
    err, ratio, why = differ(flow, et, ref, scales, against_eager=True)
    row["et_vs_eager"], row["et_vs_eager_ratio"] = err, ratio
    problems, drift = [], []
    if why or (ratio > 1 and (flow not in DRIFT_FLOWS or
                              err > QUANT_SANITY_REL * (row["ref_max"] or 0))):
        problems.append(f"ExecuTorch vs eager {why or f'{err:.3g} ({ratio:.2g}x the bound)'}")
    elif ratio > 1:
        drift.append(f"ExecuTorch vs eager {ratio:.2g}x the bound")
    ember, message = run_ember(runner, directory, meta)
    if ember is None:
        row["status"] = "; ".join(problems + [f"Ember refused: {message}"])
        if drift and not problems:
            row["status"] += f" (drift: {drift[0]})"
        row["ember_refused"] = True
        return row
    c = against_executorch(flow, ember, et, ref, scales)
    row["ember_vs_eager"], row["ember_vs_eager_ratio"] = c["eager_err"], c["eager_ratio"]
    row["ember_vs_et"], row["ember_vs_et_ratio"] = c["err"], c["ratio"]
    if c["problem"]:
        problems.append(f"Ember vs ExecuTorch {c['problem']}")
    elif c["ratio"] > 1:
        drift.append(f"Ember vs ExecuTorch {c['ratio']:.2g}x the bound; Ember "
                     f"{c['eager_err']:.3g} from eager, ExecuTorch {c['et_err']:.3g}")
    row["status"] = "mismatch: " + "; ".join(problems) if problems else "ok"
    if not problems and drift:
        row["status"] = f"ok (drift: {'; '.join(drift)})"
    if not problems and not meta["delegates"]:
        row["status"] = "ok (XNNPACK took nothing: a portable program)"
    return row


# --- Node census ----------------------------------------------------------------------------------
def parse_payload(blob, schema=None):
    """The XNNGraph of one XNNPACK delegate payload, as flatc's JSON: a 30-byte XH00 header
    (magic at 4..8, uint32 flatbuffer offset at 10 and size at 14), then the flatbuffer."""
    if schema is None:
        import executorch.backends.xnnpack.serialization as serialization
        schema = os.path.join(list(serialization.__path__)[0], "schema.fbs")
    if blob[4:8] != b"XH00":
        raise ValueError(f"not an XNNPACK payload (magic {blob[4:8]!r})")
    offset = int.from_bytes(blob[10:14], "little")
    size = int.from_bytes(blob[14:18], "little")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.bin")
        with open(path, "wb") as f:
            f.write(blob[offset:offset + size])
        subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "--defaults-json",
                        "-o", tmp, schema, "--", path], check=True, capture_output=True)
        with open(os.path.join(tmp, "graph.json")) as f:
            text = f.read()
    # flatc writes non-finite floats (a clamp's output_max) as bare inf / nan.
    return json.loads(re.sub(r"(?<=[\s:\[,])(-?)(inf|nan)\b",
                             lambda m: m.group(1) + ("Infinity" if m.group(2) == "inf" else "NaN"),
                             text))


def _value_desc(value):
    """(datatype without the xnn_datatype_ prefix, quant param kind or None, flags)."""
    kind = value["xvalue_union_type"]
    v = value["xvalue_union"]
    tensor = v["tensor_value"] if kind == "XNNQuantizedTensorValue" else v
    quant = v.get("quant_params_type") if kind == "XNNQuantizedTensorValue" else None
    dtype = str(tensor.get("datatype", "xnn_datatype_invalid")).replace("xnn_datatype_", "")
    return dtype, quant, tensor.get("flags", 0), tensor.get("constant_buffer_idx", 0) != 0


def census_of(directory):
    """What the delegate payloads in `directory` use: node types with the datatypes of their
    operands (field name: datatype[/quant kind][ const]), value datatypes, quant param kinds
    (with their group sizes and channel dims), flags seen on nodes and values, output_min_max."""
    c = {"nodes": {}, "signatures": {}, "datatypes": {}, "quant": {}, "scale_storage": {},
         "node_flags": {},
         "value_flags": {}, "output_min_max": {}, "constants": {"named": 0, "offset": 0}}
    i = 0
    while os.path.exists(os.path.join(directory, f"delegate_{i}.bin")):
        with open(os.path.join(directory, f"delegate_{i}.bin"), "rb") as f:
            graph = parse_payload(f.read())
        i += 1
        values = [_value_desc(v) for v in graph.get("xvalues", [])]
        for dtype, quant, flags, _ in values:
            c["datatypes"][dtype] = c["datatypes"].get(dtype, 0) + 1
            if flags:
                c["value_flags"].setdefault(str(flags), 0)
                c["value_flags"][str(flags)] += 1
        for v in graph.get("xvalues", []):
            if v["xvalue_union_type"] == "XNNQuantizedTensorValue":
                q = v["xvalue_union"]
                kind = q.get("quant_params_type")
                p = q.get("quant_params", {})
                extra = ""
                if kind == "PerChannelGroupQuant":
                    extra = f" group_size={p.get('group_size')} channel_dim={p.get('channel_dim')}"
                elif kind == "PerChannelQuant":
                    extra = f" channel_dim={p.get('channel_dim')}"
                elif kind == "PerTokenDynamicQuant":
                    extra = f" num_nonbatch_dims={p.get('num_nonbatch_dims')}"
                elif kind == "PerTensorQuant" and p.get("zero_point", 0) != 0:
                    extra = " zero_point!=0"
                key = f"{kind}{extra} ({_value_desc(v)[0]})"
                c["quant"][key] = c["quant"].get(key, 0) + 1
                # Where the scales are: inline (scale:[float]) or in constant data
                # (scale_buffer_idx, num_scales), whose bytes per scale say fp32 (4) or bf16 (2).
                idx, n = p.get("scale_buffer_idx", 0), p.get("num_scales", 0)
                data = graph.get("constant_data", [])
                if idx and n and idx < len(data):
                    where = f"constant data, {int(data[idx].get('size', 0)) / n:g} bytes/scale"
                elif isinstance(p.get("scale"), list) and p["scale"]:
                    where = "inline scale:[float]"
                else:
                    where = "inline scale" if kind == "PerTensorQuant" else "none"
                tensor = q["tensor_value"]
                elements = 1
                for d in tensor.get("dims", []):
                    elements *= d
                cidx = tensor.get("constant_buffer_idx", 0)
                if cidx and cidx < len(data) and elements:
                    where += f"; values {int(data[cidx].get('size', 0)) / elements:g} bytes/element"
                key = f"{kind} ({_value_desc(v)[0]}): {where}"
                c["scale_storage"][key] = c["scale_storage"].get(key, 0) + 1
        for node in graph.get("xnodes", []):
            kind = node["xnode_union_type"]
            body = node["xnode_union"]
            c["nodes"][kind] = c["nodes"].get(kind, 0) + 1
            operands = []
            for field in sorted(body):
                if field.endswith("_id") and isinstance(body[field], int) and \
                        body[field] < len(values):
                    dtype, quant, _, const = values[body[field]]
                    operands.append(f"{field[:-3]}:{dtype}{'/' + quant if quant else ''}"
                                    f"{' const' if const else ''}")
                elif field.endswith("_ids") and isinstance(body[field], list):
                    ds = {values[k][0] for k in body[field] if k < len(values)}
                    operands.append(f"{field[:-4]}[]:{'|'.join(sorted(ds))}")
            sig = f"{kind}({', '.join(operands)})"
            c["signatures"][sig] = c["signatures"].get(sig, 0) + 1
            flags = body.get("flags", 0)
            if flags:
                c["node_flags"].setdefault(kind, [])
                if flags not in c["node_flags"][kind]:
                    c["node_flags"][kind].append(flags)
            mm = node.get("output_min_max")
            if mm:
                k = f"{kind} [{mm.get('output_min')}, {mm.get('output_max')}]"
                c["output_min_max"][k] = c["output_min_max"].get(k, 0) + 1
        for cd in graph.get("constant_data", [])[1:]:
            c["constants"]["named" if cd.get("named_key") else "offset"] += 1
    c["payloads"] = i
    return c


def merge_census(rows):
    """Per flow: the census of its rows merged (counts added, flags united)."""
    by_flow = {}
    for row in rows:
        c = row.get("census")
        if not c or not c.get("payloads"):
            continue
        m = by_flow.setdefault(row["flow"], {"models": []})
        m["models"].append(row["model"])
        for field, value in c.items():
            if isinstance(value, dict):
                target = m.setdefault(field, {})
                for k, v in value.items():
                    if isinstance(v, list):
                        target[k] = sorted(set(target.get(k, [])) | set(v))
                    else:
                        target[k] = target.get(k, 0) + v
            elif isinstance(value, int):
                m[field] = m.get(field, 0) + value
    return by_flow


def census_markdown(rows):
    by_flow = merge_census(rows)
    out = ["# XNNPACK payload census", "",
           "What ExecuTorch 1.5.1's XNNPACK delegate writes, per exporter flow "
           "(tests/e2e/xnnpack_programs.py --node-census), over the models listed. Counts are "
           "totals over all payloads. A signature is a node type with each operand's field, "
           "datatype, quant params kind, and 'const' for a value with constant data.", ""]
    for flow in FLOWS:
        if flow not in by_flow:
            continue
        m = by_flow[flow]
        out += [f"## {flow}", "", f"Models ({len(m['models'])}): {', '.join(m['models'])}; "
                f"payloads: {m.get('payloads', 0)}; constants: {m.get('constants', {})}", ""]
        out += ["Node types: " + ", ".join(f"{k} {v}" for k, v in
                                           sorted(m.get("nodes", {}).items())), ""]
        out += ["Value datatypes: " + ", ".join(f"{k} {v}" for k, v in
                                                sorted(m.get("datatypes", {}).items())), ""]
        out += ["Quant params: " + (", ".join(f"{k} {v}" for k, v in
                                              sorted(m.get("quant", {}).items())) or "none"), ""]
        if m.get("scale_storage"):
            out += ["Quant storage (scales, and constant values' bytes per element):", ""]
            out += [f"- {k} x{v}" for k, v in sorted(m["scale_storage"].items())] + [""]
        out += ["Node flags (non-zero): " + (", ".join(
            f"{k} {v}" for k, v in sorted(m.get("node_flags", {}).items())) or "none"),
            "", "Value flags (non-zero: count): " + (", ".join(
                f"{k}: {v}" for k, v in sorted(m.get("value_flags", {}).items())) or "none"),
            "", "output_min_max: " + (", ".join(f"{k} x{v}" for k, v in
                                                sorted(m.get("output_min_max", {}).items()))
                                      or "none"), "", "Signatures:", ""]
        out += [f"- {k} x{v}" for k, v in sorted(m.get("signatures", {}).items())]
        out.append("")
    per = ["## Per (model, flow)", "", "| model | flow | payloads | node types |",
           "|---|---|---|---|"]
    for row in rows:
        c = row.get("census")
        if c and c.get("payloads"):
            per.append(f"| {row['model']} | {row['flow']} | {c.get('payloads', 0)} | " +
                       ", ".join(f"{k} {v}" for k, v in sorted(c["nodes"].items())) + " |")
    return "\n".join(out + per) + "\n"


# --- Report ---------------------------------------------------------------------------------------
def _num(row, key):
    v = row.get(key)
    if v is None:
        return ""
    ratio = row.get(key + "_ratio")
    return f"{v:.3g}" + ("" if ratio is None else f" ({ratio:.2g}x)")


def markdown(rows):
    lines = ["Largest |difference| per comparison, and in parentheses its ratio to the bound "
             "(tests/e2e/xnnpack_programs.py's bound(): above 1 is a mismatch).", "",
             "| model | flow | status | max abs output | ExecuTorch vs eager | Ember vs ExecuTorch "
             "| Ember vs eager | delegates | ops outside XNNPACK |", "|" + "---|" * 9]
    for r in rows:
        status = r["status"].replace("|", "/")
        lines.append(f"| {r['model']} | {r['flow']} | {status} | {_num(r, 'ref_max')} | "
                     f"{_num(r, 'et_vs_eager')} | "
                     f"{_num(r, 'ember_vs_et')} | {_num(r, 'ember_vs_eager')} | "
                     f"{r.get('delegates', '')} | {', '.join(r.get('portable_ops', []))} |")
    return "\n".join(lines) + "\n"


def print_row(r):
    print(f"{r['model']:20s} {r['flow']:12s} et-vs-eager {_num(r, 'et_vs_eager') or '-':>16s} "
          f"ember-vs-et {_num(r, 'ember_vs_et') or '-':>16s}  {r['status']}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--flows", default=",".join(FLOWS))
    p.add_argument("--runner", default=DEFAULT_RUNNER)
    p.add_argument("--work", default=DEFAULT_WORK)
    p.add_argument("--markdown")
    p.add_argument("--node-census")
    p.add_argument("--json")
    p.add_argument("--list", action="store_true")
    args = p.parse_args()
    if args.list:
        print("\n".join(MODELS))
        return 0
    models = list(MODELS) if args.models == "all" else args.models.split(",")
    flows = args.flows.split(",")
    for m in models:
        if m not in MODELS:
            p.error(f"unknown model {m} (--list)")
    for f in flows:
        if f not in FLOWS:
            p.error(f"unknown flow {f}: {', '.join(FLOWS)}")
    key = export_key()
    rows = []
    for m in models:
        for f in flows:
            rows.append(check_row(m, f, args.work, args.runner, key))
            print_row(rows[-1])
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(rows))
    if args.node_census:
        with open(args.node_census, "w") as f:
            f.write(census_markdown(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if r["status"].startswith(("mismatch", "ExecuTorch failed"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
