"""Storage-type inference rules (MXNet 1.9.1's FInferStorageType), for `OpDef.infer_stype`.

Each rule is `(attrs, in_stypes) -> out_stypes` over 'default', 'row_sparse' and 'csr'.  A combination
MXNet dispatches to its storage fallback gives 'default' outputs.  The rules are written from the
storage-type functions of MXNet's operators (src/operator/tensor/elemwise_binary_op*.{h,cc},
elemwise_unary_op.h, elemwise_binary_scalar_op*.cc, dot-inl.h, square_sum-inl.h, ...); each
operator names its rule where it is registered.
"""
from __future__ import annotations

from typing import Callable, List, Sequence

DEFAULT, ROW_SPARSE, CSR = "default", "row_sparse", "csr"
STYPES = (DEFAULT, ROW_SPARSE, CSR)


def _only(stypes: Sequence[str], stype: str) -> bool:
    return all(s == stype for s in stypes)


def elemwise(rsp: bool = True, csr: bool = True) -> Callable:
    """MXNet's ElemwiseStorageType: inputs all of one sparse format the op supports give that format,
    anything else 'default' (elemwise_add/sub, zero-preserving unary ops, `_copy`, `zeros_like`)."""
    def rule(attrs: dict, ins: List[str]) -> List[str]:
        if ins and rsp and _only(ins, ROW_SPARSE):
            return [ROW_SPARSE]
        if ins and csr and _only(ins, CSR):
            return [CSR]
        return [DEFAULT]
    return rule


def prefer_sparse(attrs: dict, ins: List[str]) -> List[str]:
    """elemwise_mul (MXNet's PreferSparseStorageType): one format on both sides keeps it, and a sparse
    operand times a dense one keeps the sparse operand's format."""
    lhs, rhs = ins[0], ins[1]
    if lhs == rhs:
        return [lhs]
    if {lhs, rhs} in ({ROW_SPARSE, DEFAULT}, {CSR, DEFAULT}):
        return [lhs if lhs != DEFAULT else rhs]
    return [DEFAULT]


def csr_times_dense(attrs: dict, ins: List[str]) -> List[str]:
    """broadcast_mul/div (MXNet's BinaryBroadcastMulStorageType): csr (op) dense is csr."""
    return [CSR if (ins[0], ins[1]) == (CSR, DEFAULT) else DEFAULT]


def keeps_sparse(attrs: dict, ins: List[str]) -> List[str]:
    """The input's storage type (MXNet's BinaryScalarStorageType for _mul_scalar/_div_scalar and the
    _scatter_*_scalar ops: computed on the stored values)."""
    return [ins[0]]


def sparse_if_scalar_zero(attrs: dict, ins: List[str]) -> List[str]:
    """_plus_scalar/_minus_scalar: sparse stays sparse only when the scalar is 0."""
    return [ins[0] if float(attrs.get("scalar", 0.0)) == 0.0 else DEFAULT]


def sparse_if_zero_maps_to_zero(fn: Callable[[float, float], float]) -> Callable:
    """Scalar comparisons (MXNet's BinaryScalarLogicStorageType): sparse stays sparse when
    fn(0, scalar) == 0, so the values not stored stay 0."""
    def rule(attrs: dict, ins: List[str]) -> List[str]:
        return [ins[0] if ins[0] == DEFAULT or fn(0.0, float(attrs.get("scalar", 0.0))) == 0 else DEFAULT]
    return rule


def dot(attrs: dict, ins: List[str]) -> List[str]:
    """MXNet's DotForwardInferStorageType: csr.T . dense/rsp -> row_sparse; csr . dense/rsp -> default;
    dense . csr -> csr (default with transpose_b); `forward_stype` chooses where MXNet allows it and
    otherwise names the output of the fallback."""
    lhs, rhs = ins[0], ins[1]
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    hint = attrs.get("forward_stype") or None
    if lhs == CSR and ta and not tb and rhs in (DEFAULT, ROW_SPARSE):
        return [hint or ROW_SPARSE]
    if lhs == DEFAULT and rhs == CSR and not ta:
        return [hint or (DEFAULT if tb else CSR)]
    return [hint or DEFAULT]


def square_sum(attrs: dict, ins: List[str]) -> List[str]:
    """_square_sum (MXNet's SquareSumForwardInferStorageType): of a row_sparse array, summed over
    axis 1 with keepdims, row_sparse (the rows stored); every other case default."""
    axis = attrs.get("axis")
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,) if axis is not None else ()
    if ins[0] == ROW_SPARSE and axes and axes[0] == 1 and attrs.get("keepdims"):
        return [ROW_SPARSE]
    return [DEFAULT]


def quadratic(attrs: dict, ins: List[str]) -> List[str]:
    """contrib.quadratic (MXNet's QuadraticOpStorageType): csr stays csr when c == 0."""
    return [CSR if ins[0] == CSR and float(attrs.get("c", 0.0)) == 0.0 else DEFAULT]


def lhs_row_sparse(attrs: dict, ins: List[str]) -> List[str]:
    """A row_sparse first input gives a row_sparse result (_scatter_elemwise_div, _sparse_retain)."""
    return [ROW_SPARSE if ins[0] == ROW_SPARSE else DEFAULT]


def csr_rows(attrs: dict, ins: List[str]) -> List[str]:
    """take (MXNet's TakeOpForwardStorageType): rows (axis 0) of a csr array taken by dense indices are csr."""
    return [CSR if ins[0] == CSR and ins[1] == DEFAULT and attrs.get("axis", 0) == 0 else DEFAULT]


def csr_unit_step_slice(attrs: dict, ins: List[str]) -> List[str]:
    """slice (MXNet's SliceForwardInferStorageType): a csr slice with unit steps is csr."""
    step = tuple(attrs.get("step") or ())
    begin = tuple(attrs.get("begin") or ())
    if ins[0] == CSR and all(s in (None, 1) for s in step) and 1 <= len(begin) <= 2:
        return [CSR]
    return [DEFAULT]


def requested(attrs: dict, ins: List[str]) -> List[str]:
    """cast_storage: the storage type asked for."""
    return [attrs["stype"]]
