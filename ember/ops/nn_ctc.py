"""CTCLoss: Connectionist Temporal Classification loss (Graves et al., 2006), as MXNet 1.9.1's op.

Inputs are time-major: `data` (T, N, C) holds unnormalised activations (the op applies a
softmax over C), `label` (N, L) the label sequences, optionally `data_lengths` (N,) and
`label_lengths` (N,).  The output is the negative log-likelihood of each label sequence, (N,).

Labels follow MXNet's convention: with blank_label='first' the blank is class 0, labels are
1..C-1 and, without label_lengths, a label sequence ends at its first 0; with 'last' the
blank is class C-1, labels are 0..C-2 and a sequence ends at its first -1.  As in MXNet (whose
CPU kernel is Baidu's warp-ctc), a sequence that cannot be aligned in its frames
(label length + repeated neighbours > frames) gets loss 0 and gradient 0, and frames beyond
`data_lengths` get gradient 0.  An empty label sequence gets -log(product of blank
probabilities), the exact value (MXNet returns uninitialised memory there).

The forward pass is the log-space alpha recursion over the blank-extended label sequence,
vectorised over the batch and the extended positions (one numpy step per frame); the
backward op `_backward_CTCLoss` adds the beta recursion and writes
softmax(data) - posterior occupancy of each class, times the head gradient.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from .registry import Attr, OpDef, register

_ATTRS = {
    "use_data_lengths": Attr("bool", False, doc="take a data_lengths input (N,) with each sequence's frames"),
    "use_label_lengths": Attr("bool", False, doc="take a label_lengths input (N,) with each label's length"),
    "blank_label": Attr("str", "first", choices=("first", "last"),
                        doc="blank is class 0 ('first', labels padded with 0) or C-1 ('last', padded with -1)"),
}


def _inputs(attrs: dict) -> List[str]:
    names = ["data", "label"]
    if attrs["use_data_lengths"]:
        names.append("data_lengths")
    if attrs["use_label_lengths"]:
        names.append("label_lengths")
    return names


# -- inference ---------------------------------------------------------------------------------
def _infer_shape(attrs: dict, in_shapes: list):
    """MXNet's checks (same wording), tolerating unknown shapes during symbolic inference."""
    names = _inputs(attrs)
    if len(in_shapes) != len(names):
        raise OperatorError(f"CTCLoss: expects {len(names)} inputs ({', '.join(names)}), got {len(in_shapes)}")
    d, lab = in_shapes[0], in_shapes[1]
    if d is not None and len(d) != 3:
        raise ShapeError(f"CTCLoss: the number of dimensions of the data array must be 3 "
                         f"(sequence_length, batch_size, alphabet_size), got shape {tuple(d)}")
    if lab is not None and len(lab) != 2:
        raise ShapeError(f"CTCLoss: the number of dimensions of the labels array must be 2 "
                         f"(batch_size, label_sequence_length), got shape {tuple(lab)}")
    batch = d[1] if d is not None else (lab[0] if lab is not None else None)
    if d is not None and lab is not None:
        if None not in (d[1], lab[0]) and d[1] != lab[0]:
            raise ShapeError(f"CTCLoss: the batch size for the labels and data arrays must be the same: "
                             f"data {tuple(d)} has {d[1]}, label {tuple(lab)} has {lab[0]}")
        if None not in (d[0], lab[1]) and d[0] < lab[1]:
            raise ShapeError(f"CTCLoss: the max number of labels cannot exceed the maximum sequence length "
                             f"of the data: label {tuple(lab)} has {lab[1]}, data {tuple(d)} has {d[0]} frames")
    outs_in = [d, lab]
    for what, pos in (("data lengths", 2), ("label lengths", 2 + attrs["use_data_lengths"])):
        if pos >= len(names) or names[pos] != what.replace(" ", "_"):
            continue
        s = in_shapes[pos]
        if s is not None:
            if len(s) != 1:
                raise ShapeError(f"CTCLoss: the {what} array must be a vector, got shape {tuple(s)}")
            if batch is not None and s[0] is not None and s[0] != batch:
                raise ShapeError(f"CTCLoss: the batch size for the data and {what} must be the same: "
                                 f"{what} {tuple(s)}, batch size {batch}")
        outs_in.append(s if s is not None else ((batch,) if batch is not None else None))
    return outs_in, [(batch,) if batch is not None else None]


def _infer_type(attrs: dict, in_dtypes: list):
    dt = in_dtypes[0]
    if dt is not None and np.dtype(dt).kind != "f":
        raise OperatorError(f"CTCLoss: data must be floating point, got {np.dtype(dt).name}")
    # labels and lengths keep their own dtype; unknown ones default to the data's (MXNet's real_t labels)
    return [dt] + [d if d is not None else dt for d in in_dtypes[1:]], [dt]


# -- the recursions ----------------------------------------------------------------------------
class _Problem:
    """Everything both recursions need, built from the op's inputs (float64 internally)."""

    def __init__(self, xp, attrs: dict, inputs: list):
        data = inputs[0]
        self.xp = xp
        T, N, C = data.shape
        self.T, self.N, self.C = T, N, C
        self.blank = 0 if attrs["blank_label"] == "first" else C - 1
        pos = 2
        if attrs["use_data_lengths"]:
            frames = inputs[pos].astype(np.int64).reshape(N)
            pos += 1
            if N and (int(frames.min()) < 0 or int(frames.max()) > T):
                raise OperatorError(f"CTCLoss: data_lengths must be in [0, {T}] (the data's sequence length), "
                                    f"got {int(frames.min())}..{int(frames.max())}")
        else:
            frames = xp.full(N, T, dtype=np.int64)
        labels = inputs[1].astype(np.int64).reshape(N, -1)
        L = labels.shape[1]
        if attrs["use_label_lengths"]:
            lengths = inputs[pos].astype(np.int64).reshape(N)
            if N and (int(lengths.min()) < 0 or int(lengths.max()) > L):
                raise OperatorError(f"CTCLoss: label_lengths must be in [0, {L}] (the label array's width), "
                                    f"got {int(lengths.min())}..{int(lengths.max())}")
        else:
            # a label sequence ends at the first padding value (0 with a first blank, -1 with a last one)
            pad = 0 if attrs["blank_label"] == "first" else -1
            is_pad = labels == pad
            lengths = (xp.where(is_pad.any(axis=1), is_pad.argmax(axis=1), L).astype(np.int64) if L
                       else xp.zeros(N, dtype=np.int64))
        in_label = xp.arange(L)[None, :] < lengths[:, None]
        bad = in_label & ((labels < 0) | (labels >= C))
        if bool(bad.any()):
            b, j = (int(v[0]) for v in xp.nonzero(bad))
            raise OperatorError(f"CTCLoss: label {int(labels[b, j])} of sequence {b} (position {j}) is outside "
                                f"the alphabet [0, {C}) of data with {C} classes")
        self.frames, self.lengths = frames, lengths
        S = 2 * L + 1
        self.S = S
        # the blank-extended label sequences: blank, l1, blank, l2, ..., blank (padding -> blank)
        ext = xp.full((N, S), self.blank, dtype=np.int64)
        ext[:, 1::2] = xp.where(in_label, labels, self.blank)
        self.ext = ext
        self.ext_len = 2 * lengths + 1
        self.valid_pos = xp.arange(S)[None, :] < self.ext_len[:, None]
        # warp-ctc's skip rule: s may be reached from s-2 when it is not a blank and differs from s-2
        skip = xp.zeros((N, S), dtype=bool)
        skip[:, 2:] = (ext[:, 2:] != self.blank) & (ext[:, 2:] != ext[:, :-2])
        skip[:, :3] = False
        self.skip = skip
        repeats = (in_label[:, 1:] & (labels[:, 1:] == labels[:, :-1])).sum(axis=1) if L > 1 else 0 * lengths
        # as MXNet (warp-ctc): a sequence with too few frames for its labels gets loss 0, gradient 0
        self.feasible = lengths + repeats <= frames
        x = data.astype(np.float64)
        x = x - x.max(axis=2, keepdims=True)
        self.log_probs = x - xp.log(xp.exp(x).sum(axis=2, keepdims=True))  # log softmax, (T, N, C)
        # log emission probability of each extended position at each frame, (T, N, S)
        self.emit = xp.take_along_axis(self.log_probs, xp.broadcast_to(ext[None], (T, N, S)), axis=2)

    def _lse3(self, a, b, c):
        xp = self.xp
        m = xp.maximum(xp.maximum(a, b), c)
        m = xp.where(xp.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            return m + xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m))

    def alphas(self):
        """log alpha (T, N, S): log probability of the prefixes ending at position s at frame t."""
        xp = self.xp
        T, N, S = self.T, self.N, self.S
        neg = -np.inf
        alpha = xp.full((T, N, S), neg)
        if T == 0:
            return alpha
        first = xp.full((N, S), neg)
        first[:, 0] = self.emit[0, :, 0]
        if S > 1:
            first[:, 1] = xp.where(self.lengths > 0, self.emit[0, :, 1], neg)
        alpha[0] = first
        prev = first
        pad1 = xp.full((N, 1), neg)
        pad2 = xp.full((N, 2), neg)
        for t in range(1, T):
            one = xp.concatenate([pad1, prev[:, :-1]], axis=1)
            two = xp.where(self.skip, xp.concatenate([pad2, prev[:, :-2]], axis=1), neg)
            cur = self._lse3(prev, one, two) + self.emit[t]
            cur = xp.where(self.valid_pos, cur, neg)
            alpha[t] = cur
            prev = cur
        return alpha

    def log_likelihood(self, alpha):
        """log p(label | data) per sequence, (N,), read at each sequence's last frame."""
        xp = self.xp
        N = self.N
        if self.T == 0:
            return xp.where(self.lengths == 0, 0.0, -np.inf)
        last = alpha[xp.maximum(self.frames - 1, 0), xp.arange(N)]  # (N, S)
        end = self.ext_len - 1
        a = last[xp.arange(N), end]
        b = xp.where(end >= 1, last[xp.arange(N), xp.maximum(end - 1, 0)], -np.inf)
        with np.errstate(divide="ignore"):
            ll = xp.logaddexp(a, b)
        # zero frames: only the empty label sequence has probability (1)
        return xp.where(self.frames == 0, xp.where(self.lengths == 0, 0.0, -np.inf), ll)

    def betas(self):
        """log beta (T, N, S): log probability of emitting frames t+1.. from position s at frame t."""
        xp = self.xp
        T, N, S = self.T, self.N, self.S
        neg = -np.inf
        beta = xp.full((T, N, S), neg)
        end = xp.zeros((N, S), dtype=bool)
        ar = xp.arange(N)
        end[ar, self.ext_len - 1] = True
        end[ar, xp.maximum(self.ext_len - 2, 0)] |= self.ext_len >= 2
        init = xp.where(end, 0.0, neg)
        nxt = xp.full((N, S), neg)
        pad1 = xp.full((N, 1), neg)
        pad2 = xp.full((N, 2), neg)
        skip_from = xp.concatenate([self.skip[:, 2:], xp.zeros((N, 2), dtype=bool)], axis=1)  # s -> s+2 allowed
        for t in range(T - 1, -1, -1):
            if t < T - 1:
                e = nxt + self.emit[t + 1]
                one = xp.concatenate([e[:, 1:], pad1], axis=1)
                two = xp.where(skip_from, xp.concatenate([e[:, 2:], pad2], axis=1), neg)
                rec = self._lse3(e, one, two)
            else:
                rec = xp.full((N, S), neg)
            here = xp.where((self.frames - 1 == t)[:, None], init,
                            xp.where((t < self.frames - 1)[:, None], rec, neg))
            beta[t] = here
            nxt = here
        return beta


def _solve(xp, attrs, inputs) -> Tuple[_Problem, object, object]:
    prob = _Problem(xp, attrs, inputs)
    alpha = prob.alphas()
    return prob, alpha, prob.log_likelihood(alpha)


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    prob, _, ll = _solve(xp, attrs, inputs)
    loss = xp.where(prob.feasible, -ll, 0.0)
    outputs[0][...] = loss.astype(outputs[0].dtype, copy=False)


def _backward(ctx, attrs, inputs, outputs, aux):
    """inputs: (ograd, data, label[, data_lengths][, label_lengths]) -> data gradient."""
    xp = ctx.xp
    ograd, fwd = inputs[0], list(inputs[1:])
    prob, alpha, ll = _solve(xp, attrs, fwd)
    beta = prob.betas()
    T, N, C = prob.T, prob.N, prob.C
    ok = prob.feasible & xp.isfinite(ll)
    safe_ll = xp.where(ok, ll, 0.0)
    with np.errstate(invalid="ignore"):
        post = xp.exp(alpha + beta - safe_ll[None, :, None])  # posterior of each (frame, position)
    post = xp.where(xp.isfinite(post), post, 0.0)
    # occupancy of each class: sum the posteriors of the positions carrying it (one bincount)
    flat = ((xp.arange(T)[:, None, None] * N + xp.arange(N)[None, :, None]) * C + prob.ext[None]).reshape(-1)
    occ = xp.bincount(flat, weights=post.reshape(-1), minlength=T * N * C).reshape(T, N, C)
    grad = xp.exp(prob.log_probs) - occ
    live = (xp.arange(T)[:, None] < prob.frames[None, :]) & ok[None, :]  # (T, N)
    grad = xp.where(live[:, :, None], grad, 0.0)
    grad *= ograd.astype(np.float64).reshape(1, N, 1)
    outputs[0][...] = grad.astype(outputs[0].dtype, copy=False)


def _gradient(F, attrs, inputs, outputs, out_grads):
    g = F._backward_CTCLoss(out_grads[0], *inputs, **attrs)
    return [g] + [None] * (len(inputs) - 1)


register(OpDef(
    name="_backward_CTCLoss", attrs=_ATTRS, inputs=lambda a: ["ograd"] + _inputs(a), outputs=["data_grad"],
    infer_shape=lambda a, s: (list(s), [s[1]]),
    infer_type=lambda a, d: (list(d), [d[1]]),
    kernels={"any": _backward},
    doc="Gradient of CTCLoss with respect to its data (softmax minus the alpha-beta class posteriors)."))
register(OpDef(
    name="CTCLoss", aliases=["ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"], attrs=_ATTRS,
    # MXNet's op has a hidden second output (the gradient it precomputes), so its visible output is
    # named 'output0' (list_outputs: 'ctcloss0_output0'); ember recomputes the gradient in the backward op
    inputs=_inputs, outputs=["output0"], infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _forward}, gradient=_gradient,
    doc="Connectionist Temporal Classification loss of time-major activations (T, N, C) against "
        "label sequences (N, L): -log p(label | data) per sequence, (N,)."))
