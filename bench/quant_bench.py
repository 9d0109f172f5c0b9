"""int8 CNNs: accuracy against PyTorch's quantized reference and latency against the peers' int8.

    .venv/bin/python bench/quant_bench.py [--models resnet18,mobilenet_v2] [--threads 1,2]
                                          [--eval 200] [--calibration 32] [--rounds 5]
                                          [--reduce-range] [--isa avx2|avx2-ember]
                                          [--weights random|trained] [--dynamic]

For each model (bench/models.py, batch 1: resnet18, mobilenet_v2, bert_encoder):
- Ember int8: PT2E with ember.quantizer.EmberQuantizer (int8 activations per tensor, int8
  weights per channel), calibrated on --calibration random inputs, converted, exported and
  compiled with the cpu backend. Its reference is the converted module run in eager PyTorch (the
  "PyTorch quantized reference"): the table gives the share of --eval other random inputs on which
  the top-1 class is the same, and the largest logit difference in output quantization steps.
- ONNX Runtime int8: onnxruntime.quantization.quantize_static on the fp32 ONNX model (QDQ,
  per-channel int8 weights, uint8 activations: ORT's advice for x86), the same calibration inputs.
- ExecuTorch+XNNPACK int8: PT2E with ExecuTorch's XNNPACKQuantizer (per channel), lowered with the
  XnnpackPartitioner.
- Ember fp32 (cpu backend) and PyTorch's quantized reference in eager, for scale.
Each system's top-1 agreement with the fp32 model is given too. The BERT encoder's output is
hidden states, not logits: its accuracy is the largest difference and the relative L2 difference
to the reference (--weights random only). Latency: medians of --rounds
interleaved rounds of 10 runs. Every system runs in this process, one after another.

--weights: random (default; the inputs Gaussian noise) or trained. Random weights leave many
logits near ties, so top-1 agreement mostly counts near ties (Ember's portable program, bit for
bit PyTorch's per op, agrees on about 91% of MobileNetV2's); `trained` takes the models trained on
bench/synthetic_task.py's 10-class image task (a few minutes the first time, then cached in
out/quant_bench/), with calibration and evaluation images from that task.

--dynamic measures dynamic quantization instead (transformers' usual flow: only linear layers
quantized, each input's scale computed from its values when the model runs, no calibration):
Ember and ExecuTorch+XNNPACK both run the program of ExecuTorch's XNNPACKQuantizer with
get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True), which is also the
reference; ONNX Runtime runs onnxruntime.quantization.quantize_dynamic (per-channel int8
weights). Its outputs are float: accuracy is the largest and relative L2 differences.

--reduce-range quantizes Ember's weights to 7 bits (int8_config(reduce_range=True)), which the
cpu backend computes in integers without VNNI too; --isa avx2 runs every system on its AVX2 path
whatever the CPU: Ember and oneDNN through EMBER_CPU_ISA=avx2 and ONEDNN_MAX_CPU_ISA=AVX2, the
peers through bench/cpuid_avx2.cc, which hides AVX-512 and VNNI from CPUID (run_bench.avx2_env).
Where the shim cannot work (a CPU or hypervisor without CPUID faulting), --isa avx2-ember holds
Ember and oneDNN to AVX2 and leaves the peers on the CPU's own instruction set: Ember's AVX2 int8
/ fp32 ratio, with the peers for scale only.
"""

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import ember  # noqa: E402
import models  # noqa: E402
import synthetic_task  # noqa: E402
from ember.quantizer import EmberQuantizer, int8_config  # noqa: E402
from ember.runtime import Program  # noqa: E402
from run_bench import ISA_PATHS, enter_isa_path, export_onnx  # noqa: E402


def pt2e(module, example, calibration, quantizer):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    graph = torch.export.export(copy.deepcopy(module), (example,)).module()
    prepared = prepare_pt2e(graph, quantizer)
    with torch.no_grad():
        for x in calibration:
            prepared(x)
    return convert_pt2e(prepared)


def compile_ember(ember_bin, module, example, path, backend="cpu"):
    ep = path + ".ep"
    ember.export(module, (example,), ep)
    cmd = [ember_bin, "compile", ep, "-o", path + ".pte", "--ptd", path + ".ptd", "--quiet"]
    if backend:
        cmd += ["--backend", backend]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return path + ".pte", path + ".ptd"


def ort_int8(module, example, calibration, path, name):
    import onnxruntime
    onnxruntime.set_default_logger_severity(3)  # its optimizer's notes on unused initializers
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    fp32 = path + "_fp32.onnx"
    export_onnx(copy.deepcopy(module), (example,), [name], fp32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{name: x.numpy()} for x in calibration])

        def get_next(self):
            return next(self.items, None)

    out = path + "_int8.onnx"
    quantize_static(fp32, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out


def ort_dynamic(module, example, path, name):
    import onnxruntime
    onnxruntime.set_default_logger_severity(3)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    fp32 = path + "_fp32.onnx"
    export_onnx(copy.deepcopy(module), (example,), [name], fp32)
    out = path + "_int8_dynamic.onnx"
    quantize_dynamic(fp32, out, per_channel=True, weight_type=QuantType.QInt8)
    return out


def xnnpack_quantizer(dynamic):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    return XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic))


def executorch_int8(module, example, calibration, path, converted=None):
    """ExecuTorch+XNNPACK's program: `converted` lowered, or PT2E with its static quantizer."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    if converted is None:
        converted = pt2e(module, example, calibration, xnnpack_quantizer(dynamic=False))
    ep = torch.export.export(converted, (example,))
    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    with open(path + "_xnnpack_int8.pte", "wb") as f:
        f.write(program.buffer)
    return path + "_xnnpack_int8.pte"


def draw_inputs(args, example, n, seed):
    """n inputs like example: Gaussian noise for random weights, held-out images of the task
    for trained ones (synthetic_task.py)."""
    gen = torch.Generator().manual_seed(seed)
    if args.weights == "trained":
        return list(synthetic_task.sample(n, gen)[0].split(1))
    return [torch.randn(example.shape, generator=gen) for _ in range(n)]


def systems_for(args, name, module, example, work):
    """({system: (kind, what make_runner needs)}, the converted module)."""
    calibration = draw_inputs(args, example, args.calibration, 1234)
    path = os.path.join(work, name)
    out = {}
    if args.dynamic:  # one program for Ember and ExecuTorch; no calibration needed
        converted = pt2e(module, example, calibration[:1], xnnpack_quantizer(dynamic=True))
    else:
        config = int8_config(reduce_range=args.reduce_range)
        converted = pt2e(module, example, calibration, EmberQuantizer().set_global(config))
    out["PyTorch quantized reference"] = (lambda x, m=converted: m(x), None)
    pte, ptd = compile_ember(args.ember, converted, example, path + "_int8")
    out["Ember cpu int8"] = ("ember", (pte, ptd))
    pte, ptd = compile_ember(args.ember, converted, example, path + "_int8_portable", backend=None)
    out["Ember portable int8"] = ("ember", (pte, ptd))  # accuracy only: the reference kernels
    pte, ptd = compile_ember(args.ember, module, example, path + "_fp32")
    out["Ember cpu fp32"] = ("ember", (pte, ptd))
    try:
        out["ONNX Runtime int8"] = ("ort", ort_dynamic(module, example, path, "x") if args.dynamic
                                    else ort_int8(module, example, calibration, path, "x"))
    except Exception as e:  # reported, the rest goes on
        print(f"{name}: ONNX Runtime int8: {type(e).__name__}: {e}"[:300], file=sys.stderr)
    try:
        out["ExecuTorch XNNPACK int8"] = ("et", executorch_int8(
            module, example, calibration, path, converted if args.dynamic else None))
    except Exception as e:
        print(f"{name}: ExecuTorch int8: {type(e).__name__}: {e}"[:300], file=sys.stderr)
    return out, converted


def output_step(converted):
    """The scale of the last dequantize before the output: one step of the quantized logits."""
    out = next(n for n in converted.graph.nodes if n.op == "output")
    node = out.args[0][0]
    return float(node.args[1]) if "dequantize" in str(node.target) else 0.0


def make_runner(kind, what, threads):
    if kind == "ember":
        pte, ptd = what
        method = Program.load(pte, ptd if os.path.exists(ptd) else None,
                              num_threads=threads).method("forward")
        return lambda x: method(x)[0]
    if kind == "ort":
        import onnxruntime as ort
        from ort_worker import session_options
        session = ort.InferenceSession(what, session_options(threads),
                                       providers=["CPUExecutionProvider"])
        return lambda x: torch.from_numpy(session.run(None, {"x": x.numpy()})[0])
    if kind == "et":
        from executorch.extension.pybindings import portable_lib
        from executorch.runtime import Runtime
        portable_lib._unsafe_reset_threadpool(threads)
        method = Runtime.get().load_program(what).load_method("forward")
        return lambda x: method.execute([x])[0]
    fn = kind
    torch.set_num_threads(threads)
    return fn


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--eval", type=int, default=200)
    p.add_argument("--calibration", type=int, default=32)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--ember", default=os.path.join(ROOT, "build", "release", "tools", "ember"))
    p.add_argument("--reduce-range", action="store_true")
    p.add_argument("--isa", choices=list(ISA_PATHS), default="native",
                   help="; ".join(f"{k}: {v}" for k, v in ISA_PATHS.items()))
    p.add_argument("--weights", choices=["random", "trained"], default="random",
                   help="trained: the models trained on bench/synthetic_task.py's task (cached "
                        "in out/quant_bench), calibrated and evaluated on its images")
    p.add_argument("--dynamic", action="store_true",
                   help="dynamic quantization (XNNPACKQuantizer's is_dynamic config; ONNX "
                        "Runtime's quantize_dynamic) instead of static")
    args = p.parse_args()
    if args.dynamic and args.reduce_range:
        p.error("--reduce-range quantizes Ember's static program; --dynamic measures "
                "XNNPACKQuantizer's dynamic one")
    isa_path = enter_isa_path(p, args.isa)  # before Ember, oneDNN and the peers start
    for name in args.models.split(","):
        if name not in models.ALL or name.startswith("llama"):
            p.error(f"--models: {name} is not one of resnet18, mobilenet_v2, bert_encoder "
                    "(the Llama decoder's quantization is bench/llm_quant_bench.py's)")
        if args.weights == "trained" and name not in synthetic_task.MODELS:
            p.error(f"--weights trained: {name} is not trained on the synthetic image task; "
                    f"use --weights random")
    threads_list = [int(t) for t in args.threads.split(",")]
    work = tempfile.mkdtemp(prefix="ember_quant_bench_")
    accuracy_rows, latency_rows = [], []
    for name in args.models.split(","):
        case = models.build([name])[name]
        example = case.inputs[0]
        module = (synthetic_task.trained(name, os.path.join(ROOT, "out", "quant_bench"))
                  if args.weights == "trained" else case.module)
        systems, converted = systems_for(args, name, module, example, work)
        inputs = draw_inputs(args, example, args.eval, 99)
        # A classifier's logits: top-1 agreement; other outputs (the BERT encoder's hidden
        # states) by their differences alone.
        with torch.no_grad():
            classifier = module(example).dim() == 2
            fp32_top1 = [int(module(x).argmax()) for x in inputs] if classifier else []
        runners = {}
        for system, (kind, what) in systems.items():
            runners[system] = make_runner(kind, what, threads_list[0])
        with torch.no_grad():
            reference = [runners["PyTorch quantized reference"](x) for x in inputs]
        # Random weights give logits close together: a difference of one output step flips the
        # top-1 of such inputs. Inputs whose reference top-1 leads by more than two steps of the
        # output's quantization are counted apart.
        step = output_step(converted)
        clear = [bool((r.topk(2).values[0, 0] - r.topk(2).values[0, 1]) > 2 * step)
                 for r in reference] if classifier else []
        # The float model too: how far quantization itself moves the outputs, for scale.
        for system, run in {**runners, "PyTorch fp32 model": module}.items():
            with torch.no_grad():
                got = [run(x) for x in inputs]
            diff = max(float((g.float() - r).abs().max()) for g, r in zip(got, reference))
            # A float output (the encoder's, after a layer norm) has no quantization step.
            steps = diff / step if step else None
            relative = max(float((g.float() - r).norm() / r.norm()) for g, r in zip(got, reference))
            if not classifier:
                accuracy_rows.append((name, system, None, None, 0, None, steps, relative))
                continue
            top1 = [int(g.argmax()) for g in got]
            same = [a == int(r.argmax()) for a, r in zip(top1, reference)]
            vs_ref = np.mean(same)
            vs_ref_clear = np.mean([s for s, c in zip(same, clear) if c]) if any(clear) else 1.0
            vs_fp32 = np.mean([a == b for a, b in zip(top1, fp32_top1)])
            accuracy_rows.append((name, system, vs_ref, vs_ref_clear, sum(clear), vs_fp32,
                                  steps, relative))
        for threads in threads_list:
            runners = {s: make_runner(k, w, threads) for s, (k, w) in systems.items()
                       if s != "Ember portable int8"}
            times = {s: [] for s in runners}
            x = inputs[0]
            with torch.no_grad():
                for run in runners.values():
                    for _ in range(3):
                        run(x)  # warm up
                for _ in range(args.rounds):
                    for s, run in runners.items():
                        t0 = time.perf_counter()
                        for _ in range(10):
                            run(x)
                        times[s].append((time.perf_counter() - t0) * 100.0)  # ms per run
            base = statistics.median(times["Ember cpu fp32"])
            for s, ts in times.items():
                latency_rows.append((name, threads, s, statistics.median(ts),
                                     statistics.median(ts) / base))
    print(f"\nquantization: {'dynamic' if args.dynamic else 'static'}; ISA path {args.isa}: "
          f"{isa_path}")
    print("\n| model | system | top-1 = quantized reference | where its lead > 2 steps (inputs) | "
          "top-1 = fp32 model | largest output difference to the reference, in output steps | "
          "relative L2 difference to the reference |")
    print("|---|---|---|---|---|---|---|")
    for name, system, vs_ref, vs_clear, n_clear, vs_fp32, steps, relative in accuracy_rows:
        top1 = (f"{vs_ref:.1%} | {vs_clear:.1%} ({n_clear}) | {vs_fp32:.1%}" if vs_ref is not None
                else "– | – | –")
        steps = "–" if steps is None else f"{steps:.3g}"
        print(f"| {name} | {system} | {top1} | {steps} | {relative:.2g} |")
    print("\n| model | threads | system | median ms | / Ember cpu fp32 |")
    print("|---|---|---|---|---|")
    for name, threads, system, ms, ratio in latency_rows:
        print(f"| {name} | {threads} | {system} | {ms:.2f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
