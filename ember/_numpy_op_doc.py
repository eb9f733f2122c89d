"""Signatures of the registry's NumPy-interface operators (`_np_*`, `_npx_*`), as MXNet's
`_numpy_op_doc`: each function here only documents its operator; `numpy_op_signature` gives the
mx.np / mx.npx function of the operator this signature."""
# pylint: disable=unused-argument


def _np_reshape(a, newshape, order='C', out=None):
    """Gives a new shape to an array without changing its data (numpy's reshape rules: one -1 is
    inferred, 0 is a zero-size dimension).

    Parameters
    ----------
    a : ndarray
        Array to be reshaped.
    newshape : int or tuple of ints
        The new shape; must hold as many elements as `a`.
    order : {'C'}, optional
        Only 'C' (row-major) is supported.
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    reshaped_array : ndarray
    """
