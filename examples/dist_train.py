"""Data-parallel training of the demo LeNet on scikit-learn's digits through a distributed kvstore.

Unchanged MXNet 1.x code: each worker trains mx.mod.Module on its shard of the training set with
kvstore='dist_sync' (gradients summed over workers, identical weights everywhere) or 'dist_async'
(parameter servers apply the updates as they arrive).

    python -m ember.kvstore.launch -n 2 python examples/dist_train.py
    python -m ember.kvstore.launch -n 2 -s 1 python examples/dist_train.py --kv-store dist_async
"""
from __future__ import annotations

import argparse
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import ember as mx  # noqa: E402
from train_digits import lenet, load_digits  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kv-store", default="dist_sync")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args(argv)

    kv = mx.kv.create(args.kv_store)
    x_train, y_train, x_test, y_test = load_digits(0.2, seed=42)
    shard = slice(kv.rank, None, kv.num_workers)  # each worker sees its own part of the data
    np.random.seed(kv.rank)
    train_iter = mx.io.NDArrayIter(x_train[shard], y_train[shard], batch_size=args.batch_size, shuffle=True)
    test_iter = mx.io.NDArrayIter(x_test, y_test, batch_size=args.batch_size)

    mx.random.seed(42)  # same initial weights everywhere (dist_sync also broadcasts worker 0's)
    mod = mx.mod.Module(lenet(), context=mx.cpu())
    mod.fit(train_iter, num_epoch=args.epochs, kvstore=kv, initializer=mx.init.Xavier(magnitude=2.0),
            optimizer="sgd", optimizer_params={"learning_rate": args.lr, "momentum": 0.9})
    probs = mod.predict(test_iter).asnumpy()
    accuracy = float(np.mean(probs.argmax(axis=1) == y_test))
    print(f"worker {kv.rank}/{kv.num_workers} ({kv.type}): test accuracy {accuracy:.4f}", flush=True)
    kv.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
