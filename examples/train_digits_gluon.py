"""The main job (`make demo`): a hybridized Gluon CNN trained on scikit-learn's bundled 8x8 digits.

MXNet 1.x Gluon code run on ember: a HybridSequential of Conv2D/BatchNorm/Dense blocks,
hybridized (traced once into a graph that ember's passes optimize and memory-plan, then run
on the dependency engine), trained with `autograd.record()`, `gluon.loss` and
`gluon.Trainer`.  It then exports the model (symbol JSON + .params, MXNet's files), reloads
it with `SymbolBlock.imports` and checks the reloaded predictions equal the trained ones,
prints the hybridized graph's memory plan and writes a Chrome trace of one training step.

    python examples/train_digits_gluon.py [--epochs 12] [--batch-size 64] [--out-dir .]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

# train_digits sets the BLAS thread defaults before numpy loads (this net's GEMMs are tiny and
# OpenBLAS's own threads only spin beside the engine's workers) and picks ember, or real MXNet with
# DIGITS_FRAMEWORK=mxnet; this script shares that set-up and the dataset with it.
import train_digits as _base

from train_digits import load_digits, single_threaded_blas

mx, np = _base.mx, _base.np
gluon, nn, autograd = mx.gluon, mx.gluon.nn, mx.autograd


def cnn(num_classes: int = 10):
    """Two conv/BN/relu/max-pool stages, then a dense hidden layer and the class scores."""
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(16, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2),  # 8x8 -> 4x4
                nn.Conv2D(32, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2),  # 4x4 -> 2x2
                nn.Flatten(), nn.Dense(64, activation="relu"), nn.Dense(num_classes))
    return net


class ProgressBar:
    """One line redrawn in place on a terminal; on a pipe only the finished epoch lines are printed,
    so the bar never interleaves with log lines."""

    def __init__(self, total: int, stream=sys.stdout):
        self.total, self.stream = total, stream
        self.live = hasattr(stream, "isatty") and stream.isatty()

    def update(self, done: int, text: str) -> None:
        if self.live:
            width = 30
            filled = int(width * done / self.total)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} {text}")
            self.stream.flush()

    def finish(self, line: str) -> None:
        if self.live:
            self.stream.write("\r\033[K")
        print(line, file=self.stream, flush=True)


def evaluate(net, x: np.ndarray, y: np.ndarray, batch_size: int) -> float:
    """Accuracy of `net` on (x, y)."""
    correct = 0
    for i in range(0, len(y), batch_size):
        scores = net(mx.nd.array(x[i:i + batch_size]))
        correct += int((scores.asnumpy().argmax(axis=1) == y[i:i + batch_size]).sum())
    return correct / len(y)


def trace_one_step(net, trainer, loss_fn, data, label, filename: str) -> int:
    """Profile one training step; returns the number of op events in the Chrome trace."""
    mx.nd.waitall()
    mx.profiler.set_config(filename=filename)
    mx.profiler.set_state("run")
    with autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(data.shape[0])
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(filename) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return sum(1 for e in events if e.get("ph") == "X")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out-dir", default=".", help="where the exported model and the trace go")
    parser.add_argument("--min-accuracy", type=float, default=0.97)
    args = parser.parse_args(argv)
    if not _base._USER_SET_BLAS_THREADS:
        single_threaded_blas()
    t0 = time.time()
    mx.random.seed(args.seed)
    rng = np.random.RandomState(args.seed)
    x_train, y_train, x_test, y_test = load_digits(0.2, args.seed)
    print(f"digits: {len(y_train)} training and {len(y_test)} test images of 8x8, 10 classes")

    net = cnn()
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    steps_per_epoch = (len(y_train) + args.batch_size - 1) // args.batch_size
    schedule = mx.lr_scheduler.FactorScheduler(step=8 * steps_per_epoch, factor=0.5, base_lr=args.lr)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4,
                                                          "lr_scheduler": schedule})
    for epoch in range(args.epochs):
        order = rng.permutation(len(y_train))
        bar = ProgressBar(steps_per_epoch)
        total_loss, seen, correct = 0.0, 0, 0
        for step, i in enumerate(range(0, len(order), args.batch_size)):
            idx = order[i:i + args.batch_size]
            data, label = mx.nd.array(x_train[idx]), mx.nd.array(y_train[idx])
            with autograd.record():
                scores = net(data)
                loss = loss_fn(scores, label)
            loss.backward()
            trainer.step(len(idx))
            total_loss += float(loss.sum().asscalar())
            correct += int((scores.asnumpy().argmax(axis=1) == y_train[idx]).sum())
            seen += len(idx)
            bar.update(step + 1, f"loss {total_loss / seen:.4f}")
        bar.finish(f"epoch {epoch + 1:2d}: loss {total_loss / seen:.4f}  train accuracy {correct / seen:.4f}  "
                   f"lr {trainer.learning_rate:.4f}")

    accuracy = evaluate(net, x_test, y_test, args.batch_size)
    print(f"test accuracy: {accuracy:.4f} ({int(round(accuracy * len(y_test)))}/{len(y_test)})")

    os.makedirs(args.out_dir, exist_ok=True)
    prefix = os.path.join(args.out_dir, "digits_cnn")
    test_batch = mx.nd.array(x_test[:args.batch_size])
    want = net(test_batch).asnumpy()
    net.export(prefix, epoch=args.epochs)
    reloaded = gluon.SymbolBlock.imports(f"{prefix}-symbol.json", ["data"], f"{prefix}-{args.epochs:04d}.params")
    got = reloaded(test_batch).asnumpy()
    same = np.allclose(got, want, rtol=1e-5, atol=1e-6) and (got.argmax(1) == want.argmax(1)).all()
    print(f"exported to {prefix}-symbol.json and {prefix}-{args.epochs:04d}.params; reloaded with "
          f"SymbolBlock.imports: predictions {'equal' if same else 'DIFFER'} "
          f"(max |difference| {np.abs(got - want).max():.2e})")

    if hasattr(net, "memory_plan"):  # ember: the planned memory of the hybridized training graph
        print("memory plan of the hybridized training graph:")
        print("\n".join(line for line in net.memory_plan(training=True).splitlines() if line.startswith("Total ")))
    data, label = mx.nd.array(x_train[:args.batch_size]), mx.nd.array(y_train[:args.batch_size])
    trace = os.path.join(args.out_dir, "digits_gluon_step_trace.json")
    events = trace_one_step(net, trainer, loss_fn, data, label, trace)
    print(f"Chrome trace of one training step ({events} op events) written to {os.path.abspath(trace)}")
    print(f"total time {time.time() - t0:.1f}s")
    if not same:
        print("FAILED: the reloaded model predicts differently", file=sys.stderr)
        return 1
    if accuracy < args.min_accuracy:
        print(f"FAILED: test accuracy {accuracy:.4f} is below {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
