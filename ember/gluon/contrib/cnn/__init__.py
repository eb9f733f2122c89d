"""`mx.gluon.contrib.cnn`: MXNet 1.9.1's contributed convolution layers."""
from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution  # noqa: F401

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]
