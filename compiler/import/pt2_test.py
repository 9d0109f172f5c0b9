"""End-to-end tests of `ember compile X.pt2`: archives written by plain torch.export.save.

Each model is exported with torch.export.export (no Ember Python involved), saved as is (torch's
default training IR) and after ep.run_decompositions() (core ATen), compiled with the `ember` tool
alone, run with ember_e2e_runner and compared with eager PyTorch (rtol 1e-4, atol 1e-5). Then:
archives of another schema or archive version and a model with an op Ember lacks are refused,
naming the version or the op.

    .venv/bin/python pt2_test.py --ember EMBER --runner RUNNER --work DIR [--model M,...]

Needs the venv's torch and torchvision (scripts/setup); without them it fails.
"""

import argparse
import copy
import json
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))

import torch  # the venv's (scripts/setup): a missing torch fails the test, it never skips

sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
from checks import compare, execute, run  # noqa: E402  (the runner's protocol)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = torch.nn.functional.adaptive_avg_pool2d(y, 1)
        return self.fc(torch.flatten(y, 1))


class Counter(torch.nn.Module):
    """A buffer written in place on every call: state carries over between calls."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(2, 3))

    def forward(self, x):
        self.total.add_(x)
        return self.total * 2 + x


class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: self.lin(t).sin(), lambda t: t.cos() * 2, (x,))


class TrainingIrOps(torch.nn.Module):
    """Ops the training IR keeps that core ATen decomposes: clamp_min/max, mv,
    linalg_vector_norm, addcmul/addcdiv, eye, rsub, new_*, fill_ (Scalar and Tensor); and two
    ops both IRs keep, bucketize and adaptive_max_pool2d."""

    def forward(self, x, v, s, a):
        return (torch.clamp_min(x, 0.1), torch.clamp_max(x, v), torch.mv(x, v),
                torch.linalg.vector_norm(x, dim=1), torch.linalg.vector_norm(x, 1, dim=0),
                torch.linalg.vector_norm(x, float("inf")), torch.addcmul(x, x, v, value=0.5),
                torch.addcdiv(x, x, v.abs() + 1, value=2), x + torch.eye(3, 4), 1 - x,
                x.new_zeros(2, 3), x.new_ones(3), x.new_full((2,), 4.0), x.new_empty(2).fill_(s),
                x.clone().fill_(2.0), torch.bucketize(x, v.sort().values),
                torch.bucketize(x, v.sort().values, right=True, out_int32=True),
                *torch.nn.functional.adaptive_max_pool2d(a, (3, 2), return_indices=True))


class C5NoGrad(torch.nn.Module):
    """C5 test 3's snippet in a no_grad block: torch.export (grad enabled) writes it as
    wrap_with_set_grad_enabled, which Ember inlines."""

    def forward(self, x, y):
        with torch.no_grad():
            r = y @ x - y
        return r + 1


class C5AutocastOff(torch.nn.Module):
    """A disabled autocast region: wrap_with_autocast(..., enabled=False), its body's inputs
    named arg1_1, arg0_1 and given (y, x): bound by position."""

    def forward(self, x, y):
        with torch.autocast("cpu", enabled=False):
            r = y @ x - y
        return r


class C5Autocast(torch.nn.Module):
    """C5 test 3: the matmul runs in bfloat16 in eager. Saved as is, the region is refused (Ember
    does not apply autocast's casts itself); after run_decompositions the casts are in the graph."""

    def forward(self, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            r = y @ x - y
        return r


class Erfinv(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(x)


def bn_stats(module):
    """Non-trivial running statistics, so that eval-mode batch norm does something."""
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    return module.eval()


def models():
    """name -> (module factory, example inputs, dynamic_shapes, calls)."""
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=g)

    result = {
        "mlp": (MLP, (rand(2, 4),), None, [(rand(2, 4),)]),
        "convnet": (lambda: bn_stats(ConvNet()), (rand(2, 3, 8, 8),), None,
                    [(rand(2, 3, 8, 8),)]),
        "buffer": (Counter, (rand(2, 3),), None, [(rand(2, 3),) for _ in range(3)]),
        "dynamic": (MLP, (rand(4, 4),), ({0: torch.export.Dim("batch", min=1, max=16)},),
                    [(rand(n, 4),) for n in (1, 7, 16)]),
        "cond": (Cond, (rand(3),), None, [(torch.ones(3),), (-torch.ones(3),)]),
        "c5_no_grad": (C5NoGrad, (rand(4, 4), rand(4, 4)), None, [(rand(4, 4), rand(4, 4))]),
        "c5_autocast_off": (C5AutocastOff, (rand(4, 4), rand(4, 4)), None,
                            [(rand(4, 4), rand(4, 4))]),
        "c5_autocast": (C5Autocast, (rand(4, 4), rand(4, 4)), None, [(rand(4, 4), rand(4, 4))]),
        "training_ir_ops": (TrainingIrOps, (rand(3, 4), rand(4), torch.tensor(1.5),
                                            rand(1, 2, 7, 5)), None,
                            [(rand(3, 4), rand(4), torch.tensor(-0.5), rand(1, 2, 7, 5))]),
    }
    import torchvision
    result["resnet18"] = (lambda: bn_stats(torchvision.models.resnet18()),
                          (rand(1, 3, 64, 64),), None, [(rand(1, 3, 64, 64),)])
    return result


# Exported with grad enabled, as a user who does not wrap export in no_grad does: a no_grad block
# in forward then becomes a wrapper (under no_grad it changes nothing and leaves no trace).
EXPORT_WITH_GRAD = {"c5_no_grad"}

# The wrapper each model's training IR must hold (else the test would not test inlining).
WRAPPERS = {"c5_no_grad": "torch.ops.higher_order.wrap_with_set_grad_enabled",
            "c5_autocast_off": "torch.ops.higher_order.wrap_with_autocast",
            "c5_autocast": "torch.ops.higher_order.wrap_with_autocast"}


def save(module, example, dynamic, path, decompose, grad=False):
    with torch.set_grad_enabled(grad):
        ep = torch.export.export(module, example, dynamic_shapes=dynamic)
        if decompose:
            ep = ep.run_decompositions()
    torch.export.save(ep, path)


def model_json_text(pt2):
    with zipfile.ZipFile(pt2) as z:
        return next(z.read(n) for n in z.namelist() if n.endswith("/models/model.json")).decode()


# Training-IR forms Ember does not lower, refused with the decomposition hint (their core-ATen
# variant must pass): cond's branch calls aten::linear on a 1-D input; an enabled autocast
# region, whose casts only torch's decomposition writes.
REFUSED_TRAINING_IR = {"cond": ("aten::linear.default",),
                       "c5_autocast": ("node sub (torch.ops.higher_order.wrap_with_autocast)",
                                       "torch.autocast('cpu', bfloat16)")}


def check_model(args, name, spec):
    factory, example, dynamic, calls = spec
    torch.manual_seed(0)
    module = factory()
    # Eager, on a copy: in-place state (the Counter's buffer) advances call by call.
    eager = copy.deepcopy(module)
    expected = []
    with torch.no_grad():
        for inputs in calls:
            out = eager(*[x.clone() for x in inputs])
            expected.append(out if isinstance(out, (tuple, list)) else (out,))
    for variant, decompose in (("training_ir", False), ("core_aten", True)):
        tag = f"{name}_{variant}"
        pt2 = os.path.join(args.work, tag + ".pt2")
        pte = os.path.join(args.work, tag + ".pte")
        save(copy.deepcopy(module), example, dynamic, pt2, decompose, name in EXPORT_WITH_GRAD)
        if not decompose and name in WRAPPERS and WRAPPERS[name] not in model_json_text(pt2):
            raise AssertionError(f"{tag}: torch.export no longer writes {WRAPPERS[name]}")
        if not decompose and name in REFUSED_TRAINING_IR:
            expect_refused(args, pt2, *REFUSED_TRAINING_IR[name], "run_decompositions")
            continue
        r = run([args.ember, "compile", pt2, "-o", pte])
        if r.returncode != 0:
            raise AssertionError(f"{tag}: ember compile failed:\n{r.stdout}{r.stderr}")
        out = os.path.join(args.work, "out_" + tag)
        r = execute(args, pte, calls, out)
        if r.returncode != 0:
            raise AssertionError(f"{tag}: the runner failed:\n{r.stdout}{r.stderr}")
        compare(tag, expected, out)
        print(f"ok {tag}")


def rewrite(src, dst, edit):
    """Copies the archive, entries stored, with edit(name, bytes) -> bytes applied."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, edit(info.filename, zin.read(info.filename)))


def expect_refused(args, pt2, *needles):
    r = run([args.ember, "compile", pt2, "-o", pt2 + ".pte"])
    if r.returncode == 0:
        raise AssertionError(f"{pt2}: compiled, expected a refusal")
    for n in needles:
        if n not in r.stderr:
            raise AssertionError(f"{pt2}: the refusal does not say {n!r}:\n{r.stderr}")
    print(f"ok refused {os.path.basename(pt2)}: {r.stderr.strip().splitlines()[0][:160]}")


def check_refusals(args):
    base = os.path.join(args.work, "refuse_mlp.pt2")
    save(MLP(), (torch.randn(2, 4),), None, base, decompose=True)

    def schema_major(name, data):
        if name.endswith("/models/model.json"):
            doc = json.loads(data)
            doc["schema_version"]["major"] = 99
            return json.dumps(doc).encode()
        return data

    path = os.path.join(args.work, "refuse_schema.pt2")
    rewrite(base, path, schema_major)
    expect_refused(args, path, "schema version 99.", "schema major version 8")

    path = os.path.join(args.work, "refuse_archive.pt2")
    rewrite(base, path, lambda n, d: b"5" if n.endswith("/archive_version") else d)
    expect_refused(args, path, "archive version '5'", "archive version '0'")

    # An op without an Ember kernel, in both forms: named, with the decomposition hint.
    for decompose in (False, True):
        path = os.path.join(args.work, f"refuse_erfinv_{int(decompose)}.pt2")
        save(Erfinv(), (torch.rand(4) - 0.5,), None, path, decompose)
        expect_refused(args, path, "aten::erfinv", "run_decompositions")

    # Training IR's matmul is lowered for two matrices; a batched one is refused with the hint.
    path = os.path.join(args.work, "refuse_batched_matmul.pt2")
    save(C5AutocastOff(), (torch.randn(2, 3, 3), torch.randn(2, 3, 3)), None, path, False)
    expect_refused(args, path, "matmul is lowered for two matrices only", "run_decompositions")

    # A compressed entry is refused naming it.
    path = os.path.join(args.work, "refuse_deflated.pt2")
    with zipfile.ZipFile(base) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            method = zipfile.ZIP_DEFLATED if info.filename.endswith("model.json") else \
                zipfile.ZIP_STORED
            zout.writestr(info.filename, zin.read(info.filename), compress_type=method)
    expect_refused(args, path, "models/model.json' is compressed")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", default="all")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    all_models = models()
    names = list(all_models) + ["refusals"] if args.model == "all" else args.model.split(",")
    failures = []
    for name in names:
        try:
            if name == "refusals":
                check_refusals(args)
            else:
                check_model(args, name, all_models[name])
        except AssertionError as e:
            failures.append(f"{name}: {e}")
            print(f"FAIL {name}: {e}")
    if failures:
        print(f"{len(failures)} of {len(names)} failed")
        return 1
    print(f"all {len(names)} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
