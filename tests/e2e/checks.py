"""The end-to-end tests' checks (see e2e_test.py): export, compile with `ember compile`, run with
ember_e2e_runner, compare with eager PyTorch and with ExecuTorch's runtime; and the checks of one
contract each (C11, C21, a BatchNorm in training, XNNPACK programs run).
"""

import copy
import json
import os
import re
import subprocess

import numpy as np
import torch

from models import EXECUTORCH_EXPORTER_DIFFERS, MLP, ConvNet, ir_models, models

SKIP = 77


# Per model: compile specs for the loopback runs, and whether the delegates must take every node.
DELEGATION = {
    "c16_buffer_cumsum": {"specs": ["exclude_ops=aten::cumsum"], "full": False},
    "c17_unused_input": {"full": True},
    "c18_where_index": {"full": True},
    "c19_shared_weight": {"full": True},
    "c20_clone_write": {"full": True},
}


def inspect_json(args, pte):
    import json
    r = run([args.ember, "inspect", pte, "--json"])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# What the cpu backend must take (C30) or leave on the portable path, by model.
CPU_EXPECT = {
    "c30_elu": {"portable_ops_absent": ["aten::elu"]},
    "c30_selu_celu": {"delegated_ops_absent": ["aten::elu"]},
    "convnet": {"delegates": True, "all_delegated": True},
    "resnet18": {"delegates": True, "all_delegated": True},
    "mobilenet_v2": {"delegates": True, "all_delegated": True},
    "convnext": {"delegates": True},
    "swin": {"delegates": True},
    # A dynamic batch is delegated (built again for each batch size a call brings); any other
    # dynamic size stays portable.
    "dynamic_mlp": {"delegates": True, "all_delegated": True},
    "dynamic_convnet": {"delegates": True, "all_delegated": True},
    "dynamic_flatten": {"delegates": True, "all_delegated": True},
    "dynamic_last_dim": {"no_delegates": True},
}


def check_cpu(args, name, pte):
    """The cpu backend: what it must take and what it must leave portable (C30)."""
    info = inspect_json(args, pte)
    method = info["methods"][0]
    delegates = method["delegates"]
    ops = [o["name"] for o in method["operators"]]
    delegated = [n["op"] for d in delegates for n in d["nodes"]]
    expect = CPU_EXPECT.get(name, {})
    if expect.get("delegates"):
        assert delegates, f"{name} (cpu): nothing was delegated"
    if expect.get("all_delegated"):  # but for the size a view reads (a prim op, no compute)
        compute = [o for o in ops if o != "aten::sym_size.int"]
        assert len(delegates) == 1 and not compute, f"{name} (cpu): portable ops remain: {ops}"
    if expect.get("no_delegates"):
        assert not delegates, f"{name} (cpu): delegated {delegated}"
    for op in expect.get("portable_ops_absent", []):
        assert delegates and not any(o.startswith(op) for o in ops), (name, ops)
    for op in expect.get("delegated_ops_absent", []):
        assert not any(o.startswith(op + ".") for o in delegated), (name, delegated)
        assert any(o.startswith(op) for o in ops), (name, ops)
    for d in delegates:
        assert d["backend"] == "cpu" and d["blob_bytes"] > 0 and d["nodes"], d
    print(f"   {name} (cpu): {len(delegates)} delegate(s), {len(delegated)} node(s) delegated, "
          f"{len(ops)} portable op(s)")


def check_delegated(args, name, mode, pte, ptd):
    """What a loopback compile must show in the file: delegates with their nodes, C16-C19."""
    info = inspect_json(args, pte)
    method = info["methods"][0]
    delegates = method["delegates"]
    assert delegates, f"{name} ({mode}): nothing was delegated"
    for d in delegates:
        assert d["backend"] == "loopback" and d["blob_bytes"] > 0 and d["nodes"], d
    extra = DELEGATION.get(name, {})
    if extra.get("full"):
        # Fully delegated: the program's only instructions are delegate calls.
        assert not method["operators"], f"{name}: portable ops remain: {method['operators']}"
    if name == "c16_buffer_cumsum":
        ops = [o["name"] for o in method["operators"]]
        assert any(o.startswith("aten::cumsum") for o in ops), ops
        assert all(n["op"] != "aten::cumsum.default" for d in delegates for n in d["nodes"])
    if name == "c19_shared_weight":
        # One stored copy of lin.weight, however many nodes read it (C19). Both linears read
        # its transpose, which folding computes once (`lin.weight@t`).
        if ptd:
            data = open(ptd, "rb").read()
            count = data.count(b"lin.weight")
            keys = [k["key"] for k in info["named_data"]]
            assert count == 1 and not keys, (count, keys)
        else:
            keys = [k["key"] for k in info["named_data"] if k["key"].startswith("lin.weight")]
            assert len(keys) == 1, info["named_data"]
    if name == "c19_shared_weight":
        # The delegate keeps pointers into its blob (C25): `ember run` with every load mode,
        # three executions each, gives eager's output.
        x = os.path.join(os.path.dirname(pte), "out_" + mode, "in0_0.npy")
        expected = np.load(os.path.join(os.path.dirname(pte), "out_" + mode, "call0_out0.npy"))
        for load_mode in ("file", "mmap", "mlock-ignore"):
            out_dir = os.path.join(os.path.dirname(pte), f"run_{mode}_{load_mode}")
            cmd = [args.ember, "run", pte, "--input", x, "--output-dir", out_dir, "--repeat", "2",
                   "--load-mode", load_mode] + (["--ptd", ptd] if ptd else [])
            r = run(cmd)
            assert r.returncode == 0, r.stderr
            got = np.load(os.path.join(out_dir, "output_0.npy"))
            assert np.array_equal(got, expected), (load_mode, got, expected)
    print(f"   {name} ({mode}): {len(delegates)} delegate(s), "
          f"{sum(len(d['nodes']) for d in delegates)} node(s) delegated, "
          f"{len(method['operators'])} portable op(s), {len(info['named_data'])} named data key(s)")


def check_ir_model(args, name):
    text, calls, fn = ir_models()[name]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, name + ".ir")
    with open(path, "w") as f:
        f.write(text)
    pte = os.path.join(work, name + ".pte")
    r = compile_model(args, path, pte)
    print(r.stdout, end="")
    if r.returncode != 0:
        raise AssertionError(f"{name}: ember compile failed: {r.stderr}")
    executorch_runs = check_executorch_claim(name, "pte", r.stdout)
    # `ember inspect` recomputes the memory numbers from the .pte (moves and jumps included).
    m = re.search(r"memory: planned (\d+) bytes, activations (\d+) bytes, lower bound (\d+)",
                  r.stdout)
    assert m is not None, r.stdout
    report = subprocess.run([args.ember, "inspect", pte, "--json"], capture_output=True,
                            text=True)
    assert report.returncode == 0, report.stderr
    mem = json.loads(report.stdout)["methods"][0]["memory"]
    got = (mem["planned_bytes"], mem["activation_bytes"], mem["lower_bound_bytes"])
    if got != tuple(int(g) for g in m.groups()):
        raise AssertionError(f"{name}: ember inspect says {got}, ember compile {m.groups()}")
    with torch.no_grad():
        expected = [fn(*[x.clone() for x in c]) for c in calls]
    out = os.path.join(work, "out")
    r = execute(args, pte, calls, out)
    if r.returncode != 0:
        raise AssertionError(f"{name}: run failed: {r.stderr}")
    compare(name, expected, out)
    if executorch_runs:
        check_executorch(args, name, pte, None, calls, out)
    else:
        check_executorch_refuses(name, pte, None)
    print(f"ok {name} ({'and on ExecuTorch' if executorch_runs else 'refused by ExecuTorch'})")
    return 0


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def compile_model(args, ep, pte, ptd=None, backend_args=()):
    cmd = [args.ember, "compile", ep, "-o", pte] + (["--ptd", ptd] if ptd else [])
    return run(cmd + list(backend_args))


def execute(args, pte, calls, out_dir, ptd=None):
    """Runs the calls in order on one loaded method; a run that succeeds must also have kept
    runtime rule 3 (check_heap)."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.runner, pte, "--out", out_dir] + (["--ptd", ptd] if ptd else [])
    for c, inputs in enumerate(calls):
        paths = []
        for i, t in enumerate(inputs):
            p = os.path.join(out_dir, f"in{c}_{i}.npy")
            np.save(p, t.numpy())
            paths.append(p)
        cmd += ["--call", ",".join(paths)]
    r = run(cmd)
    if r.returncode == 0:
        check_heap(pte, calls, out_dir)
    return r


def check_heap(pte, calls, out_dir):
    """Runtime rule 3: Method::execute makes no heap allocation. The runner counts each call's
    (heap.txt, "call C: N M B": N allocations, M more made inside oneDNN's own execute, which Ember
    cannot avoid; B 1 where every input has the sizes the method declares). The one exception is
    the cpu delegate's by design (docs/backends/cpu.md): a call at a dynamic batch size below the
    bound that no earlier call had builds its primitives for that size, on the heap. The cpu
    flow's runs are those into an out_cpu folder."""
    cpu = os.path.basename(out_dir).endswith("cpu")
    seen = set()
    with open(os.path.join(out_dir, "heap.txt")) as f:
        lines = f.read().split("\n")[:-1]
    if len(lines) != len(calls):
        raise AssertionError(f"{pte}: heap.txt has {len(lines)} lines for {len(calls)} calls")
    for c, line in enumerate(lines):
        allocations, _, at_bound = (int(v) for v in line.split(":")[1].split())
        shapes = tuple(tuple(t.shape) for t in calls[c])
        builds = cpu and not at_bound and shapes not in seen
        seen.add(shapes)
        if allocations and not builds:
            raise AssertionError(f"{pte} call {c}: {allocations} heap allocations inside "
                                 f"Method::execute (runtime rule 3: none); rerun the runner with "
                                 f"EMBER_HEAP_TRACE=1 for their stacks")


def compare(name, expected_calls, out_dir, first=0):
    """Each call's outputs from `first` on are the expected ones (rtol 1e-4, atol 1e-5)."""
    for c, expected in enumerate(expected_calls):
        for i, e in enumerate(expected):
            got = np.load(os.path.join(out_dir, f"call{c}_out{first + i}.npy"))
            e = e.detach().numpy()
            if got.shape != e.shape:
                raise AssertionError(f"{name} call {c} output {i}: shape {got.shape} != {e.shape}")
            if not np.allclose(got, e, rtol=1e-4, atol=1e-5):
                err = np.max(np.abs(got - e))
                raise AssertionError(f"{name} call {c} output {i}: max abs error {err}\n"
                                     f"got {got.ravel()[:8]}\nexpected {e.ravel()[:8]}")


def check_executorch_claim(name, mode, stdout):
    """`ember compile` says whether ExecuTorch's runtime runs the program. A portable program it
    runs unless an operator it lacks is named (the caller then checks that ExecuTorch refuses it,
    or runs it with Ember's outputs); a program with Ember's delegates (cpu, loopback) it cannot
    run, and the note names the delegate. Returns True when the claim is that ExecuTorch runs it."""
    runs = "runtime runs this program too" in stdout
    cannot = re.search(r"runtime cannot run this program \(Ember's can\): (.*)", stdout)
    if runs == (cannot is not None):
        raise AssertionError(f"{name} ({mode}): ember compile should say whether ExecuTorch runs "
                             f"the program, once: {stdout[-300:]}")
    delegates = re.search(r"^delegates: (\d+);", stdout, re.M)
    portable = mode in ("pte", "ptd") or (delegates is not None and delegates.group(1) == "0")
    if portable and cannot and "delegate backend" in cannot.group(1):
        raise AssertionError(f"{name} ({mode}): a portable program blamed on a delegate: "
                             f"{cannot.group(1)}")
    if not portable and (not cannot or "delegate backend" not in cannot.group(1)):
        raise AssertionError(f"{name} ({mode}): ember compile should name the delegate that "
                             f"ExecuTorch lacks: {stdout[-300:]}")
    return runs


def check_executorch_refuses(name, pte, ptd):
    """A program `ember compile` says ExecuTorch cannot run (an operator it lacks) is refused by
    ExecuTorch's runtime when its method loads."""
    from executorch.runtime import Runtime, Verification
    program = Runtime.get().load_program(pte, verification=Verification.InternalConsistency,
                                         data_path=ptd)
    try:
        program.load_method("forward")
    except Exception:  # ExecuTorch raises RuntimeError with OperatorMissing
        return
    raise AssertionError(f"{name}: ember compile said ExecuTorch lacks an operator, yet it loads")


def check_executorch(args, name, pte, ptd, calls, out_dir):
    """ExecuTorch's own runtime (pip executorch) runs the program Ember wrote: every call, in order
    on one loaded method (so state carries over), gives Ember's outputs within float32 rounding.
    The two runtimes' kernels sum in different orders, and through ResNet-18's 20 layers such
    differences grow to a few 1e-6 of the output's scale: the bound is 1e-5 of the largest
    output magnitude (the bench's check), 1e-5 relative per element."""
    from executorch.runtime import Runtime, Verification
    program = Runtime.get().load_program(pte, verification=Verification.InternalConsistency,
                                         data_path=ptd)
    method = program.load_method("forward")
    # ExecuTorch's Python binding copies an input's storage as it is, whatever the dim order the
    # program declares (which its API does not tell): give each input that layout.
    report = run([args.ember, "inspect", pte, "--json"])
    assert report.returncode == 0, report.stderr
    orders = [io.get("dim_order") for io in json.loads(report.stdout)["methods"][0]["inputs"]]

    def laid_out(t, order):
        if not isinstance(t, torch.Tensor) or not order or order == sorted(order):
            return t.contiguous() if isinstance(t, torch.Tensor) else t
        return t.permute(order).contiguous().permute(np.argsort(order).tolist())

    for c, inputs in enumerate(calls):
        outs = method.execute([laid_out(t.clone(), o) for t, o in zip(inputs, orders)])
        n = 0
        while os.path.exists(os.path.join(out_dir, f"call{c}_out{n}.npy")):
            n += 1
        if len(outs) != n:
            raise AssertionError(f"{name} on ExecuTorch, call {c}: {len(outs)} outputs, Ember {n}")
        for i, got in enumerate(outs):
            want = np.load(os.path.join(out_dir, f"call{c}_out{i}.npy"))
            got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
            same_shape = got.shape == want.shape and got.dtype == want.dtype
            scale = float(np.max(np.abs(want), initial=1.0)) if want.dtype.kind == "f" else 0
            if not same_shape or not (np.allclose(got, want, rtol=1e-5, atol=1e-5 * scale,
                                                  equal_nan=True)
                                      if got.dtype.kind == "f" else np.array_equal(got, want)):
                raise AssertionError(f"{name} on ExecuTorch, call {c} output {i}: "
                                     f"{got.dtype}{list(got.shape)} {got.ravel()[:6]} != Ember's "
                                     f"{want.dtype}{list(want.shape)} {want.ravel()[:6]}")


def check_executorch_exported(args, name, module, calls, dyn, work, expected):
    """Ember runs what ExecuTorch's own exporter writes (to_edge_transform_and_lower, then
    to_executorch; portable kernels): every call, in order, gives the outputs of ExecuTorch's
    runtime on the same program, and eager's. Mutated buffers are written with their initial
    values (InitializedMutableBufferPass), as eager starts from them. ExecuTorch's program returns
    the inputs it writes before the module's outputs."""
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
    torch_dyn = None
    if dyn:
        torch_dyn = tuple({d: torch.export.Dim(dim.name, min=dim.min, max=dim.max)
                           for d, dim in spec.items()} if spec else None for spec in dyn)
        torch_dyn += (None,) * (len(calls[0]) - len(torch_dyn))
    with torch.no_grad():
        ep = torch.export.export(copy.deepcopy(module), calls[0], dynamic_shapes=torch_dyn)
    config = ExecutorchBackendConfig(passes=[InitializedMutableBufferPass([""])])
    program = to_edge_transform_and_lower(ep).to_executorch(config)
    pte = os.path.join(work, f"{name}_executorch.pte")
    with open(pte, "wb") as f:
        f.write(program.buffer)
    out = os.path.join(work, "out_executorch")
    r = execute(args, pte, calls, out)
    if r.returncode != 0:
        raise AssertionError(f"{name}: Ember could not run ExecuTorch's program: {r.stderr}")
    written_inputs = sum(spec.kind.name == "USER_INPUT_MUTATION"
                         for spec in program.exported_program().graph_signature.output_specs)
    compare(name, expected, out, first=written_inputs)
    # ExecuTorch's exporter may use a kernel its own runtime lacks (sort.values in 1.5.1):
    # `ember inspect` says so, and then ExecuTorch's runtime must refuse the program.
    report = run([args.ember, "inspect", pte, "--json"])
    assert report.returncode == 0, report.stderr
    runs = json.loads(report.stdout)["methods"][0]["executorch"]["runs"]
    if runs:
        check_executorch(args, name, pte, None, calls, out)
    else:
        check_executorch_refuses(name, pte, None)
    return runs


def eager(module, calls):
    module = copy.deepcopy(module)
    results = []
    with torch.no_grad():
        for inputs in calls:
            out = module(*[t.clone() for t in inputs])
            results.append(out if isinstance(out, (tuple, list)) else (out,))
    return results


def check_model(args, name):
    import ember
    factory, calls, dynamic, required = models()[name]
    torch.manual_seed(0)
    module = factory().eval()
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    expected = eager(module, calls)
    ep = os.path.join(work, name + ".ep")
    dyn = None
    if dynamic == "batch":
        dyn = [{0: ember.Dim("batch", 1, 8)}]
    elif dynamic == "batch2":
        dyn = [{0: ember.Dim("batch", 2, 8)}]
    elif dynamic == "last":
        dyn = [{1: ember.Dim("n", 2, 16)}]
    ember.export(copy.deepcopy(module), calls[0], ep, dynamic_shapes=dyn)
    for mode in ("pte", "ptd", "loopback", "loopback_ptd", "cpu"):
        pte = os.path.join(work, f"{name}_{mode}.pte")
        ptd = os.path.join(work, f"{name}_{mode}.ptd") if mode.endswith("ptd") else None
        backend_args = []
        if mode == "cpu":
            backend_args = ["--backend", "cpu"]
        elif mode.startswith("loopback"):
            backend_args = ["--backend", "loopback"]
            for spec in DELEGATION.get(name, {}).get("specs", []):
                backend_args += ["--backend-spec", spec]
        r = compile_model(args, ep, pte, ptd, backend_args)
        print(r.stdout, end="")
        executorch_runs = r.returncode != 0 or check_executorch_claim(name, mode, r.stdout)
        if mode == "cpu" and "unknown backend 'cpu'" in r.stderr:
            print(f"   {name} (cpu): this build has no cpu backend (oneDNN not found)")
            continue
        if r.returncode != 0:
            missing = re.findall(r"distinct op\(s\):([^)]*)\)", r.stderr)
            if "cannot run" in r.stderr and not required:
                print(f"SKIPPED {name}: ops without kernels: {missing[0].strip() if missing else '?'}")
                print(r.stderr)
                return SKIP
            print(r.stderr)
            raise AssertionError(f"{name}: ember compile failed")
        r = execute(args, pte, calls, os.path.join(work, "out_" + mode), ptd)
        if r.returncode != 0:
            lacks = "not found" in r.stderr.lower() or "no kernel is registered" in r.stderr
            if lacks and not required:
                print(f"SKIPPED {name}: the runtime lacks an op: {r.stderr.strip()}")
                return SKIP
            raise AssertionError(f"{name} ({mode}): run failed: {r.stderr}")
        compare(name, expected, os.path.join(work, "out_" + mode))
        if mode == "pte":
            check_contiguous_inputs(args, name, ep, pte, calls[0])
        if mode in ("pte", "ptd") and executorch_runs:
            check_executorch(args, name, pte, ptd, calls, os.path.join(work, "out_" + mode))
        elif mode in ("pte", "ptd"):
            check_executorch_refuses(name, pte, ptd)
        if mode.startswith("loopback"):
            check_delegated(args, name, mode, pte, ptd)
        if mode == "cpu":
            check_cpu(args, name, pte)
        on_executorch = ", and on ExecuTorch" if executorch_runs else ", refused by ExecuTorch"
        print(f"ok {name} ({mode}{on_executorch if mode in ('pte', 'ptd') else ''})")
    if name in EXECUTORCH_EXPORTER_DIFFERS:
        print(f"ok {name} (ExecuTorch's exporter not checked: {EXECUTORCH_EXPORTER_DIFFERS[name]})")
    elif check_executorch_exported(args, name, module, calls, dyn, work, expected):
        print(f"ok {name} (ExecuTorch's exporter, run by Ember and by ExecuTorch)")
    else:
        print(f"ok {name} (ExecuTorch's exporter, run by Ember; ExecuTorch's runtime lacks a kernel)")
    return 0


def check_contiguous_inputs(args, name, ep, pte, example):
    """An input that is contiguous in the example is contiguous in the exported program and in
    the .pte, dynamic sizes (symbolic strides) included."""
    from ember import _format
    document = _format.read_exported_program(ep)[1]
    users = [s["value"] for s in document["signature"]["inputs"] if s["kind"] == "user_input"]
    exported = [v for v in document["graph"]["inputs"] if v["name"] in users]
    declared = inspect_json(args, pte)["methods"][0]["inputs"]
    for where, decls in ((ep, exported), (pte, declared)):
        for i, (x, decl) in enumerate(zip(example, decls)):
            contiguous = list(range(x.dim())) if isinstance(x, torch.Tensor) else None
            if contiguous and x.is_contiguous() and decl.get("dim_order", contiguous) != contiguous:
                raise AssertionError(f"{name}: input {i} is contiguous, {where} declares dim "
                                     f"order {decl['dim_order']}")


def check_wrong_ptd(args):
    """C21: a program loaded with another program's weights fails, naming the missing key."""
    import ember
    work = os.path.join(args.work, "wrong_ptd")
    os.makedirs(work, exist_ok=True)
    x = torch.randn(2, 4)
    for seed in (0, 1):
        torch.manual_seed(seed)
        m = torch.nn.Linear(4, 4).eval()
        ep = os.path.join(work, f"m{seed}.ep")
        ember.export(m, (x,), ep)
        r = compile_model(args, ep, os.path.join(work, f"m{seed}.pte"), os.path.join(work, "w.ptd"))
        assert r.returncode == 0, r.stderr
        expected = [(m(x),)]
    r = execute(args, os.path.join(work, "m0.pte"), [(x,)], os.path.join(work, "out0"),
                os.path.join(work, "w.ptd"))
    assert r.returncode != 0 and "is missing from named data" in r.stderr, r.stderr
    assert ":sha256:" in r.stderr, r.stderr
    r = execute(args, os.path.join(work, "m1.pte"), [(x,)], os.path.join(work, "out1"),
                os.path.join(work, "w.ptd"))
    assert r.returncode == 0, r.stderr
    compare("wrong_ptd", expected, os.path.join(work, "out1"))
    print("ok wrong_ptd: " + r.stderr.strip()[:0] + "foreign .ptd refused, own .ptd runs")
    return 0


def check_strict(args):
    """C11: a ConvNet (conv, batch norm, relu, pooling, linear) exported with strict=True and with
    strict=False compiles to programs with the same operators, both matching eager."""
    import ember
    work = os.path.join(args.work, "c11_strict")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    module = ConvNet().eval()
    calls = [(torch.randn(1, 3, 16, 16),)]
    expected = eager(module, calls)
    operators = {}
    for strict in (True, False):
        tag = "strict" if strict else "non_strict"
        ep, pte = os.path.join(work, tag + ".ep"), os.path.join(work, tag + ".pte")
        ember.export(copy.deepcopy(module), calls[0], ep, strict=strict)
        r = compile_model(args, ep, pte)
        assert r.returncode == 0, r.stderr
        r = execute(args, pte, calls, os.path.join(work, "out_" + tag))
        assert r.returncode == 0, r.stderr
        compare("c11_strict", expected, os.path.join(work, "out_" + tag))
        report = run([args.ember, "inspect", pte, "--json"])
        assert report.returncode == 0, report.stderr
        operators[tag] = json.loads(report.stdout)["methods"][0]["operators"]
    assert operators["strict"] == operators["non_strict"], operators
    print("ok c11_strict: the same operators and eager's outputs both ways")
    return 0


def check_batch_norm_in_training_refused(args):
    """A BatchNorm left in train() is refused at compile, naming the module and saying to call
    eval(); the same model in eval() compiles."""
    import ember
    work = os.path.join(args.work, "batch_norm_training")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    x = torch.randn(1, 3, 8, 8)
    for training in (True, False):
        ep = os.path.join(work, f"train_{training}.ep")
        ember.export(copy.deepcopy(model).train(training), (x,), ep)
        r = compile_model(args, ep, os.path.join(work, f"train_{training}.pte"))
        if training:
            assert r.returncode == 1, r.stdout
            assert "call model.eval() before exporting" in r.stderr, r.stderr
            assert "BatchNorm2d" in r.stderr, r.stderr
        else:
            assert r.returncode == 0, r.stderr
    print("ok batch_norm_training: refused in train(), with the eval() hint; compiles in eval()")
    return 0


def check_xnnpack(args):
    """A program ExecuTorch's exporter delegated to XNNPACK runs on Ember's XnnpackBackend (the
    cpu engine's second front door, backends/xnnpack/) and matches eager PyTorch; `ember inspect`
    lists the delegate's XNNPACK nodes and says Ember runs them."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    work = os.path.join(args.work, "xnnpack")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    model = MLP().eval()
    with torch.no_grad():
        ep = torch.export.export(model, (x,))
        expected = model(x)
    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    pte = os.path.join(work, "mlp_xnnpack.pte")
    with open(pte, "wb") as f:
        f.write(program.buffer)
    out = os.path.join(work, "out")
    r = execute(args, pte, [(x,)], out)
    assert r.returncode == 0, r.stderr
    compare("xnnpack", [(expected,)], out)
    report = run([args.ember, "inspect", pte])
    assert report.returncode == 0 and "XnnpackBackend" in report.stdout, report.stdout
    assert "XNNFullyConnected" in report.stdout and "Ember: runs it" in report.stdout, report.stdout
    delegate = inspect_json(args, pte)["methods"][0]["delegates"][0]
    assert delegate["xnnpack"]["ember"]["runs"], delegate
    assert {n["type"] for n in delegate["xnnpack"]["nodes"]} == {"XNNFullyConnected"}, delegate
    print("ok xnnpack: ExecuTorch's XNNPACK program runs and matches eager")
    return 0


def check_xnnpack_programs(args):
    """ExecuTorch's XNNPACK-delegated programs (xnnpack_programs.py's CI_SUBSET: fp32, named data
    in a .ptd, int8 static, int8 dynamic, 8da4w), exported by ExecuTorch's own flows: ExecuTorch's
    runtime must agree with eager PyTorch (the exporter flows hold), and Ember's runtime with
    ExecuTorch's, within xnnpack_programs.bound. While XNNPACK_IN_RUNTIME is False, Ember must
    refuse each program at load naming the backend, and `ember inspect` must still list the
    delegate; once True, every (model, flow) of EXPECTED_OK must run and agree, and a refusal of
    any other is reported."""
    import xnnpack_programs as xp
    work = os.path.join(args.work, "xnnpack_programs")
    key = xp.export_key()
    failures, lines = [], []
    for model, flow in xp.CI_SUBSET:
        row = xp.check_row(model, flow, work, args.runner, key)
        status = row["status"]
        claimed = xp.XNNPACK_IN_RUNTIME and (model, flow) in xp.EXPECTED_OK
        ember = f", Ember vs ExecuTorch {row['ember_vs_et']:.3g}" if "ember_vs_et" in row else ""
        lines.append(f"   {model} {flow}: {status} (ExecuTorch vs eager "
                     f"{row.get('et_vs_eager', float('nan')):.3g}{ember})")
        if "ExecuTorch vs eager" in status or not status.startswith(("ok", "mismatch", "Ember")):
            failures.append(f"{model} {flow}: {status}")  # the exporter flow itself is broken
        elif row.get("delegates") == 0:
            failures.append(f"{model} {flow}: XNNPACK took nothing; the subset must test it")
        elif status.startswith("mismatch") or "(drift" in status:
            failures.append(f"{model} {flow}: {status}")  # the subset holds the tight bounds
        elif not xp.XNNPACK_IN_RUNTIME:
            if status == "ok":
                failures.append(f"{model} {flow}: Ember ran an XNNPACK program, yet "
                                f"xnnpack_programs.XNNPACK_IN_RUNTIME is False: set it")
            elif xp.NOT_REGISTERED not in status:
                failures.append(f"{model} {flow}: refused without naming the backend: {status}")
        elif row.get("ember_refused") and claimed:
            failures.append(f"{model} {flow}: claimed in EXPECTED_OK, {status}")
    print("\n".join(lines))
    first = os.path.join(work, *xp.CI_SUBSET[0], "program.pte")
    report = run([args.ember, "inspect", first])
    if report.returncode != 0 or "XnnpackBackend" not in report.stdout:
        failures.append(f"ember inspect does not list the XnnpackBackend delegate: "
                        f"{report.stderr.strip() or report.stdout[-300:]}")
    if failures:
        raise AssertionError("\n".join(failures))
    print(f"ok xnnpack_programs: {len(xp.CI_SUBSET)} programs, ExecuTorch agrees with eager; "
          + ("Ember agrees with ExecuTorch" if xp.XNNPACK_IN_RUNTIME
             else "Ember refuses each, naming XnnpackBackend (XNNPACK_IN_RUNTIME is False)"))
    return 0
