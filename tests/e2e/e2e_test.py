"""End-to-end tests of `ember compile`: export with ember.export, compile, run with Ember's runtime
and compare with eager PyTorch (fp32: rtol 1e-4), and the same programs on ExecuTorch's runtime.

Every model is exported once and compiled five times: portable with weights in the .pte, portable
with a .ptd, delegated to the reference backend (`--backend loopback`, its named data in the .pte),
delegated with a .ptd, and delegated to the cpu backend; each run is compared with eager. The two
portable programs also run on ExecuTorch's own runtime (pip executorch), which must give Ember's
outputs, and `ember compile`'s claim that ExecuTorch runs them is checked. Then the model is
exported with ExecuTorch's own exporter, and Ember's runtime must run that program with
ExecuTorch's and eager's outputs (docs/compatibility.md). `--model xnnpack_programs` runs a few of
ExecuTorch's XNNPACK-delegated programs (xnnpack_programs.py: fp32, int8 static and dynamic, 8da4w)
on ExecuTorch's runtime, Ember's and eager PyTorch. `--model delegation` runs the models of
the delegation contracts (C16-C20) the same way, with their extra checks.

    .venv/bin/python e2e_test.py --ember EMBER --runner RUNNER --python-dir DIR --work DIR [--model M]

Each group of models is one CTest test; every model must pass (a model that is not required may
exit 77, CTest's skip, when Ember lacks one of its ops; none is marked so today).

The models are in models.py, the checks in checks.py; this file is the driver.
"""

import argparse
import os
import sys

from checks import (DELEGATION, SKIP, check_batch_norm_in_training_refused, check_ir_model,
                    check_model, check_strict, check_wrong_ptd, check_xnnpack,
                    check_xnnpack_programs)
from models import ir_models, models


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--python-dir", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", default="all")
    args = p.parse_args()
    sys.path.insert(0, args.python_dir)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
    from export_speed import cache_cia_ops
    cache_cia_ops()
    # One process runs a comma-separated list of models: importing torch once per test process
    # saves seconds per model (CI runs on two cores).
    names = []
    for m in args.model.split(","):
        if m == "all":
            names += list(models()) + ["wrong_ptd", "xnnpack", "xnnpack_programs",
                                       "c11_strict", "batch_norm_training"]
            names += list(ir_models())
        elif m == "delegation":
            names += list(DELEGATION)
        elif m == "c30":
            names += ["c30_elu", "c30_selu_celu"]
        else:
            names.append(m)
    failed, skipped = [], []
    for name in names:
        try:
            if name == "wrong_ptd":
                rc = check_wrong_ptd(args)
            elif name == "xnnpack":
                rc = check_xnnpack(args)
            elif name == "xnnpack_programs":
                rc = check_xnnpack_programs(args)
            elif name == "c11_strict":
                rc = check_strict(args)
            elif name == "batch_norm_training":
                rc = check_batch_norm_in_training_refused(args)
            elif name in ir_models():
                rc = check_ir_model(args, name)
            else:
                rc = check_model(args, name)
        except AssertionError as e:  # report it, go on with the other models
            print(f"FAILED {name}: {e}")
            failed.append(name)
            continue
        if rc == SKIP:
            skipped.append(name)
    print(f"{len(names) - len(failed) - len(skipped)} passed, {len(failed)} failed "
          f"({', '.join(failed)}), {len(skipped)} skipped ({', '.join(skipped)})")
    if failed:
        return 1
    # CTest shows a skip only when every model of the process skipped.
    return SKIP if len(skipped) == len(names) else 0


if __name__ == "__main__":
    sys.exit(main())
