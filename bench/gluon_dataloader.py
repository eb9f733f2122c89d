"""DataLoader throughput (images/s): 32x32x3 uint8 images, ToTensor + Normalize + RandomFlipLeftRight
per sample, batch 128, num_workers 0 and 2 — ember vs MXNet 1.9.1's DataLoader vs
torch.utils.data.DataLoader with equivalent hand-written (torchvision-free) transforms.

The Gluon path is the very same code on ember (`--mx-module ember`) and on MXNet (`--mx-module
mxnet`): ArrayDataset(uint8 NDArray images, labels).transform_first(Compose([RandomFlipLeftRight(),
ToTensor(), Normalize(mean, std)])).  The torch path: a Dataset whose __getitem__ flips with
probability 0.5 (numpy), then permute/float/div(255)/normalize with torch ops, default collate.
Each timed epoch reads every image once and touches every batch (a sum), after one warm-up epoch.
Correctness (any size): every batch must be float32 (N, 3, 32, 32), an epoch must give every image, and
its sum of normalized pixels (`epoch_sum`, unchanged by flips and shuffling) must equal numpy's
(`expected_sum`) to 1e-4 relative: `sum_ok`.

One process, one JSON line:
    python3 bench/gluon_dataloader.py --impl mxnet --mx-module ember --workers 2
    ~/.cache/ember-anchors/mxnet/bin/python bench/gluon_dataloader.py --impl mxnet --mx-module mxnet --workers 2
    ~/.cache/ember-anchors/torch/bin/python bench/gluon_dataloader.py --impl torch --workers 2
Driver (interleaved rounds, every implementation and worker count, then a summary):
    python3 bench/gluon_dataloader.py --all --rounds 3 [--images 10240]
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

VENVS = os.environ.get("ANCHOR_VENVS", os.path.expanduser("~/.cache/ember-anchors"))
PYTHONS = {"ember": sys.executable,
           "mxnet": os.path.join(VENVS, "mxnet", "bin", "python"),
           "torch": os.path.join(VENVS, "torch", "bin", "python")}
IMPL_ARGS = {"ember": ["--impl", "mxnet", "--mx-module", "ember"],
             "mxnet": ["--impl", "mxnet", "--mx-module", "mxnet"],
             "torch": ["--impl", "torch"]}
MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def make_images(n: int):
    rs = np.random.RandomState(0)
    return rs.randint(0, 256, (n, 32, 32, 3)).astype(np.uint8), rs.randint(0, 10, n).astype(np.int32)


def gluon_loader(mx_module: str, images, labels, batch: int, workers: int):
    if mx_module == "ember":  # the checkout this script belongs to, installed or not
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mx = importlib.import_module(mx_module)
    T = mx.gluon.data.vision.transforms
    ds = mx.gluon.data.ArrayDataset(mx.nd.array(images, dtype="uint8"), labels)
    ds = ds.transform_first(T.Compose([T.RandomFlipLeftRight(), T.ToTensor(), T.Normalize(MEAN, STD)]))
    loader = mx.gluon.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers)

    def epoch():
        n, total = 0, 0.0
        for data, label in loader:
            check_batch(tuple(data.shape), str(data.dtype), batch)
            total += float(data.sum().asscalar())  # the batch is really there
            n += data.shape[0]
        return n, total
    return epoch


def check_batch(shape: tuple, dtype: str, batch: int) -> None:
    """Every batch is float32 (N, 3, 32, 32), N <= batch: a loader that hands back something else fails."""
    if len(shape) != 4 or shape[1:] != (3, 32, 32) or not 0 < shape[0] <= batch or "float32" not in dtype:
        raise AssertionError(f"bad batch: shape {shape} dtype {dtype}")


def expected_sum(images) -> float:
    """Sum of every normalized pixel of one epoch: flips and shuffling do not change it."""
    per_channel = images.astype(np.float64).sum(axis=(0, 1, 2)) / 255.0
    n_pixels = images.shape[0] * images.shape[1] * images.shape[2]
    return float(sum((per_channel[c] - MEAN[c] * n_pixels) / STD[c] for c in range(3)))


def torch_loader(images, labels, batch: int, workers: int):
    import torch
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)

    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return len(images)

        def __getitem__(self, i):
            img = images[i]
            if np.random.random() < 0.5:
                img = img[:, ::-1]
            t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).float().div(255)
            return (t - mean) / std, int(labels[i])

    loader = torch.utils.data.DataLoader(Images(), batch_size=batch, shuffle=True, num_workers=workers)

    def epoch():
        n, total = 0, 0.0
        for data, label in loader:
            check_batch(tuple(data.shape), str(data.dtype), batch)
            total += float(data.sum())
            n += data.shape[0]
        return n, total
    return epoch


def run_one(args) -> dict:
    images, labels = make_images(args.images)
    if args.impl == "torch":
        epoch = torch_loader(images, labels, args.batch, args.workers)
        name = "torch"
    else:
        epoch = gluon_loader(args.mx_module, images, labels, args.batch, args.workers)
        name = args.mx_module
    epoch()  # warm-up: first hybridized call, worker start-up paths
    rates, sums = [], []
    for _ in range(args.reps):
        start = time.perf_counter()
        n, total = epoch()
        rates.append(n / (time.perf_counter() - start))
        sums.append(total)
        if n != args.images:
            raise AssertionError(f"an epoch gave {n} images, not {args.images}")
    want = expected_sum(images)
    ok = all(abs(s - want) <= 1e-4 * abs(want) for s in sums)
    return {"bench": "gluon_dataloader", "impl": name, "workers": args.workers, "batch": args.batch,
            "images": args.images, "images_per_s": statistics.median(rates), "reps": rates,
            "epoch_sum": sums[-1], "expected_sum": want, "sum_ok": ok}


def drive(args) -> None:
    results = {}
    for rnd in range(args.rounds):
        for workers in args.workers_list:
            for impl in args.impls:
                python = PYTHONS[impl]
                if not os.path.exists(python):
                    print(json.dumps({"skip": impl, "reason": f"{python} not found"}))
                    continue
                cmd = [python, os.path.abspath(__file__)] + IMPL_ARGS[impl] + [
                    "--workers", str(workers), "--images", str(args.images), "--batch", str(args.batch),
                    "--reps", str(args.reps)]
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                                     cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
                if out.returncode != 0:
                    print(json.dumps({"impl": impl, "workers": workers, "error": out.stderr[-500:]}))
                    continue
                line = json.loads(out.stdout.strip().splitlines()[-1])
                line["round"] = rnd
                print(json.dumps(line), flush=True)
                if not line.get("sum_ok"):
                    print(json.dumps({"impl": impl, "workers": workers,
                                      "error": "wrong batches: epoch_sum != expected_sum"}))
                    continue
                results.setdefault((impl, workers), []).append(line["images_per_s"])
    print("\nimages/s (median over rounds)")
    for workers in args.workers_list:
        row = {impl: statistics.median(results[(impl, workers)]) for impl in args.impls if (impl, workers) in results}
        ratios = ""
        if "ember" in row:
            ratios = "  " + "  ".join(f"ember/{k}={row['ember'] / v:.2f}" for k, v in row.items() if k != "ember")
        print(f"num_workers={workers}: " + "  ".join(f"{k}={v:.0f}" for k, v in row.items()) + ratios)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--impl", choices=["mxnet", "torch"])
    p.add_argument("--mx-module", default="ember", choices=["ember", "mxnet"])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--images", type=int, default=10240)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--all", action="store_true", help="drive every implementation and worker count")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--impls", default="ember,mxnet,torch")
    p.add_argument("--workers-list", default="0,2")
    p.add_argument("--timeout", type=int, default=900)
    args = p.parse_args()
    if args.all:
        args.impls = args.impls.split(",")
        args.workers_list = [int(w) for w in args.workers_list.split(",")]
        drive(args)
        return
    if args.impl is None:
        p.error("give --impl (one process) or --all (the driver)")
    print(json.dumps(run_one(args)))


if __name__ == "__main__":
    main()
