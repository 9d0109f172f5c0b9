#!/usr/bin/env python3
"""Runtime overhead against a baseline build: runs two builds of
bench/runtime_bench.cc (ember_runtime_bench) in alternating rounds, so that both see the same
machine, and prints per benchmark the 10th percentile and the median over every repetition of
every round, with the ratio of this build to the baseline.

    python3 bench/runtime_overhead.py --ember build/release/bench/ember_runtime_bench \\
        --baseline /path/to/old/build/bench/ember_runtime_bench [--rounds 8] [--repetitions 10]

The baseline is any other build of the same benchmark, e.g. an older commit:
    git archive 527a98c | tar -x -C ../base && cmake -S ../base -B ../base/build -G Ninja \\
        -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_TOOLS=OFF && cmake --build ../base/build \\
        --target ember_runtime_bench
(keep it beside this checkout: the benchmark reads ../shared/fixtures/executorch/add.pte).
"""
import argparse
import json
import statistics
import subprocess


def run_once(binary, repetitions, min_time):
    out = subprocess.run([binary, f"--benchmark_repetitions={repetitions}",
                          f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True)
    times = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("run_type") == "iteration":
            times.setdefault(b["run_name"], []).append(b["real_time"])
    return times


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ember", required=True, help="this build's ember_runtime_bench")
    ap.add_argument("--baseline", required=True, help="the baseline's ember_runtime_bench")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repetitions", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per repetition")
    args = ap.parse_args()
    samples = {"baseline": {}, "ember": {}}
    for _ in range(args.rounds):
        for name, binary in (("baseline", args.baseline), ("ember", args.ember)):
            for bench, t in run_once(binary, args.repetitions, args.min_time).items():
                samples[name].setdefault(bench, []).extend(t)
    print(f"ns per call, {args.rounds} alternating rounds x {args.repetitions} repetitions of "
          f"{args.min_time} s each")
    print("| benchmark | baseline p10 | baseline median | this p10 | this median | ratio p10 | "
          "ratio median |")
    print("|---|---|---|---|---|---|---|")
    for bench in samples["ember"]:
        base, ours = samples["baseline"].get(bench), samples["ember"][bench]
        if not base:
            continue
        b10, b50 = percentile(base, 0.1), statistics.median(base)
        o10, o50 = percentile(ours, 0.1), statistics.median(ours)
        print(f"| {bench} | {b10:.0f} | {b50:.0f} | {o10:.0f} | {o50:.0f} | {o10 / b10:.2f}x | "
              f"{o50 / b50:.2f}x |")


if __name__ == "__main__":
    main()
