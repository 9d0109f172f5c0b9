"""The Llama decoder quantized with torchao (8da4w): accuracy against torchao's eager model and
decode latency against Ember fp32 and ExecuTorch+XNNPACK.

    .venv/bin/python bench/llm_quant_bench.py [--threads 1,2] [--rounds 5] [--group 32]
                                              [--config 8da4w|8da8w|int4_weight_only|...]
                                              [--isa avx2|avx2-ember] [--step decode|prefill]

The model is bench/models.py's llama_decode (dim 512, 8 heads, 4 layers, FFN 1536, vocab 32000),
one decode step (one token) after a prefill, every system starting from the same KV cache; with
--step prefill, llama_prefill (a 128-token prefill).
--config (default 8da4w: int8 dynamic per-token activations, int4 weights in groups of --group,
symmetric) is applied with torchao's quantize_ to every Linear, the output head included:
- "torchao eager": the quantized module in PyTorch, the reference.
- "Ember cpu <config>": ember.export + `ember compile --backend cpu`.
- "ExecuTorch XNNPACK <config>": torch.export + to_edge_transform_and_lower(XnnpackPartitioner).
- "Ember cpu fp32" and "ExecuTorch XNNPACK fp32": the unquantized module, for the speed-up.
Accuracy: the largest logit difference to the reference over the largest reference logit, and
whether the top-1 token agrees. Latency: medians of --rounds interleaved rounds of 20 runs.
--isa avx2 runs every system on its AVX2 path whatever the CPU (run_bench.enter_avx2_path).
--isa avx2-ember holds only Ember and oneDNN to AVX2, where the CPUID shim cannot work.
"""

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import ember  # noqa: E402
import models  # noqa: E402
from ember.runtime import Program  # noqa: E402
from run_bench import ISA_PATHS, enter_isa_path, export_executorch  # noqa: E402


def torchao_config(name, group):
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, IntxWeightOnlyConfig
    from torchao.quantization.granularity import PerAxis, PerGroup
    return {
        "8da4w": lambda: Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(group)),
        "8da8w": lambda: Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int8, weight_granularity=PerAxis(0)),
        "int4_weight_only": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                         granularity=PerGroup(group)),
        "int8_weight_only": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8,
                                                         granularity=PerAxis(0)),
    }[name]()


def compile_ember(ember_bin, module, inputs, path):
    ember.export(module, inputs, path + ".ep")
    cmd = [ember_bin, "compile", path + ".ep", "-o", path + ".pte", "--ptd", path + ".ptd",
           "--backend", "cpu"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-500:])
    return path + ".pte", path + ".ptd", r.stdout


def runner(kind, what, inputs, threads):
    if kind == "ember":
        pte, ptd = what
        method = Program.load(pte, ptd if os.path.exists(ptd) else None,
                              num_threads=threads).method("forward")
        return lambda: method(*inputs)[0]
    if kind == "et":
        from executorch.extension.pybindings import portable_lib
        from executorch.runtime import Runtime
        portable_lib._unsafe_reset_threadpool(threads)
        method = Runtime.get().load_program(what).load_method("forward")
        return lambda: method.execute(list(inputs))[0]
    torch.set_num_threads(threads)
    return lambda: what(*inputs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--group", type=int, default=32)
    p.add_argument("--config", default="8da4w")
    p.add_argument("--ember", default=os.path.join(ROOT, "build", "release", "tools", "ember"))
    p.add_argument("--isa", choices=list(ISA_PATHS), default="native",
                   help="; ".join(f"{k}: {v}" for k, v in ISA_PATHS.items()))
    p.add_argument("--step", choices=["decode", "prefill"], default="decode")
    args = p.parse_args()
    isa_path = enter_isa_path(p, args.isa)  # before Ember, oneDNN and the peers start
    name = "llama_" + args.step
    case = models.build([name])[name]
    fp32, inputs = case.module, case.inputs
    from torchao.quantization import quantize_
    quantized = copy.deepcopy(fp32)
    quantize_(quantized, torchao_config(args.config, args.group))
    work = tempfile.mkdtemp(prefix="ember_llm_quant_")
    systems = {}
    with torch.no_grad():
        reference = quantized(*inputs)
        systems["torchao eager"] = ("torch", quantized)
        for label, module in ((args.config, quantized), ("fp32", fp32)):
            pte, ptd, log = compile_ember(args.ember, copy.deepcopy(module), inputs,
                                          os.path.join(work, label))
            systems[f"Ember cpu {label}"] = ("ember", (pte, ptd))
            print(f"Ember cpu {label}: " + " ".join(log.split("\n")[:1]), file=sys.stderr)
            try:
                et = os.path.join(work, label + "_xnnpack.pte")
                export_executorch(copy.deepcopy(module), inputs, et)
                systems[f"ExecuTorch XNNPACK {label}"] = ("et", et)
            except Exception as e:  # reported, the rest goes on
                print(f"ExecuTorch XNNPACK {label}: {type(e).__name__}: {e}"[:300], file=sys.stderr)
    scale = reference.abs().max().item()
    print(f"\nLlama {args.step} step, {args.config} (group {args.group}), ISA path {args.isa} "
          f"({isa_path}); "
          f"work dir {work}\n")
    print("| system | largest logit difference / largest logit | top-1 = reference |")
    print("|---|---|---|")
    for name, (kind, what) in systems.items():
        with torch.no_grad():
            y = runner(kind, what, inputs, 1)()
        diff = (y.float() - reference).abs().max().item() / scale
        same = y.reshape(-1, y.shape[-1]).argmax(-1).equal(reference.reshape(-1, y.shape[-1])
                                                           .argmax(-1))
        print(f"| {name} | {diff:.2e} | {'yes' if same else 'no'} |")
    print("\n| threads | system | median ms | / Ember cpu fp32 |")
    print("|---|---|---|---|")
    for threads in [int(t) for t in args.threads.split(",")]:
        runs = {name: runner(kind, what, inputs, threads) for name, (kind, what) in
                systems.items()}
        times = {name: [] for name in runs}
        with torch.no_grad():
            for fn in runs.values():
                for _ in range(3):
                    fn()  # warm-up
            for _ in range(args.rounds):
                for name, fn in runs.items():
                    start = time.perf_counter()
                    for _ in range(20):
                        fn()
                    times[name].append((time.perf_counter() - start) / 20 * 1e3)
        base = statistics.median(times["Ember cpu fp32"])
        for name, t in times.items():
            m = statistics.median(t)
            print(f"| {threads} | {name} | {m:.3f} | {m / base:.2f}x |")


if __name__ == "__main__":
    main()
