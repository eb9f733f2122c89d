"""_contrib_Proposal / _contrib_MultiProposal: anchors, box decoding, filtering and NMS against a
straightforward loop reference; batch rows equal single-image calls; no gradient."""
import numpy as np
import pytest

import ember as mx

KW = dict(feature_stride=16, scales=(8, 16), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=80,
          rpn_post_nms_top_n=20, threshold=0.6, rpn_min_size=16)


def _reference(cls, bbox, info, kw):
    fs = kw["feature_stride"]
    base = []
    for r in kw["ratios"]:
        ws = np.round(np.sqrt(fs * fs / r))
        hs = np.round(ws * r)
        for s in kw["scales"]:
            c = 0.5 * (fs - 1)
            base.append([c - 0.5 * (ws * s - 1), c - 0.5 * (hs * s - 1), c + 0.5 * (ws * s - 1), c + 0.5 * (hs * s - 1)])
    a_n, (_, h, w) = len(base), cls.shape[1:]
    boxes, scores = [], []
    for y in range(h):
        for x in range(w):
            for a in range(a_n):
                x1, y1, x2, y2 = np.array(base[a]) + [x * fs, y * fs, x * fs, y * fs]
                bw, bh = x2 - x1 + 1, y2 - y1 + 1
                dx, dy, dw, dh = bbox[0, 4 * a:4 * a + 4, y, x]
                cx, cy = dx * bw + x1 + 0.5 * (bw - 1), dy * bh + y1 + 0.5 * (bh - 1)
                pw, ph = np.exp(dw) * bw, np.exp(dh) * bh
                b = [cx - 0.5 * (pw - 1), cy - 0.5 * (ph - 1), cx + 0.5 * (pw - 1), cy + 0.5 * (ph - 1)]
                b = [min(max(v, 0), (info[1] if i % 2 == 0 else info[0]) - 1) for i, v in enumerate(b)]
                sc = cls[0, a_n + a, y, x]
                if y >= int(info[0] / fs) or x >= int(info[1] / fs):
                    sc = -1.0
                m = kw["rpn_min_size"] * info[2]
                if b[2] - b[0] + 1 < m or b[3] - b[1] + 1 < m:
                    b = [b[0] - m / 2, b[1] - m / 2, b[2] + m / 2, b[3] + m / 2]
                    sc = -1.0
                boxes.append(b)
                scores.append(sc)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])[:kw["rpn_pre_nms_top_n"]]
    keep = []
    for i in order:
        bi = boxes[i]
        ok = True
        for j in keep:
            bj = boxes[j]
            iw = max(0, min(bi[2], bj[2]) - max(bi[0], bj[0]) + 1)
            ih = max(0, min(bi[3], bj[3]) - max(bi[1], bj[1]) + 1)
            inter = iw * ih
            union = (bi[2] - bi[0] + 1) * (bi[3] - bi[1] + 1) + (bj[2] - bj[0] + 1) * (bj[3] - bj[1] + 1) - inter
            if inter / union > kw["threshold"]:
                ok = False
                break
        if ok:
            keep.append(i)
        if len(keep) == kw["rpn_post_nms_top_n"]:
            break
    pick = [keep[i % len(keep)] for i in range(kw["rpn_post_nms_top_n"])]
    return np.array([boxes[i] for i in pick]), np.array([scores[i] for i in pick])


def _inputs(seed):
    rng = np.random.default_rng(seed)
    a_n = len(KW["scales"]) * len(KW["ratios"])
    cls = rng.random((2, 2 * a_n, 6, 7))
    bbox = (rng.random((2, 4 * a_n, 6, 7)) - 0.5) * 0.4
    info = np.array([[90.0, 100.0, 0.9], [60.0, 112.0, 1.0]])
    return cls, bbox, info


@pytest.mark.parametrize("seed", [0, 1])
def test_proposal_matches_the_loop_reference(seed):
    cls, bbox, info = _inputs(seed)
    rois, score = mx.nd.contrib.Proposal(mx.nd.array(cls[:1], dtype="float64"), mx.nd.array(bbox[:1], dtype="float64"),
                                         mx.nd.array(info[:1], dtype="float64"), output_score=True, **KW)
    want_boxes, want_scores = _reference(cls[:1], bbox[:1], info[0], KW)
    np.testing.assert_allclose(rois.asnumpy()[:, 1:], want_boxes, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(score.asnumpy()[:, 0], want_scores, rtol=1e-12)
    assert (rois.asnumpy()[:, 0] == 0).all()


def test_multi_proposal_rows_are_single_image_calls_and_have_no_gradient():
    cls, bbox, info = _inputs(2)
    multi = mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info), **KW)
    assert multi.shape == (40, 5)
    for b in range(2):
        one = mx.nd.contrib.Proposal(mx.nd.array(cls[b:b + 1]), mx.nd.array(bbox[b:b + 1]),
                                     mx.nd.array(info[b:b + 1]), **KW).asnumpy()
        np.testing.assert_allclose(multi.asnumpy()[20 * b:20 * (b + 1), 1:], one[:, 1:])
        assert (multi.asnumpy()[20 * b:20 * (b + 1), 0] == b).all()
    x = mx.nd.array(cls)
    x.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.MultiProposal(x, mx.nd.array(bbox), mx.nd.array(info), **KW)
    out.backward(mx.nd.ones(out.shape))
    assert not x.grad.asnumpy().any()
