"""Quantized programs end to end: PyTorch's PT2E flow with Ember's quantizer (and ExecuTorch's
XNNPACKQuantizer), exported, compiled with the `ember` command (EMBER_BIN) and run by Ember's
runtime, against the converted module run in eager PyTorch: the quantized reference. Also the
quantizer's contracts C31 (bfloat16 stays float) and C32 (a config applies only in its scope), and
torchao's quantized linears (8da4w, 8da8w, weight-only int4/int8) with contract C33 (the cpu
backend claims a quantized linear only whole, and never reads an integer weight as a float one).

The quantized reference computes each quantize/dequantize in float32, as Ember's portable kernels
do, so the portable flow is compared bit for bit. The cpu backend computes the same float ops
with its own kernels: its results may round to the neighbouring integer, so they are compared
within one quantization step of the output.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import numpy
import torch
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import ember
from ember.quantizer import EmberQuantizer, int8_config, int8_dynamic_config
from ember.runtime import Program

from tests.ember_bin import EMBER_BIN, require_ember_bin


_QDQ = ("quantized_decomposed.quantize", "quantized_decomposed.dequantize")


def setUpModule():
    require_ember_bin()


def quantize(module, inputs, quantizer, calibration=8):
    """The PT2E flow: capture, prepare, calibrate on random batches like `inputs`, convert."""
    torch.manual_seed(0)
    graph = torch.export.export(module.eval(), inputs).module()
    prepared = prepare_pt2e(graph, quantizer)
    for _ in range(calibration):
        prepared(*[torch.randn_like(x) if x.is_floating_point() else x for x in inputs])
    return convert_pt2e(prepared)


def qdq_nodes(gm):
    return [n for n in gm.graph.nodes
            if n.op == "call_function" and str(n.target).startswith(_QDQ)]


class ResidualNet(torch.nn.Module):
    """The int8 CNN shapes: conv+bn+relu, a residual add+relu, max and average pools, a linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.pool(y)
        y = torch.relu(self.conv2(y) + y)
        y = torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(y)


class InvertedResidualNet(torch.nn.Module):
    """MobileNetV2's int8 shapes: a 3x3 stem, an inverted residual block (1x1 expansion, 3x3
    depthwise, 1x1 projection, the residual add), a 1x1 expansion, average pool, a linear."""

    def __init__(self):
        super().__init__()
        c = 16
        self.stem = torch.nn.Conv2d(3, c, 3, stride=2, padding=1)
        self.expand = torch.nn.Conv2d(c, 4 * c, 1)
        self.dw = torch.nn.Conv2d(4 * c, 4 * c, 3, padding=1, groups=4 * c)
        self.project = torch.nn.Conv2d(4 * c, c, 1)
        self.last = torch.nn.Conv2d(c, 2 * c, 1)
        self.fc = torch.nn.Linear(2 * c, 10)

    def forward(self, x):
        y = torch.nn.functional.relu6(self.stem(x))
        z = torch.nn.functional.relu6(self.expand(y))
        z = torch.nn.functional.relu6(self.dw(z))
        y = self.project(z) + y
        y = torch.nn.functional.relu6(self.last(y))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


class AttentionNet(torch.nn.Module):
    """A transformer's attention block: q, k, v projections of a 3-D activation, the scores
    q @ k^T (both activations), softmax, the weighting of v, the output projection."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        a = torch.softmax((q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5, dim=-1)
        return self.o((a @ v).transpose(1, 2).reshape(b, t, d))


class ScopedCat(torch.nn.Module):
    class Encoder(torch.nn.Module):
        def forward(self, a, b):
            return torch.cat([a, b], 1)

    def __init__(self):
        super().__init__()
        self.enc = ScopedCat.Encoder()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, a, b):
        y = self.enc(a, b)
        return torch.cat([y, self.lin(y)], 1)


class QuantizationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ember_quantization_test_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_in_ember(self, module, inputs, name, backend=None):
        ep = os.path.join(self.dir, name + ".ep")
        pte = os.path.join(self.dir, name + ".pte")
        ember.export(module, inputs, ep)
        cmd = [EMBER_BIN, "compile", ep, "-o", pte, "--quiet"]
        if backend:
            cmd += ["--backend", backend]
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return Program.load(pte).forward(*inputs)

    def test_c31_bfloat16_stays_float(self):
        model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).to(torch.bfloat16)
        x = torch.randn(4, 16, dtype=torch.bfloat16)
        converted = quantize(model, (x,), EmberQuantizer().set_global(int8_config()))
        self.assertEqual(qdq_nodes(converted), [])
        expected = model.eval()(x)
        for backend in (None, "cpu"):
            (y,) = self.run_in_ember(converted, (x,), f"c31_{backend}", backend)
            self.assertEqual(y.dtype, torch.bfloat16)
            torch.testing.assert_close(y, expected, rtol=1.6e-2, atol=1e-2)

    def test_c31_float32_beside_bfloat16(self):
        # In one model, the float32 linear is quantized and the bfloat16 one is not.
        class Two(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(8, 8)
                self.b = torch.nn.Linear(8, 8).to(torch.bfloat16)

            def forward(self, x):
                return self.b(self.a(x).to(torch.bfloat16))

        converted = quantize(Two(), (torch.randn(2, 8),), EmberQuantizer().set_global(int8_config()))
        linears = [n for n in converted.graph.nodes if n.target == torch.ops.aten.linear.default]
        self.assertEqual(len(linears), 2)
        first, second = linears
        self.assertTrue(all(str(a.target).startswith(_QDQ) for a in first.all_input_nodes
                            if a.op == "call_function"))
        self.assertFalse(any(str(a.target).startswith(_QDQ) for a in second.all_input_nodes
                             if a.op == "call_function"))

    def test_c32_scope_is_honoured(self):
        a, b = torch.randn(2, 4), torch.randn(2, 4)
        converted = quantize(ScopedCat(), (a, b), EmberQuantizer().set_module_name("enc",
                                                                                  int8_config()))
        cats = [n for n in converted.graph.nodes if n.target == torch.ops.aten.cat.default]
        self.assertEqual(len(cats), 2)
        inner, outer = cats
        # The inner cat reads dequantized inputs and its output is quantized.
        self.assertTrue(all(str(x.target).startswith(_QDQ[1]) for x in inner.args[0]))
        self.assertTrue(any(str(u.target).startswith(_QDQ[0]) for u in inner.users))
        # The outer cat's output is not quantized, and the linear stays float32.
        self.assertFalse(any(str(u.target).startswith(_QDQ[0]) for u in outer.users))
        self.assertEqual(len(qdq_nodes(converted)), 6)  # a, b and the inner cat: q and dq each
        expected = converted(a, b)
        (y,) = self.run_in_ember(converted, (a, b), "c32")
        # The quantized half bit for bit; the float linear to float32 rounding (its sum order).
        torch.testing.assert_close(y[:, :8], expected[:, :8], rtol=0, atol=0)
        torch.testing.assert_close(y, expected)

    def test_module_type_scope_and_exclusion(self):
        a, b = torch.randn(2, 4), torch.randn(2, 4)
        q = (EmberQuantizer().set_global(int8_config())
             .set_module_type(torch.nn.Linear, None))
        converted = quantize(ScopedCat(), (a, b), q)
        linear = next(n for n in converted.graph.nodes if n.target == torch.ops.aten.linear.default)
        self.assertEqual(linear.args[1].op, "get_attr")  # a float weight, not dequantized
        # Its input is dequantized all the same: it is the output of the cat, which is in scope.
        self.assertTrue(str(linear.args[0].target).startswith(_QDQ[1]))

    def test_quantizer_rejects_bad_arguments(self):
        with self.assertRaises(ValueError):
            EmberQuantizer().set_module_name("", int8_config())
        with self.assertRaises(ValueError):
            int8_config(observer="kl")

    def test_int8_cnn_matches_the_quantized_reference(self):
        torch.manual_seed(1)
        model = ResidualNet()
        x = torch.randn(2, 3, 16, 16)
        converted = quantize(model, (x,), EmberQuantizer().set_global(int8_config()))
        self.assertGreater(len(qdq_nodes(converted)), 10)
        expected = converted(x)
        (portable,) = self.run_in_ember(converted, (x,), "cnn_portable")
        torch.testing.assert_close(portable, expected, rtol=0, atol=0)
        (cpu,) = self.run_in_ember(converted, (x,), "cnn_cpu", backend="cpu")
        step = self.output_scale(converted)
        self.assertLessEqual((cpu - expected).abs().max().item(), step * 1.0001)

    def test_int8_inverted_residual_matches_the_quantized_reference(self):
        # The cpu backend's int8 chain end to end (docs/backends/cpu.md "Quantized programs"):
        # the input's quantize to uint8, Ember's 1x1 and depthwise kernels, the residual add on
        # uint8. A tie rounded the other way in one layer can move the next ones a step, so the
        # logits are held to two output steps.
        torch.manual_seed(2)
        model = InvertedResidualNet()
        x = torch.randn(2, 3, 24, 24)
        converted = quantize(model, (x,), EmberQuantizer().set_global(int8_config()))
        # relu6 (torch.nn.functional.relu6 exports as aten.relu6) is fused into the convolution
        # before it: nothing quantizes the convolution's result before the clip.
        relu6 = [n for n in converted.graph.nodes if n.target == torch.ops.aten.relu6.default]
        self.assertEqual(len(relu6), 4)
        for n in relu6:
            self.assertEqual(n.args[0].target, torch.ops.aten.conv2d.default, n.args[0])
        expected = converted(x)
        (portable,) = self.run_in_ember(converted, (x,), "ir_portable")
        torch.testing.assert_close(portable, expected, rtol=0, atol=0)
        (cpu,) = self.run_in_ember(converted, (x,), "ir_cpu", backend="cpu")
        step = self.output_scale(converted)
        self.assertLessEqual((cpu - expected).abs().max().item(), 2 * step * 1.0001)

    def test_int8_attention_matches_the_quantized_reference(self):
        # Both operands of each matmul are quantized activations (the cpu backend computes such
        # matmuls in integers where the CPU has VNNI, CpuQuant.MatMulOfTwoQuantizedActivations*);
        # views and transposes keep their input's parameters, so nothing is requantized between.
        torch.manual_seed(3)
        x = torch.randn(2, 16, 32)
        converted = quantize(AttentionNet(), (x,), EmberQuantizer().set_global(int8_config()))
        views = {torch.ops.aten.view.default, torch.ops.aten.transpose.int,
                 torch.ops.aten.reshape.default}

        def source(node):
            while node.target in views:
                node = node.args[0]
            return node

        matmuls = [n for n in converted.graph.nodes if n.target == torch.ops.aten.matmul.default]
        self.assertEqual(len(matmuls), 2)
        for n in matmuls:
            for operand in n.args[:2]:
                self.assertTrue(str(source(operand).target).startswith(_QDQ[1]), operand)
        expected = converted(x)
        (portable,) = self.run_in_ember(converted, (x,), "attention_portable")
        torch.testing.assert_close(portable, expected, rtol=0, atol=0)
        (cpu,) = self.run_in_ember(converted, (x,), "attention_cpu", backend="cpu")
        # A tie rounded the other way moves a score a step, and the layers after it a few of
        # theirs.
        step = self.output_scale(converted)
        self.assertLessEqual((cpu - expected).abs().max().item(), 2 * step * 1.0001)
        # The profile names the integer matmuls: the four linears and both attention matmuls
        # where the CPU has VNNI (AVX-512 VNNI, uncapped), none elsewhere.
        x_path = os.path.join(self.dir, "attention_x.npy")
        numpy.save(x_path, x.numpy())
        r = subprocess.run([EMBER_BIN, "run", os.path.join(self.dir, "attention_cpu.pte"),
                            "--input", x_path, "--profile"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open("/proc/cpuinfo") as f:
            flags = set(next((l for l in f if l.startswith("flags")), "").split())
        vnni = ({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags and
                not os.environ.get("EMBER_CPU_ISA") and not os.environ.get("ONEDNN_MAX_CPU_ISA"))
        int8 = re.search(r"\ncpu: matmul int8 +(\d+) ", r.stdout)
        self.assertEqual(int(int8.group(1)) if int8 else 0, 6 if vnni else 0, r.stdout)

    def test_xnnpack_quantizer_programs_run(self):
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer, get_symmetric_quantization_config)
        torch.manual_seed(2)
        x = torch.randn(1, 3, 16, 16)
        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
        converted = quantize(ResidualNet(), (x,), q)
        (y,) = self.run_in_ember(converted, (x,), "xnnpack_portable")
        torch.testing.assert_close(y, converted(x), rtol=0, atol=0)

    def test_xnnpack_dynamic_quantization_runs_linears_in_integers(self):
        # XNNPACKQuantizer's is_dynamic config, the weights per channel.
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer, get_symmetric_quantization_config)
        torch.manual_seed(5)
        x = torch.randn(2, 6, 32)
        q = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
        self.check_dynamic_program(quantize(AttentionNet(), (x,), q), x, "xnnpack_dynamic")

    def test_ember_dynamic_config_runs_linears_in_integers(self):
        torch.manual_seed(5)
        x = torch.randn(2, 6, 32)
        q = EmberQuantizer().set_global(int8_dynamic_config())
        converted = quantize(AttentionNet(), (x,), q, calibration=1)
        # Only the linears: the attention's matmuls and softmax stay float, nothing static.
        static = [n for n in qdq_nodes(converted) if not str(n.target).endswith(".tensor")
                  and "per_channel" not in str(n.target)]
        self.assertEqual(static, [])
        self.check_dynamic_program(converted, x, "ember_dynamic")

    def test_dynamic_quantization_with_a_dynamic_batch(self):
        # The input's range is the call's rows only: a large batch first, then a small one whose
        # values are 100 times smaller (rows of the earlier call would widen its scale).
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        torch.manual_seed(6)
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 32)).eval()
        x = torch.randn(4, 64)
        graph = torch.export.export(
            model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", max=16)},)).module()
        prepared = prepare_pt2e(graph, EmberQuantizer().set_global(int8_dynamic_config()))
        prepared(x)
        converted = convert_pt2e(prepared)
        ep = os.path.join(self.dir, "dynamic_batch.ep")
        pte = os.path.join(self.dir, "dynamic_batch.pte")
        ember.export(converted, (x,), ep, dynamic_shapes=({0: (1, 16)},))
        r = subprocess.run([EMBER_BIN, "compile", ep, "-o", pte, "--backend", "cpu", "--verbose"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("portable %", r.stdout)
        program = Program.load(pte)
        for batch, magnitude in ((16, 100.0), (1, 1.0), (3, 10.0)):
            xi = torch.randn(batch, 64) * magnitude
            (y,) = program.forward(xi)
            torch.testing.assert_close(y, converted(xi), rtol=1e-5, atol=1e-5 * magnitude)

    def test_inspect_lists_each_quantization(self):
        # `ember inspect` lists every quantize/dequantize call: what it converts, its scale and
        # zero point (numbers; a constant tensor's count; or the value computed at run time in
        # the dynamic flow), axis and range.
        torch.manual_seed(7)
        x = torch.randn(1, 3, 16, 16)
        converted = quantize(ResidualNet(), (x,), EmberQuantizer().set_global(int8_config()))
        want = sorted((round(float(n.args[1]), 5), int(n.args[2]))
                      for n in converted.graph.nodes
                      if n.target == torch.ops.quantized_decomposed.quantize_per_tensor.default)
        self.run_in_ember(converted, (x,), "inspect_static")
        pte = os.path.join(self.dir, "inspect_static.pte")
        r = subprocess.run([EMBER_BIN, "inspect", pte, "--json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        calls = json.loads(r.stdout)["methods"][0]["quantization"]
        got = sorted((round(float(c["scale"]), 5), int(c["zero_point"])) for c in calls
                     if c["op"] == "quantize_per_tensor")
        self.assertEqual(got, want)
        channels = [c for c in calls if c["op"] == "dequantize_per_channel"]
        self.assertTrue(channels)
        for c in channels:
            self.assertEqual((c["from"], c["to"], c["axis"]), ("int8", "float32", 0), c)
            self.assertEqual(c["scale"], f"{c['shape'][0]} values", c)
            self.assertEqual((c["quant_min"], c["quant_max"]), (-127, 127), c)
        # The dynamic flow: the parameters are values the method computes.
        x = torch.randn(2, 6, 32)
        converted = quantize(AttentionNet(), (x,), EmberQuantizer().set_global(
            int8_dynamic_config()), calibration=1)
        self.run_in_ember(converted, (x,), "inspect_dynamic")
        pte = os.path.join(self.dir, "inspect_dynamic.pte")
        r = subprocess.run([EMBER_BIN, "inspect", pte], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stdout.splitlines() if re.search(r": (de)?quantize_per_tensor,", l)]
        self.assertEqual(len(lines), 4, r.stdout)  # two inputs: a quantize and a dequantize each
        for line in lines:
            self.assertRegex(line, r"scale v\d+ \(computed at run time\), "
                                   r"zero point v\d+ \(computed at run time\), "
                                   r"range \[-128, 127\]")

    def test_c31_c32_with_the_dynamic_config(self):
        # C31: a bfloat16 linear stays float. C32: a config for module "q" only quantizes q's
        # input, not k's or v's though they read the same value.
        model = torch.nn.Sequential(torch.nn.Linear(16, 8)).to(torch.bfloat16)
        x = torch.randn(4, 16, dtype=torch.bfloat16)
        converted = quantize(model, (x,), EmberQuantizer().set_global(int8_dynamic_config()))
        self.assertEqual(qdq_nodes(converted), [])
        x = torch.randn(2, 6, 32)
        converted = quantize(AttentionNet(), (x,),
                             EmberQuantizer().set_module_name("q", int8_dynamic_config()))
        linears = [n for n in converted.graph.nodes if n.target == torch.ops.aten.linear.default]
        self.assertEqual(len(linears), 4)
        quantized = [l for l in linears
                     if str(l.args[0].target).startswith("quantized_decomposed.dequantize")]
        self.assertEqual([str(l.args[1].target) for l in quantized],
                         ["quantized_decomposed.dequantize_per_channel.default"])
        self.assertEqual(len([n for n in converted.graph.nodes
                              if "choose_qparams" in str(n.target)]), 1)
        expected = converted(x)
        (y,) = self.run_in_ember(converted, (x,), "c32_dynamic", "cpu")
        torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)

    def check_dynamic_program(self, converted, x, name):
        """A PT2E dynamically quantized AttentionNet (each linear's input quantized per tensor
        when the program runs: choose_qparams.tensor, quantize_per_tensor.tensor and
        dequantize_per_tensor.tensor; q, k and v share one): the portable program and the cpu
        backend's, which claims each quantization with the linears that read it and computes
        both in integers, against the converted module."""
        chooses = [n for n in converted.graph.nodes if "choose_qparams" in str(n.target)]
        self.assertEqual(len(chooses), 2)  # q/k/v's input, the output projection's
        expected = converted(x)
        # The outputs are float (no requantize after the last linear): the float ops' sums in
        # another order than eager's give float32 rounding. Neither program moves an input of
        # the output projection across a rounding boundary with this seed (one that did would
        # change it a quantization step).
        (y,) = self.run_in_ember(converted, (x,), f"{name}_portable")
        torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
        # One op of the pattern excluded: the pattern goes portable whole, and the linears run in
        # float on its dequantized values (it used to fail the compile).
        pte, report = self.compile_cpu(converted, (x,), f"{name}_cpu_excluded",
                                       exclude="quantized_decomposed::choose_qparams")
        self.assertIn("claimed only with", report)
        self.assertNotRegex(report, r"\n  node %\S+ \(quantized_decomposed::\w+\.tensor\)")
        (y,) = Program.load(pte).forward(x)
        torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
        pte, report = self.compile_cpu(converted, (x,), f"{name}_cpu")
        self.assertNotIn("portable %", report)
        self.assertEqual(report.count("(quantized_decomposed::choose_qparams.tensor)"), 2, report)
        (y,) = Program.load(pte).forward(x)
        torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
        # Inputs holding inf or NaN: the converted module's NaN and inf, the same places.
        for fill in (float("inf"), float("-inf"), float("nan")):
            column = x.clone().index_fill_(2, torch.tensor([3]), fill)
            for bad in (column, torch.full_like(x, fill)):
                (y,) = Program.load(pte).forward(bad)
                torch.testing.assert_close(y, converted(bad), rtol=1e-5, atol=1e-5,
                                           equal_nan=True)
        inp = os.path.join(self.dir, f"{name}_in.npy")
        numpy.save(inp, x.numpy())
        r = subprocess.run([EMBER_BIN, "run", pte, "--input", inp, "--profile"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The four linears in integers: on oneDNN's u8 x s8 matmul where the CPU has AVX-512
        # VNNI, else on Ember's dot_gemm from AVX2 up.
        with open("/proc/cpuinfo") as f:
            flags = set(next((l for l in f if l.startswith("flags")), "").split())
        isa = os.environ.get("EMBER_CPU_ISA")
        vnni = ({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags and
                not isa and not os.environ.get("ONEDNN_MAX_CPU_ISA"))
        own_kernels = {"avx2", "fma"} <= flags and isa != "generic"
        steps = {}
        for name in ("matmul int8", "ember:dot_gemm matmul"):
            found = re.search(r"\ncpu: " + name + r" +(\d+) ", r.stdout)
            steps[name] = int(found.group(1)) if found else 0
        want = {"matmul int8": 4 if vnni else 0,
                "ember:dot_gemm matmul": 4 if own_kernels and not vnni else 0}
        self.assertEqual(steps, want, r.stdout)


    TORCHAO_CONFIGS = ("8da4w", "8da8w", "int8_weight_only", "int4_weight_only")

    @staticmethod
    def torchao_model(name):
        from torchao.quantization import (Int8DynamicActivationIntxWeightConfig,
                                          IntxWeightOnlyConfig, quantize_)
        from torchao.quantization.granularity import PerAxis, PerGroup
        config = {
            "8da4w": lambda: Int8DynamicActivationIntxWeightConfig(
                weight_dtype=torch.int4, weight_granularity=PerGroup(32)),
            "8da8w": lambda: Int8DynamicActivationIntxWeightConfig(
                weight_dtype=torch.int8, weight_granularity=PerAxis(0)),
            "int8_weight_only": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8,
                                                             granularity=PerAxis(0)),
            "int4_weight_only": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                             granularity=PerGroup(32)),
        }[name]()
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(64, 32)).eval()
        quantize_(model, config)
        return model

    def compile_cpu(self, module, inputs, name, exclude=None):
        """Exports and compiles with the cpu backend (`exclude`: its exclude_ops spec); (pte
        path, compile's --verbose report)."""
        ep = os.path.join(self.dir, name + ".ep")
        pte = os.path.join(self.dir, name + ".pte")
        ember.export(module, inputs, ep)
        cmd = [EMBER_BIN, "compile", ep, "-o", pte, "--backend", "cpu", "--verbose"]
        if exclude:
            cmd += ["--backend-spec", "exclude_ops=" + exclude]
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return pte, r.stdout

    def test_c33_quantized_linears_lower_whole_and_match_eager(self):
        # torchao's quantized weights (tensor subclasses) and its primitives export as ATen ops,
        # the weight's dequantize as quantized_decomposed::dequantize_per_channel_group: the
        # integer weight, its scales, zero points and group size in one op. The cpu backend
        # claims that op with the linear that reads it (an integer kernel, the weight kept
        # integer); the portable program folds it into float32 weights. Both match eager.
        x = torch.randn(4, 64)
        for name in self.TORCHAO_CONFIGS:
            model = self.torchao_model(name)
            expected = model(x)
            with self.subTest(flow=name):
                pte, report = self.compile_cpu(model, (x,), f"c33_{name}")
                # --verbose lists each partition's nodes after its "partition" line.
                partitions = report.split("\npartition ")[1:]
                claimed = [p for p in partitions if "(aten::addmm" in p and
                           "(quantized_decomposed::dequantize_per_channel_group" in p]
                self.assertEqual(len(claimed), 1, report)
                self.assertNotIn("portable: quantized_decomposed::dequantize_per_channel_group",
                                 report)
                # 8da: the activation's dequantize, (float(q) - float(zero point)) * scale, is
                # claimed with the linear, which computes it (8da4w in integers).
                self.assertEqual("(aten::sub" in claimed[0], name.startswith("8da"), report)
                (y,) = Program.load(pte).forward(x)
                # The same products, summed in another order than eager's: float32 rounding.
                torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
                # Rows holding inf or NaN: eager's NaN (inf * 0 in the dequantized row), not the
                # inf an integer sum times an infinite scale gives.
                bad = x.clone()
                bad[1, 3], bad[2], bad[3, 0] = float("inf"), float("inf"), float("nan")
                (y,) = Program.load(pte).forward(bad)
                torch.testing.assert_close(y, model(bad), rtol=1e-5, atol=1e-5, equal_nan=True)
                if name.startswith("8da"):  # one op of torchao's chain excluded: all portable
                    pte, report = self.compile_cpu(model, (x,), f"c33_{name}_excluded",
                                                   exclude="aten::amin")
                    self.assertIn("claimed only with", report)
                    (y,) = Program.load(pte).forward(x)
                    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
                (y,) = self.run_in_ember(model, (x,), f"c33_{name}_portable")
                torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)

    def test_quantized_embeddings_gather_quantized_rows(self):
        # torchao's weight-only embedding (4-bit by groups, 8-bit per row or by groups, symmetric
        # or with zero points) exports as embedding(dequantize_per_channel_group(...)); the
        # compiler gathers the rows from the integer table (embedding_4bit / embedding_byte, 4-bit
        # packed two a byte) instead of storing or computing the float32 table. The rows equal
        # eager's exactly: the same (q - zero point) * scale of each gathered value.
        from torchao.quantization import IntxWeightOnlyConfig, MappingType, quantize_
        from torchao.quantization.granularity import PerAxis, PerGroup

        cases = {
            "int4_group32": (torch.int4, PerGroup(32), MappingType.SYMMETRIC, "embedding_4bit"),
            "int4_group16_asym": (torch.int4, PerGroup(16), MappingType.ASYMMETRIC,
                                  "embedding_4bit"),
            "int8_row": (torch.int8, PerAxis(0), MappingType.SYMMETRIC, "embedding_byte"),
            "int8_group32_asym": (torch.int8, PerGroup(32), MappingType.ASYMMETRIC,
                                  "embedding_byte"),
        }
        tokens = torch.tensor([[3, 0, 99, 41, 3, 7]])
        for name, (dtype, granularity, mapping, kernel) in cases.items():
            torch.manual_seed(5)
            model = torch.nn.Sequential(torch.nn.Embedding(100, 64)).eval()
            quantize_(model, IntxWeightOnlyConfig(weight_dtype=dtype, granularity=granularity,
                                                  mapping_type=mapping),
                      filter_fn=lambda m, _: isinstance(m, torch.nn.Embedding))
            expected = model(tokens)
            for backend in (None, "cpu"):
                with self.subTest(case=name, backend=backend):
                    label = f"embedding_{name}_{backend}"
                    (y,) = self.run_in_ember(model, (tokens,), label, backend)
                    self.assertTrue(torch.equal(y, expected), (y - expected).abs().max())
                    pte = os.path.join(self.dir, label + ".pte")
                    r = subprocess.run([EMBER_BIN, "inspect", pte, "--json"],
                                       capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    method = json.loads(r.stdout)["methods"][0]
                    ops = [o["name"] for o in method["operators"]]
                    self.assertIn(f"quantized_decomposed::{kernel}.dtype_out", ops)
                    self.assertNotIn("aten::embedding.out", ops)
                    # the table is stored in its integers (a byte or half a byte a value) and a
                    # float32 scale (and zero point) a group, not in float32 (25600 bytes)
                    group = 64 if isinstance(granularity, PerAxis) else granularity.group_size
                    bound = 100 * 64 * (8 if dtype == torch.int8 else 4) // 8 + 100 * 64 // group * 8
                    self.assertLessEqual(method["constants"]["bytes"], bound, method["constants"])

    def test_c33_8da_linears_of_a_dynamic_batch_run_whole(self):
        # An LLM's linears take the sequence length as their dynamic batch (dim 0 of [S, hidden]).
        # torch.export writes the 8da activation's views with the batch's symbolic size
        # (view(q, [sym_size(x, 0), k])); the int8 ones stayed portable and split the chain
        # between two partitions, whose builder then refused an int8 input. Now the chain and
        # its linear are one step, built for each batch a call brings: the call equals the static
        # program of its size bit for bit, and torchao's eager model within float32 rounding.
        from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
        from torchao.quantization.granularity import PerGroup

        class Norm(torch.nn.Module):
            def __init__(self, d):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.rand(d) + 0.5)

            def forward(self, x):
                return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

        torch.manual_seed(8)
        model = torch.nn.Sequential(Norm(64), torch.nn.Linear(64, 64, bias=False),
                                    torch.nn.SiLU(), torch.nn.Linear(64, 32)).eval()
        quantize_(model, Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(32)))
        x = torch.randn(5, 64)
        ep = os.path.join(self.dir, "c33_dynamic_8da4w.ep")
        pte = os.path.join(self.dir, "c33_dynamic_8da4w.pte")
        ember.export(model, (x,), ep, dynamic_shapes=[{0: ember.Dim("b", 1, 64)}])
        r = subprocess.run([EMBER_BIN, "compile", ep, "-o", pte, "--backend", "cpu"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Only the symbolic size stays portable; one partition holds both chains and linears.
        portable = [l for l in r.stdout.splitlines() if l.strip().startswith("portable:")]
        self.assertEqual(len(portable), 1, r.stdout)
        self.assertIn("aten::sym_size.int", portable[0])
        self.assertIn("backend cpu: 1 partition", r.stdout)
        program = Program.load(pte)
        for batch in (7, 1, 64, 3):
            with self.subTest(batch=batch):
                xi = torch.randn(batch, 64)
                xi[0, 1] *= 20  # one row of a wider range than the others
                (y,) = program.forward(xi)
                torch.testing.assert_close(y, model(xi), rtol=1e-5, atol=1e-5)
                static_ep = os.path.join(self.dir, f"c33_static_8da4w_{batch}.ep")
                static_pte = os.path.join(self.dir, f"c33_static_8da4w_{batch}.pte")
                ember.export(model, (xi,), static_ep)
                r = subprocess.run([EMBER_BIN, "compile", static_ep, "-o", static_pte,
                                    "--backend", "cpu"], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                (want,) = Program.load(static_pte).forward(xi)
                self.assertTrue(torch.equal(y, want), (y - want).abs().max())

    def test_c33_broken_up_pattern_is_never_an_integer_weight_read_as_float(self):
        # The pattern broken up before partitioning: torchao's dequantize decomposed into plain
        # ATen arithmetic (cast, subtract the zero point, multiply by the scale) instead of the
        # grouped op. No backend claims an integer linear then; the compiler computes that
        # arithmetic exactly as eager does (it folds it on the constant weight), so the result is
        # eager's, never the integers read as floats. (The contract allows failing at export or
        # reassembling exactly; Ember's is the exact arithmetic.)
        from ember import _capture
        x = torch.randn(4, 64)
        original = _capture._group_dequantized_weights
        _capture._group_dequantized_weights = lambda ep: None
        try:
            for name in self.TORCHAO_CONFIGS:
                model = self.torchao_model(name)
                with self.subTest(flow=name):
                    pte, report = self.compile_cpu(model, (x,), f"c33_broken_{name}")
                    self.assertNotIn("dequantize_per_channel_group", report)
                    (y,) = Program.load(pte).forward(x)
                    torch.testing.assert_close(y, model(x), rtol=1e-5, atol=1e-5)
        finally:
            _capture._group_dequantized_weights = original

    def test_c33_float_linear_lowers_in_both_flows(self):
        from ember import _capture
        torch.manual_seed(4)
        model = torch.nn.Sequential(torch.nn.Linear(64, 32)).eval()
        x = torch.randn(4, 64)
        original = _capture._group_dequantized_weights
        for grouped in (True, False):
            if not grouped:
                _capture._group_dequantized_weights = lambda ep: None
            try:
                pte, report = self.compile_cpu(model, (x,), f"c33_fp32_{grouped}")
            finally:
                _capture._group_dequantized_weights = original
            self.assertIn("aten::addmm", report)
            self.assertNotIn("portable: aten::addmm", report)
            (y,) = Program.load(pte).forward(x)
            torch.testing.assert_close(y, model(x), rtol=1e-5, atol=1e-5)

    @staticmethod
    def output_scale(gm):
        """The scale of the last dequantize before the output."""
        out = next(n for n in gm.graph.nodes if n.op == "output")
        node = out.args[0][0]
        assert str(node.target).startswith(_QDQ[1]), node.target
        return float(node.args[1])


if __name__ == "__main__":
    unittest.main()
