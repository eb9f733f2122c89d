"""Write sparse-storage fixtures with real MXNet 1.9.1: a .params file of sparse arrays and the
components/results MXNet computes for them.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_sparse_fixtures.py

sparse/arrays.params   mx.nd.save of a dict of CSRNDArrays, RowSparseNDArrays and one dense array
sparse/arrays.npz      per key: KEY.stype (as a 0-d string array), KEY.dense, KEY.data and the aux
                       arrays (KEY.indptr, KEY.indices) as MXNet holds them
sparse/ops.npz         inputs and MXNet's results (dense values, storage type, indices) of
                       tostype, sparse.dot, retain, elemwise_add and the scalar operators
Values come from numpy.random.RandomState(7), so reruns reproduce the files.
"""
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sparse")


def sparse_dense(rng, shape, density, dtype="float32"):
    values = rng.randn(*shape).astype(dtype)
    values[rng.rand(*shape) > density] = 0
    return values


def components(prefix, arr, out):
    out[prefix + ".stype"] = np.array(arr.stype)
    out[prefix + ".dense"] = arr.asnumpy()
    if arr.stype == "csr":
        out[prefix + ".data"] = arr.data.asnumpy()
        out[prefix + ".indptr"] = arr.indptr.asnumpy()
        out[prefix + ".indices"] = arr.indices.asnumpy()
    elif arr.stype == "row_sparse":
        out[prefix + ".data"] = arr.data.asnumpy()
        out[prefix + ".indices"] = arr.indices.asnumpy()


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(7)
    nd = mx.nd

    arrays = {
        "csr_f32": nd.array(sparse_dense(rng, (5, 7), 0.3)).tostype("csr"),
        "csr_f64": nd.array(sparse_dense(rng, (3, 4), 0.5, "float64"), dtype="float64").tostype("csr"),
        "csr_empty": nd.sparse.zeros("csr", (4, 3)),
        "rsp_2d": nd.array(sparse_dense(rng, (6, 3), 0.3)).tostype("row_sparse"),
        "rsp_3d": nd.sparse.row_sparse_array((rng.randn(2, 2, 3).astype("float32"), [1, 4]), shape=(5, 2, 3)),
        "rsp_empty": nd.sparse.zeros("row_sparse", (3, 2)),
        "rsp_int32": nd.sparse.row_sparse_array((np.array([[1, 2], [3, 4]], "int32"), [0, 2]), shape=(4, 2),
                                                dtype="int32"),
        "dense": nd.array(rng.randn(2, 3)),
    }
    path = os.path.join(OUT, "arrays.params")
    nd.save(path, arrays)
    back = nd.load(path)
    expected = {}
    for key in arrays:
        components(key, back[key], expected)
    np.savez(os.path.join(OUT, "arrays.npz"), **expected)
    with open(os.path.join(OUT, "arrays.keys.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(arrays.keys()) + "\n")

    ops = {}
    a = sparse_dense(rng, (6, 5), 0.4)
    b = rng.randn(5, 3).astype("float32")
    c = rng.randn(6, 2).astype("float32")
    ops["a"], ops["b"], ops["c"] = a, b, c
    csr = nd.array(a).tostype("csr")
    components("tostype_csr", csr, ops)
    components("tostype_rsp", nd.array(a).tostype("row_sparse"), ops)
    components("dot_csr_dns", nd.sparse.dot(csr, nd.array(b)), ops)
    components("dot_csrT_dns", nd.sparse.dot(csr, nd.array(c), transpose_a=True), ops)
    components("dot_dns_csr", nd.sparse.dot(nd.array(b.T), nd.array(a.T).tostype("csr")), ops)
    rsp1 = nd.array(sparse_dense(rng, (8, 3), 0.3)).tostype("row_sparse")
    rsp2 = nd.array(sparse_dense(rng, (8, 3), 0.3)).tostype("row_sparse")
    ops["rsp1"], ops["rsp2"] = rsp1.asnumpy(), rsp2.asnumpy()
    components("add_rsp", nd.sparse.elemwise_add(rsp1, rsp2), ops)
    components("plus_rsp", rsp1 + rsp2, ops)
    ops["retain_idx"] = np.array([0, 2, 3, 7], "int64")
    components("retain", nd.sparse.retain(rsp1, nd.array(ops["retain_idx"], dtype="int64")), ops)
    components("csr_mul_scalar", csr * 3, ops)
    components("csr_plus_scalar", csr + 1, ops)
    components("csr_abs", nd.abs(csr), ops)
    components("csr_exp", nd.exp(csr), ops)
    components("csr_add_csr", csr + csr, ops)
    components("csr_zeros_like", nd.zeros_like(csr), ops)
    np.savez(os.path.join(OUT, "ops.npz"), **ops)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
