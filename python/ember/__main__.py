"""The `ember` command line (the Python half): `python3 -m ember export ...`."""

import argparse
import importlib
import importlib.util
import os
import sys

from ._errors import ExportError

_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool")


def _load_model(spec):
    """`torchvision:resnet18` or `path/to/file.py:factory` -> an nn.Module."""
    source, sep, name = spec.rpartition(":")
    if not sep or not source or not name:
        raise ExportError(f"--model {spec!r}: expected torchvision:NAME or path/to/file.py:FACTORY")
    if source == "torchvision":
        try:
            import torchvision.models as models
        except ImportError as e:
            raise ExportError("--model torchvision:...: torchvision is not installed") from e
        factory = getattr(models, name, None)
        if factory is None or not callable(factory):
            raise ExportError(f"torchvision.models has no model {name!r}")
        # Random weights from the seed: no downloads.
        return factory()
    if not os.path.isfile(source):
        raise ExportError(f"--model {spec!r}: no file {source!r}")
    module_spec = importlib.util.spec_from_file_location("ember_user_model", source)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    factory = getattr(module, name, None)
    if factory is None or not callable(factory):
        raise ExportError(f"{source} has no callable {name!r}")
    return factory()


def _shape(text):
    try:
        dims = [int(d) for d in text.split(",") if d.strip() != ""]
    except ValueError:
        raise ExportError(f"--input-shape {text!r}: expected comma-separated integers") from None
    if any(d < 0 for d in dims):
        raise ExportError(f"--input-shape {text!r}: sizes must be >= 0")
    return dims


def _dynamic(texts, n_inputs):
    from ._export import Dim

    shapes = [None] * n_inputs
    for k, text in enumerate(texts):
        parts = text.split(":")
        try:
            numbers = [int(p) for p in parts]
        except ValueError:
            numbers = []
        if len(numbers) == 3:
            index, dim, hi = numbers
            lo = 1
        elif len(numbers) == 4:
            index, dim, lo, hi = numbers
        else:
            raise ExportError(f"--dynamic-dim {text!r}: expected INPUT:DIM:MAX or "
                              "INPUT:DIM:MIN:MAX")
        if not 0 <= index < n_inputs:
            raise ExportError(f"--dynamic-dim {text!r}: there is no input {index}")
        entry = shapes[index] or {}
        entry[dim] = Dim(None, lo, hi)
        shapes[index] = entry
    return shapes if texts else None


def _check_output(path):
    """Refuses an output path that cannot be written before tracing, which takes minutes."""
    if os.path.isdir(path):
        raise ExportError(f"-o {path!r} is a directory; give a file path such as model.ep")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ExportError(f"-o {path!r}: the directory {parent!r} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ExportError(f"-o {path!r}: not writable")


def _export(args):
    _check_output(args.output)
    import torch

    from ._export import export

    torch.manual_seed(args.seed)
    model = _load_model(args.model)
    if not isinstance(model, torch.nn.Module):
        raise ExportError(f"--model {args.model!r} returned a {type(model).__name__}, not a "
                          "torch.nn.Module")
    model.eval()
    shapes = [_shape(s) for s in (args.input_shape or [])]
    if not shapes:
        raise ExportError("give at least one --input-shape")
    dtype = getattr(torch, args.dtype)
    inputs = []
    for s in shapes:
        if dtype.is_floating_point:
            inputs.append(torch.randn(s, dtype=dtype))
        elif dtype == torch.bool:
            inputs.append(torch.randint(0, 2, s).bool())
        else:
            inputs.append(torch.randint(0, 10, s, dtype=dtype))
    dynamic_shapes = _dynamic(args.dynamic_dim, len(inputs))
    try:
        export(model, tuple(inputs), args.output, dynamic_shapes=dynamic_shapes,
               strict=args.strict)
    except OSError as e:  # the disk filled, or the path changed while tracing
        raise ExportError(f"cannot write {args.output!r}: {e.strerror or e}") from None
    print(f"wrote {args.output}")


def _export_llm(args):
    _check_output(args.output)
    if args.ptd:
        _check_output(args.ptd)
    from . import llm

    report = llm.export(args.model_dir, args.output, ptd=args.ptd, max_context=args.max_context,
                        precision=args.precision, backend=args.backend,
                        group_size=args.group_size, ember_bin=args.ember_bin,
                        verbose=args.verbose)
    if args.verbose:
        print(report, end="")
    print(f"wrote {args.output}" + (f" and {args.ptd}" if args.ptd else ""))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ember", description="Ember's exporter")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("export", help="export a PyTorch model to an exported-program file")
    p.add_argument("--model", required=True,
                   help="torchvision:NAME (random weights) or path/to/file.py:FACTORY")
    p.add_argument("--input-shape", action="append",
                   help="comma-separated sizes of one input; repeat for several inputs")
    p.add_argument("--dtype", default="float32", choices=_DTYPES, help="dtype of the inputs")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and inputs")
    p.add_argument("--dynamic-dim", action="append", default=[],
                   help="INPUT:DIM:MAX or INPUT:DIM:MIN:MAX, a bounded dynamic dim")
    p.add_argument("--strict", action="store_true",
                   help="capture with torch.export's strict mode (TorchDynamo), which refuses "
                        "more programs; the default is non-strict, as in torch.export")
    p.add_argument("-o", "--output", required=True, help="the exported-program file to write")
    q = commands.add_parser(
        "export-llm", help="export a Hugging Face causal LM (Llama, Qwen2, Mistral) to a .pte "
                           "that `ember generate` runs")
    q.add_argument("model_dir", help="what transformers' save_pretrained wrote (config.json, "
                                     "*.safetensors, tokenizer files)")
    q.add_argument("-o", "--output", required=True, help="the .pte program to write")
    q.add_argument("--ptd", help="write the weights to this .ptd instead of the .pte")
    q.add_argument("--max-context", type=int,
                   help="tokens the KV cache holds (default: max_position_embeddings, at most "
                        "2048)")
    from .llm import PRECISIONS

    q.add_argument("--precision", default="fp32", choices=list(PRECISIONS),
                   help="fp32; bf16 (the cpu backend's matmuls in bfloat16); 8da4w / 8da8w "
                        "(torchao: int8 dynamic activations, int4 weights in groups / int8 "
                        "weights per channel); int8-weight (int8 weights, float activations)")
    q.add_argument("--group-size", type=int, default=32, help="8da4w's weight group size")
    q.add_argument("--backend", default="cpu", choices=["cpu", "portable"],
                   help="delegate what the cpu engine runs (default), or portable kernels only")
    q.add_argument("--ember-bin", help="the `ember` compiler (default: EMBER_BIN, PATH, or this "
                                       "checkout's build/release/tools/ember)")
    q.add_argument("--verbose", action="store_true", help="print the compiler's report")
    args = parser.parse_args(argv)
    try:
        _export_llm(args) if args.command == "export-llm" else _export(args)
    except ExportError as e:
        print(f"ember {args.command}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
