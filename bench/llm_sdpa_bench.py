"""Ember's llama::custom_sdpa (runtime/kernels/llm) against ExecuTorch's own kernel
(torch.ops.llama.custom_sdpa from its AOT library), one call each, interleaved.

    .venv/bin/python bench/llm_sdpa_bench.py [--rounds 30]

Cases: decode (one query row) over short and long caches, grouped-query (32 query heads over 8
key/value heads) and not, and a 64-token prefill; head_dim 128, fp32, is_causal. Both sides use
their process-wide thread pools at their defaults (one thread per core, up to 8 for Ember). Prints
the minimum over the rounds (Python's call overhead included on both sides, a few microseconds).
Needs ember.runtime (scripts/build release) and pip's executorch.
"""

import argparse
import time

import torch
from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401 (torch.ops.llama)

from ember.runtime import call_kernel

CASES = [  # (query rows, start_pos, cache length, query heads, key/value heads)
    (1, 500, 2048, 32, 8),
    (1, 2000, 2048, 32, 8),
    (1, 2000, 2048, 32, 32),
    (64, 0, 2048, 32, 8),
    (64, 1000, 2048, 32, 8),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=30)
    args = p.parse_args()
    torch.manual_seed(0)
    print(f"{'case':44} {'ExecuTorch ms':>14} {'Ember ms':>10} {'max |diff|':>11}")
    for s, start, cache, hq, hkv in CASES:
        q = torch.randn(1, s, hq, 128)
        k, v = torch.randn(1, cache, hkv, 128), torch.randn(1, cache, hkv, 128)
        out = torch.empty_like(q)

        def executorch_call():
            return torch.ops.llama.custom_sdpa(q, k, v, start, None, 0.0, True, None)

        def ember_call():
            call_kernel("llama::custom_sdpa.out", q, k, v, start, None, 0.0, True, None, out, out)

        times = {"et": [], "ember": []}
        for _ in range(args.rounds):
            for name, f in (("et", executorch_call), ("ember", ember_call)):
                t = time.perf_counter()
                f()
                times[name].append(time.perf_counter() - t)
        diff = (out - executorch_call()).abs().max().item()
        case = f"S={s} start_pos={start} cache={cache} Hq={hq} Hkv={hkv}"
        print(f"{case:44} {min(times['et']) * 1e3:14.3f} {min(times['ember']) * 1e3:10.3f} "
              f"{diff:11.2g}")


if __name__ == "__main__":
    main()
