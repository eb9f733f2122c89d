"""The engine's API for components that push native work (C code that pushes engine ops itself).

The native module (`ember.engine._native`, built from native/: docs/engine.md, "The native
module") holds the engine and the C components built with it: the collective queue the
distributed kvstore runs on (native/collectives.h) and host copies as engine ops
(native/host_copy.h), numpy inner loops run back to back (native/ufunc_loops.h), the image
ops' per-sample kernels (native/image_kernels.h), the one-pass SGD step of the update ops
(native/update_kernels.h), relu and its gradient (native/act_kernels.h), 2-D max pooling (native/pool_kernels.h), a convolution's window
copies (native/conv_kernels.h), BatchNorm's per-channel passes (native/norm_kernels.h), an LSTM
direction over a sequence (native/lstm_kernels.h, on the installed sgemm: native/gemm.h) and softmax over
rows (native/softmax_kernels.h).
Python code outside ember/engine reaches them only through this module.

    engine()                        the C engine (`ember_engine *`)
    op_name(name)                   an interned C string for an op name
    register_error(exc, name)       an error id that wait()/wait_all() raise as `exc`
    flush_bulk()                    push this thread's bulk group first (C pushes bypass it)
    push_host_copy(...), host_copies_done()
    ufunc_loops(loops)              one call running numpy inner loops back to back
    reverse_axis(src, dst, axis)    a flip copy of a C-contiguous array
    bytes_to_unit_chw(src, dst)     ToTensor of uint8 HWC (NHWC) images
    normalize_f32(src, dst, mean, std)   Normalize of float32 CHW (NCHW) tensors
    sgd_f32(w, g, out, a, b, clip, keep)   the SGD step in one pass
    relu_f32(x, y), relu_backward_f32(dy, y, dx)   relu and its gradient in one pass
    max_pool2d_f32(x, y, ...), max_pool2d_backward_f32(x, y, dy, dx, ...)   2-D max pooling
    im2col_f32(x, cols, ...), col2im_f32(cols, x, ...)   a convolution's window copies
    winograd_*_f32                  Winograd F(2x2, 3x3) transforms (3x3 convolutions and their gradients)
    channel_mean_var_f32, channel_grad_sums_f32, channel_affine_f32   BatchNorm's passes
    lstm_forward_f32, lstm_backward_f32   an LSTM direction over a sequence
    gemm_ready()                    whether those have an sgemm (oneMKL's or numpy's)
    gemm_splits(), sgemm_f32        whether it is oneMKL's, split over the team; a product through it
    fast_math_available()           whether the LSTM and softmax kernels' vector math runs here
    softmax_rows_f32, softmax_rows_backward_f32   softmax / log_softmax over the last axis
    CollectiveQueue                 the in-order allreduce queue (collectives.h)
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

from . import core
from . import _native
from ._native import ffi, lib

engine = core.native_engine
op_name = core.op_name
register_error = core.register_error
flush_bulk = core.flush_bulk
from_buffer = ffi.from_buffer
NULL = ffi.NULL


def push_host_copy(src, dst, src_var: core.Var, dst_var: core.Var, priority: int, name: str) -> int:
    """Push a memcpy of the host buffer `src` into `dst` (same size, not overlapping) as an op
    reading `src_var` and writing `dst_var` (native/host_copy.h); 0, or the engine's negative
    code (nothing was pushed).  The buffers must stay alive until host_copies_done() counts it."""
    (sh,), (dh,) = core.op_handles([src_var], [dst_var])
    return lib.ember_push_host_copy(core._E, from_buffer(src), from_buffer(dst), src.nbytes, sh, dh, priority,
                                    op_name(name))


def host_copies_done() -> int:
    """How many pushed host copies have run (or were dropped as failed) in this process."""
    return lib.ember_host_copies_done()


_LOOP_FN = "void (*)(char **, const intptr_t *, const intptr_t *, void *)"


def ufunc_loops(loops: Sequence[tuple]) -> Callable[[], None]:
    """A call without arguments that runs numpy inner loops in order (native/ufunc_loops.h), each
    given as (function address, data address, operand addresses (inputs, then the output), elements,
    strides in bytes).  The caller keeps the operands alive while the call may run."""
    arr = ffi.new("ember_ufunc_loop[]", len(loops))
    for c, (fn, data, addresses, n, steps) in zip(arr, loops):
        c.fn = ffi.cast(_LOOP_FN, fn)
        c.data = ffi.cast("void *", data)
        for i, (address, step) in enumerate(zip(addresses, steps)):
            c.args[i] = ffi.cast("char *", address)
            c.steps[i] = step
        c.n = n
    return partial(lib.ember_run_ufunc_loops, arr, len(loops))


# The image kernels (native/image_kernels.h) on numpy arrays, each one call that checks and runs:
# False (nothing done) unless both arrays are C-contiguous buffers that do not overlap, of the
# shapes and formats said below.
# reverse_axis(src, dst, axis): dst = src reversed along `axis` (one shape and format).
reverse_axis: Callable[..., bool] = _native.reverse_axis
# bytes_to_unit_chw(src, dst): dst (C, H, W) / (N, C, H, W) float32 = src (H, W, C) / (N, H, W, C) uint8 / 255.
bytes_to_unit_chw: Callable[..., bool] = _native.bytes_to_unit_chw
# normalize_f32(src, dst, mean, std): dst = (src - mean[c]) / std[c] on float32 (C, H, W) / (N, C, H, W)
# arrays of one shape (dst src itself or apart), mean and std tuples of 1 or C <= 4 numbers.
normalize_f32: Callable[..., bool] = _native.normalize_f32

# The SGD step (native/update_kernels.h) on numpy arrays: False (nothing done) unless w, g and out
# are C-contiguous float32 buffers of one size, out being w or overlapping neither.
# sgd_f32(w, g, out, a, b, clip, keep): out = w * keep - step(g), step(g) = g * a (b == 1, clip < 0)
# or clip(g * a) * b, each operation rounded to float32 as numpy's.
sgd_f32: Callable[..., bool] = _native.sgd_f32

# relu over float32 buffers of one length, C-contiguous (native/act_kernels.h): False (nothing done)
# where they do not fit.  relu_f32(x, y): y = x < 0 ? 0 : x (numpy's maximum(x, 0), bit for bit; y may
# be x).  relu_backward_f32(dy, y, dx): dx = dy * (y > 0) (dx may be dy or y).
relu_f32: Callable[..., bool] = _native.relu_f32
relu_backward_f32: Callable[..., bool] = _native.relu_backward_f32

# Max pooling over 2-D maps (native/pool_kernels.h): False (nothing done) unless the arrays are 4-D
# C-contiguous float32 buffers, x (N, C, H, W) and y (N, C, OH, OW), dy shaped as y and dx as x, the
# output not overlapping an input; window (kh, kw), step (sh, sw) >= 1, padding before (ph, pw) >= 0.
# max_pool2d_f32(x, y, kh, kw, sh, sw, ph, pw): y = the maximum of each window (-inf outside x).
max_pool2d_f32: Callable[..., bool] = _native.max_pool2d_f32
# max_pool2d_backward_f32(x, y, dy, dx, kh, kw, sh, sw, ph, pw): dx = the gradient given dy.
max_pool2d_backward_f32: Callable[..., bool] = _native.max_pool2d_backward_f32

# A convolution's window copies (native/conv_kernels.h): False (nothing done) unless x is a 4-D
# C-contiguous float32 map (C, N, H, W), or (C, H, W, N) with batch_last, already padded, every window
# inside it, and cols a C-contiguous float32 buffer of exactly C * kh * kw * N * oh * ow elements
# ((C, kh, kw, N, oh, ow) or (C, kh, kw, oh, ow, N)) not overlapping x; oh, ow, kh, kw, sh, sw, dh, dw >= 1.
# im2col_f32(x, cols, batch_last, oh, ow, kh, kw, sh, sw, dh, dw): cols = every window of x.
im2col_f32: Callable[..., bool] = _native.im2col_f32
# col2im_f32(cols, x, batch_last, oh, ow, kh, kw, sh, sw, dh, dw): x += cols summed onto their windows,
# kernel position by kernel position (numpy's order of additions).
col2im_f32: Callable[..., bool] = _native.col2im_f32
# Winograd F(2x2, 3x3) for 3x3 convolutions with stride 1 and padding 1 (native/conv_kernels.h): False
# (nothing done) unless the arrays are C-contiguous float32 buffers of the sizes below, the written
# one apart from the others, and (for the transforms of w, x and dy) every value finite.  Tiles:
# t = n * ((h + 1) // 2) * ((w + 1) // 2).
# winograd_weights_f32(w, u, data_grad): u (16, c, f) = G g G^T of every kernel of w (f, c, 3, 3);
# data_grad: u (16, f, c) of the kernels rotated by 180 degrees (the data gradient's convolution).
winograd_weights_f32: Callable[..., bool] = _native.winograd_weights_f32
# winograd_input_f32(x, v): v (16, t, c) = B^T d B of every 4x4 tile d of x (n, c, h, w) padded by 1.
winograd_input_f32: Callable[..., bool] = _native.winograd_input_f32
# winograd_output_f32(m, y, shift, relu): y (n, f, h, w) = A^T m A of every tile of m (16, t, f), plus
# shift (f values, or None) per channel, then max(., 0) when relu.
winograd_output_f32: Callable[..., bool] = _native.winograd_output_f32
# The weight gradient: winograd_grad_output_f32(dy, dm): dm (16, t, f) = A dY A^T of every 2x2 block of
# dy (n, f, h, w); winograd_grad_weights_f32(du, dw): dw (f, c, 3, 3) = G^T dU G of du (16, c, f).
winograd_grad_output_f32: Callable[..., bool] = _native.winograd_grad_output_f32
winograd_grad_weights_f32: Callable[..., bool] = _native.winograd_grad_weights_f32

# BatchNorm's per-channel passes (native/norm_kernels.h) over data viewed as (outer, channels, inner)
# around `axis`: False (nothing done) unless every array is a C-contiguous float32 buffer, the
# per-channel ones of exactly one element per channel, and no output overlaps another array (but
# channel_affine_f32's out may be x or dy itself).  Sums run in float lanes and double, so results
# differ from numpy's in the last bits.
# channel_mean_var_f32(x, axis, mean, var): the mean and biased variance of each channel.
channel_mean_var_f32: Callable[..., bool] = _native.channel_mean_var_f32
# channel_grad_sums_f32(dy, x, mean, axis, sum_dy, sum_dy_xc): sum(dy) and sum(dy * (x - mean)) per channel.
channel_grad_sums_f32: Callable[..., bool] = _native.channel_grad_sums_f32
# channel_affine_f32(dy, a, x, m, b, d, axis, out): out = dy * a + (x - m) * b + d per channel (dy, a None: no dy term).
channel_affine_f32: Callable[..., bool] = _native.channel_affine_f32

# One direction of an LSTM layer over a sequence (native/lstm_kernels.h: every step's recurrent GEMM
# through the installed sgemm, then its element-wise part; gate order i, f, g, o), activations within a
# few ulp of numpy's: False (nothing done) without that sgemm (gemm_ready()) or unless every array
# is a C-contiguous float32 buffer of the sizes below and no written array overlaps another; the
# forward and the softmax kernels below also answer False on an x86-64 CPU without AVX2 and FMA
# (their loops would run scalar there, slower than numpy).
# lstm_forward_f32(wh, bias, gates, c_seq, tc, h_seq, reverse): h_seq (T+1, n, h) and c_seq the
# states (the initial ones given), wh (4h, h), bias (4h); gates (T, 4, n, h) holds each step's input
# projection (n, 4h) on entry and its activated gates after; tc (T, n, h) = tanh of the cell states.
lstm_forward_f32: Callable[..., bool] = _native.lstm_forward_f32
# fast_math_available(): whether those loops run vectorized on this CPU (else the entries answer False).
fast_math_available: Callable[[], bool] = _native.fast_math
# lstm_backward_f32(wh, gates, c_seq, tc, d_out, dh, dc, d_a, reverse): d_a (T, n, 4h) = the gradient
# of every step's pre-activations given d_out (T, n, h) for the outputs and dh, dc (n, h) for the
# final states, which become the initial states' gradients.
lstm_backward_f32: Callable[..., bool] = _native.lstm_backward_f32


# pool_prewake(): wakes the CPU team's sleeping helpers and restarts their busy-wait, without
# waiting (native/thread_pool.h): called where products are about to run, so that the wake-up
# overlaps the work before them.  Keeps the GIL.
pool_prewake: Callable[[], None] = _native.pool_prewake

# run_ahead_drain(): waits, without the GIL, until as many ops have ended as were pending at the call
# (native/engine.h); returns at once in a worker or an op pushing ops, and gives up after 1 s in
# which no op ends.  The run-ahead bound by bytes (ember.imperative.storage.alloc) calls it.
run_ahead_drain: Callable[[], None] = _native.run_ahead_drain


def gemm_ready() -> bool:
    """Whether the native kernels have a BLAS sgemm (oneMKL's or numpy's OpenBLAS, installed at import)."""
    return bool(lib.ember_gemm_ready())


def gemm_splits() -> bool:
    """Whether the installed sgemm is a sequential one whose products the CPU team splits (oneMKL's):
    then every float32 product is faster through sgemm_f32 than through numpy's matmul."""
    return bool(lib.ember_gemm_splits())


# sgemm_f32(a, b, c, trans_a, trans_b, beta, bias=None): c = op(a) op(b) + beta * c (+ bias, added to
# every row: each part of a split product adds it to its own block) through the installed sgemm, on
# 2-D C-contiguous float32 arrays (a transposed is stored (k, m); bias: c's columns' count of floats);
# False, nothing done, when they do not fit (shapes, an empty product, c overlapping a, b or bias) or no
# sgemm is installed.
sgemm_f32: Callable[..., bool] = _native.sgemm_f32


# softmax over the last axis (native/softmax_kernels.h), exponentials within 2 ulp of numpy's: False
# (nothing done) unless the arrays are C-contiguous float32 buffers of one shape, the output the
# input itself or apart from it.
# softmax_rows_f32(x, y, take_log): y = softmax(x) (take_log: log_softmax(x)).
softmax_rows_f32: Callable[..., bool] = _native.softmax_rows_f32
# softmax_rows_backward_f32(dy, y, dx, take_log): dx = the gradient given dy and y = the forward's
# output (dx may be dy itself, not y).
softmax_rows_backward_f32: Callable[..., bool] = _native.softmax_rows_backward_f32
# softmax_ce_rows_f32(x, label, logp, loss): logp = log_softmax of each row of the 2-D x, loss[r] =
# -logp[r, c] with c the row's label truncated and clipped into the classes (pick's clip mode): the
# bits of log_softmax, pick and negative.  softmax_ce_rows_backward_f32(g, logp, label, dx): the
# gradient w.r.t. x given g per row (pick's and log_softmax's gradients).  float32 C-contiguous
# buffers; False (nothing done) where they do not fit or a label is not a finite class number.
softmax_ce_rows_f32: Callable[..., bool] = _native.softmax_ce_rows_f32
softmax_ce_rows_backward_f32: Callable[..., bool] = _native.softmax_ce_rows_backward_f32


# Why a collective queue asks its check callback (native/collectives.h).
COLL_WAITING = lib.EMBER_COLL_WAITING
COLL_TIMEOUT = lib.EMBER_COLL_TIMEOUT
COLL_MPI_ERROR = lib.EMBER_COLL_MPI_ERROR
COLL_INPUT_FAILED = lib.EMBER_COLL_INPUT_FAILED
_live = set()  # callback handles of the queues not destroyed yet


@ffi.def_extern()
def ember_py_coll_check(ctx, name, why, code):
    queue = ffi.from_handle(ctx)
    try:
        return queue._check(ffi.string(name).decode(), why, code)
    except BaseException as exc:  # noqa: BLE001 - a callback must answer: fail the call
        return queue._on_check_error(exc)


class CollectiveQueue:
    """An in-order allreduce queue run by a C thread (native/collectives.h), on MPI entry points
    the caller looked up.

    check(name, why, code) -> error id (0: keep waiting) is called from that thread when a
    request waits long (why=COLL_WAITING), times out, fails in MPI or has a failed input;
    on_check_error(exc) -> error id answers when check itself raised.
    """

    def __init__(self, iallreduce: int, test: int, handle_size: int, comm: int, op_sum: int, in_place: int,
                 window: int, chunk_bytes: int, spin_seconds: float, timeout: float, check_every: float,
                 check: Callable[[str, int, int], int], on_check_error: Callable[[BaseException], int]):
        self._check, self._on_check_error = check, on_check_error
        # The C thread calls back through this handle until the queue is destroyed, even if its
        # owner is dropped without stop(): keep it alive until then.
        self._self_handle = ffi.new_handle(self)
        _live.add(self._self_handle)
        fns = ffi.new("ember_mpi_fns *", {"iallreduce": ffi.cast("void *", iallreduce),
                                          "test": ffi.cast("void *", test), "handle_size": handle_size,
                                          "comm": comm, "op_sum": op_sum, "in_place": in_place})
        self._c = lib.ember_coll_create(core._E, fns, window, chunk_bytes, spin_seconds, timeout, check_every,
                                        lib.ember_py_coll_check, self._self_handle)
        if self._c == NULL:
            self._c = None
            _live.discard(self._self_handle)
            raise RuntimeError("could not start the native collective queue's thread")
        self._allreduce = lib.ember_coll_allreduce
        self._final_max_in_flight = 0

    def prepare(self, send, recv, count: int, dtype: int, itemsize: int, copy_to,
                reads: Sequence[core.Var], writes: Sequence[core.Var], name: str) -> tuple:
        """The C arguments of an allreduce of `send` (None: `recv` in place) into `recv`, copied
        into `copy_to` if given, as an op reading `reads` and writing `writes` (issue() it)."""
        r, w = core.op_handles(reads, writes)
        return (NULL if send is None else from_buffer(send), from_buffer(recv), count, dtype, itemsize,
                NULL if copy_to is None else from_buffer(copy_to), ffi.new("ember_var *[]", r) if r else NULL,
                len(r), ffi.new("ember_var *[]", w), len(w), op_name(name))

    def issue(self, call: tuple, priority: int) -> int:
        """Issue a prepare()d call; its sequence number, -1 if the queue is stopping, -2 on bad
        arguments."""
        send, recv, count, dtype, itemsize, copy_to, r, nr, w, nw, cname = call
        return self._allreduce(self._c, send, recv, count, dtype, itemsize, copy_to, r, nr, w, nw, priority, cname)

    def finished(self) -> int:
        """How many calls have finished (in sequence order, failed ones included)."""
        return lib.ember_coll_finished(self._c)

    def max_in_flight(self) -> int:
        """The most requests that were in flight at once (also after stop())."""
        return self._final_max_in_flight if self._c is None else lib.ember_coll_max_in_flight(self._c)

    @property
    def closed(self) -> bool:
        return self._c is None

    def stop(self, timeout: float) -> bool:
        """Finish the calls issued and destroy the queue; False (queue left running) if calls were
        still outstanding after `timeout` seconds."""
        if self._c is None:
            return True
        if lib.ember_coll_stop(self._c, int(timeout * 1000)) != 0:
            return False
        self._final_max_in_flight = lib.ember_coll_max_in_flight(self._c)
        lib.ember_coll_destroy(self._c)
        self._c = None
        _live.discard(self._self_handle)
        return True
