"""Write .params fixtures with real MXNet 1.9.1, plus the expected values as .npz.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_params_fixtures.py
Each NAME.params written by MXNet has NAME.npz beside it with the values MXNet reads
back (arr_0, arr_1, ... for lists; the names for dicts) and, for dicts, NAME.keys.txt
with the key order.
"""
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "params")


def write(name, data, saver=mx.nd.save, loader=mx.nd.load):
    path = os.path.join(OUT, name + ".params")
    saver(path, data)
    back = loader(path)  # what MXNet itself reads back is the expectation
    if isinstance(back, dict):
        np.savez(os.path.join(OUT, name + ".npz"), **{k: v.asnumpy() for k, v in back.items()})
        with open(os.path.join(OUT, name + ".keys.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(back.keys()) + "\n")
    else:
        np.savez(os.path.join(OUT, name + ".npz"), *[v.asnumpy() for v in back])
    print(f"{name}: {os.path.getsize(path)} bytes")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(42)
    nd = mx.nd

    write("list_float32", [nd.array(rng.randn(3, 4)), nd.array(rng.randn(5)), nd.array(rng.randn(2, 1, 3, 2))])
    write("dict_dtypes", {
        "float32": nd.array(rng.randn(2, 3), dtype="float32"),
        "float64": nd.array(rng.randn(4), dtype="float64"),
        "float16": nd.array(rng.randn(3, 2), dtype="float16"),
        "uint8": nd.array(rng.randint(0, 256, (7,)), dtype="uint8"),
        "int8": nd.array(rng.randint(-128, 128, (2, 2)), dtype="int8"),
        "int32": nd.array(rng.randint(-2 ** 31, 2 ** 31 - 1, (5,)), dtype="int32"),
        "int64": nd.array(np.array([-(2 ** 62), 3, 2 ** 40], dtype=np.int64), dtype="int64"),
        "bool": nd.array(np.array([True, False, True]), dtype="bool"),
    })
    # names as mx.model.save_checkpoint writes them, and a non-ASCII name
    write("checkpoint_style", {
        "arg:fc1_weight": nd.array(rng.randn(4, 3)), "arg:fc1_bias": nd.zeros((4,)),
        "aux:bn_moving_var": nd.ones((4,)), "größe_µ": nd.array([1.5, -2.5]),
    })
    write("empty_list", [])
    write("zero_size", [nd.array(np.zeros((0,))), nd.array(np.zeros((2, 0, 3)))])
    write("single_array", nd.array(np.arange(6).reshape(2, 3)))
    write("sparse", {
        "row_sparse": nd.array([[1, 2], [0, 0], [3, 4], [0, 0]]).tostype("row_sparse"),
        "csr": nd.array([[1, 0, 0], [0, 0, 0], [3, 0, 4]]).tostype("csr"),
        "empty_row_sparse": nd.zeros((3, 2)).tostype("row_sparse"),
    })
    write("big_float32", [nd.array(rng.randn(64, 100))])  # 25 kB: exercises streamed reads

    mx.npx.set_np()  # NumPy shape semantics: v3 records, 0-d arrays allowed
    write("np_shape", {"scalar": mx.np.array(3.5), "zero": mx.np.zeros((0, 3)),
                       "matrix": mx.np.array(rng.randn(2, 3))},
          saver=mx.npx.save, loader=mx.npx.load)
    mx.npx.reset_np()


if __name__ == "__main__":
    main()
