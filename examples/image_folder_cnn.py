"""Image classification from a folder of PNG files: gluon.data.vision.ImageFolderDataset, a
DataLoader with two worker processes, vision transforms and a small hybridized CNN.

At start the script draws its own data set with Pillow (the imaging library ember decodes images
with): 32x32 RGB pictures of four shapes (circle, square, triangle, plus sign) of random size,
position and colour on a noisy background of another colour, written as PNG files into
<tmp>/train/<class>/ and <tmp>/test/<class>/.  Training reads them through
`ImageFolderDataset(...).transform_first(Compose([RandomFlipLeftRight(), RandomBrightness(0.2),
ToTensor(), Normalize(...)]))` and `DataLoader(shuffle=True, num_workers=2)` (batches reach the
loop through shared memory); the test set uses ToTensor + Normalize only.  A chance-level model
scores 25%; the 6 default epochs (about half a minute on 2 cores) reach 95-98% on the held-out
pictures.  The temporary folder is removed and the workers are gone when the script ends, also on
an error or Ctrl-C.

    python examples/image_folder_cnn.py [--epochs 6] [--per-class 200] [--quick]

`--quick` (a few seconds: 192 pictures, 3 epochs) is what the test runs.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # this checkout's ember
import ember as mx  # noqa: E402

gluon, nn, autograd = mx.gluon, mx.gluon.nn, mx.autograd
T = gluon.data.vision.transforms
SHAPES = ("circle", "plus", "square", "triangle")  # ImageFolderDataset numbers classes in sorted order
SIZE = 32
MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)


def draw_shape(kind: str, rng: np.random.RandomState):
    """One SIZE x SIZE RGB picture of `kind` (a PIL image)."""
    from PIL import Image, ImageDraw

    background, colour = rng.randint(0, 256, 3), rng.randint(0, 256, 3)
    while np.abs(background - colour).sum() < 200:  # keep the shape visible
        colour = rng.randint(0, 256, 3)
    noise = rng.normal(0, 12, (SIZE, SIZE, 3))
    img = Image.fromarray(np.clip(background + noise, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    r = rng.randint(7, 14)
    cx, cy = rng.randint(r, SIZE - r, 2)
    fill = tuple(int(v) for v in colour)
    if kind == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
    elif kind == "square":
        draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=fill)
    elif kind == "triangle":
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=fill)
    else:  # plus sign
        w = max(2, r // 3)
        draw.rectangle([cx - r, cy - w, cx + r, cy + w], fill=fill)
        draw.rectangle([cx - w, cy - r, cx + w, cy + r], fill=fill)
    return img


def write_image_folder(root: str, per_class: int, seed: int) -> None:
    """root/<shape>/<n>.png, `per_class` pictures of each shape."""
    rng = np.random.RandomState(seed)
    for kind in SHAPES:
        os.makedirs(os.path.join(root, kind))
        for n in range(per_class):
            draw_shape(kind, rng).save(os.path.join(root, kind, f"{n:04d}.png"))


def small_cnn(classes: int):
    """Three conv/BN/relu/max-pool stages (32 -> 16 -> 8 -> 4 pixels), a dense hidden layer, class scores."""
    net = nn.HybridSequential()
    with net.name_scope():
        for channels in (16, 32, 32):
            net.add(nn.Conv2D(channels, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2))
        net.add(nn.Flatten(), nn.Dense(64, activation="relu"), nn.Dense(classes))
    return net


def accuracy(net, loader) -> float:
    correct = total = 0
    for data, label in loader:
        pred = net(data).argmax(axis=1).astype("int32")
        correct += int((pred == label.astype("int32")).sum().asscalar())
        total += data.shape[0]
    return correct / total


def train(args, workdir: str) -> dict:
    """Write the picture folders under `workdir`, train, and return the losses and accuracies."""
    mx.random.seed(args.seed)
    start = time.time()
    write_image_folder(os.path.join(workdir, "train"), args.per_class, args.seed)
    write_image_folder(os.path.join(workdir, "test"), max(args.per_class // 4, 10), args.seed + 1)
    augment = T.Compose([T.RandomFlipLeftRight(), T.RandomBrightness(0.2), T.ToTensor(), T.Normalize(MEAN, STD)])
    plain = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])
    train_set = gluon.data.vision.ImageFolderDataset(os.path.join(workdir, "train")).transform_first(augment)
    test_set = gluon.data.vision.ImageFolderDataset(os.path.join(workdir, "test")).transform_first(plain)
    train_loader = gluon.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers)
    test_loader = gluon.data.DataLoader(test_set, batch_size=128, num_workers=args.workers)
    print(f"wrote {len(train_set)} training and {len(test_set)} test PNGs of {', '.join(SHAPES)} "
          f"in {time.time() - start:.1f} s")

    net = small_cnn(len(SHAPES))
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": args.lr})
    losses, epoch_losses, accuracies = [], [], []
    for epoch in range(1, args.epochs + 1):
        total = count = 0.0
        for step, (data, label) in enumerate(train_loader):
            if args.max_steps and step >= args.max_steps:
                break  # leaving the loop early ends this iteration's workers
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            losses.append(float(loss.mean().asscalar()))
            total, count = total + losses[-1] * data.shape[0], count + data.shape[0]
        epoch_losses.append(total / count)
        accuracies.append(accuracy(net, test_loader))
        print(f"epoch {epoch}: training loss {epoch_losses[-1]:.3f}, test accuracy {accuracies[-1]:.3f}  "
              f"({time.time() - start:.1f} s)", flush=True)
    return {"losses": losses, "epoch_losses": epoch_losses, "accuracies": accuracies}


def one_blas_thread() -> bool:
    """Limit BLAS to one thread unless EMBER_BLAS_THREADS says otherwise: this model's GEMMs are small
    and the DataLoader's two worker processes share the cores with the training loop (measured with
    the CPU team on 2 cores: 6.0 s pinned, 6.1-8.6 s with 2 threads).  True if this call set the limit
    (undo with set_blas_threads(None))."""
    return "EMBER_BLAS_THREADS" not in os.environ and mx.engine.set_blas_threads(1)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--per-class", type=int, default=200, help="training pictures per shape (a quarter as many test)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--max-steps", type=int, default=0, help="stop each epoch after this many steps (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a few seconds: 192 pictures, 3 epochs")
    args = p.parse_args(argv)
    if args.quick:
        args.epochs, args.per_class = 3, 48
    return args


def main(argv=None) -> dict:
    """Run the example; returns train()'s results (the exit status is 0 when it returns)."""
    args = parse_args(argv)
    limited = one_blas_thread()
    workdir = tempfile.mkdtemp(prefix="ember_image_folder_")
    try:
        return train(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if limited:
            mx.engine.set_blas_threads(None)


if __name__ == "__main__":
    main()
