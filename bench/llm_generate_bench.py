"""Text generation speed and memory: Ember (`ember generate` on `export-llm`'s programs) against
llama.cpp (llama-bench) on the same weights, and PyTorch eager, same machine, same run.

    .venv/bin/python bench/llm_generate_bench.py --llama-cpp DIR [--threads 1,2]
        [--precisions fp32,8da4w] [--work /tmp/ember_llm_bench] [--rounds 3] [--markdown FILE]

The model is Qwen2.5-0.5B's shape (hidden 896, 24 layers, 14 heads, 2 KV heads, FFN 4864, vocab
151936, tied embeddings) with random weights (transformers' init, seed 0), saved with
save_pretrained in --work with a small byte-level BPE tokenizer (python/tests/test_runtime_llm.py's:
the speed of generation does not depend on the tokenizer's vocabulary, and no tokenizer can be
downloaded). Measured per system and thread count, medians over --rounds runs:
- prefill: tokens/s over a 512-token prompt;
- decode: tokens/s over 128 new tokens after a short prompt, and 128 after the 512-token prompt;
- time to first token (Ember: from the generate call, the program already loaded) and load;
- peak RSS of the process (`/usr/bin/time`'s maximum resident set).
Ember: `python -m ember export-llm` (--max-context 1024) at each --precisions, then `ember
generate --ignore-eos` (greedy), whose stderr reports these. llama.cpp: its own HF-to-GGUF
converter (the tokenizer's pre-tokenizer declared as Qwen2's, which it is), F32 and Q4_0 (the
peer of 8da4w: 4-bit weights in groups of 32 with one scale each) by llama-quantize, then
`llama-bench -p 512 -n 128 -d 0,512` (prompt processing and generation, at depth 0 and 512).
llama.cpp is built from the llama-cpp-python source package (PyPI), outside CI:

    python -c "..."  # download llama_cpp_python-X.tar.gz from PyPI's JSON API; tar xzf
    cmake -S llama_cpp_python-X/vendor/llama.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \\
        -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
    ninja -C build llama-bench llama-quantize

and --llama-cpp names that llama.cpp folder (its build/bin and convert_hf_to_gguf.py).
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

QWEN05 = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
              num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
              tie_word_embeddings=True, rope_theta=1000000.0, rms_norm_eps=1e-6)
PROMPT_TOKENS, NEW_TOKENS, CONTEXT = 512, 128, 1024


def make_model(work):
    directory = os.path.join(work, "qwen05")
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return directory
    import torch
    import transformers

    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    from test_runtime_llm import save_tokenizer

    tok = save_tokenizer(directory)
    config = transformers.Qwen2Config(**QWEN05, bos_token_id=None,
                                      eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"))
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).eval().save_pretrained(directory)
    return directory


def long_prompt(directory, n):
    """Text whose encoding is exactly n tokens (with the tokenizer Ember and llama.cpp read)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    words = ("the quick brown fox jumps over the lazy dog and runs " * 400).split()
    text = ""
    for w in words:
        candidate = (text + " " + w) if text else w
        if len(tok.encode(candidate).ids) > n:
            break
        text = candidate
    while len(tok.encode(text).ids) < n:
        text += "."
    return text


def timed(cmd):
    """(stdout, stderr, peak RSS MiB) of cmd under /usr/bin/time."""
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb %M"] + cmd, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}...: {r.stderr.strip()[-800:]}")
    rss = int(re.search(r"maxrss_kb (\d+)", r.stderr).group(1)) / 1024
    return r.stdout, r.stderr, rss


def ember_generate(ember, pte, ptd, tokenizer, prompt, threads):
    _, err, rss = timed([ember, "generate", pte, "--ptd", ptd, "--tokenizer", tokenizer,
                         "--prompt", prompt, "--max-new-tokens", str(NEW_TOKENS), "--ignore-eos",
                         "--threads", str(threads)])
    num = lambda pattern: float(re.search(pattern, err).group(1))  # noqa: E731
    return {"prompt_tokens": num(r"prompt: (\d+) tokens"),
            "prefill": num(r"prefill ([0-9.]+) tokens/s"),
            "decode": num(r"decode ([0-9.]+) tokens/s"),
            "ttft_ms": num(r"time to first token: ([0-9.]+) ms"),
            "load_ms": num(r"load: ([0-9.]+) ms"), "rss": rss}


def ember_rows(args, directory, threads_list):
    ember = os.path.join(args.build, "tools", "ember")
    tokenizer = os.path.join(directory, "tokenizer.json")
    prompt = long_prompt(directory, PROMPT_TOKENS)
    rows = []
    for precision in args.precisions:
        pte = os.path.join(args.work, f"ember_{precision}.pte")
        ptd = pte[:-4] + ".ptd"
        if not os.path.exists(pte):
            t = time.time()
            subprocess.run([sys.executable, "-m", "ember", "export-llm", directory, "-o", pte,
                            "--ptd", ptd, "--max-context", str(CONTEXT), "--precision", precision,
                            "--ember-bin", ember], check=True, cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
            print(f"exported Ember {precision} in {time.time() - t:.0f} s", flush=True)
        for threads in threads_list:
            short, long = [], []
            for _ in range(args.rounds):
                short.append(ember_generate(ember, pte, ptd, tokenizer, "Once upon a time",
                                            threads))
                long.append(ember_generate(ember, pte, ptd, tokenizer, prompt, threads))
            med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
            rows.append({"system": f"Ember {precision}", "threads": threads,
                         "prefill": med(long, "prefill"), "decode": med(short, "decode"),
                         "decode_512": med(long, "decode"), "ttft_ms": med(short, "ttft_ms"),
                         "load_ms": med(short, "load_ms"),
                         "rss": max(r["rss"] for r in short + long)})
            print(rows[-1], flush=True)
    return rows


def llama_cpp_rows(args, directory, threads_list):
    lc = args.llama_cpp
    bin_dir = os.path.join(lc, "build", "bin")
    rows = []
    for precision, qtype in (("fp32", "F32"), ("8da4w", "Q4_0")):
        if precision not in args.precisions:
            continue
        f32 = os.path.join(args.work, "qwen05-f32.gguf")
        if not os.path.exists(f32):
            convert = ("import sys; sys.path[:0] = [{lc!r}, {lc!r} + '/gguf-py']; "
                       "import convert_hf_to_gguf as c, conversion.base as b; "
                       "b.TextModel.get_vocab_base_pre = lambda self, tok: 'qwen2'; "
                       "sys.argv = ['convert', {d!r}, '--outfile', {o!r}, '--outtype', 'f32']; "
                       "c.main()").format(lc=lc, d=directory, o=f32)
            subprocess.run([sys.executable, "-c", convert], check=True, capture_output=True)
        model = f32
        if qtype != "F32":
            model = os.path.join(args.work, f"qwen05-{qtype.lower()}.gguf")
            if not os.path.exists(model):
                subprocess.run([os.path.join(bin_dir, "llama-quantize"), f32, model, qtype],
                               check=True, capture_output=True)
        for threads in threads_list:
            out, _, rss = timed([os.path.join(bin_dir, "llama-bench"), "-m", model,
                                 "-p", str(PROMPT_TOKENS), "-n", str(NEW_TOKENS), "-d", "0,512",
                                 "-t", str(threads), "-r", str(args.rounds), "-o", "json"])
            results = json.loads(out)
            speed = {}
            for r in results:
                kind = "prefill" if r["n_prompt"] > 0 else "decode"
                speed[(kind, r.get("n_depth", 0))] = r["avg_ts"]
            rows.append({"system": f"llama.cpp {qtype}", "threads": threads,
                         "prefill": speed.get(("prefill", 0)), "decode": speed.get(("decode", 0)),
                         "decode_512": speed.get(("decode", 512)), "ttft_ms": None,
                         "load_ms": None, "rss": rss})
            print(rows[-1], flush=True)
    return rows


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(rows, command):
    lines = [f"bench/llm_generate_bench.py, {time.strftime('%Y-%m-%d %H:%M')}, "
             f"{platform.machine()}, {os.cpu_count()} CPUs. Made by `{command}`.", "",
             "| system | threads | prefill 512 tok/s | decode tok/s | decode after 512 tok/s | "
             "time to first token ms | load ms | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['system']} | {r['threads']} | {fmt(r['prefill'])} | "
                     f"{fmt(r['decode'])} | {fmt(r['decode_512'])} | {fmt(r['ttft_ms'], 0)} | "
                     f"{fmt(r['load_ms'], 0)} | {fmt(r['rss'], 0)} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--precisions", default="fp32,8da4w")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", default="/tmp/ember_llm_bench")
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--llama-cpp", help="llama.cpp's folder (built: build/bin/llama-bench)")
    p.add_argument("--markdown")
    args = p.parse_args()
    args.precisions = args.precisions.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    os.makedirs(args.work, exist_ok=True)
    directory = make_model(args.work)
    rows = ember_rows(args, directory, threads)
    if args.llama_cpp:
        rows += llama_cpp_rows(args, directory, threads)
    table = markdown(sorted(rows, key=lambda r: (r["threads"], r["system"])),
                     "python bench/llm_generate_bench.py " + " ".join(sys.argv[1:]))
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
