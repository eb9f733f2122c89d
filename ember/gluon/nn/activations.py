"""Activation layers (MXNet 1.9.1's `gluon.nn.activations`): Activation, LeakyReLU, PReLU, ELU, SELU,
Swish and GELU, each one registry operator (`Activation`, `LeakyReLU`, `sigmoid`) called through F."""
from __future__ import annotations

from ... import initializer
from ..block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class Activation(HybridBlock):
    """Applies the activation `activation` ('relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign')."""

    def __init__(self, activation: str, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        # the block is named after its function ('relu0_'), as in MXNet
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """Leaky ReLU: x for x >= 0, alpha * x below (alpha must be >= 0)."""

    def __init__(self, alpha: float, **kwargs):
        assert alpha >= 0, "Slope coefficient for LeakyReLU must be no less than 0."
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._alpha})"


class PReLU(HybridBlock):
    """Parametric ReLU: a learned slope `alpha` (one value, or one per channel of axis 1) below zero."""

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels: int = 1, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """Exponential linear unit: x for x > 0, alpha * (exp(x) - 1) otherwise (Clevert et al., 2016)."""

    def __init__(self, alpha: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled exponential linear unit (Klambauer et al., 2017)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit, x * Phi(x) with the exact (erf) Phi (Hendrycks et al., 2016)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """Swish: x * sigmoid(beta * x) (Ramachandran et al., 2017)."""

    def __init__(self, beta: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")
