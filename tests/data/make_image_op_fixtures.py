"""Records MXNet 1.9.1's image operators on fixed inputs (run with the MXNet venv):

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_image_op_fixtures.py

Writes tests/data/image_ops/image_ops.npz: inputs from numpy.random.RandomState(3) and the outputs
of mx.nd.image.* (the random colour ops with min_factor == max_factor, so deterministic) and of
the CenterCrop / Resize transforms.  Keys: '<case>.in' and '<case>.out'.
"""
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_ops")


def main():
    rs = np.random.RandomState(3)
    img_u8 = rs.randint(0, 256, (7, 9, 3)).astype(np.uint8)
    img_f = rs.uniform(0, 255, (7, 9, 3)).astype(np.float32)
    batch_u8 = rs.randint(0, 256, (2, 5, 6, 3)).astype(np.uint8)
    chw = rs.uniform(0, 1, (3, 4, 5)).astype(np.float32)
    nchw = rs.uniform(0, 1, (2, 3, 4, 5)).astype(np.float32)
    I = mx.nd.image
    cases = {
        "to_tensor": (img_u8, lambda x: I.to_tensor(x)),
        "to_tensor_batch": (batch_u8, lambda x: I.to_tensor(x)),
        "to_tensor_float": (img_f, lambda x: I.to_tensor(x)),
        "normalize": (chw, lambda x: I.normalize(x, mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0))),
        "normalize_scalar": (chw, lambda x: I.normalize(x, mean=0.5, std=0.2)),
        "normalize_batch": (nchw, lambda x: I.normalize(x, mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0))),
        "flip_left_right": (img_f, lambda x: I.flip_left_right(x)),
        "flip_top_bottom": (img_f, lambda x: I.flip_top_bottom(x)),
        "resize_down": (img_f, lambda x: I.resize(x, size=(4, 3))),
        "resize_up": (img_f, lambda x: I.resize(x, size=(13, 11))),
        "resize_int": (img_f, lambda x: I.resize(x, size=5)),
        "resize_keep": (img_f, lambda x: I.resize(x, size=4, keep_ratio=True)),
        "resize_nearest": (img_f, lambda x: I.resize(x, size=(5, 12), interp=0)),
        "resize_interp2_down": (img_f, lambda x: I.resize(x, size=(4, 3), interp=2)),
        "resize_interp2_up": (img_f, lambda x: I.resize(x, size=(13, 11), interp=2)),
        "resize_interp3": (img_f, lambda x: I.resize(x, size=(13, 5), interp=3)),
        "resize_lanczos": (img_f, lambda x: I.resize(x, size=(5, 13), interp=4)),
        "imresize_area": (img_f, lambda x: mx.image.imresize(x, 6, 4, interp=2)),
        "imrotate": (np.transpose(img_f, (2, 0, 1)).copy(), lambda x: mx.image.imrotate(x, 30.0)),
        "imrotate_zoom_in": (np.transpose(img_f, (2, 0, 1)).copy(), lambda x: mx.image.imrotate(x, -50.0, zoom_in=True)),
        "imrotate_zoom_out": (np.transpose(img_f, (2, 0, 1)).copy(), lambda x: mx.image.imrotate(x, 70.0, zoom_out=True)),
        "resize_u8": (img_u8, lambda x: I.resize(x, size=(5, 4))),
        "resize_batch": (batch_u8.astype(np.float32), lambda x: I.resize(x, size=(3, 4))),
        "crop": (img_f, lambda x: I.crop(x, x=2, y=1, width=4, height=5)),
        "crop_batch": (batch_u8, lambda x: I.crop(x, x=1, y=0, width=3, height=2)),
        "brightness": (img_f, lambda x: I.random_brightness(x, 0.7, 0.7)),
        "brightness_u8": (img_u8, lambda x: I.random_brightness(x, 1.3, 1.3)),
        "contrast": (img_f, lambda x: I.random_contrast(x, 0.6, 0.6)),
        "hue": (img_f, lambda x: I.random_hue(x, 0.3, 0.3)),
        "adjust_lighting": (img_f, lambda x: I.adjust_lighting(x, alpha=(0.02, -0.01, 0.03))),
        "center_crop": (img_u8, lambda x: mx.gluon.data.vision.transforms.CenterCrop((5, 4))(x)),
        "center_crop_up": (img_u8, lambda x: mx.gluon.data.vision.transforms.CenterCrop(12)(x)),
        "resize_block": (img_u8, lambda x: mx.gluon.data.vision.transforms.Resize((6, 8))(x)),
    }
    arrays = {}
    for name, (x, fn) in cases.items():
        arrays[name + ".in"] = x
        arrays[name + ".out"] = fn(mx.nd.array(x, dtype=x.dtype)).asnumpy()
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, "image_ops.npz"), **arrays)
    print("wrote", len(cases), "cases")


if __name__ == "__main__":
    main()
