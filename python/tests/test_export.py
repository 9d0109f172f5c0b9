"""Tests of ember.export against PyTorch's own view of each module (state_dict, eager outputs,
module attributes), not against hand-written expectations of the file."""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import torch

import ember

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.head = torch.nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class BufferUpdate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(2, 3))

    def forward(self, x):
        self.buf.add_(x)
        return x * 2


class BufferUpdateThroughView(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(2, 3))
        self.register_buffer("untouched", torch.ones(2))

    def forward(self, x):
        self.buf[:, 0].add_(x)
        return x + self.untouched


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.sigmoid(self.inner(x))


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class TiedBuffers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        shared = torch.arange(4.0)
        self.register_buffer("a", shared)
        self.register_buffer("b", shared)
        self.register_buffer("c", torch.arange(4.0))
        self.k = torch.full((4,), 3.0)  # a plain tensor attribute: a constant

    def forward(self, x):
        return x + self.a * 2 + self.b + self.c + self.k


def export_to_temp(testcase, module, inputs, **kwargs):
    directory = tempfile.mkdtemp(prefix="ember-export-test-")
    path = os.path.join(directory, "program.ep")
    testcase.addCleanup(lambda: (os.path.exists(path) and os.remove(path), os.rmdir(directory)))
    ember.export(module, inputs, path, **kwargs)
    return ember.read_exported_program(path) + (path,)


def nodes_of(doc):
    return doc["graph"]["nodes"]


def value_defs(doc):
    defs = {v["name"]: v for v in doc["graph"]["inputs"]}
    for n in nodes_of(doc):
        for v in n["outputs"]:
            defs[v["name"]] = v
    return defs


def static_shape(value):
    return [d for d in value["shape"]]


class FileLayoutTest(unittest.TestCase):
    def test_header_and_alignment(self):
        torch.manual_seed(0)
        header, doc, _, path = export_to_temp(self, MLP().eval(), (torch.randn(2, 4),))
        with open(path, "rb") as f:
            raw = f.read()
        self.assertEqual(raw[:8], ember.MAGIC)
        version, header_size, json_offset, json_size, data_offset, data_size = struct.unpack_from(
            "<IIQQQQ", raw, 8)
        self.assertEqual(version, ember.FORMAT_VERSION)
        self.assertEqual((header_size, json_offset), (64, 64))
        self.assertEqual(data_offset % 64, 0)
        self.assertEqual(len(raw), data_offset + data_size)
        json.loads(raw[json_offset:json_offset + json_size])
        for t in doc["tensors"]:
            self.assertEqual(t["offset"] % 64, 0, t["name"])
            self.assertLessEqual(t["offset"] + t["nbytes"], data_size)


class MLPTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = MLP().eval()
        self.x = torch.randn(2, 4)
        _, self.doc, self.tensors, _ = export_to_temp(self, self.model, (self.x,))

    def test_weights_match_state_dict(self):
        state = self.model.state_dict()
        self.assertEqual(sorted(self.tensors), sorted(state))
        for name, value in state.items():
            self.assertTrue(torch.equal(self.tensors[name], value), name)
            entry = next(t for t in self.doc["tensors"] if t["name"] == name)
            self.assertEqual(entry["dtype"], str(value.dtype).replace("torch.", ""))
            self.assertEqual(entry["shape"], list(value.shape))

    def test_signature_names_parameters_by_fqn(self):
        specs = self.doc["signature"]["inputs"]
        params = [s["target"] for s in specs if s["kind"] == "parameter"]
        self.assertEqual(params, [n for n, _ in self.model.named_parameters()])
        users = [s for s in specs if s["kind"] == "user_input"]
        self.assertEqual(len(users), 1)
        self.assertEqual(users[0]["value"], "x")  # forward's parameter name
        self.assertEqual(self.doc["signature"]["mutated_buffers"], [])

    def test_ops_are_aten_with_overloads_and_schemas(self):
        for n in nodes_of(self.doc):
            self.assertTrue(n["op"].startswith("aten::"), n["op"])
            key = f"{n['op']}.{n['overload']}"
            self.assertIn(key, self.doc["operators"])
            schema = getattr(getattr(torch.ops.aten, n["op"][6:]), n["overload"])._schema
            self.assertEqual([a["name"] for a in n["args"]], [a.name for a in schema.arguments])
        self.assertIn("aten::addmm", [n["op"] for n in nodes_of(self.doc)])

    def test_output_metadata_matches_eager(self):
        expected = self.model(self.x)
        (name,) = self.doc["graph"]["outputs"]
        out = value_defs(self.doc)[name]
        self.assertEqual(out["shape"], list(expected.shape))
        self.assertEqual(out["dtype"], "float32")
        self.assertEqual(out["strides"], list(expected.stride()))


class Moments(torch.nn.Module):
    def forward(self, x):
        s = torch.std(x, dim=1)
        sm = torch.std_mean(x, dim=0, correction=0)
        vm = torch.var_mean(x, dim=1, keepdim=True)
        return s, sm[0], sm[1], vm[0], vm[1]


class MomentsTest(unittest.TestCase):
    """std, std_mean and var_mean are exported as eager computes them, in float64: the default
    decomposition's float32 variance of 1e30 overflows where eager's std is 1e30."""

    def test_moments_in_double(self):
        x = torch.tensor([[0.0, 1e30, -1e30], [2.0, 3.0, 4.0]])
        _, doc, _, _ = export_to_temp(self, Moments(), (x,))
        ops = [n["op"] for n in nodes_of(doc)]
        self.assertNotIn("aten::std", ops)
        self.assertNotIn("aten::var_mean", ops)
        self.assertNotIn("aten::std_mean", ops)
        defs = value_defs(doc)
        for n in nodes_of(doc):
            if n["op"] in ("aten::var", "aten::mean", "aten::sqrt"):
                self.assertEqual(defs[n["outputs"][0]["name"]]["dtype"], "float64", n["op"])
        for name in doc["graph"]["outputs"]:
            self.assertEqual(defs[name]["dtype"], "float32")
        # The same decomposition, run by torch on the exported graph, gives eager's values.
        from ember._capture import _decompositions
        ep = torch.export.export(Moments(), (x,)).run_decompositions(_decompositions())
        for got, want in zip(ep.module()(x), Moments()(x)):
            self.assertTrue(torch.allclose(got, want, rtol=1e-6, equal_nan=True), (got, want))
        self.assertTrue(torch.isfinite(Moments()(x)[0]).all())


class ConvNetTest(unittest.TestCase):
    def test_convolution_arguments_match_the_module(self):
        torch.manual_seed(1)
        model = ConvNet().eval()
        x = torch.randn(1, 3, 16, 16)
        _, doc, tensors, _ = export_to_temp(self, model, (x,))
        convs = [n for n in nodes_of(doc) if n["op"] == "aten::convolution"]
        self.assertEqual(len(convs), 1)
        conv = convs[0]
        self.assertEqual(conv["overload"], "default")
        args = {a["name"]: a["value"] for a in conv["args"]}
        module = model.features[0]
        self.assertEqual(args["stride"], {"list": [{"int": s} for s in module.stride]})
        self.assertEqual(args["padding"], {"list": [{"int": p} for p in module.padding]})
        self.assertEqual(args["transposed"], {"bool": False})
        self.assertEqual(args["groups"], {"int": module.groups})
        self.assertEqual(conv["module_stack"][-1], {"path": "features.0", "type": "Conv2d"})
        state = model.state_dict()
        self.assertEqual(sorted(tensors), sorted(state))
        for name, value in state.items():
            self.assertTrue(torch.equal(tensors[name], value), name)
        (out,) = doc["graph"]["outputs"]
        self.assertEqual(value_defs(doc)[out]["shape"], list(model(x).shape))


class ResNet18Test(unittest.TestCase):
    def test_resnet18(self):
        try:
            import torchvision
        except ImportError:
            self.skipTest("torchvision is not installed")
        torch.manual_seed(0)
        model = torchvision.models.resnet18().eval()  # random weights: no downloads
        x = torch.randn(1, 3, 64, 64)
        _, doc, tensors, _ = export_to_temp(self, model, (x,))
        state = model.state_dict()
        self.assertEqual(sorted(tensors), sorted(state))
        for name, value in state.items():
            self.assertTrue(torch.equal(tensors[name], value), name)
            self.assertEqual(tensors[name].dtype, value.dtype, name)
        specs = doc["signature"]["inputs"]
        self.assertEqual(sorted(s["target"] for s in specs if s["kind"] == "buffer"),
                         sorted(n for n, _ in model.named_buffers()))
        ops = {n["op"] for n in nodes_of(doc)}
        self.assertIn("aten::convolution", ops)
        (out,) = doc["graph"]["outputs"]
        self.assertEqual(value_defs(doc)[out]["shape"], list(model(x).shape))
        paths = {f["path"] for n in nodes_of(doc) for f in n["module_stack"]}
        self.assertTrue({n for n, _ in model.named_modules() if n} >= paths)
        self.assertIn("layer1.0.conv1", paths)
        self.assertIn("fc", paths)


def mutation_of(testcase, doc, target):
    """The node whose result is the new value of buffer `target` (a buffer_mutation output)."""
    outputs = doc["signature"]["outputs"]
    writes = [o for o in outputs if o["kind"] == "buffer_mutation" and o.get("target") == target]
    testcase.assertEqual(len(writes), 1, outputs)
    producers = [n for n in nodes_of(doc) if writes[0]["value"] in
                 [v["name"] for v in n["outputs"]]]
    testcase.assertEqual(len(producers), 1, writes[0])
    return producers[0]


def input_value(doc, target):
    return next(s["value"] for s in doc["signature"]["inputs"] if s.get("target") == target)


class MutationTest(unittest.TestCase):
    # torch.export's decomposed graph is functional: an in-place write to a buffer becomes an
    # out-of-place op whose result is a buffer_mutation output, and no op writes in place.
    def assert_functional(self, doc):
        in_place = [n["op"] for n in nodes_of(doc) if n["op"].endswith("_")]
        self.assertEqual(in_place, [])

    def test_in_place_buffer_update(self):
        model = BufferUpdate().eval()
        _, doc, tensors, _ = export_to_temp(self, model, (torch.ones(2, 3),))
        self.assertEqual(doc["signature"]["mutated_buffers"], ["buf"])
        update = mutation_of(self, doc, "buf")
        self.assertEqual((update["op"], update["overload"]), ("aten::add", "Tensor"))
        args = {a["name"]: a["value"] for a in update["args"]}
        self.assertEqual(args["self"], {"value": input_value(doc, "buf")})
        self.assertEqual(args["other"], {"value": "x"})
        self.assert_functional(doc)
        # Tracing runs the program once: neither the stored value nor the module may change.
        self.assertTrue(torch.equal(tensors["buf"], torch.zeros(2, 3)))
        self.assertTrue(torch.equal(model.buf, torch.zeros(2, 3)))

    def test_in_place_update_through_a_view(self):
        model = BufferUpdateThroughView().eval()
        _, doc, tensors, _ = export_to_temp(self, model, (torch.ones(2),))
        self.assertEqual(doc["signature"]["mutated_buffers"], ["buf"])
        # The write to buf[:, 0] becomes a whole new buf: the view's update scattered into the old
        # value (select_scatter, which the core ATen decompositions turn into a where).
        update = mutation_of(self, doc, "buf")
        self.assertIn(update["op"], ("aten::select_scatter", "aten::slice_scatter",
                                     "aten::where", "aten::index_put"))
        buf = input_value(doc, "buf")
        self.assertIn({"value": buf}, [a["value"] for a in update["args"]])  # the untouched part
        ops = [n["op"] for n in nodes_of(doc)]
        self.assertIn("aten::select", ops)
        self.assertIn("aten::add", ops)
        self.assert_functional(doc)
        self.assertTrue(torch.equal(tensors["buf"], torch.zeros(2, 3)))
        self.assertTrue(torch.equal(model.buf, torch.zeros(2, 3)))
        self.assertTrue(torch.equal(model.untouched, torch.ones(2)))

    def test_write_to_user_input_is_recorded(self):
        class WritesInput(torch.nn.Module):
            def forward(self, x):
                x.mul_(2)
                return x + 1

        _, doc, _, _ = export_to_temp(self, WritesInput(), (torch.ones(3),))
        self.assertEqual(doc["signature"]["mutated_user_inputs"], ["x"])
        self.assertEqual(doc["signature"]["mutated_buffers"], [])
        writes = [o for o in doc["signature"]["outputs"] if o["kind"] == "user_input_mutation"]
        self.assertEqual([w["target"] for w in writes], ["x"])

    def test_write_to_a_star_args_input_names_its_value(self):
        class WritesArgs(torch.nn.Module):
            def forward(self, *args):
                args[1].mul_(2)
                return args[0] + args[1]

        doc, _ = ember.capture(WritesArgs(), (torch.ones(3), torch.ones(3)))
        users = [s["value"] for s in doc["signature"]["inputs"] if s["kind"] == "user_input"]
        writes = [o for o in doc["signature"]["outputs"] if o["kind"] == "user_input_mutation"]
        # The target names the second input as the document does (torch.export says args_1).
        self.assertEqual([w["target"] for w in writes], [users[1]])
        self.assertEqual(doc["signature"]["mutated_user_inputs"], [users[1]])

    def test_write_to_a_tied_buffer_marks_every_name(self):
        class TiedWrite(torch.nn.Module):
            def __init__(self):
                super().__init__()
                shared = torch.zeros(3)
                self.register_buffer("a", shared)
                self.register_buffer("b", shared)

            def forward(self, x):
                self.b.add_(x)
                return x + self.a

        # strict=True: torch 2.15's non-strict export fails on this module inside torch
        # ("expected compiled_fn to be GraphModule").
        doc, _ = ember.capture(TiedWrite(), (torch.ones(3),), strict=True)
        self.assertEqual(doc["signature"]["mutated_buffers"], ["a", "b"])
        self.assertEqual(mutation_of(self, doc, "b")["op"], "aten::add")

    def test_batch_norm_in_training_writes_running_statistics(self):
        # Eager training updates running_mean, running_var and num_batches_tracked: the exporter
        # must record exactly those as mutated, and store their values from before the run.
        model = torch.nn.Sequential(torch.nn.BatchNorm2d(3)).train()
        x = torch.randn(2, 3, 4, 4)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        _, doc, tensors, _ = export_to_temp(self, model, (x,))
        model(x)
        changed = sorted(k for k, v in model.state_dict().items() if not torch.equal(v, before[k]))
        self.assertEqual(doc["signature"]["mutated_buffers"], changed)
        for name, value in before.items():
            self.assertTrue(torch.equal(tensors[name], value), name)


class ConstantsTest(unittest.TestCase):
    def test_aliases_and_constants(self):
        model = TiedBuffers()
        x = torch.zeros(4)
        _, doc, tensors, _ = export_to_temp(self, model, (x,))
        entries = {t["name"]: t for t in doc["tensors"]}
        self.assertEqual(entries["a"]["offset"], entries["b"]["offset"])
        self.assertEqual(entries["b"]["alias_of"], "a")
        self.assertNotEqual(entries["a"]["offset"], entries["c"]["offset"])
        for name in ("a", "b", "c"):
            self.assertTrue(torch.equal(tensors[name], getattr(model, name)), name)
        constants = [s for s in doc["signature"]["inputs"] if s["kind"] == "constant"]
        self.assertEqual([c["target"] for c in constants], ["k"])
        self.assertTrue(torch.equal(tensors["k"], model.k))
        shapes = {v["name"]: v["shape"] for v in doc["graph"]["inputs"]}
        self.assertEqual(shapes[constants[0]["value"]], [4])


class DynamicShapeTest(unittest.TestCase):
    def test_dynamic_batch(self):
        torch.manual_seed(0)
        model = MLP().eval()
        _, doc, _, _ = export_to_temp(self, model, (torch.randn(3, 4),),
                                      dynamic_shapes=[{0: ember.Dim("batch", 1, 8)}])
        self.assertEqual(doc["symbols"], [{"name": "batch", "min": 1, "max": 8}])
        x = next(v for v in doc["graph"]["inputs"] if v["name"] == "x")
        self.assertEqual(x["shape"], [{"expr": "batch", "min": 1, "max": 8}, 4])
        (out,) = doc["graph"]["outputs"]
        self.assertEqual(value_defs(doc)[out]["shape"], [{"expr": "batch", "min": 1, "max": 8}, 3])
        # Weights stay static (contract C2).
        for v in doc["graph"]["inputs"]:
            if v["name"] != "x":
                self.assertTrue(all(isinstance(d, int) for d in v["shape"]), v)

    def test_example_size_one_stays_dynamic(self):
        # torch.export specializes example sizes 0 and 1; the exporter traces such a dim at a
        # size of its range so that it stays dynamic.
        _, doc, _, _ = export_to_temp(self, MLP(), (torch.randn(1, 4),),
                                      dynamic_shapes=[{0: ember.Dim("b", 1, 4)}])
        (out,) = doc["graph"]["outputs"]
        self.assertEqual(value_defs(doc)[out]["shape"], [{"expr": "b", "min": 1, "max": 4}, 3])

    def test_branch_on_a_dynamic_dim(self):
        class Branchy(torch.nn.Module):
            def forward(self, x):
                if x.shape[0] > 4:
                    return x * 2
                return x + 1

        # One trace cannot hold both branches: refused, saying which values of b break the
        # trace and which range holds, without torch's pointers to its logs and draft_export.
        with self.assertRaises(ember.ExportError) as refused:
            ember.capture(Branchy(), (torch.randn(6, 3),), [{0: ember.Dim("b", 1, 8)}])
        message = str(refused.exception)
        self.assertIn("Not all values of b", message)
        self.assertIn("Dim('b', min=5, max=8)", message)
        self.assertNotIn("TORCH_LOGS", message)
        self.assertNotIn("draft_export", message)
        # Within a range where the branch is fixed, it exports that branch.
        doc, _ = ember.capture(Branchy(), (torch.randn(6, 3),), [{0: ember.Dim("b", 5, 8)}])
        self.assertEqual([n["op"] for n in doc["graph"]["nodes"]], ["aten::mul"])

    def test_example_outside_range_is_refused(self):
        with self.assertRaisesRegex(ember.ExportError, "outside the declared range"):
            ember.capture(MLP(), (torch.randn(9, 4),), [{0: ember.Dim("b", 1, 8)}])


class StrictTest(unittest.TestCase):
    """Contract C11: strict (TorchDynamo) and non-strict capture give the same ops."""

    def assert_same_ops(self, make_model, x, expected_op):
        docs = {}
        for strict in (True, False):
            torch.manual_seed(0)
            model = make_model().eval()
            docs[strict], _ = ember.capture(model, (x,), strict=strict)
            stored = {t["name"] for t in docs[strict]["tensors"]}
            self.assertEqual(stored, set(model.state_dict()), strict)
        ops = {strict: [(n["op"], n["overload"]) for n in nodes_of(doc)]
               for strict, doc in docs.items()}
        self.assertIn(expected_op, [op for op, _ in ops[False]])
        self.assertEqual(ops[True], ops[False])

    def test_mlp(self):
        self.assert_same_ops(MLP, torch.randn(2, 4), "aten::addmm")

    def test_convnet(self):
        self.assert_same_ops(ConvNet, torch.randn(1, 3, 16, 16), "aten::convolution")

    def test_strict_must_be_a_bool(self):
        with self.assertRaisesRegex(ember.ExportError, "strict must be True or False"):
            ember.capture(MLP(), (torch.ones(2, 4),), strict="yes")


class ModulePathTest(unittest.TestCase):
    def test_module_paths_recorded(self):
        torch.manual_seed(0)
        model = Nested().eval()
        _, doc, _, _ = export_to_temp(self, model, (torch.randn(2, 3),))
        stacks = [n["module_stack"] for n in nodes_of(doc) if n["op"] == "aten::addmm"]
        self.assertEqual(stacks, [
            [{"path": "blocks.0", "type": "Block"}, {"path": "blocks.0.inner", "type": "Linear"}],
            [{"path": "blocks.1", "type": "Block"}, {"path": "blocks.1.inner", "type": "Linear"}],
        ])
        sigmoids = [n["module_stack"][-1]["path"] for n in nodes_of(doc)
                    if n["op"] == "aten::sigmoid"]
        self.assertEqual(sigmoids, ["blocks.0", "blocks.1"])


class ErrorTest(unittest.TestCase):
    def test_not_a_module(self):
        with self.assertRaisesRegex(ember.ExportError, "torch.nn.Module"):
            ember.capture(lambda x: x, (torch.ones(1),))

    def test_non_tensor_input(self):
        with self.assertRaisesRegex(ember.ExportError, "example input 1 is a int"):
            ember.capture(MLP(), (torch.ones(2, 4), 3))

    def test_non_tensor_output(self):
        class ReturnsNone(torch.nn.Module):
            def forward(self, x):
                return x + 1, None

        with self.assertRaisesRegex(ember.ExportError, "output 1"):
            ember.capture(ReturnsNone(), (torch.ones(2),))

    def test_write_to_constant_attribute(self):
        class WritesConstant(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.k = torch.zeros(2)

            def forward(self, x):
                self.k.add_(x)
                return x

        model = WritesConstant()
        with self.assertRaisesRegex(ember.ExportError, "register it as a buffer") as refused:
            ember.capture(model, (torch.ones(2),))
        self.assertIn("tensor attribute 'k'", str(refused.exception))
        self.assertTrue(torch.equal(model.k, torch.zeros(2)))

    def test_old_torch_is_refused(self):
        with mock.patch.object(torch, "__version__", "1.13.1"):
            with self.assertRaisesRegex(ember.ExportError, r"torch 1\.13\.1 is too old.*"
                                        r"scripts/requirements\.lock \(2\.15\).*scripts/setup"):
                ember.capture(MLP(), (torch.ones(2, 4),))

    def test_bad_dynamic_shapes(self):
        with self.assertRaisesRegex(ember.ExportError, "one entry per input"):
            ember.capture(MLP(), (torch.ones(3, 4),), {0: {0: ember.Dim("b", 1, 8)}})
        with self.assertRaisesRegex(ember.ExportError, "out of range"):
            ember.capture(MLP(), (torch.ones(3, 4),), [{5: ember.Dim("b", 1, 8)}])


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *args):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        return subprocess.run([sys.executable, "-m", "ember", *args], env=env,
                              capture_output=True, text=True)

    def test_export_from_a_file_factory(self):
        directory = tempfile.mkdtemp(prefix="ember-cli-test-")
        source = os.path.join(directory, "model.py")
        out = os.path.join(directory, "model.ep")
        with open(source, "w") as f:
            f.write("import torch\n"
                    "class Two(torch.nn.Module):\n"
                    "    def forward(self, a, b):\n"
                    "        return a @ b\n"
                    "def make():\n"
                    "    return Two()\n")
        try:
            result = self.run_cli("export", "--model", f"{source}:make", "--input-shape", "3,4",
                                  "--input-shape", "4,5", "--dynamic-dim", "0:0:2:8", "-o", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            _, doc, _ = ember.read_exported_program(out)
            users = [s for s in doc["signature"]["inputs"] if s["kind"] == "user_input"]
            self.assertEqual([u["value"] for u in users], ["a", "b"])
            self.assertEqual(doc["symbols"][0]["min"], 2)
        finally:
            for p in (source, out):
                if os.path.exists(p):
                    os.remove(p)
            os.rmdir(directory)

    def test_strict_flag(self):
        directory = tempfile.mkdtemp(prefix="ember-cli-test-")
        source = os.path.join(directory, "model.py")
        with open(source, "w") as f:
            f.write("import torch\n"
                    "def make():\n"
                    "    return torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())\n")
        outs = {flag: os.path.join(directory, f"model{flag}.ep") for flag in ("", "--strict")}
        try:
            ops = {}
            for flag, out in outs.items():
                result = self.run_cli("export", "--model", f"{source}:make", "--input-shape",
                                      "3,4", "-o", out, *([flag] if flag else []))
                self.assertEqual(result.returncode, 0, result.stderr)
                _, doc, _ = ember.read_exported_program(out)
                ops[flag] = [(n["op"], n["overload"]) for n in doc["graph"]["nodes"]]
            self.assertIn(("aten::addmm", "default"), ops[""])
            self.assertEqual(ops["--strict"], ops[""])
        finally:
            for p in [source] + list(outs.values()):
                if os.path.exists(p):
                    os.remove(p)
            os.rmdir(directory)

    def test_export_torchvision_model(self):
        try:
            import torchvision
        except ImportError:
            self.skipTest("torchvision is not installed")
        directory = tempfile.mkdtemp(prefix="ember-cli-test-")
        out = os.path.join(directory, "resnet18.ep")
        try:
            result = self.run_cli("export", "--model", "torchvision:resnet18", "--input-shape",
                                  "1,3,64,64", "--seed", "3", "-o", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            _, doc, tensors = ember.read_exported_program(out)
            torch.manual_seed(3)
            expected = torchvision.models.resnet18().state_dict()
            self.assertEqual(sorted(tensors), sorted(expected))
            self.assertTrue(torch.equal(tensors["fc.weight"], expected["fc.weight"]))
        finally:
            if os.path.exists(out):
                os.remove(out)
            os.rmdir(directory)

    def test_bad_model_spec_is_a_clear_error(self):
        result = self.run_cli("export", "--model", "torchvision:no_such_net", "--input-shape", "1",
                              "-o", os.devnull)
        self.assertEqual(result.returncode, 2)
        self.assertIn("no model 'no_such_net'", result.stderr)


if __name__ == "__main__":
    unittest.main()
