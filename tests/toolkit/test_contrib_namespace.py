"""mx.contrib: the contrib operator namespaces resolve to the registry's contrib ops; AMP refuses clearly."""
import numpy as np
import pytest

import ember as mx


def test_contrib_ndarray_and_symbol_are_the_contrib_ops():
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    got = mx.contrib.ndarray.arange_like(x)
    np.testing.assert_array_equal(got.asnumpy(), mx.nd.contrib.arange_like(x).asnumpy())
    s = mx.contrib.sym.arange_like(mx.sym.var("x"))
    out = s.eval(x=x)[0]
    np.testing.assert_array_equal(out.asnumpy(), got.asnumpy())


def test_amp_imports_and_refuses_use():
    from ember.contrib.amp import amp
    with pytest.raises(NotImplementedError, match="amp.init: ember does not implement automatic mixed precision"):
        amp.init()
    with pytest.raises(mx.MXNetError):
        mx.contrib.amp.convert_hybrid_block(None)
