"""Speed for the test drivers that export many programs in one process (tests/e2e, the
differential fuzzer of tests/fuzz_models): import it and call cache_cia_ops() once.

torch.export lists the CompositeImplicitAutograd ops again on every export and every
run_decompositions (a walk of the whole dispatcher: about a third of the time of exporting a
small program). The list changes only when an op is registered (importing ExecuTorch's exporter
registers some), so it is kept, and walked again when the dispatcher's op count changes.
"""


def cache_cia_ops():
    try:
        import torch
        import torch._export.utils as utils
        import torch.export.decomp_utils as decomp_utils
        import torch.export.exported_program as exported_program
    except ImportError:
        return
    real = getattr(utils, "_collect_all_valid_cia_ops", None)
    count = getattr(torch._C, "_dispatch_get_all_op_names", None)
    if real is None or count is None:
        return
    cached = {}

    def once():
        n = len(count())
        if cached.get("ops") != n:
            cached["ops"], cached["cia"] = n, real()
        return set(cached["cia"])  # a copy: callers may change theirs

    for mod in (utils, decomp_utils, exported_program):
        if hasattr(mod, "_collect_all_valid_cia_ops"):
            mod._collect_all_valid_cia_ops = once
