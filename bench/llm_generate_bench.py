"""Text generation speed and memory: Ember (`ember generate` on `export-llm`'s programs) against
llama.cpp (llama-bench) on the same weights and ExecuTorch (its runner on its own export), same
machine, same run.

    .venv/bin/python bench/llm_generate_bench.py --llama-cpp DIR [--threads 1,2]
        [--precisions fp32,8da4w] [--work /tmp/ember_llm_bench] [--rounds 3] [--markdown FILE]
        [--no-executorch] [--tiny]

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

ExecuTorch (on by default where pip executorch has its LLM runner; --no-executorch: off): the same
shape exported by ExecuTorch's own LLM exporter (export_llama_lib's build_args_parser and
export_llama, as python/tests/test_runtime_llm_programs.py calls them) from a params.json and a
random-weight checkpoint of its Llama (construct_transformer, seed 0), with attention_qkv_bias and
use_hf_rope as ExecuTorch's Qwen2.5 config sets them, and these flags (8da4w: ExecuTorch's XNNPACK
4-bit LLM flow; dynamic shapes, the default, so the prompt is prefilled in one call):

    fp32:  -kv --use_sdpa_with_kv_cache -X --max_seq_length 1024 --max_context_length 1024
    8da4w: the same and -qmode 8da4w -G 32

Its weights are its own random numbers, not the HF checkpoint's: speed does not depend on the
values. Its ModelArgs has no tied embeddings: the program carries the output projection as a weight
of its own (as ExecuTorch's Qwen2.5 checkpoint converter makes it, a copy of the embedding), so
fp32 holds 519 MiB more than the tied Ember and llama.cpp models. Ember's 8da4w holds both too, each
in 4 bits (the embedding gathered by embedding_4bit); ExecuTorch's 8da4w keeps its embedding float
(its flag -E would quantize it; not given here). The full-size exports take about 5 (fp32) and 10
(8da4w) minutes and 8 and 6 GiB on two x86-64 cores; they are cached in --work.

Rows `Ember on ExecuTorch's <precision> file`: that same .pte run by `ember generate --ignore-eos`
(its XNNPACK partitions on Ember's XnnpackBackend, its llama:: ops on Ember's kernels), measured as
Ember's own rows are.

Rows `ExecuTorch <precision> (XNNPACK)`: each generation runs ExecuTorch's C++ text runner through
its Python bindings (executorch.extension.llm.runner.TextLLMRunner, with --work's tokenizer.json,
which ExecuTorch's HF tokenizer reads) in a process of its own under `/usr/bin/time` (this script's
--executorch-worker mode), greedy (temperature 0), 128 new tokens. The runner cannot ignore EOS: a
run that stops early (random weights choosing the tokenizer's EOS) is run again with the next of a
few other prompts (SHORT_PROMPTS, LONG_SENTENCES: the speed does not depend on the text), and the
bench fails when every one stops early, or a prompt is not encoded as 512 tokens. No token
callback: the bindings hand each piece to Python as str, and a byte-level piece that is part of
a UTF-8 character raises UnicodeDecodeError; the runner still decodes (and prints, to /dev/null
here) every token, as its own CLI does. Ids past the small tokenizer's vocabulary decode to
nothing and do not stop it. Numbers from the runner's Stats
(millisecond clock): prefill = prompt tokens / (prompt_eval_end - inference_start, which includes
encoding the prompt, a fraction of a millisecond); decode = its generated tokens (127: the runner
counts the first token, sampled from the prefill's logits, as the prompt's) / (inference_end -
prompt_eval_end), the steps Ember's decode counts; time to first token = first_token -
inference_start; load = constructing the runner (tokenizer, program, metadata methods; timed here)
+ its model_load (the forward method: XNNPACK packs the weights). Threads: the bindings' threadpool
(portable_lib._unsafe_reset_threadpool; the pool that XNNPACK, the optimized kernels and
custom_sdpa share, by default one thread per core) is reset to --threads before the runner is
made, and the worker checks the count after the run; and OMP_NUM_THREADS=1: pip's custom_sdpa
calls libtorch's MKL sgemm inside the pool's blocks, and an OpenMP team of its own beside the pool
spins on the pool's cores (with one pool thread and OpenMP's default of two on a two-core machine
the prefill ran 5-100x slower); ExecuTorch's C++ runner has no OpenMP. Peak RSS includes Python and
libtorch, which the bindings load (about 750 MiB on x86-64 Linux with CUDA torch): the worker
reports that baseline, and the table's note gives it.

--tiny: the same flow on a 2-layer model (hidden 64, 4 heads over 2 KV heads, FFN 128, vocab 512)
for every system, in --work's tiny/ folder, for a smoke run in seconds.
"""

import argparse
import glob
import importlib.util
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
TINY = dict(QWEN05, vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2)
PROMPT_TOKENS, NEW_TOKENS, CONTEXT = 512, 128, 1024
# ExecuTorch's export_llama flags per precision (after ET_COMMON).
ET_COMMON = ["-kv", "--use_sdpa_with_kv_cache", "-X", "--max_seq_length", str(CONTEXT),
             "--max_context_length", str(CONTEXT)]
ET_FLAGS = {"8da4w": ["-qmode", "8da4w", "-G", "32"], "fp32": []}
ET_STATS = ("model_load_start_ms", "model_load_end_ms", "inference_start_ms", "prompt_eval_end_ms",
            "first_token_ms", "inference_end_ms", "num_prompt_tokens", "num_generated_tokens")


def make_model(work, shape):
    directory = os.path.join(work, "qwen05")
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return directory
    import torch
    import transformers

    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    from test_runtime_llm import save_tokenizer

    tok = save_tokenizer(directory)
    config = transformers.Qwen2Config(**shape, bos_token_id=None,
                                      eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"))
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).eval().save_pretrained(directory)
    return directory


def long_prompt(directory, n, sentence="the quick brown fox jumps over the lazy dog and runs"):
    """Text whose encoding is exactly n tokens (with the tokenizer Ember and llama.cpp read)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    words = ((sentence + " ") * 400).split()
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
    data = ["--ptd", ptd] if ptd else []
    _, err, rss = timed([ember, "generate", pte, *data, "--tokenizer", tokenizer,
                         "--prompt", prompt, "--max-new-tokens", str(NEW_TOKENS), "--ignore-eos",
                         "--threads", str(threads)])
    num = lambda pattern: float(re.search(pattern, err).group(1))  # noqa: E731
    return {"prompt_tokens": num(r"prompt: (\d+) tokens"),
            "prefill": num(r"prefill ([0-9.]+) tokens/s"),
            "decode": num(r"decode ([0-9.]+) tokens/s"),
            "ttft_ms": num(r"time to first token: ([0-9.]+) ms"),
            "load_ms": num(r"load: ([0-9.]+) ms"), "rss": rss}


def ember_runs(args, pte, ptd, tokenizer, prompt, threads):
    """--rounds generations after a short prompt and after `prompt` (the long one), each timed."""
    ember = os.path.join(args.build, "tools", "ember")
    short, long = [], []
    for _ in range(args.rounds):
        short.append(ember_generate(ember, pte, ptd, tokenizer, "Once upon a time", threads))
        long.append(ember_generate(ember, pte, ptd, tokenizer, prompt, threads))
    return short, long


def summary_row(system, threads, short, long):
    """A table row of the runs' medians (prefill and decode after 512 from the long prompt's
    runs, the rest from the short one's) and their largest peak RSS."""
    row = {"system": system, "threads": threads, "prefill": median_of(long, "prefill"),
           "decode": median_of(short, "decode"), "decode_512": median_of(long, "decode"),
           "ttft_ms": median_of(short, "ttft_ms"), "load_ms": median_of(short, "load_ms"),
           "rss": max(r["rss"] for r in short + long)}
    print(row, flush=True)
    return row


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
            short, long = ember_runs(args, pte, ptd, tokenizer, prompt, threads)
            rows.append(summary_row(f"Ember {precision}", threads, short, long))
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


def executorch_params(shape):
    """ExecuTorch's ModelArgs (params.json) for the HF shape."""
    return {"dim": shape["hidden_size"], "n_layers": shape["num_hidden_layers"],
            "n_heads": shape["num_attention_heads"], "n_kv_heads": shape["num_key_value_heads"],
            "vocab_size": shape["vocab_size"], "hidden_dim": shape["intermediate_size"],
            "norm_eps": shape["rms_norm_eps"], "rope_theta": shape["rope_theta"],
            "attention_qkv_bias": True, "use_hf_rope": True}


def executorch_export(work, shape, precision, pte):
    """ExecuTorch's exporter on a random-weight checkpoint of its Llama (--executorch-export)."""
    import logging
    import warnings

    import torch
    from executorch.examples.models.llama.export_llama_lib import build_args_parser, export_llama
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4096))  # as export_llama.py's main
    params = executorch_params(shape)
    params_path = os.path.join(work, "executorch_params.json")
    with open(params_path, "w") as f:
        json.dump(params, f)
    # Without a checkpoint (-c) the exporter leaves buffers and norm weights uninitialized. Its
    # path must not name a precision: one with "8da4w" or "int8" in it is taken as pre-quantized.
    checkpoint = os.path.join(work, "executorch_checkpoint.pth")
    torch.manual_seed(0)
    model = construct_transformer(ModelArgs(**params, max_seq_len=CONTEXT,
                                            max_context_len=CONTEXT))
    torch.save(model.state_dict(), checkpoint)
    del model
    logging.disable(logging.WARNING)  # the exporter logs every pass at INFO
    argv = ["-p", params_path, "-c", checkpoint, "-o", work, "-n", pte]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            export_llama(build_args_parser().parse_args(argv + ET_COMMON + ET_FLAGS[precision]))
    finally:
        os.remove(checkpoint)  # as big as the fp32 model; seed 0 makes it again


def executorch_worker(pte, tokenizer, prompt, threads):
    """One generation by ExecuTorch's runner in this process (--executorch-worker): its Stats,
    the load time, the thread count and the RSS after imports, as JSON on stdout."""
    import resource

    os.environ["OMP_NUM_THREADS"] = "1"  # before libgomp loads (the docstring says why)
    out = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the runner prints the generated text and its stats on stdout
    import torch
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401 (llama:: kernels)
    from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner
    from executorch.extension.pybindings import portable_lib

    rss_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    portable_lib._unsafe_reset_threadpool(threads)
    start = time.perf_counter()
    runner = TextLLMRunner(pte, tokenizer)
    construct_ms = (time.perf_counter() - start) * 1e3
    stats = []
    config = GenerationConfig(echo=False, max_new_tokens=NEW_TOKENS, temperature=0.0)
    runner.generate(prompt, config, None, lambda s: stats.append({k: getattr(s, k)
                                                                 for k in ET_STATS}))
    json.dump(dict(stats[-1], construct_ms=construct_ms, rss_imports=rss_imports,
                   threads=portable_lib._threadpool_get_thread_count(),
                   omp_threads=torch.get_num_threads()), out)
    out.close()


def have_executorch():
    """Whether pip executorch with its LLM runner's bindings is installed (not imported here)."""
    spec = importlib.util.find_spec("executorch")
    return bool(spec and spec.submodule_search_locations and glob.glob(os.path.join(
        spec.submodule_search_locations[0], "extension", "llm", "runner", "_llm_runner*")))


class EarlyStop(RuntimeError):
    """ExecuTorch's runner, which cannot ignore EOS, met one before NEW_TOKENS tokens."""


# Prompts tried in turn for ExecuTorch's runner, to the first whose greedy generation does not
# reach EOS before NEW_TOKENS (its random weights may pick the EOS id early; the speed does not
# depend on the text).
SHORT_PROMPTS = ("Once upon a time", "The quick brown fox", "In the beginning", "A long time ago",
                 "It was a dark and stormy night", "Hello")
LONG_SENTENCES = ("the quick brown fox jumps over the lazy dog and runs",
                  "once upon a time there was a small model that wrote stories",
                  "ember runs programs in c plus plus on many kinds of devices",
                  "a b c d e f g h i j k l m n o p")


def executorch_first_full(pte, tokenizer, prompts, threads):
    """executorch_generate of the first of `prompts` that generates NEW_TOKENS tokens."""
    for prompt in prompts:
        try:
            return executorch_generate(pte, tokenizer, prompt, threads)
        except EarlyStop:
            continue
    raise RuntimeError(f"ExecuTorch's runner met EOS before {NEW_TOKENS} tokens after every "
                       "prompt tried")


def executorch_generate(pte, tokenizer, prompt, threads):
    out, _, rss = timed([sys.executable, os.path.abspath(__file__), "--executorch-worker", pte,
                         tokenizer, prompt, str(threads)])
    s = json.loads(out)
    if (s["threads"], s["omp_threads"]) != (threads, 1):
        raise RuntimeError(f"ExecuTorch ran {s['threads']} threads and OpenMP "
                           f"{s['omp_threads']}, not {threads} and 1")
    if s["num_generated_tokens"] != NEW_TOKENS - 1:  # the first token is the prefill's
        raise EarlyStop(f"ExecuTorch's runner stopped after {s['num_generated_tokens'] + 1} "
                        f"new tokens (EOS?), not {NEW_TOKENS}")
    rate = lambda n, ms: n * 1e3 / ms if ms > 0 else None  # noqa: E731 (a 1 ms clock)
    return {"prompt_tokens": s["num_prompt_tokens"],
            "prefill": rate(s["num_prompt_tokens"],
                            s["prompt_eval_end_ms"] - s["inference_start_ms"]),
            "decode": rate(s["num_generated_tokens"],
                           s["inference_end_ms"] - s["prompt_eval_end_ms"]),
            "ttft_ms": s["first_token_ms"] - s["inference_start_ms"],
            "load_ms": s["construct_ms"] + s["model_load_end_ms"] - s["model_load_start_ms"],
            "rss": rss, "rss_imports": s["rss_imports"]}


def median_of(runs, key):
    """The median of the runs' key; None where each is None (under the runner's 1 ms clock)."""
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def executorch_rows(args, directory, threads_list):
    tokenizer = os.path.join(directory, "tokenizer.json")
    prompt = long_prompt(directory, PROMPT_TOKENS)
    long_prompts = [long_prompt(directory, PROMPT_TOKENS, x) for x in LONG_SENTENCES]
    rows = []
    for precision in ("fp32", "8da4w"):
        if precision not in args.precisions:
            continue
        pte = os.path.join(args.work, f"executorch_{precision}.pte")
        if not os.path.exists(pte):
            t = time.time()
            subprocess.run([sys.executable, os.path.abspath(__file__), "--executorch-export",
                            precision, pte, "--work", args.work] + ["--tiny"] * args.tiny,
                           check=True)
            print(f"exported ExecuTorch {precision} in {time.time() - t:.0f} s", flush=True)
        for threads in threads_list:
            short, long = [], []
            for _ in range(args.rounds):
                short.append(executorch_first_full(pte, tokenizer, SHORT_PROMPTS, threads))
                long.append(executorch_first_full(pte, tokenizer, long_prompts, threads))
            if long[0]["prompt_tokens"] != PROMPT_TOKENS:
                raise RuntimeError(f"ExecuTorch's tokenizer made {long[0]['prompt_tokens']} "
                                   f"prompt tokens, not {PROMPT_TOKENS}")
            row = summary_row(f"ExecuTorch {precision} (XNNPACK)", threads, short, long)
            row["rss_imports"] = max(r["rss_imports"] for r in short + long)
            rows.append(row)
            # The same file on Ember's runtime (its XnnpackBackend), with Ember's prompts.
            short, long = ember_runs(args, pte, None, tokenizer, prompt, threads)
            rows.append(summary_row(f"Ember on ExecuTorch's {precision} file", threads, short,
                                    long))
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
    imports = [r["rss_imports"] for r in rows if "rss_imports" in r]
    if imports:
        lines += ["", f"ExecuTorch's peak RSS includes the Python process and libtorch that its "
                  f"runner's bindings load: {max(imports):.0f} MiB before the runner is made."]
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
    p.add_argument("--executorch", action=argparse.BooleanOptionalAction, default=None,
                   help="ExecuTorch's rows (default: on where executorch has its LLM runner)")
    p.add_argument("--tiny", action="store_true",
                   help="a 2-layer model for every system, in WORK/tiny: a smoke run")
    p.add_argument("--executorch-worker", nargs=4, help=argparse.SUPPRESS,
                   metavar=("PTE", "TOKENIZER", "PROMPT", "THREADS"))
    p.add_argument("--executorch-export", nargs=2, help=argparse.SUPPRESS,
                   metavar=("PRECISION", "PTE"))
    args = p.parse_args()
    if args.executorch_worker:
        pte, tokenizer, prompt, threads = args.executorch_worker
        return executorch_worker(pte, tokenizer, prompt, int(threads))
    shape = TINY if args.tiny else QWEN05
    if args.executorch_export:
        return executorch_export(args.work, shape, *args.executorch_export)
    args.precisions = args.precisions.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    if args.tiny:
        args.work = os.path.join(args.work, "tiny")
    os.makedirs(args.work, exist_ok=True)
    directory = make_model(args.work, shape)
    rows = ember_rows(args, directory, threads)
    if args.llama_cpp:
        rows += llama_cpp_rows(args, directory, threads)
    if args.executorch if args.executorch is not None else have_executorch():
        rows += executorch_rows(args, directory, threads)
    table = markdown(sorted(rows, key=lambda r: (r["threads"], r["system"])),
                     "python bench/llm_generate_bench.py " + " ".join(sys.argv[1:]))
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
