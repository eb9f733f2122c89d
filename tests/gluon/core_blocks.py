"""Blocks written only with `F.*` operators, shared by ember's Gluon core tests and the MXNet
fixture script (tests/data/make_gluon_fixtures.py), so both frameworks build the same network."""


def define(gluon):
    """The test blocks, built on `gluon` (ember's or MXNet's)."""

    class TinyDense(gluon.HybridBlock):
        def __init__(self, units, in_units=0, **kwargs):
            super().__init__(**kwargs)
            self._units = units
            with self.name_scope():
                self.weight = self.params.get("weight", shape=(units, in_units), allow_deferred_init=True)
                self.bias = self.params.get("bias", shape=(units,), init="zeros", allow_deferred_init=True)

        def hybrid_forward(self, F, x, weight, bias):
            return F.FullyConnected(x, weight, bias, num_hidden=self._units, name="fwd")

    class TinyBN(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.gamma = self.params.get("gamma", shape=(0,), init="ones", allow_deferred_init=True)
                self.beta = self.params.get("beta", shape=(0,), init="zeros", allow_deferred_init=True)
                self.running_mean = self.params.get("running_mean", grad_req="null", shape=(0,), init="zeros",
                                                    allow_deferred_init=True, differentiable=False)
                self.running_var = self.params.get("running_var", grad_req="null", shape=(0,), init="ones",
                                                   allow_deferred_init=True, differentiable=False)

        def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
            return F.BatchNorm(x, gamma, beta, running_mean, running_var, fix_gamma=False, momentum=0.9,
                               eps=1e-5, name="fwd")

    class Stack(gluon.HybridBlock):
        """Children registered with register_child (structural names '0', '1', ...)."""

        def __init__(self, *blocks, **kwargs):
            super().__init__(**kwargs)
            for b in blocks:
                self.register_child(b)

        def hybrid_forward(self, F, x):
            for b in self._children.values():
                x = b(x)
            return x

    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.body = Stack(TinyDense(16), TinyBN())
                self.head = TinyDense(3, in_units=16)

        def hybrid_forward(self, F, x):
            return self.head(F.relu(self.body(x)))

    class Chain(gluon.Block):
        """A plain (not hybrid) Block whose children go in `_children` under their own names plus
        their count, as MXNet's test of Block.save does: the names `save` records and `load` restores."""

        def add(self, block):
            self._children[block.name + str(len(self._children))] = block

        def forward(self, x):
            for b in self._children.values():
                x = b(x)
            return x

    def saved_model():
        """Chain(Chain(Net), TinyDense(4)): nested plain and hybrid blocks for Block.save/load."""
        inner = Chain()
        inner.add(Net())
        outer = Chain()
        outer.add(inner)
        outer.add(TinyDense(4, in_units=3))
        return outer

    return {"TinyDense": TinyDense, "TinyBN": TinyBN, "Stack": Stack, "Net": Net, "Chain": Chain,
            "saved_model": saved_model}
