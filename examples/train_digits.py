"""The main job (`make demo`): train a LeNet-style CNN on scikit-learn's bundled 8x8 digits.

Runs MXNet 1.x code on ember: a symbolic network (mx.sym) bound by mx.mod.Module,
every forward/backward node and every optimizer update (the registry's
sgd_mom_update op) executed on the dependency engine.  It prints a progress bar
with per-epoch accuracy, the test accuracy, the executor's memory plan summary,
and writes a Chrome trace of one training step.

    python examples/train_digits.py [--epochs 10] [--batch-size 64] [--trace digits_step_trace.json]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

# This net's GEMMs are tiny and the engine already runs independent ops on its worker threads:
# OpenBLAS's own thread pool only adds spinning (measured 4x slower steps on 2 cores).  Must be
# set before numpy loads OpenBLAS; an explicit setting in the environment wins.
_USER_SET_BLAS_THREADS = "OPENBLAS_NUM_THREADS" in os.environ
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

if os.environ.get("DIGITS_FRAMEWORK") == "mxnet":  # the same script on real MXNet 1.x, for comparison
    import mxnet as mx  # noqa: E402
else:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ember as mx  # noqa: E402


def lenet(num_classes: int = 10):
    """Two conv/relu/max-pool stages, then two fully connected layers and a softmax output."""
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")  # 8x8 -> 4x4
    x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=32, name="conv2")
    x = mx.sym.Activation(x, act_type="relu", name="relu2")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool2")  # 4x4 -> 2x2
    x = mx.sym.Flatten(x, name="flatten")
    x = mx.sym.FullyConnected(x, num_hidden=64, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu3")
    x = mx.sym.FullyConnected(x, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def single_threaded_blas() -> None:
    """Limit BLAS to one thread also when numpy was imported before this module (e.g. under pytest)."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:
        return
    threadpool_limits(limits=1, user_api="blas")


def load_digits(test_fraction: float, seed: int):
    """The 1797 digits as (N, 1, 8, 8) float32 in [0, 1], split into train and test."""
    from sklearn.datasets import load_digits as sk_load_digits
    digits = sk_load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.float32)
    order = np.random.RandomState(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def trace_one_step(mod, batch, filename: str) -> int:
    """Profile one forward/backward/update step; returns the number of op events in the trace."""
    mx.nd.waitall()  # start from an idle engine so the trace holds exactly one step
    mx.profiler.set_config(filename=filename)
    mx.profiler.set_state("run")
    mod.forward_backward(batch)
    mod.update()
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(filename) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return sum(1 for e in events if e.get("ph") == "X")


def memory_summary(mod) -> str:
    """The 'Total ... allocated' lines of the bound executor's debug_str (MXNet's memory plan summary)."""
    text = mod.debug_str() if hasattr(mod, "debug_str") else mod._exec_group.execs[0].debug_str()
    return "\n".join(line for line in text.splitlines() if line.startswith("Total "))


def bench_steps(batch_size: int, steps: int) -> None:
    """Time `steps` training steps (forward, backward, update) of the demo network on random data."""
    mod = mx.mod.Module(lenet(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (batch_size, 1, 8, 8))], label_shapes=[("softmax_label", (batch_size,))])
    mod.init_params(mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    rs = np.random.RandomState(0)
    batch = mx.io.DataBatch([mx.nd.array(rs.rand(batch_size, 1, 8, 8))],
                            [mx.nd.array(rs.randint(0, 10, batch_size))])
    for _ in range(5):  # warm-up: first-call costs (planning, allocation) are not steady state
        mod.forward_backward(batch)
        mod.update()
    mx.nd.waitall()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        mod.forward_backward(batch)
        mod.update()
    mx.nd.waitall()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{mx.__name__}: {steps / wall:.1f} training steps/s (batch {batch_size}); "
          f"{1e3 * wall / steps:.2f} ms wall, {1e3 * cpu / steps:.2f} ms CPU per step")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--trace", default="digits_step_trace.json", help="Chrome trace of one training step")
    parser.add_argument("--min-accuracy", type=float, default=0.95)
    parser.add_argument("--bench-steps", type=int, default=0,
                        help="only time this many training steps on random data (no dataset needed); "
                             "DIGITS_FRAMEWORK=mxnet runs it on real MXNet")
    args = parser.parse_args(argv)
    if not _USER_SET_BLAS_THREADS:
        single_threaded_blas()
    if args.bench_steps:
        bench_steps(args.batch_size, args.bench_steps)
        return 0
    logging.basicConfig(level=logging.WARNING)

    t0 = time.time()
    mx.random.seed(args.seed)
    np.random.seed(args.seed)  # NDArrayIter shuffles with numpy's RNG, as in MXNet
    x_train, y_train, x_test, y_test = load_digits(0.2, args.seed)
    print(f"digits: {len(y_train)} training and {len(y_test)} test images of 8x8, 10 classes")
    train_iter = mx.io.NDArrayIter(x_train, y_train, batch_size=args.batch_size, shuffle=True)
    test_iter = mx.io.NDArrayIter(x_test, y_test, batch_size=args.batch_size)

    mod = mx.mod.Module(lenet(), data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    mod.fit(train_iter, eval_data=test_iter, eval_metric="acc", num_epoch=args.epochs,
            initializer=mx.init.Xavier(magnitude=2.0), optimizer="sgd",
            optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4,
                              "lr_scheduler": mx.lr_scheduler.FactorScheduler(
                                  step=max(1, 8 * len(y_train) // args.batch_size), factor=0.5, base_lr=args.lr)},
            progress_bar=True)

    # test accuracy on exactly the test images (predict drops the padding of the last batch)
    probs = mod.predict(test_iter).asnumpy()
    accuracy = float(np.mean(probs.argmax(axis=1) == y_test))
    print(f"test accuracy: {accuracy:.4f} ({int(round(accuracy * len(y_test)))}/{len(y_test)})")

    print("memory plan of the training executor:")
    print(memory_summary(mod))

    train_iter.reset()
    events = trace_one_step(mod, next(train_iter), args.trace)
    print(f"Chrome trace of one training step ({events} op events) written to {os.path.abspath(args.trace)}")
    print(f"total time {time.time() - t0:.1f}s")
    if accuracy < args.min_accuracy:
        print(f"FAILED: test accuracy {accuracy:.4f} is below {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
