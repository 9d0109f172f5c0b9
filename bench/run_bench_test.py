"""Smoke test of bench/run_bench.py's and bench/layer_report.py's parsing and report code, of
the Python workers' protocol and command lines, and of quant_bench.py's argument checks (no
timing, no models):

    .venv/bin/python bench/run_bench_test.py
"""

import argparse
import io
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layer_report as lr  # noqa: E402
import ort_worker  # noqa: E402
import run_bench as rb  # noqa: E402
import worker_loop  # noqa: E402


def ok(times, err=1e-6, runs=None):
    """A timed result; the times repeated to 20 runs (same median and minimum) unless `runs`."""
    times = times * (-(-20 // len(times))) if runs is None else times
    return {"status": "ok", "times": times, "err": (err, err)}


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.systems = ["Ember portable", "Ember cpu fp32", rb.XNNPACK, rb.EAGER, rb.ORT]
        self.rows = [("resnet18", 1), ("resnet18", 2)]
        why = "n/a (ember compile: error: unknown option --backend)"
        self.results = {
            ("resnet18", 1): {"Ember portable": ok([30.0, 10.0, 20.0]),
                              "Ember cpu fp32": {"status": why}, rb.XNNPACK: ok([7.0, 6.0]),
                              rb.EAGER: ok([8.0, 9.0]), rb.ORT: ok([5.0, 4.0, 6.0])},
            ("resnet18", 2): {"Ember portable": {"status": "wrong output (max err 1)",
                                                 "err": (1.0, 0.5)},
                              "Ember cpu fp32": {"status": why},
                              rb.XNNPACK: {"status": "n/a (ExecuTorch export: boom)"},
                              rb.EAGER: ok([4.0]), rb.ORT: {"status": "n/a (worker exited)"}},
        }

    def test_parse_times(self):
        self.assertEqual(rb.parse_times("times 1.5 2.25\n"), [1.5, 2.25])
        with self.assertRaises(ValueError):
            rb.parse_times("error: boom")
        with self.assertRaises(ValueError):
            rb.parse_times("")

    def test_table_medians_ratios_and_notes(self):
        t = rb.markdown_table(self.results, self.systems, self.rows).splitlines()
        self.assertEqual(t[0], "| model | threads | Ember portable | Ember cpu fp32 | "
                               "ExecuTorch XNNPACK | PyTorch eager | ONNX Runtime |")
        # medians 20, 6.5, 8.5, 5: ratios to ONNX Runtime 4.00, 1.30 and 1.70; one note for both
        # n/a cells of the same reason.
        self.assertEqual(t[2], "| resnet18 | 1 | 20.00 (4.00×) | n/a [1] | 6.50 (1.30×) | "
                               "8.50 (1.70×) | 5.00 (1.00×) |")
        # without an ONNX Runtime number there is no ratio; a wrong output is never a number.
        self.assertEqual(t[3], "| resnet18 | 2 | wrong [2] | n/a [1] | n/a [3] | 4.00 | n/a [4] |")
        self.assertIn("[1] n/a (ember compile: error: unknown option --backend)", t[5])
        self.assertIn("[2] wrong output (max err 1)", t[6])
        self.assertIn("[3] n/a (ExecuTorch export: boom)", t[7])
        self.assertIn("[4] n/a (worker exited)", t[8])

    def test_fastest_run_table(self):
        t = rb.markdown_table(self.results, self.systems, self.rows, stat=min).splitlines()
        self.assertEqual(t[2], "| resnet18 | 1 | 10.00 (2.50×) | n/a [1] | 6.00 (1.50×) | "
                               "8.00 (2.00×) | 4.00 (1.00×) |")

    def test_slow_systems_get_fewer_runs_and_a_note(self):
        self.assertEqual(rb.run_quota([10.0, 10.0, 10.0], 30, 60), 30)     # 0.3 s in all
        self.assertEqual(rb.run_quota([4000.0, 4000.0, 4000.0], 30, 60), 15)
        self.assertEqual(rb.run_quota([50000.0] * 3, 30, 60), 3)          # never below round 1
        results = {("bert", 1): {rb.EAGER: ok([50000.0] * 3, runs=3), rb.ORT: ok([100.0])}}
        t = rb.markdown_table(results, [rb.EAGER, rb.ORT], [("bert", 1)]).splitlines()
        self.assertEqual(t[2], "| bert | 1 | 50000.00 (500.00×) [1] | 100.00 (1.00×) |")
        self.assertIn("[1] 3 timed runs, fewer than 20", t[4])

    def test_ratios_and_errors(self):
        r = rb.ratios(self.results, self.systems, self.rows)
        self.assertEqual(r["Ember portable"], [4.0, None])
        self.assertEqual(r["Ember cpu fp32"], [None, None])
        self.assertAlmostEqual(r[rb.EAGER][0], 1.7)
        self.assertAlmostEqual(r[rb.XNNPACK][0], 1.3)
        self.assertIsNone(r[rb.XNNPACK][1])
        e = rb.error_table(self.results, self.systems, self.rows).splitlines()
        self.assertEqual(e[3], "| resnet18 | 2 | 1.00e+00 (5.0e-01) | – | – | "
                               "1.00e-06 (1.0e-06) | – |")

    def test_top1_check(self):
        ref = np.array([[0.1, 0.9, 0.3]], dtype=np.float32)
        self.assertTrue(rb.top1_agrees(ref + 0.05, ref))
        self.assertFalse(rb.top1_agrees(np.array([[0.9, 0.1, 0.3]], np.float32), ref))
        # the last row of a [batch, tokens, vocab] output
        seq = np.zeros((1, 2, 3), np.float32)
        seq[0, 1, 2] = 1
        self.assertTrue(rb.top1_agrees(seq, seq))
        results = {("resnet18", 1): {"Ember cpu bf16": {"status": "ok", "times": [1.0],
                                                        "err": (0.02, 0.01, True)},
                                     rb.ORT: {"status": "ok", "times": [1.0],
                                              "err": (1e-6, 1e-6, False)}}}
        e = rb.error_table(results, ["Ember cpu bf16", rb.ORT], [("resnet18", 1)]).splitlines()
        self.assertEqual(e[2], "| resnet18 | 1 | 2.00e-02 (1.0e-02) top-1 ✓ | "
                               "1.00e-06 (1.0e-06) top-1 ✗ |")

    def test_every_system_has_a_config(self):
        self.assertEqual(rb.SYSTEMS[-3:], [rb.XNNPACK, rb.EAGER, rb.ORT])
        for name in rb.SYSTEMS[-3:]:
            self.assertGreater(rb.PEER_TOL[name], 0, name)
        self.assertEqual(rb.PEER_EXPORT, {rb.XNNPACK: "executorch", rb.ORT: "onnx"})
        for name, c in rb.EMBER_CONFIGS.items():
            self.assertIsInstance(c["compile"], list, name)
            self.assertGreater(c["tol"], 0, name)
        self.assertGreaterEqual(rb.DEFAULT["rounds"] * rb.DEFAULT["per_round"], 20)
        self.assertGreaterEqual(rb.QUICK["rounds"] * rb.QUICK["per_round"], 20)

    def test_baseline_configs_use_the_other_build(self):
        with tempfile.TemporaryDirectory() as build:
            for sub, name in (("tools", "ember"), ("bench", "ember_bench_runner")):
                os.makedirs(os.path.join(build, sub))
                path = os.path.join(build, sub, name)
                open(path, "w").close()
                os.chmod(path, 0o755)
            saved = dict(rb.EMBER_CONFIGS)
            try:
                added = rb.add_baseline_configs(build, ["Ember cpu fp32", rb.ORT])
                self.assertEqual(added, ["Ember cpu fp32 (baseline)"])
                c = rb.EMBER_CONFIGS["Ember cpu fp32 (baseline)"]
                self.assertEqual(c["compile"], rb.EMBER_CONFIGS["Ember cpu fp32"]["compile"])
                self.assertEqual(c["ember"], os.path.join(build, "tools", "ember"))
                self.assertEqual(c["runner"], os.path.join(build, "bench", "ember_bench_runner"))
                self.assertNotIn("ember", rb.EMBER_CONFIGS["Ember cpu fp32"])
            finally:
                rb.EMBER_CONFIGS.clear()
                rb.EMBER_CONFIGS.update(saved)
            with self.assertRaises(SystemExit):
                rb.add_baseline_configs(os.path.join(build, "missing"), ["Ember cpu fp32"])

    def test_bf16_units_follow_the_cpu_flags(self):
        self.assertIn("AMX tiles", rb.bf16_units({"avx512_bf16", "amx_bf16"}))
        self.assertIn("no AMX", rb.bf16_units({"avx512f", "avx512_bf16"}))
        self.assertIn("refused", rb.bf16_units({"avx2", "fma"}))

    def test_avx2_ember_path_holds_ember_and_onednn_only(self):
        saved = {k: os.environ.get(k) for k in rb.AVX2_ENV}
        try:
            for k in rb.AVX2_ENV:
                os.environ.pop(k, None)
            self.assertEqual(rb.enter_isa_path(None, "native"), rb.ISA_PATHS["native"])
            self.assertFalse(any(k in os.environ for k in rb.AVX2_ENV))
            what = rb.enter_isa_path(None, "avx2-ember")
            self.assertIn("CPU's own", what)
            self.assertEqual({k: os.environ[k] for k in rb.AVX2_ENV}, rb.AVX2_ENV)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_isa_paths_have_pages_of_their_own(self):
        # --isa avx2 forces the AVX2 path on any CPU; auto takes what the CPU has.
        self.assertEqual(rb.isa_path("avx2"), "avx2")
        self.assertEqual(rb.isa_path("auto"),
                         "avx512" if "avx512f" in rb.cpu_flags() else "avx2")
        self.assertEqual(rb.doc_name("avx512"), "performance")
        self.assertEqual(rb.doc_name("avx2"), "performance-avx2")
        self.assertEqual(rb.AVX2_ENV, {"EMBER_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"})

    def test_avx2_path_holds_the_peers_to_avx2_too(self):
        # On an AVX-512 CPU every worker gets the CPUID shim; avx2_env itself checks that PyTorch
        # then reports the AVX2 capability, and refuses where the shim is missing or cannot work.
        flags = rb.cpu_flags()
        if "avx512f" not in flags:
            self.assertEqual(rb.avx2_env("/nonexistent.so"), rb.AVX2_ENV)
            return
        with self.assertRaisesRegex(RuntimeError, "missing"):
            rb.avx2_env("/nonexistent.so")
        shim = os.environ.get("EMBER_CPUID_SHIM")
        if not shim:
            if os.environ.get("CI") == "true":
                self.fail("EMBER_CPUID_SHIM not given: CI runs this test through ctest, which does")
            self.skipTest("EMBER_CPUID_SHIM not given (ctest gives it)")
        if "cpuid_fault" not in flags:
            with self.assertRaisesRegex(RuntimeError, "cannot be held to AVX2"):
                rb.avx2_env(shim)
            return
        env = rb.avx2_env(shim)
        self.assertEqual(env["LD_PRELOAD"].split()[-1], shim)
        self.assertEqual({k: env[k] for k in rb.AVX2_ENV}, rb.AVX2_ENV)


class WorkerTest(unittest.TestCase):
    """The Python workers' shared protocol loop and the driver's worker command lines."""

    def serve(self, commands, warmup=2, out_dir=""):
        calls = []

        def call():
            calls.append(len(calls))
            return [len(calls)]
        out = io.StringIO()
        rc = worker_loop.serve(call, lambda o: [np.array(o, dtype=np.float32)], "test 1.0",
                               out_dir, warmup, io.StringIO(commands), out)
        return rc, out.getvalue().splitlines(), calls

    def test_protocol(self):
        with tempfile.TemporaryDirectory() as d:
            rc, lines, calls = self.serve("run 3\nrun 1\nquit\nrun 5\n", out_dir=d)
            # the first call's outputs are what the driver checks
            np.testing.assert_array_equal(np.load(os.path.join(d, "output_0.npy")), [1.0])
        self.assertEqual(rc, 0)
        self.assertEqual(lines[:2], ["info test 1.0", "ready"])
        self.assertEqual(len(rb.parse_times(lines[2])), 3)
        self.assertEqual(len(rb.parse_times(lines[3])), 1)
        self.assertEqual(len(lines), 4)        # nothing after "quit"
        self.assertEqual(len(calls), 1 + 2 + 3 + 1)  # first output, warm-up, timed runs

    def test_unknown_command_is_an_error_line(self):
        rc, lines, _ = self.serve("run x\n", warmup=0)
        self.assertEqual(rc, 1)
        self.assertEqual(lines[-1], "error: unknown command 'run x'")
        with self.assertRaises(ValueError):  # what the driver makes of it: a failed system
            rb.parse_times(lines[-1])

    def test_commands(self):
        args = argparse.Namespace(runner="/b/ember_bench_runner")
        meta = {"inputs": [["tokens", "in_tokens.npy"], ["input_pos", "in_input_pos.npy"]]}
        art = {"Ember cpu fp32": ("/w/m/cpu.pte", "/w/m/cpu.ptd")}
        cmd = lambda s: rb.worker_command(args, s, "llama_decode", "/w/m", meta, art, 2, "/o", 3)
        tail = ["--out-dir", "/o", "--warmup", "3"]
        here = os.path.dirname(os.path.abspath(rb.__file__))
        self.assertEqual(cmd(rb.ORT), [sys.executable, os.path.join(here, "ort_worker.py"),
                                       "/w/m/model.onnx", "--threads", "2",
                                       "--input", "tokens=/w/m/in_tokens.npy",
                                       "--input", "input_pos=/w/m/in_input_pos.npy"] + tail)
        self.assertEqual(cmd(rb.XNNPACK), [sys.executable,
                                           os.path.join(here, "executorch_worker.py"),
                                           "/w/m/xnnpack.pte", "--threads", "2",
                                           "--input", "/w/m/in_tokens.npy",
                                           "--input", "/w/m/in_input_pos.npy"] + tail)
        self.assertEqual(cmd(rb.EAGER)[1:4], [os.path.join(here, "eager_worker.py"),
                                              "llama_decode", "--threads"])
        self.assertEqual(cmd("Ember cpu fp32"), ["/b/ember_bench_runner", "/w/m/cpu.pte",
                                                 "--threads", "2", "--ptd", "/w/m/cpu.ptd",
                                                 "--input", "/w/m/in_tokens.npy",
                                                 "--input", "/w/m/in_input_pos.npy"] + tail)

    def test_ort_session_options(self):
        import onnxruntime as ort
        so = ort_worker.session_options(2)
        self.assertEqual((so.intra_op_num_threads, so.inter_op_num_threads), (2, 1))
        self.assertEqual(so.execution_mode, ort.ExecutionMode.ORT_SEQUENTIAL)
        self.assertEqual(so.graph_optimization_level, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        self.assertEqual(ort_worker.parse_input("x=/a/b=c.npy"), ("x", "/a/b=c.npy"))
        with self.assertRaises(ValueError):
            ort_worker.parse_input("x.npy")


class LayerReportTest(unittest.TestCase):
    # Two executes of a program: a oneDNN convolution, Ember's fused block, Ember's matvec.
    VERBOSE = "\n".join([
        "onednn_verbose,info,cpu,runtime:OpenMP",
        "onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32 dst_f32,,,32x3x3x3,0.01",
    ] + 2 * [
        "onednn_verbose,exec,cpu,convolution,brgconv:avx512_core,forward_inference,src dst,"
        "attr-post-ops:eltwise_clip_v2:0:6 ,alg:convolution_direct,"
        "mb1_ic3oc32_ih224oh112kh3sh2dh0ph1_iw224ow112kw3sw2dw0pw1,0.2",
        "ember_verbose,exec,cpu,inverted_residual,ember:avx512,forward_inference,,,,"
        "mb1_ic16ec96oc24_ih112oh56_iw112ow56_s2_expand,0.5",
        "ember_verbose,exec,cpu,matmul,ember:matvec,forward_inference,,,,"
        "1x1280:1280x1000:1x1000,0.1",
    ])

    def test_parse_both_kinds_of_lines_and_split_executes(self):
        records = lr.parse_exec_lines(self.VERBOSE)
        self.assertEqual(len(records), 7)  # the init-time reorder and two executes of three
        self.assertEqual(records[2][:3], ("inverted_residual", "ember:avx512",
                                          "mb1_ic16ec96oc24_ih112oh56_iw112ow56_s2_expand"))
        runs = lr.split_executes(records, 2)
        self.assertEqual([r[0] for r in runs[0]], ["convolution", "inverted_residual", "matmul"])
        self.assertEqual(runs[0], runs[1])

    def test_flops(self):
        conv = "mb1_ic3oc32_ih224oh112kh3sh2dh0ph1_iw224ow112kw3sw2dw0pw1"
        self.assertEqual(lr.flops("convolution", conv), 2 * 32 * 112 * 112 * 3 * 9)
        self.assertEqual(lr.flops("matmul", "1x1280:1280x1000:1x1000"), 2 * 1280 * 1000)
        # expand 112x112x16 -> 96, depthwise 3x3 on 56x56x96, project 96 -> 24
        want = 2 * (112 * 112 * 16 * 96 + 56 * 56 * 96 * 9 + 56 * 56 * 96 * 24)
        self.assertEqual(lr.flops("inverted_residual",
                                  "mb1_ic16ec96oc24_ih112oh56_iw112ow56_s2_expand"), want)
        # without expansion: depthwise and projection only
        self.assertEqual(lr.flops("inverted_residual", "mb2_ic32ec32oc16_ih8oh8_iw8ow8_s1"),
                         2 * 2 * (64 * 32 * 9 + 64 * 32 * 16))
        # a stem (3x3 of a 3-channel image, stride 2, to 112x112x32) in place of the expansion
        self.assertEqual(lr.flops("inverted_residual",
                                  "mb1_ic3ec32oc16_ih112oh112_iw112ow112_s1_stem3x3s2"),
                         2 * 112 * 112 * 32 * (3 * 9 + 9 + 16))
        self.assertEqual(lr.flops("pooling_v2", "mb1ic1280_ih7oh1kh7sh7dh0ph0_iw7ow1kw7sw7dw0pw0"),
                         0)



class SyntheticTaskTest(unittest.TestCase):
    """bench/synthetic_task.py: the images quant_bench.py --weights trained measures on."""

    def test_samples_are_the_generators(self):
        import torch
        import synthetic_task as st
        x, y = st.sample(6, torch.Generator().manual_seed(4))
        x2, y2 = st.sample(6, torch.Generator().manual_seed(4))
        self.assertEqual(tuple(x.shape), (6, 3, st.SIZE, st.SIZE))
        self.assertTrue(torch.equal(x, x2) and torch.equal(y, y2))
        self.assertTrue(bool(((y >= 0) & (y < st.CLASSES)).all()))

    def test_a_small_network_learns_it_and_its_batch_norm_is_recomputed(self):
        import torch
        import synthetic_task as st
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 9, stride=4), torch.nn.BatchNorm2d(16),
                                  torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                                  torch.nn.Flatten(), torch.nn.Linear(256, st.CLASSES))
        st.train(net, steps=60)
        self.assertFalse(net.training)
        self.assertIsNone(net[1].momentum)  # the statistics' plain average, after training
        x, y = st.sample(64, torch.Generator().manual_seed(9))
        with torch.no_grad():
            accuracy = float((net(x).argmax(1) == y).float().mean())
        self.assertGreater(accuracy, 0.9)  # chance is 0.1; 1.0 when written


class QuantBenchArgumentsTest(unittest.TestCase):
    """bench/quant_bench.py refuses a model it does not measure, trained weights for a model the
    synthetic image task cannot train, and 7-bit weights for the dynamic flow, before building
    anything."""

    def quant_bench(self, *args):
        import subprocess
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quant_bench.py")
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)

    def test_refusals_name_the_way_out(self):
        r = self.quant_bench("--models", "bert_encoder", "--weights", "trained")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("bert_encoder is not trained on the synthetic image task", r.stderr)
        self.assertIn("--weights random", r.stderr)
        r = self.quant_bench("--models", "resnet18,llama_decode")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("llm_quant_bench.py", r.stderr)
        r = self.quant_bench("--models", "bert_encoder", "--dynamic", "--reduce-range")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--dynamic measures XNNPACKQuantizer's dynamic one", r.stderr)


if __name__ == "__main__":
    unittest.main()
