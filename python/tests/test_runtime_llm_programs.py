"""ExecuTorch's own LLM programs on Ember: a tiny random-weight Llama (2 layers, dim 64, 4 query
heads over 2 key/value heads, vocab 512, 64 positions) exported by ExecuTorch's exporter as its
users run it (`python -m executorch.examples.models.llama.export_llama -c checkpoint.pth -p
params.json -kv --use_sdpa_with_kv_cache ...`, here through export_llama_lib's own parser and
export_llama), then one prompt and 16 greedy decode steps run on ExecuTorch's runtime
(executorch.runtime) and on Ember's (ember.runtime.Program), fed as ExecuTorch's LLM runner feeds
them: tokens [1, n] and input_pos [1] (with --disable_dynamic_shape the prompt goes one token a
call). The greedy tokens must be equal and every step's logits close. The programs call
llama::update_cache.out, llama::custom_sdpa.out (runtime/kernels/llm) and aten::linear.out; the
-X ones delegate their linears to XNNPACK (Ember's XnnpackBackend).

The constant methods ExecuTorch's runner reads (get_max_seq_len, get_vocab_size, use_kv_cache,
enable_dynamic_shape, ...) must give ExecuTorch's values through Program.method(name)() and
`ember run --method`.

Exports are cached under $EMBER_LLM_PROGRAMS_WORK (default: the temp dir's ember_llm_programs),
keyed by this file's export code and the torch, torchao and executorch versions: the first run
exports (about 15 s a flow on two cores), later runs reuse the programs.
Skipped, with the reason, where executorch is not importable; under CI=true that fails
instead (CI always has it)."""

import hashlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from ember.runtime import EmberRuntimeError, Program

try:
    import torch
    import executorch.version
    from executorch.runtime import Runtime
    from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401 (llama:: kernels)
    HAVE_ET = True
    WHY = ""
except Exception as e:  # pragma: no cover - depends on the environment
    HAVE_ET = False
    WHY = f"executorch (with its LLM export) is not importable: {e}"


def setUpModule():
    if not HAVE_ET:
        if os.environ.get("CI") == "true":
            raise RuntimeError(WHY)  # CI installs pip executorch: a skip there is a failure
        raise unittest.SkipTest(WHY)

PARAMS = {"dim": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 512,
          "multiple_of": 32, "norm_eps": 1e-5, "rope_theta": 10000.0}
MAX_SEQ = 64
COMMON = ["-kv", "--use_sdpa_with_kv_cache", "--max_seq_length", str(MAX_SEQ),
          "--max_context_length", str(MAX_SEQ)]
# flow: (export_llama flags, Ember-vs-ExecuTorch logits bound relative to the largest logit, in
# CI). Every flow's export costs 15-30 s on two cores, so CI exports three: the portable program
# with dynamic shapes (the exporter's default), and the XNNPACK 8da4w one with dynamic shapes (the
# default) and with static ones (as ExecuTorch's Llama instructions give it). EMBER_LLM_PROGRAMS_ALL=1
# runs every flow.
FLOWS = {
    "portable": ([], 1e-4, True),
    "portable_static": (["--disable_dynamic_shape"], 1e-4, False),
    # ExecuTorch writes a dynamic dim into the XNNPACK payload as its upper bound; the delegates
    # here compute row by row (linears), so Ember runs them at any number of rows up to it
    # (docs/compatibility.md, "Dynamic shapes").
    "xnnpack": (["-X"], 1e-4, False),
    "xnnpack_static": (["-X", "--disable_dynamic_shape"], 1e-4, False),
    # Activations quantized per row at run time: a one-step flip of one activation moves a logit
    # by a few 1e-3 of the largest (tests/e2e/xnnpack_programs.py's dynamic-int8 rule).
    "xnnpack_8da4w": (["-X", "-qmode", "8da4w", "-G", "32"], 1e-2, True),
    "xnnpack_8da4w_static": (["-X", "-qmode", "8da4w", "-G", "32", "--disable_dynamic_shape"],
                             1e-2, True),
}
ALL_FLOWS = os.environ.get("EMBER_LLM_PROGRAMS_ALL") == "1"
PROMPT = [1, 37, 99, 200, 5, 77, 311, 42]
DECODE_STEPS = 16


def _export(work, flows):
    """Exports `flows` with ExecuTorch's exporter into `work`."""
    import logging
    import warnings
    from executorch.examples.models.llama.export_llama_lib import build_args_parser, export_llama
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    recursion_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(recursion_limit, 4096))  # as export_llama.py's main
    params = os.path.join(work, "params.json")
    # Random weights as a checkpoint, as users pass theirs (-c): without one the exporter leaves
    # the model's buffers and norm weights uninitialized (to_empty), and the logits are NaN. The
    # norm weights are drawn too, so that a wrong norm shows.
    torch.manual_seed(0)
    state = construct_transformer(ModelArgs(**PARAMS, max_seq_len=MAX_SEQ,
                                            max_context_len=MAX_SEQ)).state_dict()
    for name, value in state.items():
        if name.endswith("norm.weight"):
            value.copy_(1 + 0.2 * torch.randn_like(value))
    checkpoint = os.path.join(work, "checkpoint.pth")
    torch.save(state, checkpoint)
    logging.disable(logging.WARNING)  # the exporter logs every pass at INFO
    for flow in flows:
        torch.manual_seed(42)
        # -n is a path (relative to the working directory, not to -o).
        argv = ["-p", params, "-c", checkpoint, "-o", work, "-n", os.path.join(work, flow + ".pte")]
        argv += COMMON + FLOWS[flow][0]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                export_llama(build_args_parser().parse_args(argv))
            status = "ok"
        except Exception as e:  # the exporter's refusal is reported by the test
            status = f"exporter failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        with open(os.path.join(work, flow + ".json"), "w") as f:
            json.dump({"status": status, "flags": FLOWS[flow][0]}, f)
    logging.disable(logging.NOTSET)
    sys.setrecursionlimit(recursion_limit)


def export_key():
    import torchao
    text = inspect.getsource(_export) + json.dumps([PARAMS, COMMON])
    text += torch.__version__ + torchao.__version__ + executorch.version.__version__
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def programs(flows):
    """{flow: path of its .pte, or the exporter's failure}, exporting what the cache lacks."""
    root = os.environ.get("EMBER_LLM_PROGRAMS_WORK",
                          os.path.join(tempfile.gettempdir(), "ember_llm_programs"))
    work = os.path.join(root, export_key())
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "params.json"), "w") as f:
        json.dump(PARAMS, f)
    missing = [f for f in flows if not os.path.exists(os.path.join(work, f + ".json"))]
    # A flow's cached export is valid for its flags (stored beside it) only.
    for f in flows:
        if f in missing:
            continue
        with open(os.path.join(work, f + ".json")) as meta:
            if json.load(meta).get("flags") != FLOWS[f][0]:
                missing.append(f)
    if missing:
        _export(work, missing)  # in this process: a second import of torch would cost seconds
    result = {}
    for flow in flows:
        with open(os.path.join(work, flow + ".json")) as f:
            status = json.load(f)["status"]
        result[flow] = os.path.join(work, flow + ".pte") if status == "ok" else status
    return result


def generate(forward, dynamic):
    """The greedy tokens and each step's logits, fed as ExecuTorch's runner feeds the program."""
    logits_per_step = []
    if dynamic:
        logits = forward(torch.tensor([PROMPT]), torch.tensor([0]))
        logits_per_step.append(logits)
    else:
        for pos, token in enumerate(PROMPT):
            logits = forward(torch.tensor([[token]]), torch.tensor([pos]))
            logits_per_step.append(logits)
    tokens = [int(np.argmax(logits_per_step[-1]))]
    for step in range(DECODE_STEPS - 1):
        logits = forward(torch.tensor([[tokens[-1]]]), torch.tensor([len(PROMPT) + step]))
        logits_per_step.append(logits)
        tokens.append(int(np.argmax(logits)))
    return tokens, logits_per_step


class LlmProgramsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.paths = programs([f for f, v in FLOWS.items() if v[2] or ALL_FLOWS])

    def flow(self, name):
        path = self.paths[name]
        if not os.path.exists(path):
            self.fail(f"{name}: {path}")
        et_program = Runtime.get().load_program(path)
        ember_program = Program.load(path)
        return path, et_program, ember_program

    def check_generation(self, name):
        path, et_program, ember_program = self.flow(name)
        et_method = et_program.load_method("forward")
        dynamic = bool(et_program.load_method("enable_dynamic_shape").execute([])[0])
        self.assertEqual(dynamic, "--disable_dynamic_shape" not in FLOWS[name][0])

        def et_forward(tokens, pos):
            return et_method.execute([tokens, pos])[0].numpy().copy()

        def ember_forward(tokens, pos):
            return ember_program.forward(tokens, pos)[0].numpy()  # torch in, torch out

        et_tokens, et_logits = generate(et_forward, dynamic)
        ember_tokens, ember_logits = generate(ember_forward, dynamic)
        bound = FLOWS[name][1]
        for step, (a, b) in enumerate(zip(et_logits, ember_logits)):
            scale = float(np.abs(a).max())
            err = float(np.abs(a - b).max())
            self.assertTrue(np.isfinite(scale), f"{name} step {step}: ExecuTorch's logits")
            self.assertLessEqual(err, bound * scale,
                                 f"{name} step {step}: max |ember - executorch| = {err}, "
                                 f"largest logit {scale}")
        self.assertEqual(ember_tokens, et_tokens, name)
        worst = max(float(np.abs(a - b).max() / np.abs(a).max())
                    for a, b in zip(et_logits, ember_logits))
        print(f"\n  {name}: {len(ember_tokens)} tokens equal, logits within {worst:.2g} of the "
              f"largest (bound {bound:g})", file=sys.stderr)
        self.assertGreater(len(set(et_tokens)), 1, f"{name}: a degenerate generation {et_tokens}")

    def test_portable(self):
        self.check_generation("portable")

    def test_xnnpack_8da4w_static_shapes(self):
        self.check_generation("xnnpack_8da4w_static")

    def test_xnnpack_8da4w_dynamic_shapes(self):
        self.check_generation("xnnpack_8da4w")

    if ALL_FLOWS:  # the flows CI leaves out for time: defined only when asked, never skipped
        def test_portable_static_shapes(self):
            self.check_generation("portable_static")

        def test_xnnpack_static_shapes(self):
            self.check_generation("xnnpack_static")

        def test_xnnpack_dynamic_shapes(self):
            self.check_generation("xnnpack")

    def test_ember_generate_on_executorchs_programs(self):
        # The generation loop of `ember generate` (ember.runtime.TextGenerator) on ExecuTorch's
        # programs, with a tokenizer of fewer tokens than the model's 512 (the sampler keeps to
        # the tokenizer's ids): the tokens ExecuTorch's runtime gives greedily over those ids.
        from ember.runtime import TextGenerator
        from tests.test_runtime_llm import save_tokenizer

        with tempfile.TemporaryDirectory() as tmp:
            tok = save_tokenizer(tmp)
            n_vocab = len(tok)
            for name in ("portable", "xnnpack_8da4w", "xnnpack_8da4w_static"):
                with self.subTest(flow=name):
                    path, et_program, _ = self.flow(name)
                    g = TextGenerator.load(path, tokenizer=os.path.join(tmp, "tokenizer.json"))
                    prompt = "Once upon a time there was"
                    ids = g.encode(prompt)
                    self.assertEqual(ids, tok(prompt)["input_ids"])
                    et = et_program.load_method("forward")
                    dynamic = g.metadata["enable_dynamic_shape"]
                    if dynamic:
                        logits = et.execute([torch.tensor([ids]), torch.tensor([0])])[0]
                    else:
                        for pos, t in enumerate(ids):
                            logits = et.execute([torch.tensor([[t]]), torch.tensor([pos])])[0]
                    want = []
                    for step in range(DECODE_STEPS):
                        want.append(int(np.argmax(logits.numpy()[0, :n_vocab])))
                        logits = et.execute([torch.tensor([[want[-1]]]),
                                             torch.tensor([len(ids) + step])])[0]
                    out = g.generate(prompt, DECODE_STEPS, ignore_eos=True)
                    self.assertEqual(out.tokens, want, name)
                    self.assertEqual(out.text, tok.decode(want, skip_special_tokens=True))
                    self.assertEqual(out.prompt_tokens, len(ids))

    def test_constant_methods(self):
        path, et_program, ember_program = self.flow("portable")
        names = sorted(et_program.method_names - {"forward"})
        for name in ["get_max_seq_len", "get_vocab_size", "use_kv_cache", "enable_dynamic_shape",
                     "get_n_layers"]:
            self.assertIn(name, names)
        self.assertEqual(set(ember_program.method_names), set(et_program.method_names))
        for name in names:
            want = et_program.load_method(name).execute([])
            got = ember_program.method(name)()
            self.assertEqual(list(got), list(want), name)
            self.assertEqual([type(x) for x in got], [type(x) for x in want], name)
        self.assertEqual(ember_program.method("get_max_seq_len")(), [MAX_SEQ])
        ember = os.environ.get("EMBER_BIN")
        if ember is None:
            if os.environ.get("CI") == "true":  # CTest sets it: CI checks the command too
                self.fail("EMBER_BIN (the ember command) is not set")
            return  # run by hand without the command: the Python half is checked
        r = subprocess.run([ember, "run", path, "--method", "get_max_seq_len"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"output 0: Int {MAX_SEQ}", r.stdout)
        r = subprocess.run([ember, "run", path, "--method", "use_kv_cache"],
                           capture_output=True, text=True)
        self.assertIn("output 0: Bool true", r.stdout)


if __name__ == "__main__":
    unittest.main()
