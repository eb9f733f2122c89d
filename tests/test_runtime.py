"""mx.runtime: MXNet's feature list, answering for what ember can do here."""
import importlib.util

import numpy as np
import pytest

import ember as mx


def test_features_is_one_shared_ordered_dict_of_known_names():
    f = mx.runtime.Features()
    assert f is mx.runtime.Features()
    names = list(f.keys())
    assert names[:3] == ["CUDA", "CUDNN", "NCCL"] and names[-1] == "TVM_OP" and len(names) == 32
    assert all(f[n].name == n for n in names)
    assert [x.name for x in mx.runtime.feature_list()] == names


def test_is_enabled_matches_this_installation():
    f = mx.runtime.Features()
    assert f.is_enabled("cuda") == (mx.num_gpus() > 0)        # case-insensitive, as MXNet
    assert f.is_enabled("OPENCV") == (importlib.util.find_spec("cv2") is not None)
    assert f.is_enabled("INT64_TENSOR_SIZE") is False
    # the default index dtype of a build without large tensors is float32
    assert mx.nd.topk(mx.nd.array([3, 1, 2]), k=2).dtype == np.float32
    assert repr(f["LAPACK"]) == "\u2714 LAPACK" and repr(f["MKLDNN"]) == "\u2716 MKLDNN"


def test_unknown_feature_raises_runtime_error_naming_it():
    with pytest.raises(RuntimeError, match="Feature 'NOPE' is unknown"):
        mx.runtime.Features().is_enabled("nope")
