"""A 10-class image task to train bench/models.py's CNNs on, for accuracy measurements that mean
something where no pretrained weights can be downloaded.

With random weights a network's logits are close together: a change of one quantization step (or
float sums in another order) flips the top-1 class of many inputs, so "top-1 equal to the
quantized reference" measures near ties, not quantization. A trained network has margins, as
the models users quantize do. The task: 224x224 RGB images, each a grating whose orientation,
frequency and colour give the class, at a random phase and contrast, under Gaussian noise of
half its amplitude. A few hundred Adam steps reach 100% on held-out images.

    module = synthetic_task.trained("mobilenet_v2", cache_dir)   # trained once, then cached
    images, labels = synthetic_task.sample(32, torch.Generator().manual_seed(1))
"""

import math
import os

import torch

CLASSES = 10
SIZE = 224
MODELS = ("resnet18", "mobilenet_v2")  # bench/models.py's image classifiers


def sample(n, gen):
    """n images [n, 3, SIZE, SIZE] of the task and their labels [n], drawn from gen."""
    y = torch.randint(0, CLASSES, (n,), generator=gen)
    theta = y.float() * math.pi / CLASSES
    freq = 0.05 + 0.02 * (y % 5).float()  # cycles per pixel
    phase = torch.rand(n, generator=gen) * 2 * math.pi
    coords = torch.arange(SIZE).float()
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    along = (xx[None] * torch.cos(theta)[:, None, None] +
             yy[None] * torch.sin(theta)[:, None, None])
    wave = torch.sin(2 * math.pi * freq[:, None, None] * along + phase[:, None, None])
    colour = torch.stack([torch.cos(y.float()), torch.sin(y.float()), torch.cos(2 * y.float())], 1)
    contrast = 0.8 + 0.4 * torch.rand(n, 1, 1, 1, generator=gen)
    images = wave[:, None] * contrast * colour[:, :, None, None]
    return images + 0.5 * torch.randn(images.shape, generator=gen), y


def train(module, steps=250, batch=16, seed=1):
    """Trains module (logits over >= CLASSES outputs) in place on the task with Adam, then
    recomputes its batch-norm statistics over 512 images (the running averages lag the weights
    of so short a training: 61% held-out accuracy without, 100% with). Returns it in eval mode."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    module.train()
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    for _ in range(steps):
        x, y = sample(batch, gen)
        loss = torch.nn.functional.cross_entropy(module(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # a plain average over the passes below
    with torch.no_grad():
        for _ in range(16):
            module(sample(32, gen)[0])
    return module.eval()


def trained(name, cache_dir, steps=250):
    """bench/models.py's `name` trained on the task (train()), from cache_dir when trained
    before with the same steps."""
    import models
    module = models.build([name])[name].module
    path = os.path.join(cache_dir, f"{name}_synthetic_{steps}.pt")
    if os.path.exists(path):
        module.load_state_dict(torch.load(path))
        return module.eval()
    train(module, steps)
    os.makedirs(cache_dir, exist_ok=True)
    torch.save(module.state_dict(), path)
    return module
