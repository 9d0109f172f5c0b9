"""Tests of ember.llm: Hugging Face causal LMs (random weights, saved with save_pretrained) exported
with ember.llm.export, run by Ember's runtime, greedy tokens against transformers' eager
`generate` (and torchao's quantized eager model for 8da4w); constant methods against
ExecuTorch's runtime reading the same file; and the exporter's refusals."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

import ember
import ember.llm
from ember import ExportError
from ember.runtime import Program

from tests.ember_bin import EMBER_BIN, require_ember_bin

NEW_TOKENS = 64


def setUpModule():
    require_ember_bin()


def tiny_config(kind, **extra):
    import transformers

    common = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=256, bos_token_id=1,
                  eos_token_id=2)
    common.update(extra)
    if kind == "llama":
        common.setdefault("num_key_value_heads", 2)
        return transformers.LlamaConfig(**common)
    common.setdefault("num_key_value_heads", 1)
    return transformers.Qwen2Config(**common)


def save_model(directory, config, seed=0):
    """A random-weight model with a clear top-1 margin (an output head of std 1: ties between
    logits do not decide the greedy tokens), saved as save_pretrained writes it."""
    import transformers

    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        model.get_output_embeddings().weight.normal_(0, 1.0)
    model.eval().save_pretrained(directory)
    return model


def greedy(step, prompt, n):
    """Tokens from step(tokens [1, S] int64, input_pos) -> logits [1, V], ExecuTorch's convention."""
    logits, pos, out = step(prompt, np.array([0], np.int64)), prompt.shape[1], []
    for _ in range(n):
        token = int(np.argmax(logits[0]))
        out.append(token)
        logits = step(np.array([[token]], np.int64), np.array([pos], np.int64))
        pos += 1
    return out


def first_divergence(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first divergence at token {i}: {x} vs {y}"
    return "equal" if len(a) == len(b) else f"lengths {len(a)} and {len(b)}"


class ExportLlm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def check_generation(self, kind, config, backend, precision="fp32"):
        directory = self.path(f"{kind}_{backend}_{precision}")
        hf = save_model(directory, config)
        pte = directory + ".pte"
        ember.llm.export(directory, pte, max_context=96, backend=backend, precision=precision,
                         ember_bin=EMBER_BIN)
        if backend == "cpu":
            # The cpu engine takes each layer whole but its attention op (and the cache writes
            # beside it): one delegate a layer, one before the first attention and the head's
            # (after the last token's slice). An op it does
            # not take between the projections splits layers (a split of the fused q/k/v did:
            # three delegates a layer, and a slower step).
            r = subprocess.run([EMBER_BIN, "inspect", pte, "--json"], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            method = next(m for m in json.loads(r.stdout)["methods"] if m["name"] == "forward")
            self.assertLessEqual(len(method["delegates"]), config.num_hidden_layers + 2,
                                 [o["name"] for o in method["operators"]])
        program = Program.load(pte)
        forward = program.method("forward")
        prompt = torch.randint(0, config.vocab_size, (1, 11), generator=torch.Generator().manual_seed(3))
        if precision == "fp32":
            with torch.no_grad():
                expected = hf.generate(prompt, max_new_tokens=NEW_TOKENS, do_sample=False,
                                       eos_token_id=None, pad_token_id=0)[0, 11:].tolist()
        else:  # torchao's quantized eager model: Ember's decoder with the same quantization
            model, _ = ember.llm.load_decoder(directory, 96)
            model = ember.llm.quantize(model, precision, group_size=32)
            with torch.no_grad():
                expected = greedy(lambda t, p: model(torch.from_numpy(t), torch.from_numpy(p))
                                  .numpy(), prompt.numpy(), NEW_TOKENS)
        got = greedy(lambda t, p: forward(t, p)[0], prompt.numpy(), NEW_TOKENS)
        self.assertEqual(got, expected, first_divergence(got, expected))
        # a test of generation needs tokens that vary
        self.assertGreaterEqual(len(set(expected)), 8, expected)
        return program

    def test_qwen2_portable_and_cpu_equal_transformers(self):
        # q/k/v bias, GQA 4:1
        for backend in ("portable", "cpu"):
            with self.subTest(backend=backend):
                self.check_generation("qwen2", tiny_config("qwen2"), backend)

    def test_llama3_rope_gqa_tied_embeddings_equal_transformers(self):
        rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32}
        config = tiny_config("llama", rope_parameters=rope, tie_word_embeddings=True,
                             initializer_range=0.2)
        self.check_generation("llama", config, "cpu")

    def test_8da4w_equals_torchao_eager(self):
        self.check_generation("qwen2", tiny_config("qwen2", initializer_range=0.1), "cpu",
                              precision="8da4w")

    def test_constant_methods_are_executorchs(self):
        directory = self.path("meta")
        save_model(directory, tiny_config("qwen2", eos_token_id=[2, 7]))
        pte = directory + ".pte"
        ember.llm.export(directory, pte, max_context=64, backend="portable", ember_bin=EMBER_BIN)
        program = Program.load(pte)
        expected = {"get_max_seq_len": [64], "get_max_context_len": [64],
                    "get_vocab_size": [512], "get_n_layers": [2], "get_bos_id": [1],
                    "get_eos_ids": [2, 7], "use_kv_cache": [True],
                    "use_sdpa_with_kv_cache": [True], "enable_dynamic_shape": [True]}
        for name, value in expected.items():
            self.assertEqual(program.method(name)(), value, name)
        import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401 (its llama:: kernels)
        from executorch.runtime import Runtime  # the file format's reference

        et = Runtime.get().load_program(pte)
        for name, value in expected.items():
            self.assertEqual(list(et.load_method(name).execute([])), value, name)
        # ExecuTorch's runtime runs the forward too (its llama::custom_sdpa): the same logits for
        # a prompt and the decode steps after it, the cache carried over in each runtime
        et_forward, forward = et.load_method("forward"), program.method("forward")
        tokens = torch.randint(0, 512, (1, 12), generator=torch.Generator().manual_seed(9))
        for start, length in ((0, 9), (9, 1), (10, 2)):
            args = (tokens[:, start:start + length], torch.tensor([start]))
            want = et_forward.execute(list(args))[0].numpy()
            got = forward(*(a.numpy() for a in args))[0]
            np.testing.assert_allclose(got, want, atol=1e-4 * np.abs(want).max(),
                                       err_msg=f"tokens [{start}, {start + length})")

    def test_own_attention_definition_equals_executorchs(self):
        # Without executorch installed, ember.llm defines llama::custom_sdpa itself (same
        # schema); its eager definition computes what ExecuTorch's kernel does: grouped key
        # heads, causal rows from start_pos, only the positions written so far.
        import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
        from ember.llm._model import _custom_sdpa

        g = torch.Generator().manual_seed(4)
        for heads, kv, s, start in ((4, 2, 5, 0), (4, 1, 1, 17), (6, 6, 3, 20), (8, 2, 7, 9)):
            with self.subTest(heads=heads, kv=kv, s=s, start=start):
                q = torch.randn(1, s, heads, 16, generator=g)
                k = torch.randn(1, 32, kv, 16, generator=g)
                v = torch.randn(1, 32, kv, 16, generator=g)
                want = torch.ops.llama.custom_sdpa(q, k, v, start, None, 0.0, True, None)
                torch.testing.assert_close(_custom_sdpa(q, k, v, start, None, 0.0, True, None),
                                           want, rtol=1e-5, atol=1e-5)
                # the positions past start + s do not matter
                k2, v2 = k.clone(), v.clone()
                k2[:, start + s:], v2[:, start + s:] = 1e4, float("nan")
                torch.testing.assert_close(_custom_sdpa(q, k2, v2, start, None, 0.0, True, None),
                                           want, rtol=1e-5, atol=1e-5)

    def test_own_attention_definition_registers_and_exports(self):
        # Where executorch is not installed, llama_ops() defines llama::custom_sdpa itself: its
        # eager kernel is _custom_sdpa, and torch.export traces it (its fake kernel). In a
        # process of its own, with ExecuTorch's definition unimportable (one definition a
        # process).
        script = """
import sys
sys.modules["executorch.extension.llm.custom_ops.custom_ops"] = None
import torch
from ember.llm._model import llama_ops, _custom_sdpa
ops = llama_ops()
q, k, v = torch.randn(1, 3, 4, 8), torch.randn(1, 16, 2, 8), torch.randn(1, 16, 2, 8)
assert torch.equal(ops.custom_sdpa(q, k, v, 5, None, 0.0, True, None),
                   _custom_sdpa(q, k, v, 5, None, 0.0, True, None))
class Step(torch.nn.Module):
    def forward(self, q, pos):
        start = pos[0].item()
        torch._check(start >= 0)
        torch._check(start + 3 <= 16)
        return ops.custom_sdpa(q, k, v, start, None, 0.0, True, None)
ep = torch.export.export(Step(), (q, torch.tensor([5])))
assert any("custom_sdpa" in str(n.target) for n in ep.graph.nodes), ep.graph
print("defined and exported")
"""
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("defined and exported", r.stdout)

    def test_position_read_from_the_input(self):
        # The attention op takes the position as a number: input_pos[0].item(), bounded by
        # torch._check. The exporter writes aten::_local_scalar_dense (a prim op of both
        # runtimes) and drops the checks' assertions; the kernels check the range at run time.
        from ember.llm._model import llama_ops

        ops = llama_ops()

        class Step(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("k", torch.zeros(1, 16, 2, 8), persistent=False)
                self.register_buffer("v", torch.zeros(1, 16, 2, 8), persistent=False)

            def forward(self, x, input_pos):
                n = x.shape[1]
                start = input_pos[0].item()
                torch._check(start >= 0)
                torch._check(start + n <= 16)
                pos = input_pos + torch.arange(n)
                batch = torch.zeros_like(pos)
                self.k[batch, pos] = x[0, :, :16].reshape(n, 2, 8)
                self.v[batch, pos] = x[0, :, 16:].reshape(n, 2, 8)
                return ops.custom_sdpa(x.view(1, n, 4, 8), self.k, self.v, start, None, 0.0,
                                       True, None)

        ep, pte = self.path("step.ep"), self.path("step.pte")
        example = (torch.randn(1, 3, 32), torch.tensor([2]))
        ember.export(Step(), example, ep, dynamic_shapes=[{1: ember.Dim("s", 1, 16)}, None])
        doc, _ = ember.capture(Step(), example, [{1: ember.Dim("s", 1, 16)}, None])
        names = [n["op"] for n in doc["graph"]["nodes"]]
        self.assertIn("aten::_local_scalar_dense", names)
        self.assertIn("llama::custom_sdpa", names)
        self.assertFalse([n for n in names if "assert" in n or n.startswith("sym::")], names)
        subprocess.run([EMBER_BIN, "compile", ep, "-o", pte], check=True, capture_output=True)
        forward = Program.load(pte).method("forward")
        eager = Step()
        for start, n in ((0, 3), (3, 1), (4, 5), (9, 7)):
            x = torch.randn(1, n, 32)
            want = eager(x, torch.tensor([start]))
            (got,) = forward(x, torch.tensor([start]))
            torch.testing.assert_close(torch.as_tensor(got), want, rtol=1e-5, atol=1e-5)
        # past the cache: a clear error, not a write out of bounds
        with self.assertRaisesRegex(Exception, "out of bounds|do not fit|pass the caches"):
            forward(torch.randn(1, 2, 32), torch.tensor([15]))

    def test_dynamic_prompt_lengths(self):
        # one program serves any prompt length up to the context, and a cache state carried over
        directory = self.path("lengths")
        hf = save_model(directory, tiny_config("qwen2"))
        pte = directory + ".pte"
        ember.llm.export(directory, pte, max_context=64, backend="cpu", ember_bin=EMBER_BIN)
        forward = Program.load(pte).method("forward")
        tokens = torch.randint(0, 512, (1, 64), generator=torch.Generator().manual_seed(5))
        with torch.no_grad():
            full = hf(tokens).logits[0]
        for start, length in ((0, 1), (1, 17), (18, 46)):
            logits = forward(tokens[:, start:start + length].numpy(),
                             np.array([start], np.int64))[0]
            ref = full[start + length - 1].numpy()
            np.testing.assert_allclose(logits[0], ref, atol=1e-4 * np.abs(ref).max(),
                                       err_msg=f"tokens [{start}, {start + length})")

    def test_refusals(self):
        directory = self.path("refused")
        save_model(directory, tiny_config("qwen2"))
        cases = [
            (dict(max_context=100000), "max_position_embeddings"),
            (dict(precision="int3"), "precision 'int3'"),
            (dict(backend="gpu"), "backend 'gpu'"),
        ]
        for kwargs, message in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(ExportError, message):
                    ember.llm.export(directory, self.path("x.pte"), ember_bin=EMBER_BIN, **kwargs)
        with self.assertRaisesRegex(ExportError, "no config.json"):
            ember.llm.export(self.tmp.name, self.path("x.pte"), ember_bin=EMBER_BIN)
        # a RoPE whose tables depend on the sequence length
        with open(os.path.join(directory, "config.json")) as f:
            cfg = json.load(f)
        cfg["rope_parameters"] = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}
        cfg.pop("rope_scaling", None)
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(cfg, f)
        with self.assertRaisesRegex(ExportError, "rope_type 'dynamic' is not supported"):
            ember.llm.export(directory, self.path("x.pte"), ember_bin=EMBER_BIN)
        cfg["model_type"] = "gpt2"
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(cfg, f)
        with self.assertRaisesRegex(ExportError, "model_type 'gpt2' is not supported"):
            ember.llm.export(directory, self.path("x.pte"), ember_bin=EMBER_BIN)


CORPUS = ["The quick brown fox jumps over the lazy dog.", "Ember runs PyTorch programs in C++.",
          "Once upon a time there was a small model that wrote stories.",
          "数字 12345 and emoji 🙂 mixed with   spaces\tand\nnewlines."] * 20
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def save_tokenizer(directory):
    """A byte-level BPE tokenizer (Qwen2's kind) trained on CORPUS, with special tokens and a chat
    template, saved as transformers saves one; returns the transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(directory)
    return fast


class Generate(unittest.TestCase):
    """`ember generate` against transformers: the tokenizer's ids, greedy generation and the
    decoded text, for a plain prompt and a chat prompt."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.join(cls.tmp.name, "model")
        cls.tok = save_tokenizer(cls.dir)
        eos = cls.tok.convert_tokens_to_ids("<|im_end|>")
        config = tiny_config("qwen2", vocab_size=len(cls.tok), eos_token_id=eos,
                             bos_token_id=None)
        cls.hf = save_model(cls.dir, config)
        cls.pte = os.path.join(cls.tmp.name, "model.pte")
        ember.llm.export(cls.dir, cls.pte, max_context=128, ember_bin=EMBER_BIN)
        cls.eos = eos

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def generate(self, *args):
        return subprocess.run([EMBER_BIN, "generate", self.pte, "--tokenizer",
                               os.path.join(self.dir, "tokenizer.json"), *args],
                              capture_output=True, text=True)

    def expected(self, ids, n):
        with torch.no_grad():
            out = self.hf.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False,
                                   eos_token_id=self.eos, pad_token_id=0)[0, len(ids):]
        return self.tok.decode(out.tolist(), skip_special_tokens=True), out.tolist()

    def test_greedy_text_equals_transformers(self):
        for prompt in ("Once upon a time", "数字 12345 🙂", "The quick"):
            with self.subTest(prompt=prompt):
                r = self.generate("--prompt", prompt, "--max-new-tokens", "40")
                self.assertEqual(r.returncode, 0, r.stderr)
                text, ids = self.expected(self.tok(prompt)["input_ids"], 40)
                self.assertGreaterEqual(len(set(ids)), 5, ids)
                self.assertEqual(r.stdout, text + "\n")
                self.assertRegex(r.stderr, r"prefill [0-9.]+ tokens/s")
                self.assertRegex(r.stderr, r"decode [0-9.]+ tokens/s")
                self.assertRegex(r.stderr, r"time to first token: [0-9.]+ ms")
                self.assertRegex(r.stderr, r"peak memory: [0-9.]+ MiB")

    def test_python_generator_equals_the_command(self):
        from ember.runtime import TextGenerator

        g = TextGenerator.load(self.pte, tokenizer=os.path.join(self.dir, "tokenizer.json"))
        meta = g.metadata
        self.assertEqual(meta["max_context_len"], 128)
        self.assertEqual(meta["eos_ids"], [self.eos])
        self.assertTrue(meta["has_chat_template"])
        self.assertEqual(g.encode("Once upon a time 🙂"),
                         self.tok("Once upon a time 🙂")["input_ids"])
        pieces = []
        out = g.generate("Once upon a time", 40, on_text=pieces.append)
        text, ids = self.expected(self.tok("Once upon a time")["input_ids"], 40)
        self.assertEqual(out.text, text)
        self.assertEqual("".join(pieces), text)
        self.assertEqual(out.tokens, [i for i in ids if i != self.eos])
        self.assertEqual(g.decode(out.tokens), text)
        self.assertIn(out.stop_reason, ("eos", "max_new_tokens"))
        self.assertGreater(out.decode_tokens_per_s, 0)
        # the same generator again: a new generation starts over
        self.assertEqual(g.generate("Once upon a time", 40).text, text)
        # past an EOS when asked: the first tokens are the same
        longer = g.generate("Once upon a time", 50, ignore_eos=True)
        self.assertEqual(len(longer.tokens), 50)
        self.assertEqual(longer.stop_reason, "max_new_tokens")
        self.assertEqual(longer.tokens[:len(out.tokens)], out.tokens)

    def test_chat_prompt_uses_the_template(self):
        r = self.generate("--prompt", "Tell me a story", "--chat", "--max-new-tokens", "30",
                          "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        ids = self.tok.apply_chat_template([{"role": "user", "content": "Tell me a story"}],
                                           add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        text, _ = self.expected(list(ids), 30)
        self.assertEqual(r.stdout, text + "\n")

    def test_sampling_is_reproducible(self):
        args = ["--prompt", "Once", "--temperature", "0.9", "--top-k", "50", "--top-p", "0.9",
                "--max-new-tokens", "20", "--quiet"]
        a = self.generate(*args, "--seed", "7")
        b = self.generate(*args, "--seed", "7")
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(a.stdout, b.stdout)

    def test_stops_at_the_context(self):
        r = self.generate("--prompt", "Once", "--max-new-tokens", "1000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"stop: (context|eos)")

    def test_errors(self):
        long_prompt = "fox " * 200
        r = self.generate("--prompt", long_prompt)
        self.assertEqual(r.returncode, 1)
        self.assertIn("leaves no room for a new token", r.stderr)
        # a tokenizer of more tokens than the program's vocabulary
        other = os.path.join(self.tmp.name, "bigger")
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        big = Tokenizer(models.BPE())
        big.pre_tokenizer = pre_tokenizers.ByteLevel()
        big.train_from_iterator(CORPUS + [str(i) * 3 for i in range(2000)],
                                trainers.BpeTrainer(vocab_size=900))
        os.makedirs(other, exist_ok=True)
        big.save(os.path.join(other, "tokenizer.json"))
        r = subprocess.run([EMBER_BIN, "generate", self.pte, "--tokenizer",
                            os.path.join(other, "tokenizer.json"), "--prompt", "x"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("do not belong together", r.stderr)
        # a program that is no LLM
        class AddOne(torch.nn.Module):
            def forward(self, x):
                return x + 1

        ep, pte = os.path.join(self.tmp.name, "add.ep"), os.path.join(self.tmp.name, "add.pte")
        ember.export(AddOne(), (torch.ones(2),), ep)
        subprocess.run([EMBER_BIN, "compile", ep, "-o", pte], check=True, capture_output=True)
        r = subprocess.run([EMBER_BIN, "generate", pte, "--tokenizer",
                            os.path.join(self.dir, "tokenizer.json"), "--prompt", "x"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not an LLM program", r.stderr)
        r = self.generate("--prompt", "x", "--top-p", "2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("top-p must lie in (0, 1]", r.stderr)
        r = self.generate()
        self.assertEqual(r.returncode, 2)
        self.assertIn("generate needs --prompt", r.stderr)


class ConstantMethods(unittest.TestCase):
    def test_written_and_read_by_both_runtimes(self):
        class AddOne(torch.nn.Module):
            def forward(self, x):
                return x + 1

        methods = {"get_max_seq_len": 128, "get_eos_ids": [2, 7], "use_kv_cache": True,
                   "scale": 0.5, "label": "tiny", "none_yet": []}
        with tempfile.TemporaryDirectory() as tmp:
            ep, pte = os.path.join(tmp, "m.ep"), os.path.join(tmp, "m.pte")
            ember.export(AddOne(), (torch.ones(2),), ep, constant_methods=methods)
            subprocess.run([EMBER_BIN, "compile", ep, "-o", pte], check=True,
                           capture_output=True)
            program = Program.load(pte)
            self.assertEqual(program.method_names, ["forward"] + list(methods))
            from executorch.runtime import Runtime

            et = Runtime.get().load_program(pte)
            for name, value in methods.items():
                want = value if isinstance(value, list) else [value]
                self.assertEqual(program.method(name)(), want, name)
                self.assertEqual(list(et.load_method(name).execute([])), want, name)
            run = subprocess.run([EMBER_BIN, "run", pte, "--method", "get_eos_ids"],
                                 capture_output=True, text=True, check=True)
            self.assertIn("output 0: Int 2\noutput 1: Int 7", run.stdout)

    def test_refused_at_export(self):
        class AddOne(torch.nn.Module):
            def forward(self, x):
                return x + 1

        cases = [({"forward": 1}, "would replace"), ({"9lives": 1}, "not an identifier"),
                 ({"m": {"a": 1}}, "is not an int, float, bool or str"),
                 ({"m": [[1]]}, "is not an int"), ({"m": 2**63}, "does not fit in int64"),
                 ([("m", 1)], "must be a dict")]
        with tempfile.TemporaryDirectory() as tmp:
            for methods, message in cases:
                with self.subTest(methods=methods):
                    with self.assertRaisesRegex(ExportError, message):
                        ember.export(AddOne(), (torch.ones(2),), os.path.join(tmp, "m.ep"),
                                     constant_methods=methods)


if __name__ == "__main__":
    unittest.main()
