"""Tests of ember.runtime (the Python runtime): programs exported from PyTorch modules, compiled
with the `ember` command (EMBER_BIN), run from Python and compared with the modules in eager
PyTorch; and the runtime's errors raised as Python exceptions."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

import ember
from ember.runtime import EmberRuntimeError, Program, TensorMeta

from tests.ember_bin import EMBER_BIN, require_ember_bin



class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.fc(torch.flatten(y, 1)), y.amax(dim=(2, 3))


class ChannelsLastNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x) * 2


class Mixed(torch.nn.Module):
    """Two inputs of different dtypes, an int64 output."""

    def forward(self, x, idx):
        return x * 2 + 1, idx + 3


class Stateful(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.total.add_(x)
        return self.total * 1


def setUpModule():
    require_ember_bin()


class RuntimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ember_runtime_test_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def compile(self, module, inputs, name, backend=None, dynamic_shapes=None, ptd=False):
        ep = os.path.join(self.dir, name + ".ep")
        pte = os.path.join(self.dir, name + ".pte")
        ember.export(module.eval(), inputs, ep, dynamic_shapes=dynamic_shapes)
        cmd = [EMBER_BIN, "compile", ep, "-o", pte, "--quiet"]
        data = None
        if ptd:
            data = os.path.join(self.dir, name + ".ptd")
            cmd += ["--ptd", data]
        if backend:
            cmd += ["--backend", backend]
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return pte, data

    def assert_close(self, got, want):
        want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
        got = got.detach().numpy() if isinstance(got, torch.Tensor) else got
        self.assertEqual(got.dtype, want.dtype)
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    def test_matches_eager_on_every_flow(self):
        torch.manual_seed(0)
        model = ConvNet().eval()
        x = torch.randn(2, 3, 6, 6)
        with torch.no_grad():
            want = model(x)
        for backend in (None, "loopback", "cpu"):
            with self.subTest(backend=backend):
                pte, data = self.compile(model, (x,), f"conv_{backend}", backend=backend,
                                         ptd=backend is None)
                p = Program.load(pte, data=data)
                self.assertEqual(p.method_names, ["forward"])
                # numpy in, numpy out
                got = p.forward(x.numpy())
                self.assertEqual(len(got), 2)
                self.assertIsInstance(got[0], np.ndarray)
                for g, w in zip(got, want):
                    self.assert_close(g, w)
                # torch in, torch out; a second call gives the same
                for _ in range(2):
                    got = p.method("forward")(x)
                    self.assertIsInstance(got[0], torch.Tensor)
                    for g, w in zip(got, want):
                        self.assert_close(g, w)

    def test_metadata(self):
        pte, _ = self.compile(Mixed(), (torch.randn(2, 3), torch.tensor([1, 2])), "mixed")
        meta = Program.load(pte).method("forward").meta
        self.assertEqual(meta.name, "forward")
        self.assertEqual(meta.inputs[0], TensorMeta("float32", (2, 3), (0, 1), False, 24))
        self.assertEqual(meta.inputs[1].dtype, "int64")
        self.assertEqual([o.dtype for o in meta.outputs], ["float32", "int64"])
        self.assertGreater(meta.num_instructions, 0)

    def test_dtypes_and_noncontiguous_input(self):
        pte, _ = self.compile(Mixed(), (torch.randn(2, 3), torch.tensor([1, 2])), "mixed2")
        p = Program.load(pte)
        x = np.arange(6, dtype=np.float32).reshape(3, 2).T  # not C-contiguous
        idx = np.array([5, -7], dtype=np.int64)
        y, j = p.forward(x, idx)
        want_y, want_j = Mixed()(torch.from_numpy(x.copy()), torch.from_numpy(idx))
        self.assert_close(y, want_y)
        self.assert_close(j, want_j)
        self.assertEqual(x[0, 0], 0.0)  # inputs are not written

    def test_inputs_in_any_layout(self):
        """A channels-last input (ExecuTorch's exporter writes the example's dim order) takes the
        values in any dense layout: read in place where it is the method's, else laid out in the
        method's order; other layouts are copied first. A default-order input takes a
        channels-last tensor too."""
        from executorch.exir import to_edge
        torch.manual_seed(0)
        model = ChannelsLastNet().eval()
        x = torch.randn(2, 3, 5, 6)
        channels_last = x.to(memory_format=torch.channels_last)
        pte = os.path.join(self.dir, "channels_last.pte")
        with open(pte, "wb") as f:
            f.write(to_edge(torch.export.export(model, (channels_last,))).to_executorch().buffer)
        with torch.no_grad():
            want = model(x)
        nhwc = x.permute(0, 2, 3, 1).contiguous().numpy()
        wide = torch.zeros(2, 3, 5, 12)
        wide[..., ::2] = x
        arguments = {
            "channels-last tensor": channels_last,
            "contiguous tensor": x,
            "C-order array": x.numpy(),
            "NCHW view of an NHWC array": nhwc.transpose(0, 3, 1, 2),
            "strided slice": wide[..., ::2],
        }
        method = Program.load(pte).method("forward")
        self.assertEqual(method.meta.inputs[0].dim_order, (0, 2, 3, 1))
        for what, argument in arguments.items():
            with self.subTest(what):
                got = method(argument)[0]
                self.assert_close(got, want)
                self.assertTrue(np.array_equal(np.asarray(argument), x.numpy()))  # not written
        default, _ = self.compile(model, (x,), "default_order")
        got = Program.load(default).forward(channels_last)[0]
        self.assert_close(got, want)

    def test_dynamic_batch(self):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2).eval()
        batch = ember.Dim("batch", min=1, max=8)
        pte, _ = self.compile(model, (torch.randn(3, 4),), "dyn",
                              dynamic_shapes=[{0: batch}])
        p = Program.load(pte)
        meta = p.method("forward").meta
        self.assertTrue(meta.inputs[0].dynamic)
        self.assertEqual(meta.inputs[0].sizes, (8, 4))
        for n in (1, 5, 8):
            x = torch.randn(n, 4)
            with torch.no_grad():
                self.assert_close(p.forward(x)[0], model(x))
        with self.assertRaisesRegex(EmberRuntimeError, "input 0"):
            p.forward(torch.randn(9, 4))

    def test_arithmetic_with_a_number_read_from_an_input(self):
        # x * t.item() exports mul.Tensor whose `other` is a symbolic int, not a tensor: its
        # kernel is the Scalar overload (it compiled to mul.out and failed at load before).
        # (Bounded by torch._check: Ember's symbols are sizes, 0 or more; unbounded numbers read
        # from tensors are issue 43's.)
        class ByItem(torch.nn.Module):
            def forward(self, x, t):
                a, b = t[0].item(), t[1].item()
                torch._check(a >= 0)
                torch._check(a <= 100)
                torch._check(b >= 0)
                torch._check(b <= 100)
                return x * a + b, x - a

        x, t = torch.randn(2, 3), torch.tensor([3, 2])
        pte, _ = self.compile(ByItem(), (x, t), "by_item")
        p = Program.load(pte)
        for t in (torch.tensor([3, 2]), torch.tensor([0, 7]), torch.tensor([100, 100])):
            got = p.forward(x, t)
            for g, w in zip(got, ByItem()(x, t)):
                self.assert_close(g, w)

    def test_state_persists_across_calls(self):
        pte, _ = self.compile(Stateful(), (torch.ones(3),), "state")
        p = Program.load(pte)
        eager = Stateful()
        for k in range(3):
            x = torch.full((3,), float(k + 1))
            self.assert_close(p.forward(x)[0], eager(x))

    def test_bfloat16(self):
        model = torch.nn.Linear(4, 3).to(torch.bfloat16).eval()
        x = torch.randn(2, 4, dtype=torch.bfloat16)
        pte, _ = self.compile(model, (x,), "bf16")
        (got,) = Program.load(pte).forward(x)
        self.assertEqual(got.dtype, torch.bfloat16)
        with torch.no_grad():
            torch.testing.assert_close(got, model(x), rtol=2e-2, atol=2e-2)

    def test_errors_are_exceptions_with_the_runtimes_message(self):
        with self.assertRaisesRegex(EmberRuntimeError, "missing.pte"):
            Program.load(os.path.join(self.dir, "missing.pte"))
        bad = os.path.join(self.dir, "bad.pte")
        with open(bad, "wb") as f:
            f.write(b"\0" * 64)
        with self.assertRaisesRegex(EmberRuntimeError, "InvalidProgram"):
            Program.load(bad)
        pte, _ = self.compile(Mixed(), (torch.randn(2, 3), torch.tensor([1, 2])), "mixed3")
        p = Program.load(pte)
        with self.assertRaisesRegex(EmberRuntimeError, "NotFound"):
            p.method("backward")
        x, idx = np.zeros((2, 3), np.float32), np.zeros(2, np.int64)
        with self.assertRaisesRegex(EmberRuntimeError, "input"):
            p.forward(x)  # one input short
        with self.assertRaisesRegex(EmberRuntimeError, "input 0"):
            p.forward(x.astype(np.float64), idx)  # wrong dtype
        with self.assertRaisesRegex(EmberRuntimeError, "input 0"):
            p.forward(np.zeros((3, 2), np.float32), idx)  # wrong shape
        with self.assertRaisesRegex(EmberRuntimeError, "input 1: a str"):
            p.forward(x, "idx")
        with self.assertRaisesRegex(EmberRuntimeError, "load_mode"):
            Program.load(pte, load_mode="tape")
        # still usable after every error
        y, _ = p.forward(x, idx)
        self.assert_close(y, np.ones((2, 3), np.float32))

    def test_profile(self):
        torch.manual_seed(0)
        x = torch.randn(1, 3, 6, 6)
        pte, _ = self.compile(ConvNet(), (x,), "profiled", backend="cpu")
        method = Program.load(pte).method("forward")
        method(x)  # not recorded
        method.enable_profiling()
        method(x)
        method(x)
        prof = method.profile()
        self.assertEqual(prof.calls, 2)
        top = [e for e in prof.events if e["backend"] is None]
        self.assertEqual(len(top), 2 * method.meta.num_instructions)
        self.assertIn("cpu", {e["name"] for e in top})  # the delegate call
        self.assertTrue(all(e["start_ns"] <= e["end_ns"] for e in prof.events))
        self.assertIn("profile: 2 calls", prof.table())
        self.assertIn("delegate cpu", prof.table())
        trace = os.path.join(self.dir, "trace.json")
        prof.write_chrome_trace(trace)
        with open(trace) as f:
            self.assertEqual(len(json.load(f)["traceEvents"]), len(prof.events))
        prof.clear()
        self.assertEqual(method.profile().calls, 0)
        method.enable_profiling(False)
        method(x)
        with self.assertRaisesRegex(EmberRuntimeError, "profiling of method 'forward' is off"):
            method.profile()

    def test_import_needs_no_torch(self):
        code = "import sys, ember.runtime; print('torch' in sys.modules)"
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=os.environ.copy())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "False")


class CallKernelTest(unittest.TestCase):
    """ember.runtime.call_kernel: one registered kernel, called as a program calls it."""

    def test_outs_are_written_in_place(self):
        from ember.runtime import call_kernel
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.full((2, 3), 0.5, np.float32)
        out = np.zeros((2, 3), np.float32)
        call_kernel("aten::add.out", a, b, 2, out, out)
        np.testing.assert_array_equal(out, a + 2 * b)
        # A torch out that is not contiguous is written back through a copy.
        t = torch.zeros(3, 2).t()
        call_kernel("aten::add.out", torch.from_numpy(a), torch.from_numpy(b), 1, t, t)
        torch.testing.assert_close(t, torch.from_numpy(a + b), rtol=0, atol=0)
        # Lists: an int list (sum over dims 0 and 1, keepdim False, no dtype).
        s = np.zeros((), np.float32)
        call_kernel("aten::sum.IntList_out", a, [0, 1], False, None, s, s)
        self.assertEqual(float(s), 15.0)

    def test_errors(self):
        from ember.runtime import call_kernel
        a = np.ones(3, np.float32)
        out = np.zeros(3, np.float32)
        with self.assertRaisesRegex(EmberRuntimeError, "no kernel is registered"):
            call_kernel("aten::nonexistent.out", a, out, out)
        with self.assertRaisesRegex(EmberRuntimeError, "takes 5 arguments"):
            call_kernel("aten::add.out", a, a, out, out)
        with self.assertRaisesRegex(EmberRuntimeError, "argument 2"):
            call_kernel("aten::add.out", a, a, "x", out, out)
        small = np.zeros(2, np.float32)
        with self.assertRaises(EmberRuntimeError):
            call_kernel("aten::add.out", a, a, 1, small, small)


if __name__ == "__main__":
    unittest.main()
