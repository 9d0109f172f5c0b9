"""End-to-end tests of the `ember` command, checked with NumPy and PyTorch.

Expected values of the fixtures come from shared/fixtures/executorch/README.md (ExecuTorch's
own test expectations); the demo program is checked against eager PyTorch.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

_parser = argparse.ArgumentParser()
_parser.add_argument("--ember", required=True)
_parser.add_argument("--shared", required=True)
_parser.add_argument("--demo", required=True)
# Whether this build has the XNNPACK payload reader (with the cpu engine): `ember inspect` then
# lists an XnnpackBackend delegate's nodes.
_parser.add_argument("--xnnpack", type=int, default=0)
ARGS, _REST = _parser.parse_known_args()

FIXTURE_CASES = [
    ("add.pte", [[1.0], [1.0]], [1], [2.0]),
    ("add.pte", [[2.0], [3.0]], [1], [5.0]),
    ("add.pte", [[13.25], [29.25]], [1], [42.5]),
    ("module_linear_no_constant_segment.pte", [[1, 2, 3, 4]], [2, 2], [5, 8, 11, 14]),
    ("module_linear_no_constant_segment.pte", [[0, -1, 0.5, -2.5]], [2, 2], [2, -1, 3.5, -5.5]),
    ("module_linear_no_constant_segment.pte", [[1, 1, 1, 1]], [2, 2], [5, 5, 5, 5]),
    ("add_one_with_header.pte", [[1, 2, 3]], [3], [2, 3, 4]),
    ("add_one_with_header.pte", [[-1.5, 0, 100]], [3], [-0.5, 1, 101]),
]


def ember(*args):
    return subprocess.run([ARGS.ember, *args], capture_output=True, text=True)


PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")


def seed_program(name):
    """An exported program of the importer's fuzz seeds (in the repository)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compiler", "import",
                        "testdata", "fuzz_seeds", name)


def xnnpack_program(name):
    """A program ExecuTorch delegated to XNNPACK (backends/xnnpack/testdata/README.md)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "backends", "xnnpack",
                        "testdata", "programs", name)


def fixture(name):
    return os.path.join(ARGS.shared, "fixtures", "executorch", name)


def have_fixtures():
    """Whether ../shared's fixtures are there; under CI (CI=true), which always has them, their
    absence fails instead of skipping."""
    present = os.path.exists(fixture("add.pte"))
    if not present and os.environ.get("CI") == "true":
        raise RuntimeError(f"CI=true but {fixture('add.pte')} is missing")
    return present


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    @unittest.skipUnless(have_fixtures(), "../shared/fixtures absent")
    def test_fixtures_write_the_expected_npy(self):
        for i, (name, inputs, shape, expected) in enumerate(FIXTURE_CASES):
            paths = []
            for k, values in enumerate(inputs):
                path = os.path.join(self.dir, f"in_{i}_{k}.npy")
                np.save(path, np.array(values, dtype=np.float32).reshape(shape))
                paths.append(path)
            out = os.path.join(self.dir, f"out_{i}")
            args = ["run", fixture(name), "--output-dir", out]
            for p in paths:
                args += ["--input", p]
            r = ember(*args)
            self.assertEqual(r.returncode, 0, r.stderr)
            y = np.load(os.path.join(out, "output_0.npy"))
            self.assertEqual(y.dtype, np.float32)
            np.testing.assert_array_equal(y, np.array(expected, dtype=np.float32).reshape(shape))
            self.assertIn("output 0: float32", r.stdout)

    @unittest.skipUnless(have_fixtures(), "../shared/fixtures absent")
    def test_random_inputs_every_load_mode_and_latency(self):
        for mode in ["file", "mmap", "mlock-ignore"]:
            r = ember("run", fixture("add.pte"), "--repeat", "5", "--load-mode", mode, "--threads", "1")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"latency: median [0-9.]+ ms, min [0-9.]+ ms over 4 runs "
                                       r"after the first \([0-9.]+ ms\)")
        r = ember("run", fixture("add.pte"), "--repeat", "1")
        self.assertRegex(r.stdout, r"latency: one run, [0-9.]+ ms")
        r = ember("run", fixture("add.pte"), "--repeat", "0")
        self.assertEqual(r.returncode, 2, r.stderr)

    @unittest.skipUnless(have_fixtures(), "../shared/fixtures absent")
    def test_errors_are_one_line_and_nonzero(self):
        wrong = os.path.join(self.dir, "wrong.npy")
        np.save(wrong, np.zeros((3,), dtype=np.float32))
        r = ember("run", fixture("module_linear_no_constant_segment.pte"), "--input", wrong)
        self.assertEqual(r.returncode, 1)
        self.assertIn("input 0", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

        r = ember("run", os.path.join(self.dir, "missing.pte"))
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith("error: cannot open"), r.stderr)

        truncated = os.path.join(self.dir, "cut.pte")
        with open(fixture("add_one_with_header.pte"), "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[:700])
        r = ember("run", truncated)
        self.assertEqual(r.returncode, 1)
        self.assertIn("error:", r.stderr)

        r = ember("run", fixture("add.pte"), "--bogus")
        self.assertEqual(r.returncode, 2)
        r = ember("run", fixture("add.pte"), "--method", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no method 'nope'", r.stderr)

    def test_help_version_and_short_usage_errors(self):
        for args in (("--help",), ("compile", "--help"), ("inspect", "-h"), ("run", "--help")):
            r = ember(*args)
            self.assertEqual(r.returncode, 0, args)
            self.assertIn("usage:", r.stdout)
        r = ember("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^ember \d+\.\d+\.\d+ ")
        r = ember("run", fixture("add.pte"), "--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 2, r.stderr)
        r = ember("run", fixture("add.pte"), "--threads", "1000")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--threads takes at most 256", r.stderr)

    def test_compile_refuses_to_overwrite_its_input(self):
        model = os.path.join(self.dir, "model.ep")
        with open(fixture("add.pte"), "rb") as f:
            data = f.read()
        with open(model, "wb") as f:
            f.write(data)
        for args in (("-o", model), ("-o", os.path.join(self.dir, "..", os.path.basename(self.dir),
                                                          "model.ep"))):
            r = ember("compile", model, *args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("would overwrite the input", r.stderr)
        out = os.path.join(self.dir, "same.pte")
        r = ember("compile", model, "-o", out, "--ptd", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("name the same file", r.stderr)
        with open(model, "rb") as f:
            self.assertEqual(f.read(), data)

    def test_inspect_of_an_exported_program(self):
        """`ember inspect MODEL.ep`: input names and dynamic ranges, outputs, weights, operators,
        whether it compiles; with --backend the partition summary, with --verbose every node."""
        r = ember("inspect", seed_program("dynamic_flatten.ep"))
        self.assertEqual(r.returncode, 0, r.stderr)
        for line in ("  x: f32[batch<=8, 2, 3]", "  dynamic: batch in [1, 8]",
                     "  0: f32[batch<=8, 4]", "weights: 2 parameters, 0 buffers, 0 constants, 56 bytes",
                     "  aten::addmm.default x1"):
            self.assertIn(line, r.stdout.splitlines())
        self.assertRegex(r.stdout, r"operators: 9 nodes, 9 distinct ops\n")
        self.assertRegex(r.stdout, r"compiles: \d+ instructions, planned \d+ bytes")
        r = ember("inspect", seed_program("buffer_view.ep"), "--backend", "loopback")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("backend loopback: 1 partition, 0 portable nodes", r.stdout)
        self.assertRegex(r.stdout, r"  partition 0 in top level: 5 nodes \(.*aten::select x1")
        self.assertNotIn("  node %", r.stdout)
        r = ember("inspect", seed_program("buffer_view.ep"), "--backend", "loopback", "--verbose")
        self.assertIn("  node %select (aten::select.int)", r.stdout)
        r = ember("inspect", seed_program("buffer_view.ep"), "--json")
        self.assertEqual(r.returncode, 2, r.stderr)
        for name, head in (("model.ep", b"EMBEREP\0" + bytes(56)), ("model.pt2", b"PK\x03\x04")):
            path = os.path.join(self.dir, name)
            with open(path, "wb") as f:
                f.write(head)
            r = ember("inspect", path)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertTrue(r.stderr.startswith("error: "), r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    @unittest.skipUnless(ARGS.xnnpack, "built without the XNNPACK payload reader")
    def test_inspect_lists_xnnpack_nodes(self):
        """`ember inspect` of ExecuTorch's XNNPACK programs: each node with its values' datatypes,
        shapes and quantization, the fused clamp, and whether Ember runs the delegate."""
        r = ember("inspect", xnnpack_program("mlp.pte"))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        i = lines.index("    0: XnnpackBackend (segment 1, 1184 bytes)")
        self.assertEqual(lines[i + 1:i + 5], [
            "      XNNPACK payload XN01, 7 value(s), 2 node(s):",
            "        0: XNNFullyConnected (debug handle 1) v0 fp32 [2, 4], v1 fp32 [8, 4] const, "
            "v2 fp32 [8] const -> v3 fp32 [2, 8]; output clamped to [0, inf]",
            "        1: XNNFullyConnected (debug handle 3) v3 fp32 [2, 8], v4 fp32 [3, 8] const, "
            "v5 fp32 [3] const -> v6 fp32 [2, 3]",
            "      Ember: runs it"])
        r = ember("inspect", xnnpack_program("convnet.pte"))
        types = re.findall(r"^        \d+: (XNN\w+) ", r.stdout, re.M)
        self.assertEqual(types, ["XNNStaticTranspose", "XNNConv2d", "XNNMaxPooling2d",
                                 "XNNDepthwiseConv2d", "XNNSigmoid", "XNNStaticTranspose"])
        # Static int8: quantization per tensor and per channel; Ember runs it.
        r = ember("inspect", xnnpack_program("mlp_qs8.pte"), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        x = json.loads(r.stdout)["methods"][0]["delegates"][0]["xnnpack"]
        self.assertEqual([n["type"] for n in x["nodes"]],
                         ["XNNConvert", "XNNFullyConnected", "XNNFullyConnected", "XNNConvert"])
        fc = x["nodes"][1]
        self.assertEqual([v["dtype"] for v in fc["inputs"]], ["qint8", "qcint8", "qcint32"])
        self.assertEqual(fc["inputs"][0]["quant"]["kind"], "per_tensor")
        self.assertIsInstance(fc["inputs"][0]["quant"]["zero_point"], int)
        self.assertEqual(fc["inputs"][1]["quant"]["kind"], "per_channel")
        self.assertEqual(fc["inputs"][1]["quant"]["num_scales"], 8)
        self.assertEqual(fc["inputs"][1]["shape"], [8, 4])
        self.assertTrue(fc["inputs"][1]["constant"])
        self.assertEqual(fc["output_min_max"], [0, "inf"])
        self.assertTrue(x["ember"]["runs"], x["ember"])
        r = ember("inspect", xnnpack_program("mlp_qs8.pte"))
        self.assertIn("      Ember: runs it", r.stdout)
        self.assertIn("qcint8 [8, 4] const (per channel, dim 0, 8 scales", r.stdout)

    def test_compile_quiet_and_verbose(self):
        """The default prints a partition summary and one line per note; --verbose every node
        and every deduplicated weight; --quiet nothing on success."""
        out = os.path.join(self.dir, "conv.pte")
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "loopback")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("backend loopback: 1 partition", r.stdout)
        self.assertNotIn("  node %", r.stdout)
        self.assertRegex(r.stdout, r"compiled .* instructions")
        verbose = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "loopback",
                        "--verbose")
        self.assertEqual(verbose.returncode, 0, verbose.stderr)
        self.assertIn("  node %", verbose.stdout)
        self.assertGreater(len(verbose.stdout.splitlines()), len(r.stdout.splitlines()))
        os.remove(out)
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--quiet")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        self.assertTrue(os.path.getsize(out) > 0)
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--quiet", "--verbose")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_verify_delegates_against_the_portable_kernels(self):
        """`compile --verify` runs each delegate alone and the whole program against the portable
        kernels: loopback (the portable kernels inside a delegate) is exact; the cpu backend is
        within 1e-4, and beyond a tolerance of 0 the compile fails and writes nothing, unless
        --verify=fallback compiles the partition on the portable kernels."""
        out = os.path.join(self.dir, "verified.pte")
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "loopback",
                  "--verify", "--verify-tolerance", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("delegate 0 (loopback, partition 0, 6 nodes): error 0 at output 0",
                      r.stdout)
        self.assertIn("whole program (1 delegates): error 0", r.stdout)
        os.remove(out)
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "cpu", "--verify")
        if r.returncode != 0 and "unknown backend 'cpu'" in r.stderr:
            return  # a build without oneDNN
        self.assertEqual(r.returncode, 0, r.stderr)
        errors = [float(e) for e in re.findall(r"\): error ([0-9.e+-]+) at", r.stdout)]
        self.assertEqual(len(errors), 2, r.stdout)  # the delegate alone, the whole program
        self.assertLess(errors[0], 1e-4)
        os.remove(out)
        if errors[0] > 0:
            r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "cpu",
                      "--verify", "--verify-tolerance", "0")
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("BEYOND TOLERANCE", r.stdout)
            self.assertIn("--verify=fallback", r.stderr)
            self.assertFalse(os.path.exists(out))
            r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "cpu",
                      "--verify=fallback", "--verify-tolerance", "0")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("verify: fallback: 1 partition(s)", r.stdout)
            method = json.loads(ember("inspect", out, "--json").stdout)["methods"][0]
            self.assertEqual(method.get("delegates", []), [], method)
        # The inputs given as .npy files: one per program input.
        x = os.path.join(self.dir, "x.npy")
        np.save(x, np.ones((1, 2, 4, 4), "f4"))
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "loopback",
                  "--verify", "--verify-input", x)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("on the given inputs", r.stdout)
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--backend", "loopback",
                  "--verify", "--verify-input", x, "--verify-input", x)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("2 --verify-input files were given", r.stderr)
        r = ember("compile", seed_program("conv.ep"), "-o", out, "--verify-seed", "3")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_dedupe_notes_are_summarized(self):
        """A model whose weights repeat (fresh BatchNorms) gets one dedupe note, not one per
        weight; --verbose lists each."""
        import torch

        sys.path.insert(0, PYTHON_DIR)
        import ember as ember_py

        model = torch.nn.Sequential(*[torch.nn.BatchNorm1d(4) for _ in range(5)]).eval()
        ep, pte = os.path.join(self.dir, "bn.ep"), os.path.join(self.dir, "bn.pte")
        ember_py.export(model, (torch.randn(2, 4),), ep)
        r = ember("compile", ep, "-o", pte)
        self.assertEqual(r.returncode, 0, r.stderr)
        notes = [line for line in r.stdout.splitlines() if line.startswith("note: dedupe")]
        self.assertEqual(len(notes), 1, r.stdout)
        self.assertRegex(notes[0], r"note: dedupe: \d+ weights have the bytes of another")
        r = ember("compile", ep, "-o", pte, "--verbose")
        detail = [line for line in r.stdout.splitlines() if " has the bytes of " in line]
        self.assertGreater(len(detail), 1, r.stdout)

    def test_repeat_leaves_state_as_after_n_calls(self):
        """`run --repeat N` calls the method N times in all: a counter buffer's output is eager's
        after N calls."""
        import torch

        sys.path.insert(0, PYTHON_DIR)
        import ember as ember_py

        class Counter(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("n", torch.zeros(1))

            def forward(self, x):
                self.n.add_(1)
                return x * self.n

        x = torch.ones(3)
        ep, pte = os.path.join(self.dir, "counter.ep"), os.path.join(self.dir, "counter.pte")
        ember_py.export(Counter(), (x,), ep)
        self.assertEqual(ember("compile", ep, "-o", pte, "-q").returncode, 0)
        np.save(os.path.join(self.dir, "x.npy"), x.numpy())
        for n in (1, 3):
            eager = Counter()
            for _ in range(n):
                want = eager(x)
            out = os.path.join(self.dir, f"out{n}")
            r = ember("run", pte, "--input", os.path.join(self.dir, "x.npy"), "--output-dir", out,
                      *(["--repeat", str(n)] if n > 1 else []))
            self.assertEqual(r.returncode, 0, r.stderr)
            np.testing.assert_array_equal(np.load(os.path.join(out, "output_0.npy")),
                                          want.numpy())

    def test_profile_and_trace(self):
        """`run --profile` names every operator the program calls (as `inspect` lists them) and
        every instruction; `--trace` writes Chrome trace events, one per instruction per call."""
        for backend in ([], ["--backend", "cpu"]):
            pte = os.path.join(self.dir, "conv%s.pte" % len(backend))
            r = ember("compile", seed_program("conv.ep"), "-o", pte, "-q", *backend)
            if backend and r.returncode != 0 and "not registered" in r.stderr:
                continue  # a build without oneDNN
            self.assertEqual(r.returncode, 0, r.stderr)
            method = json.loads(ember("inspect", pte, "--json").stdout)["methods"][0]
            trace = os.path.join(self.dir, "trace.json")
            r = ember("run", pte, "--repeat", "4", "--profile", "--trace", trace)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("profile: 3 calls", r.stdout)
            kinds = [op["name"] for op in method["operators"]]
            kinds += ["delegate " + d["backend"] for d in method["delegates"]]
            for kind in kinds:
                self.assertRegex(r.stdout, r"\n%s +1 +[0-9.]+ +[0-9.]+ +[0-9.]+%%" % re.escape(kind))
            rows = re.findall(r"^ +(\d+)  (\S+(?: \S+)?) +1 ", r.stdout, re.M)
            self.assertEqual(len(rows), method["instructions"], r.stdout)
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            top = [e for e in events if e["tid"] == 1]
            self.assertEqual(len(top), 3 * method["instructions"])
            self.assertTrue(all(e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0 for e in events))
            self.assertEqual({e["name"] for e in top},
                             {op["name"] for op in method["operators"]} |
                             {d["backend"] for d in method["delegates"]})
            if backend:  # the cpu backend reports its primitives: the convolution among them
                self.assertRegex(r.stdout, r"\ncpu: convolution +1 ")
                steps = [e for e in events if e["tid"] == 2]
                self.assertIn("convolution", {e["name"] for e in steps})
                self.assertTrue(all(e["cat"] == "cpu" for e in steps))
        r = ember("run", pte, "--trace", os.path.join(self.dir, "no", "such", "dir", "t.json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot write the trace", r.stderr)

    def test_nested_output_dir_is_created(self):
        out = os.path.join(self.dir, "a", "b", "c")
        r = ember("run", fixture("add.pte"), "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "output_0.npy")))

    def test_demo_program_with_its_weights_matches_pytorch(self):
        import torch

        x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
        xp = os.path.join(self.dir, "x.npy")
        np.save(xp, x)
        out = os.path.join(self.dir, "demo_out")
        pte, ptd = os.path.join(ARGS.demo, "demo.pte"), os.path.join(ARGS.demo, "demo.ptd")
        r = ember("run", pte, "--ptd", ptd, "--input", xp, "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        w = torch.from_numpy(np.load(os.path.join(ARGS.demo, "w.npy")))
        b = torch.from_numpy(np.load(os.path.join(ARGS.demo, "b.npy")))
        xt = torch.from_numpy(x)
        expected = ((xt * w + b) * xt).numpy()
        np.testing.assert_allclose(np.load(os.path.join(out, "output_0.npy")), expected, rtol=1e-6, atol=1e-6)

        r = ember("run", pte, "--input", xp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is missing from named data", r.stderr)


class BadInputTest(unittest.TestCase):
    """No file or argument a user can give ends in a signal, an abort, a hang or unbounded
    memory: every subcommand answers each bad input with exit 1 or 2 and a short message."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def corpus(self):
        d = self.dir
        paths = {"a directory": os.path.join(d, "dir.ep"), "a FIFO": os.path.join(d, "fifo"),
                 "/dev/zero": "/dev/zero", "/dev/null": "/dev/null",
                 "a missing file": os.path.join(d, "missing.pte"),
                 "an empty file": os.path.join(d, "empty.pte"),
                 "random bytes": os.path.join(d, "random.pte"),
                 "a truncated program": os.path.join(d, "cut.pte"),
                 "a huge declared size (.npy)": os.path.join(d, "huge.npy"),
                 "the wrong kind (.npy as program)": os.path.join(d, "wrong_kind.npy")}
        os.mkdir(paths["a directory"])
        os.mkfifo(paths["a FIFO"])
        open(paths["an empty file"], "wb").close()
        with open(paths["random bytes"], "wb") as f:
            f.write(np.random.default_rng(0).bytes(4096))
        with open(fixture("add.pte"), "rb") as f:
            data = f.read()
        with open(paths["a truncated program"], "wb") as f:
            f.write(data[: len(data) // 2])
        with open(paths["a huge declared size (.npy)"], "wb") as f:  # claims 2^40 floats
            header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }"
            header += " " * (64 - 10 - len(header) - 1) + "\n"
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        np.save(paths["the wrong kind (.npy as program)"], np.zeros(3, np.float32))
        return paths

    @unittest.skipUnless(have_fixtures(), "needs ../shared/fixtures")
    def test_every_subcommand_over_bad_files(self):
        table = []
        for what, path in self.corpus().items():
            for cmd in (["run", path], ["run", fixture("add.pte"), "--input", path, "--input", path],
                        ["run", fixture("add.pte"), "--ptd", path],
                        ["inspect", path], ["inspect", path, "--backend", "loopback"],
                        ["compile", path, "-o", os.path.join(self.dir, "out.pte")]):
                try:
                    r = subprocess.run([ARGS.ember, *cmd], capture_output=True, text=True,
                                       timeout=30)
                except subprocess.TimeoutExpired:
                    self.fail(f"{' '.join(cmd[:1])} on {what}: hung")
                label = " ".join(c if c != path else "X" for c in cmd[:3]).replace(
                    fixture("add.pte"), "add.pte")
                table.append((what, label, r.returncode))
                with self.subTest(what=what, command=label):
                    self.assertIn(r.returncode, (1, 2), r.stderr)
                    self.assertTrue(r.stderr.startswith("error: "), r.stderr)
                    self.assertLessEqual(len(r.stderr.strip().splitlines()), 2, r.stderr)
                    self.assertNotIn("terminate called", r.stderr)
        print("\nbad input x subcommand -> exit code")
        for what, label, rc in table:
            print(f"  {what:34s} {label:40s} {rc}")


    def test_exporter_over_bad_arguments(self):
        """`python -m ember export`: unwritable outputs are refused before tracing, bad model
        specs and shapes get one line, exit 2, no traceback."""
        paths = self.corpus()
        ok_model = ["--model", "torchvision:resnet18", "--input-shape", "1,3,8,8"]
        cases = {
            "-o a directory": [*ok_model, "-o", paths["a directory"]],
            "-o in a missing directory": [*ok_model, "-o", os.path.join(self.dir, "no", "m.ep")],
            "-o /proc/m.ep (unwritable)": [*ok_model, "-o", "/proc/m.ep"],
            "--model a directory": ["--model", paths["a directory"] + ":f", "--input-shape", "1",
                                    "-o", os.path.join(self.dir, "m.ep")],
            "--model a missing file": ["--model", paths["a missing file"] + ":f", "--input-shape",
                                       "1", "-o", os.path.join(self.dir, "m.ep")],
            "--model no factory": ["--model", "torchvision:no_such_model", "--input-shape", "1",
                                   "-o", os.path.join(self.dir, "m.ep")],
            "--input-shape not numbers": ["--model", "torchvision:resnet18", "--input-shape", "a,b",
                                          "-o", os.path.join(self.dir, "m.ep")],
        }
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        print("\nbad input x exporter -> exit code")
        for what, argv in cases.items():
            r = subprocess.run([sys.executable, "-m", "ember", "export", *argv], capture_output=True,
                               text=True, timeout=300, env=env)
            print(f"  {what:34s} {'export':40s} {r.returncode}")
            with self.subTest(what=what):
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.startswith("ember export: error: "), r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class InspectTest(unittest.TestCase):
    def test_plan_picture(self):
        """`inspect --plan` draws every planned tensor of the method; the lower bound it writes
        is the one the JSON report computes."""
        import xml.etree.ElementTree as ET

        with tempfile.TemporaryDirectory() as d:
            pte, svg = os.path.join(d, "conv.pte"), os.path.join(d, "plan.svg")
            self.assertEqual(ember("compile", seed_program("conv.ep"), "-o", pte, "-q").returncode, 0)
            r = ember("inspect", pte, "--plan", svg)
            self.assertEqual(r.returncode, 0, r.stderr)
            method = json.loads(ember("inspect", pte, "--json").stdout)["methods"][0]
            root = ET.parse(svg).getroot()
            self.assertEqual(int(root.get("data-lower-bound-bytes")),
                             method["memory"]["lower_bound_bytes"])
            self.assertEqual(int(root.get("data-planned-bytes")), method["memory"]["planned_bytes"])
            titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
            self.assertGreater(len(titles), 0)
            ops = {op["name"] for op in method["operators"]} | {"input", "state"}
            boxes = []
            for t in titles:
                m = re.match(r"value \d+: (\S+), (\d+) bytes .* at offset (\d+) of arena (\d+), "
                             r"instructions (\d+)\.\.(\d+)$", t)
                self.assertIsNotNone(m, t)
                self.assertIn(m.group(1), ops)
                size, offset, arena, begin, end = (int(m.group(k)) for k in range(2, 7))
                self.assertLessEqual(begin, end)
                self.assertLessEqual(end, method["instructions"])
                boxes.append((arena, offset, offset + size, begin, end))
            # A valid plan never gives two tensors live at once the same bytes.
            for i, a in enumerate(boxes):
                for b in boxes[i + 1:]:
                    overlap = (a[0] == b[0] and a[1] < b[2] and b[1] < a[2] and a[3] <= b[4]
                               and b[3] <= a[4])
                    self.assertFalse(overlap, (a, b))
            r = ember("inspect", pte, "--plan", svg, "--method", "backward")
            self.assertEqual(r.returncode, 1)
            self.assertIn("backward", r.stderr)
            r = ember("inspect", seed_program("conv.ep"), "--plan", svg)
            self.assertEqual(r.returncode, 2)

    @unittest.skipUnless(have_fixtures(), "../shared/fixtures absent")
    def test_json_describes_each_fixture(self):
        # (file, input shapes, operator calls, constants count/bytes/location, arena bytes)
        expected = {
            "add.pte": ([[1], [1]], {"aten::add.out": 1}, (0, 0, "constant segment"), 48),
            "module_linear_no_constant_segment.pte": (
                [[2, 2]], {"aten::mul.out": 1, "aten::add.out": 1},
                (2, 32, "inline constant_buffer (deprecated)"), 32),
            "add_one_with_header.pte": ([[3]], {"aten::add.out": 1}, (1, 4, "constant segment"), 32),
        }
        for name, (shapes, ops, consts, arena) in expected.items():
            r = ember("inspect", fixture(name), "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            report = json.loads(r.stdout)
            self.assertEqual(len(report["methods"]), 1)
            m = report["methods"][0]
            self.assertEqual(m["name"], "forward")
            self.assertEqual([i["shape"] for i in m["inputs"]], shapes)
            self.assertTrue(all(i["dtype"] == "float32" and i["dynamism"] == "static" for i in m["inputs"]))
            self.assertEqual({o["name"]: o["calls"] for o in m["operators"]}, ops)
            c = m["constants"]
            self.assertEqual((c["count"], c["bytes"], c["location"]), consts)
            self.assertEqual(m["planned_arenas"], [{"memory_id": 1, "bytes": arena}])
            self.assertEqual(m["delegates"], [])
            self.assertEqual(report["extended_header"], name == "add_one_with_header.pte")

    @unittest.skipUnless(have_fixtures(), "../shared/fixtures absent")
    def test_text_report(self):
        r = ember("inspect", fixture("module_linear_no_constant_segment.pte"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("aten::mul.out x1", r.stdout)
        self.assertIn("arena 1: 32 bytes", r.stdout)

    def test_external_weights_are_reported(self):
        r = ember("inspect", os.path.join(ARGS.demo, "demo.pte"), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = json.loads(r.stdout)["methods"][0]["constants"]
        self.assertEqual((c["external_count"], c["external_bytes"]), (2, 24))

    def test_memory_numbers_agree_with_compile(self):
        """`ember inspect` recomputes planned, activation and lower-bound bytes from the .pte
        (lifetimes over the instruction list); they must equal what `ember compile` planned."""
        seeds = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compiler",
                             "import", "testdata", "fuzz_seeds")
        # conv: reuse across a conv stack; buffer_view: mutable state; dynamic_flatten: bounds.
        for model in ("conv", "buffer_view", "dynamic_flatten", "mlp"):
            with tempfile.TemporaryDirectory() as tmp:
                pte = os.path.join(tmp, model + ".pte")
                r = ember("compile", os.path.join(seeds, model + ".ep"), "-o", pte)
                self.assertEqual(r.returncode, 0, r.stderr)
                m = re.search(r"memory: planned (\d+) bytes, activations (\d+) bytes, "
                              r"lower bound (\d+) bytes", r.stdout)
                self.assertIsNotNone(m, r.stdout)
                compiled = tuple(int(g) for g in m.groups())
                r = ember("inspect", pte, "--json")
                self.assertEqual(r.returncode, 0, r.stderr)
                mem = json.loads(r.stdout)["methods"][0]["memory"]
                got = (mem["planned_bytes"], mem["activation_bytes"], mem["lower_bound_bytes"])
                self.assertEqual(got, compiled, model)
                planned, activations, lower = got
                self.assertLessEqual(lower, planned, model)
                self.assertLessEqual(planned, activations, model)
                self.assertGreater(lower, 0, model)
                r = ember("inspect", pte)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"memory: planned {planned} bytes, activations {activations} bytes, "
                              f"lower bound {lower} bytes", r.stdout)

    def test_memory_report_of_loaded_methods(self):
        """`inspect --memory` loads each method: the method allocator's bytes are its own (what
        MethodMeta gives) plus what each delegate took at init; the cpu backend says what it
        keeps there (weights, activations, scratchpad: all of it, padding aside) and on the heap."""
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        pte = os.path.join(tmp.name, "mem.pte")
        ptd = os.path.join(tmp.name, "mem.ptd")
        r = ember("inspect", fixture("add.pte"), "--memory", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        m = json.loads(r.stdout)["methods"][0]
        self.assertEqual((m["delegates"], m["method_allocator_bytes"]), ([], m["method_bytes"]))
        self.assertGreater(m["method_bytes"], 0)
        for backend in ("loopback", "cpu"):
            r = ember("compile", seed_program("conv.ep"), "-o", pte, "--ptd", ptd, "--backend",
                      backend, "--quiet")
            if r.returncode != 0 and "unknown backend 'cpu'" in r.stderr:
                return  # a build without oneDNN
            self.assertEqual(r.returncode, 0, r.stderr)
            r = ember("inspect", pte, "--memory", "--json")  # the weights are in the .ptd
            self.assertEqual(r.returncode, 1, r.stdout)
            r = ember("inspect", pte, "--memory", "--ptd", ptd, "--threads", "1", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            m = json.loads(r.stdout)["methods"][0]
            planned = json.loads(ember("inspect", pte, "--json").stdout)["methods"][0]["memory"]
            self.assertEqual(m["planned_bytes"], planned["planned_bytes"])
            self.assertEqual(len(m["delegates"]), 1, m)
            d = m["delegates"][0]
            self.assertEqual(d["backend"], backend)
            self.assertEqual(m["method_allocator_bytes"],
                             m["method_bytes"] + d["method_allocator_bytes"])
            if backend == "cpu":
                # Activations and scratchpad come from the method's delegate scratch (shared by
                # its delegates), the rest from the method allocator.
                shared = d["shared_scratch_bytes"]
                self.assertGreater(shared, 0, d)
                self.assertLessEqual(shared, d["activation_bytes"] + d["scratchpad_bytes"] + 64 * 64)
                self.assertEqual(m["delegate_scratch_bytes"], shared)  # the one delegate's
                kept = (d["weight_bytes"] + d["activation_bytes"] + d["scratchpad_bytes"]
                        - min(shared, d["activation_bytes"] + d["scratchpad_bytes"]))
                self.assertGreater(d["weight_bytes"], 0, d)
                self.assertGreaterEqual(d["method_allocator_bytes"], kept)
                self.assertLess(d["method_allocator_bytes"], kept + 64 * 64)
                r = ember("inspect", pte, "--memory", "--ptd", ptd, "--threads", "1")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"delegate 0 (cpu): {d['method_allocator_bytes']} bytes of the "
                              f"method allocator: weights {d['weight_bytes']}", r.stdout)
        for args in (("--ptd", ptd), ("--threads", "0", "--memory"), ("--memory", "--plan", "x.svg")):
            r = ember("inspect", pte, *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _REST, verbosity=2)
