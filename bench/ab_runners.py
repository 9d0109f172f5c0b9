"""Interleaved A/B timing of two or more builds of ember_bench_runner on one program: a kernel
change measured against the build before it, on the same machine at the same time (this
machine's speed drifts by 10-30 % between runs minutes apart; interleaving cancels the drift).

    cp build/release/bench/ember_bench_runner /tmp/runner_before     # then rebuild
    python3 bench/ab_runners.py out/bench/mobilenet_v2/ember_cpu_fp32.pte \\
        --ptd out/bench/mobilenet_v2/ember_cpu_fp32.ptd --input out/bench/mobilenet_v2/in_x.npy \\
        --threads 2 --rounds 30 /tmp/runner_before build/release/bench/ember_bench_runner

Each round runs 10 executes on each runner in turn; it prints each runner's median and fastest
execute, in ms.
"""

import argparse
import statistics
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pte")
    ap.add_argument("runners", nargs="+")
    ap.add_argument("--ptd")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    procs = []
    for runner in args.runners:
        cmd = [runner, args.pte, "--threads", str(args.threads), "--warmup", "10"]
        if args.ptd:
            cmd += ["--ptd", args.ptd]
        for i in args.input:
            cmd += ["--input", i]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        while line and not line.startswith(("ready", "error")):
            line = p.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"{runner}: {line.strip() or 'exited'}")
        procs.append(p)
    times = [[] for _ in procs]
    for _ in range(args.rounds):
        for p, t in zip(procs, times):
            p.stdin.write("run 10\n")
            p.stdin.flush()
            t += [float(v) for v in p.stdout.readline().split()[1:]]
    for runner, p, t in zip(args.runners, procs, times):
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait()
        print(f"{runner}: median {statistics.median(t):.3f} ms, fastest {min(t):.3f} ms")


if __name__ == "__main__":
    main()
