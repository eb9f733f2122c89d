"""A character-level LSTM language model in Gluon, trained on the docstrings of Python's standard library.

The text ships with every Python (the documentation strings of a fixed list of stdlib modules and of
their public functions and classes), so nothing is downloaded.  The model is MXNet 1.x Gluon code run on
ember: Embedding -> gluon.rnn.LSTM (the fused RNN operator) -> Dense on every step, one HybridBlock,
hybridized, trained with truncated back-propagation through time (the LSTM states are carried from one
window to the next and detached), `autograd.record()`, SoftmaxCrossEntropyLoss, gradient clipping and
`gluon.Trainer('adam')`.  It prints the perplexity on held-out text before training and after each
epoch (a model that has learnt nothing scores the vocabulary size, 94 here; the 6 default epochs, about
half a minute on 2 cores, bring it to ~7.7, with words and docstring layout in the sample), then
samples a short text from the trained model, one character at a time.

    python examples/lstm_char_lm.py [--epochs 6] [--hidden 128] [--quick]

`--quick` (a few seconds: smaller model, less text, one short epoch) is what the test runs.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # this checkout's ember
import ember as mx  # noqa: E402

gluon, autograd = mx.gluon, mx.autograd

# Prose-heavy modules; their docstrings are ~145k characters on CPython 3.11.
MODULES = ("argparse", "json", "re", "string", "textwrap", "collections", "difflib", "heapq", "itertools",
           "random", "statistics", "shutil", "subprocess", "unittest", "logging", "pickle", "csv", "fractions",
           "decimal", "datetime", "calendar", "pathlib", "functools", "inspect", "zipfile", "tarfile")


def stdlib_docstrings(modules=MODULES) -> str:
    """The docstrings of `modules` and of their public functions and classes, in a fixed order."""
    parts = []
    for name in modules:
        module = importlib.import_module(name)
        docs = [inspect.getdoc(module)]
        for attr in sorted(vars(module)):
            obj = getattr(module, attr)
            if not attr.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) \
                    and getattr(obj, "__module__", None) == module.__name__:
                docs.append(inspect.getdoc(obj))
        parts.extend(d for d in docs if d)
    return "\n\n".join(parts)


class CharLSTM(gluon.HybridBlock):
    """Embedding -> LSTM -> Dense over every step; inputs and outputs are (steps, batch) in TNC."""

    def __init__(self, vocab: int, embed: int, hidden: int, layers: int, dropout: float, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embedding = gluon.nn.Embedding(vocab, embed)
            self.rnn = gluon.rnn.LSTM(hidden, num_layers=layers, dropout=dropout, input_size=embed)
            self.decoder = gluon.nn.Dense(vocab, flatten=False, in_units=hidden)

    def hybrid_forward(self, F, tokens, h, c):
        out, (h, c) = self.rnn(self.embedding(tokens), [h, c])
        return self.decoder(out), h, c

    def begin_state(self, batch_size: int):
        return self.rnn.begin_state(batch_size)


def batchify(ids: np.ndarray, batch_size: int) -> np.ndarray:
    """Cut the id stream into `batch_size` parallel streams: (steps, batch), stream b reads column b."""
    steps = len(ids) // batch_size
    return ids[:steps * batch_size].reshape(batch_size, steps).T.copy()


def windows(streams: np.ndarray, seq_len: int):
    """(input, target) windows of `seq_len` steps; the target is the input shifted by one character."""
    for start in range(0, streams.shape[0] - 1, seq_len):
        n = min(seq_len, streams.shape[0] - 1 - start)
        yield streams[start:start + n], streams[start + 1:start + 1 + n]


def char_losses(loss_fn, out, targets: np.ndarray):
    """Cross-entropy of every character: (steps*batch,) losses of the (steps, batch, vocab) scores."""
    return loss_fn(out.reshape((-1, out.shape[-1])), mx.nd.array(targets.reshape(-1)))


def perplexity(net, streams: np.ndarray, seq_len: int, loss_fn) -> float:
    """exp(mean cross-entropy per character) of `net` over `streams` (states carried across windows)."""
    h, c = net.begin_state(streams.shape[1])
    total, count = 0.0, 0
    for x, y in windows(streams, seq_len):
        out, h, c = net(mx.nd.array(x), h, c)
        total += float(char_losses(loss_fn, out, y).sum().asscalar())
        count += y.size
    return math.exp(total / count)


def sample(net, vocab: list, index: dict, prime: str, length: int, temperature: float, seed: int) -> str:
    """Feed `prime`, then draw `length` characters one at a time from the softmax at `temperature`."""
    rng = np.random.RandomState(seed)
    h, c = net.begin_state(1)
    out, h, c = net(mx.nd.array([[index[ch]] for ch in prime]), h, c)
    text = prime
    for _ in range(length):
        logits = out[-1, 0].asnumpy().astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        nxt = int(rng.choice(len(vocab), p=p / p.sum()))
        text += vocab[nxt]
        out, h, c = net(mx.nd.array([[nxt]]), h, c)
    return text


def train(args) -> dict:
    """Train on the stdlib docstrings; returns the perplexities, losses and the sample."""
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    text = stdlib_docstrings()[:args.chars]
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    ids = np.array([index[ch] for ch in text], dtype=np.float32)
    split = int(len(ids) * 0.9)
    train_streams = batchify(ids[:split], args.batch_size)
    valid_streams = batchify(ids[split:], args.batch_size)
    print(f"text: {len(text)} characters of stdlib docstrings, vocabulary {len(vocab)}; "
          f"{split} for training, {len(ids) - split} held out")

    net = CharLSTM(len(vocab), args.embed, args.hidden, args.layers, args.dropout)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": args.lr})
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]

    ppl0 = perplexity(net, valid_streams, args.seq_len, loss_fn)
    print(f"held-out perplexity before training: {ppl0:.1f}")
    losses, ppls = [], [ppl0]
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        h, c = net.begin_state(args.batch_size)
        total, count = 0.0, 0
        for step, (x, y) in enumerate(windows(train_streams, args.seq_len)):
            if args.max_steps and step >= args.max_steps:
                break
            h, c = h.detach(), c.detach()  # truncated BPTT: carry the states, not their history
            with autograd.record():
                out, h, c = net(mx.nd.array(x), h, c)
                loss = char_losses(loss_fn, out, y)
            loss.backward()
            grads = [p.grad() for p in params]
            gluon.utils.clip_global_norm(grads, args.clip * x.size)
            trainer.step(x.size)
            step_loss = float(loss.mean().asscalar())
            losses.append(step_loss)
            total, count = total + step_loss * x.size, count + x.size
        ppl = perplexity(net, valid_streams, args.seq_len, loss_fn)
        ppls.append(ppl)
        print(f"epoch {epoch}: training perplexity {math.exp(total / count):.2f}, "
              f"held-out perplexity {ppl:.2f}  ({time.time() - start:.1f} s)", flush=True)
    text_out = sample(net, vocab, index, args.prime, args.sample_chars, args.temperature, args.seed)
    print("sample:\n" + text_out)
    return {"perplexities": ppls, "losses": losses, "vocab": len(vocab), "sample": text_out}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--chars", type=int, default=60_000, help="characters of docstrings to use")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=48)
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=0.25, help="global gradient-norm bound per character")
    p.add_argument("--max-steps", type=int, default=0, help="stop each epoch after this many steps (0: all)")
    p.add_argument("--prime", default="Return the ")
    p.add_argument("--sample-chars", type=int, default=200)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a few seconds: small model, little text, 1 short epoch")
    args = p.parse_args(argv)
    if args.quick:
        args.epochs, args.chars, args.hidden, args.max_steps, args.sample_chars = 1, 20_000, 64, 25, 40
    return args


def main(argv=None) -> dict:
    """Run the example; returns train()'s results."""
    return train(parse_args(argv))


if __name__ == "__main__":
    main()
