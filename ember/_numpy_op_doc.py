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


def _np_sum(a, axis=None, dtype=None, keepdims=False, initial=None, out=None):
    """Sum of array elements over the given axes (numpy.sum; bool and small integers accumulate wider).

    Parameters
    ----------
    a : ndarray
        Elements to sum.
    axis : None or int or tuple of ints, optional
        Axes to sum over: None every axis, () none, negative counting from the last.
    dtype : dtype, optional
        The result's type (default: the input's; bool sums to int64).
    keepdims : bool, optional
        Keep the reduced axes with length one.
    initial : scalar, optional
        The starting value of the sum.
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    sum_along_axis : ndarray
    """


def _np_prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """Product of array elements over the given axes (numpy.prod).

    Parameters
    ----------
    a : ndarray
        Input data.
    axis : None or int or tuple of ints, optional
        Axes to multiply over: None every axis, () none.
    dtype : dtype, optional
        The result's type (default: the input's; bool multiplies as int64).
    out : ndarray, optional
        Where to write the result.
    keepdims : bool, optional
        Keep the reduced axes with length one.

    Returns
    -------
    product_along_axis : ndarray
    """


def _np_dot(a, b, out=None):
    """Dot product of two arrays (numpy.dot): 0-d operands multiply, two vectors give a 0-d inner
    product, an N-D array and a vector contract a's last axis, N-D . M-D contracts a's last axis with
    b's second-to-last.

    Parameters
    ----------
    a : ndarray
        First operand.
    b : ndarray
        Second operand (a's dtype).
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    output : ndarray
    """


def _np_roll(a, shift=None, axis=None):
    """Roll array elements along the given axes (numpy.roll): elements shifted past the end come back
    at the start.

    Parameters
    ----------
    a : ndarray
        Input array.
    shift : int or tuple of ints
        Places to shift by (one per axis, or one for every axis).
    axis : int or tuple of ints, optional
        Axes to roll along; None rolls the flattened array and restores the shape.

    Returns
    -------
    res : ndarray
    """
