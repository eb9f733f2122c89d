"""Record MXNet 1.9.1 outputs and gradients of the breadth operators for tests/ops/test_ops_breadth_fixtures.py.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_breadth_fixtures.py
Writes tests/data/breadth/ops.npz and ops.json.

Each case calls an mx.nd function (a dotted path under mx.nd) on float32 inputs drawn from
RandomState(seed) (integer-valued inputs are given as literal arrays), records the output and, with
`grad` inputs, the input gradients for random head gradients (RandomState(seed + 1 + k) for output k)
under autograd.  ops.json lists the cases; ops.npz holds `<case>/in<i>`, `<case>/out<k>`, `<case>/og<k>`,
`<case>/grad<i>`.
"""
import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "breadth")

# (case, function path under mx.nd, attrs, inputs: ("randn", shape) | ("const", list) | ("uniform", shape, lo, hi)
#  | ("sym", shape) (symmetric),
#  indices of inputs that get gradients)
CASES = [
    ("l2_instance", "L2Normalization", {"mode": "instance"}, [("randn", (2, 3, 4, 5))], [0]),
    ("l2_channel", "L2Normalization", {"mode": "channel", "eps": 1e-4}, [("randn", (2, 3, 4, 5))], [0]),
    ("l2_spatial", "L2Normalization", {"mode": "spatial"}, [("randn", (2, 3, 4, 5))], [0]),
    ("svm_l2", "SVMOutput", {"margin": 0.5, "regularization_coefficient": 2.0},
     [("randn", (4, 3)), ("const", [1, 0, 2, 2])], [0]),
    ("svm_l1", "SVMOutput", {"use_linear": True}, [("randn", (4, 3)), ("const", [1, 0, 2, 2])], [0]),
    ("up_nearest", "UpSampling", {"scale": 2, "sample_type": "nearest"}, [("randn", (2, 3, 4, 5))], [0]),
    ("up_nearest_concat", "UpSampling", {"scale": 2, "sample_type": "nearest", "num_args": 2},
     [("randn", (2, 3, 2, 3)), ("randn", (2, 2, 4, 6))], [0, 1]),
    ("up_nearest_sum", "UpSampling", {"scale": 3, "sample_type": "nearest", "num_args": 2,
                                      "multi_input_mode": "sum"},
     [("randn", (1, 2, 2, 2)), ("randn", (1, 2, 6, 6))], [0, 1]),
    ("up_bilinear", "UpSampling", {"scale": 2, "sample_type": "bilinear", "num_filter": 3},
     [("randn", (2, 3, 4, 5)), ("randn", (3, 1, 4, 4))], [0, 1]),
    ("resize_align", "contrib.BilinearResize2D", {"height": 7, "width": 3}, [("randn", (2, 3, 4, 5))], [0]),
    ("resize_noalign", "contrib.BilinearResize2D", {"height": 9, "width": 4, "align_corners": False},
     [("randn", (2, 3, 4, 5))], [0]),
    ("resize_odd_scale", "contrib.BilinearResize2D", {"scale_height": 2.0, "scale_width": 1.5,
                                                      "mode": "odd_scale"}, [("randn", (1, 2, 4, 5))], [0]),
    ("resize_to_even_up", "contrib.BilinearResize2D", {"mode": "to_even_up"}, [("randn", (1, 2, 3, 4))], [0]),
    ("adaptive_avg_3x2", "contrib.AdaptiveAvgPooling2D", {"output_size": (3, 2)}, [("randn", (2, 3, 7, 5))], [0]),
    ("adaptive_avg_1", "contrib.AdaptiveAvgPooling2D", {}, [("randn", (2, 3, 4, 5))], [0]),
    ("softmin_t2", "softmin", {"axis": 1, "temperature": 2.0}, [("randn", (3, 4, 2))], [0]),
    ("softmax_ce", "softmax_cross_entropy", {}, [("randn", (4, 5)), ("const", [0, 4, 2, 2])], [0]),
    ("grid_affine", "GridGenerator", {"transform_type": "affine", "target_shape": (4, 5)},
     [("randn", (2, 6))], [0]),
    ("grid_warp", "GridGenerator", {"transform_type": "warp"}, [("randn", (2, 2, 3, 4))], [0]),
    ("bilinear_sampler", "BilinearSampler", {}, [("randn", (2, 3, 5, 6)), ("uniform", (2, 2, 4, 3), -1.2, 1.2)],
     [0, 1]),
    # sample 1 keeps every grid point off pixel boundaries (the gradient jumps there; float32 rounding
    # of the grid decides the side)
    ("spatial_transformer", "SpatialTransformer", {"target_shape": (4, 3), "transform_type": "affine",
                                                   "sampler_type": "bilinear"},
     [("randn", (2, 3, 5, 6)), ("const", [[0.9, 0.1, 0.05, -0.2, 1.1, 0.1], [0.45, -0.3, 0.2, 0.4, 0.7, -0.15]])],
     [0, 1]),
    ("roi_pooling", "ROIPooling", {"pooled_size": (2, 3), "spatial_scale": 0.5},
     [("randn", (2, 3, 8, 9)), ("const", [[0, 1, 2, 10, 12], [1, 0, 0, 17, 15], [0, 4.6, 3.2, 7.9, 6.1],
                                          [1, 14, 12, 16, 14]])], [0]),
    ("correlation_mul", "Correlation", {"kernel_size": 3, "max_displacement": 2, "stride1": 1, "stride2": 2,
                                        "pad_size": 2}, [("randn", (2, 3, 6, 7)), ("randn", (2, 3, 6, 7))], [0, 1]),
    ("correlation_abs", "Correlation", {"kernel_size": 1, "max_displacement": 1, "stride1": 2, "stride2": 1,
                                        "pad_size": 1, "is_multiply": False},
     [("randn", (1, 2, 5, 6)), ("randn", (1, 2, 5, 6))], [0, 1]),
    ("im2col_2d", "im2col", {"kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)},
     [("randn", (2, 3, 5, 6))], [0]),
    # (a 1-D im2col fails inside MXNet 1.9.1's kernel: not recorded)
    ("gemm_axis1", "linalg.gemm", {"axis": 1, "alpha": 0.5, "beta": 2.0},
     [("randn", (2, 3, 4, 5)), ("randn", (2, 5, 4, 6)), ("randn", (2, 3, 4, 6))], [0, 1, 2]),
    ("gemm2_axis0_ta", "linalg.gemm2", {"axis": 0, "transpose_a": True},
     [("randn", (3, 2, 4)), ("randn", (3, 2, 5))], [0, 1]),
    ("extracttrian_lower", "linalg.extracttrian", {}, [("randn", (2, 4, 4))], [0]),
    ("extracttrian_upper_off1", "linalg.extracttrian", {"offset": 1}, [("randn", (4, 4))], [0]),
    ("extracttrian_off_m2", "linalg.extracttrian", {"offset": -2, "lower": False}, [("randn", (2, 5, 5))], [0]),
    ("maketrian_upper", "linalg.maketrian", {"lower": False}, [("randn", (2, 6))], [0]),
    ("maketrian_off_m1", "linalg.maketrian", {"offset": -1}, [("randn", (10,))], [0]),
    ("gelqf", "linalg.gelqf", {}, [("randn", (2, 3, 5))], [0]),
    ("syevd", "linalg.syevd", {}, [("sym", (2, 4, 4))], [0]),
    ("att_selfatt_qk", "contrib.interleaved_matmul_selfatt_qk", {"heads": 2}, [("randn", (4, 3, 2 * 3 * 5))], [0]),
    ("att_selfatt_valatt", "contrib.interleaved_matmul_selfatt_valatt", {"heads": 2},
     [("randn", (4, 3, 2 * 3 * 5)), ("randn", (6, 4, 4))], [0, 1]),
    ("att_encdec_qk", "contrib.interleaved_matmul_encdec_qk", {"heads": 3},
     [("randn", (5, 2, 3 * 4)), ("randn", (4, 2, 3 * 2 * 4))], [0, 1]),
    ("att_encdec_valatt", "contrib.interleaved_matmul_encdec_valatt", {"heads": 3},
     [("randn", (4, 2, 3 * 2 * 4)), ("randn", (6, 5, 4))], [0, 1]),
    ("pdf_dirichlet", "random_pdf_dirichlet", {},
     [("const", [[[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], [[0.3, 0.3, 0.4], [0.05, 0.15, 0.8]]]),
      ("const", [[1.5, 2.0, 3.0], [0.7, 1.2, 2.2]])], [0, 1]),
    ("pdf_uniform", "random_pdf_uniform", {}, [("const", [[0.5, 1.5, 2.5], [0.1, 0.2, 0.9]]),
                                                ("const", [0.0, 0.0]), ("const", [2.0, 1.0])], [0, 1, 2]),
    ("pdf_normal_log", "random_pdf_normal", {"is_log": True},
     [("randn", (2, 3)), ("randn", (2,)), ("uniform", (2,), 0.5, 2.0)], [0, 1, 2]),
    ("pdf_normal", "random_pdf_normal", {}, [("randn", (2, 2, 3)), ("randn", (2, 2)), ("uniform", (2, 2), 0.5, 2.0)],
     [0, 1, 2]),
    ("pdf_gamma", "random_pdf_gamma", {}, [("uniform", (2, 3), 0.2, 3.0), ("uniform", (2,), 0.5, 3.0),
                                           ("uniform", (2,), 0.5, 2.0)], [0, 1, 2]),
    ("pdf_exponential_log", "random_pdf_exponential", {"is_log": True},
     [("uniform", (3, 2), 0.1, 2.0), ("uniform", (3,), 0.5, 2.0)], [0, 1]),
    ("pdf_poisson", "random_pdf_poisson", {}, [("const", [[0, 1, 4], [2, 3, 5]]), ("const", [1.5, 3.0])], [0, 1]),
    ("pdf_negative_binomial", "random_pdf_negative_binomial", {},
     [("const", [[1, 3], [0, 2]]), ("const", [2, 3]), ("const", [0.4, 0.7])], [0, 1, 2]),
    ("pdf_gen_negative_binomial", "random_pdf_generalized_negative_binomial", {},
     [("const", [[1, 3], [0, 2]]), ("const", [2.0, 0.7]), ("const", [0.5, 1.5])], [0, 1, 2]),
    ("col2im_2d", "col2im", {"output_size": (5, 6), "kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2),
                             "pad": (1, 1)}, [("randn", (2, 18, 12))], [0]),
]


def make_input(spec, rng):
    if spec[0] == "randn":
        return rng.randn(*spec[1]).astype(np.float32)
    if spec[0] == "sym":  # symmetric matrices (last two axes)
        a = rng.randn(*spec[1]).astype(np.float32)
        return (a + np.swapaxes(a, -1, -2)) / 2
    if spec[0] == "uniform":
        return rng.uniform(spec[2], spec[3], size=spec[1]).astype(np.float32)
    return np.array(spec[1], dtype=np.float32)


def resolve(path):
    fn = mx.nd
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def main():
    os.makedirs(OUT, exist_ok=True)
    arrays, index = {}, []
    for seed, (case, path, attrs, specs, wrt) in enumerate(CASES):
        rng = np.random.RandomState(seed)
        ins = [make_input(s, rng) for s in specs]
        nds = [mx.nd.array(x) for x in ins]
        for i in wrt:
            nds[i].attach_grad()
        with mx.autograd.record():
            out = resolve(path)(*nds, **attrs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        ogs = [np.random.RandomState(seed + 1 + k).randn(*o.shape).astype(np.float32) for k, o in enumerate(outs)]
        if wrt:
            mx.autograd.backward(outs, [mx.nd.array(g) for g in ogs])
        for i, x in enumerate(ins):
            arrays[f"{case}/in{i}"] = x
        for k, (o, g) in enumerate(zip(outs, ogs)):
            arrays[f"{case}/out{k}"] = o.asnumpy()
            arrays[f"{case}/og{k}"] = g
        for i in wrt:
            arrays[f"{case}/grad{i}"] = nds[i].grad.asnumpy()
        index.append({"case": case, "path": path, "attrs": attrs, "n_inputs": len(ins), "n_outputs": len(outs),
                      "wrt": wrt})
    np.savez_compressed(os.path.join(OUT, "ops.npz"), **arrays)
    with open(os.path.join(OUT, "ops.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": index}, f, indent=1)


if __name__ == "__main__":
    main()
