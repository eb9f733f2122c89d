"""Run with MXNet 1.9.1's python: load ember-written JSON files and check them against expectations.

argv: a JSON file listing {"symbol": path, "arguments": [...], "outputs": [...], "aux": [...],
"shapes": {...}, "out_shapes": [...], "args": {...}, "aux_values": {...}, "outputs_values": [...]}.
Prints "OK <n>" when every case matches, otherwise raises.
"""
import json
import sys

import mxnet as mx
import numpy as np

cases = json.load(open(sys.argv[1]))
for case in cases:
    sym = mx.sym.load(case["symbol"])
    assert sym.list_arguments() == case["arguments"], (sym.list_arguments(), case["arguments"])
    assert sym.list_outputs() == case["outputs"], (sym.list_outputs(), case["outputs"])
    assert sym.list_auxiliary_states() == case["aux"], (sym.list_auxiliary_states(), case["aux"])
    _, out_shapes, _ = sym.infer_shape(**{k: tuple(v) for k, v in case["shapes"].items()})
    assert [list(s) for s in out_shapes] == case["out_shapes"], (out_shapes, case["out_shapes"])
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in case["args"].items()},
                   aux_states={k: mx.nd.array(v) for k, v in case["aux_values"].items()}, grad_req="null")
    outs = exe.forward(is_train=False)
    for got, want in zip(outs, case["outputs_values"]):
        np.testing.assert_allclose(got.asnumpy(), np.array(want), rtol=1e-4, atol=1e-5)
print("OK", len(cases))
