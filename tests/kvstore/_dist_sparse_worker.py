"""One process of the sparse distributed kvstore tests (run under the launcher by test_dist_sparse.py).

usage: python _dist_sparse_worker.py dist_sync|dist_async OUT_DIR
Each worker r pushes a row_sparse gradient holding rows r and 4 (values r + 1) twice, then
writes OUT_DIR/rank<r>.npz with a dense pull and a row_sparse_pull of rows [4, 0]."""
from __future__ import annotations

import sys

import numpy as np

import ember as mx

SHAPE = (6, 3)


def gradient(rank: int) -> np.ndarray:
    """The dense values of worker `rank`'s row_sparse gradient."""
    g = np.zeros(SHAPE, np.float32)
    g[[rank, 4]] = rank + 1.0
    return g


def main():
    kind, out_dir = sys.argv[1], sys.argv[2]
    kv = mx.kv.create(kind)
    r = kv.rank
    kv.init("w", mx.nd.ones(SHAPE))
    if kind == "dist_async":  # the servers run the update
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
    g = mx.nd.sparse.row_sparse_array((np.full((2, 3), r + 1.0, np.float32), [r, 4]), shape=SHAPE)
    for _ in range(2):
        kv.push("w", g)
    kv.barrier()
    dense = mx.nd.zeros(SHAPE)
    kv.pull("w", out=dense)
    rows = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=rows, row_ids=mx.nd.array([4, 0, 4], dtype="int64"))
    np.savez(f"{out_dir}/rank{r}.npz", dense=dense.asnumpy(), rows_index=rows.indices.asnumpy(),
             rows_data=rows.data.asnumpy())
    kv.barrier()


if __name__ == "__main__":
    main()
