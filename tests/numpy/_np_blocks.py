"""A HybridBlock running a given function, for the mx.np tests' imperative-vs-hybridized checks."""
from ember.gluon import HybridBlock


class FnBlock(HybridBlock):
    """`fn(F, *inputs)` as a block: the same code runs imperatively and, hybridized, traced."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def hybrid_forward(self, F, *args):
        return self._fn(F, *args)
