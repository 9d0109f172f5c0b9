# Writes deconv_reference.txt: PyTorch's conv_transpose2d (ATen, float32) of a few inputs, the
# independent reference of runtime_test.cc's ConvTranspose2d tests (XNNPACK's Deconvolution2d
# translated onto the cpu engine):
#   /work/main/.venv/bin/python backends/xnnpack/testdata/deconv_reference.py \
#       backends/xnnpack/testdata/deconv_reference.txt
# Each case is a line "case NAME" and its parameters, then the lines x (NCHW), w (PyTorch's
# [in, out / groups, kh, kw]), b (empty: no bias) and y (NCHW, after the relu where relu is 1),
# every float written with 9 significant digits (a float32 read back exactly).
import sys
import numpy as np
import torch

CASES = [
    # name, N, C, H, W, O, kh, kw, groups, stride, padding, output_padding, dilation, bias, relu
    ("groups1", 1, 3, 4, 5, 4, 3, 3, 1, (2, 2), (1, 1), (1, 1), (1, 1), True, True),
    ("groups2", 2, 4, 3, 4, 6, 3, 2, 2, (2, 3), (1, 0), (1, 2), (1, 2), True, False),
    ("nobias", 1, 2, 2, 2, 3, 2, 2, 1, (1, 1), (0, 0), (0, 0), (1, 1), False, False),
]


def text(a):
    return " ".join(format(np.float32(v), ".9g") for v in a.reshape(-1))


def main(path):
    g = torch.Generator().manual_seed(0)
    lines = []
    for (name, n, c, h, w, o, kh, kw, groups, stride, padding, output_padding, dilation, bias,
         relu) in CASES:
        x = torch.randn(n, c, h, w, generator=g)
        wt = torch.randn(c, o // groups, kh, kw, generator=g)
        b = torch.randn(o, generator=g) if bias else None
        y = torch.nn.functional.conv_transpose2d(x, wt, b, stride, padding, output_padding,
                                                 groups, dilation)
        if relu:
            y = torch.relu(y)
        lines.append(" ".join(str(v) for v in (
            "case", name, n, c, h, w, o, kh, kw, groups, *stride, *padding, *output_padding,
            *dilation, int(relu), *y.shape[2:])))
        lines.append("x " + text(x.numpy()))
        lines.append("w " + text(wt.numpy()))
        lines.append("b " + (text(b.numpy()) if b is not None else ""))
        lines.append("y " + text(y.numpy()))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
